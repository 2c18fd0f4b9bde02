"""The headless commands' output: JSON contract and human tables."""

from __future__ import annotations

import json

import pytest

from dflash_plan.tui.cli import main


def run_json(capsys, argv):
    assert main(argv) == 0
    return json.loads(capsys.readouterr().out)


def test_project_json_default(capsys):
    doc = run_json(capsys, ["project", "--json"])
    assert doc["ktok_per_s"] == pytest.approx(14.8, rel=0.005)
    assert doc["bottleneck"] == "target"
    assert doc["target"]["source"] == "measured"


def test_project_json_against_the_baseline(capsys):
    doc = run_json(capsys, ["project", "--json", "--set", "target.gpu=b200",
                            "--set", "drafter.gpu=b200", "--baseline"])
    assert doc["versus_baseline"]["speedup"] == pytest.approx((2250 / 504) * (0.40 / 0.45), rel=1e-3)
    assert doc["versus_baseline"]["cost_ratio"] < 1
    assert doc["baseline"]["days"] == pytest.approx(8.8, rel=0.01)


def test_project_human_output_names_the_figures(capsys):
    assert main(["project", "--set", "target.count=7"]) == 0
    out = capsys.readouterr().out
    assert "Ktok/s" in out and "days" in out and "bottleneck" in out
    assert "drafter" in out


def test_gpus_and_models(capsys):
    assert "b300" in run_json(capsys, ["gpus", "--json"])
    assert run_json(capsys, ["models", "--json"])["qwen3-8b"]["hidden"] == 4096
    assert main(["gpus"]) == 0 and "RTX PRO 6000" in capsys.readouterr().out
    assert main(["models"]) == 0 and "gpt-oss-120b" in capsys.readouterr().out


def test_user_config_hardware_file_is_read(capsys, monkeypatch, tmp_path):
    monkeypatch.setenv("DFLASH_PLAN_CONFIG_DIR", str(tmp_path))
    (tmp_path / "hardware.toml").write_text("[rtx-pro-6000]\nusd_per_gpu_hour = 9.0\n")
    doc = run_json(capsys, ["gpus", "--json"])
    assert doc["rtx-pro-6000"]["usd_per_gpu_hour"] == 9.0


def test_new_writes_the_builtin_plan(tmp_path, capsys):
    path = tmp_path / "mine.toml"
    assert main(["new", str(path)]) == 0
    doc = run_json(capsys, ["project", str(path), "--json"]) if capsys.readouterr() else None
    assert doc["ktok_per_s"] == pytest.approx(14.8, rel=0.005)
