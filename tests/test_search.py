"""Search: the front is a true Pareto front, its figures are project()'s, and the winners
are what enumerating every plan with project() finds."""

from __future__ import annotations

import json

import pytest
from dflash_plan.model.projection import project
from dflash_plan.model.search import Constraints, default_space, search
from dflash_plan.tui.cli import main
from support import edit

USERS_GPUS = ("b200", "b300", "h200", "rtx-pro-6000")


@pytest.fixture(scope="module")
def users_search(catalog, baseline):
    # The user's question: finish within 3 days, B200/B300/H200/RTX PRO 6000, spend at
    # most the measured run's 845 RTX PRO 6000-hours.
    space = default_space(baseline, catalog, USERS_GPUS, max_gpus=16)
    return search(baseline, catalog, space, Constraints(deadline_days=3, budget=845))


def test_returned_figures_are_the_projections(users_search, catalog):
    for c in (*users_search.front, users_search.cheapest_within_deadline,
              users_search.fastest_within_budget):
        p = project(c.plan, catalog)
        assert c.projection.days == pytest.approx(p.days)
        assert c.projection.total_cost == pytest.approx(p.total_cost)


def test_the_front_is_pareto_and_meets_the_constraints(users_search):
    front = users_search.front
    assert front
    for a in front:
        assert a.days <= 3 and a.cost <= 845
        assert not any(b.days < a.days and b.cost < a.cost for b in front)
    assert [c.days for c in front] == sorted(c.days for c in front)


def test_winners_match_enumerating_every_plan(catalog, baseline):
    # One GPU type, up to 6 GPUs, TP 1: every split through project().
    plan = edit(baseline, target={"gpu": "b200"}, drafter={"gpu": "b200"})
    space = default_space(plan, catalog, ("b200",), max_gpus=6)
    result = search(plan, catalog, space, Constraints(deadline_days=3))
    every = [project(edit(plan, target={"count": t, "tp": tp}, drafter={"count": d}), catalog)
             for tp in (1, 2, 4) for t in range(tp, 6, tp) for d in range(1, 7 - t)]
    within = [p for p in every if p.days <= 3]
    cheapest = min(p.total_cost for p in within)
    assert result.evaluated == len(every)
    assert result.cheapest_within_deadline.cost <= cheapest * 1.01
    assert min(result.front, key=lambda c: c.days).days == pytest.approx(
        min(p.days for p in within))


def test_no_plan_says_what_stopped_it(catalog, baseline):
    space = default_space(baseline, catalog, ("rtx-pro-6000",), max_gpus=8)
    result = search(baseline, catalog, space, Constraints(deadline_days=0.01))
    assert not result.front and result.cheapest_within_deadline is None
    assert "deadline" in result.why_none


def test_search_command_json_and_plan_files(tmp_path, capsys):
    code = main(["search", "--deadline-days", "3", "--gpus", "b200,rtx-pro-6000",
                 "--max-gpus", "8", "--json", "-o", str(tmp_path)])
    assert code == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["front"] and doc["cheapest_within_deadline"]["projection"]["days"] <= 3
    written = tmp_path / "cheapest_within_deadline.toml"
    assert written.exists()
    assert main(["check", str(written)]) == 0


def test_compare_command_formats(tmp_path, capsys):
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    assert main(["new", str(a)]) == 0 and main(["new", str(b)]) == 0
    b.write_text(b.read_text().replace('gpu = "rtx-pro-6000"', 'gpu = "b200"'))
    capsys.readouterr()
    assert main(["compare", str(a), str(b), "--markdown"]) == 0
    lines = capsys.readouterr().out.splitlines()
    assert lines[0].startswith("| plan |") and len(lines) == 4
    assert main(["compare", str(a), str(b), "--csv"]) == 0
    assert capsys.readouterr().out.splitlines()[0].startswith("plan,Ktok/s")
