"""Per-GPU rates of each role: a roofline times an efficiency, or what measurements say.

A GPU's time per token on a role is modelled as

    seconds_per_token = x / f + h,    x = 1 / (roofline tokens/s x default efficiency)

where f is how far the real pipeline departs from the GPU class's default efficiency and
h a fixed per-token cost a faster GPU does not shrink (host, producer, scheduling). With no
measurement f = 1 and h = 0. A measurement fixes the rate on its own GPU; how it carries
to another GPU depends on why it departs from the default, and one measurement cannot say
why. Each reading below is one answer; the rate on another GPU is the span of the readings
the measurement's context leaves plausible (docs/model.md):

- ``workload``: the departure is the workload's (this pipeline's kernels on any device):
  f carries over, h = 0.
- ``kernels``: the departure belongs to the measured GPU's kernel family (its ``arch``):
  another family runs at its own default efficiency, f = 1, h = 0.
- ``host``: the departure is a fixed per-token cost, f = 1, h = measured - device time.
  A measurement taken with the GPUs fully busy near their power limit rules it out.

Two or more measurements of a role at different device speeds separate f from h by least
squares; then the fit, not the readings, sets the rate.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Mapping
from dataclasses import dataclass, replace

from ..inputs.catalog import Catalog
from ..inputs.formats import row_of
from ..inputs.hardware import Gpu
from ..inputs.plan import Measurement, Workload
from ..physics.families import FAMILIES
from ..physics.fitting import efficiency_basis
from ..physics.roofline import (
    Roofline,
    default_efficiency,
    drafter_roofline,
    target_roofline,
)
from ..physics.work import DrafterWork, TargetWork, drafter_work, target_work
from .calibration import measurements
from .resolve import Resolved, workload_drafter
from .scenarios import (
    HIGH,
    LOW,
    Band,
    Dim,
    Scenario,
    efficiency_band,
    factor_dim,
    family,
    reading_dim,
)


@dataclass(frozen=True, slots=True)
class Reading:
    """One explanation of the measurements, and the rate it gives on the plan's GPU."""

    name: str  # "workload", "kernels", "host", "fit", "measured", "default"
    tokens_per_s: float
    why: str


@dataclass(frozen=True, slots=True)
class Point:
    """A measurement brought to this plan: x and y of the time-per-token model."""

    gpu: Gpu
    tokens_per_s: float  # as measured, on its own workload
    x_s_per_token: float  # 1 / (roofline x default efficiency) on its own workload
    on_plan_workload: bool
    gpu_busy: bool | None
    source: str


ENGINE_NAMES = {"sglang": "SGLang", "vllm": "vLLM", "pytorch": "PyTorch"}


def engine(role: str, launch_format: str) -> str:
    """The software a role's rate rests on: the capture engine of the launch format for
    targets (its row's: speculators runs vLLM; SpecForge and its Slurm job run SGLang), the
    PyTorch training stack for drafters."""
    if role == "drafter":
        return "pytorch"
    return row_of(launch_format).engine


def _pick(ends: tuple[float, float, float], value: str | None) -> float:
    """(low, central, high)[value]: a dimension's factor under a scenario."""
    return ends[0] if value == LOW else ends[2] if value == HIGH else ends[1]


