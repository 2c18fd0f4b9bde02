"""Plan files: TOML round trip, atomic saves, and --set edits."""

from __future__ import annotations

import os
import tomllib

import pytest
from pydantic import ValidationError
from support import edit

from dflash_plan.model.errors import PlanError
from dflash_plan.model.plan import Plan, load_plan, plan_to_toml, save_plan


def test_toml_round_trip(tmp_path, baseline):
    plan = edit(baseline, target={"gpu": "b200", "count": 6, "tp": 2},
                workload={"target_layer_ids": (1, 5, 9)}, cost={"usd_per_gpu_hour": {"b200": 6.1}})
    path = tmp_path / "plan.toml"
    save_plan(plan, path)
    assert load_plan(path) == plan
    assert tomllib.loads(path.read_text())["schema_version"] == 1


def test_the_default_plan_file_round_trips(tmp_path, baseline):
    path = tmp_path / "p.toml"
    save_plan(baseline, path)
    assert load_plan(path) == baseline


def test_save_is_atomic_and_keeps_the_old_file_on_failure(tmp_path, baseline, monkeypatch):
    path = tmp_path / "plan.toml"
    save_plan(baseline, path)
    before = path.read_text()
    changed = edit(baseline, target={"count": 5})

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        save_plan(changed, path)
    assert path.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.toml"]   # no temp file left


def test_save_keeps_the_file_mode(tmp_path, baseline):
    path = tmp_path / "plan.toml"
    save_plan(baseline, path)
    path.chmod(0o600)
    save_plan(baseline, path)
    assert path.stat().st_mode & 0o777 == 0o600


def test_set_edits_dotted_keys():
    plan = load_plan(None, ["target.count=7", "target.gpu=b200", "cost.ratio.b200=3.4",
                            "calibration.drafter.rtx-pro-6000=40000", "name=my plan"])
    assert plan.target.count == 7 and plan.target.gpu == "b200"
    assert plan.cost.ratio["b200"] == 3.4
    assert plan.calibration.drafter["rtx-pro-6000"] == 40000
    assert plan.name == "my plan"


@pytest.mark.parametrize("sets, message", [
    (["target.count=0"], "--set target.count = 0: Input should be greater than 0"),
    (["target.cuont=3"], "unknown key 'target.cuont' (did you mean 'count'?)"),
    (["target.count"], "expected KEY=VALUE"),
    (["target.count.x=1"], "'target.count' is a value, not a table"),
])
def test_set_errors(sets, message):
    with pytest.raises(PlanError) as err:
        load_plan(None, sets)
    assert message in str(err.value)


def test_plan_models_are_frozen(baseline):
    with pytest.raises(ValidationError):
        baseline.target.count = 9  # type: ignore[misc]
    assert isinstance(baseline, Plan)


def test_new_plan_toml_text_is_readable(baseline):
    assert tomllib.loads(plan_to_toml(baseline))["target"]["count"] == 3
