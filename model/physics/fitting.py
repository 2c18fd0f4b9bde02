"""Every fitted constant of the model, computed from the public measurements it rests on.

A constant is fitted on named cases of measurements.toml (`fitted_on`), from the source
groups those cases belong to (`source_group`, fixed when the file was written, before any
refit). Its range is the span of the values the cases of its kind imply (`range_on`, both
halves), plus the alternatives it is applied to outside the runs it was fitted on;
`applies_when` names those runs' conditions. The module constants
(memory.ACTIVATION_IO_MULTIPLE, pipeline.NETWORK_EFFICIENCY, ...) are computed here once
per process, each from a light parse of only the cases it needs; a start takes them from
the shipped fit results instead (data/fitted.json, basics/fitcache.py) while the inputs they
were computed from are unchanged, so importing the model stays cheap.

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

from ..basics import fitcache
from ..basics.data import data_text
from ..basics.tomlfile import parse_toml
from ..basics.units import BF16_BYTES, BYTES_PER_GIB
from ..inputs.hardware import Gpu, Maturity, parse_gpus
from ..inputs.targets import PRESETS, TargetModel
from .families import DEFAULT_FAMILY, default_block_size, drafter_shape
from .footprint import MemoryFit, drafter_footprint
from .work import DrafterShape, DrafterWork, drafter_work, target_work

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


def case_blocks() -> Mapping[str, str]:
    """Each case's TOML text by id, in the file's order."""
    return _blocks()


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
        # Linear-attention (Gated DeltaNet) layers of a hybrid target are given as a short
        # sliding window: their work per token does not grow with the context either.
        sliding_window=d.get("sliding_window"),
        sliding_layers=tuple(d.get("sliding_layers", ())),
    )


def case_drafter(case: Case, model: TargetModel) -> tuple[DrafterShape, DrafterWork]:
    """The drafter of the case's own family (`drafter`, DFlash when it names none)."""
    key = case.get("drafter", DEFAULT_FAMILY)
    block = case.get("block_size", default_block_size(key, model))
    layers = case.get("draft_layers", CAPTURED_LAYERS)
    shape = drafter_shape(model, layers, block, len(model.default_layer_ids(layers)), key)
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


def case_state_bytes_per_token(case: Case) -> float:
    """bf16 hidden states the case's drafter reads per token (its family's tensors)."""
    model = case_model(case)
    shape, _ = case_drafter(case, model)
    return shape.state_tensors * model.hidden * BF16_BYTES


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
    """A built-in GPU, its fitted fields computed but without the maturity factors fitted
    here (their fits read it). Not for the fit of a constant that sets a catalog field, nor
    one those fits need (the catalog is built from them): those read `_spec_gpu`."""
    return _fit_gpus()[key]


@functools.cache
def _spec_gpu(key: str) -> Gpu:
    """A built-in GPU's specs as hardware.toml types them, its efficiencies at 1 (a rate
    computed with it is the rate at 100 % of the roofline)."""
    table = {**_catalog_doc()[key], **{f: 1.0 for f in EFFICIENCY_FIELDS}}
    return parse_gpus({key: table}, "hardware.toml")[key]


def gpu_arch(key: str) -> str:
    """A built-in GPU's kernel family (hardware.toml's `arch`)."""
    return str(_catalog_doc()[key].get("arch", ""))


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
    home: str  # "memory", "pipeline", "colocated", "roofline", "decode", "hardware.toml"
    # or "fits"
    # ("fits": read only by the fits of other constants)
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
    # Its value where none of its cases is kept (a fold leaving their group out): what the
    # model assumes without them. None: the constant cannot be refitted there.
    fallback: Callable[[Values], float | None] | None = None


def _point(value: float) -> Span:
    return value, value


def _network(case: Case, _: Values) -> Span:
    return _point(float(case["value"]) / (float(case["network_gb_per_s_per_node"]) * 1e9))


def _sink(case: Case, _: Values) -> Span:
    if "sink_samples_per_s" not in case:  # a byte rate a capture server sustained
        return _point(float(case["value"]))
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
    if "fetch_ms" not in case:  # a receive rate per rank, as the source states or derives it
        return _point(float(case["value"]))
    return _point(_fetch_bytes(case) / (case["fetch_ms"] / 1e3))


