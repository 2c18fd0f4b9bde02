"""The projection: one plan in, every figure the planner shows out.

plan -> resolve (names, rules) -> rates (per GPU, per role, with ranges) -> pipeline inputs
-> flow of the plan's split (and of the low / high rates) -> memory -> economics ->
diagnostics -> Projection.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field, replace
from typing import Any

from ..basics import recipe
from ..inputs.catalog import Catalog
from ..inputs.hardware import Gpu
from ..inputs.plan import LAUNCH_RECEIVE, OFFLINE_LAUNCH_FORMATS, Plan, launch_receive
from ..inputs.targets import TargetModel
from ..physics import store
from ..physics.decode import maturity
from ..physics.footprint import MemoryFit
from ..physics.memory import drafter_memory, target_memory
from ..physics.pipeline import (
    RECEIVE_NAMES,
    Flow,
    PipelineInputs,
    bottleneck,
    flow,
    path_name,
    pipeline_inputs,
    splits,
    tp_efficiency,
)
from ..physics.roofline import MOE_EFFICIENCY_FACTOR, Roofline, default_efficiency, target_roofline
from ..physics.work import DrafterWork, TargetWork
from . import figures
from .cost import Prices, prices, probe_gpu_hours
from .diagnostics import (
    Diagnostic,
    anchors_check,
    decode_maturity_checks,
    idle_check,
    link_check,
    maturity_checks,
    measurement_checks,
    memory_checks,
    range_note,
)
from .economics import Economics, RolePrices, billed, break_even_price_ratio, economics
from .offline import Offline, OfflineRanges, offline, offline_checks, run, stored
from .phases import (
    Phase,
    Regeneration,
    Total,
    regenerate_phase,
    regeneration,
    total,
    training_phases,
)
from .rates import RateModel, RoleRate, engine, measured_implied, rates
from .resolve import Resolved, resolve
from .scenarios import HIGH, LINK_SHARE, LOW, Dim, Scenario, label, link_dim, memory_band

__all__ = [
    "Link",
    "PlanScenarios",
    "Projection",
    "Ranges",
    "RoleProjection",
    "Roofline",
    "break_even",
    "link_scaled",
    "link_share",
    "plan_inputs",
    "project",
    "project_resolved",
    "target_roofline",
]


@dataclass(frozen=True, slots=True)
class RoleProjection:
    role: str
    gpu: str
    gpu_name: str
    count: int
    tp: int
    per_gpu_tokens_per_s: float  # one GPU on its own, before TP / data-parallel scaling
    capacity_tokens_per_s: float
    capacity_range: tuple[float, float]
    utilization: float | None
    efficiency: float  # achieved share of the GPU's dense bf16 peak
    default_efficiency: float
    source: str  # "measured" or "estimated"
    basis: str
    limit: str  # "compute" or "memory"
    scaling_efficiency: float  # tensor-parallel (target) or data-parallel (drafter)
    memory: MemoryFit
    flop: float  # per token (target) or per sample (drafter)
    spec: Gpu
    rate: RoleRate

    @property
    def replicas(self) -> int:
        return self.count // self.tp

    def to_json(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu,
            "gpu_name": self.gpu_name,
            "count": self.count,
            "tp": self.tp,
            "replicas": self.replicas,
            "capacity_tokens_per_s": self.capacity_tokens_per_s,
            "capacity_tokens_per_s_range": list(self.capacity_range),
            "per_gpu_tokens_per_s": self.per_gpu_tokens_per_s,
            "per_gpu_tokens_per_s_range": [self.rate.low_tokens_per_s, self.rate.high_tokens_per_s],
            "readings": [
                {"name": r.name, "per_gpu_tokens_per_s": r.tokens_per_s, "why": r.why}
                for r in self.rate.readings
            ],
            "utilization": self.utilization,
            "efficiency": self.efficiency,
            "default_efficiency": self.default_efficiency,
            "source": self.source,
            "basis": self.basis,
            "limit": self.limit,
            "scaling_efficiency": self.scaling_efficiency,
            "memory_gb_needed": self.memory.needed_gb,
            "memory_gb_needed_range": list(self.memory.needed_range_gb),
            "memory_gb_available": self.memory.available_gb,
            "memory_gb_items": dict(self.memory.items_gb),
            "fits": self.memory.fits,
            "fits_central": self.memory.fits_central,
        }


@dataclass(frozen=True, slots=True)
class Link:
    """The hidden-state path of the plan's split."""

    tokens_per_s: float  # capacity
    description: str
    crossing_share: float  # share of traffic that leaves its node
    nodes: int  # nodes the plan occupies


@dataclass(frozen=True, slots=True)
class Ranges:
    """Low and high ends of the headline figures, from the low and high per-GPU rates.
    Equal ends mean the figure rests on measurements only."""

    tokens_per_s: tuple[float, float]
    days: tuple[float, float]
    total_cost: tuple[float, float] | None
    total_cost_usd: tuple[float, float] | None
    widest: str | None  # the role whose rate range moves days most
    widest_days: tuple[float, float] | None
    # The range of days of each role whose rate alone moves them (PlanScenarios.role_span),
    # the widest first.
    role_days: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    # The scenarios of the slow end (fewest tokens/s) and of the fast end; named on demand
    # (naming them costs pipeline runs a keystroke need not pay for).
    slow_at: Scenario = field(default_factory=dict)
    fast_at: Scenario = field(default_factory=dict)
    scenarios: PlanScenarios | None = None

    @property
    def slow_scenario(self) -> str:
        return self.scenarios.label(self.slow_at) if self.scenarios else ""

    @property
    def fast_scenario(self) -> str:
        return self.scenarios.label(self.fast_at) if self.scenarios else ""

    def to_json(self) -> dict[str, Any]:
        return {
            "tokens_per_s": list(self.tokens_per_s),
            "days": list(self.days),
            "total_cost": list(self.total_cost) if self.total_cost else None,
            "total_cost_usd": list(self.total_cost_usd) if self.total_cost_usd else None,
            "tokens_per_s_scenarios": [self.slow_scenario, self.fast_scenario],
            "days_scenarios": [self.fast_scenario, self.slow_scenario],
            "total_cost_scenarios": [self.fast_scenario, self.slow_scenario],
        }


