"""A projection against a baseline: speed, cost, days, their ranges, the price at which
the plan breaks even, and the hardware ratios behind them.

Ranges are joint: both plans are evaluated under the same scenario (scenarios.py) and a
ratio's range is its spread over scenarios, each end named by the scenario giving it. A
dimension only one plan depends on moves that plan's figure one way (monotone), so it
sits at the end that widens the ratio; the dimensions both depend on, and every reading,
are enumerated over their values."""

from __future__ import annotations

import itertools
import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any

from ..core import figures
from ..core.projection import PlanScenarios, Projection, break_even
from ..core.scenarios import HIGH, LOW, Dim, Scenario, label

# What a plan that does not fit shows for its bottleneck in the comparison views (the
# reason is its Projection.does_not_fit).
UNFIT = "does not fit"

# A ratio whose scenarios agree to this relative width has no spread: the plans share
# every uncertain input it depends on.
NO_SPREAD = 1e-9


@dataclass(frozen=True, slots=True)
class Comparison:
    speedup: float | None  # baseline job days / these (each plan's whole job)
    cost_ratio: float | None  # this job cost / the baseline's
    days_delta: float | None  # these job days - the baseline's
    speedup_range: tuple[float, float] | None
    cost_ratio_range: tuple[float, float] | None
    break_even_price_ratio: dict[str, float] | None  # per role; {} when no price breaks even
    why: tuple[str, ...]
    # The scenario of each range end, in words (low end first); None without a spread.
    speedup_range_scenarios: tuple[str, str] | None = None
    cost_ratio_range_scenarios: tuple[str, str] | None = None
    break_even_price_ratio_range: dict[str, tuple[float, float]] | None = None
    break_even_range_scenarios: tuple[str, str] | None = None
    scenarios_evaluated: int = 0

    def to_json(self) -> dict[str, Any]:
        def pair(x: tuple[Any, Any] | None) -> list[Any] | None:
            return list(x) if x else None

        return {
            **figures.json_figures(self, "comparison"),
            "speedup_range": list(self.speedup_range) if self.speedup_range else None,
            "cost_ratio_range": (list(self.cost_ratio_range) if self.cost_ratio_range else None),
            "why": list(self.why),
            "speedup_range_scenarios": pair(self.speedup_range_scenarios),
            "cost_ratio_range_scenarios": pair(self.cost_ratio_range_scenarios),
            "break_even_price_ratio_range": (
                {k: list(v) for k, v in self.break_even_price_ratio_range.items()}
                if self.break_even_price_ratio_range is not None
                else None
            ),
            "break_even_range_scenarios": pair(self.break_even_range_scenarios),
            "scenarios_evaluated": self.scenarios_evaluated,
        }


@dataclass(frozen=True, slots=True)
class Cell:
    """One figure of one plan in a comparison: its value and (low, high) when it has one."""

    figure: figures.Figure
    value: Any
    range: tuple[float, float] | None


@dataclass(frozen=True, slots=True)
class Compared:
    """One plan against the baseline as the comparison views show it (the CLI's compare
    table, a row per plan; the app's Comparison view, a column per plan): the registry's
    comparison figures of the projection, then of the comparison, in registry order."""

    projection: Projection
    comparison: Comparison
    cells: tuple[Cell, ...]


def shown() -> tuple[figures.Figure, ...]:
    """The comparison views' figures, the plan's and its ratios, in registry order (a new
    figure comes last, so the rows before it keep their place)."""
    return tuple(f for f in figures.FIGURES if figures.View.COMPARE in f.views)