def _fetch_fit(cases: Sequence[Case], values: Values) -> float:
    """Each source group's rate, then their mean (one vote per rig). Within a group of
    timed fetches, time = bytes / rate through the origin: a free intercept comes out
    negative on SpecForge's two batches (no fixed cost per fetch to separate)."""
    rates = []
    for g in dict.fromkeys(group(c) for c in cases):
        mine = [c for c in cases if group(c) == g]
        timed = [c for c in mine if "fetch_ms" in c]
        if timed:
            seconds_per_byte = slope_through_origin(
                [_fetch_bytes(c) for c in timed], [c["fetch_ms"] / 1e3 for c in timed]
            )
            rates.append(1.0 / seconds_per_byte)
        rates += [_fetch(c, values)[0] for c in mine if "fetch_ms" not in c]
    return mean(rates)


def _capture_reserve(case: Case, _: Values) -> Span:
    return _point(float(case["value"]) - case["mem_fraction"] * _spec_gpu(case["gpu"]).memory_gb)


def _activation(case: Case, _: Values) -> Span:
    # A microbenchmark reads torch's peak allocated tensors in decimal GB: no reserve.
    gpu = _spec_gpu(case["gpu"])
    gib = float(case["value"]) * 1e9 / BYTES_PER_GIB
    at_zero = case_drafter_memory(case, gpu, 0.0, 0.0).needed_gb
    at_one = case_drafter_memory(case, gpu, 1.0, 0.0).needed_gb
    return _point(linear_root(at_zero, at_one, gib))


def _trainer_reserve(case: Case, values: Values) -> Span:
    multiple = values["ACTIVATION_IO_MULTIPLE"]
    assert multiple is not None
    tensors = case_drafter_memory(case, _spec_gpu(case["gpu"]), multiple, 0.0).needed_gb
    return _point(float(case["value"]) - tensors)


def _dense_training_rate(case: Case, values: Values) -> float:
    """Training tokens/s per GPU at the dense-LLM limit: DENSE_TRAINING_SHARE of the GPU's
    matmul ceiling."""
    gpu, share = _spec_gpu(case["gpu"]), values["DENSE_TRAINING_SHARE"]
    assert share is not None
    return (
        gpu.bf16_flop_per_s
        * share
        * ceiling_of(case["gpu"], values)
        / training_time_flop_per_token(case_model(case), gpu, float(case["sample_tokens"]))
    )


def _moe(case: Case, values: Values) -> Span:
    return _point(float(case["value"]) / _dense_training_rate(case, values))


def _dense_mfu(case: Case) -> float:
    """The share of the dense bf16 peak an LLM training case reached."""
    if case["quantity"] == "training_mfu":
        return float(case["value"])
    gpu = _spec_gpu(case["gpu"])
    return (
        float(case["value"])
        * training_time_flop_per_token(case_model(case), gpu, float(case["sample_tokens"]))
        / gpu.bf16_flop_per_s
    )


def _dense_share(case: Case, values: Values) -> Span:
    return _point(_dense_mfu(case) / ceiling_of(case["gpu"], values))


# --- GPU efficiencies ----------------------------------------------------------------------
# A GPU's prefill and training (drafter) efficiency, the share of its dense bf16 peak the
# capture servers and the drafter reach, is its kernel family's share of the matmul ceiling
# times its own ceiling: a measured shortfall belongs to the family's kernels (hardware.toml
# `arch`). A family's share is fitted on the cases measuring its GPUs (the efficiency at
# which caserates.rate reproduces a case, solved by bisection), one vote per source group;
# a family no case measures takes the share of every measured family, and its band is
# widened (scenarios.efficiency_band). The drafter's share is fitted on DFlash-family
# trainers only; dense LLM training sets the compute-bound limit (DENSE_TRAINING_SHARE).

EFFICIENCY_FIELDS = ("prefill_efficiency", "training_efficiency")
# What a case's implied efficiency depends on among the fitted values (set below).
_EFFICIENCY_INPUTS: set[str] = set()
_EFFICIENCY_BOUNDS = (0.002, 1.5)