@dataclass(frozen=True, slots=True)
class PlanScenarios:
    """One plan's figures under any scenario (scenarios.py): its rates' models, the link
    kinds it uses, and what turns tokens/s into days and cost. Throughput is monotone in
    every factor of every dimension (higher rates and faster links never slow the
    pipeline), so a plan's own extremes are corners: its slowest rates and slowest links."""

    dims: Mapping[str, Dim]
    target: RateModel
    drafter: RateModel
    links: tuple[str, str]  # link dimension keys of the target and drafter GPUs
    resolved: Resolved
    central: PipelineInputs
    target_work: TargetWork
    total_tokens: float
    role_prices: RolePrices
    billed: tuple[int, int]
    # What the offline run under a scenario needs besides (offline.run).
    tokens_per_epoch: float = 0.0
    stored_bytes_per_token: float = 0.0
    in_usd: bool = False
    units: tuple[int, int] = (1, 1)
    memo: dict[tuple[str | None, ...], float] = field(default_factory=dict)
    offline_memo: dict[tuple[str | None, ...], tuple[float, float | None]] = field(
        default_factory=dict
    )
    gpus: dict[tuple[str, float], Gpu] = field(default_factory=dict)  # link-scaled copies

    def inputs(self, s: Scenario, transport: str | None = None) -> PipelineInputs:
        r = self.resolved
        t_share, d_share = (link_share(key, s.get(key)) for key in self.links)
        return plan_inputs(
            r,
            self.target_work,
            self.target.rate(s),
            self.drafter.rate(s),
            self._scaled("target", r.target_gpu, t_share),
            self._scaled("drafter", r.drafter_gpu, d_share),
            transport=transport,
        )

    def offline_capacities(self, s: Scenario) -> tuple[float, float]:
        """The offline run's capture and training capacities under a scenario: the
        targets', and the drafters' reading from storage (no Mooncake fetch wait; storage's
        own read bound is applied in offline.run)."""
        plan = self.resolved.plan
        T, D = plan.target.count, plan.drafter.count
        f = self.flow(s)
        disk = f if plan.workload.transport == "direct" else flow(self.inputs(s, "direct"), T, D)
        return float(f.target_tokens_per_s), float(disk.drafter_tokens_per_s)

    def offline_run(self, s: Scenario) -> tuple[float, float | None]:
        """The offline run's days and cost (in the plan's cost unit) under a scenario."""
        key = tuple(s.get(k) for k in self.dims)
        found = self.offline_memo.get(key)
        if found is None:
            plan = self.resolved.plan
            capture, train = self.offline_capacities(s)
            o = run(
                plan,
                self.stored_bytes_per_token,
                self.tokens_per_epoch,
                plan.target.count,
                plan.drafter.count,
                capture,
                train,
                self.resolved.drafter_gpu.gpus_per_node,
                self.role_prices,
                self.in_usd,
                self.billed,
                self.units,
            )
            found = (float(o.days), None if o.cost is None else float(o.cost))
            self.offline_memo[key] = found
        return found

    def run_days(self, s: Scenario) -> float:
        """The days of the plan's own mode under a scenario (the offline run's offline)."""
        if self.resolved.plan.workload.mode == "offline":
            return self.offline_run(s)[0]
        return self.days(s)

    def _scaled(self, role: str, gpu: Gpu, share: float) -> Gpu:
        if (role, share) not in self.gpus:
            self.gpus[(role, share)] = link_scaled(gpu, share)
        return self.gpus[(role, share)]

    def flow(self, s: Scenario) -> Flow:
        plan = self.resolved.plan
        return flow(self.inputs(s), plan.target.count, plan.drafter.count)

    def tokens_per_s(self, s: Scenario) -> float:
        key = tuple(s.get(k) for k in self.dims)  # this plan's part of the scenario
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = float(self.flow(s).tokens_per_s)
        return found

    def economics(self, s: Scenario) -> Economics:
        plan = self.resolved.plan
        return economics(
            self.tokens_per_s(s),
            self.total_tokens,
            plan.target.count,
            plan.drafter.count,
            self.role_prices,
            *self.billed,
        )

    def days(self, s: Scenario) -> float:
        return self.total_tokens / self.tokens_per_s(s) / 86_400

    def role_span(self, role: str) -> tuple[Scenario, Scenario]:
        """What a role's rate alone moves: its slow and its fast extreme (every dimension of
        its rate at once), every other dimension central. The one range of a role: the
        projection's narrowing note and the tornado's rate bars both read it."""
        model = self.target if role == "target" else self.drafter
        return model.extreme(slow=True), model.extreme(slow=False)

    def extreme(self, slow: bool) -> dict[str, str]:
        """The corner with this plan's fewest (or most) tokens/s: each rate at its own
        extreme, every link at its slow (or fast) end."""
        end = LOW if slow else HIGH
        return {
            **self.target.extreme(slow),
            **self.drafter.extreme(slow),
            **{key: end for key in self.links},
        }

    def binding(self, s: Scenario, value: Any) -> tuple[str, ...]:
        """The dimensions of `s` whose value matters: moving one alone to any other value
        changes `value(scenario)`. Labels name only these."""
        base = value(s)
        keys = []
        for key in s:
            dim = self.dims.get(key)
            if dim is None:
                continue
            if any(
                not _same(value({**s, key: other}), base) for other in dim.values if other != s[key]
            ):
                keys.append(key)
        return tuple(keys)

    def label(self, s: Scenario) -> str:
        keys, held = self.binding(s, self.tokens_per_s), self.floors(s)
        return "; ".join([label(s, self.dims, keys), *held] if keys or not held else held)

    def floors(self, s: Scenario) -> list[str]:
        """The roles held at what they are known to reach (a kept-up bound) in `s`."""
        gpus = (self.resolved.target_gpu, self.resolved.drafter_gpu)
        return [
            f"the {gpu.name} {role} held at the {model.floor:,.0f} tok/s it kept up with"
            for role, model, gpu in (
                ("target", self.target, gpus[0]),
                ("drafter", self.drafter, gpus[1]),
            )
            if model.floor > 0 and model.rate(s) == model.floor
        ]


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def link_share(key: str, value: str | None) -> float:
    """A link dimension's share of the catalog figure under a scenario's value."""
    low, high, _ = LINK_SHARE[key.split(":", 1)[1]]
    return low if value == LOW else high if value == HIGH else 1.0


