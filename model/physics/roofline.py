"""The rate of one GPU on one role with no measurement: its roofline (compute or memory
bound, from the work per token and the GPU's peaks) times the GPU class's default
efficiency, and the spread such an estimate carries. The validation set (evidence/)
predicts its cases with these; rates.py adds measurements, readings and ranges."""

from __future__ import annotations

from dataclasses import dataclass

from ..inputs.hardware import Gpu
from . import fitting
from .work import DrafterWork, TargetWork


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


def target_roofline(work: TargetWork, gpu: Gpu) -> Roofline:
    compute = gpu.bf16_flop_per_s / work.time_flop(gpu.softmax_speedup)
    memory = gpu.mem_bytes_per_s / work.bytes_per_token
    return Roofline(min(compute, memory), compute, memory)


def drafter_roofline(work: DrafterWork, gpu: Gpu, sample_tokens: float) -> Roofline:
    compute = gpu.bf16_flop_per_s / work.time_flop(gpu.softmax_speedup) * sample_tokens
    memory = gpu.mem_bytes_per_s / work.bytes_per_sample * sample_tokens
    return Roofline(min(compute, memory), compute, memory)


# FP8 matmuls give 1.3-1.9x bf16 throughput end to end, not the datasheet's 2x (docs/hardware.md's
# planning notes); the midpoint is used where a measurement ran in FP8.
FP8_SPEEDUP = 1.6

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
