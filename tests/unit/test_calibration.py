"""Measurements: tied to their workload, bounds, and several points separating device time
from a fixed per-token overhead."""

from __future__ import annotations

import pytest
from dflash_plan.model.core.calibration import bind_to_workload, rebound
from dflash_plan.model.core.projection import project
from dflash_plan.model.inputs.plan import Measurement
from dflash_plan.model.physics.roofline import target_roofline
from support import edit


def test_a_measured_rate_follows_its_workload_not_the_plan(catalog, baseline):
    bound = bind_to_workload(baseline)
    m = bound.calibration.target["rtx-pro-6000"]
    assert isinstance(m, Measurement) and m.target_model == "qwen3-8b"
    seventy = edit(
        bound,
        workload={"target_model": "llama-3.3-70b-instruct"},
        target={"count": 2, "tp": 2},
        drafter={"count": 2},
    )
    p = project(seventy, catalog)
    # Same GPU, another model: the measured efficiency is kept and the rate follows the
    # FLOPs per token, so it falls by the ratio of the two models' work per token.
    qwen = project(baseline, catalog).target_work
    rtx = catalog.gpus["rtx-pro-6000"]
    ratio = (
        target_roofline(p.target_work, rtx).tokens_per_s / target_roofline(qwen, rtx).tokens_per_s
    )
    assert p.target.per_gpu_tokens_per_s == pytest.approx(4933.3 * ratio, rel=1e-6)
    assert p.target.source == "estimated" and "rescaled" in p.target.basis
    assert any("another target model" in note for note in rebound(baseline, seventy))


def test_an_unbound_rate_means_this_plans_workload(catalog, baseline):
    # Without binding, a bare rate is measured on whatever the plan's workload is.
    plan = edit(
        baseline,
        calibration={"target": {"rtx-pro-6000": 4933.3}, "drafter": {}},
        workload={"avg_sample_tokens": 1000},
    )
    assert project(plan, catalog).target.source == "measured"


def test_a_drafter_that_kept_up_bounds_the_estimate_from_below(catalog, baseline):
    # A drafter known to keep up at 18 Ktok/s (above the low end of its efficiency band):
    # the low end of its range is that, in every scenario.
    bound = {"rtx-pro-6000": {"tokens_per_s": 18_000, "bound": "at_least"}}
    p = project(
        edit(baseline, calibration={"target": baseline.calibration.target, "drafter": bound}),
        catalog,
    )
    assert p.drafter.rate.low_tokens_per_s == pytest.approx(18_000)
    assert p.drafter.rate.low_reading == "kept up"
    model = p.drafter.rate.model
    assert min(model.rate(c) for c in model.corners()) == pytest.approx(18_000)
    without = edit(baseline, calibration={"target": baseline.calibration.target, "drafter": {}})
    assert project(without, catalog).drafter.rate.low_tokens_per_s < 18_000


def test_two_gpus_separate_device_time_from_a_fixed_overhead(catalog, baseline):
    # Synthetic measurements from a known truth: half each GPU's default (fitted) prefill
    # efficiency (f = 0.5) plus 50 us per token on every GPU. Measured on RTX PRO 6000 and
    # H100, the fit must recover both, and predict the B200 exactly.
    work = project(baseline, catalog).target_work

    def truth(key: str) -> float:
        gpu = catalog.gpus[key]
        x = 1 / (target_roofline(work, gpu).tokens_per_s * gpu.prefill_efficiency)
        return 1 / (x / 0.5 + 50e-6)

    plan = edit(
        baseline,
        target={"gpu": "b200"},
        drafter={"gpu": "b200"},
        calibration={
            "target": {
                "rtx-pro-6000": truth("rtx-pro-6000"),
                "h100-sxm": truth("h100-sxm"),
            },
            "drafter": {},
        },
    )
    rate = project(plan, catalog).target.rate
    assert rate.fitted_overhead_s_per_token == pytest.approx(50e-6, rel=1e-6)
    assert rate.tokens_per_s == pytest.approx(truth("b200"), rel=1e-6)
    assert rate.readings[0].name == "fit"


