"""Reading a run's SpecForge or speculators config into plan settings with their sources.

Fixtures: tests/data/runconfig/specforge_disaggregated.yaml is sgl-project/SpecForge
a6b6b02 examples/configs/qwen3-8b-dflash-disaggregated.yaml verbatim; configs/
qwen3-8b-dflash.json keeps the keys read here from SpecForge's configs/qwen3-8b-dflash.json;
speculators_dflash.sh is trimmed from vllm-project/speculators c05b95b
examples/train/dflash_qwen3_8b_sharegpt_online_5k.sh.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dflash_plan.model.basics.errors import PlanError
from dflash_plan.model.inputs.plan import load_plan
from dflash_plan.model.inputs.runconfig import read_run_config, read_train_command

DATA = Path(__file__).parents[1] / "data" / "runconfig"


def sources(config):
    return {s.key: (s.value, s.source) for s in config.settings}


def test_specforge_example_config():
    config = read_run_config(DATA / "specforge_disaggregated.yaml")
    assert config.tool == "SpecForge"
    got = sources(config)
    name = "specforge_disaggregated.yaml"
    assert got["workload.num_anchors"] == (512, f"{name}:19 (training.num_anchors)")
    assert got["workload.epochs"] == (6, f"{name}:13 (training.num_epochs)")
    assert got["drafter.batch_size"] == (4, f"{name}:15 (training.batch_size)")
    assert got["workload.max_length"] == (3072, f"{name}:7 (data.max_length)")
    # The drafter's shape from the draft config the run names (beside the YAML here).
    assert got["workload.draft_layers"] == (
        5,
        "qwen3-8b-dflash.json (num_hidden_layers, model.draft_model_config)",
    )
    assert got["workload.block_size"][0] == 16
    assert got["workload.target_layer_ids"][0] == [1, 9, 17, 25, 33]
    # Qwen/Qwen3-8B is the qwen3-8b preset's repository.
    assert got["workload.target_model"] == ("qwen3-8b", f"{name}:2 (model.target_model_path)")
    assert got["drafter.count"][0] == 4  # nnodes 1 x nproc_per_node 4
    assert got["workload.transport"][0] == "mooncake"
    assert got["launch.run_id"][0] == "qwen3-8b-dflash-disaggregated"
    # Keys of no use to the planner are listed with their lines, not refused.
    assert "training.learning_rate (specforge_disaggregated.yaml:16)" in config.ignored
    # The external capture server does not say its GPUs; max_steps caps the run.
    assert any("server_urls" in note for note in config.notes)
    assert any("training.max_steps = 10,000" in note for note in config.notes)


def test_settings_apply_to_a_plan():
    config = read_run_config(DATA / "specforge_disaggregated.yaml")
    plan = load_plan(None, config.sets())
    w = plan.workload
    assert (w.num_anchors, w.epochs, w.max_length, w.draft_layers, w.block_size) == (
        512,
        6,
        3072,
        5,
        16,
    )
    assert w.target_layer_ids == (1, 9, 17, 25, 33)
    assert (plan.drafter.count, plan.drafter.batch_size) == (4, 4)


def test_specforge_defaults_are_stated(tmp_path):
    # Only what SpecForge requires: every workload key is SpecForge's default, said so.
    path = tmp_path / "run.yaml"
    path.write_text(
        "model:\n  target_model_path: /nowhere/model\ndata:\n  train_data_path: train.jsonl\n"
    )
    config = read_run_config(path)
    got = sources(config)
    schema = "specforge/config/schema.py"
    assert got["workload.num_anchors"] == (
        512,
        f"SpecForge's default for training.num_anchors ({schema})",
    )
    assert got["workload.epochs"][0] == 1
    assert got["drafter.batch_size"][0] == 1
    assert got["workload.max_length"][0] == 2048
    # No draft config: SpecForge auto-generates a 1-layer DFlash drafter, block 16.
    assert got["workload.draft_layers"][0] == 1 and got["workload.block_size"][0] == 16
    # An unknown model path keeps the plan's model and says so; the strategy default
    # (eagle3) is noted.
    assert "workload.target_model" not in got
    assert any("/nowhere/model" in note for note in config.notes)
    assert any("'eagle3'" in note for note in config.notes)


def test_a_typo_is_listed_with_a_suggestion(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text(
        "model:\n  target_model_path: Qwen/Qwen3-8B\n"
        "training:\n  strategy: dflash\n  num_anchor: 128\n"
    )
    config = read_run_config(path)
    # The typo leaves SpecForge's default (512) in force, which is what the run used.
    assert sources(config)["workload.num_anchors"][0] == 512
    assert "training.num_anchor (run.yaml:5) (did you mean 'num_anchors'?)" in config.ignored


def test_managed_capture_servers_give_the_targets(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("""\
model: {target_model_path: Qwen/Qwen3-8B}
data: {train_data_path: t.jsonl}
training: {strategy: dflash}
deployment:
  mode: disaggregated
  trainer: {nnodes: 2, nproc_per_node: 2}
  disaggregated:
    control_dir: c
    backend: mooncake
    managed_local:
      trainer_cuda_visible_devices: ["0"]
      capture_servers:
        - {port: 30000, cuda_visible_devices: ["1", "2"], tp_size: 2}
        - {port: 30001, cuda_visible_devices: ["3", "4"], tp_size: 2}
