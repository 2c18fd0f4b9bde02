"""The acceptance model (issue 33): tau against sample passes, speedup against tau, the
break-even, and their stage in the projection."""

from __future__ import annotations

import math
import statistics

import numpy as np
import pytest
from dflash_plan.model.basics.errors import PlanError
from dflash_plan.model.core.acceptance import Acceptance
from dflash_plan.model.core.projection import project
from dflash_plan.model.inputs.plan import default_plan, plan_from_dict, plan_to_dict
from dflash_plan.model.physics import acceptance as model
from dflash_plan.model.physics.acceptance import CurveInputs, CurvePoint

DFLASH = CurveInputs(
    family="dflash", block_size=16, anchors=512, on_policy=False, target_params=8e9
)


@pytest.fixture(scope="module")
def built_in(catalog):
    return project(default_plan(), catalog)


def with_(plan, **tables):
    doc = plan_to_dict(plan)
    for table, values in tables.items():
        doc.setdefault(table, {}).update(values)
    return plan_from_dict(doc, "test")


def test_the_curve_is_monotone_with_diminishing_returns():
    passes = np.geomspace(1e4, 1e8, 200)
    for pick in (0, 1, 2):
        tau = model.tau_at(DFLASH, passes)[pick]
        assert np.all(np.diff(tau) > 0)
        # Diminishing returns: each equal step of passes adds less than the one before.
        linear = np.linspace(1e5, 5e7, 200)
        gained = np.diff(model.tau_at(DFLASH, linear)[pick])
        assert np.all(np.diff(gained) < 0)
    central, low, high = model.tau_at(DFLASH, passes)
    assert np.all(low <= central) and np.all(central <= high)
    assert float(model.tau_at(DFLASH, 0.0)[0]) == 1.0  # untrained: the target's token only


def test_each_series_level_is_closed_form_on_the_fitted_shape():
    c = model.curve()
    for series in c.levels:
        points = [p for p in model.curve_points() if p.series == series]
        share = c.share(np.array([p.sample_passes for p in points]))
        gained = np.array([p.tau for p in points]) - 1
        # tau - 1 = (L - 1) * share: least squares gives L - 1 = sum(f y) / sum(f f).
        assert c.levels[series] == pytest.approx(1 + (share @ gained) / (share @ share))
    assert c.level == pytest.approx(sum(c.levels.values()) / len(c.levels))


def test_a_fit_without_a_series_at_two_budgets_refuses():
    one = [CurvePoint("a", "g", "s", 1e6, 3.0), CurvePoint("b", "h", "t", 2e6, 3.5)]
    with pytest.raises(ValueError, match="two budgets"):
        model.fit_curve(one)


def test_a_fit_recovers_a_curve_it_was_made_from():
    truth = model.Curve(2e6, 0.6, {"s": 5.0, "t": 4.0}, 0.0)
    points = [
        CurvePoint(f"{s}{p}", s, s, p, float(1 + (truth.levels[s] - 1) * truth.share(p)))
        for s in ("s", "t")
        for p in (3e5, 1e6, 4e6)
    ]
    fitted = model.fit_curve(points)
    assert fitted.levels["s"] == pytest.approx(5.0, rel=0.03)
    assert fitted.levels["t"] == pytest.approx(4.0, rel=0.03)
    assert fitted.worst_residual < 0.01


def test_speedup_is_tau_times_the_engine_factor():
    f = model.engine_factors()[("sglang", "low-batch")]
    ratios = sorted(
        c["value"] / c["acceptance_length"]
        for c in model.speedup_pairs()
        if model.case_engine(c) == ("sglang", "low-batch")
    )
    assert f.pairs == len(ratios) and f.low == ratios[0] and f.high == ratios[-1]
    assert f.central == pytest.approx(float(np.median(ratios)))
    central, low, high = model.speedup_at(4.0, "sglang", "low-batch")
    assert (central, low, high) == pytest.approx((4.0 * f.central, 4.0 * f.low, 4.0 * f.high))
    assert model.speedup_at(4.0, "vllm", "high-batch", factor=0.5) == (2.0, 2.0, 2.0)


