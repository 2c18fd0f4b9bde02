"""The chart data: the split curve and the tornado are the model's own figures."""

from __future__ import annotations

import pytest
from dflash_plan.model.core.projection import project
from dflash_plan.model.explore.sensitivity import split_curve, tornado
from support import edit


def test_the_split_curve_is_every_split_projected(catalog, baseline):
    p = project(edit(baseline, target={"count": 7}), catalog)
    curve = split_curve(p)
    assert curve.targets == (1, 2, 3, 4, 5, 6, 7) and curve.current == 7
    for t, tokens in zip(curve.targets, curve.tokens_per_s, strict=True):
        q = project(edit(baseline, target={"count": t}, drafter={"count": 8 - t}), catalog)
        assert tokens == pytest.approx(q.tokens_per_s)
    # Measured targets add 4,933.3 tok/s each. Each drafter is held at the 14,799.9 tok/s
    # it kept up with (the built-in plan's at_least bound, above its default-efficiency
    # estimate), 3 targets' worth: 6 + 2 is a tie (2 x 14,799.9 = 6 x 4,933.3), which
    # names the targets as the bottleneck does, and the one drafter binds at 7 + 1.
    kept = baseline.calibration.drafter["rtx-pro-6000"].tokens_per_s
    assert curve.target_tokens_per_s[2] == pytest.approx(3 * 4933.3)
    assert curve.drafter_tokens_per_s == pytest.approx(tuple((8 - t) * kept for t in curve.targets))
    assert curve.switch == 7


def test_the_tornado_moves_one_input_at_a_time(catalog, baseline):
    # Two drafters: one fitted B200 drafter (sm100's share of the ceiling) binds under 3
    # targets even at their slow reading, so the target's range would move nothing and
    # have no bar; two leave the targets binding at that end.
    plan = edit(baseline, target={"gpu": "b200"}, drafter={"gpu": "b200", "count": 2})
    p = project(plan, catalog)
    bars = tornado(p, catalog)
    assert [b.days_span for b in bars] == sorted((b.days_span for b in bars), reverse=True)
    anchors = next(b for b in bars if b.name == "anchors")
    # The recipe's 512 anchors: the projection of the same plan at 512.
    at_512 = project(edit(plan, workload={"num_anchors": 512}), catalog)
    assert anchors.days[1] == pytest.approx(at_512.days)
    price = next(b for b in bars if b.name.startswith("price"))
    assert price.days == (p.days, p.days)
    assert price.cost == pytest.approx((0.5 * p.total_cost, 1.5 * p.total_cost))
    # The target's range is its two readings.
    target = next(b for b in bars if b.name.startswith("target rate"))
    assert target.days[0] > target.days[1]  # the slow reading is the later finish
    assert "workload" in target.name and "kernels" in target.name


@pytest.mark.parametrize(
    ("tp", "targets", "target_gpu", "drafter_gpu", "drafters"),
    [
        (1, 4, "b200", "b200", 1),
        (2, 4, "b200", "b200", 1),
        (4, 8, "b200", "b200", 2),
        (1, 4, "b200", "h200", 1),
        (2, 4, "h200", "b200", 2),
    ],
)
def test_the_tornado_and_the_projection_give_a_role_one_range(
    catalog, baseline, tp, targets, target_gpu, drafter_gpu, drafters
):
    """A role's rate bar is the range the projection's narrowing note gives that role (an
    H200 target at TP 2 has readings and an efficiency band: both move at once)."""
    p = project(
        edit(
            baseline,
            target={"gpu": target_gpu, "count": targets, "tp": tp},
            drafter={"gpu": drafter_gpu, "count": drafters},
        ),
        catalog,
    )
    bars = {b.role: b for b in tornado(p, catalog) if b.role is not None}
    assert set(bars) == set(p.ranges.role_days) and bars
    for role, bar in bars.items():
        assert tuple(sorted(bar.days)) == pytest.approx(p.ranges.role_days[role])
    assert p.ranges.widest_days == pytest.approx(p.ranges.role_days[p.ranges.widest])
    for role, (low, high) in p.ranges.role_days.items():
        assert f"{role} (dflash-plan probe" in p.narrowing
        assert f"moves the finish between {low:.1f} and {high:.1f} days" in p.narrowing
