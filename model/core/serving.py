"""The serving fleet at a request rate (serving.requests_per_s): the GPUs that serve the
rate without the drafter, from the decode model the regeneration phase uses
(physics/decode.py) at the serving engine's batch regime, and with it (divided by the
serving speedup), so the break-even is stated at a request rate, not only per GPU.

A request decodes `output_tokens` after a prompt of `input_tokens`. At low batch (one
request in flight per engine, the regime every public speedup pair was measured at) a
replica decodes one sequence at a time; at high batch it holds what its KV pool and the
engine's cap allow (decode's defaults). The GPUs needed are the rate times a request's
share of a replica's time, times its tp GPUs: a fleet's mean, not rounded to whole
replicas (the saved GPU-hours are what pays the training back).
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..basics.errors import PlanError
from ..physics.decode import (
    DECODE_BANDWIDTH_EFFICIENCY_RANGE,
    DEFAULT_MAX_SEQUENCES,
    ENGINES,
    Decode,
    decode,
    maturity,
)
from .resolve import Resolved

# The benchmark every public tau-vs-speedup pair on SGLang was measured on (the engine
# factor's): TorchSpec's DFlash serving benchmark of Qwen3-8B, greedy, concurrency 1,
# max_new_tokens 2048 (lightseekorg/TorchSpec docs/dflash/training_results.md @ 6023d9bf,
# "Throughput & Speedup (SGLang backend)", 2026-03-27). Its mean generated length is not
# stated: the cap is the default, and the speedup holds at it. Nor is its prompt length:
# a request then has no prompt (at concurrency 1 a few hundred prompt tokens prefill in
# milliseconds against 2,048 decode steps of several each, under 1 % of the request).
BENCHMARK_OUTPUT_TOKENS = 2048
BENCHMARK_SOURCE = (
    "TorchSpec's SGLang serving benchmark, max_new_tokens 2,048 "
    "(docs/dflash/training_results.md @ 6023d9bf)"
)
# Sequences in flight per replica by batch regime: low batch is one request at a time
# (concurrency 1); high batch is what the engine's KV pool holds, up to its default cap.
REGIME_MAX_SEQUENCES = {"low-batch": 1, "high-batch": DEFAULT_MAX_SEQUENCES}


@dataclass(frozen=True, slots=True)
class Fleet:
    """Serving a request rate without the drafter and with it."""

    requests_per_s: float
    output_tokens: int
    input_tokens: int
    output_source: str  # where output_tokens comes from
    tp: int
    batch: int  # sequences in flight per replica
    # Output tokens/s per GPU without the drafter: central, (slow, fast).
    tokens_per_s_per_gpu: float
    tokens_per_s_range: tuple[float, float]
    gpus_without: float
    gpus_without_range: tuple[float, float]  # (fast decode, slow decode)

    def gpus_with(self, speedup: float) -> float:
        return self.gpus_without / speedup

    def saved(self, speedup: float, gpus_without: float | None = None) -> float:
        """GPUs the drafter frees at this speedup (none below 1x: it slows serving)."""
        base = self.gpus_without if gpus_without is None else gpus_without
        return max(base * (1.0 - 1.0 / speedup), 0.0) if speedup > 0 else 0.0

    def to_json(self) -> dict[str, Any]:
        return {
            "requests_per_s": self.requests_per_s,
            "output_tokens": self.output_tokens,
            "input_tokens": self.input_tokens,
            "output_tokens_source": self.output_source,
            "tp": self.tp,
            "batch": self.batch,
            "tokens_per_s_per_gpu": self.tokens_per_s_per_gpu,
            "tokens_per_s_range": list(self.tokens_per_s_range),
            "gpus_without_drafter": self.gpus_without,
            "gpus_without_drafter_range": list(self.gpus_without_range),
        }


def request_tokens(r: Resolved) -> tuple[int, int, str]:
    """(output, input tokens per request, where the output comes from): serving's own,
    else the plan's regenerated answers (their prompts the rest of a sample), else the
    engine factor's benchmark."""
    s, w = r.plan.serving, r.plan.workload
    if s.output_tokens is not None:
        return s.output_tokens, 0, "serving.output_tokens"
    if w.regenerate_output_tokens is not None:
        out = w.regenerate_output_tokens
        return out, w.avg_sample_tokens - out, "workload.regenerate_output_tokens"
    return BENCHMARK_OUTPUT_TOKENS, 0, BENCHMARK_SOURCE


