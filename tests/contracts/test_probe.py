"""The probe loop for the user's B200 question: write the probe, run it against stub
commands, calibrate the plan from its output, and see the B200 projection narrow."""

from __future__ import annotations

import json
import os
import stat
import subprocess
import tomllib
from pathlib import Path

import pytest
from dflash_plan.model.core.projection import project
from dflash_plan.model.inputs.plan import load_plan
from dflash_plan.tui.cli import main

# The stub trainer: SpecForge's `step N: {...}` line (specforge/training/assembly.py) for a
# B200 node with 1 target and 7 drafters at batch 2. Every drafter GPU trains 2 samples per
# optimizer step in 0.125 s of compute: 16 samples/s per GPU; the pipeline delivers 20
# samples/s. A batch of 16 or more runs out of memory.
# A real probe trains for minutes while nvidia-smi samples in the background; the stub
# finishes at once, so it first waits for the sampler's first lines (else a loaded machine
# kills the sampler before it wrote any).
SPECFORGE = """#!/usr/bin/env bash
for _ in $(seq 200); do [ -s gpu.csv ] && break; sleep 0.05; done
for arg in "$@"; do
  case "$arg" in training.batch_size=16|training.batch_size=32) echo "CUDA out of memory" >&2; exit 1;; esac
done
for step in 10 20 30 40 50 60 70 80 90 100; do
  echo "step $step: {'loss': 2.0, 'perf/optimizer_step_time_s': 0.7, 'perf/data_wait_time_s': 0.5, 'perf/train_compute_time_s': 0.125, 'perf/durable_ack_time_s': 0.0, 'perf/global_samples_per_second': 20.0}"
done
"""
# nvidia-smi -l 5: 8 GPUs at 100 % and 980 W of 1,000 W, until killed.
NVIDIA_SMI = """#!/usr/bin/env bash
for i in 0 1 2 3 4 5 6 7; do echo "$i, 100, 980.0, 1000.0"; done
exec sleep 30
"""


def _stub(folder: Path, name: str, text: str) -> None:
    path = folder / name
    path.write_text(text)
    path.chmod(path.stat().st_mode | stat.S_IXUSR)


@pytest.fixture(scope="module")
def probe_run(tmp_path_factory) -> tuple[Path, Path]:
    work = tmp_path_factory.mktemp("probe")
    plan = work / "plan.toml"
    assert main(["new", str(plan), "--force"]) == 0
    # The user's question on B200, at 3.4x the price: plan the 4x B200 run.
    plan.write_text(
        plan.read_text()
        .replace('gpu = "rtx-pro-6000"\ncount = 3', 'gpu = "b200"\ncount = 3')
        .replace('gpu = "rtx-pro-6000"\ncount = 1', 'gpu = "b200"\ncount = 1')
    )
    script = work / "probe.sh"
    assert main(["probe", str(plan), "--gpu", "b200", "--minutes", "1", "-o", str(script)]) == 0
    stubs = work / "bin"
    stubs.mkdir()
    _stub(stubs, "specforge", SPECFORGE)
    _stub(stubs, "nvidia-smi", NVIDIA_SMI)
    env = {**os.environ, "PATH": f"{stubs}:{os.environ['PATH']}", "PROBE_OUT": str(work / "out")}
    result = subprocess.run(
        ["bash", str(script)], cwd=work, env=env, capture_output=True, text=True, timeout=120
    )
    assert result.returncode == 0, result.stderr
    return plan, work / "out"


def test_the_probe_writes_its_samples_config_logs_and_manifest(probe_run):
    _, out = probe_run
    assert (out / "train.jsonl").stat().st_size > 0
    config = (out / "run.yaml").read_text()
    assert "managed_local" in config and "num_anchors: 128" in config
    manifest = tomllib.loads((out / "manifest.toml").read_text())
    # One node of 8 B200: 1 target, 7 drafters; batch 8 fit, 16 did not.
    assert manifest["gpu"] == "b200" and manifest["target_gpus"] == 1
    assert manifest["drafter_gpus"] == 7 and manifest["max_batch_size"] == 8
    assert "step 100:" in (out / "train.log").read_text()


