"""Rental offers: a provider's price and rental unit, the plan's own figures first, and
prices flagged by age."""

from __future__ import annotations

import datetime as dt
import json

import pytest
from dflash_plan.model.core.projection import project
from dflash_plan.model.inputs.catalog import Catalog
from dflash_plan.model.inputs.offers import (
    PRICE_MAX_AGE_DAYS,
    builtin_offers,
    find,
    load_offer_file,
)
from support import edit


def _on(plan, provider: str, **cost):
    return edit(
        plan,
        cost={"reference_gpu": "rtx-pro-6000", "provider": provider, "ratio": {}, **cost},
        target={"gpu": "b200"},
        drafter={"gpu": "b200"},
    )


def test_the_shipped_table_is_dated_and_sourced():
    offers = builtin_offers()
    assert len(offers) >= 25
    assert all(o.source and o.quote for o in offers)
    assert {o.gpu for o in offers} >= {"b200", "b300", "h200", "h100-sxm", "rtx-pro-6000"}


def test_a_whole_node_offer_bills_the_node(catalog, baseline):
    # Nebius rents B200 only as 8-GPU nodes ($44.00 per node, $5.50 per GPU-hour).
    p = project(_on(baseline, "nebius"), catalog)
    assert p.prices.by_gpu["b200"].usd_per_gpu_hour == pytest.approx(5.50)
    assert p.billed_gpus == 8
    hours = p.days * 24
    assert p.total_cost == pytest.approx(8 * 5.50 * hours)
    assert any(d.code == "billed-idle" for d in p.diagnostics)


def test_the_plans_own_price_and_unit_win(catalog, baseline):
    p = project(
        _on(baseline, "lambda", usd_per_gpu_hour={"b200": 5.0}, unit_gpus={"b200": 1}), catalog
    )
    assert p.prices.by_gpu["b200"].usd_per_gpu_hour == 5.0 and p.billed_gpus == 4


def test_a_provider_rents_its_smallest_unit_first():
    # Lambda has 1x B200 ($6.99) and 8x B200 nodes ($6.69 per GPU): a plan gets the 1x.
    assert find(builtin_offers(), "lambda", "b200", "on-demand").unit_gpus == 1


def test_prices_are_judged_by_age(baseline):
    lambda_b200 = next(
        o
        for o in builtin_offers()
        if o.provider == "lambda" and o.gpu == "b200" and o.unit_gpus == 8
    )
    assert lambda_b200.date == "2026-07-17"
    seen = dt.date(2026, 7, 17)
    assert not lambda_b200.stale(seen + dt.timedelta(days=PRICE_MAX_AGE_DAYS))
    assert lambda_b200.stale(seen + dt.timedelta(days=PRICE_MAX_AGE_DAYS + 1))
    from dflash_plan.model.physics.fitting import builtin_gpus

    late = Catalog(gpus=builtin_gpus(), offers=builtin_offers(), today=dt.date(2027, 6, 1))
    p = project(_on(baseline, "lambda"), late)  # lambda's 1x B200 is undated
    assert any(d.code == "price-stale" and "undated" in d.message for d in p.diagnostics)
    vast = project(_on(baseline, "vast"), late)  # seen 2026-06: 365 days by then
    assert any(d.code == "price-stale" and "365 days old" in d.message for d in vast.diagnostics)


def test_a_users_offer_replaces_the_shipped_one(tmp_path):
    mine = tmp_path / "offers.toml"
    mine.write_text(
        '[[offer]]\nprovider = "lambda"\ngpu = "b200"\nkind = "on-demand"\n'
        'usd_per_gpu_hour = 4.0\nunit_gpus = 1\ndate = "2026-11-01"\n'
    )
    offers = load_offer_file(mine, builtin_offers())
    assert find(offers, "lambda", "b200", "on-demand").usd_per_gpu_hour == 4.0
    assert (
        sum(o.provider == "lambda" and o.gpu == "b200" and o.kind == "on-demand" for o in offers)
        == 1
    )


