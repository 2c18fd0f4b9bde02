"""What moves the answer: the split curve of a plan's GPUs, a tornado of days and cost
as each uncertain input moves across its range, and the acceptance curve (what more
epochs buy). Pure data for the charts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..basics.errors import PlanError
from ..basics.recipe import NUM_ANCHORS
from ..core.acceptance import curve_inputs
from ..core.calibration import bind_to_workload
from ..core.projection import Projection, project
from ..core.scenarios import Scenario
from ..core.stages import run_at
from ..inputs.catalog import Catalog
from ..inputs.plan import Plan
from ..physics.acceptance import speedup_at, tau_at
from ..physics.pipeline import below, splits

SECONDS_PER_DAY = 86_400.0


@dataclass(frozen=True, slots=True)
class SplitCurve:
    """Throughput of every split of the plan's GPUs (one GPU type), by target GPUs."""

    targets: tuple[int, ...]
    tokens_per_s: tuple[float, ...]
    target_tokens_per_s: tuple[float, ...]
    drafter_tokens_per_s: tuple[float, ...]
    link_tokens_per_s: tuple[float, ...]
    current: int  # the plan's own target count
    switch: int | None  # the first target count at which the drafters bind
    # What the lines are, in words: the online pipeline's throughput and capacities, or
    # the offline run's rate over the whole run (every epoch's tokens over capture plus
    # training), its capture rate and its training rate from storage.
    rate_name: str = "throughput"
    target_name: str = "target capacity"
    drafter_name: str = "drafter capacity"
    title: str = "Ktok/s by target GPUs"


def split_curve(p: Projection) -> SplitCurve:
    """Every split of the same GPUs with whole TP replicas, through one pipeline call."""
    plan = p.plan
    if plan.target.gpu != plan.drafter.gpu:
        raise PlanError.said(
            "the split curve moves GPUs between roles, so both roles must use the same GPU type",
            "drafter.gpu",
        )
    sweep = splits(p.inputs, plan.target.count + plan.drafter.count, plan.target.tp)
    if sweep is None:
        raise PlanError.said(
            "the split curve needs room for one target replica and one drafter", "target.count"
        )
    targets, f = sweep
    tokens, target, drafter = f.tokens_per_s, f.target_tokens_per_s, f.drafter_tokens_per_s
    words: dict[str, str] = {}
    if p.job.stored is not None and p.run_inputs is not None:
        # The offline run of each split (run_at, as the projection and search run it):
        # capture at the targets' capacity, then every epoch trained from storage; its
        # rate over the whole run is what its days are.
        o = run_at(p.run_inputs, targets, plan.target.count + plan.drafter.count - targets, f)
        drafter = o.tokens_per_s
        tokens = p.tokens_per_epoch * p.epochs / (np.asarray(o.days, float) * SECONDS_PER_DAY)
        words = {
            "rate_name": "offline run",
            "target_name": "capture rate",
            "drafter_name": "training rate",
            "title": "offline run: Ktok/s over capture and training, by target GPUs",
        }

    def floats(values: object) -> tuple[float, ...]:
        return tuple(float(v) for v in np.broadcast_to(np.asarray(values, float), targets.shape))

    drafter = np.asarray(drafter, float)
    target = np.asarray(target, float)
    binds = np.flatnonzero(below(drafter, target))  # a tie is the targets', as bottleneck()
    return SplitCurve(
        tuple(int(t) for t in targets),
        floats(tokens),
        floats(target),
        floats(drafter),
        floats(f.link_tokens_per_s),
        plan.target.count,
        int(targets[binds[0]]) if binds.size else None,
        **words,
    )


@dataclass(frozen=True, slots=True)
class Bar:
    """One uncertain input moved across its range, the others held."""

    name: str
    low_label: str
    high_label: str
    days: tuple[float, float]  # at the input's low and high end
    cost: tuple[float | None, float | None]
    role: str | None = None  # a role's rate: the projection's range of that role

    @property
    def days_span(self) -> float:
        return abs(self.days[1] - self.days[0])


def _edit(plan: Plan, **sections: dict[str, object]) -> Plan:
    """The plan with a workload edit; its measurements keep the workload they were taken
    on (rescaled by physics), as in the app."""
    doc = bind_to_workload(plan).model_dump()
    for name, fields in sections.items():
        doc[name] = {**doc[name], **fields}
    return Plan.model_validate(doc)


