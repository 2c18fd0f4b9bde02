"""Decode: the target regenerating answers, output tokens/s per GPU (docs/model.md,
"Regeneration").

Each decode step of a replica (tp GPUs) reads every weight once and each in-flight
sequence's KV cache, and runs 2 x active parameters FLOPs (plus attention) per sequence.
The batch is what the serving engine's KV pool holds (KV bytes per token = layers x
kv_heads x head_dim x 2 x dtype bytes, at the mean context in flight), capped by the
engine's max concurrent sequences; the pool is what the engine's default memory setting
leaves after the weights and what the runtime holds outside them (`kv_pool_gib`). A step
takes the longer of its memory time (bytes over the HBM bandwidth times
DECODE_BANDWIDTH_EFFICIENCY) and its compute time (at the GPU's prefill efficiency), plus
its tensor-parallel all-reduces and a fixed time per sequence in flight
(DECODE_STEP_S_PER_SEQUENCE: scheduling, sampling, detokenizing); both constants are fitted
on public decode-throughput measurements in fitting.py. Prompts are prefilled in batches
of the engine's token budget; engines that put prompt chunks into the decode steps (vLLM
V1, TensorRT-LLM) fill a memory-bound step's idle compute with them, SGLang runs prefill and
decode batches in turn.
"""

from __future__ import annotations

import math
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from ..basics.units import BF16_BYTES, BYTES_PER_GIB
from ..inputs.hardware import Gpu, Maturity
from ..inputs.targets import TargetModel
from . import fitting
from .pipeline import allreduce_seconds, mesh_links, tp_efficiency
from .roofline import FP8_SPEEDUP, default_efficiency, target_roofline
from .work import target_work

# The planner's default cap on sequences in flight: vLLM's max_num_seqs on GPUs under 70 GiB
# (1,024 above: vllm/engine/arg_utils.py @ 99d7eb5d) and SGLang's CUDA-graph batch at tp < 4
# on 60-160 GB GPUs.
DEFAULT_MAX_SEQUENCES = 256
# Bytes per weight / per KV element by precision.
DTYPE_BYTES = {"bf16": BF16_BYTES, "fp8": 1}


@dataclass(frozen=True, slots=True)
class Engine:
    """A serving engine's defaults that set a decode's batch and its prefill batches."""

    key: str
    name: str
    memory_setting: str  # the engine's own name for its memory fraction
    # Prompt chunks ride in the decode steps (mixed batches) rather than in their own.
    mixes_prefill: bool


ENGINES: dict[str, Engine] = {
    "vllm": Engine("vllm", "vLLM", "gpu_memory_utilization", mixes_prefill=True),
    "sglang": Engine("sglang", "SGLang", "mem_fraction_static", mixes_prefill=False),
    "trtllm": Engine("trtllm", "TensorRT-LLM", "free_gpu_memory_fraction", mixes_prefill=True),
}
# vLLM: gpu_memory_utilization 0.9 of the GPU holds the weights, what the runtime holds
# (profiled activations, non-torch memory) and the KV pool (vllm/config/cache.py @
# c1d86421, CacheConfig).
VLLM_GPU_MEMORY_UTILIZATION = 0.9
# TensorRT-LLM: the KV pool takes free_gpu_memory_fraction 0.9 of the memory free once the
# weights and activations are in place (tensorrt_llm/llmapi/llm_args.py, KvCacheConfig).
TRTLLM_FREE_GPU_MEMORY_FRACTION = 0.9
# TensorRT-LLM's token budget per step, max_num_tokens (BuildConfig default).
TRTLLM_MAX_NUM_TOKENS = 8192
MIB_PER_GIB = 1024


def _sglang_tier(gpu: Gpu, tp: int) -> tuple[int, int]:
    """SGLang's chunked_prefill_size and cuda_graph_max_bs by GPU memory
    (sgl-project/sglang python/sglang/srt/server_args.py, ServerArgs.
    _handle_gpu_memory_settings, main as read 2026-12-02): bigger GPUs prefill bigger chunks
    and capture bigger decode graphs."""
    mib = gpu.memory_gb * MIB_PER_GIB
    if mib < 20 * 1024:
        return 2048, 8
    if mib < 35 * 1024:
        return 2048, 24 if tp < 4 else 80
    if mib < 60 * 1024:
        return 4096, 32 if tp < 4 else 160
    if mib < 160 * 1024:
        return 8192, 256 if tp < 4 else 512
    return 16384, 512