def compared(new: Projection, base: Projection) -> Compared:
    c = compare(new, base)
    # Each plan's job, as compare() judges it: its days and cost are the whole job's
    # (regeneration when on, then the run of its own mode); an offline plan's rate, cost
    # per epoch and bound are its offline run's (capture, then training).
    run: dict[str, tuple[Any, tuple[float, float] | None]] = {}
    job = new.job
    if job.stored is not None:
        cost = job.run_cost
        run = {
            figures.TOKENS_PER_S.key: (job.tokens_per_s, None),
            figures.COST_PER_EPOCH.key: (None if cost is None else cost / new.epochs, None),
            figures.BOTTLENECK.key: (job.bound, None),
        }
    if job.phased:
        run[figures.DAYS.key] = (new.job_days, new.job_days_range)
        run[figures.TOTAL_COST.key] = (new.job_cost, new.job_cost_range)

    def cell(f: figures.Figure) -> Cell:
        if new.does_not_fit is not None and f.of != "comparison":
            # As `check` and the launch header: a plan that cannot run has no figures,
            # whatever does not fit (memory has none to give; storage would).
            return Cell(f, UNFIT if f.key == figures.BOTTLENECK.key else None, None)
        if f.of == "comparison":
            return Cell(f, f.read(c), getattr(c, f"{f.key}_range") if f.ranged else None)
        if f.of == "acceptance":
            return Cell(f, f.read(new), f.read_range(new))
        if f.key in run:
            return Cell(f, *run[f.key])
        ranges = new.ranges
        return Cell(f, f.read(new), getattr(ranges, f.key) if f.ranged and ranges else None)

    return Compared(new, c, tuple(cell(f) for f in shown()))


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _cost(p: Projection, unit: str) -> float | None:
    """Total cost of the plan's whole job in the given unit (the plan's unit or USD; an
    offline run is costed in the plan's unit only)."""
    if p.cost_unit == unit:
        return p.job_cost
    if p.job.stored is not None:
        return None
    return p.total.cost_usd if p.total else p.total_cost_usd


def _before_run(p: Projection, unit: str) -> tuple[float, float]:
    """The days and cost (in `unit`) of the phases before the run (regeneration), which
    no scenario moves: a plan's job under a scenario is its run's under it plus these."""
    days = (p.job_days or 0.0) - (p.run_days or 0.0)
    run = p.run_cost if p.cost_unit == unit else p.total_cost_usd
    job = _cost(p, unit)
    return days, (job - run if job is not None and run is not None else 0.0)


def compare(new: Projection, base: Projection) -> Comparison:
    """Each plan on its whole job (regeneration when on, then the run of its own mode: an
    offline plan's capture and training), so plans in different modes, with and without
    regeneration, compare on the same figures. A plan that does not fit (its memory, its
    storage, its store's host memory: Projection.does_not_fit) has no job to compare: no
    ratio, and `why` says which plan does not fit and why."""
    unfit = tuple(
        f"{who} does not fit: {reason}"
        for who, p in (("this plan", new), ("the baseline", base))
        if (reason := p.does_not_fit) is not None
    )
    if unfit:
        return Comparison(None, None, None, None, None, None, unfit)
    new_days, base_days = new.job_days, base.job_days
    speedup = _ratio(base_days, new_days)
    unit = new.cost_unit if new.cost_unit == base.cost_unit else "USD"
    new_cost, base_cost = _cost(new, unit), _cost(base, unit)
    cost_ratio = _ratio(new_cost, base_cost)
    days_delta = (new_days - base_days) if new_days is not None and base_days is not None else None
    # The price break-even solves the online pipeline's cost for a price; an offline run
    # bills its phases apart (its break-even is in epochs: the offline column).
    online = new.job.stored is None and base.job.stored is None
    spans = _Spans()
    ns, bs = new.scenarios, base.scenarios
    if (
        new.ranges
        and base.ranges
        and ns is not None
        and bs is not None
        and new_days is not None
        and base_days is not None
    ):
        spans = _spans(new, base, ns, bs, unit, speedup, cost_ratio, online)
    return Comparison(
        speedup=speedup,
        cost_ratio=cost_ratio,
        days_delta=days_delta,
        speedup_range=spans.speedup_range,
        cost_ratio_range=spans.cost_range,
        break_even_price_ratio=break_even(new, base) if online else None,
        why=_why(new, base),
        speedup_range_scenarios=spans.speedup_at,
        cost_ratio_range_scenarios=spans.cost_at,
        break_even_price_ratio_range=spans.even_range,
        break_even_range_scenarios=spans.even_at,
        scenarios_evaluated=spans.evaluated,
    )