def link_scaled(gpu: Gpu, share: float) -> Gpu:
    """The GPU with its link at `share` of the catalog figure (itself at 1)."""
    if share == 1.0:
        return gpu
    return gpu.model_copy(
        update={"link": gpu.link.model_copy(update={"gb_per_s": gpu.link.gb_per_s * share})}
    )


@dataclass(frozen=True, slots=True)
class Projection:
    plan: Plan
    resolved: Resolved
    target_model: TargetModel
    layer_ids: tuple[int, ...]
    drafter_params: int
    target_work: TargetWork
    drafter_work: DrafterWork
    target: RoleProjection
    drafter: RoleProjection
    inputs: PipelineInputs
    flow: Flow
    link: Link
    link_utilization: float | None
    fits: bool
    tokens_per_s: float | None
    bottleneck: str | None  # "target", "drafter", "link"; None when it cannot run
    tokens_per_epoch: float
    days: float | None
    gpu_hours: float | None
    billed: tuple[int, int]  # GPUs paid for per role (whole rental units)
    total_cost: float | None
    cost_unit: str
    total_cost_usd: float | None
    energy_kwh: float | None
    prices: Prices
    marginal_target_tokens_per_s: float | None
    marginal_drafter_tokens_per_s: float | None
    ranges: Ranges | None
    narrowing: str | None  # the measurement that would narrow the range most
    diagnostics: tuple[Diagnostic, ...]
    assumptions: tuple[str, ...] = field(default=())
    scenarios: PlanScenarios | None = None  # the figures under any scenario (when it fits)
    # The offline run beside the online pipeline (when the plan fits), whichever the mode.
    offline: Offline | None = None
    store_memory: store.StoreMemory | None = None  # the Mooncake store in host memory
    # The whole job by phase (phases.py): regenerate (when on), capture (offline), train;
    # empty when the plan does not fit.
    regeneration: Regeneration | None = None
    phases: tuple[Phase, ...] = ()

    @property
    def total(self) -> Total | None:
        """Every phase summed: the whole job."""
        return total(self.phases) if self.phases else None

    @property
    def mode(self) -> str:
        return self.plan.workload.mode

    @property
    def run_days(self) -> float | None:
        """The days of the plan's own mode: the offline run's when it runs offline."""
        if self.mode == "offline":
            return self.offline.days if self.offline else None
        return self.days

    @property
    def run_cost(self) -> float | None:
        """The total cost of the plan's own mode (the offline run's when it runs offline)."""
        if self.mode == "offline":
            return self.offline.cost if self.offline else None
        return self.total_cost

    @property
    def job_days(self) -> float | None:
        """The days of the whole job the plan describes: its phases summed (regeneration
        when on, then the run of its own mode); None when it does not fit."""
        return self.total.days if self.total else None

    @property
    def job_cost(self) -> float | None:
        """The cost of the whole job, in the plan's cost unit (its phases summed)."""
        return self.total.cost if self.total else None

    @property
    def job_cost_per_million_tokens(self) -> float | None:
        """The whole job's cost per million tokens trained (every epoch's)."""
        tokens = self.tokens_per_epoch * self.epochs
        cost = self.job_cost
        return None if cost is None or not tokens else cost / tokens * 1e6

    @property
    def is_job(self) -> bool:
        """The whole job is more than the online pipeline: the plan runs offline or
        regenerates first, so its headline is the job's, not the pipeline's."""
        return self.mode == "offline" or self.regeneration is not None

    def _job_range(self, days: bool) -> tuple[float, float] | None:
        """The (low, high) of the job's days (or cost): the range of the run of its own
        mode plus, when the plan regenerates first, the regeneration phase at the fast and
        the slow end of its decode range (search's pessimistic figures add the same)."""
        if self.mode == "offline":
            off = self.offline.ranges if self.offline else None
            run = (off.days if days else off.cost) if off else None
        else:
            r = self.ranges
            run = (r.days if days else r.total_cost) if r else None
        if run is None or self.job_days is None or (not days and self.job_cost is None):
            return None
        low, high = sorted(run)
        regen = self.regeneration
        if regen is None:
            return low, high
        ends = [regenerate_phase(regen, self.prices, end) for end in (0, 1)]
        before = [ph.days if days else ph.cost for ph in ends]
        if before[0] is None or before[1] is None:
            return None
        return before[0] + low, before[1] + high

    @property
    def job_days_range(self) -> tuple[float, float] | None:
        return self._job_range(days=True)

    @property
    def job_cost_range(self) -> tuple[float, float] | None:
        return self._job_range(days=False)

    @property
    def warnings(self) -> tuple[str, ...]:
        return tuple(d.message for d in self.diagnostics)

    @property
    def unfit(self) -> Diagnostic | None:
        """The error that stops the plan running as written (its message is does_not_fit,
        its key the plan key to change); None when it fits."""
        return next((d for d in self.diagnostics if d.level == "error"), None)

    @property
    def does_not_fit(self) -> str | None:
        """Why the plan cannot run as written: its first error's message (a role out of GPU
        memory, offline data over storage.tb, the Mooncake store over host memory); None
        when it fits. The one rule `check` (exit 3), `launch`, the JSON, the comparisons,
        `project` and the app say."""
        return None if (d := self.unfit) is None else d.message

    @property
    def billed_gpus(self) -> int:
        """GPUs paid for, at least the GPUs used."""
        return sum(self.billed)

    @property
    def ktok_per_s(self) -> float | None:
        return None if self.tokens_per_s is None else self.tokens_per_s / 1e3

    @property
    def samples_per_s(self) -> float | None:
        if self.tokens_per_s is None:
            return None
        return self.tokens_per_s / self.plan.workload.avg_sample_tokens

    @property
    def epochs(self) -> int:
        return self.plan.workload.epochs

    @property
    def cost_per_epoch(self) -> float | None:
        return None if self.total_cost is None else self.total_cost / self.epochs

    @property
    def cost_per_million_tokens(self) -> float | None:
        """Total cost per million tokens trained (every epoch's), in the cost unit."""
        tokens = self.tokens_per_epoch * self.epochs
        return None if self.total_cost is None or not tokens else self.total_cost / tokens * 1e6

    @property
    def receive(self) -> str | None:
        """How the drafters receive hidden states (workload.receive), where the plan's
        transport has a receive mode (the Mooncake store); None device to device."""
        w = self.plan.workload
        return w.receive if w.transport == "mooncake" else None

    @property
    def hidden_state_bytes_per_s(self) -> float | None:
        if self.tokens_per_s is None:
            return None
        return self.tokens_per_s * self.target_work.hidden_state_bytes_per_token

    def to_json(self) -> dict[str, Any]:
        """The JSON contract of `dflash-plan project --json` (extend, never rename)."""
        return {
            "name": self.plan.name,
            "target_model": self.target_model.name,
            **figures.json_figures(self),
            "ranges": self.ranges.to_json() if self.ranges else None,
            "narrowing": self.narrowing,
            "warnings": list(self.warnings),
            "diagnostics": [d.to_json() for d in self.diagnostics],
            "assumptions": list(self.assumptions),
            "target": {
                **self.target.to_json(),
                "flop_per_token": self.target.flop,
                "captured_layer_ids": list(self.layer_ids),
                "layers_run": self.target_work.layers_run,
            },
            "drafter": {
                **self.drafter.to_json(),
                "flop_per_sample": self.drafter.flop,
                "trainable_params": self.drafter_params,
                "anchors": self.drafter_work.anchors,
            },
            "link": {
                "description": self.link.description,
                "transport": self.plan.workload.transport,
                # workload.receive where the path has one (the Mooncake store), else None.
                "receive": self.receive,
                "capacity_tokens_per_s": self.link.tokens_per_s,
                "bytes_per_token": self.target_work.hidden_state_bytes_per_token,
                "load_bytes_per_s": self.hidden_state_bytes_per_s,
                "utilization": self.link_utilization,
                "crossing_share": self.link.crossing_share,
                "nodes": self.link.nodes,
            },
            "marginal": {
                "target_gpus_added": self.plan.target.tp,
                "target_tokens_per_s": self.marginal_target_tokens_per_s,
                "drafter_gpus_added": 1,
                "drafter_tokens_per_s": self.marginal_drafter_tokens_per_s,
            },
            "prices": {
                key: {"usd_per_gpu_hour": p.usd_per_gpu_hour, "ratio": p.ratio, "source": p.source}
                for key, p in self.prices.by_gpu.items()
            },
            "reference_gpu": self.prices.reference_gpu,
            "mode": self.mode,
            "storage": self.offline.to_json(self.mode) if self.offline else None,
            "store_memory": self.store_memory.to_json() if self.store_memory else None,
            "regeneration": self.regeneration.to_json() if self.regeneration else None,
            "phases": [p.to_json() for p in self.phases],
            "total": (t := self.total) and t.to_json(self.cost_unit),
        }


