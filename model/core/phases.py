"""The whole job by phase: regenerate (optional: the target decodes the answers), capture
(offline mode) and train, each with its GPUs, days, GPU-hours and cost; the total is their
sum (docs/model.md, "Phases").

Online, the capture runs inside the training pipeline: the phases are regenerate and
train. Offline: regenerate, capture, train (the offline run's two phases, storage cost
shared by days).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..basics.errors import PlanError
from ..basics.units import SECONDS_PER_DAY, SECONDS_PER_HOUR
from ..inputs.hardware import Gpu
from ..inputs.plan import Plan
from ..inputs.targets import TargetModel
from ..physics.decode import DECODE_BANDWIDTH_EFFICIENCY_RANGE, ENGINES, Decode, decode, maturity
from .cost import Prices
from .offline import Offline
from .rates import engine
from .scenarios import efficiency_band


@dataclass(frozen=True, slots=True)
class Regeneration:
    """The target regenerating every sample's answer once, before training."""

    gpu: str
    gpu_name: str
    count: int
    tp: int
    output_tokens: int  # per sample
    prompt_tokens: int  # per sample
    samples: int
    decode: Decode
    # Output tokens/s per GPU at the slow and the fast end: the decode efficiency's range,
    # the GPU's compute-efficiency band and the engine's maturity range together.
    tokens_per_s_per_gpu_range: tuple[float, float]
    engine: str = "vllm"  # the serving engine (decode.ENGINES)
    compute_band: tuple[float, float] = (1.0, 1.0)  # factors on the default compute efficiency
    maturity: tuple[float, float, float] | None = None  # (low, factor, high) of the engine

    @property
    def engine_name(self) -> str:
        return ENGINES[self.engine].name

    @property
    def tokens_per_s(self) -> float:
        """Output tokens/s of all the phase's GPUs."""
        return self.decode.tokens_per_s_per_gpu * self.count

    @property
    def seconds(self) -> float:
        return self.samples * self.output_tokens / self.tokens_per_s

    @property
    def seconds_range(self) -> tuple[float, float]:
        """The phase's seconds at the fast and the slow end of the decode range."""
        slow, fast = self.tokens_per_s_per_gpu_range
        tokens = self.samples * self.output_tokens
        return tokens / (fast * self.count), tokens / (slow * self.count)

    def to_json(self) -> dict[str, Any]:
        d = self.decode
        return {
            "gpu": self.gpu,
            "count": self.count,
            "tp": self.tp,
            "output_tokens": self.output_tokens,
            "prompt_tokens": self.prompt_tokens,
            "tokens_per_s": self.tokens_per_s,
            "tokens_per_s_per_gpu": d.tokens_per_s_per_gpu,
            "batch": d.batch,
            "batch_limit": d.batch_limit,
            "step_limit": d.step_limit,
            "kv_bytes_per_token": d.kv_bytes_per_token,
            "prefill_share": d.prefill_share,
            "bandwidth_efficiency": d.bandwidth_efficiency,
            "tokens_per_s_per_gpu_range": list(self.tokens_per_s_per_gpu_range),
            "days_range": [s / SECONDS_PER_DAY for s in self.seconds_range],
            "engine": self.engine,
            "compute_efficiency_band": list(self.compute_band),
            "software_maturity": None
            if self.maturity is None
            else dict(zip(("low", "factor", "high"), self.maturity, strict=True)),
        }


def regeneration_gpus(plan: Plan, gpus: dict[str, Gpu]) -> tuple[str, int, int]:
    """The regeneration's GPU type, GPUs used and tp. Unset, every GPU of the plan of its
    type in whole replicas (a GPU left over idles); a count the user sets must be whole
    replicas. Raises PlanError otherwise."""
    g = plan.regenerate
    key = g.gpu or plan.target.gpu
    if key not in gpus:
        raise PlanError.field("regenerate.gpu", repr(key), "unknown GPU")
    tp = g.tp or plan.target.tp
    if g.count is not None:
        if g.count % tp:
            reason = (
                f"is not a multiple of tp {tp} (each replica takes tp GPUs): set "
                f"regenerate.count or regenerate.tp"
            )
            raise PlanError(
                f"regenerate.count = {g.count} {reason}",
                where="regenerate.count",
                reason=reason,
                key="regenerate.count",
                value=str(g.count),
            )
        return key, g.count, tp
    same = {plan.target.gpu: plan.target.count}
    same[plan.drafter.gpu] = same.get(plan.drafter.gpu, 0) + plan.drafter.count
    count = same.get(key, 0) // tp * tp
    if count == 0:
        reason = "is no GPU of the plan" if key not in same else f"has fewer than tp {tp} GPUs"
        raise PlanError.said(
            f"regenerate.gpu = {key!r} {reason}: set regenerate.count",
            "regenerate.count",
            where="regenerate.gpu",
            value=repr(key),
        )
    return key, count, tp


