"""Every view leads with the job the plan describes: an offline plan's offline run, and
with regeneration the whole job (regenerate, then the run), its phases named under it;
the online pipeline's figures follow, named (model/core/figures.py JOB_*)."""

from __future__ import annotations

import json

import pytest
from dflash_plan.model.core.projection import project
from dflash_plan.model.explore.compare import compare, compared
from dflash_plan.tui.cli import main
from dflash_plan.tui.planner.results import figure_rows
from support import edit

OFFLINE = ("workload.mode=offline",)
REGENERATE = ("workload.regenerate=true",)
BOTH = (*OFFLINE, *REGENERATE)


def _run(capsys, *argv: str, sets: tuple[str, ...] = ()) -> str:
    args = list(argv)
    for item in sets:
        args += ["--set", item]
    assert main(args) == 0
    return capsys.readouterr().out


def _headline(out: str) -> dict[str, str]:
    """The report's first rows by name (a row's continuation lines joined to it)."""
    rows: dict[str, str] = {}
    name = ""
    for line in out.splitlines()[1:]:
        if line.startswith("launch:"):
            break
        head, rest = line[:12].strip(), line[12:].strip()
        name = head or name
        rows[name] = f"{rows.get(name, '')} {rest}".strip()
    return rows


def test_an_offline_plan_leads_the_report_with_its_offline_run(capsys):
    doc = json.loads(_run(capsys, "project", "--json", sets=OFFLINE))
    rows = _headline(_run(capsys, "project", sets=OFFLINE))
    days = doc["storage"]["days"]
    assert rows["time"].startswith(f"{days:,.1f} days offline run: capture ")
    assert rows["total cost"].startswith(f"{doc['job_cost']:,.0f} RTX PRO 6000-hours")
    # The online pipeline's figures stay, named, after the run's.
    assert rows["online"].startswith(f"{doc['days']:,.1f} days to 6 epochs")
    assert "the online pipeline" in rows["online"]
    assert list(rows).index("online") > list(rows).index("total cost")


def test_with_regeneration_the_report_leads_with_the_whole_job(capsys):
    for sets in (REGENERATE, BOTH):
        doc = json.loads(_run(capsys, "project", "--json", sets=sets))
        rows = _headline(_run(capsys, "project", sets=sets))
        total = doc["total"]
        parts = " + ".join(p["name"] for p in doc["phases"])
        assert rows["time"].startswith(f"{total['days']:,.1f} days whole job: regenerate ")
        assert [w for w in rows["time"].split() if w in parts.split()] == parts.split()
        assert rows["total cost"].startswith(f"{total['cost']:,.0f} RTX PRO 6000-hours")
        assert rows["GPU-hours"] == f"{total['gpu_hours']:,.0f}"


def test_an_online_plan_without_regeneration_keeps_its_headline(capsys):
    rows = _headline(_run(capsys, "project"))
    assert list(rows)[:4] == ["throughput", "time", "total cost", "GPU-hours"]
    assert rows["time"].startswith("8.8 days to 6 epochs")
    assert "online" not in rows and "training" not in rows


@pytest.mark.parametrize("sets", [(), OFFLINE, REGENERATE, BOTH])
def test_the_job_keys_are_the_phases_summed(capsys, sets):
    doc = json.loads(_run(capsys, "project", "--json", sets=sets))
    phases = doc["phases"]
    assert doc["job_days"] == pytest.approx(sum(p["days"] for p in phases), rel=1e-12)
    assert doc["job_cost"] == pytest.approx(sum(p["cost"] for p in phases), rel=1e-12)
    tokens = doc["tokens_per_epoch"] * doc["epochs"]
    assert doc["job_cost_per_million_tokens"] == pytest.approx(
        doc["job_cost"] / tokens * 1e6, rel=1e-12
    )
    if "workload.mode=offline" in sets:
        run = doc["storage"]
        extra = sum(p["days"] for p in phases if p["name"] == "regenerate")
        assert doc["job_days"] == pytest.approx(run["days"] + extra, rel=1e-9)
    if not sets:  # online, no regeneration: the job is the online pipeline, exactly
        assert doc["job_days"] == doc["days"] and doc["job_cost"] == doc["total_cost"]
        assert doc["job_cost_per_million_tokens"] == doc["cost_per_million_tokens"]


