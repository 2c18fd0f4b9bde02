"""Search: every GPU type per role x TP x split within limits, the (days, cost) Pareto
front, and the best plan for each objective.

Per-GPU rates depend only on GPU type, role, TP and the workload, so they are computed
once per combination (`rates.rates`); every split of counts is then one row of a numpy
array through `pipeline.flow`. The plans returned are projected again with `project()`,
so the figures a user sees are the projection's own.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

import numpy as np

from ..basics.errors import PlanError
from ..core.cost import Price, Prices, prices
from ..core.economics import RolePrices, billed, economics
from ..core.projection import Projection, link_scaled, link_share, project
from ..core.rates import Rates, rates
from ..core.resolve import Resolved, resolve
from ..core.scenarios import LOW, memory_band
from ..inputs.catalog import Catalog
from ..inputs.plan import Plan
from ..physics.memory import drafter_memory, target_memory
from ..physics.pipeline import PipelineInputs, flow, pipeline_inputs
from ..physics.work import drafter_work

# Bounds that keep one search within a few seconds (documented in the CLI help).
MAX_SEARCH_GPUS = 512
# Where "meets the deadline" and "within the budget" are judged: at the pessimistic end
# of the rate range (the slow end: the most days and the most cost) or at the central
# estimate. The pessimistic end is the default: a plan shown as meeting a deadline should
# meet it unless the rates turn out below their range.
At = Literal["pessimistic", "central"]
AT_CHOICES: tuple[str, ...] = get_args(At)
# Stated with every result: how a winner is picked among equal figures. Figures are
# compared exactly (no tolerance), so a plan a cent cheaper is cheaper.
TIE_RULE = (
    "figures compared exactly, no tolerance; among equally cheap plans the faster "
    "wins, among equally fast plans the cheaper, then the one with fewer GPUs"
)


@dataclass(frozen=True, slots=True)
class Space:
    """What the search may choose."""

    target_gpus: tuple[str, ...]
    drafter_gpus: tuple[str, ...]
    max_gpus: int = 64
    max_nodes: int | None = None
    mixed: bool = False  # the two roles may use different GPU types
    one_node: bool = False  # the pipeline needs both roles on one node


@dataclass(frozen=True, slots=True)
class Constraints:
    deadline_days: float | None = None
    budget: float | None = None  # in the plan's cost unit
    at: At = "pessimistic"  # which end of the range both are judged at

    def __post_init__(self) -> None:
        if self.at not in AT_CHOICES:
            raise PlanError(f"at {self.at!r}: use one of {', '.join(AT_CHOICES)}", "search.at")

    def describe(self) -> str:
        """'at the pessimistic end' / 'at the central estimate'."""
        return "at the pessimistic end" if self.at == "pessimistic" else "at the central estimate"

    def to_json(self) -> dict[str, Any]:
        return {
            "deadline_days": self.deadline_days,
            "budget": self.budget,
            "at": self.at,
            "tie_rule": TIE_RULE,
        }


@dataclass(frozen=True, slots=True)
class Candidate:
    plan: Plan
    projection: Projection
    pessimistic_days: float  # at the low end of the rates (the projection's range)
    pessimistic_cost: float  # the cost at pessimistic_days
    meets_deadline_pessimistic: bool | None  # None without a deadline
    within_budget_pessimistic: bool | None  # None without a budget

    @property
    def days(self) -> float:
        return float(self.projection.days or math.inf)

    @property
    def cost(self) -> float:
        return float(self.projection.total_cost or math.inf)

    def judged(self, at: At) -> tuple[float, float]:
        """The (days, cost) the constraints are judged on at that end."""
        if at == "pessimistic":
            return self.pessimistic_days, self.pessimistic_cost
        return self.days, self.cost


@dataclass(frozen=True, slots=True)
class Result:
    evaluated: int  # configurations evaluated
    feasible: int  # that fit in memory and meet every constraint
    front: tuple[Candidate, ...]  # Pareto front of (days, cost), fastest first
    cheapest_within_deadline: Candidate | None
    fastest_within_budget: Candidate | None
    most_tokens_per_cost: Candidate | None
    cost_unit: str
    why_none: str | None = None  # what stopped every configuration, when none is left
    rejected: dict[str, int] = field(default_factory=dict)
    constraints: Constraints = Constraints()
    prices: Prices | None = None  # the searched GPU types' prices
    # The searched GPU types whose price is not the plan's own (catalog, offer).
    borrowed_prices: tuple[Price, ...] = ()

    def to_json(self) -> dict[str, Any]:
        at = self.constraints.at

        def one(c: Candidate | None) -> dict[str, Any] | None:
            if c is None:
                return None
            from ..inputs.plan import plan_to_dict

            days, cost = c.judged(at)
            return {
                "plan": plan_to_dict(c.plan),
                "projection": c.projection.to_json(),
                "pessimistic_days": c.pessimistic_days,
                "pessimistic_cost": c.pessimistic_cost,
                "meets_deadline_pessimistic": c.meets_deadline_pessimistic,
                "within_budget_pessimistic": c.within_budget_pessimistic,
                "judged_days": days,
                "judged_cost": cost,
            }

        return {
            "evaluated": self.evaluated,
            "feasible": self.feasible,
            "cost_unit": self.cost_unit,
            "why_none": self.why_none,
            "rejected": self.rejected,
            "constraints": self.constraints.to_json(),
            "prices_not_from_plan": [p.to_json() for p in self.borrowed_prices],
            "front": [one(c) for c in self.front],
            "cheapest_within_deadline": one(self.cheapest_within_deadline),
            "fastest_within_budget": one(self.fastest_within_budget),
            "most_tokens_per_cost": one(self.most_tokens_per_cost),
        }


def _variant(plan: Plan, t_gpu: str, d_gpu: str, tp: int, targets: int, drafters: int) -> Plan:
    return plan.model_copy(
        update={
            "target": plan.target.model_copy(update={"gpu": t_gpu, "tp": tp, "count": targets}),
            "drafter": plan.drafter.model_copy(update={"gpu": d_gpu, "count": drafters}),
        }
    )


def _splits(max_gpus: int, tp: int) -> tuple[np.ndarray, np.ndarray]:
    """Every (targets, drafters) with whole TP replicas, one or more of each, within max."""
    replicas = np.arange(1, max_gpus // tp + 1)
    targets = np.repeat(replicas * tp, max_gpus)
    drafters = np.tile(np.arange(1, max_gpus + 1), replicas.size)
    keep = targets + drafters <= max_gpus
    return targets[keep], drafters[keep]


@dataclass(frozen=True, slots=True)
class _Block:
    """All splits of one (target GPU, drafter GPU, tp) and their figures."""

    t_gpu: str
    d_gpu: str
    tp: int
    targets: np.ndarray
    drafters: np.ndarray
    days: np.ndarray
    cost: np.ndarray
    slow_days: np.ndarray  # at the low end of both roles' rates
    slow_cost: np.ndarray  # the cost at slow_days
    fits: np.ndarray
    nodes: np.ndarray


@dataclass(frozen=True, slots=True)
class _Shared:
    """What every block of one search shares: the resolved plan, prices, per-GPU rates."""

    resolved: Resolved
    prices: Prices
    rates: dict[str, Rates]  # by GPU type: both roles' rates on that type


def _shared(plan: Plan, catalog: Catalog, keys: tuple[str, ...]) -> _Shared:
    r = resolve(plan, catalog)
    view = prices(plan, dict(catalog.gpus), keys, catalog.offers)
    by_gpu = {k: rates(r, catalog, catalog.gpus[k], catalog.gpus[k]) for k in keys}
    return _Shared(r, view, by_gpu)


def _block(
    plan: Plan, catalog: Catalog, shared: _Shared, t_key: str, d_key: str, tp: int, space: Space
) -> _Block | None:
    view = shared.prices
    p_t, p_d = view.per_hour(t_key), view.per_hour(d_key)
    if p_t is None or p_d is None:
        return None
    r = shared.resolved
    t_gpu, d_gpu = catalog.gpus[t_key], catalog.gpus[d_key]
    t_rate, d_rate = shared.rates[t_key].target, shared.rates[d_key].drafter
    tw = shared.rates[t_key].target_work
    w = plan.workload
    targets, drafters = _splits(space.max_gpus, tp)

    def inputs(
        target_tokens_per_s: float,
        drafter_tokens_per_s: float,
        shares: tuple[float, float] = (1.0, 1.0),
    ) -> PipelineInputs:
        return pipeline_inputs(
            link_scaled(t_gpu, shares[0]),
            link_scaled(d_gpu, shares[1]),
            tp,
            target_tokens_per_s,
            drafter_tokens_per_s,
            hidden=r.model.hidden,
            layers_run=tw.layers_run,
            trainable_params=r.shape.trainable_params,
            batch_size=plan.drafter.batch_size,
            sample_tokens=float(w.avg_sample_tokens),
            hidden_state_bytes_per_token=tw.hidden_state_bytes_per_token,
            transport=w.transport,
        )

    central = flow(inputs(t_rate.tokens_per_s, d_rate.tokens_per_s), targets, drafters)
    # Pessimistic: the worst scenario of each split, which is the corner of both roles'
    # lowest rates and the slowest links (the pipeline is monotone in each: projection.py's
    # PlanScenarios), one vectorised call as for the central figures.
    slow_links = (
        link_share(f"link:{t_gpu.link.kind}", LOW),
        link_share(f"link:{d_gpu.link.kind}", LOW),
    )
    slow = flow(
        inputs(t_rate.low_tokens_per_s, d_rate.low_tokens_per_s, slow_links), targets, drafters
    )
    # Days and cost as project() computes them (the same functions, the same order of
    # operations), so that a plan judged within a limit here is within it in its projection.
    billed_t, billed_d = billed(
        targets,
        drafters,
        t_key == d_key,
        view.by_gpu[t_key].unit_gpus,
        view.by_gpu[d_key].unit_gpus,
    )
    role_prices = RolePrices(p_t, p_d, None, None, t_gpu.tdp_w, d_gpu.tdp_w)
    total_tokens = float(w.samples) * w.avg_sample_tokens * w.epochs

    def days_cost(tokens_per_s: Any) -> tuple[np.ndarray, np.ndarray]:
        econ = economics(
            np.asarray(tokens_per_s, float),
            total_tokens,
            targets,
            drafters,
            role_prices,
            billed_t,
            billed_d,
        )
        return np.asarray(econ.days, float), np.asarray(econ.total_cost, float)

    days, cost = days_cost(central.tokens_per_s)
    slow_days, slow_cost = days_cost(slow.tokens_per_s)
    # Memory: the target's does not depend on counts; the drafter's optimizer state is
    # sharded over the drafters, so enough of them make it fit.
    t_mem = target_memory(r.model, tp, w.max_length, len(r.layer_ids), t_gpu.memory_gb)
    one = drafter_memory(
        r.shape,
        drafter_work(
            r.shape, w.num_anchors, float(w.avg_sample_tokens), plan.drafter.batch_size, 1
        ),
        float(w.max_length),
        plan.drafter.batch_size,
        1,
        d_gpu.memory_gb,
    )
    state = dict(one.items_gb).get("optimizer state", 0.0)
    fixed = one.needed_gb - state
    # Judged at the pessimistic end of the memory estimate, as the projection's `fits`.
    t_mem = replace(t_mem, band=memory_band("target"))
    drafter_fits = (fixed + state / drafters) * memory_band("drafter")[1] <= d_gpu.memory_gb
    fits = drafter_fits & t_mem.fits
    nodes = np.broadcast_to(np.asarray(central.nodes), targets.shape)
    return _Block(
        t_key, d_key, tp, targets, drafters, days, cost, slow_days, slow_cost, fits, nodes
    )


def _pareto(days: np.ndarray, cost: np.ndarray, gpus: np.ndarray) -> np.ndarray:
    """Indices of the points no other point beats on both days and cost, fastest first:
    sorted by days, then cost, then GPUs, a point stays when it is cheaper than every one
    before it. Exact comparisons (TIE_RULE): of equal (days, cost) the fewest GPUs stays."""
    order = np.lexsort((gpus, cost, days))
    sorted_cost = cost[order]
    cheapest_before = np.concatenate(([np.inf], np.minimum.accumulate(sorted_cost)[:-1]))
    return order[sorted_cost < cheapest_before]


@dataclass(frozen=True, slots=True)
class Sweep:
    """Every configuration of one plan and search space with its central and pessimistic
    days, cost, memory fit and nodes: what constraints are applied to. Ranking a sweep
    again for other constraints costs no second sweep (the app re-ranks as you type)."""

    plan: Plan
    catalog: Catalog
    space: Space
    blocks: tuple[_Block, ...]
    cost_unit: str
    complete: bool  # False when cancelled part way

    @property
    def evaluated(self) -> int:
        return sum(b.targets.size for b in self.blocks)


def sweep(
    plan: Plan, catalog: Catalog, space: Space, progress: Callable[[float], bool] | None = None
) -> Sweep:
    """Every GPU type per role x TP x split of the space. `progress(share_done)` may
    return False to cancel (the sweep is then incomplete)."""
    if space.max_gpus > MAX_SEARCH_GPUS or space.max_gpus < 2:
        raise PlanError(
            f"--max-gpus {space.max_gpus}: a search covers 2 to {MAX_SEARCH_GPUS} GPUs",
            "search.max_gpus",
        )
    pairs = [(t, d) for t in space.target_gpus for d in space.drafter_gpus if space.mixed or t == d]
    shared = _shared(plan, catalog, tuple(dict.fromkeys(space.target_gpus + space.drafter_gpus)))
    blocks: list[_Block] = []
    complete = True
    for i, (t_key, d_key) in enumerate(pairs):
        node = catalog.gpus[t_key].gpus_per_node
        for tp in (n for n in range(1, node + 1) if node % n == 0 and n <= space.max_gpus - 1):
            block = _block(plan, catalog, shared, t_key, d_key, tp, space)
            if block is not None:
                blocks.append(block)
        if progress is not None and progress((i + 1) / len(pairs)) is False:
            complete = False
            break
    return Sweep(plan, catalog, space, tuple(blocks), shared.prices.unit, complete)


def search(
    plan: Plan,
    catalog: Catalog,
    space: Space,
    constraints: Constraints,
    progress: Callable[[float], bool] | None = None,
) -> Result:
    """The front and the winners. `progress(share_done)` may return False to cancel."""
    return rank(sweep(plan, catalog, space, progress), constraints)


def rank(swept: Sweep, constraints: Constraints) -> Result:
    """The Pareto front and the winners of a sweep under the constraints. The deadline and
    the budget are judged once, at `constraints.at`, and that one feasible set gives both
    the front and the winners: the fastest is the front's first plan, the cheapest its
    last (TIE_RULE)."""
    plan, catalog, space = swept.plan, swept.catalog, swept.space
    blocks = list(swept.blocks)
    pessimistic = constraints.at == "pessimistic"
    rejected: dict[str, int] = {}
    oks = []
    for b in blocks:
        ok = b.fits.copy()
        rejected["memory"] = rejected.get("memory", 0) + int(b.targets.size - b.fits.sum())
        days_at, cost_at = (b.slow_days, b.slow_cost) if pessimistic else (b.days, b.cost)
        for name, limit in (
            ("nodes", (b.nodes <= space.max_nodes) if space.max_nodes else None),
            ("one node", (b.nodes == 1) if space.one_node else None),
            (
                "deadline",
                (days_at <= constraints.deadline_days)
                if constraints.deadline_days is not None
                else None,
            ),
            ("budget", (cost_at <= constraints.budget) if constraints.budget is not None else None),
        ):
            if limit is not None:
                rejected[name] = rejected.get(name, 0) + int((ok & ~limit).sum())
                ok &= limit
        oks.append(ok)
    evaluated = swept.evaluated
    keys = tuple(dict.fromkeys(space.target_gpus + space.drafter_gpus))
    view = prices(plan, dict(catalog.gpus), keys, catalog.offers)
    borrowed = view.borrowed(keys)
    if not blocks:
        return Result(
            evaluated,
            0,
            (),
            None,
            None,
            None,
            swept.cost_unit,
            why_none="no GPU type with a price to search (set cost.ratio or "
            "cost.usd_per_gpu_hour for the types to include)",
            rejected=rejected,
            constraints=constraints,
            prices=view,
            borrowed_prices=borrowed,
        )

    def kept(column: Callable[[_Block], np.ndarray]) -> np.ndarray:
        return np.concatenate([column(b)[ok] for b, ok in zip(blocks, oks, strict=True)])

    days, cost = kept(lambda b: b.days), kept(lambda b: b.cost)
    if days.size == 0:
        worst = max(rejected, key=lambda k: rejected[k]) if rejected else "limits"
        return Result(
            evaluated,
            0,
            (),
            None,
            None,
            None,
            swept.cost_unit,
            why_none=f"no configuration meets the constraints "
            f"{constraints.describe()}; most were stopped by {worst} "
            f"({rejected.get(worst, 0):,} of {evaluated:,})",
            rejected=rejected,
            constraints=constraints,
            prices=view,
            borrowed_prices=borrowed,
        )
    slow_days, slow_cost = kept(lambda b: b.slow_days), kept(lambda b: b.slow_cost)
    gpus = kept(lambda b: b.targets + b.drafters)
    block_of = np.concatenate([np.full(int(ok.sum()), bi) for bi, ok in enumerate(oks)])
    row_of = np.concatenate([np.flatnonzero(ok) for ok in oks])

    def candidate(k: int) -> Candidate:
        b, j = blocks[int(block_of[k])], int(row_of[k])
        chosen = _variant(plan, b.t_gpu, b.d_gpu, b.tp, int(b.targets[j]), int(b.drafters[j]))
        p = project(chosen, catalog)
        # The projection's own pessimistic figures (the sweep's equal them; tested).
        slow_d = float(p.ranges.days[1]) if p.ranges else float(slow_days[k])
        slow_c = (
            float(p.ranges.total_cost[1])
            if p.ranges and p.ranges.total_cost
            else float(slow_cost[k])
        )
        deadline, budget = constraints.deadline_days, constraints.budget
        return Candidate(
            chosen,
            p,
            slow_d,
            slow_c,
            None if deadline is None else slow_d <= deadline,
            None if budget is None else slow_c <= budget,
        )

    front = tuple(candidate(int(k)) for k in _pareto(days, cost, gpus))
    # Every plan trains the same tokens, so the most tokens per unit of cost is the
    # cheapest plan of the feasible set.
    cheapest, fastest = front[-1], front[0]
    return Result(
        evaluated,
        int(days.size),
        front,
        cheapest if constraints.deadline_days is not None else None,
        fastest if constraints.budget is not None else None,
        cheapest,
        swept.cost_unit,
        rejected=rejected,
        constraints=constraints,
        prices=view,
        borrowed_prices=borrowed,
    )


def default_space(
    plan: Plan, catalog: Catalog, gpus: tuple[str, ...] | None = None, **limits: Any
) -> Space:
    """All GPU types with a price (or the ones given) for both roles."""
    if gpus is None:
        view = prices(plan, dict(catalog.gpus), tuple(catalog.gpus))
        gpus = tuple(k for k in catalog.gpus if view.per_hour(k) is not None)
    for key in gpus:
        catalog.gpu(key, "search.gpus")
    return Space(target_gpus=gpus, drafter_gpus=gpus, **limits)