def sglang_reserved_gib(gpu: Gpu, tp: int) -> float:
    """What SGLang leaves outside its static pool (weights + KV) by default:
    mem_fraction_static = (memory - reserved) / memory with reserved = 512 MiB of metadata
    + 1.5 MiB per chunked-prefill token (activations) + 2 MiB per CUDA-graph batch slot +
    tp/8 GiB, at least 10 GiB on GPUs over 60 GB (server_args.py, as above)."""
    chunk, graph_bs = _sglang_tier(gpu, tp)
    mib = 512 + max(chunk, 2048) * 1.5 + graph_bs * 2 + tp / 8 * 1024
    if gpu.memory_gb * MIB_PER_GIB > 60 * 1024:
        mib = max(mib, 10 * 1024)
    return mib / MIB_PER_GIB


def prefill_budget_tokens(engine: str, gpu: Gpu, tp: int = 1) -> int:
    """Prompt tokens an engine prefills in one step by default: SGLang's chunked_prefill_size
    by GPU memory; vLLM's max_num_batched_tokens for its API server (8,192 on GPUs of 70 GiB
    or more but A100, 2,048 below: vllm/engine/arg_utils.py @ 99d7eb5d, get_batch_defaults);
    TensorRT-LLM's max_num_tokens."""
    if engine == "sglang":
        return _sglang_tier(gpu, tp)[0]
    if engine == "vllm":
        return 8192 if gpu.memory_gb >= 70 and "a100" not in gpu.key else 2048
    return TRTLLM_MAX_NUM_TOKENS


def kv_pool_gib(
    engine: str,
    gpu: Gpu,
    tp: int,
    weights_gib: float,
    memory_fraction: float | None = None,
    held_gib: float | None = None,
) -> float:
    """One GPU's KV pool under the engine's memory setting (its default unless given):
    vLLM's share of the GPU less the weights and what the runtime holds
    (DECODE_RUNTIME_HELD_GIB unless given), SGLang's static pool less the weights,
    TensorRT-LLM's share of what the weights and the runtime leave."""
    memory = gpu.memory_gb
    held = DECODE_RUNTIME_HELD_GIB if held_gib is None else held_gib
    if engine == "sglang":
        fraction = (
            (memory - sglang_reserved_gib(gpu, tp)) / memory
            if memory_fraction is None
            else memory_fraction
        )
        return fraction * memory - weights_gib
    if engine == "trtllm":
        share = TRTLLM_FREE_GPU_MEMORY_FRACTION if memory_fraction is None else memory_fraction
        return share * (memory - weights_gib - held)
    share = VLLM_GPU_MEMORY_UTILIZATION if memory_fraction is None else memory_fraction
    return share * memory - weights_gib - held


def maturity(gpu: Gpu, engine: str) -> Maturity | None:
    """A serving engine's maturity on this GPU for decode: its decode entry in hardware.toml,
    else its target (capture) entry, the same engine's kernels on the same GPU."""
    return gpu.maturity_of("decode", engine) or gpu.maturity_of("target", engine)


@dataclass(frozen=True, slots=True)
class Decode:
    """One replica regenerating answers: its batch, its step, and the rate per GPU."""

    tokens_per_s_per_gpu: float  # output tokens
    batch: int  # sequences in flight per replica
    batch_limit: str  # "memory", "max_sequences" or "token_budget"
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