@dataclass(frozen=True, slots=True)
class DecodeSetting:
    """What a regeneration's decode rests on besides the plan: its serving engine, the
    GPU's compute-efficiency band and the engine's maturity on the GPU (low, factor,
    high)."""

    engine: str
    compute_band: tuple[float, float]
    maturity: tuple[float, float, float] | None

    @property
    def software(self) -> float:
        return 1.0 if self.maturity is None else self.maturity[1]


def decode_setting(plan: Plan, gpu: Gpu) -> DecodeSetting:
    """The regeneration's engine (the launch format's: speculators runs vLLM, SpecForge
    SGLang), the GPU's measured compute-efficiency band and that engine's dated maturity
    on the GPU (hardware.toml)."""
    key = engine("target", plan.launch.format)
    band = efficiency_band("target", gpu.arch)
    mature = maturity(gpu, key)
    ends = None if mature is None else (mature.low, mature.factor, mature.high)
    return DecodeSetting(key, (band.low, band.high), ends)


def regeneration_decode(
    plan: Plan,
    model: TargetModel,
    gpu: Gpu,
    tp: int,
    efficiency: float | None = None,
    end: int | None = None,
) -> Decode:
    """One replica's decode of the plan's answers, at the fitted decode efficiency unless
    given, centrally or at one end (`end` 0: the slow end, 1: the fast end: the compute
    band and the maturity at that end); raises PlanError when the weights leave no room for
    a sequence."""
    w = plan.workload
    output = w.regenerate_output_tokens or w.avg_sample_tokens
    setting = decode_setting(plan, gpu)
    compute, software = 1.0, setting.software
    if end is not None:
        compute = setting.compute_band[end]
        if setting.maturity is not None:
            software = setting.maturity[0 if end == 0 else 2]
    rate = decode(
        model,
        gpu,
        tp,
        w.avg_sample_tokens - output,
        output,
        plan.regenerate.max_sequences,
        engine=setting.engine,
        bandwidth_efficiency=efficiency,
        compute_factor=compute,
        software_factor=software,
    )
    if rate is None:
        raise PlanError.at(
            "regenerate",
            f"{model.name}'s weights leave no room for a sequence's KV cache on {tp} x "
            f"{gpu.name} under {ENGINES[setting.engine].name}'s memory defaults: raise "
            f"regenerate.tp",
            key="regenerate.tp",
            value=str(tp),
        )
    return rate


def regeneration_rates(
    plan: Plan, model: TargetModel, gpu: Gpu, tp: int
) -> tuple[Decode, tuple[float, float]]:
    """The replica's decode at the fitted constants, and its rate per GPU at the slow and
    the fast end: the decode efficiency's range, the compute band and the engine's
    maturity range at the same end (raises PlanError as regeneration_decode)."""
    rate = regeneration_decode(plan, model, gpu, tp)
    slow, fast = (
        regeneration_decode(plan, model, gpu, tp, e, end).tokens_per_s_per_gpu
        for end, e in enumerate(DECODE_BANDWIDTH_EFFICIENCY_RANGE)
    )
    return rate, (slow, fast)


def regeneration(plan: Plan, model: TargetModel, gpus: dict[str, Gpu]) -> Regeneration | None:
    """The regeneration phase of a plan (None when workload.regenerate is off). Raises
    PlanError when its GPUs are not set right or the weights leave no room to decode."""
    w = plan.workload
    if not w.regenerate:
        return None
    key, count, tp = regeneration_gpus(plan, gpus)
    rate, (slow, fast) = regeneration_rates(plan, model, gpus[key], tp)
    output = w.regenerate_output_tokens or w.avg_sample_tokens
    setting = decode_setting(plan, gpus[key])
    return Regeneration(
        key,
        gpus[key].name,
        count,
        tp,
        output,
        w.avg_sample_tokens - output,
        w.samples,
        rate,
        (slow, fast),
        setting.engine,
        setting.compute_band,
        setting.maturity,
    )