def fleet(r: Resolved, gpu_key: str) -> Fleet | None:
    """The fleet serving serving.requests_per_s on the serving GPU (None without a rate).
    Raises PlanError (one line) for an engine the decode model does not know or a GPU
    whose memory cannot hold the target's weights and one sequence."""
    plan = r.plan
    s = plan.serving
    if s.requests_per_s is None:
        return None
    if s.engine not in ENGINES:
        known = ", ".join(sorted(e for e in ENGINES if e != "trtllm"))
        raise PlanError.field(
            "serving.engine",
            s.engine,
            f"the decode model behind serving.requests_per_s knows {known}; set "
            f"serving.count instead",
        )
    gpu = r.gpus[gpu_key]
    tp = plan.target.tp if gpu_key == plan.target.gpu else 1
    output, prompt, source = request_tokens(r)
    mature = maturity(gpu, s.engine)
    ends = (1.0, 1.0, 1.0) if mature is None else (mature.low, mature.factor, mature.high)

    def rate(efficiency: float | None, software: float) -> Decode:
        d = decode(
            r.model,
            gpu,
            tp,
            prompt,
            output,
            REGIME_MAX_SEQUENCES[s.regime],
            engine=s.engine,
            bandwidth_efficiency=efficiency,
            software_factor=software,
        )
        if d is None:
            raise PlanError.field(
                "serving.gpu",
                gpu_key,
                f"{r.model.name}'s weights leave no room for a sequence on {tp} x {gpu.name} "
                f"under {ENGINES[s.engine].name}'s memory defaults",
            )
        return d

    at = rate(None, ends[1])
    central = at.tokens_per_s_per_gpu
    slow = rate(DECODE_BANDWIDTH_EFFICIENCY_RANGE[0], ends[0]).tokens_per_s_per_gpu
    fast = rate(DECODE_BANDWIDTH_EFFICIENCY_RANGE[1], ends[2]).tokens_per_s_per_gpu
    tokens = s.requests_per_s * output
    return Fleet(
        requests_per_s=s.requests_per_s,
        output_tokens=output,
        input_tokens=prompt,
        output_source=source,
        tp=tp,
        batch=at.batch,
        tokens_per_s_per_gpu=central,
        tokens_per_s_range=(slow, fast),
        gpus_without=tokens / central,
        gpus_without_range=(tokens / fast, tokens / slow),
    )


@dataclass(frozen=True, slots=True)
class Payback:
    """The serving GPUs the drafter frees and the serving hours until they repay the
    training: central, and the range (low: the slow speedup on the fewest GPUs; the
    break-even's None where its slow end frees none)."""

    gpus_saved: float
    gpus_saved_range: tuple[float, float]
    hours: float | None
    hours_range: tuple[float, float] | None


def _freed(gpus: float, speedup: float) -> float:
    """GPUs a speedup frees out of `gpus` (none at or below 1x: it slows serving)."""
    return gpus * (1.0 - 1.0 / speedup) if speedup > 1.0 else 0.0


def payback(
    cost: float | None,
    cost_range: tuple[float, float] | None,
    speedup: float,
    speedup_range: tuple[float, float],
    gpus: float,
    gpus_range: tuple[float, float],
    price_per_gpu_hour: float | None,
) -> Payback:
    """The payback of serving on `gpus` without the drafter (serving.count, or a fleet's
    at its rate; `gpus_range`: its fewest and most): GPUs freed = gpus x (1 - 1/speedup),
    hours = training cost / (GPUs freed x their price)."""
    saved = _freed(gpus, speedup)
    low = _freed(gpus_range[0], speedup_range[0])
    high = _freed(gpus_range[1], speedup_range[1])
    hours: float | None = None
    hours_range: tuple[float, float] | None = None
    if cost is not None and price_per_gpu_hour and saved > 0:
        hours = cost / (saved * price_per_gpu_hour)
        c_lo, c_hi = cost_range or (cost, cost)
        if low > 0:
            hours_range = (
                c_lo / (high * price_per_gpu_hour),
                c_hi / (low * price_per_gpu_hour),
            )
    return Payback(saved, (low, high), hours, hours_range)
