"""Every fitted constant of the model, computed from the public measurements it rests on.

A constant is fitted on named cases of measurements.toml (`fitted_on`), from the source
groups those cases belong to (`source_group`, fixed when the file was written, before any
refit). Its range is the span of the values the cases of its kind imply (`range_on`, both
halves), plus the alternatives it is applied to outside the runs it was fitted on;
`applies_when` names those runs' conditions. The module constants
(memory.ACTIVATION_IO_MULTIPLE, pipeline.NETWORK_EFFICIENCY, ...) are computed here once
per process, each from a light parse of only the cases it needs, so importing the model
stays cheap.

Leave-one-group-out cross-validation (evidence.validate) refits every constant without
one group: `fit_all(cases, leave_out=group)`. A constant whose every fit case is in the
left-out group cannot be refitted there (None): it is not cross-validatable.
"""

from __future__ import annotations

import copy
import functools
import math
import re
import tomllib
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, replace
from typing import Any

from ..basics.data import data_text
from ..basics.tomlfile import parse_toml
from ..basics.units import BF16_BYTES, BYTES_PER_GIB
from ..inputs.hardware import Gpu, Maturity, parse_gpus
from ..inputs.targets import PRESETS, TargetModel
from .footprint import MemoryFit, drafter_footprint
from .work import DrafterShape, DrafterWork, drafter_shape, drafter_work, target_work

Case = Mapping[str, Any]
Values = Mapping[str, float | None]

# Layers whose hidden states a DFlash drafter captures by default (docs/model.md).
CAPTURED_LAYERS = 5


# --- reading the cases -------------------------------------------------------------------


@functools.cache
def _blocks() -> dict[str, str]:
    """Each case's TOML text by id: the file split at its `[[case]]` headers, so a fit
    parses only the few cases it needs (the whole file costs several ms to parse)."""
    text = data_text("measurements.toml")
    blocks: dict[str, str] = {}
    for body in text.split("\n[[case]]\n")[1:]:
        found = re.search(r'^id = "([^"]+)"$', body, re.MULTILINE)
        if found:
            blocks[found.group(1)] = "[[case]]\n" + body
    return blocks


@functools.cache
def _case(case_id: str) -> Mapping[str, Any]:
    case: dict[str, Any] = tomllib.loads(_blocks()[case_id])["case"][0]
    return case


def cases_by_id(ids: Iterable[str]) -> dict[str, dict[str, Any]]:
    """The cases parsed (each once per process; a fresh copy each call, to edit)."""
    return {case_id: copy.deepcopy(dict(_case(case_id))) for case_id in ids}


def group(case: Case) -> str:
    """The case's source group: a source project or rig, the unit cross-validation leaves
    out."""
    return str(case["source_group"])


# --- what a case states, as the model reads it --------------------------------------------


def case_model(case: Case) -> TargetModel:
    key = case.get("model", "")
    if key in PRESETS:
        return PRESETS[key]
    d = case["model_dims"]
    return TargetModel(
        key=key,
        name=key,
        n_layers=d["num_hidden_layers"],
        hidden=d["hidden_size"],
        intermediate=d["intermediate_size"],
        n_heads=d["num_attention_heads"],
        n_kv_heads=d["num_key_value_heads"],
        head_dim=d["head_dim"],
        vocab=d["vocab_size"],
    )