@dataclass(frozen=True, slots=True)
class Phase:
    name: str  # "regenerate", "capture", "train"
    gpus: int  # GPUs billed during the phase
    days: float
    cost: float | None  # in the plan's cost unit
    cost_usd: float | None
    what: str  # the GPUs, e.g. "6 x RTX PRO 6000"

    @property
    def gpu_hours(self) -> float:
        return self.gpus * self.days * 24

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "gpus": self.gpus,
            "what": self.what,
            "days": self.days,
            "gpu_hours": self.gpu_hours,
            "cost": self.cost,
            "cost_usd": self.cost_usd,
        }


def regenerate_phase(regen: Regeneration, prices: Prices, end: int | None = None) -> Phase:
    """The regeneration phase at the central decode rate, or at one end of its range
    (`end` 0: the fast end, 1: the slow end; what a job's range adds to its run's)."""
    price = prices.by_gpu[regen.gpu]
    unit = price.unit_gpus
    billed = -(-regen.count // unit) * unit
    seconds = regen.seconds if end is None else regen.seconds_range[end]
    hours = seconds / SECONDS_PER_HOUR
    per_hour = prices.per_hour(regen.gpu)
    usd = price.usd_per_gpu_hour
    return Phase(
        "regenerate",
        billed,
        seconds / SECONDS_PER_DAY,
        None if per_hour is None else billed * per_hour * hours,
        None if usd is None else billed * usd * hours,
        f"{regen.count} x {regen.gpu_name}",
    )


def training_phases(
    mode: str,
    online_days: float,
    online_billed: int,
    online_cost: float | None,
    online_cost_usd: float | None,
    what: str,
    off: Offline | None,
    usd_per_hour: tuple[float | None, float | None],
    names: tuple[str, str],
) -> tuple[Phase, ...]:
    """Online: one train phase (the pipeline, capture inside). Offline: capture, then every
    epoch from storage; a storage cost counted in `cost` is shared by days."""
    if mode != "offline" or off is None:
        return (Phase("train", online_billed, online_days, online_cost, online_cost_usd, what),)
    train_days = off.epochs * off.train_days_per_epoch
    storage = off.storage_usd if off.storage_in_cost and off.storage_usd else 0.0
    share = off.capture_days / off.days if off.days else 0.0
    t_usd, d_usd = usd_per_hour

    def usd(billed: tuple[int, int], days: float) -> float | None:
        if t_usd is None or d_usd is None:
            return None
        return (billed[0] * t_usd + billed[1] * d_usd) * days * 24

    def gpus(billed: tuple[int, int]) -> str:
        return " + ".join(f"{n} x {name}" for n, name in zip(billed, names, strict=True) if n)

    def plus(value: float | None, extra: float) -> float | None:
        return None if value is None else value + extra

    train_cost = None if off.train_cost_per_epoch is None else off.epochs * off.train_cost_per_epoch
    storage_usd = off.storage_usd or 0.0
    return (
        Phase(
            "capture",
            sum(off.capture_billed),
            off.capture_days,
            plus(off.capture_cost, storage * share),
            plus(usd(off.capture_billed, off.capture_days), storage_usd * share),
            gpus(off.capture_billed),
        ),
        Phase(
            "train",
            sum(off.train_billed),
            train_days,
            plus(train_cost, storage * (1 - share)),
            plus(usd(off.train_billed, train_days), storage_usd * (1 - share)),
            gpus(off.train_billed),
        ),
    )


@dataclass(frozen=True, slots=True)
class Total:
    """The whole job: every phase summed."""

    days: float
    gpu_hours: float
    cost: float | None
    cost_usd: float | None

    def to_json(self, unit: str) -> dict[str, Any]:
        return {
            "days": self.days,
            "gpu_hours": self.gpu_hours,
            "cost": self.cost,
            "cost_unit": unit,
            "cost_usd": self.cost_usd,
        }


def total(phases: tuple[Phase, ...]) -> Total:
    def summed(values: list[float | None]) -> float | None:
        return None if any(v is None for v in values) else sum(v for v in values if v is not None)

    return Total(
        sum(p.days for p in phases),
        sum(p.gpu_hours for p in phases),
        summed([p.cost for p in phases]),
        summed([p.cost_usd for p in phases]),
    )