def test_break_even_is_the_cost_over_the_gpu_hours_saved():
    # 1,000 units of training; 2x saves half of 4 GPUs at 2 units an hour: 4 units an hour.
    assert model.break_even_hours(1000.0, 2.0, 4, 2.0) == pytest.approx(250.0)
    assert math.isinf(model.break_even_hours(1000.0, 0.9, 4, 2.0))


def test_the_built_in_plan(built_in):
    a = built_in.acceptance
    assert isinstance(a, Acceptance)
    w = built_in.plan.workload
    assert a.sample_passes == w.samples * w.epochs == 4.8e6
    central, low, high = (float(x) for x in model.tau_at(DFLASH, 4.8e6))
    # Its central tau and high end are the DFlash curve's (the public series' conditions);
    # its 128 anchors cover 128 x 16 / 2,344 tokens = 87 % of a sample's positions, fewer
    # than any public run (TorchSpec: 512 anchors, all of them): the low end reads the
    # lowest series' curve at 87 % of the sample passes.
    coverage = 128 * 16 / w.avg_sample_tokens
    lo_level = model.curve().level_range[0]
    fewer = 1 + (lo_level - 1) * float(model.curve().share(4.8e6 * coverage))
    assert (a.tau, *a.tau_range) == pytest.approx((central, fewer, high))
    assert a.widened_by == ("anchors",) and fewer < low
    f = model.engine_factors()[("sglang", "low-batch")]
    assert a.speedup == pytest.approx(a.tau * f.central)
    assert a.speedup_range == pytest.approx((fewer * f.low, high * f.high))
    # Break-even: the job's cost (RTX PRO 6000-hours) over the reference GPU-hours saved.
    saved = 1 - 1 / a.speedup
    assert a.break_even_hours == pytest.approx(built_in.job_cost / saved)
    assert not a.calibrated and "torchspec-results" in a.sources


def test_doubling_epochs_shows_the_added_tau_and_its_cost(catalog, built_in):
    a = built_in.acceptance
    w = built_in.plan.workload
    doubled = project(with_(built_in.plan, workload={"epochs": 2 * w.epochs}), catalog)
    b = doubled.acceptance
    gained = float(model.tau_at(DFLASH, 9.6e6)[0] - model.tau_at(DFLASH, 4.8e6)[0])
    assert b.tau - a.tau == pytest.approx(gained)
    assert 0 < gained < (a.tau - 1)  # the second six epochs add less than the first
    assert doubled.job_cost == pytest.approx(2 * built_in.job_cost)
    # One more epoch: the tau of epoch 7 for one epoch's cost.
    step = float(model.tau_at(DFLASH, 5.6e6)[0] - model.tau_at(DFLASH, 4.8e6)[0])
    assert a.one_more_epoch_tau == pytest.approx(step)
    assert a.one_more_epoch_cost == pytest.approx(built_in.job_cost / w.epochs)
    assert 0 < b.one_more_epoch_tau < a.one_more_epoch_tau


def test_a_measured_tau_sets_the_level(catalog, built_in):
    plan = with_(
        built_in.plan,
        calibration={"acceptance": {"run": {"tau": 3.5, "sample_passes": 2.4e6, "source": "log"}}},
    )
    a = project(plan, catalog).acceptance
    c = model.curve()
    level = 1 + 2.5 / float(c.share(2.4e6))
    assert a.calibrated and "plan calibration.acceptance" in a.sources
    assert a.tau == pytest.approx(1 + (level - 1) * float(c.share(4.8e6)))
    assert a.tau < built_in.acceptance.tau


