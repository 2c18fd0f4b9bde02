"""What moves the answer: the split curve of a plan's GPUs and a tornado of days and cost
as each uncertain input moves across its range. Pure data for the charts."""

from __future__ import annotations

from dataclasses import dataclass

import numpy as np

from ..basics.errors import PlanError
from ..basics.recipe import NUM_ANCHORS
from ..core.calibration import bind_to_workload
from ..core.projection import Projection, project
from ..inputs.catalog import Catalog
from ..inputs.plan import Plan
from ..physics.pipeline import below, splits


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

    def floats(values: object) -> tuple[float, ...]:
        return tuple(float(v) for v in np.broadcast_to(np.asarray(values, float), targets.shape))

    drafter = np.asarray(f.drafter_tokens_per_s, float)
    target = np.asarray(f.target_tokens_per_s, float)
    binds = np.flatnonzero(below(drafter, target))  # a tie is the targets', as bottleneck()
    return SplitCurve(
        tuple(int(t) for t in targets),
        floats(f.tokens_per_s),
        floats(target),
        floats(drafter),
        floats(f.link_tokens_per_s),
        plan.target.count,
        int(targets[binds[0]]) if binds.size else None,
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
    scen = p.scenarios
    if scen is None or p.days is None:
        return []
    total_cost, days = p.total_cost, p.days

    def cost(at: float) -> float | None:
        return None if total_cost is None else total_cost * at / days

    bars = []
    for role, model in (("target", scen.target), ("drafter", scen.drafter)):
        slow, fast = scen.role_span(role)
        slow_days, fast_days = scen.days(slow), scen.days(fast)
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
        bars.append(
            Bar(name, low, high, (slow_days, fast_days), (cost(slow_days), cost(fast_days)), role)
        )
    rate_keys = {dim.key for model in (scen.target, scen.drafter) for dim in model.dims}
    for key, dim in scen.dims.items():
        if key in rate_keys:
            continue
        runs = sorted(
            ((scen.days({key: value}), value) for value in dim.values),
            key=lambda run: run[0],
            reverse=True,
        )  # the slow end first
        (slow_days, slow_value), (fast_days, fast_value) = runs[0], runs[-1]
        if abs(fast_days - slow_days) <= 1e-9 * slow_days:
            continue
        bars.append(
            Bar(
                dim.chart_name or dim.name,
                dim.brief(slow_value),
                dim.brief(fast_value),
                (slow_days, fast_days),
                (cost(slow_days), cost(fast_days)),
            )
        )
    return bars


def tornado(p: Projection, catalog: Catalog, price_spread: float = 0.5) -> tuple[Bar, ...]:
    """Days and cost as each uncertain input moves: anchors (the plan's to the recipe's),
    each scenario dimension across its values (a role's readings, a family's efficiency,
    a GPU's software maturity, a link), the price of the plan's GPUs
    (+-price_spread: rate cards differ 2-4x between providers), and the mean sample length
    (+-25 %). Largest effect on days first."""
    if p.days is None:
        return ()
    plan, w = p.plan, p.plan.workload
    bars: list[Bar] = []

    def run(changed: Plan) -> tuple[float, float | None]:
        q = project(changed, catalog)
        return (q.days if q.days is not None else float("inf")), q.total_cost

    if w.num_anchors != NUM_ANCHORS:
        a, b = sorted((w.num_anchors, NUM_ANCHORS))
        low, high = (run(_edit(plan, workload={"num_anchors": n})) for n in (a, b))
        bars.append(Bar("anchors", f"{a}", f"{b}", (low[0], high[0]), (low[1], high[1])))
    bars += _scenario_bars(p)
    if p.total_cost is not None:
        bars.append(
            Bar(
                "price per GPU-hour",
                f"-{price_spread:.0%}",
                f"+{price_spread:.0%}",
                (p.days, p.days),
                (p.total_cost * (1 - price_spread), p.total_cost * (1 + price_spread)),
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
