"""The rate a measured case's system would reach, as the model computes it from what the
case states (GPU, model, lengths, batch, counts) and the GPUs' efficiencies.

The validation set predicts its rate cases with these (evidence.py), and the fits of the
GPUs' efficiencies (fitting.py) solve them for the efficiency a case implies: one formula
for both, so a fitted efficiency reproduces its case exactly.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..inputs.hardware import Gpu
from ..inputs.targets import TargetModel
from . import fitting
from .fitting import CAPTURED_LAYERS, case_drafter, case_model, training_time_flop_per_token
from .pipeline import flow, pipeline_inputs, tp_efficiency
from .roofline import (
    FP8_SPEEDUP,
    default_efficiency,
    dense_training_efficiency,
    drafter_roofline,
    target_roofline,
)
from .work import target_work

Case = Mapping[str, Any]


def precision_speedup(case: Case) -> float:
    """FP8 cases run at roofline.FP8_SPEEDUP. FP4 is not modelled: an FP4 case is
    predicted at the FP8 rate (and waits for FP4, or sits in the weak tier)."""
    return FP8_SPEEDUP if case.get("precision") in ("fp8", "fp4") else 1.0


def prefill_rate(
    model: TargetModel, gpu: Gpu, sample_tokens: float, tp: int = 1, speedup: float = 1.0
) -> float:
    """Prefill tokens/s per GPU at the GPU's default efficiency."""
    work = target_work(model, model.default_layer_ids(CAPTURED_LAYERS), sample_tokens)
    rate = (
        target_roofline(work, gpu).tokens_per_s
        * default_efficiency("target", gpu, model.is_moe)
        * speedup
    )
    return rate * tp_efficiency(gpu, tp, model.hidden, work.layers_run, rate)


def training_rate(
    model: TargetModel, gpu: Gpu, sample_tokens: float, speedup: float = 1.0
) -> float:
    """LLM training tokens/s per GPU at the dense-LLM limit (not the drafter's efficiency:
    these cases measure what full-size training reaches)."""
    efficiency = dense_training_efficiency(gpu, model.is_moe)
    return (
        gpu.bf16_flop_per_s
        * efficiency
        * speedup
        / training_time_flop_per_token(model, gpu, sample_tokens)
    )


def matmul_tflops(gpu: Gpu) -> float:
    return gpu.bf16_tflops * gpu.efficiency_ceiling


def drafter_samples_per_s(case: Case, gpu: Gpu) -> float:
    """One drafter GPU's samples/s on the case's drafter, alone (no all-reduce)."""
    model = case_model(case)
    _, work = case_drafter(case, model)
    tokens = float(case["sample_tokens"])
    rate = drafter_roofline(work, gpu, tokens).tokens_per_s * default_efficiency("drafter", gpu)
    return rate / tokens


def _inputs(case: Case, target_gpu: Gpu, drafter_gpu: Gpu, t_rate: float, d_rate: float) -> Any:
    model = case_model(case)
    shape, _ = case_drafter(case, model)
    tokens = float(case["sample_tokens"])
    # The tensors the drafter reads per token: the captured layers, and the final hidden
    # state where the family captures it (DFlash2).
    taps = model.default_layer_ids(shape.captured_layers)
    tw = target_work(model, taps, tokens, shape.state_tensors)
    return pipeline_inputs(
        target_gpu,
        drafter_gpu,
        int(case.get("tp", 1)),
        t_rate,
        d_rate,
        hidden=model.hidden,
        layers_run=tw.layers_run,
        trainable_params=shape.trainable_params,
        batch_size=case.get("batch", 1),
        sample_tokens=tokens,
        hidden_state_bytes_per_token=tw.hidden_state_bytes_per_token,
        transport=case.get("transport", "mooncake"),
        receive=case.get("receive", "host"),
    )


def drafter_in_pipeline(case: Case, gpu: Gpu) -> float:
    """A drafter rank's samples/s: alone, or inside a pipeline of `drafter_gpus` ranks
    (the data-parallel all-reduce and a blocking receive apply)."""
    per_gpu = drafter_samples_per_s(case, gpu)
    drafters = int(case.get("drafter_gpus", 1))
    if drafters <= 1:
        return per_gpu
    tokens = float(case["sample_tokens"])
    inputs = _inputs(case, gpu, gpu, 1.0, per_gpu * tokens)
    capacity = float(flow(inputs, case.get("target_gpus", 1), drafters).drafter_tokens_per_s)
    return capacity / drafters / tokens


def pipeline_tokens_per_s(case: Case, gpu: Gpu) -> float:
    """The whole pipeline's tokens/s: `target_gpus` capture GPUs feeding `drafter_gpus`."""
    model = case_model(case)
    tokens = float(case["sample_tokens"])
    t_rate = prefill_rate(model, gpu, tokens, int(case.get("tp", 1)), precision_speedup(case))
    d_rate = drafter_samples_per_s(case, gpu) * tokens
    inputs = _inputs(case, gpu, gpu, t_rate, d_rate)
    return float(flow(inputs, case["target_gpus"], case["drafter_gpus"]).tokens_per_s)


def job_rate(case: Case, gpu: Gpu) -> float:
    """The rate of a ratio case's job on one GPU."""
    job = case["job"]
    if job == "matmul":
        return matmul_tflops(gpu)
    if job == "prefill":
        return prefill_rate(
            case_model(case), gpu, float(case["sample_tokens"]), 1, precision_speedup(case)
        )
    if job == "drafter":
        return drafter_samples_per_s(case, gpu)
    return training_rate(
        case_model(case), gpu, float(case["sample_tokens"]), precision_speedup(case)
    )


def rate(case: Case, gpus: Mapping[str, Gpu]) -> float:
    """A rate case's predicted value, in the case's own unit."""
    quantity = case["quantity"]
    gpu = gpus[case["gpu"]]
    tokens = float(case.get("sample_tokens", 1.0))
    if quantity in ("target_tokens_per_s_per_gpu", "capture_samples_per_s_per_gpu"):
        per_token = prefill_rate(
            case_model(case), gpu, tokens, int(case.get("tp", 1)), precision_speedup(case)
        )
        return per_token if quantity == "target_tokens_per_s_per_gpu" else per_token / tokens
    if quantity == "training_tokens_per_s_per_gpu":
        return training_rate(case_model(case), gpu, tokens, precision_speedup(case))
    if quantity == "drafter_samples_per_s_per_gpu":
        return drafter_in_pipeline(case, gpu)
    if quantity == "gpu_ratio":
        return job_rate(case, gpu) / job_rate(case, gpus[case["gpu_b"]])
    if quantity == "pipeline_samples_per_s":
        return pipeline_tokens_per_s(case, gpu) / tokens
    raise ValueError(f"{case['id']}: {quantity} is not a rate quantity")


fitting.register_case_rate(rate)
