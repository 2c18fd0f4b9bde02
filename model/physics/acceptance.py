"""What the training budget buys: the drafter's expected acceptance length (tau, tokens
accepted per verify step, the bonus token included) as a function of sample passes
(samples x epochs), and the serving speedup that tau gives on an engine.

The curve saturates: tau(P) = 1 + (L - 1) * (1 - exp(-(P / scale) ** k)). An untrained
drafter accepts only the target's own token (tau 1: TorchSpec measured 1.01 after 200
steps), and tau climbs to a level L with diminishing returns (k <= 1). The shape (scale,
k) is shared by the DFlash drafter's series (the reference family); each series (a recipe,
a data set) has its own level, and the spread of the levels is the range: where a series
trained on other data or with another recipe reaches, the range says so. Fitted by code on
the `acceptance_length` cases of measurements.toml. Every other family a public series
measured has a fit of its own (FamilyFit: EAGLE-3 its own shape and a turnover past its
peak epochs, DeepSpec #84; DFlash2 and DSpark a level through their one point). A plan's
conditions no series of its family measured (the family itself, block size, anchors,
on/off-policy data, target size) widen the range by the rules of conditions.py
(widened_by names them); tau never exceeds what a verify step can accept; and a measured
tau below the public budgets is guarded (share_spread, calibration_note).

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
from dataclasses import dataclass, field, replace
from typing import Any

from ..basics import fitcache
from ..basics.arrays import Number, maximum, minimum, numpy_in, where
from ..inputs.targets import PRESETS
from . import conditions
from .families import FAMILIES
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

# The family whose series set the shared shape and the levels: the DFlash line's own
# drafter (TorchSpec's and z-lab's series). Other families get a fit of their own
# (FamilyFit) where a public series measured them, else the reference's curve with a range
# widened by the spread between families (conditions.FAMILY).
REFERENCE_FAMILY = "dflash"

# Two points of one series whose budgets differ by at most this share are repeats: their
# tau difference is the benchmark's noise (TorchSpec's Phase H and P2-accum1: "within the
# benchmark's 30-sample noise"), what tells two shapes apart.
_REPEAT_BUDGET = 0.1

# The least share a calibrated range divides by (share(0) is 0).
_TINY_SHARE = 1e-12


def _exp(value: Number) -> Number:
    np = numpy_in(value)
    return np.exp(value) if np is not None else math.exp(value)


@dataclass(frozen=True, slots=True)
class CurveInputs:
    """What the curve reads of a plan: the conditions it is trained under, the level
    factor (1.0 unless set), and a measured tau (calibration.acceptance)."""

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
    # Unique samples per epoch (epochs = sample passes / samples: EAGLE-3's turnover is in
    # epochs); 0: not known.
    samples: float = 0.0
    # Mean tokens per sample (the anchors' coverage); 0: not known.
    sample_tokens: float = 0.0


@dataclass(frozen=True, slots=True)
class CurvePoint:
    id: str
    group: str  # source group: what leave-one-group-out leaves out
    series: str  # a recipe or data set within it: what has a level of its own
    sample_passes: float
    tau: float
    family: str = REFERENCE_FAMILY
    epochs: float | None = None
    block_size: int | None = None
    anchors: int | None = None
    max_length: int | None = None
    on_policy: bool | None = None
    target_params: float | None = None


def _share(scale: float, exponent: float, sample_passes: Number) -> Any:
    p = where(sample_passes > 0, sample_passes, 0.0) / scale
    return 1.0 - _exp(-(p**exponent))


@dataclass(frozen=True, slots=True)
class FamilyFit:
    """A drafter family's own curve, fitted on its public series: its shape where a series
    measured it at two budgets or more (else the reference's), its level, and a turnover
    where tau measured past a peak fell (EAGLE-3, DeepSpec #84): the epochs of the peak
    and the share of the gain (tau - 1) lost per epoch beyond it."""

    scale: float
    exponent: float
    level: float
    worst_residual: float
    groups: tuple[str, ...]
    peak_epochs: float | None = None
    decline_per_epoch: float = 0.0
    # Shapes (scale, exponent) the family's series cannot tell from the best (the
    # calibration guard's spread of the share).
    shapes: tuple[tuple[float, float], ...] = ()
    first_passes: float = 0.0  # the least budget its series measured

    def share(self, sample_passes: Number) -> Any:
        return _share(self.scale, self.exponent, sample_passes)

    def to_json(self) -> dict[str, Any]:
        return {
            "scale": self.scale,
            "exponent": self.exponent,
            "level": self.level,
            "worst_residual": self.worst_residual,
            "groups": list(self.groups),
            "peak_epochs": self.peak_epochs,
            "decline_per_epoch": self.decline_per_epoch,
            "shapes": [list(s) for s in self.shapes],
            "first_passes": self.first_passes,
        }

    @staticmethod
    def from_json(d: Mapping[str, Any]) -> FamilyFit:
        return FamilyFit(
            float(d["scale"]),
            float(d["exponent"]),
            float(d["level"]),
            float(d["worst_residual"]),
            tuple(d["groups"]),
            d["peak_epochs"],
            float(d["decline_per_epoch"]),
            tuple((float(a), float(b)) for a, b in d["shapes"]),
            float(d["first_passes"]),
        )


@dataclass(frozen=True, slots=True)
class Curve:
    """The fitted curve: the reference family's shared shape and each of its series'
    levels; the other families' own fits; the conditions every family was measured under;
    the shapes the reference's series cannot tell apart."""

    scale: float  # sample passes
    exponent: float
    levels: Mapping[str, float]  # series -> tau the curve saturates at
    worst_residual: float  # the fit's worst |predicted / measured - 1|
    groups: tuple[str, ...] = ()  # the source groups of the series fitted
    families: Mapping[str, FamilyFit] = field(default_factory=dict)
    measured: Mapping[str, conditions.Measured] = field(default_factory=dict)
    shapes: tuple[tuple[float, float], ...] = ()
    noise: float = 0.0  # the benchmark's repeat noise (relative), shapes are judged by
    first_passes: float = 0.0  # the least budget a reference series measured

    @property
    def level(self) -> float:
        """The central level: the mean of the series' levels."""
        return statistics.fmean(self.levels.values())

    @property
    def level_range(self) -> tuple[float, float]:
        values = list(self.levels.values())
        return min(values), max(values)

    @property
    def data_spread(self) -> float:
        """The spread between the reference's data sets and recipes, as a share of the
        central gain: (highest level - lowest) / (central level - 1). The widening of a
        condition no series isolates but the data set (regeneration, target)."""
        lo, hi = self.level_range
        return (hi - lo) / (self.level - 1.0)

    def share(self, sample_passes: Number) -> Any:
        """The share of the way from tau 1 to the level reached after these passes (a
        number, or a numpy array of them)."""
        return _share(self.scale, self.exponent, sample_passes)

    def to_json(self) -> dict[str, Any]:
        return {
            "scale": self.scale,
            "exponent": self.exponent,
            "levels": dict(self.levels),
            "worst_residual": self.worst_residual,
            "groups": list(self.groups),
            "families": {k: f.to_json() for k, f in self.families.items()},
            "measured": {k: m.to_json() for k, m in self.measured.items()},
            "shapes": [list(s) for s in self.shapes],
            "noise": self.noise,
            "first_passes": self.first_passes,
        }

    @staticmethod
    def from_json(c: Mapping[str, Any]) -> Curve:
        return Curve(
            float(c["scale"]),
            float(c["exponent"]),
            c["levels"],
            c["worst_residual"],
            tuple(c["groups"]),
            {k: FamilyFit.from_json(f) for k, f in c["families"].items()},
            {k: conditions.Measured.from_json(m) for k, m in c["measured"].items()},
            tuple((float(a), float(b)) for a, b in c["shapes"]),
            float(c["noise"]),
            float(c["first_passes"]),
        )


def _parsed(quantity: str) -> list[dict[str, Any]]:
    marker = re.compile(rf'^quantity = "{quantity}"$', re.MULTILINE)
    return [
        tomllib.loads(block)["case"][0] for block in case_blocks().values() if marker.search(block)
    ]


def case_target_params(case: Mapping[str, Any]) -> float | None:
    """A case's target parameters: its preset's, else as the case states them."""
    preset = PRESETS.get(case.get("model", ""))
    if preset is not None:
        return float(preset.total_params)
    return float(case["target_params"]) if "target_params" in case else None


@functools.cache
def curve_points() -> tuple[CurvePoint, ...]:
    """The learning-curve cases the curve is fitted on (those with a sample-pass count,
    not waiting for a capability), with the conditions they were measured under."""
    return tuple(
        CurvePoint(
            c["id"],
            c["source_group"],
            c.get("series", c["source_group"]),
            float(c["sample_passes"]),
            float(c["value"]),
            c.get("drafter", REFERENCE_FAMILY),
            c.get("epochs"),
            c.get("block_size"),
            c.get("anchors"),
            c.get("max_length"),
            c.get("on_policy"),
            case_target_params(c),
        )
        for c in _parsed(CURVE_QUANTITY)
        if "sample_passes" in c and "waiting" not in c
    )


def _grid_fit(points: Sequence[CurvePoint], noise: float) -> tuple[Any, ...]:
    """Least squares (relative) on the grid of shapes, each series' level in closed form
    for each shape (tau - 1 is linear in L - 1): (scale, exponent, levels, shapes within
    the noise)."""
    import numpy as np  # the fit only (refit, validate): a projection reads the shipped fit

    series = sorted({p.series for p in points})
    passes = np.array([p.sample_passes for p in points])
    gained = np.array([p.tau for p in points]) - 1.0
    s = np.array(_SCALES)[:, None, None]
    k = np.array(_EXPONENTS)[None, :, None]
    share = 1.0 - np.exp(-((passes[None, None, :] / s) ** k))
    levels = {}
    error = np.zeros(share.shape[:2])
    worst = np.zeros(share.shape[:2])
    for g in series:
        mask = np.array([p.series == g for p in points])
        f, y = share[..., mask], gained[mask]
        height = (f * y).sum(axis=-1) / (f * f).sum(axis=-1)
        levels[g] = height
        relative = (height[..., None] * f - y) / (y + 1.0)
        error += (relative**2).sum(axis=-1)
        worst = np.maximum(worst, np.abs(relative).max(axis=-1))
    i, j = np.unravel_index(int(np.argmin(error)), error.shape)
    # The shapes that put every point within the noise (or as close as the best does),
    # kept by their boundary: each scale's least and largest exponent (the share's
    # extremes at a budget lie there; the set holds thousands).
    close = worst <= max(noise, float(worst[i, j]))
    shapes = tuple(
        (float(_SCALES[a]), float(_EXPONENTS[b]))
        for a in range(len(_SCALES))
        if close[a].any()
        for b in sorted(
            {int(np.argmax(close[a])), len(_EXPONENTS) - 1 - int(np.argmax(close[a][::-1]))}
        )
    )
    fitted = {g: 1.0 + float(levels[g][i, j]) for g in series}
    return float(_SCALES[i]), float(_EXPONENTS[j]), fitted, shapes


def repeat_noise(points: Sequence[CurvePoint]) -> float:
    """The benchmark's noise: the largest relative tau difference between two points of
    one series at budgets within _REPEAT_BUDGET of each other (0: no such pair)."""
    out = 0.0
    for a in points:
        for b in points:
            near = abs(a.sample_passes / b.sample_passes - 1) <= _REPEAT_BUDGET
            if a.series == b.series and a.id < b.id and near:
                out = max(out, abs(a.tau / b.tau - 1))
    return out


def _measured(points: Sequence[CurvePoint]) -> conditions.Measured:
    coverages = [
        conditions.anchor_coverage(p.anchors, p.block_size, float(p.max_length))
        for p in points
        if p.anchors and p.block_size and p.max_length
    ]
    return conditions.Measured(
        tuple(sorted({p.block_size for p in points if p.block_size})),
        tuple(sorted({p.on_policy for p in points if p.on_policy is not None})),
        tuple(sorted({p.target_params for p in points if p.target_params})),
        min(coverages, default=1.0),
    )


def _family_fit(points: Sequence[CurvePoint], reference: Curve) -> FamilyFit:
    """A non-reference family's fit. With a series at two budgets: its own shape and level
    on the points up to its peak (the last point at its highest tau), and past the peak a
    decline per epoch (least squares through the peak). Else: the reference's shape, the
    level through its points (the mean of each point's implied level)."""
    groups = tuple(dict.fromkeys(p.group for p in points))
    budgets = {p.sample_passes for p in points}
    if len(budgets) < 2:
        implied = [1.0 + (p.tau - 1.0) / float(reference.share(p.sample_passes)) for p in points]
        level = statistics.fmean(implied)
        worst = max(
            abs((1 + (level - 1) * float(reference.share(p.sample_passes))) / p.tau - 1)
            for p in points
        )
        # Its shapes are the reference's (the calibration guard reads them there).
        return FamilyFit(reference.scale, reference.exponent, level, worst, groups)
    ordered = sorted(points, key=lambda p: p.sample_passes)
    top = max(p.tau for p in ordered)
    peak = [p for p in ordered if p.tau == top][-1]
    rising = [p for p in ordered if p.sample_passes <= peak.sample_passes]
    past = [p for p in ordered if p.sample_passes > peak.sample_passes and p.epochs is not None]
    one = [replace(p, series="family") for p in rising]
    scale, exponent, levels, shapes = _grid_fit(one, reference.noise)
    level = levels["family"]
    decline = 0.0
    peak_epochs = None
    if past and peak.epochs is not None:
        x = [p.epochs - peak.epochs for p in past]  # type: ignore[operator]
        y = [1.0 - (p.tau - 1.0) / (peak.tau - 1.0) for p in past]
        decline = sum(a * b for a, b in zip(x, y, strict=True)) / sum(a * a for a in x)
        peak_epochs = float(peak.epochs)
    first = min(p.sample_passes for p in points)
    fit = FamilyFit(scale, exponent, level, 0.0, groups, peak_epochs, decline, shapes, first)
    worst = max(
        abs(float(_family_tau(fit, level, p.sample_passes, p.sample_passes / p.epochs)) / p.tau - 1)
        if p.epochs
        else abs(float(_family_tau(fit, level, p.sample_passes, 0.0)) / p.tau - 1)
        for p in points
    )
    return replace(fit, worst_residual=worst)


def fit_curve(points: Sequence[CurvePoint]) -> Curve:
    """The reference family's shared shape and series levels (least squares on the grid);
    each other family's own fit; the conditions each family was measured under. The shape
    needs a reference series with two budgets: ValueError without one."""
    reference = [p for p in points if p.family == REFERENCE_FAMILY]
    series = sorted({p.series for p in reference})
    if not any(len({p.sample_passes for p in reference if p.series == g}) >= 2 for g in series):
        raise ValueError("no series has tau at two budgets: the shape is undetermined")
    noise = repeat_noise(reference)
    scale, exponent, fitted, shapes = _grid_fit(reference, noise)
    curve = Curve(scale, exponent, fitted, 0.0)
    worst = max(abs(_tau(curve, fitted[p.series], p.sample_passes) / p.tau - 1) for p in reference)
    groups_of = tuple(dict.fromkeys(p.group for p in reference))
    first = min(p.sample_passes for p in reference)
    base = Curve(scale, exponent, fitted, float(worst), groups_of, shapes=shapes, noise=noise)
    base = replace(base, first_passes=first)
    families = {
        f: _family_fit([p for p in points if p.family == f], base)
        for f in sorted({p.family for p in points} - {REFERENCE_FAMILY})
    }
    measured = {
        f: _measured([p for p in points if p.family == f]) for f in {p.family for p in points}
    }
    return replace(base, families=families, measured=dict(sorted(measured.items())))


@functools.cache
def curve() -> Curve:
    """The curve as shipped (data/fitted.json) while its inputs are unchanged, else fitted."""
    shipped = fitcache.shipped()
    if shipped is not None:
        return Curve.from_json(shipped["acceptance"]["curve"])
    return fit_curve(curve_points())


def _tau(c: Curve, level: float, sample_passes: Number) -> Any:
    return 1.0 + (level - 1.0) * c.share(sample_passes)


def _epochs(sample_passes: Number, samples: float) -> Any:
    return sample_passes / samples if samples > 0 else sample_passes * 0.0


def _turned(fit: FamilyFit, sample_passes: Number, samples: float) -> tuple[Any, Any]:
    """(the sample passes the rise reads, the factor the turnover leaves of the gain): past
    the peak's epochs the rise stops and the gain falls by decline_per_epoch an epoch."""
    if fit.peak_epochs is None or samples <= 0:
        return sample_passes, 1.0
    epochs = _epochs(sample_passes, samples)
    past = maximum(epochs - fit.peak_epochs, 0.0)
    rise = minimum(sample_passes, fit.peak_epochs * samples)
    return rise, maximum(1.0 - fit.decline_per_epoch * past, 0.0)


def _family_tau(fit: FamilyFit, level: float, sample_passes: Number, samples: float) -> Any:
    rise, kept = _turned(fit, sample_passes, samples)
    return maximum(1.0 + (level - 1.0) * fit.share(rise) * kept, 1.0)


def _curve_of(inputs: CurveInputs, c: Curve) -> FamilyFit | None:
    """The family's own fit; None: the reference's curve (the reference family, or a
    family no public series measured)."""
    return None if inputs.family == REFERENCE_FAMILY else c.families.get(inputs.family)


def measured_family(inputs: CurveInputs, c: Curve) -> bool:
    return inputs.family == REFERENCE_FAMILY or inputs.family in c.families


def _share_of(inputs: CurveInputs, c: Curve, sample_passes: Number) -> Any:
    """The plan's share of its level after these passes (its family's shape, turnover
    included)."""
    own = _curve_of(inputs, c)
    if own is None:
        return c.share(sample_passes)
    rise, kept = _turned(own, sample_passes, inputs.samples)
    return own.share(rise) * kept


def _central_levels(inputs: CurveInputs, c: Curve) -> tuple[float, float, float]:
    """(central, low, high) levels of the plan's family: the reference's mean and extreme
    series levels; another family's own level with the reference's relative spread."""
    lo, hi = c.level_range
    own = _curve_of(inputs, c)
    if own is None:
        return c.level, lo, hi
    per = (own.level - 1.0) / (c.level - 1.0)
    return own.level, 1.0 + (lo - 1.0) * per, 1.0 + (hi - 1.0) * per


def _family_spread(inputs: CurveInputs, c: Curve, sample_passes: Number) -> Any:
    """The spread between the measured families at these passes: the largest |gain of a
    measured family / the reference's gain - 1| (the widening of a family no series
    measured)."""
    ref = (c.level - 1.0) * c.share(sample_passes)
    out = ref * 0.0
    for f in c.families.values():
        rise, kept = _turned(f, sample_passes, inputs.samples)
        gain = (f.level - 1.0) * f.share(rise) * kept
        out = maximum(out, abs(gain / maximum(ref, _TINY_SHARE) - 1.0))
    return out


def widened_by(inputs: CurveInputs, fitted: Curve | None = None) -> tuple[str, ...]:
    """The conditions of the plan no public series measured for its family, each of which
    widens its range (conditions.py's names), in a fixed order."""
    c = fitted or curve()
    fam = inputs.family if inputs.family in c.measured else REFERENCE_FAMILY
    m = c.measured.get(fam, conditions.Measured())
    out = []
    if not measured_family(inputs, c):
        out.append(conditions.FAMILY)
    if inputs.family != "eagle3" and m.block_sizes and inputs.block_size not in m.block_sizes:
        out.append(conditions.BLOCK)
    # Anchors pick the trained blocks of the DFlash family; EAGLE-3 trains every position.
    every = inputs.family in FAMILIES and FAMILIES[inputs.family].every_token
    coverage = conditions.anchor_coverage(inputs.anchors, inputs.block_size, inputs.sample_tokens)
    if not every and coverage < m.coverage:
        out.append(conditions.ANCHORS)
    if m.on_policy and inputs.on_policy not in m.on_policy:
        out.append(conditions.ON_POLICY if inputs.on_policy else conditions.POLICY)
    if conditions.target_octaves(inputs.target_params, m.target_params) > 0:
        out.append(conditions.TARGET)
    return tuple(out)


def _uncalibrated(inputs: CurveInputs, c: Curve, sample_passes: Number) -> tuple[Any, Any, Any]:
    """The plan's curve without a measurement of its own: its family's levels and shape,
    widened for each condition no series measured, the block converted, bounded."""
    level, lo, hi = _central_levels(inputs, c)
    scaled = inputs.level
    share = _share_of(inputs, c, sample_passes)

    def at(lv: float, s: Any) -> Any:
        return 1.0 + (lv - 1.0) * scaled * s

    central, low, high = at(level, share), at(lo, share), at(hi, share)
    silent = widened_by(inputs, c)
    fam = inputs.family if inputs.family in c.measured else REFERENCE_FAMILY
    m = c.measured.get(fam, conditions.Measured())
    by_low = by_high = 0.0 * share
    if conditions.FAMILY in silent:
        spread = _family_spread(inputs, c, sample_passes)
        by_low, by_high = by_low + spread, by_high + spread
    if conditions.ON_POLICY in silent:  # regenerated data: the plateau may be higher
        by_high = by_high + c.data_spread
    if conditions.POLICY in silent:  # data not regenerated: the plateau may be lower
        by_low = by_low + c.data_spread
    if conditions.TARGET in silent:
        octaves = conditions.target_octaves(inputs.target_params, m.target_params)
        by_low, by_high = by_low + c.data_spread * octaves, by_high + c.data_spread * octaves
    low, high = conditions.widen(low, high, central, by_low, by_high)
    if conditions.ANCHORS in silent:  # fewer positions trained per pass: the low end reads
        coverage = conditions.anchor_coverage(
            inputs.anchors, inputs.block_size, inputs.sample_tokens
        )
        fewer = at(lo, _share_of(inputs, c, sample_passes * coverage / m.coverage))
        low = minimum(low, fewer)
    if conditions.BLOCK in silent:
        measured_block = conditions.nearest_block(m.block_sizes, inputs.block_size)
        assert measured_block is not None
        converted = [
            conditions.block_tau(t, measured_block, inputs.block_size) for t in (central, low, high)
        ]
        # The per-position acceptance a block of another size trains to is not measured:
        # the range runs from the conversion to the measured block's own tau.
        low = minimum(converted[1], low)
        high = maximum(converted[2], high)
        central = converted[0]
    return central, low, high


def share_spread(inputs: CurveInputs, c: Curve, at: float) -> tuple[float, float]:
    """The least and largest share at `at` the public series allow, for a budget below
    the least one they measured: the shapes they cannot tell apart (each fitting every
    point within the benchmark's noise) agree from that budget on, and each carries the
    share down to `at` its own way. (share, share) where `at` was measured or beyond."""
    own = _curve_of(inputs, c)
    share = float(_share_of(inputs, c, at))
    first = own.first_passes if own is not None and own.shapes else c.first_passes
    shapes = own.shapes if own is not None and own.shapes else c.shapes
    if at >= first or not shapes or share <= _TINY_SHARE:
        return share, share
    central = share / float(_share_of(inputs, c, first))
    ratios = [float(_share(a, k, at)) / float(_share(a, k, first)) for a, k in shapes]
    return share * min(ratios) / central, share * max(ratios) / central


def _calibrated(inputs: CurveInputs, c: Curve, sample_passes: Number) -> tuple[Any, Any, Any]:
    """The curve through the plan's measured tau (see tau_at)."""
    assert inputs.measured is not None
    at, tau = inputs.measured
    low, high = inputs.measured_range or (tau, tau)
    own = _curve_of(inputs, c)
    share_at = max(float(_share_of(inputs, c, at)), _TINY_SHARE)
    least, most = (max(x, _TINY_SHARE) for x in share_spread(inputs, c, at))
    share = maximum(_share_of(inputs, c, sample_passes), _TINY_SHARE)

    def through(measured_tau: float, s_at: float) -> Any:
        return 1.0 + (measured_tau - 1.0) / s_at * share

    worst = own.worst_residual if own is not None else c.worst_residual
    widen = worst * minimum(abs(1.0 - share_at / share), 1.0)
    # The guard: below the budgets the series measured, the share at the measurement is
    # uncertain, and a small share divides the gain into a large level.
    return (
        through(tau, share_at),
        through(min(low, tau), most) * (1 - widen),
        through(max(high, tau), least) * (1 + widen),
    )


def calibration_note(inputs: CurveInputs, fitted: Curve | None = None) -> str | None:
    """One line when the plan's measured tau cannot inform the level: the level it implies
    at the least share the public series allow there exceeds the tokens a verify step can
    accept (a measurement too early on the curve, or above anything the family reaches);
    None when it can."""
    if inputs.measured is None:
        return None
    c = fitted or curve()
    at, tau = inputs.measured
    least = share_spread(inputs, c, at)[0]
    bound = conditions.max_tau(inputs.family, inputs.block_size)
    implied = math.inf if least <= _TINY_SHARE else 1.0 + (tau - 1.0) / least
    if implied <= bound:
        return None
    return (
        f"calibration.acceptance: tau {tau:.2f} at {at:,.0f} sample passes may be only "
        f"{least:.1%} of the way up the curve, implying a level up to {implied:,.1f}, past "
        f"the {bound:.0f} tokens a verify step can accept: it cannot set the level (tau "
        f"bounded at {bound:.0f})"
    )


def tau_at(
    inputs: CurveInputs, sample_passes: Number, fitted: Curve | None = None
) -> tuple[Any, Any, Any]:
    """(central, low, high) tau after these sample passes.

    Uncalibrated: the plan's family's curve (the reference's series levels, their mean and
    extremes; another family's own fit, or the reference's where none measured it), its
    range widened for each condition no public series measured (widened_by), a block of
    another size converted at the same per-position acceptance.

    Calibrated (a measured tau): the level is refit so that the curve passes through the
    measurement (the shape stays the public fit's: a run's own earlier reports are not runs
    of a smaller budget, their learning rate not yet decayed, so they do not measure the
    scale). Its range: the curves through the measurement's scatter, widened by the fit's
    worst residual in proportion to the share of the gain extrapolated, and, for a
    measurement below the budgets the public series measured, by the share there that the
    shapes they cannot tell apart allow (share_spread: the guard, as a small share divides
    the gain into a large level).

    A measurement the guard rejects (calibration_note) does not move the central value
    (the public curve's); the range spans both.

    Either way tau never exceeds the tokens one verify step can accept
    (conditions.max_tau). `fitted`: another fit of the curve (validate's folds); the
    shipped fit by default."""
    c = fitted or curve()
    central, low, high = _uncalibrated(inputs, c, sample_passes)
    if inputs.measured is not None:
        cal = _calibrated(inputs, c, sample_passes)
        if calibration_note(inputs, c) is None:
            central, low, high = cal
        else:
            # The measurement cannot set the level: the public curve stays central, and
            # the range spans both what it and the measurement allow.
            low, high = minimum(low, cal[1]), maximum(high, cal[2])
    bound = conditions.max_tau(inputs.family, inputs.block_size)
    return (
        minimum(central, bound),
        maximum(minimum(low, bound), 1.0),
        minimum(high, bound),
    )


def tau_ceiling(inputs: CurveInputs, fitted: Curve | None = None) -> tuple[Any, Any, Any]:
    """The most tau any budget buys the plan: the level (infinite passes), or for a family
    that turns over, tau at its peak epochs."""
    import numpy as np  # search --objective only

    c = fitted or curve()
    own = _curve_of(inputs, c)
    if own is not None and own.peak_epochs is not None and inputs.samples > 0:
        return tau_at(inputs, np.asarray([own.peak_epochs * inputs.samples]), c)
    return tau_at(inputs, np.asarray([np.inf]), c)


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
