"""The projection: one plan in, every figure the planner shows out."""

from __future__ import annotations

import math
from dataclasses import dataclass, field
from typing import Any

from pydantic import BaseModel, ConfigDict

from .cost import Prices, prices
from .errors import PlanError
from .hardware import Gpu
from .memory import MemoryFit, drafter_memory, target_memory
from .plan import Plan, check_names
from .targets import PRESETS, TargetModel
from .transport import LinkCapacity, Placement, allreduce_seconds, hidden_state_link, place
from .units import BF16_BYTES, SECONDS_PER_DAY, SECONDS_PER_HOUR
from .work import (DrafterShape, DrafterWork, TargetWork, drafter_shape, drafter_work,
                   target_work)

# A measurement this far from the estimate at default efficiency is called out.
CONTRADICTION_FACTOR = 2.0
# A link this busy leaves no headroom for bursts of long samples.
LINK_BUSY_WARNING = 0.8


class Catalog(BaseModel):
    """What plans refer to by name: GPUs and target models (presets plus loaded files)."""

    model_config = ConfigDict(frozen=True, arbitrary_types_allowed=True)
    gpus: dict[str, Gpu]
    models: dict[str, TargetModel] = dict(PRESETS)

    def with_model(self, spec: str, model: TargetModel) -> Catalog:
        return Catalog(gpus=self.gpus, models={**self.models, spec: model})


@dataclass(frozen=True, slots=True)
class Roofline:
    """One GPU's rate on one role at 100 % efficiency, and which limit sets it."""

    tokens_per_s: float
    compute_tokens_per_s: float
    memory_tokens_per_s: float

    @property
    def limit(self) -> str:
        return "compute" if self.compute_tokens_per_s <= self.memory_tokens_per_s else "memory"


def target_roofline(work: TargetWork, gpu: Gpu) -> Roofline:
    compute = gpu.bf16_flop_per_s / work.time_flop(gpu.softmax_speedup)
    memory = gpu.mem_bytes_per_s / work.bytes_per_token
    return Roofline(min(compute, memory), compute, memory)


def drafter_roofline(work: DrafterWork, gpu: Gpu, sample_tokens: float) -> Roofline:
    compute = gpu.bf16_flop_per_s / work.time_flop(gpu.softmax_speedup) * sample_tokens
    memory = gpu.mem_bytes_per_s / work.bytes_per_sample * sample_tokens
    return Roofline(min(compute, memory), compute, memory)


@dataclass(frozen=True, slots=True)
class RoleProjection:
    role: str
    gpu: str
    gpu_name: str
    count: int
    tp: int
    per_gpu_tokens_per_s: float      # one GPU on its own, before TP / data-parallel scaling
    capacity_tokens_per_s: float
    utilization: float | None
    efficiency: float                # achieved share of the GPU's dense bf16 peak
    default_efficiency: float
    source: str                      # "measured" or "estimated"
    basis: str
    limit: str                       # "compute" or "memory"
    scaling_efficiency: float        # tensor-parallel (target) or data-parallel (drafter)
    memory: MemoryFit
    flop: float                      # per token (target) or per sample (drafter)
    spec: Gpu

    @property
    def replicas(self) -> int:
        return self.count // self.tp

    def to_json(self) -> dict[str, Any]:
        return {
            "gpu": self.gpu, "gpu_name": self.gpu_name, "count": self.count, "tp": self.tp,
            "replicas": self.replicas,
            "capacity_tokens_per_s": self.capacity_tokens_per_s,
            "per_gpu_tokens_per_s": self.per_gpu_tokens_per_s,
            "utilization": self.utilization, "efficiency": self.efficiency,
            "default_efficiency": self.default_efficiency,
            "source": self.source, "basis": self.basis, "limit": self.limit,
            "scaling_efficiency": self.scaling_efficiency,
            "memory_gb_needed": self.memory.needed_gb,
            "memory_gb_available": self.memory.available_gb,
            "memory_gb_items": dict(self.memory.items_gb),
            "fits": self.memory.fits,
        }