def _efficiency_gpu(key: str, values: Values) -> Gpu:
    """A built-in GPU with the efficiencies these values give it."""
    fields = efficiency_fields(values)
    update: dict[str, Any] = {f: fields[(key, f)] for f in EFFICIENCY_FIELDS if (key, f) in fields}
    return _spec_gpu(key).model_copy(update=update)


def _case_efficiency(case: Case, field: str, values: Values) -> float:
    """The efficiency of the case's GPU at which the model reproduces the case (solved
    once per case and the values it depends on: the folds of a cross-validation share
    most of them)."""
    inputs = tuple(
        sorted((k, v) for k, v in values.items() if k in _EFFICIENCY_INPUTS and v is not None)
    )
    return _solve_efficiency(case["id"], field, inputs)


# caserates.py registers its `rate` here when it loads (it imports this module for the
# cases' shapes, so this module cannot import it); the package imports it first.
_CASE_RATE: list[Callable[[Case, Mapping[str, Gpu]], float]] = []


def register_case_rate(rate: Callable[[Case, Mapping[str, Gpu]], float]) -> None:
    _CASE_RATE[:] = [rate]


@functools.cache
def _solve_efficiency(case_id: str, field: str, inputs: tuple[tuple[str, float], ...]) -> float:
    if not _CASE_RATE:
        raise RuntimeError("model.physics.caserates is not imported: it registers the case rate")
    case_rate = _CASE_RATE[0]
    case, values = _case(case_id), dict(inputs)
    gpus = {k: _efficiency_gpu(k, values) for k in (case["gpu"], case.get("gpu_b")) if k}
    base, target = gpus[case["gpu"]], float(case["value"])

    def rate(efficiency: float) -> float:
        gpus[case["gpu"]] = base.model_copy(update={field: efficiency})
        return case_rate(case, gpus)

    # Most rates are proportional to the efficiency (a single GPU's roofline): solved
    # directly; a pipeline's all-reduce or a TP group's is not, and is bisected.
    at_one, at_half = rate(1.0), rate(0.5)
    if abs(at_half - at_one / 2) <= 1e-12 * at_one:
        return target / at_one
    lo, hi = _EFFICIENCY_BOUNDS
    for _ in range(48):  # 1.5 / 2**48: far below any figure's precision
        mid = (lo + hi) / 2
        lo, hi = (mid, hi) if rate(mid) < target else (lo, mid)
    return (lo + hi) / 2


def _share(field: str) -> Callable[[Case, Values], Span]:
    """The share of the matmul ceiling a case implies for its GPU's family."""

    def implied(case: Case, values: Values) -> Span:
        efficiency = _case_efficiency(case, field, values)
        return _point(efficiency / ceiling_of(case["gpu"], values))

    return implied


def _by_group(implied: Callable[[Case, Values], Span]) -> Callable[[Sequence[Case], Values], float]:
    """The mean over source groups of each group's mean: one vote per rig."""

    def fit(cases: Sequence[Case], values: Values) -> float:
        groups: dict[str, list[float]] = {}
        for c in cases:
            groups.setdefault(group(c), []).append(sum(implied(c, values)) / 2)
        return mean([mean(v) for v in groups.values()])

    return fit


@dataclass(frozen=True, slots=True)
class FamilyEfficiency:
    """The fit of one role's efficiency on the GPUs of one kernel family ("" for every
    measured family at once: what a family no case measures takes)."""

    arch: str
    field: str
    fitted_on: tuple[str, ...]  # fit half, every tier
    range_on: tuple[str, ...]
    applies_when: str
    needs: tuple[str, ...] = ()

    @property
    def name(self) -> str:
        role = "PREFILL" if self.field == "prefill_efficiency" else "TRAINING"
        return f"{self.arch.upper()}_{role}_SHARE" if self.arch else f"{role}_SHARE"


