"""The validation set and the model's error on it: figures may only move forward."""

from __future__ import annotations

import json

import pytest
from dflash_plan.model.evidence.evidence import PREDICTORS, load_cases, validate
from dflash_plan.tui.cli import main

# The headline (README, docs/validation.md): every case predicted by constants fitted
# without its own source group. Issue 19's target for the strong model tier: median at
# most 10 %, worst at most 30 %, coverage at least 80 %; where it stands now is tighter.
# Lower the error thresholds or raise the others when the model improves; never the
# other way. Issue 30 moved them once, on purpose: the GPUs' efficiencies are fitted, no
# longer typed, so SpecForge's H200 drafter is now predicted from TorchSpec's H100 runs
# alone (-19 %, was +3 % against a typed default); 55 weak cases were 22. Issue 32 moved
# them again, on purpose: the drafter families made 19 DFlash2 and DSpark cases
# predictable (10 wait on what the model still lacks); the DFlash2 trainer ranks are
# predicted 10-16 % fast (the convolutions' and the selector's elementwise work is not in
# the FLOPs) and the tuned H200 rows 23-42 % slow (tuned kernels), so the medians rose a
# little and coverage fell; the strong tier's worst and issue 19's target still hold.
CROSS_VALIDATED = {
    # tier: (median |error| at most, worst |error| at most, coverage at least, cases at least)
    "strong/model": (0.067, 0.20, 1.0, 10),
    "strong": (0.067, 0.20, 1.0, 10),
    "weak": (0.29, 7.5, 0.41, 63),
    # The runs of the drafter family the plan trains, every tier (issue 30).
    "dflash-family": (0.31, 7.5, 0.44, 52),
    "decode": (0.13, 0.43, 0.79, 29),
}
# Secondary, in sample: every constant fitted on all its cases.
THRESHOLDS = {
    # group: (median |error| at most, worst |error| at most, range coverage at least)
    "strong/model": (0.041, 0.20, 1.0),
    "strong/fit": (0.01, 0.16, 1.0),
    "strong/check": (0.06, 0.20, 1.0),
    "weak": (0.23, 7.5, 0.42),
    "all": (0.144, 7.5, 0.58),
}


@pytest.fixture(scope="module")
def result(catalog):
    return validate(catalog)


@pytest.mark.parametrize("tier", CROSS_VALIDATED)
def test_cross_validated_figures_do_not_regress(result, tier):
    median, worst, coverage, cases = CROSS_VALIDATED[tier]
    s = result.cross_validated[tier].summary
    assert s.cases >= cases, s
    assert s.median_abs_error <= median, s
    assert s.worst_abs_error <= worst, s
    assert s.range_coverage >= coverage, s


def test_the_strong_model_tier_meets_the_issues_target_cross_validated(result):
    s = result.cross_validated["strong/model"].summary
    assert s.median_abs_error <= 0.10 and s.worst_abs_error <= 0.30
    assert s.range_coverage >= 0.80


@pytest.mark.parametrize("group", THRESHOLDS)
def test_validation_figures_do_not_regress(result, group):
    median, worst, coverage = THRESHOLDS[group]
    s = result.summary[group]
    assert s.median_abs_error <= median, s
    assert s.worst_abs_error <= worst, s
    assert s.range_coverage >= coverage, s


def test_a_cross_validated_case_is_predicted_by_its_fold(result):
    # Each A100 MFU case is predicted by the other group's MFU alone: torchtitan's
    # 58.2 % for llm-foundry's 54.47 %, and the other way round.
    titan = result.cv_rows["torchtitan-a100-llama3-8b-bf16-mfu"]
    foundry = result.cv_rows["llmfoundry-a100-mpt-7b-bf16-seq8192-mfu"]
    assert titan.predicted == pytest.approx(0.5447)
    assert foundry.predicted == pytest.approx(0.582)
    assert foundry.error == pytest.approx(0.582 / 0.5447 - 1)
    # In sample both see the mean of the two.
    row = next(r for r in result.rows if r.id == "torchtitan-a100-llama3-8b-bf16-mfu")
    assert row.predicted == pytest.approx((0.582 + 0.5447) / 2)