def test_the_app_figures_lead_with_the_whole_job(catalog, baseline):
    p = project(edit(baseline, workload={"mode": "offline", "regenerate": True}), catalog)
    rows = figure_rows(p)
    assert p.total is not None and p.job_days == p.total.days
    name, value, note = rows[0]
    assert (name, value) == ("time", f"{p.total.days:,.1f} days") and "whole job" in note
    assert rows[1][1].startswith("regenerate ") and rows[2][1].startswith("+ capture ")
    costs = [r for r in rows if r[0] == "total cost"]
    assert costs[0][1].startswith(f"{p.total.cost:,.0f} ")
    # cost/Mtok is the job's, above the online pipeline's rows.
    mtok = next(i for i, r in enumerate(rows) if r[0] == "cost/Mtok")
    assert mtok < rows.index(("online", "the figures below", ""))
    assert p.job_cost_per_million_tokens != p.cost_per_million_tokens
    # The whole job in the first rows of the panel at 80x24 (its figures start at the top).
    assert rows.index(costs[0]) < 6


def test_compare_of_offline_and_regenerating_plans_compares_their_jobs(catalog, baseline):
    online = project(baseline, catalog)
    for workload in ({"mode": "offline"}, {"mode": "offline", "regenerate": True}):
        p = project(edit(baseline, workload=workload), catalog)
        c = compare(p, online)
        assert p.job_days is not None and online.job_days is not None
        assert c.speedup == pytest.approx(online.job_days / p.job_days, rel=1e-12)
        assert c.cost_ratio == pytest.approx(p.job_cost / online.job_cost, rel=1e-12)
        cells = {x.figure.key: x.value for x in compared(p, online).cells}
        assert cells["days"] == p.job_days and cells["total_cost"] == p.job_cost
        assert cells["job_cost_per_million_tokens"] == p.job_cost_per_million_tokens
        low, high = c.speedup_range or (0.0, 0.0)
        assert low <= c.speedup <= high
    regen = project(edit(baseline, workload={"regenerate": True}), catalog)
    c = compare(regen, online)
    assert c.speedup == pytest.approx(online.days / regen.job_days, rel=1e-12) and c.speedup < 1


def test_the_cli_compare_says_it_compares_jobs(capsys, tmp_path):
    base, off = tmp_path / "a.toml", tmp_path / "b.toml"
    assert main(["new", str(base)]) == 0
    off.write_text(
        base.read_text().replace('transport = "direct"', 'transport = "direct"\nmode = "offline"')
    )
    capsys.readouterr()
    out = _run(capsys, "compare", str(base), str(off))
    assert "whole job" in " ".join(out.split())
    doc = json.loads(_run(capsys, "project", "--json", sets=OFFLINE))
    row = _run(capsys, "compare", str(base), str(off), "--csv").splitlines()[2].split(",")
    assert row[3] == f"{doc['job_days']:,.1f} days"
    assert "whole job" in _run(capsys, "compare", str(base), str(off), "--markdown")


def test_the_job_range_adds_the_regeneration_range_to_the_run_range(capsys):
    doc = json.loads(_run(capsys, "project", "--json", sets=BOTH))
    p_fast, p_slow = doc["regeneration"]["days_range"]
    run_fast, run_slow = sorted(doc["storage"]["ranges"]["days"])
    rows = _headline(_run(capsys, "project", sets=BOTH))
    low, high = run_fast + p_fast, run_slow + p_slow
    assert f"range {low:,.1f}-{high:,.1f} days" in rows["time"]