@dataclass(frozen=True, slots=True)
class Projection:
    plan: Plan
    target_model: TargetModel
    layer_ids: tuple[int, ...]
    drafter_params: int
    target_work: TargetWork
    drafter_work: DrafterWork
    target: RoleProjection
    drafter: RoleProjection
    link: LinkCapacity
    link_utilization: float | None
    placement: Placement
    fits: bool
    tokens_per_s: float | None
    bottleneck: str | None           # "target", "drafter", "link"; None when it cannot run
    tokens_per_epoch: float
    days: float | None
    gpu_hours: float | None
    total_cost: float | None
    cost_unit: str
    total_cost_usd: float | None
    energy_kwh: float | None
    prices: Prices
    marginal_target_tokens_per_s: float | None
    marginal_drafter_tokens_per_s: float | None
    warnings: tuple[str, ...]
    assumptions: tuple[str, ...] = field(default=())

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
    def hidden_state_bytes_per_s(self) -> float | None:
        if self.tokens_per_s is None:
            return None
        return self.tokens_per_s * self.target_work.hidden_state_bytes_per_token

    def to_json(self) -> dict[str, Any]:
        """The JSON contract of `dflash-plan project --json` (extend, never rename)."""
        return {
            "name": self.plan.name,
            "target_model": self.target_model.name,
            "tokens_per_s": self.tokens_per_s,
            "ktok_per_s": self.ktok_per_s,
            "samples_per_s": self.samples_per_s,
            "days": self.days,
            "epochs": self.epochs,
            "tokens_per_epoch": self.tokens_per_epoch,
            "gpu_hours": self.gpu_hours,
            "total_cost": self.total_cost,
            "cost_per_epoch": self.cost_per_epoch,
            "cost_unit": self.cost_unit,
            "total_cost_usd": self.total_cost_usd,
            "energy_kwh": self.energy_kwh,
            "bottleneck": self.bottleneck,
            "fits": self.fits,
            "warnings": list(self.warnings),
            "assumptions": list(self.assumptions),
            "target": {**self.target.to_json(),
                       "flop_per_token": self.target.flop,
                       "captured_layer_ids": list(self.layer_ids)},
            "drafter": {**self.drafter.to_json(),
                        "flop_per_sample": self.drafter.flop,
                        "trainable_params": self.drafter_params,
                        "anchors": self.drafter_work.anchors},
            "link": {
                "description": self.link.description,
                "capacity_tokens_per_s": self.link.tokens_per_s,
                "bytes_per_token": self.target_work.hidden_state_bytes_per_token,
                "load_bytes_per_s": self.hidden_state_bytes_per_s,
                "utilization": self.link_utilization,
                "crossing_share": self.link.crossing_share,
                "nodes": self.placement.nodes,
            },
            "marginal": {
                "target_gpus_added": self.plan.target.tp,
                "target_tokens_per_s": self.marginal_target_tokens_per_s,
                "drafter_gpus_added": 1,
                "drafter_tokens_per_s": self.marginal_drafter_tokens_per_s,
            },
            "prices": {key: {"usd_per_gpu_hour": p.usd_per_gpu_hour, "ratio": p.ratio,
                             "source": p.source}
                       for key, p in self.prices.by_gpu.items()},
            "reference_gpu": self.prices.reference_gpu,
        }


def _pct(x: float) -> str:
    return f"{x * 100:.1f} %"


@dataclass(frozen=True, slots=True)
class _RoleRates:
    """Per-GPU rate of a role on each GPU type, from measurement or carried-over estimate."""

    per_gpu: float
    efficiency: float
    default_efficiency: float
    source: str
    basis: str
    limit: str