def test_a_bad_user_offer_file_stops_the_commands_that_read_offers(tmp_path, monkeypatch, capsys):
    """Offers are read on first use: a plan without a provider never needs them (and
    `project` does not pay for parsing them); a command that does names the file."""
    from dflash_plan.tui.cli import main

    (tmp_path / "offers.toml").write_text(
        '[[offer]]\nprovider = "x"\ngpu = "b200"\nusd_per_gpu_hour = -1\ndate = "2026-01"\n'
    )
    monkeypatch.setenv("DFLASH_PLAN_CONFIG_DIR", str(tmp_path))
    assert main(["project", "--json"]) == 0
    capsys.readouterr()
    for argv in (["prices"], ["project", "--set", "cost.provider=lambda"]):
        assert main(argv) == 2
        err = capsys.readouterr().err.strip()
        assert err.endswith(
            "offers.toml: offer.0.usd_per_gpu_hour = -1: must be greater than 0.0"
        ), err
        assert "\n" not in err


def test_an_old_price_is_flagged_in_words_through_a_pipe(tmp_path, monkeypatch, capsys):
    """The flag survives without colour (capsys is a pipe: rich prints no styles)."""
    import datetime as dt

    from dflash_plan.tui.cli import main

    today = dt.date.today()
    fresh, old = today.isoformat(), (today - dt.timedelta(days=400)).isoformat()
    (tmp_path / "offers.toml").write_text(
        f'[[offer]]\nprovider = "fresh-co"\ngpu = "b200"\nusd_per_gpu_hour = 5.0\n'
        f'date = "{fresh}"\n'
        f'[[offer]]\nprovider = "old-co"\ngpu = "b200"\nusd_per_gpu_hour = 4.0\n'
        f'date = "{old}"\n'
    )
    monkeypatch.setenv("DFLASH_PLAN_CONFIG_DIR", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["prices", "--gpu", "b200"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert "\x1b" not in "".join(lines)
    assert " old " in next(line for line in lines if "old-co" in line)
    assert " old " not in next(line for line in lines if "fresh-co" in line)
    assert main(["prices", "--gpu", "b200", "--json"]) == 0
    rows = {r["provider"]: r for r in json.loads(capsys.readouterr().out)}
    assert (rows["old-co"]["old"], rows["fresh-co"]["old"]) == (True, False)
    assert rows["old-co"]["age_days"] == 400


def test_an_offer_dated_after_today_is_flagged_never_a_negative_age(
    tmp_path, monkeypatch, capsys, baseline
):
    """A hand-written date after today (a typo, a wrong clock) read as '-30 d', never
    old: it is old (check it), said as 'after today', and has no age."""
    from dflash_plan.model.physics.fitting import builtin_gpus
    from dflash_plan.tui.cli import main

    today = dt.date.today()
    later = (today + dt.timedelta(days=30)).isoformat()
    (tmp_path / "offers.toml").write_text(
        f'[[offer]]\nprovider = "soon-co"\ngpu = "b200"\nusd_per_gpu_hour = 5.0\ndate = "{later}"\n'
    )
    monkeypatch.setenv("DFLASH_PLAN_CONFIG_DIR", str(tmp_path))
    monkeypatch.setenv("COLUMNS", "200")
    assert main(["prices", "--gpu", "b200", "--provider", "soon-co"]) == 0
    (line,) = [line for line in capsys.readouterr().out.splitlines() if "soon-co" in line]
    assert f"{later} (after today) old" in line and "-30" not in line
    assert main(["prices", "--gpu", "b200", "--provider", "soon-co", "--json"]) == 0
    (row,) = json.loads(capsys.readouterr().out)
    assert (row["age_days"], row["old"]) == (None, True)
    offers = load_offer_file(tmp_path / "offers.toml", ())
    catalog = Catalog(gpus=builtin_gpus(), offers=offers, today=today)
    p = project(_on(baseline, "soon-co"), catalog)
    (stale,) = [d for d in p.diagnostics if d.code == "price-stale"]
    assert f"is dated after today ({later})" in stale.message
