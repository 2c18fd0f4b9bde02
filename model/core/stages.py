"""The projection's stages, each a function of the frozen results of the stages before it:

resolve (resolve.py) -> rates (rates.py) -> pipeline -> money -> spread (the plan under its
scenarios) -> run (when it fits: economics, ranges, the offline run beside the online
pipeline) -> the plan's own job (job.py) -> diagnostics (diagnose.py) -> Projection.
"""

from __future__ import annotations

from dataclasses import dataclass, replace

from ..basics.arrays import Count, Number
from ..inputs import formats
from ..inputs.catalog import Catalog
from ..inputs.plan import Plan
from ..physics import colocated, store
from ..physics import flow as physics_flow
from ..physics.colocated import plan_flow
from ..physics.flow import FlowControl
from ..physics.footprint import MemoryFit
from ..physics.memory import colocated_memory, drafter_memory, target_memory
from ..physics.pipeline import Flow, PipelineInputs, bottleneck, flow
from .cost import Prices, prices, probe_gpu_hours
from .economics import Economics, RolePrices, billed, economics
from .offline import Offline, OfflineRanges, offline, run, stored
from .offline import Run as OfflineRun
from .plan_scenarios import PlanScenarios, Ranges, plan_inputs
from .rates import Rates
from .resolve import Resolved
from .scenarios import COLOCATION, Scenario, colocation_dim, link_dim, memory_band

# A probe's length: what measuring a role's rate costs (the narrowing note names it).
PROBE_MINUTES = 10


@dataclass(frozen=True, slots=True)
class Pipeline:
    """The plan's split through the pipeline at the central rates, and its memory."""

    central: PipelineInputs
    flow: Flow
    tokens_per_s: float  # what the split would run at, whether or not it fits
    target_memory: MemoryFit
    drafter_memory: MemoryFit
    store_memory: store.StoreMemory  # the Mooncake store in host memory
    flow_control: FlowControl  # the data plane's watermarks, lease, loaders and sizes

    @property
    def fits(self) -> bool:
        """Both roles fit their GPUs' memory (the store and storage are diagnostics')."""
        return self.target_memory.fits and self.drafter_memory.fits


def pipeline_stage(r: Resolved, rt: Rates) -> Pipeline:
    plan, w = r.plan, r.plan.workload
    central = plan_inputs(r, rt.target_work, rt.target.tokens_per_s, rt.drafter.tokens_per_s)
    T, D = plan.target.count, plan.drafter.count
    colocated = w.topology == "colocated"
    f = plan_flow(central, w.topology, T, D)
    t_mem, d_mem = role_memory(r, rt, T + D if colocated else D)
    if colocated:
        # One GPU holds both: each role's row shows what the GPU holds.
        t_mem = d_mem = colocated_memory(t_mem, d_mem)
    return Pipeline(
        central, f, float(f.tokens_per_s), t_mem, d_mem, store_memory(r), flow_control(r)
    )


def role_memory(r: Resolved, rt: Rates, drafters: int) -> tuple[MemoryFit, MemoryFit]:
    """One target GPU's and one drafter GPU's memory, each with its band, the drafters'
    optimizer state sharded over `drafters` (colocated: every GPU of the plan)."""
    plan, w = r.plan, r.plan.workload
    t_mem = target_memory(
        r.model,
        plan.target.tp,
        w.max_length,
        r.captured_tensors,
        r.target_gpu.memory_gb,
        plan.target.precision,
    )
    # Memory peaks at the longest sample (its context states), not the average one.
    d_mem = drafter_memory(
        r.shape,
        rt.drafter_work,
        float(w.max_length),
        plan.drafter.batch_size,
        drafters,
        r.drafter_gpu.memory_gb,
    )
    return (
        replace(t_mem, band=memory_band("target")),
        replace(d_mem, band=memory_band("drafter")),
    )


