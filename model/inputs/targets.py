"""Target model architectures: built-in presets and local Hugging Face config.json files."""

from __future__ import annotations

import json
import math
from pathlib import Path
from typing import Annotated, Any

from pydantic import BaseModel, ConfigDict, Field

from ..basics import validation as v
from ..basics.errors import PlanError, suggest
from ..basics.tomlfile import read_text

# Every dimension of a target, with its range (docs/limits.md): far above any published
# model, low enough that the per-layer loops of the work model finish at once.
Layers = Annotated[int, v.MODEL_LAYERS.before, v.MODEL_LAYERS.field("decoder layers")]
Width = Annotated[int, v.MODEL_WIDTH.before, v.MODEL_WIDTH.field("elements")]
Heads = Annotated[int, v.MODEL_HEADS.before, v.MODEL_HEADS.field("attention heads")]
HeadDim = Annotated[int, v.HEAD_DIM.before, v.HEAD_DIM.field("elements per head")]
Vocab = Annotated[int, v.VOCAB.before, v.VOCAB.field("vocabulary size")]
Experts = Annotated[int, v.EXPERTS.before, v.EXPERTS.field("0: dense")]
_MOEWIDTH = v.Bound(0, v.MODEL_WIDTH.hi)
MoeWidth = Annotated[int, _MOEWIDTH.before, _MOEWIDTH.field("0: dense")]
Window = Annotated[int, v.SLIDING_WINDOW.before, v.SLIDING_WINDOW.field("sliding-window length")]
BlockSize = Annotated[int, v.BLOCK_SIZE.before, v.BLOCK_SIZE.field("drafted tokens per anchor")]