@dataclass(frozen=True, slots=True)
class RateModel:
    """A role's per-GPU rate under any scenario: a basis per reading (or one central
    basis), times the factors of the dimensions it depends on, never below what the role
    is known to reach. Monotone in every factor, so its extremes are corners."""

    bases: tuple[tuple[str, float], ...]  # reading name or "central" -> tokens/s
    reading: str | None = None  # the readings' dimension key
    scaled: frozenset[str] = frozenset()  # bases the efficiency factor multiplies
    efficiency: tuple[str, tuple[float, float, float]] | None = None
    spread: tuple[str, tuple[float, float, float]] | None = None
    maturity: tuple[str, tuple[float, float, float]] | None = None
    floor: float = 0.0
    dims: tuple[Dim, ...] = ()

    def rate(self, s: Scenario) -> float:
        name = s.get(self.reading, "central") if self.reading else "central"
        value = dict(self.bases)[name]
        if self.efficiency is not None and name in self.scaled:
            value *= _pick(self.efficiency[1], s.get(self.efficiency[0]))
        for dim in (self.spread, self.maturity):
            if dim is not None:
                value *= _pick(dim[1], s.get(dim[0]))
        return max(value, self.floor)

    def corners(self) -> list[dict[str, str]]:
        """Every assignment of this rate's dimensions' values."""
        out: list[dict[str, str]] = [{}]
        for dim in self.dims:
            out = [{**a, dim.key: v} for a in out for v in dim.values]
        return out

    def extreme(self, slow: bool) -> dict[str, str]:
        """The assignment of this rate's dimensions that gives its lowest (or highest)
        rate; the first in corner order on a tie."""
        corners = self.corners()
        rates = [self.rate(c) for c in corners]
        pick = min(rates) if slow else max(rates)
        return corners[rates.index(pick)]


@dataclass(frozen=True, slots=True)
class RoleRate:
    """The rate of one GPU of a role (before TP or data-parallel scaling)."""

    role: str
    gpu: Gpu
    tokens_per_s: float  # central
    low_tokens_per_s: float
    high_tokens_per_s: float
    efficiency: float  # central rate as a share of the dense bf16 peak
    default_efficiency: float
    source: str  # "measured" or "estimated"
    basis: str
    limit: str  # "compute" or "memory"
    roofline: Roofline
    readings: tuple[Reading, ...]
    low_reading: str
    high_reading: str
    fitted_overhead_s_per_token: float | None = None  # h, when measurements separate it
    model: RateModel | None = None  # the rate under any scenario (scenarios.py)
    band_why: str = ""  # where a default estimate's band comes from

    @property
    def measured(self) -> bool:
        return self.source == "measured"


# A rate carried from one workload to another on the same GPU keeps its efficiency; the
# residual uncertainty is the physics of the FLOP count, much smaller.
RESCALE_SPREAD = (0.10, 0.10)


def _pct(x: float) -> str:
    return f"{x * 100:.1f} %"


# (GPU, workload, for a measurement): a measurement's roofline is its one GPU's work (its
# run's drafter count is not recorded), so that how the plan's drafters are sharded never
# changes what the measurements say (a fit or a reading of them).
RooflineOf = Callable[[Gpu, Workload, bool], Roofline]


def measured_workload(role: str, m: Measurement, w: Workload) -> Workload:
    """The workload a measurement was taken on: the plan's, with the fields it records.
    The drafter family counts for drafter measurements only: the target's capture runs
    the whole forward whatever the drafter keeps of it (physics/work.py target_work)."""
    changes: dict[str, object] = {
        k: v
        for k, v in (
            ("target_model", m.target_model),
            ("avg_sample_tokens", m.avg_sample_tokens),
            ("num_anchors", m.num_anchors),
            ("drafter", m.drafter if role == "drafter" else None),
        )
        if v is not None
    }
    if changes.get("drafter", w.drafter) != w.drafter:
        # Another family captures its own layers (EAGLE-3: three): the plan's explicit
        # list may not fit it, and the measured run tapped its family's default.
        changes["target_layer_ids"] = None
    return w.model_copy(update=changes) if changes else w


def _points(role: str, r: Resolved, catalog: Catalog, roof_of: RooflineOf) -> list[Point]:
    plan = r.plan
    entries = getattr(plan.calibration, role)
    points: list[Point] = []
    for key, entry in entries.items():
        gpu = r.gpus[key]
        for m in measurements(entry):
            if m.bound != "exact":
                continue
            workload = measured_workload(role, m, plan.workload)
            same = workload == plan.workload and (m.batch_size in (None, plan.drafter.batch_size))
            roof = roof_of(gpu, workload, True)
            moe = role == "target" and catalog.model(workload.target_model).is_moe
            x = 1.0 / (roof.tokens_per_s * default_efficiency(role, gpu, moe))
            points.append(Point(gpu, m.tokens_per_s, x, same, m.gpu_busy, m.source))
    return points