""")
    got = sources(read_run_config(path))
    # Two servers of tp 2: 4 target GPUs, tp 2; trainer 2 nodes x 2 = 4 drafter GPUs.
    assert (got["target.count"][0], got["target.tp"][0], got["drafter.count"][0]) == (4, 2, 4)


@pytest.mark.parametrize(
    ("buffers", "receive"), [("pageable", "host"), ("pinned", "pinned"), ("cuda", "device")]
)
def test_specforge_receive_buffers_give_the_receive_mode(tmp_path, buffers, receive):
    # deployment.disaggregated.receive_buffers (SpecForge PRs #840, #858): pageable is the
    # host receive of specforge 0.2.0, cuda the device receive over RDMA.
    path = tmp_path / "run.yaml"
    path.write_text(
        "model: {target_model_path: Qwen/Qwen3-8B}\ndata: {max_length: 4096}\n"
        "deployment:\n  mode: disaggregated\n"
        f"  disaggregated:\n    backend: mooncake\n    receive_buffers: {buffers}\n"
    )
    config = read_run_config(path)
    key = "deployment.disaggregated.receive_buffers"
    assert sources(config)["workload.receive"] == (receive, f"run.yaml:7 ({key})")
    assert load_plan(None, config.sets()).workload.receive == receive


def test_a_config_without_receive_buffers_keeps_the_plans_receive():
    # The example (SpecForge a6b6b02) predates receive_buffers: which default the run had
    # depends on its version, so the plan's is kept and a note says why.
    config = read_run_config(DATA / "specforge_disaggregated.yaml")
    assert "workload.receive" not in sources(config)
    assert any(
        note.startswith("deployment.disaggregated.receive_buffers not set: specforge 0.2.0")
        for note in config.notes
    )


@pytest.mark.parametrize(
    "text, message",
    [
        (
            "model: {target_model_path: x}\ndeployment:\n  disaggregated:\n"
            "    backend: mooncake\n    receive_buffers: gpu\n",
            "run.yaml:5: deployment.disaggregated.receive_buffers = 'gpu': must be pageable, "
            "pinned or cuda",
        ),
        (
            "model: {target_model_path: x}\ntraining:\n  num_anchors: many\n",
            "run.yaml:3: training.num_anchors = 'many': must be a whole number of at least 1",
        ),
        (
            "model: {target_model_path: x}\ntraining:\n  batch_size: 0\n",
            "run.yaml:3: training.batch_size = 0",
        ),
        ("model:\n  target_model_path: [unclosed\n", "run.yaml:3: not valid YAML"),
        ("", "run.yaml: empty: no run config"),
        ("- a\n- b\n", "a run config is a mapping of sections"),
        ("foo: 1\n", "neither a SpecForge config"),
        (
            "model: {target_model_path: x}\nmodel:\n  aux_hidden_state_layer_ids: [1, -2]\n",
            "model.aux_hidden_state_layer_ids = [1, -2]: must be a list of layer numbers",
        ),
    ],
)
def test_bad_configs_are_one_line_errors(tmp_path, text, message):
    path = tmp_path / "run.yaml"
    path.write_text(text)
    with pytest.raises(PlanError) as err:
        read_run_config(path)
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_alias_bombs_are_bounded(tmp_path):
    # Nine levels of ten aliases each would be 10^9 nodes: the walk stops at its bound.
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    for i in range(1, 9):
        lines.append(f"a{i}: &a{i} [" + ", ".join([f"*a{i - 1}"] * 10) + "]")
    lines.append("model: {target_model_path: x}")
    path = tmp_path / "run.yaml"
    path.write_text("\n".join(lines) + "\n")
    with pytest.raises(PlanError, match="YAML nodes"):
        read_run_config(path)


def test_speculators_yaml_with_a_train_stage(tmp_path):
    path = tmp_path / "run.yaml"
    path.write_text("""\