_SM90_PREFILL = (
    "sglang-pr1060-h100-llama8b-isl8192-osl8",
    "trtllm-h100-llama8b-fp8-isl2048-osl128",
    "vllm-user-h100x4-llama70b-bf16-isl2083-osl1-bs8",
    "trtllm-h200-llama8b-fp8-isl2048-osl128",
)
_SM90_PREFILL_CHECK = ("specforge-dflash2-qwen38-27b-h200-fp8-deepgemm-capture",)
_SM90_TRAINING = (
    "specforge-domino-qwen3-8b-h200-microbench-b2",
    "torchspec-modal-8xh100-baseline-drafter",
    "torchspec-modal-8xh100-test-b-drafter",
    "torchspec-modal-8xh100-test-c2-drafter",
    "torchspec-modal-8xh100-512-b-drafter",
    "torchspec-modal-8xh100-512-d-drafter",
    "torchspec-modal-8xh100-512-f-drafter",
    "torchspec-runpod-phase-f-test7-1p3-drafter",
)
_SM100_TRAINING = (
    "specforge-dflash2-qwen38-27b-ratio-b300-over-h200-trainer-rank",
    "torchspec-b200-8x-4p4-drafter",
)

FAMILY_EFFICIENCIES: tuple[FamilyEfficiency, ...] = (
    FamilyEfficiency(
        "sm90",
        "prefill_efficiency",
        fitted_on=_SM90_PREFILL,
        range_on=_SM90_PREFILL_CHECK,
        applies_when="prefill of dense 8-70B targets on H100 and H200 (SGLang, TensorRT-LLM, "
        "vLLM; bf16 and FP8): capture servers on Hopper",
    ),
    FamilyEfficiency(
        "",
        "prefill_efficiency",
        fitted_on=_SM90_PREFILL,
        range_on=_SM90_PREFILL_CHECK,
        applies_when="every measured family's prefill: a GPU family no prefill case "
        "measures (Blackwell, Ada, AMD) takes it, with the widened band",
    ),
    FamilyEfficiency(
        "sm90",
        "training_efficiency",
        fitted_on=_SM90_TRAINING,
        range_on=(),
        applies_when="DFlash-family trainers on Hopper: SpecForge's Domino drafter alone on "
        "an H200 (Qwen3-8B, sequence 768) and TorchSpec's DFlash trainer ranks on H100 "
        "(Qwen3-8B, about 420-token samples, 256-512 anchors, Mooncake TCP)",
    ),
    FamilyEfficiency(
        "",
        "training_efficiency",
        fitted_on=(*_SM90_TRAINING, *_SM100_TRAINING),
        range_on=(),
        applies_when="every measured family's DFlash-family trainer: a family no trainer "
        "case measures (Ampere, Ada, sm120, AMD) takes it, with the widened band",
        needs=("SM90_TRAINING_SHARE",),
    ),
    FamilyEfficiency(
        "sm100",
        "training_efficiency",
        fitted_on=_SM100_TRAINING,
        range_on=(),
        applies_when="DFlash-family trainers on Blackwell: SpecForge's DFlash2 trainer on "
        "B300 against the same trainer on H200 (recipe PR #869, September 2026) and "
        "TorchSpec's DFlash trainer on B200 (PR #74): B200, B300 and GB200 take it",
        needs=("SM90_TRAINING_SHARE",),
    ),
)


def efficiency_fields(values: Values) -> dict[tuple[str, str], float]:
    """Every built-in GPU's prefill and training efficiency: its family's share of the
    matmul ceiling (else every measured family's) times its own ceiling. Keys (GPU key,
    field); a field no value reaches is left out."""
    out: dict[tuple[str, str], float] = {}
    for key, table in _catalog_doc().items():
        if not (isinstance(table, dict) and "bf16_tflops" in table):
            continue
        for field in EFFICIENCY_FIELDS:
            share = _family_share(str(table.get("arch", "")), field, values)
            if share is not None:
                out[(key, field)] = share * ceiling_of(key, values)
    return out


def _family_share(arch: str, field: str, values: Values) -> float | None:
    pooled = None
    for f in FAMILY_EFFICIENCIES:
        if f.field == field and f.arch == arch and values.get(f.name) is not None:
            return values[f.name]
        if f.field == field and not f.arch:
            pooled = values.get(f.name)
    return pooled


def family_keys() -> tuple[tuple[str, str], ...]:
    """(arch, field) of every distinct family share range: each measured family's, and
    "" for every family no case measures (they all take the pooled one)."""
    return tuple(
        (arch, field)
        for field in EFFICIENCY_FIELDS
        for arch in ("", *(f.arch for f in FAMILY_EFFICIENCIES if f.arch and f.field == field))
    )