def _fit(points: list[Point]) -> tuple[float, float] | None:
    """Least squares of y = a x + h (a = 1/f) over points with distinct x, h >= 0."""
    xs = [p.x_s_per_token for p in points]
    if len(points) < 2 or max(xs) / min(xs) < 1.05:
        return None
    ys = [1.0 / p.tokens_per_s for p in points]
    n = len(points)
    mx, my = sum(xs) / n, sum(ys) / n
    sxx = sum((x - mx) ** 2 for x in xs)
    a = sum((x - mx) * (y - my) for x, y in zip(xs, ys, strict=True)) / sxx
    h = my - a * mx
    if h < 0 or a <= 0:  # no separable overhead: a pure factor through them
        a, h = sum(x * y for x, y in zip(xs, ys, strict=True)) / sum(x * x for x in xs), 0.0
    return a, h


@dataclass(frozen=True, slots=True)
class _Bound:
    """The highest rate a GPU is known to reach on the plan's workload, and how it is known."""

    tokens_per_s: float
    said: str  # "at least 14,800 tok/s (it kept up)": the rate's basis
    why: str  # the "kept up" reading's explanation


def _lower_bound(role: str, r: Resolved, gpu: Gpu, roof_of: RooflineOf) -> _Bound | None:
    """The highest rate this GPU is known to reach on the plan's own workload. A bound
    taken on another drafter family (same workload otherwise) carries by the ratio of the
    two families' work on this GPU, as a measured rate does (the efficiency kept)."""
    entry = getattr(r.plan.calibration, role).get(gpu.key)
    if entry is None:
        return None
    w = r.plan.workload
    best: _Bound | None = None
    for m in measurements(entry):
        if not (
            m.bound == "at_least"
            and m.target_model in (None, w.target_model)
            and m.avg_sample_tokens in (None, w.avg_sample_tokens)
            and m.num_anchors in (None, w.num_anchors)
        ):
            continue
        rate, said = m.tokens_per_s, f"at least {m.tokens_per_s:,.0f} tok/s (it kept up)"
        why = f"the {role} kept up at {rate:,.0f} tok/s per GPU"
        theirs = measured_workload(role, m, w)
        if theirs.drafter != w.drafter:
            ratio = roof_of(gpu, w, True).tokens_per_s / roof_of(gpu, theirs, True).tokens_per_s
            rate *= ratio
            said = (
                f"at least {rate:,.0f} tok/s (it kept up at {m.tokens_per_s:,.0f} training "
                f"{FAMILIES[theirs.drafter].name}, x{ratio:.3f} for "
                f"{FAMILIES[w.drafter].name}'s work)"
            )
            why = (
                f"the {role} kept up at {m.tokens_per_s:,.0f} tok/s per GPU training "
                f"{FAMILIES[theirs.drafter].name}: {rate:,.0f} on {FAMILIES[w.drafter].name}'s work"
            )
        if best is None or rate > best.tokens_per_s:
            best = _Bound(rate, said, why)
    return best


