"""What a user should know about a projection, as data: a code, the plan key it concerns,
the figures behind it, and the one line shown."""

from __future__ import annotations

import datetime as dt
import math
from dataclasses import dataclass, field
from typing import Any

from ..inputs.hardware import Gpu, Maturity
from ..physics.footprint import MemoryFit
from ..physics.roofline import Roofline
from .rates import ENGINE_NAMES, RoleRate

# A measurement this far from the estimate at default efficiency is called out.
CONTRADICTION_FACTOR = 2.0
# A link this busy leaves no headroom for bursts of long samples.
LINK_BUSY_WARNING = 0.8
# A role busier than this is a split choice; below it, most of its GPUs wait: said why.
IDLE_WARNING = 0.5


@dataclass(frozen=True, slots=True)
class Diagnostic:
    code: str
    key: str | None
    message: str
    values: dict[str, Any] = field(default_factory=dict)
    level: str = "warning"  # "error": the plan cannot run as written

    def to_json(self) -> dict[str, Any]:
        return {
            "code": self.code,
            "key": self.key,
            "message": self.message,
            "values": self.values,
            "level": self.level,
        }


def _pct(x: float) -> str:
    return f"{x * 100:.1f} %"


def measurement_checks(
    role: str,
    measured: dict[str, tuple[float, Roofline]],
    gpus: dict[str, Gpu],
    default_of: dict[str, float],
) -> list[Diagnostic]:
    """A measured rate above what the GPU can do, or far from the default estimate."""
    out: list[Diagnostic] = []
    for key, (rate, roof) in measured.items():
        gpu = gpus[key]
        implied = rate / roof.compute_tokens_per_s
        plan_key = f"calibration.{role}.{key}"
        if rate > roof.tokens_per_s * gpu.efficiency_ceiling:
            ceiling = (
                f"the {_pct(gpu.efficiency_ceiling)} matmul ceiling measured on this GPU"
                if gpu.matmul_ceiling
                else "its peak"
            )
            out.append(
                Diagnostic(
                    "measurement-above-ceiling",
                    plan_key,
                    f"{plan_key} = {rate:,.0f} tok/s per GPU implies {_pct(implied)} of "
                    f"{gpu.name}'s dense bf16 peak, above {ceiling}: check the figure",
                    {"tokens_per_s": rate, "peak_share": implied},
                )
            )
            continue
        estimate = roof.tokens_per_s * default_of[key]
        ratio = rate / estimate
        if ratio > CONTRADICTION_FACTOR or ratio < 1 / CONTRADICTION_FACTOR:
            out.append(
                Diagnostic(
                    "measurement-far-from-default",
                    plan_key,
                    f"{role} on {gpu.name}: measured {rate:,.0f} tok/s per GPU is {ratio:.2f}x the "
                    f"estimate at default efficiency ({estimate:,.0f}): {_pct(implied)} of peak vs "
                    f"{_pct(default_of[key])} assumed. Other GPUs get a range: the readings of "
                    f"that gap the evidence leaves open",
                    {"tokens_per_s": rate, "ratio": ratio, "peak_share": implied},
                )
            )
    return out


# What to change when a role (or a colocated GPU, holding both) does not fit: (hint, key).
_MEMORY_HINTS = {
    "target": (" (raise target.tp or pick a GPU with more memory)", "target.tp"),
    "drafter": (
        " (lower drafter.batch_size or num_anchors, or pick a larger GPU)",
        "drafter.batch_size",
    ),
    "colocated GPU (target shard + drafter rank)": (
        " (raise target.tp, lower drafter.batch_size, pick a GPU with more memory, or "
        'set workload.topology = "disaggregated")',
        "workload.topology",
    ),
}


def colocated_memory_check(gpu: Gpu, mem: MemoryFit) -> list[Diagnostic]:
    """A colocated GPU holds the target's shard and the drafter's rank: one check."""
    return memory_checks((gpu, mem), roles=("colocated GPU (target shard + drafter rank)",))