@functools.cache
def family_share_range(arch: str, field: str) -> tuple[float, float] | None:
    """A family's share range as factors on the share it takes: a measured family's own
    fitted range; for one no case measures, the measured families' shares around the
    pooled one."""
    own = next((f for f in FAMILY_EFFICIENCIES if f.arch == arch and f.field == field), None)
    shipped = fitcache.shipped()
    if shipped is not None:
        span = shipped["family_share_ranges"][f"{arch if own else ''} {field}"]
        return None if span is None else (float(span[0]), float(span[1]))
    if own is None or not arch:
        # A family no case measures takes the pooled share: its band spans what the
        # measured families reach, relative to it.
        pooled = _family_share("", field, {f.name: value(f.name) for f in FAMILY_EFFICIENCIES})
        shares = [value(f.name) for f in FAMILY_EFFICIENCIES if f.arch and f.field == field]
        if pooled is None or not shares:
            return None
        return min(shares) / pooled, max(shares) / pooled
    # One vote per rig, as the fit: the span of the source groups' shares (a single case's
    # own noise is the validation spread's, already in the band).
    c = BY_NAME[own.name]
    values = {n: value(n) for n in c.needs}
    groups: dict[str, list[float]] = {}
    for case in cases_by_id(own.fitted_on).values():
        groups.setdefault(group(case), []).append(c.implied(case, values)[0])
    shares = [mean(v) for v in groups.values()]
    central = value(own.name)
    return min(shares) / central, max(shares) / central


def efficiency_measured(arch: str, field: str) -> bool:
    """Whether cases measure this family's efficiency for the role (else it takes every
    measured family's share, with a widened band)."""
    return any(f.arch == arch and f.field == field for f in FAMILY_EFFICIENCIES if f.arch)


def efficiency_basis(gpu: Gpu, field: str) -> str:
    """Where a GPU's efficiency for a role comes from, as the views say it."""
    builtin = _builtin_gpus().get(gpu.key)
    if builtin is None or getattr(builtin, field) != getattr(gpu, field):
        return "as a hardware file gives it"
    return family_basis(gpu.arch, field)


@functools.cache
def family_basis(arch: str, field: str) -> str:
    """Where a family's efficiency for a role comes from (once per family and role: every
    projection's estimated rate says it)."""
    own = next((f for f in FAMILY_EFFICIENCIES if f.arch == arch and f.field == field), None)
    shipped = fitcache.shipped()
    if own is not None and shipped is not None:
        return str(shipped["family_bases"][f"{arch} {field}"])
    if own is not None:
        groups = sorted({group(_case(i)) for i in own.fitted_on})
        return f"fitted on {len(own.fitted_on)} {arch} measurements ({', '.join(groups)})"
    return f"no {arch or 'family'} measurement: the measured families' share, widened band"


def ceiling_of(key: str, values: Values) -> float:
    """A GPU's matmul ceiling: fitted where a case measures it, typed in hardware.toml
    where a vendor publishes it, else the mean of the fitted ceilings."""
    fitted = [c for c in _CEILINGS if (key, "matmul_ceiling") in c.gpu_fields]
    if fitted and values.get(fitted[0].name) is not None:
        return float(values[fitted[0].name])  # type: ignore[arg-type]
    typed = _catalog_doc()[key].get("matmul_ceiling")
    if typed is not None:
        return float(typed)
    measured = [values[c.name] for c in _CEILINGS if values.get(c.name) is not None]
    return mean([float(x) for x in measured if x is not None]) if measured else 1.0


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
    return parse_toml(data_text("hardware.toml"), "hardware.toml")


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


_CEILINGS: tuple[Constant, ...] = tuple(
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
)
CEILING_NAMES = tuple(c.name for c in _CEILINGS)


def _family(f: FamilyEfficiency) -> Constant:
    implied = _share(f.field)
    return Constant(
        f.name,
        "efficiency",
        "share of the matmul ceiling",
        fitted_on=f.fitted_on,
        range_on=(*f.fitted_on, *f.range_on),
        applies_when=f.applies_when,
        fit=_by_group(implied),
        implied=implied,
        needs=(*CEILING_NAMES, *f.needs),
        fallback=None if not f.arch else lambda values: _pooled(f.field, values),
    )


