"""What the training budget buys: the drafter's expected acceptance length (tau, tokens
accepted per verify step, the bonus token included) as a function of sample passes
(samples x epochs), and the serving speedup that tau gives on an engine.

The curve saturates: tau(P) = 1 + (L - 1) * (1 - exp(-(P / scale) ** k)). An untrained
drafter accepts only the target's own token (tau 1: TorchSpec measured 1.01 after 200
steps), and tau climbs to a level L with diminishing returns (k <= 1). The shape (scale,
k) is shared; each series (a recipe, a data set) has its own level, and the spread of the
levels is the range: where a series trained on other data or with another recipe
reaches, the range says so. Fitted by code on the `acceptance_length` cases of
measurements.toml; the drafter family, block size, anchors, on-policy data and target
size have no public series that isolates them yet, so they do not move the curve (the
range carries them).

Speedup: a verify step of tau tokens costs `tau / speedup` target decode steps on an
engine; the speedup per unit of tau (the engine factor) is fitted per engine and batch
regime from the public tau-vs-speedup pairs (`serving_speedup` cases), its spread the
range.
"""

from __future__ import annotations

import functools
import math
import re
import statistics
import tomllib
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from ..basics import fitcache
from ..basics.arrays import Number, maximum, minimum, numpy_in, where
from .fitting import case_blocks

CURVE_QUANTITY = "acceptance_length"
SPEEDUP_QUANTITY = "serving_speedup"
# How the cases name engines, as the plan's serving.engine names them.
ENGINE_NAMES = {"hf": "transformers", "sglang": "sglang", "vllm": "vllm"}
# Every serving pair recorded so far ran one request at a time (concurrency 1).
LOW_BATCH = "low-batch"

# The fit's grid: scale in sample passes (10 K to 100 M, 40 a decade), the exponent k
# (0.2 to 2.0 by 0.025).
_SCALES = tuple(10 ** (4.0 + i / 40) for i in range(161))
_EXPONENTS = tuple(0.2 + 0.025 * i for i in range(73))


# The least share a calibrated range divides by (share(0) is 0).
_TINY_SHARE = 1e-12


def _exp(value: Number) -> Number:
    np = numpy_in(value)
    return np.exp(value) if np is not None else math.exp(value)


@dataclass(frozen=True, slots=True)
class CurveInputs:
    """What the curve reads of a plan: the conditions it was trained on (recorded, not
    yet moving the curve: see the module's note) and the level factor (1.0 unless the
    plan carries a measured tau: calibration.acceptance)."""

    family: str
    block_size: int
    anchors: int
    on_policy: bool
    target_params: float
    level: float = 1.0
    # A measured tau (its sample passes, its tau): the calibrated curve passes through it.
    measured: tuple[float, float] | None = None
    # The measurement's scatter (low, high tau at the same passes), when known.
    measured_range: tuple[float, float] | None = None


@dataclass(frozen=True, slots=True)
class CurvePoint:
    id: str
    group: str  # source group: what leave-one-group-out leaves out
    series: str  # a recipe or data set within it: what has a level of its own
    sample_passes: float
    tau: float


@dataclass(frozen=True, slots=True)
class Curve:
    """The fitted curve: the shared shape and each source group's level."""

    scale: float  # sample passes
    exponent: float
    levels: Mapping[str, float]  # series -> tau the curve saturates at
    worst_residual: float  # the fit's worst |predicted / measured - 1|
    groups: tuple[str, ...] = ()  # the source groups of the series fitted

    @property
    def level(self) -> float:
        """The central level: the mean of the series' levels."""
        return statistics.fmean(self.levels.values())

    @property
    def level_range(self) -> tuple[float, float]:
        values = list(self.levels.values())
        return min(values), max(values)

    def share(self, sample_passes: Number) -> Any:
        """The share of the way from tau 1 to the level reached after these passes (a
        number, or a numpy array of them)."""
        p = where(sample_passes > 0, sample_passes, 0.0) / self.scale
        return 1.0 - _exp(-(p**self.exponent))

    def to_json(self) -> dict[str, Any]:
        return {
            "scale": self.scale,
            "exponent": self.exponent,
            "levels": dict(self.levels),
            "worst_residual": self.worst_residual,
            "groups": list(self.groups),
        }


