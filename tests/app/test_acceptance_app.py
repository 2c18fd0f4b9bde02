"""The app's views of what the training buys (issue 33 item 3): the results' acceptance
group follows the plan's epochs, and the charts screen's Tau tab draws tau and the serving
speedup against epochs with the plan's point."""

from __future__ import annotations

import pytest
from apphelp import field, planner, put, settle, steady_cursors, text  # noqa: F401
from dflash_plan.model.core import figures as F
from dflash_plan.model.core.projection import project
from dflash_plan.tui.charts import Chart, ChartsScreen
from dflash_plan.tui.tabs import TabbedView
from support import edit


def tau_line(app) -> str:
    """The acceptance group's tau row, as the results panel shows it."""
    side = text(app, "side").splitlines()
    return next(line for line in side if line.startswith(f"{F.TAU.name} "))


async def test_the_acceptance_rows_follow_the_epochs(catalog, baseline):
    app = planner()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        before = tau_line(app)
        p = project(baseline, catalog)
        assert before.split()[1] == f"{p.acceptance.tau:.2f}"
        await put(pilot, "workload.epochs", "12")
        await settle(pilot)
        after = tau_line(app)
        doubled = project(edit(baseline, workload={"epochs": 12}), catalog).acceptance
        assert after.split()[1] == f"{doubled.tau:.2f}" and after != before
        low, high = doubled.tau_range
        assert after.endswith(f"range {low:.2f} - {high:.2f}")
        side = text(app, "side")
        gain = f"+{doubled.one_more_epoch_tau:.2f} {F.TAU.name}  for "
        assert gain in side, side


async def test_the_charts_key_then_f5_shows_the_tau_chart(catalog, baseline):
    app = planner()
    async with app.run_test(size=(80, 24)) as pilot:
        await settle(pilot)
        await pilot.press("f7")
        await pilot.pause()
        assert isinstance(app.screen, ChartsScreen)
        await pilot.press("f5")
        await pilot.pause()
        assert app.screen.query_one(TabbedView).active == "acceptance"
        chart = app.screen.query_one("#acceptance-chart", Chart)
        assert chart.display and chart.size.width >= 60
        drawn = chart.render()
        assert not isinstance(drawn, str)
        plain = drawn.plain  # type: ignore[union-attr]
        tau = project(baseline, catalog).acceptance.tau
        assert "No chart" not in plain and f"◆ plan: 6 epochs, {tau:.2f}" in plain
        assert text(app, "acceptance-why").startswith("Tau against epochs of the plan's samples")


async def test_the_serving_gpus_field_moves_the_break_even(catalog, baseline):
    # The serving table's inputs: eight serving GPUs save eight times the GPU-hours, so
    # the training is paid back in an eighth of the serving time.
    app = planner()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert (await field(pilot, "serving.count")).value == "1"  # the default shown
        await put(pilot, "serving.count", "8")
        await settle(pilot)
        a = project(edit(baseline, serving={"count": 8}), catalog).acceptance
        assert a.break_even_hours is not None
        one = project(baseline, catalog).acceptance.break_even_hours
        assert one is not None and a.break_even_hours == pytest.approx(one / 8)
        row = next(
            line
            for line in text(app, "side").splitlines()
            if line.startswith(F.BREAK_EVEN_HOURS.name)
        )
        assert f"{a.break_even_hours / 24:.1f} days" in row, row
        assert "on 8 RTX PRO 6000" in text(app, "side")


async def test_the_serving_rate_field_states_the_break_even_at_a_request_rate(catalog, baseline):
    # serving.requests_per_s: the serving row names the rate and the GPUs without the
    # drafter -> with it; the payback is the fleet's.
    from dflash_plan.tui import format as fmt

    app = planner()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        assert (await field(pilot, "serving.requests_per_s")).value == ""  # unset
        await put(pilot, "serving.requests_per_s", "2")
        await settle(pilot)
        a = project(edit(baseline, serving={"requests_per_s": 2.0}), catalog).acceptance
        assert a.fleet is not None and a.break_even_hours is not None
        side = text(app, "side")
        without = fmt.gpus_fraction(a.fleet.gpus_without)
        assert f"at 2 requests/s: {without} → " in side, side
        assert app.state.projection.acceptance.break_even_hours == pytest.approx(a.break_even_hours)
        # A count besides the rate: one line naming the serving table.
        await put(pilot, "serving.count", "4")
        await settle(pilot)
        assert app.state.banner is not None and "remove one" in app.state.banner, app.state.banner


async def test_the_charts_key_reaches_the_planner_from_every_focusable_widget():
    # f7 is a priority binding of the planner: no focused widget (an input's editor, a
    # picker, the launch script's text area) takes it first (issue 33, f7 in tmux).
    app = planner()
    async with app.run_test(size=(120, 40)) as pilot:
        await settle(pilot)
        for tab in ("results", "launch"):
            app.planner.action_show_tab(tab)
            await pilot.pause()
            # One widget of each kind that takes focus (its bindings are its kind's).
            kinds = {type(w): w for w in reversed(app.planner.focus_chain)}
            assert len(kinds) >= 2, kinds
            for widget in kinds.values():
                widget.focus()
                await pilot.pause()
                await pilot.press("f7")
                await pilot.pause()
                assert isinstance(app.screen, ChartsScreen), (tab, widget.id)
                await pilot.press("escape")
                await pilot.pause()
