"""The projection: one plan in, every figure the planner shows out, through named stages
(stages.py), each a function of the frozen results before it:

plan -> resolve (names, rules) -> rates (per GPU, per role, with ranges) -> pipeline (the
split's flow and memory) -> money (prices, billing) -> spread (the plan under its
scenarios) -> run (economics, ranges, the offline run) -> job (the plan's own mode, decided
once: job.py) -> diagnostics (diagnose.py) -> Projection.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from typing import Any

from ..basics import recipe
from ..basics.units import BYTES_PER_GB
from ..inputs.catalog import Catalog
from ..inputs.hardware import Gpu
from ..inputs.plan import Plan
from ..inputs.targets import TargetModel
from ..physics import store
from ..physics.colocated import time_shares
from ..physics.families import DEFAULT_FAMILY, FAMILIES
from ..physics.footprint import MemoryFit
from ..physics.pipeline import Flow, PipelineInputs, path_name
from ..physics.roofline import Roofline, target_roofline
from ..physics.work import DrafterWork, TargetWork
from . import figures
from .acceptance import Acceptance, acceptance_stage
from .checkpoints import Checkpoints, checkpoints, with_preemptions
from .cost import Prices
from .diagnose import diagnose
from .diagnostics import Diagnostic
from .economics import break_even_price_ratio
from .job import Job, job_stage
from .offline import Offline
from .phases import Phase, Regeneration, Total, regeneration
from .plan_scenarios import PlanScenarios, Ranges, link_scaled, link_share, plan_inputs
from .rates import Rates, RoleRate, rates
from .resolve import Resolved, resolve
from .stages import (
    Money,
    Pipeline,
    Run,
    RunInputs,
    Spread,
    money_stage,
    pipeline_stage,
    run_stage,
    spread_stage,
    store_sizing,
)
from .topology import TopologyVerdict, topology_stage

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
    "store_sizing",
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
    # The plan's own job (job.py), decided once from its mode: what every view headlines.
    job: Job = field(kw_only=True)
    # What the training buys: tau, the serving speedup, the break-even (acceptance.py).
    acceptance: Acceptance = field(kw_only=True)
    # What the run of the plan's own mode is at any counts (stages.run_at): the split
    # curve's and search's one evaluation. None when the plan does not fit.
    run_inputs: RunInputs | None = field(default=None, kw_only=True)
    # Colocated against the best disaggregated split of the same GPUs (topology.py); None
    # when the plan cannot run both ways (two GPU types, offline).
    topology_verdict: TopologyVerdict | None = field(default=None, kw_only=True)
    # Checkpoints: size, rotation, interval, lost work, resume (checkpoints.py).
    checkpoints: Checkpoints = field(kw_only=True)

    @property
    def topology(self) -> str:
        return self.plan.workload.topology

    @property
    def time_shares(self) -> tuple[float, float] | None:
        """A colocated plan's share of each GPU's time on the target forward and on the
        drafter step; None disaggregated."""
        shares = time_shares(self.flow)
        return None if shares is None else (float(shares[0]), float(shares[1]))

    @property
    def total(self) -> Total | None:
        """Every phase summed: the whole job."""
        return self.job.total

    @property
    def mode(self) -> str:
        return self.job.mode

    @property
    def run_days(self) -> float | None:
        """The days of the plan's own mode: the offline run's when it runs offline."""
        return self.job.run_days

    @property
    def run_cost(self) -> float | None:
        """The total cost of the plan's own mode (the offline run's when it runs offline)."""
        return self.job.run_cost

    @property
    def job_days(self) -> float | None:
        """The days of the whole job the plan describes: its phases summed (regeneration
        when on, then the run of its own mode); None when it does not fit."""
        return self.job.days

    @property
    def job_cost(self) -> float | None:
        """The cost of the whole job, in the plan's cost unit (its phases summed)."""
        return self.job.cost

    @property
    def job_cost_per_million_tokens(self) -> float | None:
        """The whole job's cost per million tokens trained (every epoch's)."""
        tokens = self.tokens_per_epoch * self.epochs
        cost = self.job_cost
        return None if cost is None or not tokens else cost / tokens * 1e6

    @property
    def marginal_target_tokens_per_s(self) -> float | None:
        """The job's rate gained with one more target replica (job.py)."""
        return self.job.more_target_tokens_per_s

    @property
    def marginal_drafter_tokens_per_s(self) -> float | None:
        """The job's rate gained with one more drafter GPU (job.py)."""
        return self.job.more_drafter_tokens_per_s

    @property
    def job_days_range(self) -> tuple[float, float] | None:
        return self.job.days_range

    @property
    def job_cost_range(self) -> tuple[float, float] | None:
        return self.job.cost_range

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
    def drafter_family(self) -> str:
        """The drafter family's name as people write it (DFlash, DFlash2, DSpark, EAGLE-3)."""
        return FAMILIES[self.plan.workload.drafter].name

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
            # Said only when not bf16: a bf16 plan's JSON is as it was before the field.
            **(
                {"target_precision": self.plan.target.precision}
                if self.plan.target.precision != "bf16"
                else {}
            ),
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
                "family": self.plan.workload.drafter,
                "family_name": self.drafter_family,
                "active_params": self.resolved.shape.active_params,
                "checkpoint_gb": self.resolved.shape.checkpoint_bytes / BYTES_PER_GB,
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
                # The days the job's run gains (negative: sooner) with each.
                "target_days": self.job.more_target_days,
                "drafter_days": self.job.more_drafter_days,
            },
            "prices": {
                key: {"usd_per_gpu_hour": p.usd_per_gpu_hour, "ratio": p.ratio, "source": p.source}
                for key, p in self.prices.by_gpu.items()
            },
            "reference_gpu": self.prices.reference_gpu,
            "mode": self.mode,
            "job": self.job.to_json(),
            "storage": self.offline.to_json(self.mode) if self.offline else None,
            "store_memory": self.store_memory.to_json() if self.store_memory else None,
            "regeneration": self.regeneration.to_json() if self.regeneration else None,
            "phases": [p.to_json() for p in self.phases],
            "total": (t := self.total) and t.to_json(self.cost_unit),
            "topology": self.topology_verdict.to_json() if self.topology_verdict else None,
            # Colocated: each GPU's time on each role (null disaggregated).
            "time_shares": (
                None
                if (shares := self.time_shares) is None
                else {"target_forward": shares[0], "drafter_step": shares[1]}
            ),
            # What the training buys: tau, serving speedup, break-even (core/acceptance.py).
            "acceptance": self.acceptance.to_json(),
            # Checkpoints: size, rotation, interval, lost work, resume (checkpoints.py).
            "checkpoints": self.checkpoints.to_json(),
        }


