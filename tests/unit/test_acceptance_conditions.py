"""The acceptance curve's conditions (issue 33): a fit per drafter family, EAGLE-3's
turnover, the range widened where no public series measured a condition, the physical
bound on tau, and the calibration guard. Every expected number comes from the recorded
public figures (measurements.toml) or the physics."""

from __future__ import annotations

import math

import numpy as np
import pytest
from dflash_plan.model.core.projection import project
from dflash_plan.model.evidence.evidence import load_cases
from dflash_plan.model.inputs.plan import default_plan, plan_from_dict, plan_to_dict
from dflash_plan.model.physics import acceptance as model
from dflash_plan.model.physics import conditions
from dflash_plan.model.physics.acceptance import CurveInputs

# DeepSpec #84's run: 95 % of open-perfectblend's 1,420,909 rows (its test split 0.05).
DEEPSPEC_SAMPLES = 1_349_864
# Its table: epochs -> accept_len.
DEEPSPEC = {0.8: 3.28, 2.3: 3.34, 4.6: 3.34, 7.6: 3.24, 10.0: 3.18}
QWEN3_4B, QWEN3_8B = 4_022_272_000.0, 8_190_427_136.0


def inputs(family: str = "dflash", **changed: object) -> CurveInputs:
    fields: dict[str, object] = {
        "family": family,
        "block_size": 16,
        "anchors": 512,
        "on_policy": False,
        "target_params": QWEN3_8B,
    }
    fields.update(changed)
    return CurveInputs(**fields)  # type: ignore[arg-type]


EAGLE3 = inputs(
    "eagle3", block_size=7, on_policy=True, target_params=QWEN3_4B, samples=DEEPSPEC_SAMPLES
)


def with_(plan, **tables):
    doc = plan_to_dict(plan)
    for table, values in tables.items():
        doc.setdefault(table, {}).update(values)
    return plan_from_dict(doc, "test")


def test_the_conversions_are_the_sources_figures():
    cases = {c["id"]: c for c in load_cases()}
    dflash2 = cases["speculators-1006-qwen3-4b-dflash2-epoch2"]
    # speculators #1006: 507,864 rows, 1,618,498,917 tokens (the 1.62 B is the corpus),
    # epoch 2 of 3.
    assert dflash2["sample_passes"] == 2 * 507_864 and dflash2["on_policy"] is False
    for epochs, tau in DEEPSPEC.items():
        case = cases[f"deepspec-84-qwen3-4b-eagle3-epoch{str(epochs).replace('.', 'p')}"]
        assert case["value"] == tau
        assert case["sample_passes"] == pytest.approx(epochs * DEEPSPEC_SAMPLES, abs=1)


def test_eagle3_turns_over_past_its_peak():
    fit = model.curve().families["eagle3"]
    # The peak: the last of the epochs at the highest tau (3.34 at 2.3 and 4.6 epochs).
    assert fit.peak_epochs == 4.6
    # The decline: least squares through the peak of the share of the gain (tau - 1)
    # lost per epoch.
    past = [(e - 4.6, 1 - (t - 1) / 2.34) for e, t in DEEPSPEC.items() if e > 4.6]
    slope = sum(x * y for x, y in past) / sum(x * x for x, _ in past)
    assert fit.decline_per_epoch == pytest.approx(slope)
    epochs = np.linspace(0.1, 10, 100)
    tau = np.asarray(model.tau_at(EAGLE3, epochs * DEEPSPEC_SAMPLES)[0])
    rising, falling = tau[epochs <= 4.6], tau[epochs > 4.6]
    assert np.all(np.diff(rising) >= 0) and np.all(np.diff(falling) < 0)
    peak = float(model.tau_at(EAGLE3, 4.6 * DEEPSPEC_SAMPLES)[0])
    at_ten = float(model.tau_at(EAGLE3, 10 * DEEPSPEC_SAMPLES)[0])
    assert at_ten == pytest.approx(1 + (peak - 1) * (1 - slope * 5.4))
    # Every point of the series within the fit's worst residual (5 points, 2 % at most).
    for e, t in DEEPSPEC.items():
        assert float(model.tau_at(EAGLE3, e * DEEPSPEC_SAMPLES)[0]) == pytest.approx(
            t, rel=fit.worst_residual + 1e-9
        )
    assert fit.worst_residual < 0.02
    # The search's ceiling is the peak, not the level.
    assert float(model.tau_ceiling(EAGLE3)[0][0]) == pytest.approx(peak)


def test_an_eagle3_plan_no_longer_gets_the_dflash_curve(catalog):
    base = project(default_plan(), catalog).acceptance
    eagle = project(with_(default_plan(), workload={"drafter": "eagle3"}), catalog).acceptance
    assert eagle.tau < base.tau and "deepspec-84" in eagle.sources
    # Off-policy data for a family measured on-policy only: its low end widened.
    assert "off-policy data" in eagle.widened_by and "anchors" not in eagle.widened_by


@pytest.mark.parametrize("family", ["dflash", "dflash2", "dspark"])
def test_the_dflash_family_is_monotone_with_diminishing_returns(family):
    plan = inputs(family, samples=800_000.0, sample_tokens=2344.0, anchors=128)
    passes = np.linspace(1e5, 5e7, 200)
    central = np.asarray(model.tau_at(plan, passes)[0])
    assert np.all(np.diff(central) > 0) and np.all(np.diff(central, 2) < 0)