class TargetModel(BaseModel):
    """The frozen target LLM, as far as its work per token and its memory are concerned."""

    model_config = ConfigDict(frozen=True, extra="forbid", defer_build=True)
    key: str
    name: str
    n_layers: Layers
    hidden: Width
    intermediate: Width = Field(
        description=f"config intermediate_size (the dense FFN); {v.MODEL_WIDTH.describe()}"
    )
    n_heads: Heads
    n_kv_heads: Heads
    head_dim: HeadDim
    vocab: Vocab
    tie_embeddings: bool = False
    n_experts: Experts = 0
    experts_per_token: Experts = 0
    moe_intermediate: MoeWidth = 0
    sliding_window: Window | None = None
    sliding_layers: tuple[int, ...] = ()
    default_block_size: BlockSize = 16
    hf_id: str | None = Field(None, description="Hugging Face repository, for launch commands")
    chat_template: str = "qwen"
    path: str | None = Field(None, description="local model folder (config.json targets)")

    @property
    def is_moe(self) -> bool:
        return self.n_experts > 0

    @property
    def q_dim(self) -> int:
        return self.n_heads * self.head_dim

    @property
    def kv_dim(self) -> int:
        return self.n_kv_heads * self.head_dim

    @property
    def ffn_width(self) -> int:
        """The FFN width a token runs through: its experts' together in a MoE layer."""
        return self.experts_per_token * self.moe_intermediate if self.is_moe else self.intermediate

    @property
    def attention_params(self) -> int:
        """q, k, v, o projections of one layer."""
        return 2 * self.hidden * self.q_dim + 2 * self.hidden * self.kv_dim

    @property
    def ffn_params_active(self) -> int:
        """FFN weights one token passes through (gate, up, down; routed experts only)."""
        if self.is_moe:
            router = self.hidden * self.n_experts
            return router + self.experts_per_token * 3 * self.hidden * self.moe_intermediate
        return 3 * self.hidden * self.intermediate

    @property
    def ffn_params_total(self) -> int:
        if self.is_moe:
            return (
                self.hidden * self.n_experts
                + self.n_experts * 3 * self.hidden * self.moe_intermediate
            )
        return 3 * self.hidden * self.intermediate

    @property
    def layer_params_active(self) -> int:
        return self.attention_params + self.ffn_params_active

    @property
    def layer_params_total(self) -> int:
        return self.attention_params + self.ffn_params_total

    @property
    def embedding_params(self) -> int:
        """Input embedding plus LM head (one matrix when tied)."""
        return self.vocab * self.hidden * (1 if self.tie_embeddings else 2)

    @property
    def total_params(self) -> int:
        return self.n_layers * self.layer_params_total + self.embedding_params

    def default_layer_ids(self, count: int) -> tuple[int, ...]:
        """DFlash's captured layers for a drafter of `count` layers, one per drafter layer:
        spread evenly from layer 1 to n_layers - 3, or the middle layer for a one-layer
        drafter (`build_target_layer_ids` in z-lab/dflash, mirrored by SpecForge and
        SGLang; SpecForge's producer accepts no other set)."""
        if count == 1:
            return (self.n_layers // 2,)
        first, last = 1, self.n_layers - 3
        return tuple(round(first + i * (last - first) / (count - 1)) for i in range(count))


def _preset(**fields: Any) -> TargetModel:
    # Built without validation (no schema build at import: every command imports this);
    # tests/unit/test_config_json.py validates every preset against the bounds.
    return TargetModel.model_construct(**fields)


# Dimensions from each model's Hugging Face config.json (docs/workload.md).
PRESETS: dict[str, TargetModel] = {
    model.key: model
    for model in (
        _preset(
            key="qwen3-4b",
            hf_id="Qwen/Qwen3-4B",
            chat_template="qwen",
            name="Qwen3-4B",
            n_layers=36,
            hidden=2560,
            intermediate=9728,
            n_heads=32,
            n_kv_heads=8,
            head_dim=128,
            vocab=151_936,
            tie_embeddings=True,
        ),
        _preset(
            key="qwen3-8b",
            hf_id="Qwen/Qwen3-8B",
            chat_template="qwen",
            name="Qwen3-8B",
            n_layers=36,
            hidden=4096,
            intermediate=12288,
            n_heads=32,
            n_kv_heads=8,
            head_dim=128,
            vocab=151_936,
        ),
        _preset(
            key="llama-3.1-8b-instruct",
            hf_id="meta-llama/Llama-3.1-8B-Instruct",
            chat_template="llama3",
            name="Llama-3.1-8B-Instruct",
            n_layers=32,
            hidden=4096,
            intermediate=14336,
            n_heads=32,
            n_kv_heads=8,
            head_dim=128,
            vocab=128_256,
        ),
        _preset(
            key="qwen3-30b-a3b",
            hf_id="Qwen/Qwen3-30B-A3B",
            chat_template="qwen",
            name="Qwen3-30B-A3B",
            n_layers=48,
            hidden=2048,
            intermediate=6144,
            n_heads=32,
            n_kv_heads=4,
            head_dim=128,
            vocab=151_936,
            n_experts=128,
            experts_per_token=8,
            moe_intermediate=768,
        ),
        _preset(
            key="llama-3.3-70b-instruct",
            hf_id="meta-llama/Llama-3.3-70B-Instruct",
            chat_template="llama3",
            name="Llama-3.3-70B-Instruct",
            n_layers=80,
            hidden=8192,
            intermediate=28672,
            n_heads=64,
            n_kv_heads=8,
            head_dim=128,
            vocab=128_256,
        ),
        _preset(
            key="gpt-oss-20b",
            hf_id="openai/gpt-oss-20b",
            chat_template="gpt-oss",
            name="gpt-oss-20b",
            n_layers=24,
            hidden=2880,
            intermediate=2880,
            n_heads=64,
            n_kv_heads=8,
            head_dim=64,
            vocab=201_088,
            n_experts=32,
            experts_per_token=4,
            moe_intermediate=2880,
            sliding_window=128,
            sliding_layers=tuple(range(0, 24, 2)),
            default_block_size=10,
        ),
        _preset(
            key="gpt-oss-120b",
            hf_id="openai/gpt-oss-120b",
            chat_template="gpt-oss",
            name="gpt-oss-120b",
            n_layers=36,
            hidden=2880,
            intermediate=2880,
            n_heads=64,
            n_kv_heads=8,
            head_dim=64,
            vocab=201_088,
            n_experts=128,
            experts_per_token=4,
            moe_intermediate=2880,
            sliding_window=128,
            sliding_layers=tuple(range(0, 36, 2)),
            default_block_size=10,
        ),
    )
}


def is_config_path(spec: str) -> bool:
    return spec.endswith(".json") or "/" in spec or "\\" in spec


# The config.json keys each dimension is read from, first found wins (Hugging Face names;
# MoE models differ in the expert-count key).
_KEYS: dict[str, tuple[str, ...]] = {
    "hidden": ("hidden_size",),
    "n_heads": ("num_attention_heads",),
    "n_layers": ("num_hidden_layers",),
    "intermediate": ("intermediate_size",),
    "n_kv_heads": ("num_key_value_heads",),
    "head_dim": ("head_dim",),
    "vocab": ("vocab_size",),
    "n_experts": ("num_experts", "num_local_experts", "n_routed_experts"),
    "experts_per_token": ("num_experts_per_tok", "experts_per_token"),
    "moe_intermediate": ("moe_intermediate_size", "intermediate_size"),
    "sliding_window": ("sliding_window",),
}
_BOUNDS: dict[str, v.Bound] = {
    "hidden": v.MODEL_WIDTH,
    "n_heads": v.MODEL_HEADS,
    "n_layers": v.MODEL_LAYERS,
    "intermediate": v.MODEL_WIDTH,
    "n_kv_heads": v.MODEL_HEADS,
    "head_dim": v.HEAD_DIM,
    "vocab": v.VOCAB,
    "n_experts": v.EXPERTS,
    "experts_per_token": v.EXPERTS,
    "moe_intermediate": v.MODEL_WIDTH,
    "sliding_window": v.SLIDING_WINDOW,
}
_NAME_CHARS = 100  # a `_name_or_path` longer than this is shown cut


# A config.json's errors concern the plan field that names the file: the app marks it.
TARGET_KEY = "workload.target_model"


def _bad(where: str, reason: str, value: str | None = None) -> PlanError:
    """A config.json error, `where: reason`, with its parts (the value of the JSON field
    the reason names, when there is one)."""
    return PlanError.at(where, reason, key=TARGET_KEY, value=value)


def _bad_field(where: str, name: str, value: Any, reason: str) -> PlanError:
    """A config.json field's error, `where: name = value: reason`, with its parts."""
    shown = v.short_repr(value)
    return _bad(where, f"{name} = {shown}: {reason}", shown)


def _reject_constant(name: str) -> float:
    raise ValueError(f"{name} is not a number JSON allows")


class _Config:
    """The fields of a config.json (its text_config for multimodal models), each read
    with its type and range checked."""

    def __init__(self, doc: dict[str, Any], where: str) -> None:
        text = doc.get("text_config")
        self.doc = {**doc, **text} if isinstance(text, dict) else doc
        self.where = where

    def whole(self, field: str, default: int | None = None) -> int:
        names = _KEYS[field]
        bound = _BOUNDS[field]
        for name in names:
            value = self.doc.get(name)
            if value is None:
                continue
            # Integral floats (4096.0) are accepted; anything else must be an integer.
            if isinstance(value, float) and math.isfinite(value) and value == int(value):
                value = int(value)
            try:
                return int(bound.check(value))
            except ValueError as err:
                raise _bad_field(self.where, name, value, str(err)) from None
        if default is not None:
            return default
        raise _bad(
            self.where,
            f"missing '{names[0]}' (a Hugging Face config.json of a decoder model has it)",
        )

    def flag(self, name: str, default: bool) -> bool:
        value = self.doc.get(name, default)
        if value is None:
            return default
        if not isinstance(value, bool):
            raise _bad_field(self.where, name, value, "must be true or false")
        return value

    def sliding_layers(self, n_layers: int) -> tuple[int, ...]:
        kinds = self.doc.get("layer_types") or []
        if not isinstance(kinds, list) or len(kinds) > v.MODEL_LAYERS.hi:
            raise _bad(
                self.where,
                f"layer_types: must be a list of at most {v.MODEL_LAYERS.hi:,} layer kinds "
                f'(e.g. "sliding_attention")',
            )
        return tuple(i for i, kind in enumerate(kinds[:n_layers]) if kind == "sliding_attention")

    def name(self, path: Path) -> str:
        name = self.doc.get("_name_or_path")
        if not isinstance(name, str) or not name.strip():
            name = path.resolve().parent.name or "custom"
        # One line of printable text, as names are shown.
        name = "".join(c if c.isprintable() else " " for c in name).strip() or "custom"
        return name if len(name) <= _NAME_CHARS else name[: _NAME_CHARS - 3] + "..."


def load_config_json(path: Path) -> TargetModel:
    """A target from a local Hugging Face config.json (dense, MoE, sliding-window layers).
    The file is read bounded and every field it gives is checked for type and range."""
    try:
        text = read_text(
            path, "workload.target_model takes a preset name or the path of a config.json"
        )
    except PlanError as err:  # missing, too large, not UTF-8: on the plan's field, whole
        # (the field shows the path as written; the line names the file it resolved to)
        raise PlanError.said(str(err), TARGET_KEY, where=err.where, value=err.value) from None
    where = str(path)
    try:
        doc = json.loads(text, parse_constant=_reject_constant)
    except json.JSONDecodeError as err:
        raise _bad(f"{path}:{err.lineno}", f"not valid JSON: {err.msg}") from None
    except RecursionError:
        raise _bad(where, "not valid JSON: nested too deeply") from None
    except ValueError as err:  # NaN/Infinity, or an integer of over 4,300 digits
        detail = (
            "an integer of more than 4,300 digits"
            if "digits" in str(err)
            else str(err).splitlines()[0]
        )
        raise _bad(where, f"not valid JSON: {detail}") from None
    if not isinstance(doc, dict):
        raise _bad(where, f"expected a JSON object, got {type(doc).__name__}")
    config = _Config(doc, where)
    hidden = config.whole("hidden")
    heads = config.whole("n_heads")
    layers = config.whole("n_layers")
    n_experts = config.whole("n_experts", default=0)
    head_dim = config.whole("head_dim", default=max(hidden // heads, 1))
    window = config.whole("sliding_window", default=0) if config.doc.get("sliding_window") else 0
    sliding = config.sliding_layers(layers) if window else ()
    window = window if sliding else 0
    experts_per_token = config.whole("experts_per_token", default=0) if n_experts else 0
    if experts_per_token > n_experts:
        raise _bad(
            where,
            f"num_experts_per_tok = {experts_per_token}: more than the {n_experts} experts",
            str(experts_per_token),
        )
    try:
        return TargetModel(
            key=str(path),
            name=config.name(Path(path)),
            n_layers=layers,
            hidden=hidden,
            path=str(Path(path).resolve().parent),
            intermediate=config.whole("intermediate"),
            n_heads=heads,
            n_kv_heads=config.whole("n_kv_heads", default=heads),
            head_dim=head_dim,
            vocab=config.whole("vocab"),
            tie_embeddings=config.flag("tie_word_embeddings", False),
            n_experts=n_experts,
            experts_per_token=experts_per_token,
            moe_intermediate=config.whole("moe_intermediate") if n_experts else 0,
            sliding_window=window or None,
            sliding_layers=sliding,
        )
    except PlanError:  # a field read above: its own error, not wrapped in this one
        raise
    except (TypeError, ValueError) as err:
        raise _bad(where, f"unusable model dimensions: {err}".splitlines()[0]) from None


def resolve_target(spec: str, base_dir: Path | None = None) -> TargetModel:
    """A preset by key, or a config.json path (relative paths from the plan's folder)."""
    if spec in PRESETS:
        return PRESETS[spec]
    if is_config_path(spec):
        path = Path(spec).expanduser()
        if not path.is_absolute() and base_dir is not None:
            path = base_dir / path
        if path.is_dir():
            path = path / "config.json"
        return load_config_json(path)
    raise PlanError.field(
        TARGET_KEY,
        repr(spec),
        f"unknown model{suggest(spec, PRESETS)}; use a preset ({', '.join(PRESETS)}) "
        f"or the path of a config.json",
    )