@dataclass(frozen=True, slots=True)
class _Spans:
    """A comparison's ranges over the joint scenarios, each with the scenarios of its ends
    (none when either plan has no ranges)."""

    speedup_range: tuple[float, float] | None = None
    speedup_at: tuple[str, str] | None = None
    cost_range: tuple[float, float] | None = None
    cost_at: tuple[str, str] | None = None
    even_range: dict[str, tuple[float, float]] | None = None
    even_at: tuple[str, str] | None = None
    evaluated: int = 0


def _spans(
    new: Projection,
    base: Projection,
    ns: PlanScenarios,
    bs: PlanScenarios,
    unit: str,
    speedup: float | None,
    cost_ratio: float | None,
    online: bool,
) -> _Spans:
    """The speedup's, cost ratio's and break-even's spread over the scenarios both plans
    are evaluated under (joint_scenarios)."""
    dims = {**bs.dims, **ns.dims}
    scenarios = joint_scenarios(ns, bs)
    (n_extra, n_extra_cost), (b_extra, b_extra_cost) = (
        _before_run(new, unit),
        _before_run(base, unit),
    )

    def speed(s: Scenario) -> float:
        return (bs.run_days(s) + b_extra) / (ns.run_days(s) + n_extra)

    speedup_range, speedup_at = _spread(speedup, scenarios, speed, dims, ns, bs)
    cost_range = cost_at = None
    new_cost, base_cost = _cost(new, unit), _cost(base, unit)
    if new_cost is not None and base_cost is not None and cost_ratio is not None:
        n_cost = _cost_at(new, ns, new_cost, n_extra_cost)
        b_cost = _cost_at(base, bs, base_cost, b_extra_cost)

        def cost(s: Scenario) -> float:
            return float(n_cost(s) / b_cost(s))

        cost_range, cost_at = _spread(cost_ratio, scenarios, cost, dims, ns, bs)
    even_range, even_at = _even_spread(new, base, ns, bs, scenarios, dims, online)
    return _Spans(
        speedup_range, speedup_at, cost_range, cost_at, even_range, even_at, len(scenarios)
    )


def _cost_at(p: Projection, ps: PlanScenarios, central: float, extra: float) -> Any:
    """The plan's job cost under s: its run's (online in proportion to its days; offline
    the offline run's own, its phases billed apart) plus the phases before it."""
    if p.job.stored is not None:
        return lambda s: (ps.offline_run(s)[1] or math.inf) + extra
    days = p.days or math.inf
    return lambda s: (central - extra) * ps.days(s) / days + extra


def _even_spread(
    new: Projection,
    base: Projection,
    ns: PlanScenarios,
    bs: PlanScenarios,
    scenarios: list[dict[str, str]],
    dims: dict[str, Dim],
    online: bool,
) -> tuple[dict[str, tuple[float, float]] | None, tuple[str, str] | None]:
    """Break-even under each scenario: the price at which the plan costs what the baseline
    costs in that scenario. Roles with a price in every scenario only."""
    even_range: dict[str, tuple[float, float]] | None = None
    even_at: tuple[str, str] | None = None
    central_even = break_even(new, base) if online else None

    def even_of(s: Scenario) -> dict[str, float]:
        return break_even(new, base, ns.days(s), bs.days(s)) or {}

    evens = [even_of(s) for s in scenarios]
    if central_even:
        even_range = {}
        for role, central in central_even.items():
            if not all(role in e for e in evens):
                continue

            def even(s: Scenario, k: str = role) -> float:
                return even_of(s)[k]

            span, at = _spread(central, scenarios, even, dims, ns, bs)
            if span is not None:
                even_range[role] = span
                even_at = even_at or at
    return even_range, even_at