def memory_checks(
    target: tuple[Gpu, MemoryFit],
    drafter: tuple[Gpu, MemoryFit] | None = None,
    roles: tuple[str, ...] = ("target", "drafter"),
) -> list[Diagnostic]:
    out = []
    for role, (gpu, mem) in zip(roles, (target, drafter) if drafter else (target,), strict=True):
        if mem.fits:
            continue
        biggest = max(mem.items_gb, key=lambda item: item[1])
        hint, key = _MEMORY_HINTS[role]
        if mem.fits_central:
            low, high = mem.needed_range_gb
            out.append(
                Diagnostic(
                    "fits-central-only",
                    key,
                    f"{role} fits only at the central memory estimate: needs {mem.needed_gb:,.1f} "
                    f"GB per GPU ({low:,.1f}-{high:,.1f} GB over the memory cases' spread), "
                    f"{gpu.name} has {mem.available_gb:g} GB usable; judged at the pessimistic "
                    f"end it does not fit{hint}",
                    {
                        "role": role,
                        "needed_gb": mem.needed_gb,
                        "needed_gb_high": high,
                        "available_gb": mem.available_gb,
                    },
                    level="error",
                )
            )
            continue
        out.append(
            Diagnostic(
                "does-not-fit",
                key,
                f"{role} does not fit: needs {mem.needed_gb:,.1f} GB per GPU, {gpu.name} has "
                f"{mem.available_gb:g} GB usable; largest item {biggest[0]} {biggest[1]:,.1f} "
                f"GB{hint}",
                {"role": role, "needed_gb": mem.needed_gb, "available_gb": mem.available_gb},
                level="error",
            )
        )
    return out


def idle_check(
    role: str,
    gpus: int,
    gpus_per_replica: int,
    utilization: float,
    tokens_per_s: float,
    capacity_tokens_per_s: float,
    bottleneck: str,
) -> list[Diagnostic]:
    """Say why a role mostly waits (a count typed far from balance, say), and how many of
    its GPUs the throughput needs, instead of only showing a low utilisation."""
    if utilization >= IDLE_WARNING:
        return []
    replicas = gpus // gpus_per_replica
    needed = min(replicas, math.ceil(replicas * utilization - 1e-9)) * gpus_per_replica
    binds = {
        "target": "the targets",
        "drafter": "the drafters",
        "link": "the hidden-state link",
    }.get(bottleneck, bottleneck)
    return [
        Diagnostic(
            "role-idle",
            f"{role}.count",
            f"{role}s {_pct(utilization)} busy: {binds} bind at {tokens_per_s / 1e3:,.1f} Ktok/s, "
            f"while the {gpus:,} {role} GPUs could take {capacity_tokens_per_s / 1e3:,.1f} "
            f"Ktok/s; {needed:,} of them would do, the other {gpus - needed:,} wait (balance the "
            f"split, or add to {binds})",
            {"role": role, "utilization": utilization, "gpus": gpus, "gpus_needed": needed},
        )
    ]


def link_check(tokens_per_s: float, link_tokens_per_s: float, description: str) -> list[Diagnostic]:
    share = tokens_per_s / link_tokens_per_s
    if share <= LINK_BUSY_WARNING:
        return []
    return [
        Diagnostic(
            "link-busy",
            None,
            f"hidden-state link {_pct(share)} busy ({description})",
            {"utilization": share},
        )
    ]


def anchors_check(num_anchors: int, recipe_anchors: int) -> list[Diagnostic]:
    if num_anchors == recipe_anchors:
        return []
    return [
        Diagnostic(
            "anchors-differ-from-recipe",
            "workload.num_anchors",
            f"{num_anchors} anchors per sample, the DFlash recipe uses {recipe_anchors}: the "
            f"drafter's work scales with anchors, so this choice can move the bottleneck "
            f"(measure your drafter to settle it)",
            {"num_anchors": num_anchors, "recipe": recipe_anchors},
        )
    ]


