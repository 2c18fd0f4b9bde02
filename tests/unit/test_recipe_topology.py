"""SpecForge's DFlash2 recipe (PR #869) in `validate`: its topology table (H200 and B300,
8 and 16 GPUs, colocated against disaggregated splits), each run predicted with the
recipe's source group left out (issue 32)."""

from __future__ import annotations

import json

import pytest
from dflash_plan.model.evidence.evidence import TOPOLOGY_TOLERANCE, validate
from dflash_plan.model.physics import caserates, fitting, roofline
from dflash_plan.tui.cli import main

RECIPE = "specforge-dflash2-recipe"


@pytest.fixture(scope="module")
def result(catalog):
    return validate(catalog)


def _checks(result):
    return {(c.gpu, c.gpus): c for c in result.topology if c.group == RECIPE}


def test_the_recipe_table_is_in_validate_for_both_gpus_and_both_counts(result):
    checks = _checks(result)
    assert set(checks) == {("h200", 8), ("b300", 8), ("h200", 16), ("b300", 16)}
    splits = {key: [r.split for r in c.rows] for key, c in checks.items()}
    assert splits[("h200", 8)] == ["4 + 4", "5 + 3", "3 + 5", "colocated"]
    assert splits[("b300", 16)] == ["8 + 8", "colocated"]
    # Every disaggregated run is predicted by constants fitted without the recipe.
    for c in checks.values():
        for r in c.rows:
            assert r.cross_validated == (r.topology == "disaggregated"), r.id
            if r.cross_validated:
                assert r.predicted == result.cv_rows[r.id].predicted
            else:  # colocated: the efficiency is fitted on the recipe alone
                assert r.needs == ("COLOCATION_EFFICIENCY",)


def test_the_predicted_winner_is_the_measured_one_on_every_gpu_type_and_count(result):
    # The recipe: colocated loses on H200 (8.61 against 10.65; 16.04 against 20.41) and
    # wins on B300 (18.9 against 11.5; 34.5 against 18.04).
    checks = _checks(result)
    for (gpu, _), c in checks.items():
        assert c.measured_winner == ("colocated" if gpu == "b300" else "disaggregated")
        assert c.predicted_winner == c.measured_winner, (gpu, c.rows)


def test_the_h200_runs_are_within_the_issues_tolerance_with_the_recipe_left_out(result):
    for (gpu, _), c in _checks(result).items():
        if gpu == "h200":
            assert c.worst_abs_error <= TOPOLOGY_TOLERANCE, c.rows


@pytest.mark.xfail(
    strict=True,
    reason="B300 runs 22-56 % high with the recipe left out: its PR #869 DFlash2 trainer "
    "step holds about 1.2 s per 8 samples that no GPU shortens (a host sync per micro-step, "
    "eager kernels) and an HBM-bound fp32 objective (330 GB per micro-batch), which only the "
    "recipe itself measures, so a B300 rank predicts 7.8 samples/s against its 4.7; and "
    "COLOCATION_EFFICIENCY rests on the recipe alone: no other public colocated run states "
    "its GPU and drafter rate (SpecForge #718 bounds it from below only; docs/validation.md)",
)
def test_the_issues_criterion(result):
    # Issue 32, "Done when": the recipe's rows for both topologies (H200 and B300, 8 and 16
    # GPUs) cross-validated with their source group left out: the planner picks the
    # measured winner on each GPU type, and each figure is within 25 %.
    assert all(c.meets for c in _checks(result).values())


def test_fp8_through_an_untuned_kernel_runs_at_the_bf16_rate(catalog):
    # The recipe's H200 servers ran with DeepGEMM disabled (SGLang's untuned Triton
    # block-FP8 kernel): 2.25 prompts/s per GPU, 3.67 with DeepGEMM (1.63x, FP8's speedup).
    case = next(
        iter(fitting.cases_by_id(["specforge-dflash2-qwen38-27b-h200-fp8-capture"]).values())
    )
    h200 = catalog.gpus["h200"]
    assert case["fp8_gemm"] == "untuned"
    assert caserates.precision_speedup(case, h200) == 1.0
    tuned = {k: v for k, v in case.items() if k != "fp8_gemm"}
    assert caserates.precision_speedup(tuned, h200) == roofline.FP8_SPEEDUP
    assert caserates.rate(tuned, catalog.gpus) / caserates.rate(case, catalog.gpus) == (
        pytest.approx(roofline.FP8_SPEEDUP)
    )


def test_a_b300_capture_server_takes_sglangs_maturity_on_b300(catalog):
    # A plan's estimate applies hardware.toml's B300 SGLang maturity: a case's prediction too.
    case = next(
        iter(fitting.cases_by_id(["specforge-dflash2-qwen38-27b-b300-nvfp4-capture"]).values())
    )
    b300 = catalog.gpus["b300"]
    mature = b300.maturity_of("target", "sglang")
    assert mature is not None
    assert caserates.prefill_speedup(case, b300) == pytest.approx(
        caserates.precision_speedup(case, b300) * mature.factor
    )


def test_validate_prints_and_reports_the_verdicts(capsys):
    assert main(["validate"]) == 0
    out = capsys.readouterr().out
    assert "topology tables, each source group left out" in out
    assert "8 x b300 (specforge-dflash2-recipe): measured colocated, predicted" in out
    assert main(["validate", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    tables = doc["summary"]["topology"]
    assert {(t["gpu"], t["gpus"]) for t in tables} >= {("h200", 8), ("b300", 16)}
    row = tables[0]["rows"][0]
    assert set(row) >= {"id", "split", "measured", "predicted", "error", "cross_validated"}