def _pooled(field: str, values: Values) -> float | None:
    return _family_share("", field, values)


_DENSE: tuple[Constant, ...] = (
    Constant(
        "DENSE_TRAINING_SHARE",
        "roofline",
        "share of the matmul ceiling",
        fitted_on=("torchtitan-a100-llama3-8b-bf16-mfu", "llmfoundry-a100-mpt-7b-bf16-seq8192-mfu"),
        range_on=(
            "torchtitan-a100-llama3-8b-bf16-mfu",
            "llmfoundry-a100-mpt-7b-bf16-seq8192-mfu",
            "torchtitan-a100-llama3-8b-bf16-fsdp64",
        ),
        applies_when="7-8B dense bf16 LLM training with FSDP and activation checkpointing "
        "(torchtitan, llm-foundry on A100), as a share of the GPU's best matmul: the "
        "compute-bound limit a drafter's efficiency is bounded by, and the reference of "
        "the MoE factor",
        fit=_mean_of(_dense_share),
        implied=_dense_share,
        needs=CEILING_NAMES,
    ),
    Constant(
        "MOE_EFFICIENCY_FACTOR",
        "roofline",
        "x the dense-LLM training share",
        fitted_on=("mbridge-b300-gptoss120b-bf16-pretrain",),
        range_on=(
            "mbridge-b300-gptoss120b-bf16-pretrain",
            "mbridge-b200-gptoss120b-bf16-pretrain",
            "mbridge-h100-gptoss120b-bf16-pretrain",
        ),
        applies_when="gpt-oss-120b bf16 pretraining in Megatron-Bridge (EP8, 64 GPUs) "
        "against dense LLM training's share of the same GPU's matmul ceiling; applied to "
        "MoE prefill and training on every GPU",
        fit=_mean_of(_moe),
        implied=_moe,
        needs=("DENSE_TRAINING_SHARE", *CEILING_NAMES),
    ),
)

# Colocated runs and the disaggregated splits of the same GPUs, data, software and table
# (SpecForge's DFlash2 recipe, PR #869). A split runs at most min(T t, D d) (targets T at t
# per GPU, drafters D at d), so each split bounds the per-GPU rates from below: t >= rate / T
# and d >= rate / D. The colocated run's efficiency is its rate over N GPUs each spending
# 1/t + 1/d per token at those rates: rates above the bounds would make it lower. The
# recipe's B300 two-node colocated row (34.5) has only a host-receive 8 + 8 split beside it
# (trainer-bound on its fetch, not on the drafter), so it bounds neither rate: not used.
COLOCATED_SPLITS: dict[str, tuple[str, ...]] = {
    "specforge-dflash2-qwen38-27b-h200-colocated-1node-pipeline": (
        "specforge-dflash2-qwen38-27b-h200-4srv-dp4-1node-pipeline",
        "specforge-dflash2-qwen38-27b-h200-5srv-dp3-1node-pipeline",
        "specforge-dflash2-qwen38-27b-h200-3srv-dp5-1node-pipeline",
    ),
    "specforge-dflash2-qwen38-27b-b300-colocated-1node-pipeline": (
        "specforge-dflash2-qwen38-27b-b300-4srv-dp4-1node-pipeline",
        "specforge-dflash2-qwen38-27b-b300-5srv-dp3-1node-pipeline",
        "specforge-dflash2-qwen38-27b-b300-3srv-dp5-1node-pipeline",
        "specforge-dflash2-qwen38-27b-b300-4srv-dp4-device-receive-pipeline",
        "specforge-dflash2-qwen38-27b-b300-3srv-dp5-device-receive-pipeline",
    ),
    "specforge-dflash2-qwen38-27b-h200-colocated-2node-pipeline": (
        "specforge-dflash2-qwen38-27b-h200-8srv-dp8-tcp-host-2node-pipeline",
        "specforge-dflash2-qwen38-27b-h200-8srv-dp8-rdma-device-2node-pipeline",
        "specforge-dflash2-qwen38-27b-h200-10srv-dp6-device-2node-pipeline",
    ),
}