def store_sizing(r: Resolved) -> tuple[str, int]:
    """Whose sizing the launched run's Mooncake store follows ("specforge" or
    "speculators") and one max-length sample's features, bytes: what the store memory of
    any split of the plan needs besides its counts (the search sizes every split)."""
    plan = r.plan
    fmt = formats.row_of(plan.launch.format).store_sizing
    return fmt, store.sample_feature_bytes(
        r.model.hidden, r.captured_tensors, plan.workload.max_length
    )


def store_memory(r: Resolved) -> store.StoreMemory:
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


def flow_control(r: Resolved, sizing: str | None = None) -> FlowControl:
    """The launched run's flow control (physics/flow.py), from the same split and sample
    as its store memory; `sizing`: whose rules ("specforge" or "speculators"), the plan's
    launch format's when None."""
    plan = r.plan
    fmt, sample = store_sizing(r)
    return physics_flow.flow_control(
        sizing or fmt,
        sample,
        plan.drafter.batch_size,
        (plan.target.count, plan.drafter.count, plan.target.tp),
        (r.target_gpu.gpus_per_node, r.drafter_gpu.gpus_per_node),
        r.same_gpu_type,
    )


@dataclass(frozen=True, slots=True)
class Money:
    """What turns tokens per second into days and cost."""

    prices: Prices
    role_prices: RolePrices
    billed: tuple[int, int]  # GPUs paid for per role (whole rental units)
    units: tuple[int, int]  # each role's rental unit, GPUs
    tokens_per_epoch: float
    total_tokens: float  # every epoch's


def money_stage(r: Resolved, catalog: Catalog, rented: tuple[int, int] | None) -> Money:
    plan, w = r.plan, r.plan.workload
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
    units = (t_price.unit_gpus, d_price.unit_gpus)
    paid = billed(plan.target.count, plan.drafter.count, r.same_gpu_type, *units)
    if rented is not None:
        paid = (max(paid[0], rented[0]), max(paid[1], rented[1]))
    tokens_per_epoch = float(w.samples) * w.avg_sample_tokens
    return Money(view, role_prices, paid, units, tokens_per_epoch, tokens_per_epoch * w.epochs)


@dataclass(frozen=True, slots=True)
class Spread:
    """The plan under its scenarios, and its slowest and fastest corners."""

    scenarios: PlanScenarios
    slow_at: Scenario
    fast_at: Scenario
    slow: Flow
    fast: Flow

    def capacity_range(self, role: str) -> tuple[float, float]:
        key = f"{role}_tokens_per_s"
        return float(getattr(self.slow, key)), float(getattr(self.fast, key))


def colocation_range(r: Resolved) -> tuple[float, float]:
    """The colocation efficiency's band for a resolved plan (physics/colocated.py)."""
    w = r.plan.workload
    return colocated.efficiency_range(
        r.target_gpu.arch, r.plan.target.tp, r.model, w.avg_sample_tokens
    )


def spread_stage(r: Resolved, rt: Rates, pipe: Pipeline, money: Money) -> Spread:
    t, d = rt.target.model, rt.drafter.model
    assert t is not None and d is not None
    kinds = (r.target_gpu.link.kind, r.drafter_gpu.link.kind)
    links = {f"link:{kind}": link_dim(kind) for kind in dict.fromkeys(kinds)}
    dims = {dim.key: dim for dim in (*t.dims, *d.dims, *links.values())}
    span = colocation_range(r)
    if r.plan.workload.topology == "colocated":
        dims[COLOCATION] = colocation_dim(span)
    scen = PlanScenarios(
        dims,
        t,
        d,
        (f"link:{kinds[0]}", f"link:{kinds[1]}"),
        r,
        pipe.central,
        rt.target_work,
        money.total_tokens,
        money.role_prices,
        money.billed,
        money.tokens_per_epoch,
        stored(r.plan, r.model.hidden, len(r.layer_ids))[1],
        money.prices.in_usd,
        money.units,
        span,
    )
    slow_at, fast_at = scen.extreme(slow=True), scen.extreme(slow=False)
    return Spread(scen, slow_at, fast_at, scen.flow(slow_at), scen.flow(fast_at))


