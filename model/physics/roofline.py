"""The rate of one GPU on one role with no measurement: its roofline (compute or memory
bound, from the work per token and the GPU's peaks) times the GPU class's default
efficiency, and the spread such an estimate carries. The validation set (evidence/)
predicts its cases with these; rates.py adds measurements, readings and ranges."""

from __future__ import annotations

from dataclasses import dataclass

from ..basics.units import BF16_BYTES
from ..inputs.hardware import Gpu
from . import fitting
from .work import WEIGHT_BYTES_PER_PARAM, DrafterWork, TargetWork


@dataclass(frozen=True, slots=True)
class Roofline:
    """One GPU's rate on one role at 100 % efficiency, and which limit sets it."""

    tokens_per_s: float
    compute_tokens_per_s: float
    memory_tokens_per_s: float

    @property
    def limit(self) -> str:
        return "compute" if self.compute_tokens_per_s <= self.memory_tokens_per_s else "memory"

    @property
    def peak_share(self) -> float:
        """Roofline as a share of the compute roof (< 1 when memory-bound)."""
        return self.tokens_per_s / self.compute_tokens_per_s


def target_roofline(work: TargetWork, gpu: Gpu, precision: str = "bf16") -> Roofline:
    """bf16 by default; a target in fp8 or fp4 computes precision_speedup faster and reads
    its weights at that precision's bytes."""
    compute = gpu.bf16_flop_per_s / work.time_flop(gpu.softmax_speedup)
    memory = gpu.mem_bytes_per_s / work.bytes_per_token
    if precision != "bf16":
        compute *= precision_speedup(precision, gpu)
        weights = work.weight_bytes_per_forward / work.tokens_per_forward
        narrow = weights * WEIGHT_BYTES_PER_PARAM[precision] / BF16_BYTES
        memory = gpu.mem_bytes_per_s / (work.bytes_per_token - weights + narrow)
    return Roofline(min(compute, memory), compute, memory)


def drafter_roofline(work: DrafterWork, gpu: Gpu, sample_tokens: float) -> Roofline:
    compute = gpu.bf16_flop_per_s / work.time_flop(gpu.softmax_speedup) * sample_tokens
    memory = gpu.mem_bytes_per_s / work.bytes_per_sample * sample_tokens
    return Roofline(min(compute, memory), compute, memory)


# FP8 matmuls give 1.3-1.9x bf16 throughput end to end, not the datasheet's 2x (docs/hardware.md's
# planning notes); the midpoint is used where a measurement ran in FP8.
FP8_SPEEDUP = 1.6

# NVFP4 prefill over FP8 prefill on a GPU with FP4 tensor cores, end to end (not the
# datasheet's 2x: attention, norms and the activations' quantization stay at their own
# precision). Fitted (fitting.py) on the public prefill measurements of both precisions on
# one stack: SGLang's DeepSeek-R1 prefill on GB200 (1.42, attention moved to FP8 too: the
# high end) and vLLM's DeepSeek-V3.2 prefill on GB300 (1.14, sparse-attention prefill: the
# low end), one vote per source.
FP4_PREFILL_OVER_FP8: float = fitting.value("FP4_PREFILL_OVER_FP8")

# A target's weight precisions (plan target.precision, a case's `precision`).
PRECISIONS = ("bf16", "fp8", "fp4")


def precision_speedup(precision: str, gpu: Gpu) -> float:
    """A target's prefill rate in this precision over its bf16 rate on the GPU: FP8 at
    FP8_SPEEDUP; FP4 at FP8_SPEEDUP x FP4_PREFILL_OVER_FP8 where the GPU has FP4 tensor
    cores, else at the FP8 rate (FP4 weights computed at FP8: a weight-only format)."""
    if precision == "fp4":
        return FP8_SPEEDUP * (FP4_PREFILL_OVER_FP8 if gpu.supports("fp4") else 1.0)
    return FP8_SPEEDUP if precision == "fp8" else 1.0


# MoE layers reach a lower share of peak than dense ones (grouped expert GEMMs, routing,
# all-to-all). Fitted (fitting.py) on Megatron-Bridge gpt-oss-120b bf16 training on B300
# (15,232 tokens/s per GPU against the dense default's prediction); the same table's B200
# and H100 rows are in the check half.
MOE_EFFICIENCY_FACTOR: float = fitting.value("MOE_EFFICIENCY_FACTOR")

# Dense LLM training's share of a GPU's best matmul (fitted on torchtitan's and
# llm-foundry's A100 runs): the compute-bound limit of training, and the reference the MoE
# factor is measured against.
DENSE_TRAINING_SHARE: float = fitting.value("DENSE_TRAINING_SHARE")


def dense_training_efficiency(gpu: Gpu, moe: bool = False) -> float:
    """What dense (or MoE) LLM training reaches on the GPU, as a share of its dense peak."""
    return DENSE_TRAINING_SHARE * gpu.efficiency_ceiling * (MOE_EFFICIENCY_FACTOR if moe else 1.0)


def default_efficiency(role: str, gpu: Gpu, moe: bool = False) -> float:
    """The GPU class's typical share of peak for a role (hardware.toml), lower for MoE."""
    base = gpu.prefill_efficiency if role == "target" else gpu.training_efficiency
    return base * (MOE_EFFICIENCY_FACTOR if moe else 1.0)


# The spread the validation set gives its predicted cases (evidence.py). A plan's estimate
# at default efficiency takes its band from the measured efficiencies instead
# (scenarios.efficiency_band). As fractions below and above the central figure: the
# ranges docs/hardware.md gives for the planning efficiencies (prefill 50 % (40-60) on
# H100, training 40 % (30-50)), which cover the fit half's errors (prefill within 7 %,
# training within 19 %; docs/validation.md).
ESTIMATE_SPREAD: dict[str, tuple[float, float]] = {
    "target": (0.20, 0.20),
    "drafter": (0.25, 0.25),
}