def project(plan: Plan, catalog: Catalog, rented: tuple[int, int] | None = None) -> Projection:
    """Every figure of a plan. Raises PlanError for plans that cannot be evaluated.
    `rented`: the GPUs a launch rents per role (targets, drafters; e.g. the whole nodes of
    its allocation), billed where more than the plan's rental units bill."""
    return project_resolved(resolve(plan, catalog), catalog, rented)


def _replica(r: Resolved, tw: TargetWork, per_gpu_tokens_per_s: float) -> float:
    """One target replica's rate: tp GPUs less the time of TP all-reduces."""
    tp = r.plan.target.tp
    return (
        per_gpu_tokens_per_s
        * tp
        * tp_efficiency(r.target_gpu, tp, r.model.hidden, tw.layers_run, per_gpu_tokens_per_s)
    )


def plan_inputs(
    r: Resolved,
    tw: TargetWork,
    target_rate: float,
    drafter_rate: float,
    target_gpu: Gpu | None = None,
    drafter_gpu: Gpu | None = None,
    tp: int | None = None,
    transport: str | None = None,
) -> PipelineInputs:
    """The pipeline's inputs of a resolved plan at these per-GPU rates (and GPUs, TP and
    hidden-state path, when not the plan's own): the one assembly, for the projection, its
    scenarios, the offline run and search."""
    p = r.plan
    return pipeline_inputs(
        target_gpu or r.target_gpu,
        drafter_gpu or r.drafter_gpu,
        p.target.tp if tp is None else tp,
        target_rate,
        drafter_rate,
        hidden=r.model.hidden,
        layers_run=tw.layers_run,
        trainable_params=r.shape.trainable_params,
        batch_size=p.drafter.batch_size,
        sample_tokens=float(p.workload.avg_sample_tokens),
        hidden_state_bytes_per_token=tw.hidden_state_bytes_per_token,
        transport=transport or p.workload.transport,
        receive=p.workload.receive,
    )