def test_a_family_no_series_measured_widens_by_the_spread_between_families():
    # Every family the planner trains has a public point now: the fold without the DSpark
    # report's is a curve with a family no series measured (what validate predicts it by).
    c = model.fit_curve([p for p in model.curve_points() if p.group != "specforge-dspark-report"])
    assert "dspark" not in c.families and "dspark" in model.curve().families
    dspark = inputs("dspark")  # block 16, as the DFlash series: only the family is silent
    assert model.widened_by(dspark, c) == (conditions.FAMILY,)
    central, low, high = (float(x) for x in model.tau_at(dspark, 4.8e6, c))
    d_central, d_low, d_high = (float(x) for x in model.tau_at(inputs(), 4.8e6, c))
    assert central == pytest.approx(d_central)  # the central value stays the DFlash one
    ref = (c.level - 1) * float(c.share(4.8e6))
    spread = max(abs((f.level - 1) * float(f.share(4.8e6)) / ref - 1) for f in c.families.values())
    assert spread > 0.1  # EAGLE-3 reaches a quarter less there
    assert high == pytest.approx(d_high + ref * spread)
    assert low == pytest.approx(d_low - ref * spread)


def test_a_block_of_another_size_keeps_the_per_position_acceptance():
    tau16 = float(model.tau_at(inputs(), 4.8e6)[0])
    alpha = float(conditions.per_position_acceptance(tau16, 16))
    assert (1 - alpha**16) / (1 - alpha) == pytest.approx(tau16)
    block8 = inputs(block_size=8)
    assert model.widened_by(block8) == (conditions.BLOCK,)
    central, low, high = (float(x) for x in model.tau_at(block8, 4.8e6))
    assert central == pytest.approx((1 - alpha**8) / (1 - alpha))
    # The range runs to the measured block's tau: a block trained at 8 may accept more
    # per position than the 16's first 8.
    assert low <= central < tau16 <= high
    assert conditions.block_tau(3.0, 16, 16) == 3.0


def test_tau_never_exceeds_what_a_verify_step_can_accept():
    assert conditions.max_tau("dflash", 16) == 16 and conditions.max_tau("eagle3", 7) == 8
    for block in (2, 3, 4):
        for end in model.tau_at(inputs(block_size=block), np.geomspace(1e5, 1e9, 20)):
            assert np.all(np.asarray(end) <= block)


def test_regenerated_data_widens_the_high_end_by_the_spread_between_data_sets():
    c = model.curve()
    lo, hi = c.level_range
    assert c.data_spread == pytest.approx((hi - lo) / (c.level - 1))
    on = inputs(on_policy=True)
    assert model.widened_by(on) == (conditions.ON_POLICY,)
    central, low, high = (float(x) for x in model.tau_at(on, 4.8e6))
    d_central, d_low, d_high = (float(x) for x in model.tau_at(inputs(), 4.8e6))
    gain = d_central - 1
    assert (central, low) == pytest.approx((d_central, d_low))
    assert high == pytest.approx(d_high + gain * c.data_spread)


def test_a_target_far_from_the_measured_sizes_widens_both_ends():
    c = model.curve()
    big = inputs(target_params=32.8e9)
    assert model.widened_by(big) == (conditions.TARGET,)
    octaves = math.log2(32.8e9 / QWEN3_8B) - 1  # beyond the octave around Qwen3-8B
    central, low, high = (float(x) for x in model.tau_at(big, 4.8e6))
    d_central, d_low, d_high = (float(x) for x in model.tau_at(inputs(), 4.8e6))
    by = (d_central - 1) * c.data_spread * octaves
    assert (central, low, high) == pytest.approx((d_central, d_low - by, d_high + by))
    assert model.widened_by(inputs(target_params=QWEN3_8B * 1.9)) == ()


def test_a_calibration_inside_the_measured_budgets_keeps_its_range():
    c = model.curve()
    plan = inputs(measured=(1.152e6, 3.10), measured_range=(3.09, 3.105))
    assert model.share_spread(plan, c, 1.152e6)[0] == pytest.approx(float(c.share(1.152e6)))
    assert model.calibration_note(plan) is None
    central, low, high = (float(x) for x in model.tau_at(plan, 4.8e6))
    assert low < central < high and high - low < 0.05


def test_a_calibration_at_a_tiny_budget_cannot_set_the_level(catalog):
    c = model.curve()
    early = inputs(measured=(20_000.0, 1.5))
    least, most = model.share_spread(early, c, 20_000.0)
    # Below the least measured budget (TorchSpec's 567 K) the shapes the series cannot
    # tell apart disagree on the share: the central one lies between them.
    assert c.first_passes == 567_000
    assert least < float(c.share(20_000.0)) < most
    central, low, high = (float(x) for x in model.tau_at(early, 4.8e6))
    assert high == 16.0  # bounded by the block: the level it implies exceeds it
    # The rejected measurement leaves the public curve's central value; the range spans
    # both the curve's and the measurement's.
    public = [float(x) for x in model.tau_at(inputs(), 4.8e6)]
    assert central == pytest.approx(public[0])
    assert low <= public[1] and low < central < high
    note = model.calibration_note(early)
    assert note is not None and "cannot set the level" in note and "16 tokens" in note
    plan = with_(
        default_plan(),
        calibration={"acceptance": {"run": {"tau": 1.5, "sample_passes": 20_000, "source": "log"}}},
    )
    p = project(plan, catalog)
    assert p.acceptance.calibration_note == note
    assert not p.acceptance.calibrated  # the views do not call the public curve "calibrated"
    assert any(d.code == "acceptance-calibration" and d.message == note for d in p.diagnostics)
    assert p.to_json()["acceptance"]["widened_by"] == []