def split_rates(splits: Sequence[Case]) -> tuple[float, float]:
    """The per-GPU target and drafter rates a set of splits of one rig bounds from below
    (each split's rate over its targets, and over its drafters; the largest of each)."""
    target = max(float(c["value"]) / int(c["target_gpus"]) for c in splits)
    drafter = max(float(c["value"]) / int(c["drafter_gpus"]) for c in splits)
    return target, drafter


def _colocation(case: Case, _: Values) -> Span:
    target, drafter = split_rates(list(cases_by_id(COLOCATED_SPLITS[case["id"]]).values()))
    gpus = int(case["gpu_count"])
    time_shared = gpus / (1 / target + 1 / drafter)
    return _point(float(case["value"]) / time_shared)


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
# NVFP4 over FP8 prefill, each a ratio of two runs of one stack (quantity precision_speedup).
FP4_PREFILL = (
    "sglang-gb200-deepseek-r1-prefill-nvfp4-over-fp8",
    "vllm-gb300-deepseek-v32-prefill-nvfp4-over-fp8",
)


def _stated(case: Case, _: Values) -> Span:
    """The value the case states (a measured ratio)."""
    return _point(float(case["value"]))


# A catalog field of a GPU's fitted maturity entry: "maturity:<role>:<engine>".
MATURITY_FIELD = "maturity"


CONSTANTS: tuple[Constant, ...] = (
    *_CEILINGS,
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
        fitted_on=(
            "specforge-domino-qwen3-8b-h200-hidden-state-rate-derived",
            "specforge-dflash2-qwen38-27b-b300-capture-sink-bytes",
        ),
        range_on=(
            "specforge-domino-qwen3-8b-h200-hidden-state-rate-derived",
            "specforge-dflash2-qwen38-27b-b300-capture-sink-bytes",
        ),
        applies_when=f"the capture server's copy into a Mooncake store, one vote per rig: "
        f"{SPECFORGE_PIPELINE} in June (the midpoint of the 44-57 samples/s its sink "
        f"sustained, RDMA) and a B300 server of SpecForge's DFlash2 recipe in September "
        f"(7.2 samples/s of 277 MB over TCP, a lower bound)",
        fit=_by_group(_sink),
        implied=_sink,
    ),
    Constant(
        "TRAINER_FETCH_BYTES_PER_S",
        "pipeline",
        "bytes/s per drafter GPU",
        fitted_on=(
            "specforge-domino-qwen3-8b-h200-trainer-memory-b2",
            "specforge-domino-qwen3-8b-h200-trainer-memory-b8",
            "specforge-dflash2-qwen38-27b-b300-host-receive-rate-derived",
            "specforge-dsv4-flash-dspark-b200-sync-fetch-bandwidth-per-rank",
        ),
        range_on=(
            "specforge-domino-qwen3-8b-h200-trainer-memory-b2",
            "specforge-domino-qwen3-8b-h200-trainer-memory-b8",
            "specforge-dflash2-qwen38-27b-b300-host-receive-rate-derived",
            "specforge-dflash2-qwen38-27b-host-receive-cap-per-rank",
            "specforge-dsv4-flash-dspark-b200-sync-fetch-bandwidth-per-rank",
        ),
        applies_when="the host (pageable) receive path: a trainer's blocking get from a "
        "Mooncake store into a fresh pageable buffer, copied to the GPU on the training "
        "stream (SpecForge before #840, and the 0.2.0 wheel). A per-byte host cost that does "
        "not scale with the drafter GPU: Qwen3-8B on H200 (June), Qwen3.8-27B on B300 and "
        "DeepSeek-V4-Flash on B200 (September) all land at 1.5-2.3 GB/s per rank, at a few "
        "% of the host link",
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
    *_DENSE,
    Constant(
        "FP4_PREFILL_OVER_FP8",
        "roofline",
        "x the FP8 prefill rate",
        fitted_on=FP4_PREFILL,
        range_on=FP4_PREFILL,
        applies_when="prefill of NVFP4 weights against the same stack's FP8 weights on "
        "Blackwell (SGLang's DeepSeek-R1 prefill on GB200, attention in FP8 too; vLLM's "
        "DeepSeek-V3.2 prefill on GB300, sparse attention): applied to every target in fp4 "
        "on a GPU with FP4 tensor cores, dense and hybrid ones included",
        fit=_by_group(_stated),
        implied=_stated,
    ),
    *(_family(f) for f in FAMILY_EFFICIENCIES),
    Constant(
        "COLOCATION_EFFICIENCY",
        "colocated",
        "x the time-shared rate",
        fitted_on=tuple(COLOCATED_SPLITS),
        range_on=tuple(COLOCATED_SPLITS),
        applies_when="SpecForge's in-process colocated trainer (#783; the DFlash2 recipe, "
        "PR #869: Qwen3.8-27B on 8 H200, 8 B300 and 16 H200): each GPU running the target "
        "forward and the drafter step in one process, against the rates the same table's "
        "disaggregated splits bound; applied to every colocated plan",
        fit=_mean_of(_colocation),
        implied=_colocation,
    ),
)
BY_NAME = {c.name: c for c in CONSTANTS}
_EFFICIENCY_INPUTS.update(c.name for c in CONSTANTS if c.home == "efficiency" or c.gpu_fields)