def range_note(rate: RoleRate) -> list[Diagnostic]:
    """The band of an estimated rate and what each end is: a reading (the figure it gives,
    and why), moved by the factors of the scenario at that end (the family's efficiency
    band, the GPU's software maturity; a GPU with no measurement of this role gets its
    family's band too: it is what the answer rests on)."""
    if rate.measured or rate.low_tokens_per_s == rate.high_tokens_per_s:
        return []
    model = rate.model

    def factors(slow: bool) -> str:
        """The non-reading dimensions that move this end, in words."""
        if model is None:
            return "the spread of the estimate"
        at = model.extreme(slow)
        reading = at.get(model.reading, "central") if model.reading else "central"
        unused = {
            model.reading,
            *(
                (model.efficiency[0],)
                if model.efficiency is not None and reading not in model.scaled
                else ()
            ),
        }
        said = [d.describe(at[d.key]) for d in model.dims if d.key not in unused and d.key in at]
        return "; ".join(said) or "the spread of the estimate"

    def end(name: str, value: float, slow: bool) -> str:
        reading = next(r for r in rate.readings if r.name == name)
        said = f"{name}: {reading.why}"
        if abs(value / reading.tokens_per_s - 1) < 5e-4:
            return said
        spread = value / reading.tokens_per_s - 1
        return (
            f"{said}, {reading.tokens_per_s:,.0f} tok/s, {spread * 100:+.0f} % with {factors(slow)}"
        )

    carried = rate.low_reading != rate.high_reading
    band = (
        f"{rate.role} on {rate.gpu.name}: {rate.low_tokens_per_s:,.0f}-"
        f"{rate.high_tokens_per_s:,.0f} tok/s per GPU"
    )
    if carried:
        message = (
            f"{band}; low if {end(rate.low_reading, rate.low_tokens_per_s, True)}; "
            f"high if {end(rate.high_reading, rate.high_tokens_per_s, False)}"
        )
    else:
        reading = next(r for r in rate.readings if r.name == rate.low_reading)
        low, high = (
            rate.low_tokens_per_s / reading.tokens_per_s - 1,
            rate.high_tokens_per_s / reading.tokens_per_s - 1,
        )
        why = rate.band_why or "the spread of the estimate"
        message = (
            f"{band}: {reading.why}, {reading.tokens_per_s:,.0f} tok/s, "
            f"{low * 100:+.0f} % to {high * 100:+.0f} %: {why}"
        )
    return [
        Diagnostic(
            "carry-over-range" if carried else "estimate-range",
            f"calibration.{rate.role}",
            message,
            {
                "low": rate.low_tokens_per_s,
                "high": rate.high_tokens_per_s,
                "low_reading": rate.low_reading,
                "high_reading": rate.high_reading,
            },
        )
    ]


def maturity_checks(
    rate: RoleRate, entry: Maturity | None, today: dt.date | None
) -> list[Diagnostic]:
    """The software-maturity factor a rate carries, its source, and whether it is stale."""
    model = rate.model
    if entry is None or model is None or model.maturity is None:
        return []
    return _maturity_diagnostics(rate.role, rate.gpu, entry, today)


def decode_maturity_checks(
    gpu: Gpu, entry: Maturity | None, today: dt.date | None
) -> list[Diagnostic]:
    """The software-maturity factor a regeneration's decode carries (its serving engine's
    on its GPU), its source, and whether it is stale."""
    return [] if entry is None else _maturity_diagnostics("decode", gpu, entry, today)


def _maturity_diagnostics(
    role: str, gpu: Gpu, entry: Maturity, today: dt.date | None
) -> list[Diagnostic]:
    key = f"hardware.{gpu.key}.maturity"
    values: dict[str, Any] = {
        "gpu": gpu.key,
        "role": role,
        "engine": entry.engine,
        "factor": entry.factor,
        "low": entry.low,
        "high": entry.high,
        "date": entry.date.isoformat(),
        "expires": entry.expires.isoformat(),
    }
    engine = ENGINE_NAMES.get(entry.engine, entry.engine)
    out = [
        Diagnostic(
            "software-maturity",
            key,
            f"{role} on {gpu.name}: x{entry.factor:.2f} ({entry.low:.2f}-"
            f"{entry.high:.2f}) for {engine}'s maturity on this GPU, as of {entry.date} "
            f"({entry.source})",
            values,
        )
    ]
    if today is not None and today > entry.expires:
        measure = (
            "compare a decode rate measured on it (docs/validation.md, 'Decode')"
            if role == "decode"
            else f"measure the {role} (dflash-plan probe --gpu {gpu.key} --role {role})"
        )
        out.append(
            Diagnostic(
                "maturity-stale",
                key,
                f"the {engine} maturity factor for {gpu.name} ({entry.date}) expired "
                f"on {entry.expires}: software for a new GPU catches up; check the source again "
                f"or {measure}",
                values,
            )
        )
    return out