def test_calibrating_from_the_probe_narrows_the_b200_answer(probe_run, capsys):
    plan_path, out = probe_run
    before = project(load_plan(plan_path), _catalog())
    assert main(["calibrate", str(out), "--plan", str(plan_path), "--write"]) == 0
    result = tomllib.loads((out / "probe.toml").read_text())
    # The drafter: 2 samples per 0.125 s of compute = 16 samples/s x 2,344 tokens.
    assert result["drafter"]["tokens_per_s"] == pytest.approx(16 * 2344)
    # The targets: at least the pipeline's 20 samples/s x 2,344 tokens on 1 target GPU,
    # which ran busy (100 %, 98 % of its power limit).
    assert result["target"]["tokens_per_s"] == pytest.approx(20 * 2344)
    assert result["target"]["bound"] == "at_least" and result["target"]["gpu_busy"] is True
    after_plan = load_plan(plan_path)
    assert "b200" in after_plan.calibration.drafter and "b200" in after_plan.calibration.target
    after = project(after_plan, _catalog())
    # The drafter is measured now: no range; the target's low end rises to what it did.
    assert after.drafter.source == "measured"
    assert after.drafter.per_gpu_tokens_per_s == pytest.approx(16 * 2344)
    assert after.target.rate.low_tokens_per_s >= 20 * 2344
    width = lambda p: p.ranges.days[1] - p.ranges.days[0]  # noqa: E731
    assert width(after) < width(before)
    text = capsys.readouterr().out
    assert "before:" in text and "after:" in text


def test_a_folder_that_is_not_a_probe_is_a_clear_error(tmp_path, capsys):
    assert main(["calibrate", str(tmp_path)]) == 2
    err = capsys.readouterr().err
    assert "manifest.toml" in err and len(err.strip().splitlines()) == 1


def _catalog():
    from dflash_plan.tui.config import load_catalog

    return load_catalog()


# Issue 18: the manifest went through an unquoted heredoc, so a model path holding
# `$(touch X)` ran that command on the node and the manifest recorded something else.
CONFIG_JSON = (
    '{"hidden_size": 4096, "num_attention_heads": 32, "num_key_value_heads": 8, '
    '"num_hidden_layers": 36, "intermediate_size": 12288, "vocab_size": 151936}'
)


def test_a_hostile_model_path_runs_nothing_and_is_recorded_exactly(tmp_path):
    from dflash_plan.model.launch.probe import read_probe_dir

    model = tmp_path / "models" / 'm $(touch X) `touch Y` "q" \\ ${HOME}'
    model.mkdir(parents=True)
    (model / "config.json").write_text(CONFIG_JSON)
    script = tmp_path / "probe.sh"
    assert (
        main(
            [
                "probe",
                "--set",
                f"workload.target_model={json.dumps(str(model))}",
                "--gpu",
                "b200",
                "--role",
                "target",
                "--minutes",
                "1",
                "-o",
                str(script),
            ]
        )
        == 0
    )
    stubs = tmp_path / "bin"
    stubs.mkdir()
    _stub(stubs, "specforge", SPECFORGE)
    _stub(stubs, "nvidia-smi", NVIDIA_SMI)
    (tmp_path / "data.jsonl").write_text("{}\n")
    out = tmp_path / "out"
    env = {
        **os.environ,
        "PATH": f"{stubs}:{os.environ['PATH']}",
        "PROBE_OUT": str(out),
        "PROBE_DATASET": str(tmp_path / "data.jsonl"),
    }
    result = subprocess.run(
        ["bash", str(script)], cwd=tmp_path, env=env, capture_output=True, text=True, timeout=60
    )
    assert result.returncode == 0, result.stderr
    assert not [p for p in tmp_path.rglob("*") if p.name in ("X", "Y")], "the path ran"
    manifest = tomllib.loads((out / "manifest.toml").read_text())
    assert manifest["target_model"] == str(model) and manifest["max_batch_size"] == 0
    assert read_probe_dir(out).points[0].measurement.target_model == str(model)


@pytest.mark.parametrize(
    ("role", "gpus", "minutes"),
    [
        # A node of 8 B200: the target probe is 8 GPUs for the 10-minute budget; a drafter
        # probe is 1 target + 1 drafter GPU for the budget plus six one-minute memory-ceiling
        # runs (batches 1 to 32); `both` is 8 GPUs for the 16 minutes.
        ("target", 8, 10),
        ("drafter", 2, 16),
        ("both", 8, 16),
    ],
)
def test_the_probe_says_how_long_it_runs(tmp_path, capsys, role, gpus, minutes):
    from dflash_plan.model.inputs.plan import default_plan
    from dflash_plan.model.launch.probe import probe_script
    from dflash_plan.tui.config import load_catalog

    probe = probe_script(default_plan(), load_catalog(), "b200", role)
    assert probe.gpus == gpus and probe.gpu_hours == pytest.approx(gpus * minutes / 60)
    assert f"about {minutes} minutes on one node" in probe.text.splitlines()[1]
    assert main(["probe", "--gpu", "b200", "--role", role, "-o", str(tmp_path / "p.sh")]) == 0
    assert f"for about {minutes} minutes, {gpus * minutes / 60:.2f} GPU-hours" in (
        capsys.readouterr().err
    )