def role_rate(role: str, r: Resolved, catalog: Catalog, gpu: Gpu, roof_of: RooflineOf) -> RoleRate:
    """The rate of `role` on `gpu` for the plan's workload, with its range, readings and
    scenario model; software maturity applied to estimates; never below what the plan
    records the role reached (a lower bound)."""
    rate = _role_rate(role, r, catalog, gpu, roof_of)
    model = rate.model
    assert model is not None
    # A rate rescaled from a measurement on this very GPU already holds its software.
    carried = model.spread is None or not model.spread[0].startswith("rescale:")
    mature = gpu.maturity_of(role, engine(role, r.plan.launch.format))
    if not rate.measured and carried and mature is not None and mature.low < mature.high:
        key = f"maturity:{gpu.key}:{role}:{mature.engine}"
        stack = f"{gpu.name} {ENGINE_NAMES.get(mature.engine, mature.engine)}"
        dim = factor_dim(
            key,
            f"{stack} maturity",
            mature.low,
            mature.high,
            (
                f"{stack} {(1 - mature.low) * 100:.0f} % short of the physics (immature kernels)"
                if mature.low < 1
                else f"{stack} as the physics predicts",
                f"{stack} as the physics predicts"
                if mature.high == 1
                else f"{stack} {(mature.high - 1) * 100:+.0f} %",
            ),
        )
        model = replace(
            model, maturity=(key, (mature.low, mature.factor, mature.high)), dims=(*model.dims, dim)
        )
        rate = replace(
            rate,
            tokens_per_s=rate.tokens_per_s * mature.factor,
            efficiency=rate.efficiency * mature.factor,
            basis=f"{rate.basis}; x{mature.factor:.2f} for {stack}'s maturity "
            f"({mature.low:.2f}-{mature.high:.2f})",
        )
    known = _lower_bound(role, r, gpu, roof_of)
    low = model.rate(model.extreme(slow=True))
    high = model.rate(model.extreme(slow=False))
    rate = replace(rate, model=model, low_tokens_per_s=low, high_tokens_per_s=high)
    if known is None or known.tokens_per_s <= low or rate.measured:
        return rate
    bound = known.tokens_per_s
    model = replace(model, floor=bound)
    central = max(rate.tokens_per_s, bound)
    reading = Reading("kept up", bound, known.why)
    return replace(
        rate,
        model=model,
        tokens_per_s=central,
        low_tokens_per_s=bound,
        high_tokens_per_s=max(high, bound),
        efficiency=rate.efficiency * central / rate.tokens_per_s,
        readings=(*rate.readings, reading),
        low_reading="kept up",
        basis=f"{rate.basis}; {known.said}",
    )


@dataclass(frozen=True, slots=True)
class _RateContext:
    """What every case of a role's rate on one GPU reads (measured, fit, default,
    readings): built once, so each case is a function of it alone."""

    role: str
    gpu: Gpu
    roof: Roofline
    default: float  # the GPU class's default efficiency for the role
    x_plan: float  # 1 / (roofline x default efficiency) on the plan's workload
    points: list[Point]
    # The measurements a reading, a fit or a rescale rests on: plans share those dimensions
    # only when they rest on the same measurements (the same calibration).
    evidence: str
    band: Band
    eff_key: str
    eff_dim: Dim

    @property
    def eff_ends(self) -> tuple[float, float, float]:
        return (self.band.low, 1.0, self.band.high)


def _rate_context(
    role: str, r: Resolved, catalog: Catalog, gpu: Gpu, roof_of: RooflineOf
) -> _RateContext:
    roof = roof_of(gpu, r.plan.workload, False)
    moe = role == "target" and r.model.is_moe
    default = default_efficiency(role, gpu, moe)
    x_plan = 1.0 / (roof.tokens_per_s * default)
    points = _points(role, r, catalog, roof_of)
    band = efficiency_band(role, gpu.arch)
    eff_key = f"efficiency:{gpu.arch}:{role}"
    eff_dim = replace(
        factor_dim(eff_key, f"{family(gpu.arch)} {role} efficiency", band.low, band.high),
        # One GPU per role: the role names it in a chart, where 60 columns are tight.
        chart_name=f"{role} efficiency",
    )
    return _RateContext(
        role,
        gpu,
        roof,
        default,
        x_plan,
        points,
        ",".join(sorted(f"{p.gpu.key}={p.tokens_per_s:.6g}" for p in points)),
        band,
        eff_key,
        eff_dim,
    )