def project_resolved(
    r: Resolved, catalog: Catalog, rented: tuple[int, int] | None = None
) -> Projection:
    plan, w = r.plan, r.plan.workload
    T, D, tp = plan.target.count, plan.drafter.count, plan.target.tp
    rt = rates(r, catalog)
    t, d, tw, dw = rt.target, rt.drafter, rt.target_work, rt.drafter_work
    central = plan_inputs(r, tw, t.tokens_per_s, d.tokens_per_s)
    f = flow(central, T, D)
    throughput = float(f.tokens_per_s)
    t_mem = replace(
        target_memory(r.model, tp, w.max_length, len(r.layer_ids), r.target_gpu.memory_gb),
        band=memory_band("target"),
    )
    # Memory peaks at the longest sample (its context states), not the average one.
    d_mem = replace(
        drafter_memory(
            r.shape, dw, float(w.max_length), plan.drafter.batch_size, D, r.drafter_gpu.memory_gb
        ),
        band=memory_band("drafter"),
    )
    fits = t_mem.fits and d_mem.fits

    tokens_per_epoch = float(w.samples) * w.avg_sample_tokens
    total_tokens = tokens_per_epoch * w.epochs
    view = prices(plan, r.gpus, plan.gpus_in_use(), catalog.offers)
    t_price, d_price = view.by_gpu[plan.target.gpu], view.by_gpu[plan.drafter.gpu]
    role_prices = RolePrices(
        view.per_hour(plan.target.gpu),
        view.per_hour(plan.drafter.gpu),
        t_price.usd_per_gpu_hour,
        d_price.usd_per_gpu_hour,
        r.target_gpu.tdp_w,
        r.drafter_gpu.tdp_w,
    )

    unit_t = view.by_gpu[plan.target.gpu].unit_gpus
    unit_d = view.by_gpu[plan.drafter.gpu].unit_gpus
    billed_t, billed_d = billed(T, D, r.same_gpu_type, unit_t, unit_d)
    if rented is not None:
        billed_t, billed_d = max(billed_t, rented[0]), max(billed_d, rented[1])
    assert t.model is not None and d.model is not None
    links = tuple(dict.fromkeys((r.target_gpu.link.kind, r.drafter_gpu.link.kind)))
    link_dims = {f"link:{kind}": link_dim(kind) for kind in links}
    dims = {dim.key: dim for dim in (*t.model.dims, *d.model.dims, *link_dims.values())}
    scen = PlanScenarios(
        dims,
        t.model,
        d.model,
        (f"link:{r.target_gpu.link.kind}", f"link:{r.drafter_gpu.link.kind}"),
        r,
        central,
        tw,
        total_tokens,
        role_prices,
        (billed_t, billed_d),
        tokens_per_epoch,
        stored(plan, r.model.hidden, len(r.layer_ids))[1],
        view.in_usd,
        (unit_t, unit_d),
    )
    slow_s, fast_s = scen.extreme(slow=True), scen.extreme(slow=False)
    low_f, high_f = scen.flow(slow_s), scen.flow(fast_s)

    def capacity_range(role: str) -> tuple[float, float]:
        key = f"{role}_tokens_per_s"
        return float(getattr(low_f, key)), float(getattr(high_f, key))

    def role(
        name: str,
        gpu: Gpu,
        count: int,
        role_tp: int,
        rate: RoleRate,
        cap: float,
        scaling: float,
        mem: MemoryFit,
        flop: float,
    ) -> RoleProjection:
        return RoleProjection(
            role=name,
            gpu=gpu.key,
            gpu_name=gpu.name,
            count=count,
            tp=role_tp,
            per_gpu_tokens_per_s=rate.tokens_per_s,
            capacity_tokens_per_s=cap,
            capacity_range=capacity_range(name),
            utilization=throughput / cap if fits else None,
            efficiency=rate.efficiency,
            default_efficiency=rate.default_efficiency,
            source=rate.source,
            basis=rate.basis,
            limit=rate.limit,
            scaling_efficiency=scaling,
            memory=mem,
            flop=flop,
            spec=gpu,
            rate=rate,
        )

    tp_scaling = central.replica_tokens_per_s / (t.tokens_per_s * tp)
    target = role(
        "target",
        r.target_gpu,
        T,
        tp,
        t,
        float(f.target_tokens_per_s),
        tp_scaling,
        t_mem,
        tw.flop_per_token,
    )
    drafter = role(
        "drafter",
        r.drafter_gpu,
        D,
        1,
        d,
        float(f.drafter_tokens_per_s),
        float(f.drafter_scaling),
        d_mem,
        dw.flop_per_sample,
    )

    diagnostics: list[Diagnostic] = []
    for role_name in ("target", "drafter"):
        measured = measured_implied(role_name, r, catalog)
        moe = role_name == "target" and r.model.is_moe
        defaults = {k: default_efficiency(role_name, r.gpus[k], moe) for k in measured}
        diagnostics += measurement_checks(role_name, dict(measured), r.gpus, defaults)
    diagnostics += memory_checks((r.target_gpu, t_mem), (r.drafter_gpu, d_mem))
    diagnostics += anchors_check(w.num_anchors, recipe.NUM_ANCHORS)
    store_mem = _store_memory(r)
    if store_mem.fits is False:
        diagnostics.append(
            Diagnostic(
                "store-memory",
                "workload.max_length",
                f"the Mooncake store needs {store_mem.node_gib:,.0f} GiB of host memory on its "
                f"busiest node ({store_mem.node_servers} capture server(s) x "
                f"{store_mem.segment_gib} GiB segment + {store_mem.local_buffer_gib:g} GiB buffer, "
                f"{store_mem.node_ranks} trainer rank(s) x {store_mem.rank_gib:,.1f} GiB, at "
                f"{w.max_length:,}-token samples of {store_mem.sample_bytes / 2**30:,.2f} GiB) "
                f"but the node has {store_mem.host_memory_gb:,.0f} GB: shorten max_length, "
                f"spread the targets over more nodes or use nodes with more RAM",
                {"node_gib": store_mem.node_gib, "host_memory_gb": store_mem.host_memory_gb},
                level="error",
            )
        )
    if w.transport == "direct" and plan.launch.format in ("specforge", "slurm", "speculators"):
        diagnostics.append(
            Diagnostic(
                "transport-differs-from-launch",
                "workload.transport",
                f"the projection assumes hidden states go device to device (your own pipeline), "
                f"but the {plan.launch.format} launch stages them through a Mooncake store, "
                f'whose measured ceilings are lower: set workload.transport = "mooncake" to '
                f"project the launched run",
                {"transport": w.transport, "launch_format": plan.launch.format},
            )
        )

    diagnostics += _receive_check(plan)

    if w.mode == "offline" and plan.launch.format not in OFFLINE_LAUNCH_FORMATS:
        # Say so rather than let a launch script of the online pipeline pass for the
        # offline run (the launch itself refuses, model/launch/common.py).
        diagnostics.append(
            Diagnostic(
                "mode-differs-from-launch",
                "workload.mode",
                f"workload.mode is offline, but the {plan.launch.format} launch cannot write "
                f"the offline run: launch it with --format specforge, speculators or slurm "
                f"(docs/launch.md, 'Offline mode')",
                {"mode": w.mode, "launch_format": plan.launch.format},
            )
        )
    econ: Economics | None = None
    off: Offline | None = None
    job: tuple[Phase, ...] = ()
    regen = regeneration(plan, r.model, r.gpus)
    ranges = narrowing = None
    marginal_t = marginal_d = None
    bneck = None
    if fits:
        bneck = bottleneck(f)
        econ = economics(throughput, total_tokens, T, D, role_prices, billed_t, billed_d)
        marginal_t = float(flow(central, T + tp, D).tokens_per_s) - throughput
        marginal_d = float(flow(central, T, D + 1).tokens_per_s) - throughput
        diagnostics += link_check(
            throughput, float(f.link_tokens_per_s), central.hidden.description
        )
        for side in (target, drafter):
            diagnostics += idle_check(
                side.role,
                side.count,
                side.tp,
                throughput / side.capacity_tokens_per_s,
                throughput,
                side.capacity_tokens_per_s,
                str(bneck),
            )
        ranges, narrowing = _ranges(
            r, scen, t, d, low_f, high_f, total_tokens, role_prices, (billed_t, billed_d)
        )
        ranges = replace(ranges, slow_at=slow_s, fast_at=fast_s, scenarios=scen)
        if billed_t + billed_d > T + D:
            diagnostics.append(
                _idle_billed(
                    r,
                    central,
                    billed_t + billed_d - (T + D),
                    billed_t,
                    billed_d,
                    throughput,
                    {plan.target.gpu: unit_t, plan.drafter.gpu: unit_d},
                )
            )
        for rate in (t, d):
            diagnostics += range_note(rate)
        # Offline, the drafters read from storage, not through the Mooncake store: their
        # capacity without its fetch wait (storage's own bound is applied in offline()).
        from_disk = (
            f
            if w.transport == "direct"
            else flow(plan_inputs(r, tw, t.tokens_per_s, d.tokens_per_s, transport="direct"), T, D)
        )

        off = offline(
            plan,
            r.model.hidden,
            len(r.layer_ids),
            tokens_per_epoch,
            float(f.target_tokens_per_s),
            float(from_disk.drafter_tokens_per_s),
            throughput,
            r.drafter_gpu.gpus_per_node,
            role_prices,
            view.unit,
            view.in_usd,
            (billed_t, billed_d),
            (unit_t, unit_d),
        )
        off = replace(off, ranges=_offline_ranges(scen, slow_s, fast_s))
        diagnostics += offline_checks(off, w.mode)
        job = training_phases(
            w.mode,
            float(econ.days),
            billed_t + billed_d,
            None if econ.total_cost is None else float(econ.total_cost),
            None if econ.total_cost_usd is None else float(econ.total_cost_usd),
            f"{T} x {r.target_gpu.name} + {D} x {r.drafter_gpu.name}",
            off,
            (role_prices.target_usd_per_hour, role_prices.drafter_usd_per_hour),
            (r.target_gpu.name, r.drafter_gpu.name),
        )
        if regen is not None:
            job = (regenerate_phase(regen, view), *job)
    for rate in (t, d):
        entry = rate.gpu.maturity_of(rate.role, engine(rate.role, plan.launch.format))
        diagnostics += maturity_checks(rate, entry, catalog.today)
    if regen is not None:
        regen_gpu = r.gpus[regen.gpu]
        diagnostics += decode_maturity_checks(
            regen_gpu, maturity(regen_gpu, regen.engine), catalog.today
        )
    for key in plan.gpus_in_use():
        if view.per_hour(key) is None:
            diagnostics.append(
                Diagnostic(
                    "no-price",
                    f"cost.ratio.{key}",
                    f"no price for {r.gpus[key].name}: set cost.usd_per_gpu_hour.{key} or "
                    f"cost.ratio.{key}",
                    {"gpu": key},
                )
            )
    for key in plan.gpus_in_use():
        offer = view.by_gpu[key].offer
        if offer is not None and catalog.today is not None and offer.stale(catalog.today):
            age = offer.age_days(catalog.today)
            when = (
                f"{age} days old ({offer.date})"
                if age is not None
                else f"dated after today ({offer.date})"
                if offer.future(catalog.today)
                else "undated"
            )
            diagnostics.append(
                Diagnostic(
                    "price-stale",
                    "cost.provider",
                    f"the {offer.provider} {offer.kind} price for {r.gpus[key].name} "
                    f"(${offer.usd_per_gpu_hour:.2f}/GPU-h) is {when}: check the current rate "
                    f"card or set cost.usd_per_gpu_hour.{key}",
                    {"gpu": key, "provider": offer.provider, "date": offer.date},
                )
            )
    if r.model.is_moe and not plan.calibration.target:
        diagnostics.append(
            Diagnostic(
                "moe-prefill",
                "calibration.target",
                f"{r.model.name} is a MoE model: its prefill is estimated at "
                f"{MOE_EFFICIENCY_FACTOR:.2f}x the dense default efficiency (fitted on MoE "
                f"training; MoE prefill at short prompts has been reported as low as 15-20 % of "
                f"peak); measure the target rate",
                {"model": r.model.key},
            )
        )

    model = r.model
    assumptions = (
        f"target {model.name}: {model.total_params / 1e9:.2f} B parameters; the capture server "
        f"runs all {tw.layers_run} layers (captured {list(r.layer_ids)})",
        f"drafter: {w.draft_layers} layers, {r.shape.trainable_params / 1e9:.2f} B trainable, "
        f"block {r.block_size}, {dw.anchors} anchors per sample = {dw.positions:,} drafted "
        f"positions (recipe: {recipe.NUM_ANCHORS} anchors)",
        f"samples {w.samples:,} x {w.avg_sample_tokens:,} tokens = "
        f"{tokens_per_epoch / 1e9:.3f} G tokens per epoch, {w.epochs} epochs",
        f"hidden states {tw.hidden_state_bytes_per_token / 1e3:.1f} KB per token "
        f"({len(r.layer_ids)} layers x {model.hidden} x 2 bytes), "
        + path_name(w.transport, w.receive),
    )
    return Projection(
        plan=plan,
        resolved=r,
        target_model=model,
        layer_ids=r.layer_ids,
        drafter_params=r.shape.trainable_params,
        target_work=tw,
        drafter_work=dw,
        target=target,
        drafter=drafter,
        inputs=central,
        flow=f,
        link=Link(
            float(f.link_tokens_per_s),
            _link_description(r, f),
            float(f.crossing_share),
            int(f.nodes),
        ),
        link_utilization=throughput / float(f.link_tokens_per_s) if fits else None,
        fits=fits,
        tokens_per_s=throughput if fits else None,
        bottleneck=bneck,
        tokens_per_epoch=tokens_per_epoch,
        days=float(econ.days) if econ else None,
        gpu_hours=float(econ.gpu_hours) if econ else None,
        billed=(billed_t, billed_d),
        total_cost=float(econ.total_cost) if econ and econ.total_cost is not None else None,
        cost_unit=view.unit,
        total_cost_usd=(
            float(econ.total_cost_usd) if econ and econ.total_cost_usd is not None else None
        ),
        energy_kwh=float(econ.energy_kwh) if econ else None,
        prices=view,
        marginal_target_tokens_per_s=marginal_t,
        marginal_drafter_tokens_per_s=marginal_d,
        ranges=ranges,
        narrowing=narrowing,
        diagnostics=tuple(diagnostics),
        assumptions=assumptions,
        scenarios=scen if fits else None,
        offline=off,
        store_memory=store_mem,
        regeneration=regen,
        phases=job,
    )