@dataclass(frozen=True, slots=True)
class RunInputs:
    """What the run of a plan's own mode needs besides its counts: the same for the
    projection's one split and for every split of a search block, which both call
    `run_at` with it (their figures agree bit for bit by construction)."""

    plan: Plan
    pipeline: PipelineInputs  # through the plan's hidden-state path
    # The drafters reading from storage (offline: no Mooncake fetch wait; storage's own
    # read bound is offline.run's); the pipeline's own inputs when it is direct already.
    disk: PipelineInputs
    stored_bytes_per_token: float
    tokens_per_epoch: float
    drafter_gpus_per_node: int
    role_prices: RolePrices
    in_usd: bool
    units: tuple[int, int]
    same_type: bool
    # Colocated plans: the share of the time-shared rate their GPUs reach (None: the
    # fitted one, physics/colocated.py).
    colocation_efficiency: float | None = None


def run_inputs(
    r: Resolved,
    rt: Rates,
    money: Money,
    pipeline: PipelineInputs,
    disk: PipelineInputs | None = None,
) -> RunInputs:
    """The run inputs of a resolved plan at these pipeline inputs (and storage-read
    inputs: the pipeline's own, direct, when not given and the plan's path is direct)."""
    plan = r.plan
    if disk is None:
        disk = (
            pipeline
            if plan.workload.transport == "direct"
            else plan_inputs(
                r,
                rt.target_work,
                rt.target.tokens_per_s,
                rt.drafter.tokens_per_s,
                transport="direct",
            )
        )
    return RunInputs(
        plan,
        pipeline,
        disk,
        stored(plan, r.model.hidden, len(r.layer_ids))[1],
        money.tokens_per_epoch,
        r.drafter_gpu.gpus_per_node,
        money.role_prices,
        money.prices.in_usd,
        money.units,
        r.same_gpu_type,
    )


@dataclass(frozen=True, slots=True)
class RunFigures:
    """The run of the plan's own mode at some counts: numbers, or arrays over splits."""

    flow: Flow  # the online pipeline at these counts
    tokens_per_s: Number  # the rate that trains: the pipeline's, or offline the training's
    days: Number
    cost: Number | None  # in the plan's cost unit; None: not priced
    parts: OfflineRun | None = None  # offline: the run's phases (search prunes on them)


def run_at(
    ri: RunInputs,
    targets: Count,
    drafters: Count,
    f: Flow | None = None,
    paid: tuple[Count, Count] | None = None,
) -> RunFigures:
    """The run of the plan's own mode and topology (decided here, once for every caller)
    at these counts: the online pipeline's days and cost (colocated: targets + drafters
    GPUs each running both), or the offline run's (capture at the targets' capacity, then
    every epoch from storage). `f`: the pipeline's flow at these counts when known; `paid`:
    the GPUs billed per role (whole rental units by default)."""
    plan = ri.plan
    if f is None:
        topology = plan.workload.topology
        f = plan_flow(ri.pipeline, topology, targets, drafters, ri.colocation_efficiency)
    paid = billed(targets, drafters, ri.same_type, *ri.units) if paid is None else paid
    if plan.workload.mode == "offline":
        disk = f if ri.disk is ri.pipeline else flow(ri.disk, targets, drafters)
        o = run(
            plan,
            ri.stored_bytes_per_token,
            ri.tokens_per_epoch,
            targets,
            drafters,
            f.target_tokens_per_s,
            disk.drafter_tokens_per_s,
            ri.drafter_gpus_per_node,
            ri.role_prices,
            ri.in_usd,
            paid,
            ri.units,
        )
        return RunFigures(f, o.train_tokens_per_s, o.days, o.cost, o)
    total_tokens = ri.tokens_per_epoch * plan.workload.epochs
    e = economics(f.tokens_per_s, total_tokens, targets, drafters, ri.role_prices, *paid)
    return RunFigures(f, f.tokens_per_s, e.days, e.total_cost)


