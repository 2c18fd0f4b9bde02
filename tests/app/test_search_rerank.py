"""The Search view ranks the sweep it kept again when only a constraint changes (issue
23: the sweep keeps every evaluated split that fits, whatever the limits), and a sweep
reports its progress and stops when asked."""

from __future__ import annotations

from apphelp import planner, settle
from dflash_plan.model.explore.search import Constraints, default_space, rank, sweep
from dflash_plan.tui import search as search_view
from dflash_plan.tui.search import SearchScreen

USERS = "b200,b300,h200,rtx-pro-6000"


async def test_a_changed_constraint_ranks_the_kept_sweep_again(monkeypatch):
    sweeps: list[object] = []

    def counted(*args, **kwargs):
        swept = sweep(*args, **kwargs)
        sweeps.append(swept)
        return swept

    monkeypatch.setattr(search_view, "sweep", counted)
    app = planner()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("f5")
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        for widget, value in (
            ("deadline", "3"),
            ("budget", "845"),
            ("gpus", USERS),
            ("max-gpus", "48"),
        ):
            screen.query_one(f"#search-{widget}").value = value
        await settle(pilot)
        first = screen.result
        assert first is not None and first.front and screen._sweep is sweeps[-1]
        count = len(sweeps)
        screen.query_one("#search-budget").value = "443"
        await settle(pilot)
        assert len(sweeps) == count  # ranked again, no new sweep
        again = rank(sweeps[-1], Constraints(3, 443))
        assert [c.plan for c in screen.result.front] == [c.plan for c in again.front]
        assert screen.result.front != first.front
        assert "evaluated" in str(screen.query_one("#search-status").content)
        screen.query_one("#search-mixed").value = True  # another space: a new sweep
        await settle(pilot)
        assert len(sweeps) == count + 1


def test_a_sweep_reports_progress_and_stops_when_asked(catalog, baseline):
    space = default_space(
        baseline, catalog, ("b200", "h200", "rtx-pro-6000"), max_gpus=32, mixed=True
    )
    shares: list[float] = []
    whole = sweep(baseline, catalog, space, lambda share: shares.append(share) or True)
    assert whole.complete and shares[-1] == 1 and shares == sorted(shares)
    stopped = sweep(baseline, catalog, space, lambda share: share < 0.3)
    assert not stopped.complete and 0 < stopped.covered < whole.covered