def _receive_check(plan: Plan) -> list[Diagnostic]:
    """The plan projects a receive mode its launch format does not run (LAUNCH_RECEIVE):
    e.g. pinned receive, SpecForge's default since September 2026, under a launch that
    installs specforge 0.2.0, which receives into pageable host memory."""
    w, fmt = plan.workload, plan.launch.format
    launched = launch_receive(plan)
    if w.transport != "mooncake" or w.mode != "online" or launched in (None, w.receive):
        return []
    return [
        Diagnostic(
            "receive-differs-from-launch",
            "workload.receive",
            f"the projection assumes {RECEIVE_NAMES[w.receive]} (workload.receive = "
            f"{w.receive}), but the {fmt} launch runs {RECEIVE_NAMES[launched]}: "
            f"{LAUNCH_RECEIVE[fmt][1]}; set workload.receive = "
            f'"{launched}" to project the launched run',
            {"receive": w.receive, "launch_receive": launched, "launch_format": fmt},
        )
    ]


def store_sizing(r: Resolved) -> tuple[str, int]:
    """Whose sizing the launched run's Mooncake store follows ("specforge" or
    "speculators") and one max-length sample's features, bytes: what the store memory of
    any split of the plan needs besides its counts (the search sizes every split)."""
    plan = r.plan
    fmt = "speculators" if plan.launch.format == "speculators" else "specforge"
    return fmt, store.sample_feature_bytes(
        r.model.hidden, len(r.layer_ids), plan.workload.max_length
    )