def test_measurements_read_the_same_whatever_the_plans_drafter_count(catalog, baseline):
    # Found by the capacity property (test_properties.py): two drafter measurements on
    # B200 and GB200 were read as one GPU's work at the plan's drafter count, so a second
    # drafter moved the optimizer's memory traffic, pushed the two rooflines' ratio past
    # the fit's threshold, and the per-GPU rate fell from 307 to 0.23 tok/s. A
    # measurement's work is its own GPU's: the per-GPU rate cannot depend on the count.
    rates = []
    for drafters in (1, 2, 3, 4):
        plan = edit(
            baseline,
            workload={
                "target_model": "gpt-oss-120b",
                "avg_sample_tokens": 6440,
                "max_length": 6440,
                "num_anchors": 2,
                "block_size": 32,
                "draft_layers": 8,
            },
            target={"gpu": "mi355x", "count": 4, "tp": 4},
            drafter={"gpu": "a100-80g", "count": drafters, "batch_size": 1},
            calibration={"target": {}, "drafter": {"b200": 1.0242, "gb200": 1.1026}},
        )
        rates.append(project(plan, catalog).drafter.per_gpu_tokens_per_s)
    assert max(rates) == pytest.approx(min(rates), rel=1e-9), rates


def _drafter_roof(p, catalog):
    from dflash_plan.model.physics.roofline import drafter_roofline

    rtx = catalog.gpus["rtx-pro-6000"]
    return drafter_roofline(p.drafter_work, rtx, 2344.0).tokens_per_s


def test_a_bound_kept_up_on_dflash_carries_to_another_family_by_its_work(catalog, baseline):
    # The built-in drafter kept up at 14,799.9 tok/s training DFlash (its measurement says
    # so). On DFlash2 or EAGLE-3 the same GPU at the same efficiency keeps up at that rate
    # times the ratio of the two families' drafter rooflines (one GPU, the plan's sample).
    m = baseline.calibration.drafter["rtx-pro-6000"]
    assert isinstance(m, Measurement) and m.drafter == "dflash"
    dflash = project(baseline, catalog)
    assert dflash.drafter.rate.low_tokens_per_s == pytest.approx(14_799.9)
    for family, low in (("dflash2", 14_470), ("eagle3", 3_974)):
        other = project(edit(baseline, workload={"drafter": family}), catalog)
        ratio = _drafter_roof(other, catalog) / _drafter_roof(dflash, catalog)
        assert other.drafter.rate.low_tokens_per_s == pytest.approx(14_799.9 * ratio, rel=1e-9)
        assert other.drafter.rate.low_tokens_per_s == pytest.approx(low, abs=0.5)
        assert other.drafter.rate.low_reading == "kept up"
        assert "training DFlash" in other.drafter.rate.basis
        # The capture runs the whole forward whatever the drafter keeps: the target's
        # measurement stands as measured.
        assert other.target.source == "measured"
        assert other.target.per_gpu_tokens_per_s == pytest.approx(4933.3)


def test_an_exact_drafter_rate_carries_to_another_family_by_its_work(catalog, baseline):
    measured = {"rtx-pro-6000": {"tokens_per_s": 12_000.0, "drafter": "dflash"}}
    plan = edit(baseline, calibration={"target": baseline.calibration.target, "drafter": measured})
    dflash = project(plan, catalog)
    assert dflash.drafter.source == "measured"
    assert dflash.drafter.per_gpu_tokens_per_s == pytest.approx(12_000.0)
    dflash2 = project(edit(plan, workload={"drafter": "dflash2"}), catalog)
    ratio = _drafter_roof(dflash2, catalog) / _drafter_roof(dflash, catalog)
    assert ratio == pytest.approx(14_470 / 14_799.9, abs=1e-4)  # the ratio shown above
    assert dflash2.drafter.source == "estimated" and "rescaled" in dflash2.drafter.basis
    assert dflash2.drafter.per_gpu_tokens_per_s == pytest.approx(12_000.0 * ratio, rel=1e-9)


def test_binding_records_the_drafter_family_of_drafter_measurements_only(baseline):
    plan = edit(
        baseline,
        calibration={"target": baseline.calibration.target, "drafter": {"rtx-pro-6000": 9000.0}},
    )
    bound = bind_to_workload(plan)
    assert bound.calibration.drafter["rtx-pro-6000"].drafter == "dflash"
    assert bound.calibration.target["rtx-pro-6000"].drafter is None
    eagle = edit(bound, workload={"drafter": "eagle3"})
    notes = rebound(plan, eagle)
    assert notes == [
        "the measured drafter rate was taken on another drafter family: it is rescaled "
        "to this workload by its FLOP count (estimated)"
    ]