@dataclass(frozen=True, slots=True)
class Terms:
    """A replica's decode before the fitted constants scale it: its batch, a step's bytes
    and compute, and its prompts' work.

    A sample takes out / batch steps' worth of the replica (each step advances every
    sequence in flight). Where prompts ride in the decode steps (`prompt_steps` > 0: vLLM
    V1, TensorRT-LLM), a sample's prompt fills `prompt_steps` steps with a chunk of
    `chunk_s` compute each: such a step takes max(memory, compute + chunk) instead of
    max(memory, compute), so a memory-bound step's idle compute absorbs the chunk, the rest
    costs time. Otherwise (SGLang, vLLM V0) the prompt prefills in its own batches,
    `prefill_s` per sample."""

    batch: int
    batch_limit: str
    step_bytes: float
    kv_bytes_per_token: float
    memory_s_at_full_bandwidth: float  # per step
    compute_s: float  # per step: the batch's decode tokens
    comm_s: float  # per step
    chunk_s: float  # per step carrying a prompt chunk: its compute
    prompt_steps: float  # per sample: steps carrying its prompt (0: prompts apart)
    prefill_s: float  # per sample, when prompts prefill apart
    output_tokens: float
    tp: int

    def _sample_s(self, memory_s: float, fixed_s: float) -> tuple[float, float]:
        """(a sample's time in the replica, the part of it that is its prompt's)."""
        steps = self.output_tokens / self.batch
        decode_step = max(memory_s, self.compute_s) + fixed_s
        if not self.prompt_steps:
            return steps * decode_step + self.prefill_s, self.prefill_s
        extra = max(memory_s, self.compute_s + self.chunk_s) - max(memory_s, self.compute_s)
        prompt_s = self.prompt_steps * extra
        return max(steps, self.prompt_steps) * decode_step + prompt_s, prompt_s

    def at(self, efficiency: float, s_per_sequence: float, software: float = 1.0) -> Decode:
        """The decode at a bandwidth efficiency, a time per sequence in flight per step and
        a software factor (the engine's maturity on the GPU: it scales the whole rate)."""
        memory_s = self.memory_s_at_full_bandwidth / efficiency
        fixed_s = self.comm_s + self.batch * s_per_sequence
        sample_s, prompt_s = self._sample_s(memory_s, fixed_s)
        sample_s /= software
        prompt_s /= software
        return Decode(
            tokens_per_s_per_gpu=self.output_tokens / sample_s / self.tp,
            batch=self.batch,
            batch_limit=self.batch_limit,
            step_s=(max(memory_s, self.compute_s) + fixed_s) / software,
            step_limit="memory" if memory_s >= self.compute_s else "compute",
            step_bytes=self.step_bytes,
            kv_bytes_per_token=self.kv_bytes_per_token,
            decode_s_per_sample=sample_s - prompt_s,
            prefill_s_per_sample=prompt_s,
            bandwidth_efficiency=efficiency,
        )

    def efficiency_for(self, tokens_per_s_per_gpu: float, s_per_sequence: float) -> float:
        """The bandwidth efficiency at which this decode reaches a rate (software factor 1);
        inf when none does (its compute, prompts and fixed times alone take longer). A
        sample's time is piecewise linear in the step's memory time u: solved segment by
        segment."""
        target_s = self.output_tokens / (self.tp * tokens_per_s_per_gpu)
        fixed_s = self.comm_s + self.batch * s_per_sequence
        corners = sorted({self.compute_s, self.compute_s + self.chunk_s})
        low = 0.0
        for corner in (*corners, math.inf):
            high = corner
            at_high = self._sample_s(high, fixed_s)[0] if high < math.inf else math.inf
            if at_high >= target_s:
                at_low = self._sample_s(low, fixed_s)[0]
                if at_low >= target_s:
                    return math.inf if low == 0.0 else self.memory_s_at_full_bandwidth / low
                if high == math.inf:  # the last segment: slope out / batch steps
                    slope = max(self.output_tokens / self.batch, self.prompt_steps)
                    u = low + (target_s - at_low) / slope
                else:
                    u = low + (target_s - at_low) * (high - low) / (at_high - at_low)
                return self.memory_s_at_full_bandwidth / u
            low = high
        return math.inf  # pragma: no cover - the last segment always crosses

    def s_per_sequence_for(self, tokens_per_s_per_gpu: float, efficiency: float) -> float:
        """The time per sequence per step at which this decode reaches a rate at this
        efficiency (software factor 1); negative when even none is too slow."""
        target_s = self.output_tokens / (self.tp * tokens_per_s_per_gpu)
        memory_s = self.memory_s_at_full_bandwidth / efficiency
        base_s = self._sample_s(memory_s, self.comm_s)[0]
        steps = max(self.output_tokens / self.batch, self.prompt_steps)
        return (target_s - base_s) / (steps * self.batch)


def kv_bytes_per_token(model: TargetModel, kv_dtype: str = "bf16") -> float:
    """Keys and values of every layer: layers x kv_heads x head_dim x 2 x dtype bytes."""
    return float(model.n_layers * model.kv_dim * 2 * DTYPE_BYTES[kv_dtype])


