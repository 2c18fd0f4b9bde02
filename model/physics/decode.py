"""Decode: the target regenerating answers, output tokens/s per GPU (docs/model.md,
"Regeneration").

Each decode step of a replica (tp GPUs) reads every weight once and each in-flight
sequence's KV cache, and runs 2 x active parameters FLOPs (plus attention) per sequence.
The batch is what fits in memory after the weights (KV bytes per token = layers x
kv_heads x head_dim x 2 x dtype bytes, at the mean context in flight), capped by the
engine's max concurrent sequences. A step takes the longer of its memory time (bytes over
the HBM bandwidth times DECODE_BANDWIDTH_EFFICIENCY, fitted on public decode-throughput
measurements in fitting.py) and its compute time (at the GPU's prefill efficiency). Each
sample's prompt is prefilled at the prefill rate, and prefill and decode share the GPUs'
time.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from ..basics.units import BF16_BYTES, BYTES_PER_GIB
from ..inputs.hardware import Gpu
from ..inputs.targets import TargetModel
from . import fitting, memory
from .pipeline import tp_efficiency
from .roofline import FP8_SPEEDUP, default_efficiency, target_roofline
from .work import target_work

# The engines' default cap on sequences in flight: vLLM's max_num_seqs (256), which SGLang's
# default CUDA-graph batch (up to 256 on large GPUs) matches.
DEFAULT_MAX_SEQUENCES = 256
# Bytes per weight / per KV element by precision.
DTYPE_BYTES = {"bf16": BF16_BYTES, "fp8": 1}


@dataclass(frozen=True, slots=True)
class Decode:
    """One replica regenerating answers: its batch, its step, and the rate per GPU."""

    tokens_per_s_per_gpu: float  # output tokens
    batch: int  # sequences in flight per replica
    batch_limit: str  # "memory" or "max_sequences"
    step_s: float
    step_limit: str  # "memory" or "compute"
    step_bytes: float  # per replica: weights + the KV cache in flight
    kv_bytes_per_token: float
    decode_s_per_sample: float  # per replica, batched (a sample's share of the steps)
    prefill_s_per_sample: float  # per replica
    bandwidth_efficiency: float

    @property
    def prefill_share(self) -> float:
        return self.prefill_s_per_sample / (self.prefill_s_per_sample + self.decode_s_per_sample)


def kv_bytes_per_token(model: TargetModel, kv_dtype: str = "bf16") -> float:
    """Keys and values of every layer: layers x kv_heads x head_dim x 2 x dtype bytes."""
    return float(model.n_layers * model.kv_dim * 2 * DTYPE_BYTES[kv_dtype])


def decode(
    model: TargetModel,
    gpu: Gpu,
    tp: int,
    input_tokens: float,
    output_tokens: float,
    max_sequences: int = DEFAULT_MAX_SEQUENCES,
    *,
    precision: str = "bf16",
    kv_dtype: str = "bf16",
    bandwidth_efficiency: float | None = None,
    reserve_gib: float | None = None,
) -> Decode | None:
    """The decode model at the fitted efficiency and runtime reserve unless given; None
    when the weights leave no room for one sequence's KV cache."""
    eff = DECODE_BANDWIDTH_EFFICIENCY if bandwidth_efficiency is None else bandwidth_efficiency
    reserve = memory.RUNTIME_RESERVE_GIB if reserve_gib is None else reserve_gib
    speedup = FP8_SPEEDUP if precision == "fp8" else 1.0
    weights = DTYPE_BYTES[precision] * model.total_params
    kv_token = kv_bytes_per_token(model, kv_dtype)
    # Paged KV caches hold what each sequence has so far: the prompt and, on average over
    # its decode, half the answer.
    context = input_tokens + output_tokens / 2
    free = tp * (gpu.memory_gb - reserve) * BYTES_PER_GIB - weights
    fit = math.floor(free / (kv_token * context)) if free > 0 else 0
    if fit < 1:
        return None
    batch = min(max_sequences, fit)
    step_bytes = weights + batch * context * kv_token
    memory_s = step_bytes / (tp * gpu.mem_bytes_per_s * eff)
    # The LM head runs for every generated token; attention reads the context once.
    flop_per_token = (
        2.0 * (model.n_layers * model.layer_params_active + model.hidden * model.vocab)
        + 4.0 * model.n_layers * context * model.q_dim
    )
    compute_rate = gpu.bf16_flop_per_s * speedup * default_efficiency("target", gpu, model.is_moe)
    compute_s = batch * flop_per_token / (tp * compute_rate)
    step_s = max(memory_s, compute_s)
    prefill = prefill_tokens_per_s_per_gpu(model, gpu, tp, input_tokens, speedup)
    decode_s = output_tokens * step_s / batch
    prefill_s = input_tokens / (prefill * tp)
    return Decode(
        tokens_per_s_per_gpu=output_tokens / (decode_s + prefill_s) / tp,
        batch=batch,
        batch_limit="max_sequences" if batch == max_sequences else "memory",
        step_s=step_s,
        step_limit="memory" if memory_s >= compute_s else "compute",
        step_bytes=step_bytes,
        kv_bytes_per_token=kv_token,
        decode_s_per_sample=decode_s,
        prefill_s_per_sample=prefill_s,
        bandwidth_efficiency=eff,
    )


def prefill_tokens_per_s_per_gpu(
    model: TargetModel, gpu: Gpu, tp: int, tokens: float, speedup: float = 1.0
) -> float:
    """The prompt's prefill per GPU: the target's roofline at its default efficiency, less
    the TP all-reduces (as the capture's prefill is estimated)."""
    work = target_work(model, model.default_layer_ids(fitting.CAPTURED_LAYERS), max(tokens, 1.0))
    rate = (
        target_roofline(work, gpu).tokens_per_s
        * default_efficiency("target", gpu, model.is_moe)
        * speedup
    )
    return rate * tp_efficiency(gpu, tp, model.hidden, work.layers_run, rate)


def case_rate(case: Mapping[str, Any], gpu: Gpu, efficiency: float, reserve_gib: float) -> float:
    """A decode case of the validation set (measurements.toml) at this efficiency."""
    rate = decode(
        fitting.case_model(case),
        gpu,
        int(case.get("tp", 1)),
        float(case["input_tokens"]),
        float(case["output_tokens"]),
        int(case.get("max_sequences", DEFAULT_MAX_SEQUENCES)),
        precision=case.get("precision", "bf16"),
        kv_dtype=case.get("kv_dtype", "bf16"),
        bandwidth_efficiency=efficiency,
        reserve_gib=reserve_gib,
    )
    if rate is None:
        raise ValueError(f"{case['id']}: the weights leave no room for a sequence")
    return rate.tokens_per_s_per_gpu


fitting.register_decode_rate(case_rate)

# Achieved share of the HBM bandwidth in a decode step. Fitted (fitting.py) on public
# decode-throughput measurements at high concurrency (TensorRT-LLM's, NIM's and vLLM's
# published tables; docs/validation.md).
DECODE_BANDWIDTH_EFFICIENCY: float = fitting.value("DECODE_BANDWIDTH_EFFICIENCY")
# Its range (the cases' implied values and the leave-one-source-out fits): a projection's
# regeneration carries the rates at both ends, since the sources disagree by up to 2x.
DECODE_BANDWIDTH_EFFICIENCY_RANGE: tuple[float, float] = fitting.value_range(
    "DECODE_BANDWIDTH_EFFICIENCY"
)
