"""Errors from reading a config.json or a run config carry their parts (key, where,
value, reason), so that no reader parses the message; the message stays the one line it
was, made of them."""

from __future__ import annotations

import json

import pytest
from dflash_plan.model.basics.errors import PlanError
from dflash_plan.model.inputs.runconfig import read_run_config
from dflash_plan.model.inputs.targets import load_config_json, resolve_target
from dflash_plan.tui.config import load_catalog
from dflash_plan.tui.state import Planner
from test_config_json import QWEN3_8B_CONFIG


@pytest.mark.parametrize(
    "text, value, reason",
    [
        (
            json.dumps({**QWEN3_8B_CONFIG, "hidden_size": -1}),
            "-1",
            "hidden_size = -1: ",
        ),
        (
            json.dumps({**QWEN3_8B_CONFIG, "tie_word_embeddings": "yes"}),
            "'yes'",
            "tie_word_embeddings = 'yes': must be true or false",
        ),
        (
            json.dumps({k: v for k, v in QWEN3_8B_CONFIG.items() if k != "vocab_size"}),
            None,
            "missing 'vocab_size'",
        ),
        ("[1, 2]", None, "expected a JSON object, got list"),
        ('{"hidden_size": NaN}', None, "not valid JSON: "),
    ],
)
def test_config_json_errors_carry_their_parts(tmp_path, text, value, reason):
    path = tmp_path / "config.json"
    path.write_text(text)
    with pytest.raises(PlanError) as caught:
        load_config_json(path)
    err = caught.value
    # The plan field that names the file: the app marks it.
    assert err.key == "workload.target_model"
    assert err.where == str(path) and err.value == value
    assert err.reason is not None and err.reason.startswith(reason)
    assert str(err) == f"{err.where}: {err.reason}"


def test_a_config_json_syntax_error_names_its_line(tmp_path):
    path = tmp_path / "config.json"
    path.write_text('{\n  "hidden_size": 4096,\n  oops\n}')
    with pytest.raises(PlanError) as caught:
        load_config_json(path)
    err = caught.value
    assert (err.key, err.where) == ("workload.target_model", f"{path}:3")
    assert str(err) == f"{path}:3: {err.reason}" and err.reason.startswith("not valid JSON: ")


def test_an_unknown_model_name_carries_its_parts():
    with pytest.raises(PlanError) as caught:
        resolve_target("qwen3-8")
    err = caught.value
    assert (err.key, err.value) == ("workload.target_model", "'qwen3-8'")
    assert err.reason is not None and err.reason.startswith("unknown model (did you mean")
    assert str(err) == f"workload.target_model = 'qwen3-8': {err.reason}"


def test_the_app_routes_a_config_json_error_to_the_target_model_field(tmp_path):
    path = tmp_path / "config.json"
    path.write_text(json.dumps({**QWEN3_8B_CONFIG, "tie_word_embeddings": "yes"}))
    state = Planner(load_catalog())
    state.edit("workload.target_model", str(path))
    state.recompute()
    state.edit("target.count", 4)  # the last edit is elsewhere: the error is not its
    state.recompute()
    assert state.stale
    assert state.errors == {
        "workload.target_model": "tie_word_embeddings = 'yes': must be true or false"
    }


@pytest.mark.parametrize(
    "text, key, where, value, reason",
    [
        (
            "model: {target_model_path: x}\ntraining:\n  num_anchors: many\n",
            "training.num_anchors",
            "run.yaml:3",
            "'many'",
            "must be a whole number of at least 1",
        ),
        (
            "model: {target_model_path: x}\nmodel:\n  aux_hidden_state_layer_ids: [1, -2]\n",
            "model.aux_hidden_state_layer_ids",
            "run.yaml:3",
            "[1, -2]",
            "must be a list of layer numbers",
        ),
        ("", None, "run.yaml", None, "empty: no run config"),
        ("foo: 1\n", None, "run.yaml", None, "neither a SpecForge config"),
    ],
)
def test_run_config_errors_carry_their_parts(tmp_path, text, key, where, value, reason):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    with pytest.raises(PlanError) as caught:
        read_run_config(path)
    err = caught.value
    full = str(tmp_path / where) if where == "run.yaml" else where
    assert (err.key, err.where, err.value) == (key, full, value)
    assert err.reason is not None and err.reason.startswith(reason)
    shown = f"{key} = {value}: " if key else ""
    assert str(err) == f"{full}: {shown}{err.reason}"


def test_an_error_without_its_parts_cannot_be_made():
    with pytest.raises(TypeError):
        PlanError("plan.toml: something is wrong")  # type: ignore[call-arg]
    err = PlanError("plan.toml: something is wrong", where="plan.toml", reason="something")
    assert (err.where, err.reason, err.key, err.value) == ("plan.toml", "something", None, None)


def test_an_error_moved_to_set_keeps_its_parts():
    err = PlanError.field("target.count", "-4", "must be greater than 0", "plan.toml:6")
    assert err.detail == "target.count = -4: must be greater than 0"
    moved = err.moved("--set")
    assert str(moved) == "--set target.count = -4: must be greater than 0"
    assert (moved.where, moved.key, moved.value, moved.reason) == (
        "--set",
        "target.count",
        "-4",
        "must be greater than 0",
    )
    flag = PlanError.flag("--minutes", "0", "between 1 and 1440", "probe.minutes")
    assert str(flag) == "--minutes 0: between 1 and 1440" and flag.detail == "0: between 1 and 1440"