def decode_terms(
    model: TargetModel,
    gpu: Gpu,
    tp: int,
    input_tokens: float,
    output_tokens: float,
    max_sequences: int = DEFAULT_MAX_SEQUENCES,
    *,
    engine: str = "vllm",
    precision: str = "bf16",
    kv_dtype: str = "bf16",
    compute_factor: float = 1.0,
    memory_fraction: float | None = None,
    prefill_tokens: int | None = None,
    mixes_prefill: bool | None = None,
    runtime_held_gib: float | None = None,
) -> Terms | None:
    """A replica's decode terms; None when the weights leave no room for one sequence's KV
    cache. `compute_factor` scales the GPU's default compute efficiency (its band);
    `memory_fraction`, `prefill_tokens`, `mixes_prefill` and `runtime_held_gib` override the
    engine's defaults."""
    speedup = FP8_SPEEDUP if precision == "fp8" else 1.0
    weights = DTYPE_BYTES[precision] * model.total_params
    kv_token = kv_bytes_per_token(model, kv_dtype)
    # Paged KV caches hold what each sequence has so far: the prompt and, on average over
    # its decode, half the answer.
    context = input_tokens + output_tokens / 2
    pool_gib = tp * kv_pool_gib(
        engine, gpu, tp, weights / tp / BYTES_PER_GIB, memory_fraction, runtime_held_gib
    )
    free = pool_gib * BYTES_PER_GIB
    fit = math.floor(free / (kv_token * context)) if free > 0 else 0
    if fit < 1:
        return None
    batch = min(max_sequences, fit)
    limit = "max_sequences" if batch == max_sequences else "memory"
    # The LM head runs for every generated token; attention reads the context once.
    flop_per_token = (
        2.0 * (model.n_layers * model.layer_params_active + model.hidden * model.vocab)
        + 4.0 * model.n_layers * context * model.q_dim
    )
    compute_rate = (
        gpu.bf16_flop_per_s * speedup * default_efficiency("target", gpu, model.is_moe)
    ) * compute_factor
    # Two all-reduces of each sequence's hidden state per layer over the GPU link, as the
    # capture's prefill (pipeline.tp_efficiency); none at tp 1.
    link = gpu.link_bytes_per_s * mesh_links(gpu, tp)
    budget = prefill_tokens or prefill_budget_tokens(engine, gpu, tp)
    mixes = ENGINES[engine].mixes_prefill if mixes_prefill is None else mixes_prefill
    # A step holds at most the budget's tokens, one per sequence in flight (vLLM caps
    # max_num_seqs at max_num_batched_tokens); the rest of the budget carries prompts.
    if mixes and budget < batch:
        batch, limit = budget, "token_budget"
    step_bytes = weights + batch * context * kv_token
    prefill = prefill_tokens_per_s_per_gpu(
        model,
        gpu,
        tp,
        input_tokens,
        speedup * compute_factor,
        batch_tokens=budget,
        weight_bytes=DTYPE_BYTES[precision],
    )
    chunk = max(budget - batch, 1)
    return Terms(
        batch=batch,
        batch_limit=limit,
        step_bytes=step_bytes,
        kv_bytes_per_token=kv_token,
        memory_s_at_full_bandwidth=step_bytes / (tp * gpu.mem_bytes_per_s),
        compute_s=batch * flop_per_token / (tp * compute_rate),
        comm_s=batch * 2 * model.n_layers * allreduce_seconds(tp, BF16_BYTES * model.hidden, link),
        chunk_s=chunk / (prefill * tp) if mixes else 0.0,
        prompt_steps=input_tokens / chunk if mixes else 0.0,
        prefill_s=0.0 if mixes else input_tokens / (prefill * tp),
        output_tokens=output_tokens,
        tp=tp,
    )