def project(plan: Plan, catalog: Catalog, rented: tuple[int, int] | None = None) -> Projection:
    """Every figure of a plan. Raises PlanError for plans that cannot be evaluated.
    `rented`: the GPUs a launch rents per role (targets, drafters; e.g. the whole nodes of
    its allocation), billed where more than the plan's rental units bill."""
    return project_resolved(resolve(plan, catalog), catalog, rented)


def project_resolved(
    r: Resolved, catalog: Catalog, rented: tuple[int, int] | None = None
) -> Projection:
    """The stages in order, each on the frozen results of the ones before it."""
    rt = rates(r, catalog)
    pipe = pipeline_stage(r, rt)
    money = money_stage(r, catalog, rented)
    spread = spread_stage(r, rt, pipe, money)
    run = run_stage(r, rt, pipe, money, spread)
    regen = regeneration(r.plan, r.model, r.gpus)
    job = job_stage(r, pipe, money, run, regen)
    ckpt = checkpoint_stage(r, pipe, job)
    job = with_preemptions(job, ckpt, sum(money.billed))
    diagnostics = diagnose(r, catalog, rt, pipe, money, run, regen)
    accepted = acceptance_stage(r, catalog, job)
    p = _projection(r, rt, pipe, money, spread, run, regen, job, accepted, diagnostics, ckpt)
    return replace(p, topology_verdict=topology_stage(r, rt, pipe.central))


def checkpoint_stage(r: Resolved, pipe: Pipeline, job: Job) -> Checkpoints:
    """The plan's checkpoints at its job's run (checkpoints.py)."""
    w = r.plan.workload
    run_hours = None if job.run_days is None else job.run_days * 24
    rate = job.tokens_per_s
    return checkpoints(
        r.plan,
        r.shape.trainable_params,
        int(pipe.flow.nodes),
        run_hours,
        None if rate is None else rate / w.avg_sample_tokens,
    )


def _projection(
    r: Resolved,
    rt: Rates,
    pipe: Pipeline,
    money: Money,
    spread: Spread,
    run: Run | None,
    regen: Regeneration | None,
    job: Job,
    accepted: Acceptance,
    diagnostics: tuple[Diagnostic, ...],
    ckpt: Checkpoints,
) -> Projection:
    plan, f, econ = r.plan, pipe.flow, run.economics if run else None
    throughput = pipe.tokens_per_s
    return Projection(
        plan=plan,
        resolved=r,
        target_model=r.model,
        layer_ids=r.layer_ids,
        drafter_params=r.shape.trainable_params,
        target_work=rt.target_work,
        drafter_work=rt.drafter_work,
        target=_role("target", r, rt, pipe, spread),
        drafter=_role("drafter", r, rt, pipe, spread),
        inputs=pipe.central,
        flow=f,
        link=Link(
            float(f.link_tokens_per_s),
            _link_description(r, f),
            float(f.crossing_share),
            int(f.nodes),
        ),
        link_utilization=throughput / float(f.link_tokens_per_s) if run else None,
        fits=pipe.fits,
        tokens_per_s=throughput if run else None,
        bottleneck=run.bottleneck if run else None,
        tokens_per_epoch=money.tokens_per_epoch,
        days=float(econ.days) if econ else None,
        gpu_hours=float(econ.gpu_hours) if econ else None,
        billed=money.billed,
        total_cost=_number(econ.total_cost) if econ else None,
        cost_unit=money.prices.unit,
        total_cost_usd=_number(econ.total_cost_usd) if econ else None,
        energy_kwh=float(econ.energy_kwh) if econ else None,
        prices=money.prices,
        ranges=run.ranges if run else None,
        narrowing=run.narrowing if run else None,
        diagnostics=diagnostics,
        assumptions=_assumptions(r, rt, money),
        scenarios=spread.scenarios if run else None,
        offline=run.offline if run else None,
        # Colocated, no hidden states leave their GPU: no Mooncake store.
        store_memory=None if plan.workload.topology == "colocated" else pipe.store_memory,
        regeneration=regen,
        phases=job.phases,
        job=job,
        acceptance=accepted,
        run_inputs=run.inputs if run else None,
        checkpoints=ckpt,
    )