def _why(new: Projection, base: Projection) -> tuple[str, ...]:
    """What differs between the plans, in words: GPUs (their hardware ratios and prices),
    counts, mode, topology and bottleneck."""
    why: list[str] = []
    for role in ("target", "drafter"):
        a, b = getattr(new, role), getattr(base, role)
        if a.gpu == b.gpu:
            continue
        ga, gb = new.prices, base.prices
        sa, sb = a.spec, b.spec
        why.append(
            f"{role} GPU {a.gpu_name} vs {b.gpu_name}: dense bf16 "
            f"{sa.bf16_tflops:,.0f} vs {sb.bf16_tflops:,.0f} TFLOPS "
            f"({sa.bf16_tflops / sb.bf16_tflops:.2f}x), memory bandwidth "
            f"{sa.mem_bw_tb_s:g} vs {sb.mem_bw_tb_s:g} TB/s "
            f"({sa.mem_bw_tb_s / sb.mem_bw_tb_s:.2f}x); efficiency "
            f"{a.efficiency * 100:.1f} % vs {b.efficiency * 100:.1f} %; per-GPU rate "
            f"{a.per_gpu_tokens_per_s / b.per_gpu_tokens_per_s:.2f}x"
        )
        pa, pb = ga.by_gpu[a.gpu].ratio, gb.by_gpu[b.gpu].ratio
        if pa and pb and ga.reference_gpu == gb.reference_gpu:
            why.append(
                f"{role} price {pa / pb:.2f}x per GPU-hour, so "
                f"{(pa / pb) / (a.per_gpu_tokens_per_s / b.per_gpu_tokens_per_s):.2f}x "
                f"the cost per {role} token"
            )
    for role in ("target", "drafter"):
        a, b = getattr(new, role), getattr(base, role)
        if a.count != b.count:
            why.append(f"{role} GPUs {b.count} -> {a.count}")
    if new.mode != base.mode:
        why.append(f"mode {base.mode} -> {new.mode}")
    if new.topology != base.topology:
        why.append(f"topology {base.topology} -> {new.topology}")
    if new.bottleneck != base.bottleneck:
        why.append(
            f"bottleneck {base.bottleneck or 'none (does not fit)'} -> "
            f"{new.bottleneck or 'none (does not fit)'}"
        )
    return tuple(why)


def joint_scenarios(new: PlanScenarios, base: PlanScenarios) -> list[dict[str, str]]:
    """The scenarios a comparison spans: every value of the dimensions both plans share and
    of every reading, crossed with each plan's own dimensions at the end that widens the
    ratio (one plan slow and the other fast, then the other way round)."""
    dims: dict[str, Dim] = {**base.dims, **new.dims}
    enumerated = [k for k in dims if (k in new.dims and k in base.dims) or k.startswith("reading:")]
    out: list[dict[str, str]] = []
    for new_end, base_end in ((LOW, HIGH), (HIGH, LOW)):
        fixed = {
            **{k: base_end for k in base.dims if k not in enumerated},
            **{k: new_end for k in new.dims if k not in enumerated},
        }
        for values in itertools.product(*(dims[k].values for k in enumerated)):
            s = {**fixed, **dict(zip(enumerated, values, strict=True))}
            if s not in out:
                out.append(s)
    return out


def _spread(
    central: float | None,
    scenarios: list[dict[str, str]],
    value: Callable[[Scenario], float],
    dims: dict[str, Dim],
    new: PlanScenarios,
    base: PlanScenarios,
) -> tuple[tuple[float, float] | None, tuple[str, str] | None]:
    """A ratio's (low, high) over the scenarios and the scenario of each end in words;
    (central, central) and no names when the scenarios agree."""
    if central is None or not scenarios:
        return None, None
    values = [value(s) for s in scenarios]
    lo, hi = min(values), max(values)
    if hi - lo <= NO_SPREAD * max(abs(lo), abs(hi)):
        return (central, central), None

    def named(s: dict[str, str]) -> str:
        base_value = value(s)
        keys = tuple(
            k
            for k in s
            if any(
                abs(value({**s, k: other}) - base_value) > NO_SPREAD * abs(base_value)
                for other in dims[k].values
                if other != s[k]
            )
        )
        # One line per held role: both plans may hold the same drafter at its floor.
        held = list(dict.fromkeys([*new.floors(s), *base.floors(s)]))
        return "; ".join([label(s, dims, keys), *held] if keys or not held else held)

    return (lo, hi), (named(scenarios[values.index(lo)]), named(scenarios[values.index(hi)]))