def _scenario_bars(p: Projection) -> list[Bar]:
    """One bar per role's rate: the role's range as the projection gives it (every
    dimension of the rate at once, PlanScenarios.role_span); then one bar per other
    scenario dimension (scenarios.py) across its values, every other at its central
    value. A rate with readings is named by them and by its rate at each end; a rate of
    one dimension by that dimension. What moves nothing here (a link with nothing to
    carry) has no bar."""
    scen, job = p.scenarios, p.job
    if scen is None or job.days is None or job.run_days is None:
        return []
    # The job under a scenario: its run's (the offline run's own, or the pipeline's in
    # proportion to its days) plus the phases before it, which no scenario moves.
    before_days = job.days - job.run_days
    before_cost = None if job.cost is None or job.run_cost is None else job.cost - job.run_cost
    run_days, run_cost = job.run_days, job.run_cost

    def job_at(s: Scenario) -> tuple[float, float | None]:
        if job.stored is not None:
            cost = scen.offline_run(s)[1]
        else:
            cost = None if run_cost is None else run_cost * scen.days(s) / run_days
        plus = None if cost is None or before_cost is None else cost + before_cost
        return scen.run_days(s) + before_days, plus

    bars = []
    for role, model in (("target", scen.target), ("drafter", scen.drafter)):
        slow, fast = scen.role_span(role)
        (slow_days, slow_cost), (fast_days, fast_cost) = job_at(slow), job_at(fast)
        if abs(fast_days - slow_days) <= 1e-9 * slow_days:
            continue
        if model.reading is not None:
            name = f"{role} rate ({slow[model.reading]} .. {fast[model.reading]})"
            low, high = (f"{model.rate(s) / 1e3:,.1f}K" for s in (slow, fast))
        elif len(model.dims) == 1:
            dim = model.dims[0]
            name = dim.chart_name or dim.name
            low, high = dim.brief(slow[dim.key]), dim.brief(fast[dim.key])
        else:
            name = f"{role} rate"
            low, high = (f"{model.rate(s) / 1e3:,.1f}K" for s in (slow, fast))
        bars.append(Bar(name, low, high, (slow_days, fast_days), (slow_cost, fast_cost), role))
    rate_keys = {dim.key for model in (scen.target, scen.drafter) for dim in model.dims}
    for key, dim in scen.dims.items():
        if key in rate_keys:
            continue
        runs = sorted(
            ((job_at({key: value}), value) for value in dim.values),
            key=lambda run: run[0][0],
            reverse=True,
        )  # the slow end first
        ((slow_days, slow_cost), slow_value), ((fast_days, fast_cost), fast_value) = (
            runs[0],
            runs[-1],
        )
        if abs(fast_days - slow_days) <= 1e-9 * slow_days:
            continue
        bars.append(
            Bar(
                dim.chart_name or dim.name,
                dim.brief(slow_value),
                dim.brief(fast_value),
                (slow_days, fast_days),
                (slow_cost, fast_cost),
            )
        )
    return bars


def tornado(p: Projection, catalog: Catalog, price_spread: float = 0.5) -> tuple[Bar, ...]:
    """Days and cost as each uncertain input moves: anchors (the plan's to the recipe's),
    each scenario dimension across its values (a role's readings, a family's efficiency,
    a GPU's software maturity, a link), the price of the plan's GPUs
    (+-price_spread: rate cards differ 2-4x between providers), and the mean sample length
    (+-25 %). Largest effect on days first."""
    job = p.job
    if job.days is None:
        return ()
    plan, w = p.plan, p.plan.workload
    bars: list[Bar] = []

    def run(changed: Plan) -> tuple[float, float | None]:
        q = project(changed, catalog).job
        return (q.days if q.days is not None else float("inf")), q.cost

    if w.num_anchors != NUM_ANCHORS:
        a, b = sorted((w.num_anchors, NUM_ANCHORS))
        low, high = (run(_edit(plan, workload={"num_anchors": n})) for n in (a, b))
        bars.append(Bar("anchors", f"{a}", f"{b}", (low[0], high[0]), (low[1], high[1])))
    bars += _scenario_bars(p)
    if job.cost is not None:
        bars.append(
            Bar(
                "price per GPU-hour",
                f"-{price_spread:.0%}",
                f"+{price_spread:.0%}",
                (job.days, job.days),
                (job.cost * (1 - price_spread), job.cost * (1 + price_spread)),
            )
        )
    lengths = [max(1, round(w.avg_sample_tokens * f)) for f in (0.75, 1.25)]
    lengths = [min(n, w.max_length) for n in lengths]
    if lengths[0] != lengths[1]:
        low, high = (run(_edit(plan, workload={"avg_sample_tokens": n})) for n in lengths)
        bars.append(
            Bar(
                "mean sample length",
                f"{lengths[0]:,}",
                f"{lengths[1]:,}",
                (low[0], high[0]),
                (low[1], high[1]),
            )
        )

    def cost_span(b: Bar) -> float:
        return abs((b.cost[1] or 0.0) - (b.cost[0] or 0.0))

    return tuple(sorted(bars, key=lambda b: (-b.days_span, -cost_span(b))))


# The acceptance curve's points (epochs from 0 to its end, evenly): finer than any chart's
# columns, so a line between them reads as the curve.
ACCEPTANCE_POINTS = 121


@dataclass(frozen=True, slots=True)
class AcceptanceCurve:
    """The drafter's tau against epochs of the plan's samples (the plan's training budget
    and beyond), with its range, from the one acceptance model (physics/acceptance.py);
    the serving speedup at each tau, and the plan's point."""

    epochs: tuple[float, ...]
    tau: tuple[float, ...]
    tau_low: tuple[float, ...]
    tau_high: tuple[float, ...]
    # The central serving speedup at each tau of `speedup_taus` (the chart's right axis),
    # on the plan's serving engine and batch regime.
    speedup_taus: tuple[float, ...]
    speedups: tuple[float, ...]
    current_epochs: int
    current_tau: float
    cost_per_epoch: float | None  # the plan's cost unit
    cost_unit: str


def acceptance_curve(p: Projection) -> AcceptanceCurve:
    """Tau from no training to twice the plan's epochs (4 more at least), at the plan's
    samples per epoch: the curve the projection's own tau is a point of."""
    a = p.acceptance
    per_epoch = a.sample_passes / p.epochs
    end = max(2 * p.epochs, p.epochs + 4)
    epochs = np.linspace(0.0, float(end), ACCEPTANCE_POINTS)
    central, low, high = tau_at(curve_inputs(p.resolved), epochs * per_epoch)
    taus = np.linspace(1.0, float(np.max(high)), ACCEPTANCE_POINTS)
    speedups = speedup_at(taus, a.engine, a.regime, p.plan.serving.engine_factor)[0]
    return AcceptanceCurve(
        tuple(map(float, epochs)),
        tuple(map(float, central)),
        tuple(map(float, low)),
        tuple(map(float, high)),
        tuple(map(float, taus)),
        tuple(map(float, speedups)),
        p.epochs,
        a.tau,
        p.cost_per_epoch,
        p.cost_unit,
    )