def test_serving_fields(catalog, built_in):
    plan = with_(built_in.plan, serving={"gpu": "b200", "count": 8, "engine_factor": 0.5})
    a = project(plan, catalog).acceptance
    assert a.speedup == pytest.approx(a.tau * 0.5) and a.serving_gpu == "b200"
    b200 = 3.4  # the built-in plan's price ratio: RTX PRO 6000-hours per B200-hour
    assert a.break_even_hours == pytest.approx(built_in.job_cost / ((1 - 1 / a.speedup) * 8 * b200))
    with pytest.raises(PlanError, match=r"serving\.engine = vllm"):
        project(with_(built_in.plan, serving={"engine": "vllm"}), catalog)
    # A plan without a serving table writes none: plan files stay as they were.
    assert "serving" not in plan_to_dict(built_in.plan)
    assert "acceptance" not in plan_to_dict(built_in.plan)["calibration"]


def test_json_block(built_in):
    doc = built_in.to_json()["acceptance"]
    assert set(doc) >= {
        "tau",
        "tau_range",
        "speedup",
        "speedup_range",
        "break_even_hours",
        "break_even_range",
        "sample_passes",
        "one_more_epoch_tau",
        "one_more_epoch_cost",
        "sources",
        "calibrated",
    }
    assert doc["tau"] == built_in.acceptance.tau


def test_validate_leaves_each_source_group_out(catalog):
    from dflash_plan.model.evidence.evidence import validate

    result = validate(catalog)
    tier = result.cross_validated["acceptance"]
    # z-lab's 4.05 at 4.8 M passes, from a curve fitted on TorchSpec's series alone: its
    # central level is the mean of TorchSpec's series' levels.
    fold = model.fit_curve([p for p in model.curve_points() if p.group != "zlab-dflash"])
    assert "zlab-recipe" not in fold.levels
    predicted = float(model.tau_at(DFLASH, 4.8e6, fold)[0])
    row = result.cv_rows["zlab-qwen3-8b-dflash-reference"]
    assert row.predicted == pytest.approx(predicted)
    assert abs(predicted / 4.05 - 1) < 0.05
    # DeepSpec's EAGLE-3 series, speculators' DFlash2 point and the DSpark report's: each
    # predicted by a fold that has no series of its family, so the DFlash curve widened by
    # the spread between the families left (conditions.FAMILY); every fold that can be
    # predicted counts.
    folds = {p.id for p in model.curve_points() if p.group != "torchspec-results"}
    assert set(result.cv_rows) >= folds and tier.summary.cases == len(folds) == 8
    errors = [abs(result.cv_rows[i].error) for i in folds]
    assert tier.summary.worst_abs_error == pytest.approx(max(errors))
    assert tier.summary.median_abs_error == pytest.approx(statistics.median(errors))
    # TorchSpec's own cases: no other group holds a DFlash series at two budgets.
    assert set(tier.not_cross_validatable) == {
        p.id for p in model.curve_points() if p.group == "torchspec-results"
    }
    in_sample = result.summary["acceptance"]
    assert in_sample.cases == len(model.curve_points()) and in_sample.worst_abs_error < 0.05


def test_project_and_validate_say_it(capsys, built_in):
    from dflash_plan.tui.cli import main

    assert main(["project"]) == 0
    project_text = capsys.readouterr().out
    text = " ".join(project_text.split())
    a = built_in.acceptance
    assert (
        f"acceptance: tau {a.tau:.2f} ({a.tau_range[0]:.2f} - {a.tau_range[1]:.2f}) after "
        f"4.8 M sample passes; serving {a.speedup:.1f}x" in text
    )
    assert f"break-even after {a.break_even_hours:,.0f}" in text
    assert f"one more epoch: {a.one_more_epoch_tau:+.2f} tau for 141 RTX PRO 6000-hours" in text
    assert main(["validate"]) == 0
    text = " ".join(capsys.readouterr().out.split())
    assert "acceptance tier (tau against sample passes): 8 cross-validated by source group" in text
    assert "range widened: no public series measured its anchors" in " ".join(project_text.split())