def fit_all(cases: Mapping[str, Case], leave_out: str | None = None) -> dict[str, float | None]:
    """Every constant fitted on its cases outside the group `leave_out`; None for one
    whose fit cases are all in that group (or that needs such a constant)."""
    values: dict[str, float | None] = {}
    for c in CONSTANTS:
        mine = given_cases(cases, c.fitted_on)
        kept = [mine[i] for i in c.fitted_on if group(mine[i]) != leave_out]
        # A matmul ceiling left out falls back as ceiling_of says: not a missing input.
        missing = any(values[n] is None for n in c.needs if n not in CEILING_NAMES)
        if missing:
            values[c.name] = None
        elif kept:
            values[c.name] = c.fit(kept, values)
        else:
            values[c.name] = c.fallback(values) if c.fallback else None
    return values


def given_cases(cases: Mapping[str, Case], ids: Iterable[str]) -> Mapping[str, Case]:
    """The cases of these ids: the ones given, and the file's for the others (a constant
    may be fitted on a measurement the model cannot predict yet, a case waiting for a
    capability: validation hands over only the predicted ones)."""
    missing = [i for i in ids if i not in cases]
    return {**cases, **cases_by_id(missing)} if missing else cases


def span(
    c: Constant, cases: Mapping[str, Case], values: Values, folds: Iterable[float | None] = ()
) -> Span:
    """The constant's range: what each case of its kind implies, its fold values, and the
    alternatives where it is applied outside its runs."""
    cases = given_cases(cases, c.range_on)
    points = [x for case_id in c.range_on for x in c.implied(cases[case_id], values)]
    points += [x for x in folds if x is not None]
    points += list(c.alternatives(values))
    own = values[c.name]
    if own is not None:
        points.append(own)
    return min(points), max(points)


@functools.cache
def value(name: str) -> float:
    """One constant fitted on all its cases (computed once per process, or as shipped)."""
    shipped = fitcache.shipped()
    if shipped is not None:
        return float(shipped["values"][name])
    c = BY_NAME[name]
    needed = {n: value(n) for n in c.needs}
    return c.fit(list(cases_by_id(c.fitted_on).values()), needed)


@functools.cache
def value_range(name: str) -> Span:
    """One constant's range (`span`), with the values its folds over its own fit groups
    take: what a projection may carry where the constant is applied outside its runs."""
    shipped = fitcache.shipped()
    if shipped is not None:
        low, high = shipped["ranges"][name]
        return float(low), float(high)
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
    doc = copy.deepcopy(_catalog_doc())  # parsed once (the fits read it too), edited here
    values: dict[str, float | None] = {
        c.name: value(c.name)
        for c in CONSTANTS
        if c.home == "efficiency" or any(_maturity_key(name) is None for _, name in c.gpu_fields)
    }
    for c in CONSTANTS:
        for key, name in c.gpu_fields:
            if _maturity_key(name) is None:
                doc[key][name] = values[c.name]
    for (key, name), efficiency in efficiency_fields(values).items():
        doc[key][name] = efficiency
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