def _role_rate(role: str, r: Resolved, catalog: Catalog, gpu: Gpu, roof_of: RooflineOf) -> RoleRate:
    """The rate before maturity and lower bounds (role_rate), by what the measurements
    allow: one on this GPU and workload, a fit of two or more, none, or the readings of
    one measured GPU."""
    c = _rate_context(role, r, catalog, gpu, roof_of)
    own = [p for p in c.points if p.gpu.key == gpu.key and p.on_plan_workload]
    if own:
        return _measured_rate(c, own)
    fit = _fit(c.points)
    if fit is not None:
        return _fit_rate(c, *fit)
    if not c.points:
        return _default_rate(c)
    return _readings_rate(c)


def _make(
    c: _RateContext,
    central: float,
    low: float,
    high: float,
    source: str,
    basis: str,
    readings: tuple[Reading, ...],
    low_name: str,
    high_name: str,
    h: float | None = None,
    model: RateModel | None = None,
) -> RoleRate:
    """A RoleRate of the context's role and GPU from one case's figures."""
    eff = central / c.roof.tokens_per_s * c.roof.peak_share
    if model is None:  # one basis; a spread, when there is one, is the fit's
        model = RateModel((("central", central),))
        if low < high:
            key = f"fit:{c.role}:{c.evidence}"
            ends = (low / central, 1.0, high / central)
            model = replace(
                model,
                spread=(key, ends),
                dims=(factor_dim(key, f"{c.role} fit", ends[0], ends[2]),),
            )
    return RoleRate(
        c.role,
        c.gpu,
        central,
        low,
        high,
        eff,
        c.default,
        source,
        basis,
        c.roof.limit,
        c.roof,
        readings,
        low_name,
        high_name,
        h,
        model,
    )


def _measured_rate(c: _RateContext, own: list[Point]) -> RoleRate:
    """Measured on this GPU and workload: the mean of those measurements, no range."""
    rate = sum(p.tokens_per_s for p in own) / len(own)
    reading = Reading("measured", rate, f"measured on {c.gpu.name}")
    return _make(
        c,
        rate,
        rate,
        rate,
        "measured",
        f"measured on {c.gpu.name}",
        (reading,),
        "measured",
        "measured",
    )


def _fit_rate(c: _RateContext, a: float, h: float) -> RoleRate:
    """Measurements at different device speeds: the fit of y = a x + h sets the rate."""
    rate = 1.0 / (a * c.x_plan + h)
    lo, hi = RESCALE_SPREAD
    why = (
        f"fit to {len(c.points)} measurements: {_pct(1 / a)} of the default "
        f"efficiency plus {h * 1e6:,.1f} us per token that no GPU speed shrinks"
    )
    reading = Reading("fit", rate, why)
    return _make(
        c,
        rate,
        rate * (1 - lo),
        rate * (1 + hi),
        "estimated",
        f"estimated: {why}",
        (reading,),
        "fit",
        "fit",
        h,
    )


def _default_rate(c: _RateContext) -> RoleRate:
    """No measurement: the roofline at the default efficiency, within the family's band."""
    gpu, band = c.gpu, c.band
    rate = c.roof.tokens_per_s * c.default
    field = "prefill_efficiency" if c.role == "target" else "training_efficiency"
    why = f"default efficiency {_pct(c.default)} for {gpu.name} ({efficiency_basis(gpu, field)})"
    reading = Reading("default", rate, why)
    model = RateModel(
        (("central", rate),),
        scaled=frozenset({"central"}),
        efficiency=(c.eff_key, c.eff_ends),
        dims=(c.eff_dim,),
    )
    return replace(
        _make(
            c,
            rate,
            rate * band.low,
            rate * band.high,
            "estimated",
            f"estimated: {why}",
            (reading,),
            "default",
            "default",
            model=model,
        ),
        band_why=band.why(c.role, gpu.arch),
    )