def _parsed(quantity: str) -> list[dict[str, Any]]:
    marker = re.compile(rf'^quantity = "{quantity}"$', re.MULTILINE)
    return [
        tomllib.loads(block)["case"][0] for block in case_blocks().values() if marker.search(block)
    ]


@functools.cache
def curve_points() -> tuple[CurvePoint, ...]:
    """The learning-curve cases the curve is fitted on (those with a sample-pass count,
    not waiting for a capability)."""
    return tuple(
        CurvePoint(
            c["id"],
            c["source_group"],
            c.get("series", c["source_group"]),
            float(c["sample_passes"]),
            float(c["value"]),
        )
        for c in _parsed(CURVE_QUANTITY)
        if "sample_passes" in c and "waiting" not in c
    )


def fit_curve(points: Sequence[CurvePoint]) -> Curve:
    """Least squares (relative) on the grid of shapes; each series' level in closed form
    for each shape (tau - 1 is linear in L - 1). A shape needs a series with two budgets:
    ValueError without one."""
    import numpy as np  # the fit only (refit, validate): a projection reads the shipped fit

    groups = sorted({p.series for p in points})
    if not any(len({p.sample_passes for p in points if p.series == g}) >= 2 for g in groups):
        raise ValueError("no series has tau at two budgets: the shape is undetermined")
    passes = np.array([p.sample_passes for p in points])
    gained = np.array([p.tau for p in points]) - 1.0
    s = np.array(_SCALES)[:, None, None]
    k = np.array(_EXPONENTS)[None, :, None]
    share = 1.0 - np.exp(-((passes[None, None, :] / s) ** k))
    levels = {}
    error = np.zeros(share.shape[:2])
    for g in groups:
        mask = np.array([p.series == g for p in points])
        f, y = share[..., mask], gained[mask]
        height = (f * y).sum(axis=-1) / (f * f).sum(axis=-1)
        levels[g] = height
        error += (((height[..., None] * f - y) / (y + 1.0)) ** 2).sum(axis=-1)
    i, j = np.unravel_index(int(np.argmin(error)), error.shape)
    fitted = {g: 1.0 + float(levels[g][i, j]) for g in groups}
    curve = Curve(float(_SCALES[i]), float(_EXPONENTS[j]), fitted, 0.0)
    worst = max(abs(_tau(curve, fitted[p.series], p.sample_passes) / p.tau - 1) for p in points)
    groups_of = tuple(dict.fromkeys(p.group for p in points))
    return Curve(curve.scale, curve.exponent, fitted, float(worst), groups_of)


@functools.cache
def curve() -> Curve:
    """The curve as shipped (data/fitted.json) while its inputs are unchanged, else fitted."""
    shipped = fitcache.shipped()
    if shipped is not None:
        c = shipped["acceptance"]["curve"]
        return Curve(
            float(c["scale"]),
            float(c["exponent"]),
            c["levels"],
            c["worst_residual"],
            tuple(c["groups"]),
        )
    return fit_curve(curve_points())


def _tau(c: Curve, level: float, sample_passes: Number) -> Any:
    return 1.0 + (level - 1.0) * c.share(sample_passes)


def tau_at(
    inputs: CurveInputs, sample_passes: Number, fitted: Curve | None = None
) -> tuple[Any, Any, Any]:
    """(central, low, high) tau after these sample passes. Uncalibrated: the mean and the
    lowest and highest of the series' levels. Calibrated (a measured tau): the level is
    refit so that the curve passes through the measurement (the shape, scale and exponent,
    stays the public fit's: a run's own earlier reports are not runs of a smaller budget,
    their learning rate not yet decayed, so they do not measure the scale). Its range: the
    curves through the measurement's scatter, widened by the fit's worst residual in
    proportion to the share of the gain extrapolated (none where it was measured, all of
    it far from there). `fitted`: another fit of the curve (validate's folds); the
    shipped fit by default."""
    c = fitted or curve()
    if inputs.measured is not None:
        at, tau = inputs.measured
        low, high = inputs.measured_range or (tau, tau)
        share_at = float(c.share(at))

        def through(measured_tau: float) -> Any:
            return _tau(c, 1.0 + (measured_tau - 1.0) / share_at, sample_passes)

        # A budget of no passes has a share of 0: all of its gain would be extrapolated.
        share = maximum(c.share(sample_passes), _TINY_SHARE)
        widen = c.worst_residual * minimum(abs(1.0 - share_at / share), 1.0)
        return (
            through(tau),
            through(min(low, tau)) * (1 - widen),
            through(max(high, tau)) * (1 + widen),
        )
    lo, hi = c.level_range
    scaled = inputs.level
    return (
        _tau(c, 1.0 + (c.level - 1.0) * scaled, sample_passes),
        _tau(c, 1.0 + (lo - 1.0) * scaled, sample_passes),
        _tau(c, 1.0 + (hi - 1.0) * scaled, sample_passes),
    )