def _assumptions(r: Resolved, rt: Rates, money: Money) -> tuple[str, ...]:
    w, model, tw, dw = r.plan.workload, r.model, rt.target_work, rt.drafter_work
    shape = r.shape
    if w.drafter == DEFAULT_FAMILY:  # the built-in family's line, as it always read
        drafter = (
            f"drafter: {w.draft_layers} layers, {shape.trainable_params / 1e9:.2f} B trainable, "
            f"block {r.block_size}, {dw.anchors} anchors per sample = {dw.positions:,} drafted "
            f"positions (recipe: {recipe.NUM_ANCHORS} anchors)"
        )
        layers = f"{len(r.layer_ids)} layers"
    else:
        active = shape.active_params
        params = f"{shape.trainable_params / 1e9:.2f} B trainable" + (
            f" ({active / 1e9:.2f} B active per token)" if active != shape.trainable_params else ""
        )
        drafter = (
            f"drafter {FAMILIES[w.drafter].name}: {shape.layers} layers, {params}, "
            f"block {r.block_size}, {dw.anchors} anchors per sample = {dw.positions:,} drafted "
            f"positions; checkpoint {shape.checkpoint_bytes / BYTES_PER_GB:,.1f} GB (bf16 "
            f"weights, fp32 master and Adam state)"
        )
        final = " + the final hidden state" if shape.final_state else ""
        layers = f"{len(r.layer_ids)} layers{final}"
    return (
        f"target {model.name}: {model.total_params / 1e9:.2f} B parameters; the capture server "
        f"runs all {tw.layers_run} layers (captured {list(r.layer_ids)})",
        drafter,
        f"samples {w.samples:,} x {w.avg_sample_tokens:,} tokens = "
        f"{money.tokens_per_epoch / 1e9:.3f} G tokens per epoch, {w.epochs} epochs",
        f"hidden states {tw.hidden_state_bytes_per_token / 1e3:.1f} KB per token "
        f"({layers} x {model.hidden} x 2 bytes), "
        + (
            "in process (colocated: captured and trained on the same GPU)"
            if w.topology == "colocated"
            else path_name(w.transport, w.receive)
        ),
    )


def _number(value: object) -> float | None:
    return None if value is None else float(value)  # type: ignore[arg-type]


def _role(name: str, r: Resolved, rt: Rates, pipe: Pipeline, spread: Spread) -> RoleProjection:
    plan, f = r.plan, pipe.flow
    capacity = float(getattr(f, f"{name}_tokens_per_s"))
    # Colocated, every GPU of the plan runs both roles.
    everyone = plan.target.count + plan.drafter.count
    colocated = plan.workload.topology == "colocated"
    if name == "target":
        gpu, tp, rate = r.target_gpu, plan.target.tp, rt.target
        count = everyone if colocated else plan.target.count
        scaling = pipe.central.replica_tokens_per_s / (rate.tokens_per_s * tp)
        memory, flop = pipe.target_memory, rt.target_work.flop_per_token
    else:
        gpu, tp, rate = r.drafter_gpu, 1, rt.drafter
        count = everyone if colocated else plan.drafter.count
        scaling, memory = float(f.drafter_scaling), pipe.drafter_memory
        flop = rt.drafter_work.flop_per_sample
    return RoleProjection(
        role=name,
        gpu=gpu.key,
        gpu_name=gpu.name,
        count=count,
        tp=tp,
        per_gpu_tokens_per_s=rate.tokens_per_s,
        capacity_tokens_per_s=capacity,
        capacity_range=spread.capacity_range(name),
        utilization=pipe.tokens_per_s / capacity if pipe.fits else None,
        efficiency=rate.efficiency,
        default_efficiency=rate.default_efficiency,
        source=rate.source,
        basis=rate.basis,
        limit=rate.limit,
        scaling_efficiency=scaling,
        memory=memory,
        flop=flop,
        spec=gpu,
        rate=rate,
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