def _readings(c: _RateContext, same_gpu: bool, names: str) -> list[Reading]:
    """The explanations of one measured GPU's departure the context leaves plausible."""
    points, gpu = c.points, c.gpu
    f = sum(p.x_s_per_token * p.tokens_per_s for p in points) / len(points)  # x / y = f
    readings = [
        Reading(
            "workload",
            min(f / c.x_plan, c.roof.tokens_per_s * gpu.efficiency_ceiling),
            f"the measured {f:.2f}x of default efficiency on {names} is this "
            f"pipeline's and carries over",
        )
    ]
    if not same_gpu and all(p.gpu.arch != gpu.arch or not p.gpu.arch for p in points):
        readings.append(
            Reading(
                "kernels",
                1.0 / c.x_plan,
                f"the shortfall belongs to {names}'s kernels; {gpu.name} "
                f"runs at its default {_pct(c.default)}",
            )
        )
    if not same_gpu and not any(p.gpu_busy for p in points):
        h = max(0.0, sum(1 / p.tokens_per_s - p.x_s_per_token for p in points) / len(points))
        readings.append(
            Reading(
                "host",
                1.0 / (c.x_plan + h),
                f"{h * 1e6:,.1f} us per token is host time a faster GPU does not shrink",
            )
        )
    return readings


def _readings_rate(c: _RateContext) -> RoleRate:
    """One measured GPU (several points on it at one speed act as one): the readings."""
    names = ", ".join(dict.fromkeys(p.gpu.name for p in c.points))
    same_gpu = all(p.gpu.key == c.gpu.key for p in c.points)
    readings = _readings(c, same_gpu, names)
    low = min(readings, key=lambda rd: rd.tokens_per_s)
    high = max(readings, key=lambda rd: rd.tokens_per_s)
    # The evidence cannot choose between the plausible readings: the central figure is
    # their geometric midpoint, and the range spans them.
    central = math.sqrt(low.tokens_per_s * high.tokens_per_s)
    if same_gpu:
        return _rescaled_rate(c, central, readings, names)
    # The readings are a shared dimension; the kernels reading runs this GPU at its
    # family's default efficiency, whose band is a dimension of its own.
    bases = (("central", central), *((rd.name, rd.tokens_per_s) for rd in readings))
    dims = (
        (
            reading_dim(
                c.role,
                c.evidence,
                tuple((rd.name, f"{c.role}: {_reading_said(rd.name)}") for rd in readings),
            ),
        )
        if len(readings) > 1
        else ()
    )
    kernels = any(rd.name == "kernels" for rd in readings)
    model = RateModel(
        bases,
        reading=dims[0].key if dims else None,
        scaled=frozenset({"kernels"}),
        efficiency=(c.eff_key, c.eff_ends) if kernels else None,
        dims=(*dims, c.eff_dim) if kernels else dims,
    )
    if len(readings) == 1:
        basis = f"estimated: {readings[0].why}"
    else:
        basis = (
            f"estimated from the measurement on {names}: between {low.name} "
            f"({low.tokens_per_s:,.0f} tok/s) and {high.name} "
            f"({high.tokens_per_s:,.0f} tok/s)"
        )
    return _make(
        c,
        central,
        low.tokens_per_s,
        high.tokens_per_s,
        "estimated",
        basis,
        tuple(readings),
        low.name,
        high.name,
        model=model,
    )


def _rescaled_rate(
    c: _RateContext, central: float, readings: list[Reading], names: str
) -> RoleRate:
    """Measured on this GPU but another workload: carried by the FLOP count, efficiency
    kept, within the rescale's spread."""
    basis = (
        f"estimated: the measurement on {names} rescaled to this workload by its "
        f"FLOP count (efficiency kept)"
    )
    lo, hi = RESCALE_SPREAD
    key = f"rescale:{c.role}:{c.evidence}"
    model = RateModel(
        (("central", central),),
        spread=(key, (1 - lo, 1.0, 1 + hi)),
        dims=(factor_dim(key, f"{c.role} rescaled by FLOPs", 1 - lo, 1 + hi),),
    )
    return _make(
        c,
        central,
        central * (1 - lo),
        central * (1 + hi),
        "estimated",
        basis,
        tuple(readings),
        "workload",
        "workload",
        model=model,
    )