prepare_data: {max_samples: 5000}
train:
  speculator_type: dflash
  verifier: {verifier_name_or_path: Qwen/Qwen3-8B}
  data: {max_anchors: 256, total_seq_len: 4096}
  dflash: {block_size: 8}
  trainer: {epochs: 3, lr: 0.0003}
""")
    config = read_run_config(path)
    assert config.tool == "speculators"
    got = sources(config)
    assert got["workload.num_anchors"] == (256, "run.yaml:5 (data.max_anchors)")
    assert got["workload.max_length"][0] == 4096
    assert got["workload.block_size"] == (8, "run.yaml:6 (dflash.block_size)")
    assert got["workload.epochs"][0] == 3
    # Not set: speculators' DFlash default of 5 drafter layers.
    assert got["workload.draft_layers"][0] == 5 and "default" in got["workload.draft_layers"][1]
    assert "trainer.lr (run.yaml:7)" in config.ignored
    assert "prepare_data (stage, not train)" in config.ignored


def test_speculators_launch_script_with_variables():
    config = read_run_config(DATA / "speculators_dflash.sh")
    got = sources(config)
    name = "speculators_dflash.sh"
    # --max-anchors "$MAX_ANCHORS" on line 41, MAX_ANCHORS=3072 on line 16.
    assert got["workload.num_anchors"] == (
        3072,
        f"{name}:41 (--max-anchors, MAX_ANCHORS at {name}:16)",
    )
    assert got["workload.block_size"][0] == 8
    assert got["workload.draft_layers"][0] == 5
    # --target-layer-ids $TARGET_LAYER_IDS: the unquoted "2 18 33" splits into three.
    assert got["workload.target_layer_ids"][0] == [2, 18, 33]
    assert got["workload.epochs"][0] == 5
    assert got["workload.max_length"][0] == 8192
    assert got["workload.target_model"][0] == "qwen3-8b"
    # torchrun --nproc_per_node "$NUM_TRAIN_GPUS" (2): the trainer's ranks.
    assert got["drafter.count"] == (2, f"{name}:29 (torchrun --nnodes x --nproc_per_node)")
    assert f"--lr ({name}:37)" in config.ignored


def test_an_unresolved_variable_is_not_defaulted(tmp_path):
    path = tmp_path / "train.sh"
    path.write_text(
        "ANCHORS=$(cat anchors.txt)\n"
        "python scripts/train.py --max-anchors $ANCHORS --block-size=8 \\\n"
        "    --epochs 2  # two epochs\n"
    )
    config = read_train_command(path)
    got = sources(config)
    # $ANCHORS is set by a command substitution: not read, and not replaced by the
    # default 512 either (the run did set it).
    assert "workload.num_anchors" not in got
    assert any(item.startswith("--max-anchors $ANCHORS (train.sh:2") for item in config.ignored)
    assert got["workload.block_size"] == (8, "train.sh:2 (--block-size)")
    assert got["workload.epochs"] == (2, "train.sh:3 (--epochs)")


def test_a_script_without_the_trainer_is_an_error(tmp_path):
    path = tmp_path / "run.sh"
    path.write_text("echo hello\n")
    with pytest.raises(PlanError, match=r"no scripts/train\.py command"):
        read_run_config(path)


def test_paths_with_any_character_reach_the_plan_exactly(tmp_path):
    # The settings travel as --set edits in TOML: a JSON string spelled a character
    # outside the BMP as a surrogate pair, which TOML refuses, and the plan got the
    # quoted JSON text as the path.
    text = (
        (DATA / "specforge_disaggregated.yaml")
        .read_text()
        .replace(
            "./cache/dataset/sharegpt_train.jsonl", '"./cache/\U0001f600 \\"data\\"\\\\x.jsonl"'
        )
    )
    path = tmp_path / "run.yaml"
    path.write_text(text)
    plan = load_plan(None, read_run_config(path).sets())
    assert plan.launch.train_data_path == './cache/\U0001f600 "data"\\x.jsonl'
