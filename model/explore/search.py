"""Search: every GPU type per role x TP x split within limits, the (days, cost) Pareto
front, and the best plan for each objective.

Per-GPU rates depend only on GPU type, role, TP and the workload, so they are computed
once per combination (`rates.rates`); every split of counts is then one row of a numpy
array through `pipeline.flow`. The plans returned are projected again with `project()`,
so the figures a user sees are the projection's own.

Pruning (issue 23). A search covers every split, but evaluates only the splits that can be
on a front: `_band` gives, for an online block of two different GPU types, the splits
around balance (`_band_one_type` for one type), and every other split is proved dominated
(their docstrings have the argument). A proved-dominated split has, next to one evaluated
split, days, cost, pessimistic days and pessimistic cost each no lower, as many nodes or
more, a memory fit no better and more GPUs: it is on no front and wins nothing under any
deadline, budget or `at`, so a sweep stays rankable for any constraints (the app re-ranks
without a new sweep). Offline, capture depends on the targets and training on the
drafters: `_offline_band` leaves out the counts another count of the same role beats on
that role's terms (the dominating split may have more GPUs when it is faster beyond
rounding; nodes count only when the space limits them), for blocks of two types and, by
phase, of one type. A regenerating plan's regeneration moves with one role's GPUs (or
none): online, only the rule about the other role's idle GPUs is kept; offline, it is one
more of that role's terms.
`brute=True` evaluates every split (the property tests and the benchmark compare both).
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterator
from dataclasses import dataclass, field, replace
from typing import Any, Literal, get_args

import numpy as np

from ..basics.errors import PlanError
from ..basics.units import SECONDS_PER_DAY
from ..core.cost import Price, Prices, prices
from ..core.economics import RolePrices
from ..core.offline import BYTES_PER_TB, Run, fits_storage, stored
from ..core.phases import Regeneration, regenerate_phase, regeneration_gpus, regeneration_rates
from ..core.projection import (
    Projection,
    link_scaled,
    link_share,
    plan_inputs,
    project,
    store_sizing,
)
from ..core.rates import Rates, rates
from ..core.resolve import Resolved, resolve
from ..core.scenarios import LOW, memory_band
from ..core.stages import RunInputs, run_at
from ..inputs.catalog import Catalog
from ..inputs.hardware import Gpu
from ..inputs.plan import Mode, Plan, Topology
from ..physics.colocated import efficiency_range
from ..physics.footprint import MemoryFit
from ..physics.memory import drafter_memory, target_memory
from ..physics.pipeline import Flow, PipelineInputs, flow
from ..physics.store import store_loads_of
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
    # The modes each split is evaluated in (workload.mode): online, offline or both.
    modes: tuple[Mode, ...] = ("online",)
    # The topologies searched (workload.topology): disaggregated splits, colocated GPU
    # counts (one GPU type, online: every GPU runs both roles), or both.
    topologies: tuple[Topology, ...] = ("disaggregated",)


@dataclass(frozen=True, slots=True)
class Constraints:
    deadline_days: float | None = None
    budget: float | None = None  # in the plan's cost unit
    at: At = "pessimistic"  # which end of the range both are judged at

    def __post_init__(self) -> None:
        if self.at not in AT_CHOICES:
            raise PlanError.flag(
                "at", repr(self.at), f"use one of {', '.join(AT_CHOICES)}", "search.at"
            )

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
    def mode(self) -> str:
        return self.plan.workload.mode

    @property
    def topology(self) -> str:
        return self.plan.workload.topology

    @property
    def days(self) -> float:
        """The whole job's days in the plan's own mode: the offline run's (capture, then
        training) when it runs offline, after the regeneration phase when it has one."""
        return self._regenerate_days() + float(self.projection.run_days or math.inf)

    @property
    def cost(self) -> float:
        return self._regenerate_cost() + float(self.projection.run_cost or math.inf)

    def _regenerate_days(self) -> float:
        p = self.projection
        return p.phases[0].days if p.regeneration is not None and p.phases else 0.0

    def _regenerate_cost(self) -> float:
        p = self.projection
        if p.regeneration is None or not p.phases:
            return 0.0
        cost = p.phases[0].cost
        return math.inf if cost is None else cost

    def judged(self, at: At) -> tuple[float, float]:
        """The (days, cost) the constraints are judged on at that end."""
        if at == "pessimistic":
            return self.pessimistic_days, self.pessimistic_cost
        return self.days, self.cost


@dataclass(frozen=True, slots=True)
class Fastest:
    """The fastest feasible plan of one GPU type in one topology (both roles on it)."""

    targets: int
    drafters: int
    tp: int
    days: float
    cost: float

    def to_json(self) -> dict[str, Any]:
        return {
            "targets": self.targets,
            "drafters": self.drafters,
            "gpus": self.targets + self.drafters,
            "tp": self.tp,
            "days": self.days,
            "cost": self.cost,
        }


@dataclass(frozen=True, slots=True)
class TopologyWin:
    """Which topology wins on one GPU type: its fastest feasible plan in each (a
    topology with no feasible plan is absent), the faster one's topology."""

    gpu: str
    winner: str
    fastest: dict[str, Fastest]

    def to_json(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu,
            "winner": self.winner,
            **{topology: f.to_json() for topology, f in self.fastest.items()},
        }


@dataclass(frozen=True, slots=True)
class Result:
    evaluated: int  # configurations covered (evaluated + proved dominated)
    feasible: int  # of those evaluated, that fit and meet every constraint
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
    evaluated_after_pruning: int | None = None  # None: every covered one was evaluated
    modes: tuple[Mode, ...] = ("online",)  # the modes each split was evaluated in
    topologies: tuple[Topology, ...] = ("disaggregated",)  # the topologies searched
    # Both topologies searched: the winner on each GPU type (its fastest feasible plan in
    # each topology, the faster's), in the space's order.
    topology_wins: tuple[TopologyWin, ...] = ()
    # The searched target GPU types without tensor cores of the plan's target precision
    # (target.precision fp8 or fp4): left out as targets (_block_model), said in one line.
    precision: str = "bf16"
    targets_lacking_precision: tuple[str, ...] = ()

    @property
    def covered(self) -> int:
        return self.evaluated

    @property
    def evaluated_splits(self) -> int:
        """Configurations whose figures were computed (the rest proved dominated)."""
        return (
            self.evaluated if self.evaluated_after_pruning is None else self.evaluated_after_pruning
        )

    def to_json(self) -> dict[str, Any]:
        at = self.constraints.at

        def one(c: Candidate | None) -> dict[str, Any] | None:
            if c is None:
                return None
            from ..inputs.plan import plan_to_dict

            days, cost = c.judged(at)
            return {
                "mode": c.mode,
                "topology": c.topology,
                "days": c.days,
                "cost": c.cost,
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
            "covered": self.covered,
            "evaluated_after_pruning": self.evaluated_splits,
            "proved_dominated": self.covered - self.evaluated_splits,
            "feasible": self.feasible,
            "cost_unit": self.cost_unit,
            "why_none": self.why_none,
            "rejected": self.rejected,
            "constraints": self.constraints.to_json(),
            "modes": list(self.modes),
            "topologies": list(self.topologies),
            "topology_wins": [w.to_json() for w in self.topology_wins],
            "prices_not_from_plan": [p.to_json() for p in self.borrowed_prices],
            "front": [one(c) for c in self.front],
            "cheapest_within_deadline": one(self.cheapest_within_deadline),
            "fastest_within_budget": one(self.fastest_within_budget),
            "most_tokens_per_cost": one(self.most_tokens_per_cost),
        }


def _variant(
    plan: Plan,
    t_gpu: str,
    d_gpu: str,
    tp: int,
    targets: int,
    drafters: int,
    mode: Mode | None = None,
    topology: Topology | None = None,
) -> Plan:
    update: dict[str, Any] = {
        "target": plan.target.model_copy(update={"gpu": t_gpu, "tp": tp, "count": targets}),
        "drafter": plan.drafter.model_copy(update={"gpu": d_gpu, "count": drafters}),
    }
    workload: dict[str, Any] = {}
    if mode is not None and mode != plan.workload.mode:
        workload["mode"] = mode
    if topology is not None and topology != plan.workload.topology:
        workload["topology"] = topology
    if workload:
        update["workload"] = plan.workload.model_copy(update=workload)
    return plan.model_copy(update=update)


def in_topology(plan: Plan, topology: Topology) -> Plan:
    """The plan in this topology (itself when it is in it already)."""
    if plan.workload.topology == topology:
        return plan
    return plan.model_copy(
        update={"workload": plan.workload.model_copy(update={"topology": topology})}
    )