def _reading_said(name: str) -> str:
    return {
        "workload": "measured shortfall carries over (workload)",
        "kernels": "shortfall stays with the measured GPU's kernels",
        "host": "shortfall is fixed host time per token",
    }.get(name, name)


@dataclass(frozen=True, slots=True)
class Rates:
    """Both roles' per-GPU rates for one plan, plus the per-token/per-sample work."""

    resolved: Resolved
    target_work: TargetWork
    drafter_work: DrafterWork
    target: RoleRate
    drafter: RoleRate


def _works(r: Resolved, catalog: Catalog) -> tuple[RooflineOf, RooflineOf]:
    """Roofline functions of each role for any workload (a measurement's own or the plan's)."""
    cache: dict[tuple[str, Workload], object] = {}
    plan = r.plan

    def target_of(gpu: Gpu, w: Workload, measured: bool = False) -> Roofline:
        key = ("t", w)
        if key not in cache:
            model = catalog.model(w.target_model)
            layer_ids = w.target_layer_ids or model.default_layer_ids(w.draft_layers)
            cache[key] = target_work(model, tuple(layer_ids), float(w.avg_sample_tokens))
        # A calibration measurement records no precision: it is read as a bf16 run, so
        # that an fp8 or fp4 plan carries its departure to its own, faster roofline.
        precision = "bf16" if measured else plan.target.precision
        return target_roofline(cache[key], gpu, precision)  # type: ignore[arg-type]

    def drafter_of(gpu: Gpu, w: Workload, measured: bool = False) -> Roofline:
        count = 1 if measured else plan.drafter.count
        key = (f"d{count}", w)
        if key not in cache:
            same = (w.target_model, w.drafter) == (
                plan.workload.target_model,
                plan.workload.drafter,
            )
            shape = r.shape if same else None
            if shape is None:
                # the measurement's own workload: its target model, its drafter family
                shape = workload_drafter(w, catalog.model(w.target_model))[2]
            cache[key] = drafter_work(
                shape,
                w.num_anchors,
                float(w.avg_sample_tokens),
                plan.drafter.batch_size,
                count,
            )
        return drafter_roofline(cache[key], gpu, float(w.avg_sample_tokens))  # type: ignore[arg-type]

    return target_of, drafter_of


def rates(
    r: Resolved, catalog: Catalog, target_gpu: Gpu | None = None, drafter_gpu: Gpu | None = None
) -> Rates:
    """Per-GPU rates of both roles on the plan's GPUs (or on the GPUs given)."""
    target_of, drafter_of = _works(r, catalog)
    w = r.plan.workload
    model = r.model
    tw = target_work(model, r.layer_ids, float(w.avg_sample_tokens), r.transferred_layers)
    dw = drafter_work(
        r.shape,
        w.num_anchors,
        float(w.avg_sample_tokens),
        r.plan.drafter.batch_size,
        r.plan.drafter.count,
    )
    t = role_rate("target", r, catalog, target_gpu or r.target_gpu, target_of)
    d = role_rate("drafter", r, catalog, drafter_gpu or r.drafter_gpu, drafter_of)
    return Rates(r, tw, dw, t, d)


def measured_implied(
    role: str, r: Resolved, catalog: Catalog
) -> Mapping[str, tuple[float, Roofline]]:
    """Each measured GPU's rate and roofline on the plan's workload (for diagnostics)."""
    target_of, drafter_of = _works(r, catalog)
    roof_of = target_of if role == "target" else drafter_of
    out: dict[str, tuple[float, Roofline]] = {}
    for p in _points(role, r, catalog, roof_of):
        if p.on_plan_workload:
            out[p.gpu.key] = (p.tokens_per_s, roof_of(p.gpu, r.plan.workload, True))
    return out
