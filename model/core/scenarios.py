"""Joint scenarios: the uncertain inputs of a projection as named dimensions with discrete
values, shared by every plan evaluated against the same calibration and catalog.

A dimension is one uncertain input: the reading of a measurement carried to another GPU
(per role), the efficiency of an architecture family on a role for GPUs without a
measurement, a GPU's software maturity on a role and engine, the achieved share of a GPU
link kind. A scenario gives each dimension one value; a plan evaluated under it gives its
figures. Two plans compared under the same scenario share every dimension they both
depend on, so a plan against itself reads exactly 1.00x (docs/model.md, "Scenarios").
"""

from __future__ import annotations

import functools
import math
from collections.abc import Mapping
from dataclasses import dataclass

from ..basics import fitcache
from ..physics import colocated, fitting

# Value names of a two-ended dimension. A dimension left out of a scenario is at its
# central value.
LOW, HIGH = "low", "high"

# Readable names of the catalog's kernel families (hardware.toml `arch`).
ARCH_FAMILIES: dict[str, str] = {
    "sm80": "Ampere sm80",
    "sm89": "Ada sm89",
    "sm90": "Hopper sm90",
    "sm100": "Blackwell datacenter sm100",
    "sm120": "Blackwell workstation sm120",
    "cdna3": "AMD CDNA 3",
    "cdna4": "AMD CDNA 4",
}


def family(arch: str) -> str:
    return ARCH_FAMILIES.get(arch, arch or "unnamed family")


# What a GPU link reaches in collectives, as a share of the catalog's figure: (low, high,
# source). The catalog keeps the spec (NVLink, Infinity Fabric) or achieved copy rate
# (PCIe); the central figure stays the catalog's.
LINK_SHARE: dict[str, tuple[float, float, str]] = {
    # NCCL ring all-reduce reaches about 370 of NVLink 4's 450 GB/s (NVIDIA/nccl#1374);
    # 8 x B200 reach 830+ of 900 GB/s bus bandwidth (NVIDIA/nccl#1807), H100 / H200 with
    # NVLink SHARP 460-480 of 450 (NVIDIA/nccl-tests#272).
    "nvlink": (
        0.80,
        1.00,
        "NCCL all-reduce bus bandwidth: ring about 0.82 of NVLink 4 "
        "(nccl#1374), 8 x B200 830+ of 900 GB/s (nccl#1807)",
    ),
    # 8 x H100 PCIe all-reduce 35-45 GB/s bus bandwidth (alayanew NCCL-tests guide, 2026);
    # 8 x RTX 5090 28 GB/s, 4 of them 35 GB/s (NVIDIA/nccl#1639): CPU and switch bound.
    "pcie": (
        0.56,
        1.00,
        "NCCL all-reduce over PCIe 5.0: 28-45 GB/s bus bandwidth on 4-8 "
        "GPUs (nccl#1639; 8 x H100 PCIe 35-45 GB/s)",
    ),
    # No public collective measurement in hand: a stated default.
    "infinity-fabric": (0.70, 1.00, "stated default (no collective measurement in hand)"),
}


@dataclass(frozen=True, slots=True)
class Dim:
    """One uncertain input: its key (what plans share), a short name, its values and what
    each value says."""

    key: str
    name: str
    values: tuple[str, ...]
    said: tuple[tuple[str, str], ...]  # value -> readable text
    short: tuple[tuple[str, str], ...] = ()  # value -> a few characters (charts)
    chart_name: str = ""  # a shorter name for charts

    def describe(self, value: str) -> str:
        return dict(self.said).get(value, value)

    def brief(self, value: str) -> str:
        return dict(self.short).get(value, value)


Scenario = Mapping[str, str]
# The order a scenario's dimensions are named in.
_ORDER = ("reading", "maturity", "efficiency", "fit", "rescale", "link")


def reading_dim(role: str, evidence: str, readings: tuple[tuple[str, str], ...]) -> Dim:
    """The readings of a role's measurements (`evidence` names them: plans on the same
    calibration share the dimension)."""
    return Dim(
        f"reading:{role}:{evidence}", f"{role} carry-over", tuple(n for n, _ in readings), readings
    )


def factor_dim(
    key: str, name: str, low: float, high: float, said: tuple[str, str] | None = None
) -> Dim:
    low_said, high_said = said or (f"{name} {_signed(low)}", f"{name} {_signed(high)}")
    return Dim(
        key,
        name,
        (LOW, HIGH),
        ((LOW, low_said), (HIGH, high_said)),
        ((LOW, _signed(low)), (HIGH, _signed(high))),
    )


def _signed(factor: float) -> str:
    pct = (factor - 1) * 100
    if abs(pct) < 0.05:
        return "at its default"  # not "+0.0 %"
    return f"{pct:+.0f} %" if abs(pct) >= 1 else f"{pct:+.1f} %"


def link_dim(kind: str) -> Dim:
    low, high, _ = LINK_SHARE[kind]
    name = {"nvlink": "NVLink", "pcie": "PCIe", "infinity-fabric": "Infinity Fabric"}[kind]
    return Dim(
        f"link:{kind}",
        f"{name} collectives",
        (LOW, HIGH),
        (
            (LOW, f"{name} collectives at {low:.0%} of the catalog figure"),
            (HIGH, f"{name} collectives at {high:.0%} of the catalog figure"),
        ),
        ((LOW, f"{low:.0%}"), (HIGH, f"{high:.0%}")),
    )