def _store_memory(r: Resolved) -> store.StoreMemory:
    """The Mooncake store of the launched run, sized by the functions the launch scripts
    use: SpecForge's segments hold the producer's high watermark spread over the capture
    servers; speculators' hold every trainer rank's batches in flight."""
    plan = r.plan
    fmt, sample = store_sizing(r)
    return store.store_memory(
        fmt,
        sample,
        plan.drafter.batch_size,
        (plan.target.count, plan.drafter.count, plan.target.tp),
        (r.target_gpu.gpus_per_node, r.drafter_gpu.gpus_per_node),
        r.same_gpu_type,
        {"target": r.target_gpu.host_memory_gb, "drafter": r.drafter_gpu.host_memory_gb},
    )


def _link_description(r: Resolved, f: Flow) -> str:
    w = r.plan.workload
    path = path_name(w.transport, w.receive, short=True)
    share = float(f.crossing_share)
    if share == 0:
        return f"{path}, inside one node"
    gbps = min(r.target_gpu.network_gbps_per_gpu, r.drafter_gpu.network_gbps_per_gpu)
    return (
        f"{path}; network {gbps:g} Gb/s per GPU, {share:.0%} of traffic across {int(f.nodes)} nodes"
    )


PROBE_MINUTES = 10


def _idle_billed(
    r: Resolved,
    central: PipelineInputs,
    idle: int,
    billed_t: int,
    billed_d: int,
    throughput: float,
    units: dict[str, int],
) -> Diagnostic:
    """GPUs paid for but unused; with one GPU type, the split of all of them that runs
    fastest (one vectorised pipeline call)."""
    plan = r.plan
    total = billed_t + billed_d
    rented = ", ".join(f"{r.gpus[k].name} in units of {u}" for k, u in units.items() if u > 1)
    rented = rented or "the launch's nodes"  # no unit bills more: a launch's allocation
    message = (
        f"{idle} GPU(s) billed but unused ({rented}): the cost counts "
        f"{total} GPUs for the {plan.target.count + plan.drafter.count} used"
    )
    values: dict[str, Any] = {"billed_gpus": total, "idle_gpus": idle}
    if r.same_gpu_type:
        import numpy as np

        sweep = splits(central, total, plan.target.tp)
        if sweep is not None:
            targets, f = sweep
            tokens = np.asarray(f.tokens_per_s, float)
            best = int(targets[int(np.argmax(tokens))])
            gain = float(tokens.max()) / throughput
            message += (
                f"; using all {total}: {best} targets + {total - best} drafters, "
                f"{gain:.2f}x the throughput for the same bill"
            )
            values.update(best_targets=best, best_drafters=total - best, speedup=gain)
    return Diagnostic("billed-idle", "target.count", message, values)


