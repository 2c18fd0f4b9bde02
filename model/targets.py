"""Target model architectures: built-in presets and local Hugging Face config.json files."""

from __future__ import annotations

import json
from pathlib import Path

from pydantic import BaseModel, ConfigDict, Field, PositiveInt

from .errors import PlanError, suggest


class TargetModel(BaseModel):
    """The frozen target LLM, as far as its work per token and its memory are concerned."""

    model_config = ConfigDict(frozen=True, extra="forbid")
    key: str
    name: str
    n_layers: PositiveInt
    hidden: PositiveInt
    intermediate: PositiveInt = Field(description="config intermediate_size (the dense FFN)")
    n_heads: PositiveInt
    n_kv_heads: PositiveInt
    head_dim: PositiveInt
    vocab: PositiveInt
    tie_embeddings: bool = False
    n_experts: int = Field(default=0, ge=0)
    experts_per_token: int = Field(default=0, ge=0)
    moe_intermediate: int = Field(default=0, ge=0)
    sliding_window: PositiveInt | None = None
    sliding_layers: tuple[int, ...] = ()
    default_block_size: PositiveInt = 16
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
            return self.hidden * self.n_experts + self.n_experts * 3 * self.hidden * self.moe_intermediate
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

    def default_layer_ids(self, count: int = 5) -> tuple[int, ...]:
        """DFlash's default: `count` layers spread evenly from layer 1 to n_layers - 3."""
        first, last = 1, self.n_layers - 3
        if count == 1:
            return (last,)
        return tuple(round(first + i * (last - first) / (count - 1)) for i in range(count))


def _preset(**fields: object) -> TargetModel:
    return TargetModel(**fields)


# Dimensions from each model's Hugging Face config.json (shared reference dflash.md).
PRESETS: dict[str, TargetModel] = {
    model.key: model
    for model in (
        _preset(key="qwen3-4b", hf_id="Qwen/Qwen3-4B", chat_template="qwen",
                name="Qwen3-4B", n_layers=36, hidden=2560, intermediate=9728,
                n_heads=32, n_kv_heads=8, head_dim=128, vocab=151_936, tie_embeddings=True),
        _preset(key="qwen3-8b", hf_id="Qwen/Qwen3-8B", chat_template="qwen",
                name="Qwen3-8B", n_layers=36, hidden=4096, intermediate=12288,
                n_heads=32, n_kv_heads=8, head_dim=128, vocab=151_936),
        _preset(key="llama-3.1-8b-instruct", hf_id="meta-llama/Llama-3.1-8B-Instruct", chat_template="llama3",
                name="Llama-3.1-8B-Instruct", n_layers=32,
                hidden=4096, intermediate=14336, n_heads=32, n_kv_heads=8, head_dim=128,
                vocab=128_256),
        _preset(key="qwen3-30b-a3b", hf_id="Qwen/Qwen3-30B-A3B", chat_template="qwen",
                name="Qwen3-30B-A3B", n_layers=48, hidden=2048,
                intermediate=6144, n_heads=32, n_kv_heads=4, head_dim=128, vocab=151_936,
                n_experts=128, experts_per_token=8, moe_intermediate=768),
        _preset(key="llama-3.3-70b-instruct", hf_id="meta-llama/Llama-3.3-70B-Instruct", chat_template="llama3",
                name="Llama-3.3-70B-Instruct", n_layers=80,
                hidden=8192, intermediate=28672, n_heads=64, n_kv_heads=8, head_dim=128,
                vocab=128_256),
        _preset(key="gpt-oss-20b", hf_id="openai/gpt-oss-20b", chat_template="gpt-oss",
                name="gpt-oss-20b", n_layers=24, hidden=2880,
                intermediate=2880, n_heads=64, n_kv_heads=8, head_dim=64, vocab=201_088,
                n_experts=32, experts_per_token=4, moe_intermediate=2880, sliding_window=128,
                sliding_layers=tuple(range(0, 24, 2)), default_block_size=10),
        _preset(key="gpt-oss-120b", hf_id="openai/gpt-oss-120b", chat_template="gpt-oss",
                name="gpt-oss-120b", n_layers=36, hidden=2880,
                intermediate=2880, n_heads=64, n_kv_heads=8, head_dim=64, vocab=201_088,
                n_experts=128, experts_per_token=4, moe_intermediate=2880, sliding_window=128,
                sliding_layers=tuple(range(0, 36, 2)), default_block_size=10),
    )
}


def is_config_path(spec: str) -> bool:
    return spec.endswith(".json") or "/" in spec or "\\" in spec


def _field(config: dict, names: tuple[str, ...], path: str, default: object = None) -> object:
    for name in names:
        if name in config and config[name] is not None:
            return config[name]
    if default is not None:
        return default
    raise PlanError(f"{path}: missing '{names[0]}' (a Hugging Face config.json of a decoder "
                    f"model has it)")


def load_config_json(path: Path) -> TargetModel:
    """A target from a local Hugging Face config.json (dense, MoE, sliding-window layers)."""
    try:
        doc = json.loads(Path(path).read_text(encoding="utf-8"))
    except FileNotFoundError:
        raise PlanError(f"{path}: no such file (workload.target_model takes a preset name or "
                        f"the path of a config.json)") from None
    except json.JSONDecodeError as err:
        raise PlanError(f"{path}:{err.lineno}: not valid JSON: {err.msg}") from None
    except OSError as err:
        raise PlanError(f"{path}: cannot read: {err.strerror}") from None
    if not isinstance(doc, dict):
        raise PlanError(f"{path}: expected a JSON object, got {type(doc).__name__}")
    config = {**doc, **doc["text_config"]} if isinstance(doc.get("text_config"), dict) else doc
    where = str(path)
    hidden = int(_field(config, ("hidden_size",), where))
    heads = int(_field(config, ("num_attention_heads",), where))
    layers = int(_field(config, ("num_hidden_layers",), where))
    n_experts = int(_field(config, ("num_experts", "num_local_experts", "n_routed_experts"),
                           where, default=0))
    layer_types = config.get("layer_types") or []
    sliding = tuple(i for i, kind in enumerate(layer_types) if kind == "sliding_attention")
    name = config.get("_name_or_path") or Path(path).resolve().parent.name or "custom"
    try:
        return TargetModel(
            key=str(path), name=str(name), n_layers=layers, hidden=hidden,
            path=str(Path(path).resolve().parent),
            intermediate=int(_field(config, ("intermediate_size",), where)),
            n_heads=heads,
            n_kv_heads=int(_field(config, ("num_key_value_heads",), where, default=heads)),
            head_dim=int(_field(config, ("head_dim",), where, default=hidden // heads)),
            vocab=int(_field(config, ("vocab_size",), where)),
            tie_embeddings=bool(config.get("tie_word_embeddings", False)),
            n_experts=n_experts,
            experts_per_token=int(_field(config, ("num_experts_per_tok", "experts_per_token"),
                                         where, default=0)) if n_experts else 0,
            moe_intermediate=int(_field(config, ("moe_intermediate_size", "intermediate_size"),
                                        where)) if n_experts else 0,
            sliding_window=int(config["sliding_window"]) if sliding and config.get("sliding_window") else None,
            sliding_layers=sliding if config.get("sliding_window") else (),
        )
    except (TypeError, ValueError) as err:
        raise PlanError(f"{path}: unusable model dimensions: {err}".splitlines()[0]) from None


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
    raise PlanError(f"workload.target_model = {spec!r}: unknown model{suggest(spec, PRESETS)}; "
                    f"use a preset ({', '.join(PRESETS)}) or the path of a config.json")
