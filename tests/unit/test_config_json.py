"""Targets from a local Hugging Face config.json."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from dflash_plan.model.basics.errors import PlanError
from dflash_plan.model.inputs.targets import PRESETS, load_config_json
from dflash_plan.tui.cli import main
from support import edit

# The fields of Qwen/Qwen3-8B's config.json that the model reads (values from the model card).
QWEN3_8B_CONFIG = {
    "architectures": ["Qwen3ForCausalLM"],
    "hidden_size": 4096,
    "intermediate_size": 12288,
    "num_attention_heads": 32,
    "num_key_value_heads": 8,
    "head_dim": 128,
    "num_hidden_layers": 36,
    "vocab_size": 151936,
    "tie_word_embeddings": False,
    "sliding_window": None,
    "max_window_layers": 36,
    "torch_dtype": "bfloat16",
}
GPT_OSS_20B_CONFIG = {
    "hidden_size": 2880,
    "intermediate_size": 2880,
    "num_attention_heads": 64,
    "num_key_value_heads": 8,
    "head_dim": 64,
    "num_hidden_layers": 24,
    "vocab_size": 201088,
    "num_local_experts": 32,
    "num_experts_per_tok": 4,
    "sliding_window": 128,
    "layer_types": ["sliding_attention", "full_attention"] * 12,
    "tie_word_embeddings": False,
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
    assert doc["drafter"]["capacity_tokens_per_s"] == pytest.approx(
        ref["drafter"]["capacity_tokens_per_s"]
    )


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


# -- issue 10: a hostile or broken config.json is a one-line error ------------------------


def _write(tmp_path, data: bytes | str):
    path = tmp_path / "config.json"
    path.write_bytes(data.encode() if isinstance(data, str) else data)
    return path


def _with(**fields):
    return json.dumps({**QWEN3_8B_CONFIG, **fields})


@pytest.mark.parametrize(
    "data, expected",
    [
        (b"\xff\xfe{}", "not UTF-8 text"),
        ("[" * 100_000 + "]" * 100_000, "nested too deeply"),
        ('"just a string"', "expected a JSON object, got str"),
        ("[1, 2]", "expected a JSON object, got list"),
        (_with(hidden_size="4096"), "hidden_size = '4096': must be a whole number"),
        (_with(hidden_size=[4096]), "hidden_size = [4096]: must be a whole number"),
        (_with(hidden_size=True), "hidden_size = true: must be a whole number"),
        (_with(hidden_size=4096.5), "hidden_size = 4096.5: must be a whole number"),
        (_with(num_attention_heads=0), "num_attention_heads = 0: must be greater than 0"),
        (
            _with(num_hidden_layers=10**9),
            "num_hidden_layers = 1000000000: must be a whole number from 1 to 10,000 layers",
        ),
        (_with(vocab_size=-1), "vocab_size = -1"),
        (_with(head_dim=10**6), "head_dim = 1000000: must be a whole number from 1 to 4,096"),
        (_with(num_experts=8, num_experts_per_tok=9), "more than the 8 experts"),
        (_with(tie_word_embeddings="yes"), "tie_word_embeddings = 'yes': must be true or false"),
        (_with(sliding_window=128, layer_types="sliding"), "layer_types: must be a list"),
        ('{"hidden_size": NaN}', "not valid JSON: NaN is not a number JSON allows"),
        ('{"hidden_size": Infinity}', "not valid JSON: Infinity is not a number JSON allows"),
        ('{"hidden_size": 1e400}', "hidden_size = inf: must be a whole number"),
        ('{"hidden_size": ' + "1" * 5000 + "}", "more than 4,300 digits"),
        (b"{" + b" " * 2_000_000 + b"}", "larger than 1,048,576 bytes"),
    ],
)
def test_hostile_config_json(tmp_path, data, expected):
    with pytest.raises(PlanError) as err:
        load_config_json(_write(tmp_path, data))
    message = str(err.value)
    assert expected in message and "\n" not in message and len(message) < 300, message


def test_devices_and_pipes_as_config_json(tmp_path):
    """A device or a pipe is refused before it is read (it would never end)."""
    fifo = tmp_path / "config.json"
    os.mkfifo(fifo)
    for path in (Path("/dev/zero"), fifo):
        with pytest.raises(PlanError, match="not a regular file"):
            load_config_json(path)


def test_hostile_config_json_through_the_cli(tmp_path, capsys, baseline):
    _write(tmp_path, _with(num_attention_heads=0))
    plan = tmp_path / "plan.toml"
    plan.write_text(edit(baseline, workload={"target_model": "config.json"}).to_toml())
    assert main(["project", str(plan)]) == 2
    err = capsys.readouterr().err
    assert err.count("\n") == 1 and "num_attention_heads = 0" in err


def test_name_or_path_is_one_line(tmp_path):
    model = load_config_json(_write(tmp_path, _with(_name_or_path="[bold]x\n" + "y" * 500)))
    assert "\n" not in model.name and len(model.name) <= 100


def test_every_preset_is_within_the_bounds():
    """Presets are built without validation (import speed): check them here instead."""
    from dflash_plan.model.inputs.targets import TargetModel

    for key, model in PRESETS.items():
        assert TargetModel.model_validate(model.model_dump()) == model, key