def _ranges(
    r: Resolved,
    scen: PlanScenarios,
    t: RoleRate,
    d: RoleRate,
    low_f: Flow,
    high_f: Flow,
    total_tokens: float,
    role_prices: RolePrices,
    billed_counts: tuple[int, int],
) -> tuple[Ranges, str | None]:
    plan = r.plan
    T, D = plan.target.count, plan.drafter.count
    lo_tok, hi_tok = float(low_f.tokens_per_s), float(high_f.tokens_per_s)
    slow = economics(lo_tok, total_tokens, T, D, role_prices, *billed_counts)
    fast = economics(hi_tok, total_tokens, T, D, role_prices, *billed_counts)

    def pair(attr: str) -> tuple[float, float] | None:
        a, b = getattr(fast, attr), getattr(slow, attr)
        return None if a is None else (float(a), float(b))

    # Which role's uncertainty moves the days most: vary one, hold the other central.
    spans: dict[str, tuple[float, float]] = {}
    for name, rate in (("target", t), ("drafter", d)):
        if rate.low_tokens_per_s == rate.high_tokens_per_s:
            continue
        ends = [scen.days(s) for s in scen.role_span(name)]
        spans[name] = (min(ends), max(ends))
    ranked = sorted(
        (k for k in spans if spans[k][1] - spans[k][0] > 1e-9),
        key=lambda k: spans[k][0] - spans[k][1],
    )
    widest = ranked[0] if ranked else None
    probes = []
    for name in ranked:
        rate = t if name == "target" else d
        gpu_hours = probe_gpu_hours(plan, rate.gpu, name, PROBE_MINUTES)
        per_hour = (
            role_prices.target_usd_per_hour
            if name == "target"
            else role_prices.drafter_usd_per_hour
        )
        price = f", about ${gpu_hours * per_hour:,.2f}" if per_hour else ""
        probes.append(
            f"the {rate.gpu.name} {name} (dflash-plan probe --gpu {rate.gpu.key} "
            f"--role {name}: {gpu_hours:.2f} GPU-hours{price}); its rate alone "
            f"moves the finish between {spans[name][0]:.1f} and "
            f"{spans[name][1]:.1f} days"
        )
    narrowing = ("measure " + "; then ".join(probes)) if probes else None
    return Ranges(
        tokens_per_s=(lo_tok, hi_tok),
        days=(float(fast.days), float(slow.days)),
        total_cost=pair("total_cost"),
        total_cost_usd=pair("total_cost_usd"),
        widest=widest,
        widest_days=spans.get(widest) if widest else None,
        role_days={name: spans[name] for name in ranked},
    ), narrowing


def _offline_ranges(scen: PlanScenarios, slow_s: Scenario, fast_s: Scenario) -> OfflineRanges:
    """The offline run at the online ranges' corners (its days and cost are monotone in
    both capacities, which are monotone in every rate and link), and each role's
    role_span."""
    run_at = scen.offline_run
    (fast_days, fast_cost), (slow_days, slow_cost) = run_at(fast_s), run_at(slow_s)
    spans: dict[str, tuple[float, float]] = {}
    for name in ("target", "drafter"):
        ends = [run_at(s)[0] for s in scen.role_span(name)]
        if max(ends) - min(ends) > 1e-9:
            spans[name] = (min(ends), max(ends))
    return OfflineRanges(
        (fast_days, slow_days),
        None if fast_cost is None or slow_cost is None else (fast_cost, slow_cost),
        dict(sorted(spans.items(), key=lambda kv: kv[1][0] - kv[1][1])),
    )


def break_even(
    p: Projection,
    baseline: Projection,
    days: float | None = None,
    baseline_days: float | None = None,
) -> dict[str, float] | None:
    """Price ratio(s) to the reference GPU at which p costs what the baseline costs; under
    a scenario, at the days the two plans take in it (a plan's cost is in proportion to
    its days)."""
    if p.days is None:
        return None
    days = p.days if days is None else days
    scale = 1.0 if baseline_days is None or baseline.days is None else baseline_days / baseline.days
    ref_usd = p.prices.by_gpu[p.prices.reference_gpu].usd_per_gpu_hour
    if (
        not p.prices.in_usd
        and baseline.cost_unit == p.cost_unit
        and baseline.total_cost is not None
    ):
        base_ref_hours = baseline.total_cost * scale  # both in reference-GPU-hours
    elif baseline.total_cost_usd is not None and ref_usd:
        base_ref_hours = baseline.total_cost_usd * scale / ref_usd
    else:
        return None
    plan, ref = p.plan, p.prices.reference_gpu
    return break_even_price_ratio(
        base_ref_hours,
        days * 24,
        p.billed[0],
        p.billed[1],
        p.prices.by_gpu[plan.target.gpu].ratio,
        p.prices.by_gpu[plan.drafter.gpu].ratio,
        plan.target.gpu == ref,
        plan.drafter.gpu == ref,
        plan.target.gpu == plan.drafter.gpu,
    )
