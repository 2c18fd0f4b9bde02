"""Prices per GPU-hour and ratios against a reference GPU stay one consistent view."""

from __future__ import annotations

import pytest
from dflash_plan.model.core.cost import prices
from dflash_plan.model.core.projection import project
from support import edit


def test_ratio_only_plan_reports_reference_gpu_hours(catalog, baseline):
    p = project(baseline, catalog)
    assert p.cost_unit == "RTX PRO 6000-hours"
    # 4 reference GPUs at ratio 1 for 8.8 days: the cost is the GPU-hours.
    assert p.total_cost == pytest.approx(4 * p.days * 24)
    assert p.cost_per_epoch == pytest.approx(p.total_cost / 6)
    # The same run in USD at the catalog price of the reference GPU.
    assert p.total_cost_usd == pytest.approx(
        p.total_cost * catalog.gpus["rtx-pro-6000"].usd_per_gpu_hour
    )


def test_ratios_apply_to_the_reference_price(catalog, baseline):
    plan = edit(
        baseline,
        target={"gpu": "b200"},
        drafter={"gpu": "b200"},
        cost={
            "reference_gpu": "rtx-pro-6000",
            "ratio": {"b200": 3.4},
            "usd_per_gpu_hour": {"rtx-pro-6000": 2.0},
        },
    )
    p = project(plan, catalog)
    assert p.cost_unit == "USD"
    assert p.prices.by_gpu["b200"].usd_per_gpu_hour == pytest.approx(6.8)
    assert p.total_cost == pytest.approx(4 * 6.8 * p.days * 24)


def test_usd_and_ratio_views_agree_for_every_gpu(catalog, baseline):
    plan = edit(
        baseline,
        cost={
            "reference_gpu": "h100-sxm",
            "ratio": {"b200": 1.7},
            "usd_per_gpu_hour": {"rtx-pro-6000": 1.5},
        },
    )
    view = prices(plan, catalog.gpus, ("rtx-pro-6000", "b200", "l40s"))
    ref = view.by_gpu["h100-sxm"].usd_per_gpu_hour
    assert ref == catalog.gpus["h100-sxm"].usd_per_gpu_hour
    for key, price in view.by_gpu.items():
        assert price.ratio == pytest.approx(price.usd_per_gpu_hour / ref), key
    assert view.by_gpu["rtx-pro-6000"].source == "plan usd"
    assert view.by_gpu["b200"].source == "plan ratio"
    assert view.by_gpu["l40s"].source == "catalog"


def test_a_gpu_without_any_price_is_reported(catalog, baseline):
    plan = edit(
        baseline,
        target={"gpu": "mi355x"},
        drafter={"gpu": "mi355x"},
        cost={"reference_gpu": "mi355x", "ratio": {}, "usd_per_gpu_hour": {}},
        calibration={"target": {}, "drafter": {}},
    )
    p = project(plan, catalog)
    assert p.total_cost is None and p.days is not None
    assert any("no price for MI355X" in w for w in p.warnings)


def test_break_even_price_ratio_by_plan_shape():
    from dflash_plan.model.core.economics import break_even_price_ratio

    # Baseline 845 reference-GPU-hours; the plan runs 100 hours.
    # Same non-reference type for both roles, 4 GPUs: 845 / (4 x 100) = 2.1125.
    same = break_even_price_ratio(845, 100, 3, 1, 3.4, 3.4, False, False, True)
    assert same == {"target": pytest.approx(2.1125), "drafter": pytest.approx(2.1125)}
    # Drafter on the reference GPU: (845 - 1 x 100) / (3 x 100) = 2.4833 for the target.
    assert break_even_price_ratio(845, 100, 3, 1, 3.4, 1.0, False, True, False) == {
        "target": pytest.approx(745 / 300)
    }
    # Two non-reference types scale together from 3.4 and 2.0: k = 845 / (3 x 340 + 200).
    k = 845 / (3 * 340 + 1 * 200)
    both = break_even_price_ratio(845, 100, 3, 1, 3.4, 2.0, False, False, False)
    assert both == {"target": pytest.approx(3.4 * k), "drafter": pytest.approx(2.0 * k)}
    # All on the reference GPU: nothing to break even on; the reference GPUs alone cost
    # more than the baseline: no price makes it as cheap.
    assert break_even_price_ratio(845, 100, 3, 1, 1.0, 1.0, True, True, True) is None
    assert break_even_price_ratio(845, 1000, 3, 1, 3.4, 1.0, False, True, False) == {}


def test_whole_node_rentals_bill_every_gpu_of_the_node(catalog, baseline):
    plan = edit(baseline, target={"gpu": "b200"}, drafter={"gpu": "b200"})
    used = project(plan, catalog)
    node = project(
        edit(plan, cost={**baseline.cost.model_dump(), "unit_gpus": {"b200": 8}}), catalog
    )
    # Same run, same days: 8 GPUs billed for the 4 used, so twice the cost.
    assert node.days == used.days and node.billed_gpus == 8 and used.billed_gpus == 4
    assert node.total_cost == pytest.approx(2 * used.total_cost)
    assert node.gpu_hours == used.gpu_hours  # GPU-hours count the GPUs used
    idle = next(d for d in node.diagnostics if d.code == "billed-idle")
    # The split of all 8 with the highest throughput is offered for the same bill.
    best = project(
        edit(
            plan,
            target={"count": idle.values["best_targets"]},
            drafter={"count": idle.values["best_drafters"]},
        ),
        catalog,
    )
    assert best.tokens_per_s == pytest.approx(idle.values["speedup"] * used.tokens_per_s)
    for t in range(1, 8):
        other = project(edit(plan, target={"count": t}, drafter={"count": 8 - t}), catalog)
        assert other.tokens_per_s <= best.tokens_per_s * (1 + 1e-9)


def test_borrowed_prices_are_the_ones_the_plan_does_not_set(catalog, baseline):
    # Ratios only (reference-GPU-hours): the reference is the unit, b200 the plan's ratio,
    # B300 the catalog's ratio.
    keys = ("rtx-pro-6000", "b200", "b300")
    view = prices(baseline, catalog.gpus, keys)
    assert [(p.gpu, p.source) for p in view.borrowed(keys)] == [("b300", "catalog")]
    # In USD the plan's ratios apply to the reference's catalog price: that is borrowed too.
    usd = edit(
        baseline,
        cost={
            "reference_gpu": "rtx-pro-6000",
            "ratio": {"b200": 3.4},
            "usd_per_gpu_hour": {"h200": 3.0},
        },
    )
    view = prices(usd, catalog.gpus, (*keys, "h200"))
    assert [(p.gpu, p.source) for p in view.borrowed(("b200", "h200"))] == [
        ("rtx-pro-6000", "catalog")
    ]
    assert [p.gpu for p in view.borrowed(("h200",))] == []
    # A provider's offer is named with its provider.
    lam = edit(
        baseline,
        cost={
            "reference_gpu": "rtx-pro-6000",
            "provider": "lambda",
            "ratio": {},
            "usd_per_gpu_hour": {},
        },
    )
    view = prices(lam, catalog.gpus, ("b200",), catalog.offers)
    (b200,) = view.borrowed(("b200",))
    assert b200.source == "offer" and b200.to_json()["offer"]["provider"] == "lambda"