def colocated_split(gpus: Any, tp: int) -> tuple[Any, Any]:
    """The (targets, drafters) a colocated plan of `gpus` GPUs is written with: half the
    replicas as targets, the rest drafters (any split of the same GPUs is the same
    colocated plan; whole replicas keep target.count a multiple of target.tp)."""
    targets = tp * (gpus // tp // 2)
    return targets, gpus - targets


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
    covered: int  # splits of the block, evaluated or proved dominated
    unfit: int = 0  # evaluated splits left out as they do not fit
    mode: Mode = "online"
    storage_fits: bool = True  # offline: the captured data fits storage.tb
    storage_tb: float = 0.0  # offline: the captured data, TB
    # By split: the Mooncake store fits every node's host memory (None: every split's does).
    store_fits: np.ndarray | None = None
    topology: Topology = "disaggregated"  # colocated: each split is targets + drafters GPUs

    def fitting(self) -> _Block:
        """The block with its fitting splits only (what ranking needs), counts in 32 bits:
        the smaller copy a sweep keeps."""
        keep = self.fits
        small = {
            "targets": self.targets[keep].astype(np.int32),
            "drafters": self.drafters[keep].astype(np.int32),
            "nodes": np.asarray(self.nodes)[keep].astype(np.int32),
        }
        return replace(
            self,
            **small,
            days=self.days[keep],
            cost=self.cost[keep],
            slow_days=self.slow_days[keep],
            slow_cost=self.slow_cost[keep],
            fits=self.fits[keep],
            unfit=self.unfit + int(keep.size - keep.sum()),
            store_fits=None if self.store_fits is None else self.store_fits[keep],
        )


@dataclass(frozen=True, slots=True)
class _Shared:
    """What every block of one search shares: the resolved plan, prices, per-GPU rates."""

    resolved: Resolved
    prices: Prices
    rates: dict[str, Rates]  # by GPU type: both roles' rates on that type
    gpus: dict[str, Gpu]  # the catalog's GPU types


def _shared(plan: Plan, catalog: Catalog, keys: tuple[str, ...]) -> _Shared:
    r = resolve(plan, catalog)
    view = prices(plan, dict(catalog.gpus), keys, catalog.offers)
    by_gpu = {k: rates(r, catalog, catalog.gpus[k], catalog.gpus[k]) for k in keys}
    return _Shared(r, view, by_gpu, dict(catalog.gpus))


@dataclass(frozen=True, slots=True)
class _BlockModel:
    """One block's pipeline and run inputs at the central rates and at the pessimistic
    end, and what a split's memory fit needs: built once per block, so that each step of
    `_block` (pruning, evaluating the splits, their figures) is a function of it."""

    plan: Plan
    catalog: Catalog
    shared: _Shared
    t_key: str
    d_key: str
    tp: int
    t_gpu: Gpu
    d_gpu: Gpu
    central_in: PipelineInputs
    slow_in: PipelineInputs
    central_run_in: RunInputs
    slow_run_in: RunInputs
    t_mem: MemoryFit
    # The drafter's memory apart from its optimizer state, and that state, which is
    # sharded over the drafters, so enough of them make it fit.
    drafter_fixed_gb: float
    drafter_state_gb: float
    units: tuple[int, int]  # each role's GPUs per rental unit
    per_token: float  # bytes stored per token (offline)
    tokens_per_epoch: float

    def drafter_fits(self, drafters: np.ndarray) -> np.ndarray:
        # Judged at the pessimistic end of the memory estimate, as the projection's `fits`.
        high = memory_band("drafter")[1]
        needed = (self.drafter_fixed_gb + self.drafter_state_gb / drafters) * high
        return np.asarray(needed <= self.d_gpu.memory_gb)

    def offline_runs(
        self, targets: np.ndarray, drafters: np.ndarray, flows: tuple[Flow, Flow] | None = None
    ) -> tuple[Run, Run]:
        """The offline run of each split at the central rates and at the pessimistic end
        (`flows`: the pipeline's central and pessimistic flows of these splits, if known)."""
        ends = (self.central_run_in, self.slow_run_in)
        out = [
            run_at(ri, targets, drafters, None if flows is None else flows[i]).parts
            for i, ri in enumerate(ends)
        ]
        assert out[0] is not None and out[1] is not None  # the offline mode's runs
        return out[0], out[1]

    def regeneration(self, targets: np.ndarray, drafters: np.ndarray) -> tuple[Any, ...]:
        # Days and cost at the central rate and at the slow end: the slow figures are the
        # central ones times one ratio, but not bit for bit.
        return _regeneration(
            self.plan, self.catalog, self.shared, self.t_key, self.d_key, self.tp, targets, drafters
        )


def _block_model(
    plan: Plan, catalog: Catalog, shared: _Shared, t_key: str, d_key: str, tp: int, mode: Mode
) -> _BlockModel | None:
    """The block's model; None when either GPU type has no price, or the target's has no
    tensor cores of the target's precision (no such block)."""
    if not catalog.gpus[t_key].supports(plan.target.precision):
        return None
    view = shared.prices
    p_t, p_d = view.per_hour(t_key), view.per_hour(d_key)
    if p_t is None or p_d is None:
        return None
    r = shared.resolved
    t_gpu, d_gpu = catalog.gpus[t_key], catalog.gpus[d_key]
    t_rate, d_rate = shared.rates[t_key].target, shared.rates[d_key].drafter
    tw = shared.rates[t_key].target_work
    w = plan.workload

    def inputs(
        target_tokens_per_s: float,
        drafter_tokens_per_s: float,
        shares: tuple[float, float] = (1.0, 1.0),
        transport: str | None = None,
    ) -> PipelineInputs:
        return plan_inputs(
            r,
            tw,
            target_tokens_per_s,
            drafter_tokens_per_s,
            link_scaled(t_gpu, shares[0]),
            link_scaled(d_gpu, shares[1]),
            tp,
            transport,
        )

    central_in = inputs(t_rate.tokens_per_s, d_rate.tokens_per_s)
    # Pessimistic: the worst scenario of each split, which is the corner of both roles'
    # lowest rates and the slowest links (the pipeline is monotone in each: projection.py's
    # PlanScenarios), one vectorised call as for the central figures.
    slow_links = (
        link_share(f"link:{t_gpu.link.kind}", LOW),
        link_share(f"link:{d_gpu.link.kind}", LOW),
    )
    slow_in = inputs(t_rate.low_tokens_per_s, d_rate.low_tokens_per_s, slow_links)
    # Memory: the target's does not depend on counts; the drafter's optimizer state is
    # sharded over the drafters, so enough of them make it fit.
    t_mem = target_memory(
        r.model, tp, w.max_length, r.captured_tensors, t_gpu.memory_gb, plan.target.precision
    )
    fixed, state = _drafter_memory_parts(plan, r, d_gpu)
    units = (view.by_gpu[t_key].unit_gpus, view.by_gpu[d_key].unit_gpus)
    role_prices = RolePrices(p_t, p_d, None, None, t_gpu.tdp_w, d_gpu.tdp_w)
    # The run of the plan's own mode as project() computes it (stages.run_at, the same
    # code): offline, the targets' capacity captures and the drafters reading from storage
    # (no Mooncake fetch wait) train.
    _, per_token = stored(plan, r.model.hidden, len(r.layer_ids))
    tokens_per_epoch = float(w.samples) * w.avg_sample_tokens

    # The plan in the block's mode: run_at runs the mode of the plan it is given.
    in_mode = (
        plan
        if plan.workload.mode == mode
        else plan.model_copy(update={"workload": plan.workload.model_copy(update={"mode": mode})})
    )

    def run_inputs(pipeline: PipelineInputs, disk: PipelineInputs) -> RunInputs:
        return RunInputs(
            in_mode,
            pipeline,
            pipeline if w.transport == "direct" else disk,
            per_token,
            tokens_per_epoch,
            d_gpu.gpus_per_node,
            role_prices,
            view.in_usd,
            units,
            t_key == d_key,
        )

    central_run_in = run_inputs(
        central_in, inputs(t_rate.tokens_per_s, d_rate.tokens_per_s, transport="direct")
    )
    slow_run_in = run_inputs(
        slow_in,
        inputs(t_rate.low_tokens_per_s, d_rate.low_tokens_per_s, slow_links, "direct"),
    )
    return _BlockModel(
        plan,
        catalog,
        shared,
        t_key,
        d_key,
        tp,
        t_gpu,
        d_gpu,
        central_in,
        slow_in,
        central_run_in,
        slow_run_in,
        t_mem,
        fixed,
        state,
        units,
        per_token,
        tokens_per_epoch,
    )


def _drafter_memory_parts(plan: Plan, r: Resolved, d_gpu: Gpu) -> tuple[float, float]:
    """One drafter's memory (GB) apart from its optimizer state, and that state: the part
    a split's drafters shard between them."""
    w = plan.workload
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
    return one.needed_gb - state, state


def _regeneration_side(plan: Plan, t_key: str, d_key: str) -> int | None:
    """What the regeneration's GPUs move with: None (none, or a set count), the targets
    (0), the drafters (1), neither (2: it cannot run, every figure infinite)."""
    g = plan.regenerate
    if not plan.workload.regenerate or g.count is not None:
        return None
    return {d_key: 1, t_key: 0}.get(g.gpu or t_key, 2)


def _pruned(
    m: _BlockModel, space: Space, mode: Mode, side: int | None, covered: int
) -> tuple[np.ndarray, ...] | None:
    """The splits of the block that can be on a front (the pruning of the module's
    docstring), or None to evaluate the block whole."""
    plan, t_key, d_key, tp = m.plan, m.t_key, m.d_key, m.tp
    if mode == "offline":
        # A small block is evaluated whole (_OFFLINE_PRUNE_FROM).
        if covered < _OFFLINE_PRUNE_FROM:
            return None
        return _offline_band(
            m.offline_runs,
            m.regeneration if plan.workload.regenerate else None,
            side,
            plan.storage.billing == "by-phase",
            plan.workload.epochs,
            tp,
            space.max_gpus,
            m.drafter_fits,
            bool(space.max_nodes or space.one_node),
            (m.t_gpu.gpus_per_node, m.d_gpu.gpus_per_node),
            m.units,
            t_key == d_key,
        )
    if t_key != d_key:
        # A regeneration on one role's GPUs is faster with more of them: only the rule
        # about the other role's idle GPUs holds (the compared splits share this role's
        # count, so the regeneration's days and cost).
        return _band(
            m.central_in, m.slow_in, tp, space.max_gpus, m.drafter_fits, (side != 1, side != 0)
        )
    if side in (None, 2):
        return _band_one_type(
            m.central_in,
            m.slow_in,
            tp,
            space.max_gpus,
            m.drafter_fits,
            m.shared.prices.by_gpu[t_key].unit_gpus,
        )
    # One type regenerating on its own GPUs (both roles' counts) is evaluated whole.
    return None


def _evaluated(
    m: _BlockModel, band: tuple[np.ndarray, ...] | None, max_gpus: int
) -> tuple[np.ndarray, np.ndarray, Flow, Flow]:
    """The splits evaluated (the band's, or the whole block's) and their central and
    pessimistic flows."""
    if band is not None:
        targets, drafters = band[0], band[1]
        central = flow(m.central_in, targets, drafters)
        slow = flow(m.slow_in, targets, drafters)
        # The form the pruning of two types rests on, on every split evaluated; else the
        # whole block.
        if len(band) == 4 and not (
            np.array_equal(central.tokens_per_s, band[2])
            and np.array_equal(slow.tokens_per_s, band[3])
        ):
            band = None
    if band is None:
        targets, drafters = _splits(max_gpus, m.tp)
        central = flow(m.central_in, targets, drafters)
        slow = flow(m.slow_in, targets, drafters)
    return targets, drafters, central, slow


def _run_figures(
    ri: RunInputs, targets: np.ndarray, drafters: np.ndarray, f: Flow | None = None
) -> tuple[np.ndarray, np.ndarray]:
    """Days and cost of each split as project() computes them (stages.run_at, the same
    code), so that a plan judged within a limit here is within it in its projection."""
    o = run_at(ri, targets, drafters, f)
    cost = np.full(targets.shape, np.inf) if o.cost is None else o.cost
    return (
        np.broadcast_to(np.asarray(o.days, float), targets.shape),
        np.broadcast_to(np.asarray(cost, float), targets.shape),
    )


def _block(
    plan: Plan,
    catalog: Catalog,
    shared: _Shared,
    t_key: str,
    d_key: str,
    tp: int,
    space: Space,
    brute: bool = False,
    mode: Mode = "online",
) -> _Block | None:
    m = _block_model(plan, catalog, shared, t_key, d_key, tp, mode)
    if m is None:
        return None
    w = plan.workload
    replicas = np.arange(1, space.max_gpus // tp + 1)
    covered = int(np.maximum(space.max_gpus - replicas * tp, 0).sum())
    side = _regeneration_side(plan, t_key, d_key)
    band = None if brute else _pruned(m, space, mode, side, covered)
    store_over = _store_over(shared, t_key, d_key, tp)
    # Whether some split's store does not fit its host memory: then the block is evaluated
    # whole (the pruning's argument does not cover that fit); else no split is rejected.
    some_over = bool(store_over(*_store_worst(space.max_gpus, tp, m.t_gpu.gpus_per_node)).any())
    if some_over:
        band = None
    targets, drafters, central, slow = _evaluated(m, band, space.max_gpus)
    days, cost = _run_figures(m.central_run_in, targets, drafters, central)
    slow_days, slow_cost = _run_figures(m.slow_run_in, targets, drafters, slow)
    if mode == "offline":
        storage_fits = fits_storage(plan, m.per_token, m.tokens_per_epoch)
        storage_tb = m.per_token * m.tokens_per_epoch / BYTES_PER_TB
    else:
        storage_fits, storage_tb = True, 0.0
    if w.regenerate:
        # The whole job: the regeneration phase first (phases.py, as the projection adds it).
        regen_days, regen_cost, regen_slow_days, regen_slow_cost = _regeneration(
            plan, catalog, shared, t_key, d_key, tp, targets, drafters
        )
        days, cost = regen_days + days, regen_cost + cost
        # At the pessimistic end the regeneration runs at the slow end of its decode range
        # (Projection.job_days_range adds the same phase).
        slow_days, slow_cost = regen_slow_days + slow_days, regen_slow_cost + slow_cost
    t_mem = replace(m.t_mem, band=memory_band("target"))
    fits = m.drafter_fits(drafters) & t_mem.fits
    nodes = np.broadcast_to(np.asarray(central.nodes), targets.shape)
    over = store_over(targets, drafters) if some_over else None
    return _Block(
        t_key,
        d_key,
        tp,
        targets,
        drafters,
        days,
        cost,
        slow_days,
        slow_cost,
        fits,
        nodes,
        covered,
        mode=mode,
        storage_fits=storage_fits,
        storage_tb=storage_tb,
        store_fits=None if over is None else ~over,
    )


def _colocated_block(
    plan: Plan, catalog: Catalog, shared: _Shared, key: str, tp: int, space: Space
) -> _Block | None:
    """Every colocated GPU count of one type and TP (whole replicas, at least two, as a
    plan writes it: colocated_split), its figures by stages.run_at as the projection's."""
    m = _block_model(plan, catalog, shared, key, key, tp, "online")
    gpus = np.arange(2 * tp, space.max_gpus + 1, tp)
    if m is None or gpus.size == 0:
        return None
    targets, drafters = colocated_split(gpus, tp)
    days, cost = _run_figures(m.central_run_in, targets, drafters)
    # The pessimistic end: the slow rates and links, and the low end of the colocation
    # efficiency's band for this GPU type, TP and target (wider outside its runs' conditions).
    low = efficiency_range(
        m.t_gpu.arch, tp, shared.resolved.model, plan.workload.avg_sample_tokens
    )[0]
    slow_in = replace(m.slow_run_in, colocation_efficiency=low)
    slow_days, slow_cost = _run_figures(slow_in, targets, drafters)
    if plan.workload.regenerate:
        regen_days, regen_cost, regen_slow_days, regen_slow_cost = _regeneration(
            plan, catalog, shared, key, key, tp, targets, drafters
        )
        days, cost = regen_days + days, regen_cost + cost
        slow_days, slow_cost = regen_slow_days + slow_days, regen_slow_cost + slow_cost
    # Each GPU holds the target's shard and a drafter rank (memory.colocated_memory: one
    # runtime reserve, the trainer's), the optimizer state sharded over every GPU.
    t_items = dict(m.t_mem.items_gb)
    target_gb = m.t_mem.needed_gb - t_items["runtime reserve"]
    needed = target_gb + m.drafter_fixed_gb + m.drafter_state_gb / gpus
    high = max(memory_band("target")[1], memory_band("drafter")[1])
    fits = np.asarray(needed * high <= m.t_gpu.memory_gb)
    nodes = -(-gpus // m.t_gpu.gpus_per_node)
    return _Block(
        key,
        key,
        tp,
        targets,
        drafters,
        days,
        cost,
        slow_days,
        slow_cost,
        fits,
        nodes,
        int(gpus.size),
        topology="colocated",
    )


def _store_over(
    shared: _Shared, t_key: str, d_key: str, tp: int
) -> Callable[[np.ndarray, np.ndarray], np.ndarray]:
    """By split (targets, drafters) of a block: its Mooncake store needs more host memory
    than a node has, the projection's store-memory error (the same functions,
    physics/store.py, over arrays)."""
    r = shared.resolved
    fmt, sample_bytes = store_sizing(r)
    t_gpu, d_gpu = shared.gpus[t_key], shared.gpus[d_key]
    host = {"target": t_gpu.host_memory_gb, "drafter": d_gpu.host_memory_gb}
    if host["target"] is None and host["drafter"] is None:
        return lambda targets, drafters: np.zeros(targets.shape, bool)

    def over(targets: np.ndarray, drafters: np.ndarray) -> np.ndarray:
        loads = store_loads_of(
            fmt,
            sample_bytes,
            r.plan.drafter.batch_size,
            targets,
            drafters,
            tp,
            (t_gpu.gpus_per_node, d_gpu.gpus_per_node),
            t_key == d_key,
        )
        return np.asarray(loads.over(host), bool)

    return over


def _store_worst(max_gpus: int, tp: int, node: int) -> tuple[np.ndarray, np.ndarray]:
    """The splits of a block with targets filling at most one node (`node` target GPUs):
    if any split's store is over its host memory, one of these is. A node's store is
    capture servers x (segment + buffer) + trainer ranks x their share, and a segment is
    no smaller with fewer capture servers or more drafters (store.segment_samples_of).
    One GPU type: (T, d) maps to (T', d + T - T'), T' = T mod node (node when 0): as
    many GPUs, T' <= T, so no more servers and no fewer drafters. Its first node holds
    the servers and ranks of (T, d)'s node where the drafters start (T' = node: its
    second node does), with a segment no smaller; its last node, shifted by whole nodes,
    holds the ranks of (T, d)'s last; a node full of drafters after (T, d)'s start is
    (T', d + T - T')'s second (as many GPUs: that one is full too); and (T, d)'s first
    node, full of targets when T >= node, is (node, d + T - node)'s first with a segment
    no smaller. Two GPU types:
    the targets' first node has min(T, node) targets and the drafters' min(d, node)
    drafters, both no fewer at (min(T, node), d + T - T'). Every node
    store.nodes_of_split_of weighs is thus no lighter at one of these splits."""
    targets = np.arange(tp, min(node, max_gpus - 1) + 1, tp)
    room = max_gpus - targets  # drafters 1 to room with each target count
    starts = np.cumsum(room) - room
    drafters = np.arange(room.sum()) - np.repeat(starts, room) + 1
    return np.repeat(targets, room), drafters


def _regeneration(
    plan: Plan,
    catalog: Catalog,
    shared: _Shared,
    t_key: str,
    d_key: str,
    tp: int,
    targets: np.ndarray,
    drafters: np.ndarray,
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray]:
    """The regeneration phase's days and cost of each split, computed by the projection's
    own functions once per GPU count (phases.regeneration_gpus: every GPU of the plan of
    its type, in whole replicas, unless regenerate.count says otherwise). A split with no
    whole replica, or whose replica cannot hold the weights and a sequence, cannot
    regenerate: infinite. Then the same at the slow end of the decode range."""
    g = plan.regenerate
    key, tp_r = g.gpu or t_key, g.tp or tp
    gpu = catalog.gpus[key]
    if g.count is not None:
        regeneration_gpus(plan, dict(catalog.gpus))  # raises for a count of part replicas
        counts = np.full(targets.shape, g.count)
    else:
        same = (targets if key == t_key else 0) + (drafters if key == d_key else 0)
        # Of neither role's type: no GPU of the split (a count for every split all the same).
        counts = np.broadcast_to(np.asarray(same) // tp_r * tp_r, targets.shape)
    try:
        rate, span = regeneration_rates(plan, shared.resolved.model, gpu, tp_r)
    except PlanError:  # the weights leave no room to decode at this tp: no such plan
        return (np.full(targets.shape, math.inf),) * 4
    w = plan.workload
    output = w.regenerate_output_tokens or w.avg_sample_tokens
    distinct, where = np.unique(counts, return_inverse=True)
    days, cost, slow_days, slow_cost = (np.full(distinct.shape, math.inf) for _ in range(4))
    for i, count in enumerate(distinct):
        if count > 0:
            regen = Regeneration(
                key,
                gpu.name,
                int(count),
                tp_r,
                output,
                w.avg_sample_tokens - output,
                w.samples,
                rate,
                span,
            )
            for central, (d, c) in ((None, (days, cost)), (1, (slow_days, slow_cost))):
                phase = regenerate_phase(regen, shared.prices, central)
                d[i] = phase.days
                c[i] = math.inf if phase.cost is None else phase.cost

    def spread(a: np.ndarray) -> np.ndarray:
        return a[where].reshape(targets.shape)

    return spread(days), spread(cost), spread(slow_days), spread(slow_cost)


# An offline block of fewer splits is evaluated whole: below this, evaluating (and ranking)
# every split costs less than the pruning's own work (about 2 ms a block).
_OFFLINE_PRUNE_FROM = 4096


def _offline_band(
    runs: Callable[[np.ndarray, np.ndarray], tuple[Run, Run]],
    regen: Callable[[np.ndarray, np.ndarray], tuple[Any, ...]] | None,
    regen_side: int | None,
    by_phase: bool,
    epochs: int,
    tp: int,
    max_gpus: int,
    drafter_fits: Callable[[np.ndarray], np.ndarray],
    limits_nodes: bool,
    gpus_per_node: tuple[int, int],
    units: tuple[int, int],
    one_type: bool,
) -> tuple[np.ndarray, np.ndarray] | None:
    """The (targets, drafters) of an offline block that can be on a front; every other
    split is dominated by one of these. None to evaluate all.

    The argument. Offline, the capture (the targets' capacity: replicas x a rate)
    depends on T alone, and the training (the drafters' capacity with their all-reduce,
    storage reads by their nodes) on d and on the drafters' nodes: d alone with two GPU
    types (nodes of their own); with one type the drafters fill the pool after the
    targets, so also on T's place in its node, its offset T mod node. `runs` of T with
    one drafter and of d after targets of each offset give each side's figures exactly
    as `offline.run` computes them for any split. Then days = regen + (capture_s /
    86400 + epochs x (train_s / 86400)), and the cost is the regeneration's + capture
    cost + epochs x training cost (+ storage, growing with days) by phase, or (billed_t
    x price_t + billed_d x price_d) x each phase's seconds whole-run: each figure, at
    both ends, never falls when one side's terms do not fall and the other side's stay
    (sums and products of non-negative floats: monotone rounding).
    So (T', d) has every figure no higher than (T, d) when T' has capture seconds at
    both ends, capture cost at both ends (by phase) or billed targets (whole-run), the
    regeneration's days and cost when they move with T, nodes (when the space limits
    nodes) each no higher, and (one type) an offset whose training is no slower and no
    dearer for any d: T' dominates T. It ranks before (T, d) (days, cost, GPUs) when
    T' < T (fewer GPUs, figures no higher) or when its central days are lower by more
    than the rounding can close: capture (or regeneration) days lower by over 4 ulps of
    the largest days (each of the two sums rounds by at most half an ulp). Drafters
    likewise, for each offset: d' dominates d with training seconds and cost (or billed
    drafters), regeneration, nodes no higher and a memory fit no worse. With one type
    the nodes are the pool's, ceil((T + d) / node): under a node limit only fewer GPUs
    dominate. A split needing a dominator with more GPUs than the space allows is kept:
    (T, d) is left out only when the smallest T' dominating T has T' + d <= max_gpus,
    or the smallest d' dominating d has T + d' <= max_gpus. The dominating split may
    itself be left out, for a split before it in the order again: the chain ends at a
    kept split, feasible whenever (T, d) is (deadline and budget at either end, nodes,
    memory; the storage is the block's), so (T, d) is on no front and wins nothing.
    Evaluated whole: one type billed whole-run (one pool's billed total, rounded in
    its split between roles) or regenerating on its own GPUs (a count of both roles),
    and regeneration on a third type with no count (it cannot run)."""
    if one_type and (not by_phase or (regen is not None and regen_side is not None)):
        return None
    if regen is not None and regen_side == 2:
        return None
    s = _offline_sides(runs, tp, max_gpus, gpus_per_node[0], one_type)
    t_all, d_all = s.t_all, s.d_all
    nodes_key = (
        (t_all, d_all)
        if one_type
        else (
            -(-t_all // gpus_per_node[0]),
            -(-d_all // gpus_per_node[1]),
        )
    )
    t_keys = _target_keys(s, by_phase, units[0])
    if limits_nodes:
        t_keys.append(nodes_key[0])
    t_days = t_keys[0] / SECONDS_PER_DAY
    d_keys, d_days = _drafter_keys(s, by_phase, units[1], epochs)
    # Offset o' is no worse than o when its training is no slower and no dearer for any d
    # (judged on the training's own keys, before the regeneration's join them).
    no_worse = np.array(
        [
            [all(np.all(a <= b) for a, b in zip(k1, k2, strict=True)) for k2 in d_keys]
            for k1 in d_keys
        ]
    )
    fits_key = ~drafter_fits(d_all)
    t_regen, d_regen, regen_days = _regeneration_keys(regen, regen_side, s, tp, t_keys, d_keys)
    largest = regen_days + (float(t_days.max()) + float(np.max(d_days)))
    margin = 4 * float(np.spacing(largest)) if math.isfinite(largest) else math.inf
    offset = s.offset
    low_t = _lowest_dominator(
        t_all, t_keys, t_days, t_regen, margin, no_worse[offset[:, None], offset[None, :]]
    )
    low_d = np.array(
        [
            _lowest_dominator(
                d_all,
                [*keys, fits_key, *([nodes_key[1]] if limits_nodes else [])],
                days,
                d_regen,
                margin,
            )
            for keys, days in zip(d_keys, d_days, strict=True)
        ]
    )
    return _kept_splits(s, low_t, low_d, max_gpus)


@dataclass(frozen=True, slots=True)
class _OfflineSides:
    """Each side of an offline block at both ends (central, pessimistic): the targets'
    counts with one drafter, then the drafters' counts after targets of each offset in
    their last node (one offset with two types)."""

    t_all: np.ndarray  # every target count, whole replicas
    d_all: np.ndarray  # every drafter count
    offset: np.ndarray  # by target count: its offset's index in `firsts`
    firsts: np.ndarray  # a target count of each offset, after which the drafters start
    runs: tuple[Run, Run]

    def field(self, name: str, offset: int | None = None) -> tuple[np.ndarray, np.ndarray]:
        """A field of the runs at both ends: the targets' (None) or an offset's drafters'."""
        t, d = self.t_all.size, self.d_all.size
        at = slice(0, t) if offset is None else slice(t + offset * d, t + (offset + 1) * d)
        c, s = (np.asarray(getattr(o, name), float)[at] for o in self.runs)
        return c, s


def _offline_sides(
    runs: Callable[[np.ndarray, np.ndarray], tuple[Run, Run]],
    tp: int,
    max_gpus: int,
    node: int,
    one_type: bool,
) -> _OfflineSides:
    t_all = np.arange(1, max_gpus // tp + 1) * tp
    d_all = np.arange(1, max_gpus - tp + 1)
    # The targets' offsets in their last node (one type; else one class) and a target
    # count of each, after which the drafters start.
    offset = (t_all % node) // tp if one_type else np.zeros(t_all.shape, int)
    firsts = np.arange(node // tp) * tp if one_type else np.zeros(1, int)
    firsts = np.where(firsts == 0, node if one_type else tp, firsts)
    # One call for both sides: the targets with one drafter, then the drafters after
    # targets of each offset.
    sides = runs(
        np.concatenate([t_all, np.repeat(firsts, d_all.size)]),
        np.concatenate([np.ones_like(t_all), np.tile(d_all, firsts.size)]),
    )
    return _OfflineSides(t_all, d_all, offset, firsts, sides)


def _target_keys(s: _OfflineSides, by_phase: bool, unit: int) -> list[Any]:
    """The targets' terms of the figures: capture seconds at both ends, then the capture
    cost at both ends (billed by phase) or the billed target GPUs (whole-run)."""
    keys: list[Any] = [*s.field("capture_s")]
    if by_phase:
        keys += s.field("capture_cost")
    else:
        keys.append(-(-s.t_all // unit))
    return keys


def _drafter_keys(
    s: _OfflineSides, by_phase: bool, unit: int, epochs: int
) -> tuple[list[list[Any]], list[np.ndarray]]:
    """By offset: the drafters' terms (training seconds at both ends, then the training
    cost per epoch or the billed drafter GPUs) and their central training days."""
    d_keys: list[list[Any]] = []
    d_days: list[np.ndarray] = []
    for k in range(s.firsts.size):
        keys: list[Any] = [*s.field("train_s", k)]
        if by_phase:
            keys += s.field("train_cost_per_epoch", k)
        else:
            keys.append(-(-s.d_all // unit))
        d_keys.append(keys)
        d_days.append(epochs * (keys[0] / SECONDS_PER_DAY))
    return d_keys, d_days


def _regeneration_keys(
    regen: Callable[[np.ndarray, np.ndarray], tuple[Any, ...]] | None,
    regen_side: int | None,
    s: _OfflineSides,
    tp: int,
    t_keys: list[Any],
    d_keys: list[list[Any]],
) -> tuple[np.ndarray, np.ndarray, float]:
    """The regeneration as one more of the terms of the role its GPUs move with (appended
    to that role's keys), each side's regeneration days, and the largest of them."""
    t_all, d_all = s.t_all, s.d_all
    t_regen, d_regen = np.zeros(t_all.shape), np.zeros(d_all.shape)
    regen_days = 0.0
    if regen is not None:
        r_days, *r_rest = regen(t_all, np.ones_like(t_all))
        if regen_side == 0:
            t_keys += [r_days, *r_rest]
            t_regen = np.asarray(r_days, float)
        elif regen_side == 1:
            r_days, *r_rest = regen(np.full_like(d_all, tp), d_all)
            for keys in d_keys:
                keys += [r_days, *r_rest]
            d_regen = np.asarray(r_days, float)
        regen_days = float(np.max(r_days))
    return t_regen, d_regen, regen_days


def _kept_splits(
    s: _OfflineSides, low_t: np.ndarray, low_d: np.ndarray, max_gpus: int
) -> tuple[np.ndarray, np.ndarray]:
    """The splits no dominator within the space leaves out, from each count's lowest
    dominator (low_d by offset and drafter count)."""
    t_all, offset = s.t_all, s.offset
    # Counts with a dominator of fewer GPUs are never kept; the others while the smallest
    # dominator does not fit beside the other role's count: for targets T the drafters
    # from max_gpus - low_t(T) + 1 to max_gpus - T, kept when low_d(d) > max_gpus - T.
    rows = np.flatnonzero(low_t > t_all)
    t_kept = t_all[rows]
    first = np.maximum(max_gpus - np.minimum(low_t[rows], max_gpus) + 1, 1)
    count = np.maximum(max_gpus - t_kept - first + 1, 0)
    targets = np.repeat(t_kept, count)
    starts = np.repeat(first - (np.cumsum(count) - count), count)
    drafters = starts + np.arange(targets.size)
    keep = targets + low_d[np.repeat(offset[rows], count), drafters - 1] > max_gpus
    return targets[keep], drafters[keep]  # in the order of `_splits`


def _lowest_dominator(
    counts: np.ndarray,
    keys: list[Any],
    days: np.ndarray,
    regen: np.ndarray,
    margin: float,
    also: np.ndarray | None = None,
) -> np.ndarray:
    """For each count of one role, a count of that role that dominates it (`_offline_band`:
    every key no higher, `also` [dominator, dominated] when given, and fewer GPUs or days
    lower by more than `margin`): some smaller count when one does, else the smallest
    larger one; a count above any split when none does. Candidates are tried nearest
    first, in chunks that double (a dominator is most often a neighbour)."""
    n = counts.size
    table = np.array([np.asarray(k, float) for k in keys])
    none = np.iinfo(np.int64).max // 2
    low = np.full(n, none)

    def scan(todo: np.ndarray, step: int, strict: bool) -> None:
        """For each index in todo, the nearest dominator in direction `step` (-1 or +1)."""
        start, size = 1, 4
        while todo.size:
            i = todo[:, None] + step * np.arange(start, start + size)[None, :]
            inside = (i >= 0) & (i < n)
            i = np.clip(i, 0, n - 1)
            j = np.broadcast_to(todo[:, None], i.shape)
            ok = inside.copy()
            for row in table:
                ok &= row[i] <= row[j]
            if also is not None:
                ok &= also[i, j]
            if strict:
                ok &= (days[j] - days[i] > margin) | (regen[j] - regen[i] > margin)
            hit = ok.any(axis=1)
            low[todo[hit]] = counts[i[hit, ok[hit].argmax(axis=1)]]
            start += size
            size *= 2
            more = todo + step * start
            todo = todo[~hit & (more >= 0) & (more < n)]

    # Only where every key of some smaller (larger) count is no higher can one dominate.
    before = np.all(np.minimum.accumulate(table, axis=1)[:, :-1] <= table[:, 1:], axis=0)
    after = np.minimum.accumulate(table[:, ::-1], axis=1)[:, ::-1][:, 1:] <= table[:, :-1]
    scan(np.flatnonzero(np.r_[False, before]), -1, False)
    if math.isfinite(margin):  # else some days are infinite: no margin to speak of
        # More GPUs: only where some larger count is also faster by the margin.
        faster = np.r_[np.minimum.accumulate(days[::-1])[::-1][1:], np.inf] < days - margin / 2
        faster |= np.r_[np.minimum.accumulate(regen[::-1])[::-1][1:], np.inf] < regen - margin / 2
        scan(np.flatnonzero((low == none) & faster & np.r_[np.all(after, axis=0), False]), 1, True)
    return low


# Counts no split reaches: a side's capacity with this many GPUs on the other side is that
# side's own limit (the other side's terms of the minimum are far above it).
_UNBOUNDED = 1 << 36


def _relaxed(inputs: PipelineInputs) -> PipelineInputs:
    """The inputs with each role on nodes of its own and no network limit: `flow` of them
    is then min(F(T), G(d)) with F the targets and senders, G the drafters (on the fewest
    nodes they can take) and receivers: upper bounds of each side with one GPU type."""
    h = replace(
        inputs.hidden, target_network_bytes_per_s=math.inf, drafter_network_bytes_per_s=math.inf
    )
    return replace(inputs, same_gpu_type=False, hidden=h)


def _sides(
    central: PipelineInputs, slow: PipelineInputs, tp: int, max_gpus: int
) -> tuple[np.ndarray, ...]:
    """t_all, d_all and F_c, F_s (by targets), G_c, G_s (by drafters): each side's
    capacity with the other side unbounded."""
    t_all = np.arange(1, max_gpus // tp + 1) * tp
    d_all = np.arange(1, max_gpus - tp + 1)
    t_side = flow(central, t_all, _UNBOUNDED * tp), flow(slow, t_all, _UNBOUNDED * tp)
    d_side = flow(central, _UNBOUNDED * tp, d_all), flow(slow, _UNBOUNDED * tp, d_all)
    f_c, f_s = (np.minimum(f.target_tokens_per_s, f.link_tokens_per_s) for f in t_side)
    g_c, g_s = (np.minimum(g.drafter_tokens_per_s, g.link_tokens_per_s) for g in d_side)
    return t_all, d_all, f_c, f_s, g_c, g_s


def _first_enough(
    f_c: np.ndarray, f_s: np.ndarray, g_c: np.ndarray, g_s: np.ndarray, fits: np.ndarray
) -> tuple[np.ndarray, np.ndarray]:
    """By target index, the first drafter index that fits with G >= F at both ends (len
    when none); by drafter index, the first target index with F >= G at both ends
    (len when none). F must not fall as T grows."""
    enough = np.minimum(np.searchsorted(f_c, g_c, "right"), np.searchsorted(f_s, g_s, "right"))
    enough = np.where(fits, enough, 0)
    d_first = np.searchsorted(np.maximum.accumulate(enough), np.arange(f_c.size), "right")
    t_first = np.maximum(np.searchsorted(f_c, g_c, "left"), np.searchsorted(f_s, g_s, "left"))
    return d_first, t_first


# How many drafter (target) counts from the first one the bounds allow are tried for the
# split that reaches the bound.
_TRIES = 8


def _band_one_type(
    central: PipelineInputs,
    slow: PipelineInputs,
    tp: int,
    max_gpus: int,
    drafter_fits: Callable[[np.ndarray], np.ndarray],
    unit_gpus: int,
) -> tuple[np.ndarray, np.ndarray] | None:
    """The (targets, drafters) of a block of one GPU type that can be on a front; every
    other split of the block is dominated by an evaluated one. None to evaluate all.

    The argument. The roles share nodes, so `flow` does not split into two sides as in
    `_band`; it has upper bounds that do not depend on the other count: tokens(T, d) <=
    F(T) (the replicas and their senders) and tokens(T, d) <= G(d) (the drafters on the
    fewest nodes they can take, whose all-reduce is then the cheapest, and the
    receivers), from `flow` of `_relaxed` inputs. A split that reaches a bound at both
    ends is found by evaluating it: for targets T, d*(T) is the first of `_TRIES` drafter
    counts from the first that the bounds allow with tokens(T, d*) == F(T) at both ends
    and a memory fit; for drafters d, T*(d) likewise with tokens(T*, d) == G(d).
    Cost per hour is billed x price, billed = the GPUs in whole rental units of the one
    pool, so it is the same for splits of one billed total (up to rounding: they are
    kept) and larger by a whole unit's price for a larger total (far above rounding).
    So every d > d*(T) of a larger billed total has tokens/s no higher, cost per hour
    higher, nodes = ceil((T + d) / node) no fewer, more GPUs: dominated by (T, d*); every
    T > T*(d) of a larger billed total likewise by (T*, d) (the fit does not depend on
    T). A dominating split left out is itself dominated by one with fewer GPUs, so a
    chain ends at an evaluated split. Counts with no such split are kept whole."""
    t_all, d_all, f_c, f_s, g_c, g_s = _sides(_relaxed(central), _relaxed(slow), tp, max_gpus)
    if np.any(np.diff(f_c) < 0) or np.any(np.diff(f_s) < 0):
        return None
    fits = drafter_fits(d_all)
    d_first, t_first = _first_enough(f_c, f_s, g_c, g_s, fits)
    tries = np.arange(_TRIES)

    def reached(
        rows: np.ndarray, columns: np.ndarray, bound_c: np.ndarray, bound_s: np.ndarray
    ) -> np.ndarray:
        """Which of the splits (by index) reach the bounds at both ends, within max."""
        inside = (rows < t_all.size) & (columns < d_all.size)
        rows, columns = np.minimum(rows, t_all.size - 1), np.minimum(columns, d_all.size - 1)
        targets, drafters = t_all[rows], d_all[columns]
        inside &= targets + drafters <= max_gpus
        return np.asarray(
            inside
            & (flow(central, targets, drafters).tokens_per_s == bound_c)
            & (flow(slow, targets, drafters).tokens_per_s == bound_s)
        )

    def last_of_unit(total: np.ndarray) -> np.ndarray:
        return -(-total // unit_gpus) * unit_gpus

    # Rule A: d*(T) for each target count (rows x tries).
    rows = np.repeat(np.arange(t_all.size), _TRIES)
    columns = np.repeat(d_first, _TRIES) + np.tile(tries, t_all.size)
    ok = reached(rows, columns, f_c[rows], f_s[rows])
    ok &= fits[np.minimum(columns, d_all.size - 1)]
    ok = ok.reshape(t_all.size, _TRIES)
    found = ok.any(axis=1)
    d_star = d_all[np.minimum(d_first + ok.argmax(axis=1), d_all.size - 1)]
    d_limit = np.where(found, last_of_unit(t_all + d_star) - t_all, max_gpus)
    # Rule B: T*(d) for each drafter count.
    columns = np.repeat(np.arange(d_all.size), _TRIES)
    rows = np.repeat(t_first, _TRIES) + np.tile(tries, d_all.size)
    ok = reached(rows, columns, g_c[columns], g_s[columns]).reshape(d_all.size, _TRIES)
    found = ok.any(axis=1)
    t_star = t_all[np.minimum(t_first + ok.argmax(axis=1), t_all.size - 1)]
    t_limit = np.where(found, last_of_unit(t_star + d_all) - d_all, max_gpus)
    keep = (
        (d_all[None, :] <= d_limit[:, None])
        & (t_all[:, None] <= t_limit[None, :])
        & (t_all[:, None] + d_all[None, :] <= max_gpus)
    )
    rows, columns = np.nonzero(keep)  # in the order of `_splits`
    return t_all[rows], d_all[columns]


def _band(
    central: PipelineInputs,
    slow: PipelineInputs,
    tp: int,
    max_gpus: int,
    drafter_fits: Callable[[np.ndarray], np.ndarray],
    rules: tuple[bool, bool] = (True, True),
) -> tuple[np.ndarray, np.ndarray, np.ndarray, np.ndarray] | None:
    """The (targets, drafters) of a block of two different GPU types that can be on a
    front; every other split of the block is dominated by one of these (`rules`: rule A
    and rule B below, each applied or not). None when the
    block does not have the form the argument needs (then every split is evaluated). With
    them, min(F, G) of each: the tokens/s at both ends that `_block` checks `flow` gives.

    The argument. With two GPU types the roles sit on nodes of their own: no hidden state
    stays on its node (crossing share 1), the drafters' nodes depend on the drafters only,
    so `flow` is the minimum of a target side F(T) (the replicas' capacity, the senders,
    the targets' network) and a drafter side G(d) (the drafters with their all-reduce, the
    receivers, the drafters' network): tokens(T, d) = min(F(T), G(d)), exactly (a minimum
    of the same floats in another grouping; `min(a, b) / c == min(a / c, b / c)` as
    rounding is monotone). F is obtained as flow(T, huge d) and G as flow(huge T, d), and
    the form is checked on every evaluated split (the block is evaluated whole if it
    ever fails). F grows with
    T (replicas times a rate); G need not grow with d (the all-reduce across nodes).
    Both hold at the central rates and at the pessimistic corner (F_c, G_c, F_s, G_s).

    Cost per hour is billed_t(T) x price_t + billed_d(d) x price_d, each term of its own
    count (whole rental units: billed counts never fall as the count grows), so it never
    falls as T or d grows, in floating point too (a sum with a fixed term, products by
    positive numbers: monotone rounding). Days = tokens / tokens/s / 86400, cost = cost
    per hour x hours: each never falls when tokens/s falls or the cost per hour grows.
    Nodes = ceil(T / node) + ceil(d / node) grow with each. Memory: the target's fit is
    one for the block, the drafters' depends on d (the optimizer state is sharded over
    them), so a dominating split must fit whenever the dominated one does.

    Rule A (too many drafters): for targets T, let d*(T) be the fewest drafters that fit
    with G_c(d*) >= F_c(T) and G_s(d*) >= F_s(T). Then (T, d*) runs at F(T), the most any
    (T, d) can, at both ends; every d > d* has tokens no higher, cost per hour, nodes no
    lower and more GPUs: dominated. d*(T) never falls as T grows (F grows).
    Rule B (too many targets): for drafters d, let T*(d) be the fewest targets with
    F_c(T*) >= G_c(d) and F_s(T*) >= G_s(d): (T*, d) runs at G(d), the most any (T, d)
    can; every T > T* is dominated (the fit does not depend on T).
    What is left is the band T <= T*(d) and d <= d*(T): the splits around balance at the
    central rates, at the pessimistic ones and between the two."""
    t_all, d_all, f_c, f_s, g_c, g_s = _sides(central, slow, tp, max_gpus)
    replicas = t_all.size
    if np.any(np.diff(f_c) < 0) or np.any(np.diff(f_s) < 0):
        return None
    # d*(T) and T*(d) as indices (len when none): rule A and rule B.
    d_star, t_star = _first_enough(f_c, f_s, g_c, g_s, drafter_fits(d_all))
    if not rules[0]:
        d_star = np.full(d_star.shape, d_all.size)
    if not rules[1]:
        t_star = np.full(t_star.shape, replicas - 1)
    # Per drafter count j: target indices from the first whose d* reaches j to T*(d), and
    # within max_gpus.
    j = np.arange(d_all.size)
    low = np.searchsorted(d_star, j, "left")
    high = np.minimum(np.minimum(t_star, replicas - 1), (max_gpus - d_all) // tp - 1)
    count = np.maximum(high - low + 1, 0)
    columns = np.repeat(j, count)
    starts = np.repeat(low - (np.cumsum(count) - count), count)
    rows = starts + np.arange(columns.size)
    # In the order of `_splits` (targets, then drafters), so that of splits with equal
    # figures the same one is kept as when every split is evaluated.
    order = np.lexsort((columns, rows))
    rows, columns = rows[order], columns[order]
    return (
        t_all[rows],
        d_all[columns],
        np.minimum(f_c[rows], g_c[columns]),
        np.minimum(f_s[rows], g_s[columns]),
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
    """The evaluated configurations of one plan and search space that fit in memory, with
    their central and pessimistic days, cost and nodes: what constraints are applied to.
    The pruning does not depend on the constraints (a split left out is dominated under
    any deadline, budget and `at`), so ranking a sweep again for other constraints costs
    no second sweep (the app re-ranks as you type)."""

    plan: Plan
    catalog: Catalog
    space: Space
    blocks: tuple[_Block, ...]
    cost_unit: str
    complete: bool  # False when cancelled part way

    @property
    def evaluated(self) -> int:
        """Splits whose figures were computed."""
        return sum(b.targets.size + b.unfit for b in self.blocks)

    @property
    def covered(self) -> int:
        """Splits the sweep answers for: evaluated, or proved dominated by one evaluated."""
        return sum(b.covered for b in self.blocks)


def _blocks(
    plan: Plan,
    catalog: Catalog,
    space: Space,
    progress: Callable[[float], bool] | None,
    brute: bool,
) -> Iterator[_Block | None]:
    """The blocks of the space one at a time (None after each GPU-type pair, for the
    progress); stops early when `progress(share_done)` returns False."""
    if space.max_gpus > MAX_SEARCH_GPUS or space.max_gpus < 2:
        raise PlanError.flag(
            "--max-gpus",
            str(space.max_gpus),
            f"a search covers 2 to {MAX_SEARCH_GPUS} GPUs",
            "search.max_gpus",
        )
    if space.topologies == ("colocated",) and "online" not in space.modes:
        raise PlanError.flag(
            "--topology",
            "colocated",
            "a colocated plan runs online only: search --mode online (or --topology both)",
            "search.topology",
        )
    pairs = [(t, d) for t in space.target_gpus for d in space.drafter_gpus if space.mixed or t == d]
    regen = (plan.regenerate.gpu,) if plan.workload.regenerate and plan.regenerate.gpu else ()
    shared = _shared(
        plan, catalog, tuple(dict.fromkeys(space.target_gpus + space.drafter_gpus + regen))
    )
    for i, (t_key, d_key) in enumerate(pairs):
        node = catalog.gpus[t_key].gpus_per_node
        for tp in (n for n in range(1, node + 1) if node % n == 0 and n <= space.max_gpus - 1):
            for topology in space.topologies:
                if topology == "colocated":
                    # One GPU type, online only: every GPU runs both roles.
                    if t_key == d_key and "online" in space.modes:
                        block = _colocated_block(
                            in_topology(plan, topology), catalog, shared, t_key, tp, space
                        )
                        if block is not None:
                            yield block
                    continue
                split_plan = in_topology(plan, topology)
                for mode in space.modes:
                    block = _block(
                        split_plan, catalog, shared, t_key, d_key, tp, space, brute, mode
                    )
                    if block is not None:
                        yield block
        if progress is not None and progress((i + 1) / len(pairs)) is False:
            yield None
            return


def sweep(
    plan: Plan,
    catalog: Catalog,
    space: Space,
    progress: Callable[[float], bool] | None = None,
    brute: bool = False,
) -> Sweep:
    """Every GPU type per role x TP x split of the space: the splits that can be on a
    front evaluated, the others proved dominated (`_band`; `brute` evaluates all).
    `progress(share_done)` may return False to cancel (the sweep is then incomplete).
    What it keeps is what ranking again for any constraints needs (the app ranks again as
    you type): every evaluated split that fits in memory, with the count of those that do
    not; `search` keeps only a running front."""
    blocks: list[_Block] = []
    complete = True
    for block in _blocks(plan, catalog, space, progress, brute):
        if block is None:
            complete = False
        else:
            blocks.append(block.fitting())
    unit = prices(plan, dict(catalog.gpus), _keys(space), catalog.offers).unit
    return Sweep(plan, catalog, space, tuple(blocks), unit, complete)


def search(
    plan: Plan,
    catalog: Catalog,
    space: Space,
    constraints: Constraints,
    progress: Callable[[float], bool] | None = None,
    brute: bool = False,
) -> Result:
    """The front and the winners. `progress(share_done)` may return False to cancel.
    Block by block with a running front: memory is bounded by the front and one block,
    not by the number of configurations."""
    ranking = _Ranking(plan, catalog, space, constraints)
    for block in _blocks(plan, catalog, space, progress, brute):
        if block is not None:
            ranking.add(block)
    return ranking.result()


def rank(swept: Sweep, constraints: Constraints) -> Result:
    """The Pareto front and the winners of a sweep under the constraints. The deadline and
    the budget are judged once, at `constraints.at`, and that one feasible set gives both
    the front and the winners: the fastest is the front's first plan, the cheapest its
    last (TIE_RULE)."""
    ranking = _Ranking(swept.plan, swept.catalog, swept.space, constraints)
    for block in swept.blocks:
        ranking.add(block)
    return ranking.result()


def _keys(space: Space) -> tuple[str, ...]:
    return tuple(dict.fromkeys(space.target_gpus + space.drafter_gpus))


# The running front is merged again when this many points wait beside it (each block's
# own front is small: a few hundred points at most).
_MERGE_AT = 50_000


class _Ranking:
    """A running Pareto front of feasible splits and the counts of what was rejected, fed
    block by block. Of equal figures the first in block order (then split order) is kept,
    as a single sort of every split would (np.lexsort is stable)."""

    def __init__(
        self, plan: Plan, catalog: Catalog, space: Space, constraints: Constraints
    ) -> None:
        self.plan, self.catalog, self.space, self.constraints = plan, catalog, space, constraints
        self.rejected: dict[str, int] = {}
        self.feasible = 0
        self.covered = 0
        self.evaluated = 0
        self.blocks = 0
        # (t_gpu, d_gpu, tp, mode, topology) by index
        self.kinds: list[tuple[str, str, int, Mode, Topology]] = []
        self.parts: list[dict[str, np.ndarray]] = []
        self.waiting = 0
        self.storage_tb: float | None = None  # offline data that did not fit storage.tb
        # The fastest feasible plan per (GPU type, topology), both roles on the type.
        self.fastest: dict[tuple[str, str], Fastest] = {}

    def add(self, b: _Block) -> None:
        space, constraints = self.space, self.constraints
        self.blocks += 1
        self.covered += b.covered
        self.evaluated += b.targets.size + b.unfit
        rejected = self.rejected
        pessimistic = constraints.at == "pessimistic"
        ok = b.fits.copy()
        rejected["memory"] = (
            rejected.get("memory", 0) + b.unfit + int(b.targets.size - b.fits.sum())
        )
        days_at, cost_at = (b.slow_days, b.slow_cost) if pessimistic else (b.days, b.cost)
        for name, limit in (
            # Offline, the captured data must fit storage.tb (the same for every split).
            ("storage", None if b.storage_fits else np.zeros(b.targets.shape, bool)),
            # The Mooncake store must fit each node's host memory (the projection's
            # store-memory error: the plan does not fit).
            ("store memory", b.store_fits),
            # A split whose regeneration cannot run (no whole replica of its GPU type, or
            # no room to decode) has infinite figures.
            (
                "regenerate",
                (np.isfinite(b.days) & np.isfinite(b.cost))
                if self.plan.workload.regenerate
                else None,
            ),
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
        if not b.storage_fits:
            self.storage_tb = b.storage_tb
        rows = np.flatnonzero(ok)
        self.feasible += rows.size
        if rows.size == 0:
            return
        if b.t_gpu == b.d_gpu:
            self._fastest(b, rows)
        gpus = b.targets[rows] + b.drafters[rows]
        rows = rows[np.sort(_pareto(b.days[rows], b.cost[rows], gpus))]
        self.kinds.append((b.t_gpu, b.d_gpu, b.tp, b.mode, b.topology))
        self.parts.append(
            {
                "days": b.days[rows],
                "cost": b.cost[rows],
                "slow_days": b.slow_days[rows],
                "slow_cost": b.slow_cost[rows],
                "targets": b.targets[rows],
                "drafters": b.drafters[rows],
                "kind": np.full(rows.size, len(self.kinds) - 1),
            }
        )
        self.waiting += rows.size
        if self.waiting > _MERGE_AT:
            self._merge()

    def _fastest(self, b: _Block, rows: np.ndarray) -> None:
        """Keep the block's fastest feasible split if it beats its (type, topology)'s
        (days, then cost, then GPUs: the TIE_RULE's order)."""
        gpus = b.targets[rows] + b.drafters[rows]
        i = rows[np.lexsort((gpus, b.cost[rows], b.days[rows]))[0]]
        mine = Fastest(
            int(b.targets[i]), int(b.drafters[i]), b.tp, float(b.days[i]), float(b.cost[i])
        )
        key = (b.t_gpu, b.topology)
        old = self.fastest.get(key)
        rank = (mine.days, mine.cost, mine.targets + mine.drafters)
        if old is None or rank < (old.days, old.cost, old.targets + old.drafters):
            self.fastest[key] = mine

    def _wins(self) -> tuple[TopologyWin, ...]:
        if len(self.space.topologies) < 2:
            return ()
        wins = []
        for gpu in dict.fromkeys(key for key, _ in self.fastest):
            mine = {t: f for (g, t), f in self.fastest.items() if g == gpu}
            winner = min(mine, key=lambda t: (mine[t].days, mine[t].cost))
            wins.append(TopologyWin(gpu, winner, mine))
        return tuple(wins)

    def _merge(self) -> dict[str, np.ndarray]:
        """The running front as one set of columns (in block order, then split order)."""
        if not self.parts:
            return {}
        both = {k: np.concatenate([p[k] for p in self.parts]) for k in self.parts[0]}
        keep = np.sort(_pareto(both["days"], both["cost"], both["targets"] + both["drafters"]))
        front = {k: v[keep] for k, v in both.items()}
        self.parts, self.waiting = [front], 0
        return front

    def _storage_why(self) -> str:
        """Why storage stopped the offline plans, when it did."""
        if self.storage_tb is None:
            return ""
        return (
            f"; offline, the hidden states need {self.storage_tb:,.1f} TB but storage.tb is "
            f"{self.plan.storage.tb:,.1f} TB"
        )

    def _store_why(self) -> str:
        """Why the Mooncake store's host memory stopped plans, when it did."""
        stopped = self.rejected.get("store memory", 0)
        if not stopped:
            return ""
        return (
            f"; the Mooncake store of {stopped:,} splits needs more host memory than a node has "
            f"at workload.max_length {self.plan.workload.max_length:,}"
        )

    def result(self) -> Result:
        plan, catalog, space, constraints = (self.plan, self.catalog, self.space, self.constraints)
        rejected = self.rejected
        keys = _keys(space)
        view = prices(plan, dict(catalog.gpus), keys, catalog.offers)
        borrowed = view.borrowed(keys)
        # Counts of the evaluated splits (a proved-dominated one is judged by its
        # dominator).
        evaluated, computed = self.covered, self.evaluated
        lacking = tuple(
            k for k in space.target_gpus if not catalog.gpus[k].supports(plan.target.precision)
        )
        precision = plan.target.precision

        def nothing(why: str) -> Result:
            """No plan to show, and why."""
            return Result(
                evaluated,
                0,
                (),
                None,
                None,
                None,
                view.unit,
                why_none=why,
                rejected=rejected,
                constraints=constraints,
                prices=view,
                borrowed_prices=borrowed,
                evaluated_after_pruning=computed,
                modes=space.modes,
                topologies=space.topologies,
                precision=precision,
                targets_lacking_precision=lacking,
            )

        if not self.blocks:
            return nothing(
                "no GPU type with a price to search (set cost.ratio or "
                "cost.usd_per_gpu_hour for the types to include)"
            )
        if not self.feasible:
            worst = max(rejected, key=lambda k: rejected[k]) if rejected else "limits"
            return nothing(
                f"no configuration meets the constraints "
                f"{constraints.describe()}; most were stopped by {worst} "
                f"({rejected.get(worst, 0):,} of {computed:,} evaluated)"
                + self._storage_why()
                + self._store_why()
            )
        f = self._merge()

        def candidate(k: int) -> Candidate:
            t_gpu, d_gpu, tp, mode, topology = self.kinds[int(f["kind"][k])]
            chosen = _variant(
                plan,
                t_gpu,
                d_gpu,
                tp,
                int(f["targets"][k]),
                int(f["drafters"][k]),
                mode,
                topology,
            )
            p = project(chosen, catalog)
            # The projection's own pessimistic figures (the sweep's equal them; tested).
            slow_d, slow_c = float(f["slow_days"][k]), float(f["slow_cost"][k])
            off = p.offline.ranges if p.offline else None
            if mode == "offline" and off is not None:
                slow_d = off.days[1]
                slow_c = off.cost[1] if off.cost else slow_c
            elif mode == "online" and p.ranges is not None:
                slow_d = float(p.ranges.days[1])
                slow_c = float(p.ranges.total_cost[1]) if p.ranges.total_cost else slow_c
            if p.regeneration is not None:
                # The job's pessimistic end: the run's plus the regeneration at the slow end
                # of its decode range.
                days_range, cost_range = p.job_days_range, p.job_cost_range
                slow_d = days_range[1] if days_range else math.inf
                slow_c = cost_range[1] if cost_range else math.inf
            deadline, budget = constraints.deadline_days, constraints.budget
            return Candidate(
                chosen,
                p,
                slow_d,
                slow_c,
                None if deadline is None else slow_d <= deadline,
                None if budget is None else slow_c <= budget,
            )

        order = np.lexsort((f["targets"] + f["drafters"], f["cost"], f["days"]))
        front = tuple(candidate(int(k)) for k in order)
        # Every plan trains the same tokens, so the most tokens per unit of cost is the
        # cheapest plan of the feasible set.
        cheapest, fastest = front[-1], front[0]
        return Result(
            evaluated,
            self.feasible,
            front,
            cheapest if constraints.deadline_days is not None else None,
            fastest if constraints.budget is not None else None,
            cheapest,
            view.unit,
            rejected=rejected,
            constraints=constraints,
            prices=view,
            borrowed_prices=borrowed,
            evaluated_after_pruning=computed,
            modes=space.modes,
            topologies=space.topologies,
            topology_wins=self._wins(),
            precision=precision,
            targets_lacking_precision=lacking,
        )


def default_space(
    plan: Plan, catalog: Catalog, gpus: tuple[str, ...] | None = None, **limits: Any
) -> Space:
    """All GPU types with a price (or the ones given) for both roles."""
    if gpus is None:
        view = prices(plan, dict(catalog.gpus), tuple(catalog.gpus))
        gpus = tuple(k for k in catalog.gpus if view.per_hour(k) is not None)
    gpus = tuple(catalog.key(name, "search.gpus") for name in gpus)  # 'B200' is b200
    # The plan's own mode unless the search is told which modes to evaluate.
    limits["modes"] = tuple(limits.get("modes") or (plan.workload.mode,))
    # Its own topology likewise.
    limits["topologies"] = tuple(limits.get("topologies") or (plan.workload.topology,))
    return Space(target_gpus=gpus, drafter_gpus=gpus, **limits)