def test_a_case_needing_a_constant_fitted_on_its_own_group_alone_is_set_apart(result):
    # SpecForge's trainer memory rests on the activation multiple and the trainer
    # reserve, both fitted on SpecForge alone: not cross-validatable, not in the headline.
    case = "specforge-domino-qwen3-8b-h200-trainer-memory-b8"
    assert result.needs_own_group[case] == ("ACTIVATION_IO_MULTIPLE", "TRAINER_RUNTIME_RESERVE_GIB")
    assert case not in result.cv_rows
    assert case in result.cross_validated["strong/model"].not_cross_validatable
    # SpecForge's single-GPU drafter rate uses no fitted constant: cross-validated.
    assert "specforge-domino-qwen3-8b-h200-microbench-b2" in result.cv_rows
    # A matmul ceiling is its own measurement: its case cannot check it; another group's
    # measurement of the same GPU can.
    assert result.needs_own_group["stas00-mamf-b200-bf16"] == ("B200_MATMUL_CEILING",)
    assert result.needs_own_group["stas00-mamf-ratio-b300-over-b200-bf16"] == (
        "B200_MATMUL_CEILING",
        "B300_MATMUL_CEILING",
    )
    assert "zzc-b200-bf16-matmul" in result.cv_rows
    single = {c.name for c in result.constants if not c.cross_validatable}
    assert not {"DENSE_TRAINING_SHARE", "SM90_TRAINING_SHARE", "SM100_TRAINING_SHARE"} & single
    assert not {"TRAINER_FETCH_BYTES_PER_S", "CAPTURE_SINK_BYTES_PER_S"} & single
    assert {"ACTIVATION_IO_MULTIPLE", "MOE_EFFICIENCY_FACTOR"} <= single


def test_the_set_covers_what_the_issue_asks_for():
    cases = load_cases()
    assert len(cases) >= 15
    assert len({c["source_group"] for c in cases}) >= 5
    # A learning-curve case's training GPUs may go unsaid (z-lab's run).
    assert len({c["gpu"] for c in cases if "gpu" in c}) >= 4
    quantities = {c["quantity"] for c in cases}
    assert quantities >= {
        "target_tokens_per_s_per_gpu",
        "drafter_samples_per_s_per_gpu",
        "pipeline_samples_per_s",
        "drafter_memory_gb",
        "target_memory_gb",
        "hidden_state_bytes_per_s",
        "gpu_ratio",
    }
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
    assert set(case) >= {
        "id",
        "source",
        "gpu",
        "quantity",
        "measured",
        "predicted",
        "low",
        "high",
        "error",
        "half",
        "tier",
        "group",
        "cross_validated",
        "cv_predicted",
        "cv_error",
    }
    assert set(doc["summary"]) >= {
        "median_abs_error",
        "worst_abs_error",
        "range_coverage",
        "cross_validated",
    }
    # The decode cases (the regeneration phase's model: its rates and the memory an engine
    # holds), the topology tables' runs (issue 32's own test) and the acceptance model's
    # cases (issue 33: tau against budget, speedup against tau) are summarised apart.
    groups = doc["summary"]["groups"]
    apart = sum(
        groups[k]["cases"]
        for k in ("decode", "decode/memory", "topology", "acceptance", "acceptance/serving")
    )
    assert groups["fit"]["cases"] + groups["check"]["cases"] + apart == len(doc["cases"])
    cv = doc["summary"]["cross_validated"]
    assert set(cv) >= {"strong/model", "strong", "weak", "all"}
    assert set(cv["strong/model"]) >= {
        "cases",
        "median_abs_error",
        "worst_abs_error",
        "range_coverage",
        "not_cross_validatable",
    }
    assert sum(
        cv[k]["cases"] + len(cv[k]["not_cross_validatable"])
        for k in ("all", "decode", "decode/memory", "topology", "acceptance", "acceptance/serving")
    ) == len(doc["cases"])
    constants = {c["name"]: c for c in doc["constants"]}
    assert set(constants) >= {
        "RUNTIME_RESERVE_GIB",
        "ACTIVATION_IO_MULTIPLE",
        "TRAINER_RUNTIME_RESERVE_GIB",
        "MOE_EFFICIENCY_FACTOR",
        "NETWORK_EFFICIENCY",
        "CAPTURE_SINK_BYTES_PER_S",
        "TRAINER_FETCH_BYTES_PER_S",
        # Issue 30: the GPUs' efficiencies per kernel family (A100_TRAINING_EFFICIENCY was
        # the one fitted before; A100 now takes the measured families' share).
        "DENSE_TRAINING_SHARE",
        "SM90_PREFILL_SHARE",
        "SM90_TRAINING_SHARE",
        "SM100_TRAINING_SHARE",
    }
    groups = {c["group"] for c in doc["cases"]}
    for c in constants.values():
        assert set(c) >= {"name", "value", "range", "fitted_on", "groups", "applies_when", "folds"}
        low, high = c["range"]
        assert low <= c["value"] <= high, c["name"]
        assert c["fitted_on"] and c["applies_when"], c["name"]
        assert {f["left_out_group"] for f in c["folds"]} == groups
        for f in c["folds"]:
            # A fold that leaves out every group the constant is fitted on cannot refit it.
            assert (f["value"] is None) == (set(c["groups"]) == {f["left_out_group"]})
    reserve = constants["TRAINER_RUNTIME_RESERVE_GIB"]
    assert reserve["groups"] == ["specforge"] and reserve["cross_validatable"] is False