def case_drafter(case: Case, model: TargetModel) -> tuple[DrafterShape, DrafterWork]:
    block = case.get("block_size", model.default_block_size)
    layers = case.get("draft_layers", CAPTURED_LAYERS)
    shape = drafter_shape(model, layers, block, len(model.default_layer_ids(layers)))
    if "draft_vocab" in case:  # a reduced draft vocabulary (speculators' option)
        shape = replace(shape, vocab=case["draft_vocab"])
    anchors = case.get("anchors") or max(1, int(case["sample_tokens"]) // block)
    work = drafter_work(
        shape,
        anchors,
        float(case["sample_tokens"]),
        case.get("batch", 1),
        case.get("drafter_gpus", 1),
    )
    return shape, work


def hidden_state_bytes_per_token(model: TargetModel) -> float:
    """bf16 hidden states of the captured layers, per token."""
    return CAPTURED_LAYERS * model.hidden * BF16_BYTES


def training_time_flop_per_token(model: TargetModel, gpu: Gpu, sample_tokens: float) -> float:
    """LLM training: 3x the forward (6 FLOPs per active weight), attention (its softmax
    time included, as for prefill) and the LM head."""
    work = target_work(model, model.default_layer_ids(CAPTURED_LAYERS), sample_tokens)
    return 3 * (work.time_flop(gpu.softmax_speedup) + 2 * model.hidden * model.vocab)


def case_drafter_memory(
    case: Case, gpu: Gpu, activation_io_multiple: float, reserve_gib: float
) -> MemoryFit:
    """A drafter-memory case as the model computes it: at the longest sample, in a
    pipeline (optimizer state sharded over its trainers) or alone (a microbenchmark); the
    fitted multiple and reserve given (memory.case_drafter_memory: at their fitted values)."""
    shape, work = case_drafter(case, case_model(case))
    longest = float(case.get("max_length", case["sample_tokens"]))
    return drafter_footprint(
        shape,
        work,
        longest,
        case.get("batch", 1),
        case.get("drafter_gpus", 1),
        gpu.memory_gb,
        "drafter_gpus" in case,
        activation_io_multiple,
        reserve_gib,
    )


def _gpu(key: str) -> Gpu:
    """A built-in GPU, without the maturity factors fitted here (their fits read it). Not
    for the fit of a constant that sets a catalog field (the catalog is built from those
    fits): that reads `_catalog_spec`."""
    return _fit_gpus()[key]


# --- fits on plain numbers ----------------------------------------------------------------


def mean(values: Sequence[float]) -> float:
    return sum(values) / len(values)


def slope_through_origin(xs: Sequence[float], ys: Sequence[float]) -> float:
    """Least squares of y = a x: a = sum(x y) / sum(x^2)."""
    return sum(x * y for x, y in zip(xs, ys, strict=True)) / sum(x * x for x in xs)


def linear_root(at_zero: float, at_one: float, target: float) -> float:
    """The m at which a quantity linear in m (at_zero at m = 0, at_one at m = 1) is
    target."""
    return (target - at_zero) / (at_one - at_zero)


# --- the constants ------------------------------------------------------------------------

Span = tuple[float, float]


@dataclass(frozen=True, slots=True)
class Constant:
    """One fitted constant: where it lives, what it is fitted on, what it applies to."""

    name: str  # the module constant's name
    home: str  # "memory", "pipeline", "roofline" or "hardware.toml"
    unit: str
    fitted_on: tuple[str, ...]  # case ids the value is fitted on
    range_on: tuple[str, ...]  # case ids whose implied values span the range
    applies_when: str
    fit: Callable[[Sequence[Case], Values], float]
    implied: Callable[[Case, Values], Span]  # the value (span) one case implies
    needs: tuple[str, ...] = ()  # constants fitted first and used by this fit
    # Values it takes where applied outside its runs' conditions (widen the range).
    alternatives: Callable[[Values], Sequence[float]] = lambda _: ()
    # (GPU key, field) of hardware.toml values it sets; empty for a module constant.
    gpu_fields: tuple[tuple[str, str], ...] = ()


def _point(value: float) -> Span:
    return value, value


def _network(case: Case, _: Values) -> Span:
    return _point(float(case["value"]) / (float(case["network_gb_per_s_per_node"]) * 1e9))


def _sink(case: Case, _: Values) -> Span:
    lo, hi = case["sink_samples_per_s"]
    per_sample = float(case["sample_tokens"]) * hidden_state_bytes_per_token(case_model(case))
    return lo * per_sample, hi * per_sample


def _fetch_bytes(case: Case) -> float:
    return (
        int(case.get("batch", 1))
        * float(case["sample_tokens"])
        * hidden_state_bytes_per_token(case_model(case))
    )


def _fetch(case: Case, _: Values) -> Span:
    return _point(_fetch_bytes(case) / (case["fetch_ms"] / 1e3))


def _fetch_fit(cases: Sequence[Case], _: Values) -> float:
    # time = bytes / rate through the origin: a free intercept comes out negative on
    # SpecForge's two batches (no fixed cost per fetch to separate).
    seconds_per_byte = slope_through_origin(
        [_fetch_bytes(c) for c in cases], [c["fetch_ms"] / 1e3 for c in cases]
    )
    return 1.0 / seconds_per_byte


def _capture_reserve(case: Case, _: Values) -> Span:
    return _point(float(case["value"]) - case["mem_fraction"] * _gpu(case["gpu"]).memory_gb)


def _activation(case: Case, _: Values) -> Span:
    # A microbenchmark reads torch's peak allocated tensors in decimal GB: no reserve.
    gpu = _gpu(case["gpu"])
    gib = float(case["value"]) * 1e9 / BYTES_PER_GIB
    at_zero = case_drafter_memory(case, gpu, 0.0, 0.0).needed_gb
    at_one = case_drafter_memory(case, gpu, 1.0, 0.0).needed_gb
    return _point(linear_root(at_zero, at_one, gib))


def _trainer_reserve(case: Case, values: Values) -> Span:
    multiple = values["ACTIVATION_IO_MULTIPLE"]
    assert multiple is not None
    tensors = case_drafter_memory(case, _gpu(case["gpu"]), multiple, 0.0).needed_gb
    return _point(float(case["value"]) - tensors)


def _dense_training_rate(case: Case, gpu: Gpu) -> float:
    """Training tokens/s per GPU at the GPU's dense default efficiency."""
    return (
        gpu.bf16_flop_per_s
        * gpu.training_efficiency
        / training_time_flop_per_token(case_model(case), gpu, float(case["sample_tokens"]))
    )


def _moe(case: Case, _: Values) -> Span:
    return _point(float(case["value"]) / _dense_training_rate(case, _gpu(case["gpu"])))


def _training_efficiency(case: Case, _: Values) -> Span:
    if case["quantity"] == "training_mfu":
        return _point(float(case["value"]))
    gpu = _gpu(case["gpu"])
    return _point(
        float(case["value"])
        * training_time_flop_per_token(case_model(case), gpu, float(case["sample_tokens"]))
        / gpu.bf16_flop_per_s
    )


# The decode efficiency a case implies, held to these bounds: a case the model does not
# reach even at the full bandwidth (its compute, prompts or fixed times are overestimated)
# implies the upper bound.
DECODE_EFFICIENCY_BOUNDS = (0.02, 1.0)
# The time per sequence in flight per decode step is searched within these bounds (s).
DECODE_S_PER_SEQUENCE_BOUNDS = (0.0, 1e-4)


# decode.py registers its case reader here when it loads (it takes its fitted constants
# from this module, so this module cannot import it); evidence and the projection import it.
# It returns a decode.Terms: the case before the fitted constants scale it.
_DECODE_TERMS: list[Callable[[Case, Gpu, float], Any]] = []


def register_decode_terms(terms: Callable[[Case, Gpu, float], Any]) -> None:
    _DECODE_TERMS[:] = [terms]


def case_decode_terms(case: Case, gpu: Gpu, held_gib: float) -> Any:
    """A decode case's terms (decode.case_terms) with this much memory held by the runtime."""
    if not _DECODE_TERMS:
        raise RuntimeError("model.physics.decode is not imported: it registers the decode terms")
    return _DECODE_TERMS[0](case, gpu, held_gib)


def case_decode_rate(
    case: Case, gpu: Gpu, efficiency: float, software: float, held_gib: float, s_per_seq: float
) -> float:
    """A decode case's output tokens/s per GPU at this bandwidth efficiency, software factor
    (its engine's maturity on its GPU), runtime memory held and time per sequence."""
    terms = case_decode_terms(case, gpu, held_gib)
    return float(terms.at(efficiency, s_per_seq, software).tokens_per_s_per_gpu)


@functools.cache
def _fit_terms(case_id: str, held_gib: float) -> Any:
    """A fit case's decode terms on its built-in GPU (each once per process)."""
    case = _case(case_id)
    return case_decode_terms(case, _gpu(case["gpu"]), held_gib)


def _held(case: Case, _: Values) -> Span:
    return _point(float(case["value"]))


def _implied_efficiency(case: Case, held: float, s_per_seq: float) -> float:
    lo, hi = DECODE_EFFICIENCY_BOUNDS
    eff = _fit_terms(case["id"], held).efficiency_for(float(case["value"]), s_per_seq)
    return float(min(max(eff, lo), hi))


def _decode_values(values: Values, *names: str) -> tuple[float, ...]:
    out = tuple(values[n] for n in names)
    assert all(v is not None for v in out), names
    return tuple(float(v) for v in out if v is not None)


def _decode_efficiency(case: Case, values: Values) -> Span:
    # Fitted on GPUs whose engines carry no maturity factor (software 1).
    held, s_per_seq = _decode_values(
        values, "DECODE_RUNTIME_HELD_GIB", "DECODE_STEP_S_PER_SEQUENCE"
    )
    return _point(_implied_efficiency(case, held, s_per_seq))


def _log_sse(cases: Sequence[Case], held: float, s_per_seq: float) -> float:
    """Squared log errors of the cases at this time per sequence and the efficiency they
    then imply (the mean of their implied values, as DECODE_BANDWIDTH_EFFICIENCY is fitted)."""
    eff = mean([_implied_efficiency(c, held, s_per_seq) for c in cases])
    return sum(
        math.log(_fit_terms(c["id"], held).at(eff, s_per_seq).tokens_per_s_per_gpu / c["value"])
        ** 2
        for c in cases
    )


def _s_per_sequence_fit(cases: Sequence[Case], values: Values) -> float:
    """The time per sequence per step that, with the efficiency the cases then imply, fits
    them best (least squares of the log errors; golden-section search)."""
    (held,) = _decode_values(values, "DECODE_RUNTIME_HELD_GIB")
    lo, hi = DECODE_S_PER_SEQUENCE_BOUNDS
    ratio = (math.sqrt(5) - 1) / 2
    for _ in range(60):
        a, b = hi - ratio * (hi - lo), lo + ratio * (hi - lo)
        if _log_sse(cases, held, a) <= _log_sse(cases, held, b):
            hi = b
        else:
            lo = a
    return (lo + hi) / 2


def _s_per_sequence(case: Case, values: Values) -> Span:
    """The time per sequence one case implies at the fitted efficiency (its spread)."""
    (held,) = _decode_values(values, "DECODE_RUNTIME_HELD_GIB")
    # The efficiency is fitted after this constant (it needs it): its value on all its
    # cases when a range is asked for alone.
    eff = values.get("DECODE_BANDWIDTH_EFFICIENCY") or value("DECODE_BANDWIDTH_EFFICIENCY")
    s_per_seq = _fit_terms(case["id"], held).s_per_sequence_for(float(case["value"]), eff)
    return _point(max(s_per_seq, 0.0))


def _decode_maturity(case: Case, values: Values) -> Span:
    """The share of the physics' rate (at the fitted constants) an engine reached on a GPU:
    measured over predicted at software factor 1."""
    held, s_per_seq, eff = _decode_values(
        values,
        "DECODE_RUNTIME_HELD_GIB",
        "DECODE_STEP_S_PER_SEQUENCE",
        "DECODE_BANDWIDTH_EFFICIENCY",
    )
    rate = _fit_terms(case["id"], held).at(eff, s_per_seq).tokens_per_s_per_gpu
    return _point(float(case["value"]) / rate)


def _mean_of(implied: Callable[[Case, Values], Span]) -> Callable[[Sequence[Case], Values], float]:
    def fit(cases: Sequence[Case], values: Values) -> float:
        return mean([sum(implied(c, values)) / 2 for c in cases])

    return fit


@functools.cache
def _catalog_doc() -> dict[str, Any]:
    text = data_text("hardware.toml")
    return tomllib.loads(text)


def _catalog_spec(key: str, name: str) -> float:
    """A spec value of the built-in catalog, read from hardware.toml without building the
    catalog (which itself takes fitted values)."""
    return float(_catalog_doc()[key][name])


def _matmul_share(case: Case, _: Values) -> Span:
    return _point(float(case["value"]) / _catalog_spec(case["gpu"], "bf16_tflops"))


def _ceiling(label: str, case_id: str, keys: tuple[str, ...], others: tuple[str, ...]) -> Constant:
    """A GPU's matmul ceiling: the best measured bf16 matmul over its dense peak."""
    return Constant(
        f"{label}_MATMUL_CEILING",
        "hardware.toml",
        "share of the dense bf16 peak",
        fitted_on=(case_id,),
        range_on=(case_id, *others),
        applies_when=f"the best bf16 torch.matmul shape found on {label}: the ceiling of "
        f"every efficiency on {', '.join(keys)}",
        fit=_mean_of(_matmul_share),
        implied=_matmul_share,
        gpu_fields=tuple((k, "matmul_ceiling") for k in keys),
    )


SPECFORGE_PIPELINE = (
    "SpecForge's disaggregated Domino pipeline on one 8 x H200 node (Qwen3-8B, Mooncake over RDMA)"
)

# Decode-throughput cases (measurements.toml, quantity decode_tokens_per_s_per_gpu): the fit
# half's on GPUs whose engines carry no maturity factor fit the efficiency, every one of them
# spans its range; vLLM on MI300X fits its maturity.
DECODE_FIT = (
    "trtllm-h100-llama31-8b-fp8-decode-1000-1000",
    "trtllm-h200-llama31-8b-fp8-decode-2048-2048",
    "trtllm-h100-llama33-70b-fp8-tp2-decode-1000-1000",
    "nim-h100-llama33-70b-fp8-tp2-decode-5000-500",
    "trtllm-h200-llama33-70b-fp8-tp2-decode-1000-1000",
    "trtllm-h200-llama33-70b-fp8-tp2-decode-8192-1024",
    "silybench-h100-qwen3-8b-bf16-decode-128-128",
    "silybench-h100-qwen3-8b-bf16-decode-2048-2048",
    "silybench-h100-qwen3-8b-bf16-decode-8192-512",
    "silybench-h100-qwen3-8b-fp8-decode-128-1024",
    "silybench-h100-qwen3-8b-fp8-decode-1024-128",
)
DECODE_RANGE = (
    *DECODE_FIT,
    "trtllm-h200-llama31-8b-fp8-decode-1000-1000",
    "trtllm-h100-llama31-8b-fp8-decode-2048-2048",
    "trtllm-h200-llama33-70b-fp8-decode-1000-1000",
    "trtllm-h200-llama33-70b-fp8-tp2-decode-1024-8192",
    "trtllm-h100-llama33-70b-fp8-tp2-decode-8192-1024",
    "silybench-h100-qwen3-8b-bf16-decode-128-1024",
    "silybench-h100-qwen3-8b-bf16-decode-1024-128",
    "silybench-h100-qwen3-8b-fp8-decode-128-128",
    "silybench-h100-qwen3-8b-fp8-decode-2048-2048",
    "silybench-h100-qwen3-8b-fp8-decode-8192-512",
)
# vLLM on MI300X: the maturity fit takes both groups' fit halves (each fold refits it on the
# other group), the range every case.
MI300X_VLLM_FIT = (
    "oracle-mi300x-llama31-405b-fp8-tp8-decode-128-2048",
    "amd-mi300x-llama31-70b-fp8-tp8-decode-128-2048",
    "amd-mi300x-llama31-405b-fp8-tp8-decode-128-2048",
    "amd-mi300x-llama31-70b-fp8-tp8-decode-500-2000",
)
MI300X_VLLM_RANGE = (
    *MI300X_VLLM_FIT,
    "oracle-mi300x-llama31-405b-fp8-tp8-decode-128-128",
    "amd-mi300x-llama31-70b-fp8-tp8-decode-2048-2048",
    "amd-mi300x-llama31-405b-fp8-tp8-decode-2048-2048",
    "amd-mi300x-llama31-405b-fp8-tp8-decode-500-2000",
)
# What vLLM holds outside its weights and KV pool (quantity engine_held_gib).
HELD_FIT = (
    "vllm-pr10511-h100-llama3-8b-tp1-held-memory",
    "silybench-h100-qwen3-8b-bf16-held-memory",
)
HELD_RANGE = (*HELD_FIT, "vllm-pr10511-h100-llama3-8b-tp2-held-memory")
# A catalog field of a GPU's fitted maturity entry: "maturity:<role>:<engine>".
MATURITY_FIELD = "maturity"


CONSTANTS: tuple[Constant, ...] = (
    Constant(
        "NETWORK_EFFICIENCY",
        "pipeline",
        "share of the NIC rate",
        fitted_on=("mooncake-vllm-pd-qwen3-8b-h800-rdma-peak",),
        range_on=(
            "mooncake-vllm-pd-qwen3-8b-h800-rdma-peak",
            "mooncake-vllm-pd-qwen3-8b-h800-rdma-20mb",
        ),
        applies_when="GB-sized transfers between two nodes over RDMA (Mooncake, 8 RoCE NICs, "
        "H800); a 20 MB object, about one sample's hidden states, reached 18 %",
        fit=_mean_of(_network),
        implied=_network,
    ),
    Constant(
        "CAPTURE_SINK_BYTES_PER_S",
        "pipeline",
        "bytes/s per capture server",
        fitted_on=("specforge-domino-qwen3-8b-h200-hidden-state-rate-derived",),
        range_on=("specforge-domino-qwen3-8b-h200-hidden-state-rate-derived",),
        applies_when=f"the capture server's copy into a Mooncake store: {SPECFORGE_PIPELINE}; "
        f"the midpoint of the 44-57 samples/s the sink sustained",
        fit=_mean_of(_sink),
        implied=_sink,
    ),
    Constant(
        "TRAINER_FETCH_BYTES_PER_S",
        "pipeline",
        "bytes/s per drafter GPU",
        fitted_on=(
            "specforge-domino-qwen3-8b-h200-trainer-memory-b2",
            "specforge-domino-qwen3-8b-h200-trainer-memory-b8",
        ),
        range_on=(
            "specforge-domino-qwen3-8b-h200-trainer-memory-b2",
            "specforge-domino-qwen3-8b-h200-trainer-memory-b8",
        ),
        applies_when=f"a trainer's blocking get from a Mooncake store: {SPECFORGE_PIPELINE}. "
        f"A per-byte host cost (40,960 B per Qwen3-8B token: about 20 us per "
        f"token) that does not scale with the drafter GPU: 4x the bytes took "
        f"4.5x the time, at 4 % of the H200's host link; no DFlash-family run "
        f"measures it on another GPU",
        fit=_fetch_fit,
        implied=_fetch,
    ),
    Constant(
        "RUNTIME_RESERVE_GIB",
        "memory",
        "GiB per GPU",
        fitted_on=("specforge-qwen3-8b-h200-capture-server-memory-mf050",),
        range_on=(
            "specforge-qwen3-8b-h200-capture-server-memory-mf050",
            "specforge-qwen3-8b-h200-capture-server-memory-mf085",
        ),
        applies_when="what an SGLang capture server (SpecForge's patch, TP1, H200) holds "
        "outside its static pool; applied to every target GPU and engine",
        fit=_mean_of(_capture_reserve),
        implied=_capture_reserve,
    ),
    Constant(
        "ACTIVATION_IO_MULTIPLE",
        "memory",
        "x the elements a layer reads and writes",
        fitted_on=("specforge-domino-qwen3-8b-h200-microbench-b8-memory",),
        range_on=(
            "specforge-domino-qwen3-8b-h200-microbench-b8-memory",
            "specforge-domino-qwen3-8b-h200-microbench-b2-memory",
        ),
        applies_when="SpecForge's Domino trainer (two full-vocabulary heads, checkpointed "
        "objective slices), one H200, sequence 768 in the benchmark",
        fit=_mean_of(_activation),
        implied=_activation,
    ),
    Constant(
        "TRAINER_RUNTIME_RESERVE_GIB",
        "memory",
        "GiB per drafter GPU",
        fitted_on=("specforge-domino-qwen3-8b-h200-trainer-memory-b2",),
        range_on=(
            "specforge-domino-qwen3-8b-h200-trainer-memory-b2",
            "specforge-domino-qwen3-8b-h200-trainer-memory-b8",
        ),
        applies_when=f"one FSDP (SHARD_GRAD_OP) trainer inside {SPECFORGE_PIPELINE}, as "
        f"nvidia-smi-style monitoring reads it; a trainer without FSDP buffers "
        f"or prefetched batches may hold only a process's reserve "
        f"(RUNTIME_RESERVE_GIB), the range's low end",
        fit=_mean_of(_trainer_reserve),
        implied=_trainer_reserve,
        needs=("ACTIVATION_IO_MULTIPLE", "RUNTIME_RESERVE_GIB"),
        alternatives=lambda v: [x for x in (v["RUNTIME_RESERVE_GIB"],) if x is not None],
    ),
    Constant(
        "MOE_EFFICIENCY_FACTOR",
        "roofline",
        "x the dense default efficiency",
        fitted_on=("mbridge-b300-gptoss120b-bf16-pretrain",),
        range_on=(
            "mbridge-b300-gptoss120b-bf16-pretrain",
            "mbridge-b200-gptoss120b-bf16-pretrain",
            "mbridge-h100-gptoss120b-bf16-pretrain",
        ),
        applies_when="gpt-oss-120b bf16 pretraining in Megatron-Bridge (EP8, 64 GPUs); "
        "applied to MoE prefill and training on every GPU",
        fit=_mean_of(_moe),
        implied=_moe,
    ),
    Constant(
        "A100_TRAINING_EFFICIENCY",
        "hardware.toml",
        "share of the dense bf16 peak",
        fitted_on=("torchtitan-a100-llama3-8b-bf16-mfu", "llmfoundry-a100-mpt-7b-bf16-seq8192-mfu"),
        range_on=(
            "torchtitan-a100-llama3-8b-bf16-mfu",
            "torchtitan-a100-llama3-8b-bf16-fsdp64",
            "llmfoundry-a100-mpt-7b-bf16-seq8192-mfu",
        ),
        applies_when="7-8B dense bf16 training at 8,192 tokens with FSDP and activation "
        "checkpointing on A100 (torchtitan Llama 3 8B on 64 GPUs; llm-foundry "
        "MPT-7B on 8): the a100-80g training_efficiency",
        fit=_mean_of(_training_efficiency),
        implied=_training_efficiency,
        gpu_fields=(("a100-80g", "training_efficiency"),),
    ),
    Constant(
        "DECODE_RUNTIME_HELD_GIB",
        "decode",
        "GiB per GPU",
        fitted_on=HELD_FIT,
        range_on=HELD_RANGE,
        applies_when="what vLLM holds outside its weights and KV pool within its "
        "gpu_memory_utilization share (non-torch memory and the profiled activation peak; "
        "one H100, TP1, 8B models); TensorRT-LLM's pool is taken as its share of what the "
        "weights and this leave; SGLang's reserve is its own default (decode.py); at TP2 "
        "NCCL's buffers hold more, the range's high end",
        fit=_mean_of(_held),
        implied=_held,
    ),
    Constant(
        "DECODE_STEP_S_PER_SEQUENCE",
        "decode",
        "s per sequence in flight per decode step",
        fitted_on=DECODE_FIT,
        range_on=DECODE_RANGE,
        applies_when="the decode cases of the efficiency (fitted with it, by least squares of "
        "the log errors): what a step spends per sequence beyond its bytes and FLOPs "
        "(scheduling, sampling, detokenizing), the same for every engine and GPU; its range "
        "is what each case implies at the fitted efficiency",
        fit=_s_per_sequence_fit,
        implied=_s_per_sequence,
        needs=("DECODE_RUNTIME_HELD_GIB",),
    ),
    Constant(
        "DECODE_BANDWIDTH_EFFICIENCY",
        "decode",
        "share of the HBM bandwidth",
        fitted_on=DECODE_FIT,
        range_on=DECODE_RANGE,
        applies_when="a decode step of a serving engine with every request queued "
        "(TensorRT-LLM's trtllm-bench; NIM at concurrency 250; vLLM 0.30 at concurrency "
        "256-512), dense Llama 8B and 70B and Qwen3-8B in FP8 and bf16 on H100 and H200; "
        "applied to bf16 regeneration on every GPU, an engine's maturity on a GPU apart",
        fit=_mean_of(_decode_efficiency),
        implied=_decode_efficiency,
        needs=("DECODE_RUNTIME_HELD_GIB", "DECODE_STEP_S_PER_SEQUENCE"),
    ),
    Constant(
        "MI300X_VLLM_DECODE_MATURITY",
        "hardware.toml",
        "x the physics' decode rate",
        fitted_on=MI300X_VLLM_FIT,
        range_on=MI300X_VLLM_RANGE,
        applies_when="vLLM on 8 x MI300X, Llama 3.1 70B and 405B in FP8 at TP8, 2024 "
        "(OCI, vLLM V0) and July 2025 (AMD's ROCm results, vLLM 0.9.1): the mi300x decode "
        "maturity entry for vLLM",
        fit=_mean_of(_decode_maturity),
        implied=_decode_maturity,
        needs=(
            "DECODE_BANDWIDTH_EFFICIENCY",
            "DECODE_RUNTIME_HELD_GIB",
            "DECODE_STEP_S_PER_SEQUENCE",
        ),
        gpu_fields=(("mi300x", f"{MATURITY_FIELD}:decode:vllm"),),
    ),
    *(
        _ceiling(*args)
        for args in (
            ("A100", "stas00-mamf-a100-bf16", ("a100-80g",), ()),
            ("B200", "stas00-mamf-b200-bf16", ("b200",), ("zzc-b200-bf16-matmul",)),
            ("B300", "stas00-mamf-b300-bf16", ("b300",), ()),
            ("GB200", "stas00-mamf-gb200-bf16", ("gb200",), ()),
            # H100 PCIe and H200 take the H100 SXM figure (same Hopper kernels; stas00: "H200
            # is the same").
            ("H100", "stas00-mamf-h100-bf16", ("h100-sxm", "h100-pcie", "h200"), ()),
            ("MI300X", "stas00-mamf-mi300x-bf16", ("mi300x",), ()),
            ("L40S", "zzc-l40s-bf16-matmul", ("l40s",), ()),
        )
    ),
)
BY_NAME = {c.name: c for c in CONSTANTS}


def fit_all(cases: Mapping[str, Case], leave_out: str | None = None) -> dict[str, float | None]:
    """Every constant fitted on its cases outside the group `leave_out`; None for one
    whose fit cases are all in that group (or that needs such a constant)."""
    values: dict[str, float | None] = {}
    for c in CONSTANTS:
        kept = [cases[i] for i in c.fitted_on if group(cases[i]) != leave_out]
        missing = any(values[n] is None for n in c.needs)
        values[c.name] = None if not kept or missing else c.fit(kept, values)
    return values


def span(
    c: Constant, cases: Mapping[str, Case], values: Values, folds: Iterable[float | None] = ()
) -> Span:
    """The constant's range: what each case of its kind implies, its fold values, and the
    alternatives where it is applied outside its runs."""
    points = [x for case_id in c.range_on for x in c.implied(cases[case_id], values)]
    points += [x for x in folds if x is not None]
    points += list(c.alternatives(values))
    own = values[c.name]
    if own is not None:
        points.append(own)
    return min(points), max(points)


@functools.cache
def value(name: str) -> float:
    """One constant fitted on all its cases (computed once per process)."""
    c = BY_NAME[name]
    needed = {n: value(n) for n in c.needs}
    return c.fit(list(cases_by_id(c.fitted_on).values()), needed)


@functools.cache
def value_range(name: str) -> Span:
    """One constant's range (`span`), with the values its folds over its own fit groups
    take: what a projection may carry where the constant is applied outside its runs."""
    c = BY_NAME[name]
    needed = (c.name, *c.needs)
    ids = {i for n in needed for i in (*BY_NAME[n].fitted_on, *BY_NAME[n].range_on)}
    cases = cases_by_id(ids)
    values: dict[str, float | None] = {n: value(n) for n in needed}
    groups = {group(cases[i]) for i in c.fitted_on}
    folds = (
        [c.fit([cases[i] for i in c.fitted_on if group(cases[i]) != g], values) for g in groups]
        if len(groups) > 1
        else []
    )
    return span(c, cases, values, folds)


def all_case_ids() -> tuple[str, ...]:
    return tuple(dict.fromkeys(i for c in CONSTANTS for i in (*c.fitted_on, *c.range_on)))


# --- the built-in catalog ----------------------------------------------------------------


def builtin_gpus() -> dict[str, Gpu]:
    """The built-in GPU catalog, hardware.toml with its fitted fields computed (parsed once
    per process; a new dict each call)."""
    return dict(_builtin_gpus())


def _maturity_key(name: str) -> tuple[str, str] | None:
    """(role, engine) of a fitted maturity field, None for a plain field."""
    parts = name.split(":")
    return (parts[1], parts[2]) if parts[0] == MATURITY_FIELD else None


def set_gpu_field(gpu: Gpu, name: str, value: float) -> Gpu:
    """The GPU with one fitted field at this value: a plain field, or the factor of a
    maturity entry (its low-high span widened to hold it)."""
    which = _maturity_key(name)
    if which is None:
        return gpu.model_copy(update={name: value})
    entries = tuple(
        m.model_copy(update={"factor": value, "low": min(m.low, value), "high": max(m.high, value)})
        if (m.role, m.engine) == which
        else m
        for m in gpu.maturity
    )
    return gpu.model_copy(update={"maturity": entries})


@functools.cache
def _fit_gpus() -> dict[str, Gpu]:
    """The catalog with its fitted fields but the fitted maturity entries (those hardware.toml
    gives without a factor): what every fit reads."""
    # Package data (a link to the top-level hardware.toml in a checkout). Its values fitted
    # on public measurements are computed here, not typed in.
    text = data_text("hardware.toml")
    doc = parse_toml(text, "hardware.toml")
    for c in CONSTANTS:
        for key, name in c.gpu_fields:
            if _maturity_key(name) is None:
                doc[key][name] = value(c.name)
    for table in doc.values():
        if isinstance(table, dict) and "maturity" in table:
            table["maturity"] = [m for m in table["maturity"] if "factor" in m]
    return parse_gpus(doc, "hardware.toml", text)


@functools.cache
def _builtin_gpus() -> dict[str, Gpu]:
    gpus = dict(_fit_gpus())
    for c in CONSTANTS:
        for key, name in c.gpu_fields:
            which = _maturity_key(name)
            if which is None:
                continue
            entry = next(
                m
                for m in _catalog_doc()[key]["maturity"]
                if (m["role"], m["engine"]) == which and "factor" not in m
            )
            factor = value(c.name)
            low, high = value_range(c.name)
            fitted = Maturity(**entry, factor=factor, low=min(low, factor), high=max(high, factor))
            gpus[key] = gpus[key].model_copy(update={"maturity": (*gpus[key].maturity, fitted)})
    return gpus
