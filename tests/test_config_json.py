"""Targets from a local Hugging Face config.json."""

from __future__ import annotations

import json

import pytest
from support import edit

from dflash_plan.model.errors import PlanError
from dflash_plan.model.targets import PRESETS, load_config_json
from dflash_plan.tui.cli import main

# The fields of Qwen/Qwen3-8B's config.json that the model reads (values from the model card).
QWEN3_8B_CONFIG = {
    "architectures": ["Qwen3ForCausalLM"], "hidden_size": 4096, "intermediate_size": 12288,
    "num_attention_heads": 32, "num_key_value_heads": 8, "head_dim": 128,
    "num_hidden_layers": 36, "vocab_size": 151936, "tie_word_embeddings": False,
    "sliding_window": None, "max_window_layers": 36, "torch_dtype": "bfloat16",
}
GPT_OSS_20B_CONFIG = {
    "hidden_size": 2880, "intermediate_size": 2880, "num_attention_heads": 64,
    "num_key_value_heads": 8, "head_dim": 64, "num_hidden_layers": 24, "vocab_size": 201088,
    "num_local_experts": 32, "num_experts_per_tok": 4, "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 12, "tie_word_embeddings": False,
}


def test_config_json_matches_the_preset(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(QWEN3_8B_CONFIG))
    model = load_config_json(path)
    preset = PRESETS["qwen3-8b"]
    assert model.total_params == preset.total_params
    assert model.layer_params_active == preset.layer_params_active


def test_moe_config_with_sliding_layers(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps(GPT_OSS_20B_CONFIG))
    model = load_config_json(path)
    preset = PRESETS["gpt-oss-20b"]
    assert model.is_moe and model.sliding_layers == preset.sliding_layers
    assert model.total_params == preset.total_params


def test_plan_with_config_path_projects_like_the_preset(tmp_path, capsys, catalog, baseline):
    (tmp_path / "qwen").mkdir()
    (tmp_path / "qwen" / "config.json").write_text(json.dumps(QWEN3_8B_CONFIG))
    plan_path = tmp_path / "plan.toml"
    plan_path.write_text(edit(baseline, workload={"target_model": "qwen/config.json"}).to_toml())
    assert main(["project", str(plan_path), "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert main(["project", "--json"]) == 0
    ref = json.loads(capsys.readouterr().out)
    assert doc["tokens_per_s"] == pytest.approx(ref["tokens_per_s"])
    assert doc["drafter"]["capacity_tokens_per_s"] == pytest.approx(ref["drafter"]["capacity_tokens_per_s"])


def test_config_missing_a_field(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({k: v for k, v in QWEN3_8B_CONFIG.items() if k != "hidden_size"}))
    with pytest.raises(PlanError, match="missing 'hidden_size'"):
        load_config_json(path)


def test_config_not_json(tmp_path):
    path = tmp_path / "config.json"
    path.write_text("{\n  'single quotes': 1\n}")
    with pytest.raises(PlanError, match=r"config.json:2: not valid JSON"):
        load_config_json(path)