@dataclass(frozen=True, slots=True)
class Run:
    """What a plan that fits runs at: its online pipeline's economics, ranges and bound,
    and its offline run (whichever its mode: the online/offline decision compares them)."""

    economics: Economics
    bottleneck: str
    ranges: Ranges
    narrowing: str | None  # the measurement that would narrow the range most
    offline: Offline
    inputs: RunInputs  # what the run of the plan's own mode is at any counts (run_at)
    own: RunFigures  # that run at the plan's own split


def run_stage(r: Resolved, rt: Rates, pipe: Pipeline, money: Money, spread: Spread) -> Run | None:
    """None when the plan does not fit its GPUs' memory (it has no figures to give)."""
    if not pipe.fits:
        return None
    plan = r.plan
    T, D = plan.target.count, plan.drafter.count
    f, throughput = pipe.flow, pipe.tokens_per_s
    econ = economics(throughput, money.total_tokens, T, D, money.role_prices, *money.billed)
    ranges, narrowing = _ranges(r, rt, spread, money)
    # Offline, the drafters read from storage, not through the Mooncake store: their
    # capacity without its fetch wait (storage's own bound is applied in offline()).
    ri = run_inputs(r, rt, money, pipe.central)
    disk = f if ri.disk is pipe.central else plan_flow(ri.disk, plan.workload.topology, T, D)
    off = offline(
        plan,
        r.model.hidden,
        len(r.layer_ids),
        money.tokens_per_epoch,
        float(f.target_tokens_per_s),
        float(disk.drafter_tokens_per_s),
        throughput,
        r.drafter_gpu.gpus_per_node,
        money.role_prices,
        money.prices.unit,
        money.prices.in_usd,
        money.billed,
        money.units,
    )
    off = replace(off, ranges=_offline_ranges(spread))
    own = run_at(ri, T, D, f, money.billed)
    return Run(econ, bottleneck(f), ranges, narrowing, off, ri, own)


def _ranges(r: Resolved, rt: Rates, spread: Spread, money: Money) -> tuple[Ranges, str | None]:
    plan, scen = r.plan, spread.scenarios
    T, D = plan.target.count, plan.drafter.count
    lo_tok, hi_tok = float(spread.slow.tokens_per_s), float(spread.fast.tokens_per_s)
    slow = economics(lo_tok, money.total_tokens, T, D, money.role_prices, *money.billed)
    fast = economics(hi_tok, money.total_tokens, T, D, money.role_prices, *money.billed)

    def pair(attr: str) -> tuple[float, float] | None:
        a, b = getattr(fast, attr), getattr(slow, attr)
        return None if a is None else (float(a), float(b))

    # Which role's uncertainty moves the days most: vary one, hold the other central.
    spans: dict[str, tuple[float, float]] = {}
    for name, rate in (("target", rt.target), ("drafter", rt.drafter)):
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
        rate = rt.target if name == "target" else rt.drafter
        gpu_hours = probe_gpu_hours(plan, rate.gpu, name, PROBE_MINUTES)
        per_hour = (
            money.role_prices.target_usd_per_hour
            if name == "target"
            else money.role_prices.drafter_usd_per_hour
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
        slow_at=spread.slow_at,
        fast_at=spread.fast_at,
        scenarios=scen,
    ), narrowing


def _offline_ranges(spread: Spread) -> OfflineRanges:
    """The offline run at the online ranges' corners (its days and cost are monotone in
    both capacities, which are monotone in every rate and link), and each role's
    role_span."""
    scen = spread.scenarios
    run_at = scen.offline_run
    (fast_days, fast_cost), (slow_days, slow_cost) = run_at(spread.fast_at), run_at(spread.slow_at)
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
