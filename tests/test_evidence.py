"""The validation set and the model's error on it: figures may only move forward."""

from __future__ import annotations

import json

import pytest
from dflash_plan.model.evidence import PREDICTORS, load_cases, validate
from dflash_plan.tui.cli import main

# Where `dflash-plan validate` stands (README, docs/validation.md). Lower the error
# thresholds or raise the coverage ones when the model improves; never the other way.
THRESHOLDS = {
    # group: (median |error| at most, worst |error| at most, range coverage at least)
    "strong/model": (0.035, 0.38, 0.94),
    "strong/fit": (0.01, 0.07, 1.0),
    "strong/check": (0.06, 0.38, 0.90),
    "weak": (0.15, 7.5, 0.51),
    "all": (0.05, 7.5, 0.72),
}


@pytest.fixture(scope="module")
def result(catalog):
    return validate(catalog)


@pytest.mark.parametrize("group", THRESHOLDS)
def test_validation_figures_do_not_regress(result, group):
    median, worst, coverage = THRESHOLDS[group]
    s = result.summary[group]
    assert s.median_abs_error <= median, s
    assert s.worst_abs_error <= worst, s
    assert s.range_coverage >= coverage, s


def test_the_set_covers_what_the_issue_asks_for():
    cases = load_cases()
    assert len(cases) >= 15
    assert len({c["source_group"] for c in cases}) >= 5
    assert len({c["gpu"] for c in cases}) >= 4
    quantities = {c["quantity"] for c in cases}
    assert quantities >= {"target_tokens_per_s_per_gpu", "drafter_samples_per_s_per_gpu",
                          "pipeline_samples_per_s", "drafter_memory_gb", "target_memory_gb",
                          "hidden_state_bytes_per_s", "gpu_ratio"}
    assert quantities <= set(PREDICTORS)
    for c in cases:
        assert c["source"] and c["quote"] and c["half"] in ("fit", "check"), c["id"]
        assert c["tier"] in ("strong", "weak"), c["id"]
        if c["tier"] == "weak":
            assert c.get("assumed") or c.get("notes"), c["id"]
    assert len({c["id"] for c in cases}) == len(cases)


def test_both_halves_hold_every_main_quantity():
    halves: dict[str, set[str]] = {}
    for c in load_cases():
        halves.setdefault(c["quantity"], set()).add(c["half"])
    assert all(h == {"fit", "check"} for q, h in halves.items() if q != "training_mfu")


def test_error_is_signed_predicted_over_measured(result):
    row = next(r for r in result.rows if r.id == "specforge-domino-qwen3-8b-h200-1srv-dp7-pipeline")
    assert row.error == pytest.approx(row.predicted / row.measured - 1)


def test_validate_json_contract(capsys):
    assert main(["validate", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    case = doc["cases"][0]
    assert set(case) >= {"id", "source", "gpu", "quantity", "measured", "predicted", "low",
                         "high", "error", "half", "tier"}
    assert set(doc["summary"]) >= {"median_abs_error", "worst_abs_error", "range_coverage"}
    assert doc["summary"]["groups"]["fit"]["cases"] + doc["summary"]["groups"]["check"][
        "cases"] == len(doc["cases"])
