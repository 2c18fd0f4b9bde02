"""Prices per GPU-hour and ratios against a reference GPU stay one consistent view."""

from __future__ import annotations

import pytest
from support import edit

from dflash_plan.model.cost import prices
from dflash_plan.model.projection import project


def test_ratio_only_plan_reports_reference_gpu_hours(catalog, baseline):
    p = project(baseline, catalog)
    assert p.cost_unit == "RTX PRO 6000-hours"
    # 4 reference GPUs at ratio 1 for 8.8 days: the cost is the GPU-hours.
    assert p.total_cost == pytest.approx(4 * p.days * 24)
    assert p.cost_per_epoch == pytest.approx(p.total_cost / 6)
    # The same run in USD at the catalog price of the reference GPU.
    assert p.total_cost_usd == pytest.approx(p.total_cost * catalog.gpus["rtx-pro-6000"].usd_per_gpu_hour)


def test_ratios_apply_to_the_reference_price(catalog, baseline):
    plan = edit(baseline, target={"gpu": "b200"}, drafter={"gpu": "b200"},
                cost={"reference_gpu": "rtx-pro-6000", "ratio": {"b200": 3.4},
                      "usd_per_gpu_hour": {"rtx-pro-6000": 2.0}})
    p = project(plan, catalog)
    assert p.cost_unit == "USD"
    assert p.prices.by_gpu["b200"].usd_per_gpu_hour == pytest.approx(6.8)
    assert p.total_cost == pytest.approx(4 * 6.8 * p.days * 24)


def test_usd_and_ratio_views_agree_for_every_gpu(catalog, baseline):
    plan = edit(baseline, cost={"reference_gpu": "h100-sxm", "ratio": {"b200": 1.7},
                                "usd_per_gpu_hour": {"rtx-pro-6000": 1.5}})
    view = prices(plan, catalog.gpus, ("rtx-pro-6000", "b200", "l40s"))
    ref = view.by_gpu["h100-sxm"].usd_per_gpu_hour
    assert ref == catalog.gpus["h100-sxm"].usd_per_gpu_hour
    for key, price in view.by_gpu.items():
        assert price.ratio == pytest.approx(price.usd_per_gpu_hour / ref), key
    assert view.by_gpu["rtx-pro-6000"].source == "plan usd"
    assert view.by_gpu["b200"].source == "plan ratio"
    assert view.by_gpu["l40s"].source == "catalog"


def test_a_gpu_without_any_price_is_reported(catalog, baseline):
    plan = edit(baseline, target={"gpu": "mi355x"}, drafter={"gpu": "mi355x"},
                cost={"reference_gpu": "mi355x", "ratio": {}, "usd_per_gpu_hour": {}},
                calibration={"target": {}, "drafter": {}})
    p = project(plan, catalog)
    assert p.total_cost is None and p.days is not None
    assert any("no price for MI355X" in w for w in p.warnings)