def _role_rate(gpu: Gpu, roof_of, measured: dict[str, float], gpus: dict[str, Gpu],
               default_of) -> _RoleRates:
    """The rate of `role` on `gpu`: its measurement, or the roofline times an efficiency,
    where the efficiency is the GPU's default scaled by what measurements of this role on
    other GPUs showed against their own defaults (geometric mean over them)."""
    roof = roof_of(gpu)
    peak_share = roof.tokens_per_s / (roof.compute_tokens_per_s or 1)  # <= 1 when memory-bound
    default = default_of(gpu)
    if gpu.key in measured:
        rate = measured[gpu.key]
        eff = rate / roof.tokens_per_s * peak_share
        return _RoleRates(rate, eff, default, "measured", f"measured on {gpu.name}", roof.limit)
    factors = []
    for key, rate in measured.items():
        other = gpus[key]
        factors.append(rate / (roof_of(other).tokens_per_s * default_of(other)))
    if factors:
        factor = math.exp(sum(map(math.log, factors)) / len(factors))
        eff = min(default * factor, gpu.efficiency_ceiling)
        names = ", ".join(gpus[k].name for k in measured)
        basis = (f"estimated: default {_pct(default)} x {factor:.2f} carried over from "
                 f"the measurement on {names}")
    else:
        eff = default
        basis = f"estimated: default efficiency {_pct(default)} for {gpu.name}"
    return _RoleRates(roof.tokens_per_s * eff, eff * peak_share, default, "estimated", basis,
                      roof.limit)


def _check_measurements(role: str, measured: dict[str, float], gpus: dict[str, Gpu], roof_of,
                        default_of, warnings: list[str]) -> None:
    for key, rate in measured.items():
        gpu = gpus[key]
        roof = roof_of(gpu)
        implied = rate / roof.compute_tokens_per_s
        if rate > roof.tokens_per_s * gpu.efficiency_ceiling:
            ceiling = (f"the {_pct(gpu.efficiency_ceiling)} matmul ceiling measured on this GPU"
                       if gpu.matmul_ceiling else "its peak")
            warnings.append(
                f"calibration.{role}.{key} = {rate:,.0f} tok/s per GPU implies "
                f"{_pct(implied)} of {gpu.name}'s dense bf16 peak, above {ceiling}: "
                f"check the figure")
            continue
        estimate = roof.tokens_per_s * default_of(gpu)
        ratio = rate / estimate
        if ratio > CONTRADICTION_FACTOR or ratio < 1 / CONTRADICTION_FACTOR:
            warnings.append(
                f"{role} on {gpu.name}: measured {rate:,.0f} tok/s per GPU is {ratio:.2f}x the "
                f"estimate at default efficiency ({estimate:,.0f}): {_pct(implied)} of peak "
                f"achieved vs {_pct(default_of(gpu))} assumed. The measurement is used and "
                f"carries over to other GPUs")