# --- serving speedup ----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class EngineFactor:
    """Speedup per unit of tau on one engine in one batch regime: central (the median of
    the pairs), low and high (their extremes), and the pairs' source groups."""

    central: float
    low: float
    high: float
    pairs: int
    groups: tuple[str, ...]


def speedup_pairs(quantity: str = SPEEDUP_QUANTITY) -> tuple[dict[str, Any], ...]:
    """The serving cases that carry the tau they served at: end-to-end speedups
    (serving_speedup, what the plan's speedup is) or decode-only (serving_speedup_decode)."""
    return tuple(c for c in _parsed(quantity) if "acceptance_length" in c and "waiting" not in c)


def case_engine(case: Mapping[str, Any]) -> tuple[str, str]:
    """A serving case's (engine, regime), as the plan names them."""
    return ENGINE_NAMES.get(case["engine"], case["engine"]), LOW_BATCH


def fit_factors(pairs: Sequence[Mapping[str, Any]]) -> dict[tuple[str, str], EngineFactor]:
    """(engine, regime) -> speedup / tau over these pairs: the median, the extremes."""
    found: dict[tuple[str, str], list[tuple[float, str]]] = {}
    for c in pairs:
        ratio = float(c["value"]) / float(c["acceptance_length"])
        found.setdefault(case_engine(c), []).append((ratio, c["source_group"]))
    return {
        key: EngineFactor(
            statistics.median(r for r, _ in rows),
            min(r for r, _ in rows),
            max(r for r, _ in rows),
            len(rows),
            tuple(sorted({g for _, g in rows})),
        )
        for key, rows in found.items()
    }


def factors_json(factors: Mapping[tuple[str, str], EngineFactor]) -> dict[str, Any]:
    """The factors as data/fitted.json holds them, keyed "engine regime"."""
    return {
        f"{engine} {regime}": [f.central, f.low, f.high, f.pairs, list(f.groups)]
        for (engine, regime), f in factors.items()
    }


@functools.cache
def engine_factors(quantity: str = SPEEDUP_QUANTITY) -> Mapping[tuple[str, str], EngineFactor]:
    """(engine, regime) -> the factor fitted on every pair of the quantity (as shipped
    while its inputs are unchanged)."""
    shipped = fitcache.shipped()
    if shipped is None:
        return fit_factors(speedup_pairs(quantity))
    out = {}
    for key, (central, low, high, pairs, groups) in shipped["acceptance"][quantity].items():
        engine, regime = key.split(" ")
        out[(engine, regime)] = EngineFactor(central, low, high, pairs, tuple(groups))
    return out


def speedup_at(
    tau: Number,
    engine: str,
    regime: str,
    factor: float | None = None,
    fitted: Mapping[tuple[str, str], EngineFactor] | None = None,
) -> tuple[Any, Any, Any]:
    """(central, low, high) serving speedup at this tau on an engine and batch regime;
    `factor`: the user's own speedup per unit of tau (its range is the point); `fitted`:
    other factors (validate's folds, the decode-only ones). Raises KeyError for an
    engine and regime no public pair measured."""
    t = tau
    if factor is not None:
        return t * factor, t * factor, t * factor
    f = (engine_factors() if fitted is None else fitted)[(engine, regime)]
    return t * f.central, t * f.low, t * f.high


def break_even_hours(
    training_cost: Number, speedup: Number, serving_gpus: int, price_per_gpu_hour: float
) -> Any:
    """Serving hours after which the serving GPUs the speedup saves (1 - 1/speedup of
    them) have paid the training cost; inf where the drafter does not speed serving up."""
    faster = speedup > 1.0
    saved = where(faster, 1.0 - 1.0 / where(faster, speedup, 2.0), 0.0)
    per_hour = saved * serving_gpus * price_per_gpu_hour
    paid = per_hour > 0
    return where(paid, training_cost / where(paid, per_hour, 1.0), math.inf)