def decode(
    model: TargetModel,
    gpu: Gpu,
    tp: int,
    input_tokens: float,
    output_tokens: float,
    max_sequences: int = DEFAULT_MAX_SEQUENCES,
    *,
    engine: str = "vllm",
    precision: str = "bf16",
    kv_dtype: str = "bf16",
    bandwidth_efficiency: float | None = None,
    compute_factor: float = 1.0,
    software_factor: float = 1.0,
) -> Decode | None:
    """The decode model at the engine's defaults and the fitted constants (the efficiency
    unless given); None when the weights leave no room for one sequence's KV cache.
    `software_factor` scales the whole rate (the engine's maturity on this GPU)."""
    terms = decode_terms(
        model,
        gpu,
        tp,
        input_tokens,
        output_tokens,
        max_sequences,
        engine=engine,
        precision=precision,
        kv_dtype=kv_dtype,
        compute_factor=compute_factor,
    )
    if terms is None:
        return None
    eff = DECODE_BANDWIDTH_EFFICIENCY if bandwidth_efficiency is None else bandwidth_efficiency
    return terms.at(eff, DECODE_STEP_S_PER_SEQUENCE, software_factor)


def prefill_tokens_per_s_per_gpu(
    model: TargetModel,
    gpu: Gpu,
    tp: int,
    tokens: float,
    speedup: float = 1.0,
    *,
    batch_tokens: float | None = None,
    weight_bytes: int = BF16_BYTES,
) -> float:
    """A prompt's prefill per GPU: the target's roofline at its default efficiency, less the
    TP all-reduces (as the capture's prefill is estimated). Each forward reads the weights
    once for `batch_tokens` tokens (the engine's budget: several prompts, or a chunk of a
    long one), attention runs over the prompt's own length; one prompt alone when None."""
    work = target_work(model, model.default_layer_ids(fitting.CAPTURED_LAYERS), max(tokens, 1.0))
    if batch_tokens is not None:
        work = replace(
            work,
            tokens_per_forward=max(batch_tokens, 1.0),
            weight_bytes_per_forward=work.weight_bytes_per_forward * weight_bytes / BF16_BYTES,
        )
    rate = (
        target_roofline(work, gpu).tokens_per_s
        * default_efficiency("target", gpu, model.is_moe)
        * speedup
    )
    return rate * tp_efficiency(gpu, tp, model.hidden, work.layers_run, rate)


def case_terms(case: Mapping[str, Any], gpu: Gpu, held_gib: float) -> Terms:
    """A decode case of the validation set (measurements.toml) as the model reads it, with
    this much memory held by the runtime."""
    terms = decode_terms(
        fitting.case_model(case),
        gpu,
        int(case.get("tp", 1)),
        float(case["input_tokens"]),
        float(case["output_tokens"]),
        int(case.get("max_sequences", DEFAULT_MAX_SEQUENCES)),
        engine=case["serving_engine"],
        precision=case.get("precision", "bf16"),
        kv_dtype=case.get("kv_dtype", "bf16"),
        memory_fraction=case.get("memory_fraction"),
        prefill_tokens=case.get("prefill_tokens"),
        mixes_prefill=case.get("mixes_prefill"),
        runtime_held_gib=held_gib,
    )
    if terms is None:
        raise ValueError(f"{case['id']}: the weights leave no room for a sequence")
    return terms


fitting.register_decode_terms(case_terms)

# What a serving engine holds outside its weights and KV pool within its memory share: the
# CUDA context, non-torch (NCCL) buffers, the profiled activations of a prefill batch and
# its CUDA graphs. Fitted (fitting.py) on vLLM's own memory-profiling logs on H100.
DECODE_RUNTIME_HELD_GIB: float = fitting.value("DECODE_RUNTIME_HELD_GIB")
# The time a decode step spends per sequence in flight beyond its bytes and FLOPs (the
# scheduler, sampling, detokenizing): fitted (fitting.py) with the efficiency on the same
# decode-throughput measurements, by least squares of the log errors.
DECODE_STEP_S_PER_SEQUENCE: float = fitting.value("DECODE_STEP_S_PER_SEQUENCE")
# Achieved share of the HBM bandwidth in a decode step. Fitted (fitting.py) on public
# decode-throughput measurements at high concurrency (TensorRT-LLM's, NIM's and vLLM's
# published tables; docs/validation.md).
DECODE_BANDWIDTH_EFFICIENCY: float = fitting.value("DECODE_BANDWIDTH_EFFICIENCY")
# Its range (the cases' implied values and the leave-one-source-out fits): a projection's
# regeneration carries the rates at both ends, with the compute efficiency's band and the
# engine's maturity range (core/phases.py).
DECODE_BANDWIDTH_EFFICIENCY_RANGE: tuple[float, float] = fitting.value_range(
    "DECODE_BANDWIDTH_EFFICIENCY"
)