def project(plan: Plan, catalog: Catalog) -> Projection:
    """Every figure of a plan. Raises PlanError for plans that cannot be evaluated."""
    gpus = catalog.gpus
    check_names(plan, gpus)
    w = plan.workload
    try:
        model = catalog.models[w.target_model]
    except KeyError:
        raise PlanError(f"workload.target_model = {w.target_model!r}: not loaded") from None
    t_gpu, d_gpu = gpus[plan.target.gpu], gpus[plan.drafter.gpu]
    tp = plan.target.tp
    if tp > t_gpu.fast_domain_gpus:
        raise PlanError(f"target.tp = {tp}: a TP group must sit inside one node; {t_gpu.name} "
                        f"has {t_gpu.fast_domain_gpus} GPUs per node")
    layer_ids = w.target_layer_ids or model.default_layer_ids(5)
    if max(layer_ids) >= model.n_layers:
        raise PlanError(f"workload.target_layer_ids = {list(layer_ids)}: {model.name} has "
                        f"layers 0-{model.n_layers - 1}")
    block = w.block_size or model.default_block_size
    S = float(w.avg_sample_tokens)
    T, D = plan.target.count, plan.drafter.count
    warnings: list[str] = []

    tw = target_work(model, layer_ids, S)
    shape: DrafterShape = drafter_shape(model, w.draft_layers, block, len(layer_ids))
    dw = drafter_work(shape, w.num_anchors, S, plan.drafter.batch_size, D)

    def t_roof(gpu: Gpu) -> Roofline:
        return target_roofline(tw, gpu)

    def d_roof(gpu: Gpu) -> Roofline:
        return drafter_roofline(dw, gpu, S)

    cal = plan.calibration
    def prefill(g: Gpu) -> float:
        return g.prefill_efficiency

    def training(g: Gpu) -> float:
        return g.training_efficiency

    _check_measurements("target", cal.target, gpus, t_roof, prefill, warnings)
    _check_measurements("drafter", cal.drafter, gpus, d_roof, training, warnings)
    t_rate = _role_rate(t_gpu, t_roof, cal.target, gpus, prefill)
    d_rate = _role_rate(d_gpu, d_roof, cal.drafter, gpus, training)

    # Tensor parallelism: two all-reduces of the hidden state per layer per token.
    tp_comm_s = (allreduce_seconds(t_gpu, tp, BF16_BYTES * model.hidden, False)
                 * 2 * tw.layers_run)
    compute_s = 1 / (t_rate.per_gpu * tp)
    tp_eff = compute_s / (compute_s + tp_comm_s)
    replica_rate = t_rate.per_gpu * tp * tp_eff

    grad_bytes = BF16_BYTES * shape.trainable_params

    def dp_eff(drafters: int, placement: Placement) -> float:
        step_s = plan.drafter.batch_size * S / d_rate.per_gpu
        comm_s = allreduce_seconds(d_gpu, drafters, grad_bytes, placement.drafters_span_nodes)
        return step_s / (step_s + comm_s)

    def flow(targets: int, drafters: int) -> tuple[float, float, float, LinkCapacity, Placement,
                                                   float]:
        placement = place(t_gpu, targets, d_gpu, drafters)
        t_cap = replica_rate * (targets // tp)
        eff = dp_eff(drafters, placement)
        d_cap = d_rate.per_gpu * drafters * eff
        link = hidden_state_link(placement, t_gpu, targets // tp, d_gpu, drafters,
                                 tw.hidden_state_bytes_per_token)
        return min(t_cap, d_cap, link.tokens_per_s), t_cap, d_cap, link, placement, eff

    throughput, t_cap, d_cap, link, placement, d_eff = flow(T, D)
    t_mem = target_memory(model, tp, w.max_length, len(layer_ids), t_gpu.memory_gb)
    d_mem = drafter_memory(shape, dw, S, plan.drafter.batch_size, D, d_gpu.memory_gb)
    fits = t_mem.fits and d_mem.fits
    for role, gpu, mem in (("target", t_gpu, t_mem), ("drafter", d_gpu, d_mem)):
        if not mem.fits:
            biggest = max(mem.items_gb, key=lambda item: item[1])
            hint = (" (raise target.tp or pick a GPU with more memory)" if role == "target"
                    else " (lower drafter.batch_size or num_anchors, or pick a larger GPU)")
            warnings.append(f"{role} does not fit: needs {mem.needed_gb:,.1f} GB per GPU, "
                            f"{gpu.name} has {mem.available_gb:g} GB usable; largest item "
                            f"{biggest[0]} {biggest[1]:,.1f} GB{hint}")

    bottleneck = None
    if fits:
        bottleneck = min((("target", t_cap), ("drafter", d_cap), ("link", link.tokens_per_s)),
                         key=lambda item: item[1])[0]
    tokens_per_s = throughput if fits else None

    def role(name: str, gpu: Gpu, count: int, role_tp: int, rates: _RoleRates, cap: float,
             scaling: float, mem: MemoryFit, flop: float) -> RoleProjection:
        return RoleProjection(
            role=name, gpu=gpu.key, gpu_name=gpu.name, count=count, tp=role_tp,
            per_gpu_tokens_per_s=rates.per_gpu, capacity_tokens_per_s=cap,
            utilization=throughput / cap if fits else None, efficiency=rates.efficiency,
            default_efficiency=rates.default_efficiency, source=rates.source,
            basis=rates.basis, limit=rates.limit, scaling_efficiency=scaling, memory=mem,
            flop=flop, spec=gpu)

    target = role("target", t_gpu, T, tp, t_rate, t_cap, tp_eff, t_mem, tw.flop_per_token)
    drafter = role("drafter", d_gpu, D, 1, d_rate, d_cap, d_eff, d_mem, dw.flop_per_sample)

    tokens_per_epoch = float(w.samples) * S
    view = prices(plan, gpus, plan.gpus_in_use())
    days = gpu_hours = total_cost = total_usd = energy = None
    marginal_t = marginal_d = None
    if tokens_per_s:
        seconds = tokens_per_epoch * w.epochs / tokens_per_s
        hours = seconds / SECONDS_PER_HOUR
        days = seconds / SECONDS_PER_DAY
        gpu_hours = (T + D) * hours
        energy = (T * t_gpu.tdp_w + D * d_gpu.tdp_w) * hours / 1e3
        per_hour = [view.per_hour(plan.target.gpu), view.per_hour(plan.drafter.gpu)]
        if None not in per_hour:
            total_cost = (T * per_hour[0] + D * per_hour[1]) * hours
        usd = [view.by_gpu[plan.target.gpu].usd_per_gpu_hour,
               view.by_gpu[plan.drafter.gpu].usd_per_gpu_hour]
        if None not in usd:
            total_usd = (T * usd[0] + D * usd[1]) * hours
        marginal_t = flow(T + tp, D)[0] - throughput
        marginal_d = flow(T, D + 1)[0] - throughput
        if link.tokens_per_s and throughput / link.tokens_per_s > LINK_BUSY_WARNING:
            warnings.append(f"hidden-state link {_pct(throughput / link.tokens_per_s)} busy "
                            f"({link.description})")
    for key in plan.gpus_in_use():
        if view.per_hour(key) is None:
            warnings.append(f"no price for {gpus[key].name}: set cost.usd_per_gpu_hour.{key} "
                            f"or cost.ratio.{key}")
    if model.is_moe and not (cal.target):
        warnings.append(f"{model.name} is a MoE model: default prefill efficiencies are for "
                        f"dense models and MoE prefill reaches far less (15-20 % reported at "
                        f"short prompts); calibrate the target rate")

    assumptions = (
        f"target {model.name}: {model.total_params / 1e9:.2f} B parameters, forward through "
        f"layer {max(layer_ids)} of {model.n_layers} (captured {list(layer_ids)})",
        f"drafter: {w.draft_layers} layers, {shape.trainable_params / 1e9:.2f} B trainable, "
        f"block {block}, {dw.anchors} anchors per sample = {dw.positions:,} drafted positions",
        f"samples {w.samples:,} x {w.avg_sample_tokens:,} tokens = "
        f"{tokens_per_epoch / 1e9:.3f} G tokens per epoch, {w.epochs} epochs",
        f"hidden states {tw.hidden_state_bytes_per_token / 1e3:.1f} KB per token "
        f"({len(layer_ids)} layers x {model.hidden} x 2 bytes)",
    )
    return Projection(
        plan=plan, target_model=model, layer_ids=tuple(layer_ids),
        drafter_params=shape.trainable_params, target_work=tw, drafter_work=dw,
        target=target, drafter=drafter, link=link,
        link_utilization=throughput / link.tokens_per_s if fits else None,
        placement=placement, fits=fits, tokens_per_s=tokens_per_s, bottleneck=bottleneck,
        tokens_per_epoch=tokens_per_epoch, days=days, gpu_hours=gpu_hours,
        total_cost=total_cost, cost_unit=view.unit, total_cost_usd=total_usd, energy_kwh=energy,
        prices=view, marginal_target_tokens_per_s=marginal_t,
        marginal_drafter_tokens_per_s=marginal_d, warnings=tuple(warnings),
        assumptions=assumptions)


def balance(plan: Plan, catalog: Catalog) -> Plan:
    """The target/drafter split of the same GPUs with the highest throughput (first best:
    fewest drafters on a tie). Only for plans whose two roles use the same GPU type."""
    if plan.target.gpu != plan.drafter.gpu:
        raise PlanError("balance moves GPUs between roles, so both roles must use the same GPU "
                        f"type (target {plan.target.gpu}, drafter {plan.drafter.gpu})")
    total, tp = plan.target.count + plan.drafter.count, plan.target.tp
    best, best_rate = plan, -1.0
    for targets in range(total - 1 - (total - 1) % tp, 0, -tp):
        candidate = plan.model_copy(update={
            "target": plan.target.model_copy(update={"count": targets}),
            "drafter": plan.drafter.model_copy(update={"count": total - targets})})
        rate = project(candidate, catalog).tokens_per_s or 0.0
        if rate > best_rate * (1 + 1e-9):
            best, best_rate = candidate, rate
    return best