# The colocation efficiency's dimension (colocated plans only): the ends of its band for the
# plan (physics/colocated.py: the fitted range where its runs' conditions hold, else wider).
COLOCATION = "colocation"


def colocation_dim(
    span: tuple[float, float] = colocated.COLOCATION_EFFICIENCY_RANGE,
) -> Dim:
    low, high = span
    return Dim(
        COLOCATION,
        "colocation efficiency",
        (LOW, HIGH),
        (
            (LOW, f"colocated GPUs at {low:.0%} of the time-shared rate"),
            (HIGH, f"colocated GPUs at {high:.0%} of the time-shared rate"),
        ),
        ((LOW, f"{low:.0%}"), (HIGH, f"{high:.0%}")),
        chart_name="colocation",
    )


def colocation_efficiency(
    value: str | None, span: tuple[float, float] = colocated.COLOCATION_EFFICIENCY_RANGE
) -> float:
    """The colocation efficiency under a scenario's value of its dimension (the ends of
    the plan's band)."""
    low, high = span
    return low if value == LOW else high if value == HIGH else colocated.COLOCATION_EFFICIENCY


def label(scenario: Scenario, dims: Mapping[str, Dim], keys: tuple[str, ...] | None = None) -> str:
    """A scenario in words, over the dimensions given (all of the scenario's by default)."""
    chosen = [k for k in (keys if keys is not None else scenario) if k in scenario and k in dims]
    chosen.sort(
        key=lambda k: (
            _ORDER.index(k.split(":", 1)[0]) if k.split(":", 1)[0] in _ORDER else len(_ORDER)
        )
    )
    parts = [dims[k].describe(scenario[k]) for k in chosen]
    return "; ".join(parts) if parts else "no uncertain input moves it"


# --- efficiency bands of GPUs without a measurement (issue 19, item 5) ----------------------

# A role needs this many strong cases before the weak ones are left out of its band.
MIN_STRONG_CASES = 3


@dataclass(frozen=True, slots=True)
class Band:
    """An efficiency band as factors on the default efficiency, and where it comes from."""

    low: float
    high: float
    cases: tuple[str, ...]
    new_arch: bool
    measured: tuple[float, float]  # the span of the measured ratios themselves

    def why(self, role: str, arch: str) -> str:
        base = (
            f"{len(self.cases)} measured {role} efficiencies across GPUs and generations "
            f"span {self.measured[0]:.2f}-{self.measured[1]:.2f}x the default"
        )
        if self.new_arch:
            return (
                f"{base}, widened to the worst miss both ways: no measurement of "
                f"{family(arch)} yet (measuring one {family(arch)} GPU narrows the band "
                f"of all of them)"
            )
        return base


@functools.cache
def _ratios(memory: bool = False) -> tuple[tuple[str, str, str, str, float], ...]:
    """(role, arch, tier, id, measured / predicted) of the validation set's rate (or
    memory) cases (evidence/refit.py): as shipped while the measurements are unchanged,
    else predicted afresh."""
    shipped = fitcache.shipped()
    if shipped is not None:
        return tuple(
            (str(role), str(arch), str(tier), str(case_id), float(ratio))
            for role, arch, tier, case_id, ratio in shipped["ratios"][
                "memory" if memory else "rate"
            ]
        )
    # Imported here: evidence imports rates, which imports this module.
    from ..evidence.refit import case_ratios

    return case_ratios(memory)


@functools.cache
def efficiency_band(role: str, arch: str) -> Band:
    """The spread of measured efficiencies of a role against the default (strong cases,
    or every case when fewer than MIN_STRONG_CASES are strong), widened to include the
    default. A family with no rate case at all (a new architecture) gets the worst miss
    in either direction on both sides."""
    rows = [r for r in _ratios() if r[0] == role]
    strong = [r for r in rows if r[2] == "strong"]
    chosen = strong if len(strong) >= MIN_STRONG_CASES else rows
    ratios = [r[4] for r in chosen]
    low, high = min([1.0, *ratios]), max([1.0, *ratios])
    new_arch = not any(r[1] == arch for r in _ratios())
    if new_arch:
        worst = max(abs(math.log(low)), abs(math.log(high)))
        low, high = math.exp(-worst), math.exp(worst)
    # Where the family's own sources disagree, the band spans them (fitting.py: the range of
    # its fitted share, each case's implied share and each fold's refit).
    field = "prefill_efficiency" if role == "target" else "training_efficiency"
    span = fitting.family_share_range(arch, field)
    if span is not None:
        low, high = min(low, span[0]), max(high, span[1])
    return Band(low, high, tuple(r[3] for r in chosen), new_arch, (min(ratios), max(ratios)))


@functools.cache
def memory_band(role: str) -> tuple[float, float]:
    """The spread of a role's memory estimate: measured / predicted over the validation
    set's strong memory cases, widened to include the estimate itself."""
    ratios = [r[4] for r in _ratios(memory=True) if r[0] == role and r[2] == "strong"]
    return min([1.0, *ratios]), max([1.0, *ratios])
