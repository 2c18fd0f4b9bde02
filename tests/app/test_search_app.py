"""Pilot tests of the Search and Comparison views: a search result opens as the current
plan with the plan it replaces as the baseline; the figures shown are project()'s; pin,
unpin, rename and open work on the scenarios, and the ratios are the model's compare()."""

from __future__ import annotations

import pytest
from apphelp import planner, settle, steady_cursors  # noqa: F401
from dflash_plan.model.core.projection import project
from dflash_plan.model.explore.compare import compare
from dflash_plan.tui.planner.screen import PlannerScreen
from dflash_plan.tui.scenarios import NameDialog, ScenariosScreen
from dflash_plan.tui.search import SearchScreen, plan_label, rows
from textual.widgets import DataTable

SIZE = (120, 40)
USERS = "b200,b300,h200,rtx-pro-6000"


def unnamed(plan):
    return plan.model_copy(update={"name": None})


async def set_values(pilot, **values: str) -> None:
    """Set several inputs of the screen at once (by widget id, '_' for '-'), then wait for
    the search they start."""
    for widget, value in values.items():
        pilot.app.screen.query_one(f"#{widget.replace('_', '-')}").value = value
    await settle(pilot)


async def test_search_opens_a_result_over_the_baseline_then_compare_pin_rename_unpin():
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        measured = app.state.plan
        await pilot.press("f5")
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        # The user's question: 3 days, four GPU types, at most the measured run's cost.
        await set_values(pilot, search_deadline="3", search_budget="845", search_gpus=USERS)
        result = screen.result
        assert result is not None and result.front
        shown = rows(result)
        table = screen.query_one("#search-table", DataTable)
        assert table.row_count == len(shown)
        assert shown[0][0].startswith("cheap") and any(t == "fast" for t, _ in shown)
        for i, (_, c) in enumerate(shown):
            p = project(c.plan, app.state.catalog)  # the model's own figures
            assert c.projection.days == pytest.approx(p.days)
            assert c.projection.total_cost == pytest.approx(p.total_cost)
            cells = [str(cell) for cell in table.get_row_at(i)]
            assert cells[1] == plan_label(c.plan, app.state.catalog)
            assert cells[5] == f"{p.total_cost:,.0f}"
            assert c.days <= 3 and c.cost <= 845
        assert "✓" in str(table.get_row_at(0)[4])  # meets 3 days at worst too
        # Nothing meets the constraints: the search says what stopped it; a bad input is
        # marked.
        await set_values(pilot, search_deadline="0.001", search_max_gpus="1")
        assert screen.query_one("#search-max-gpus").has_class("-invalid")
        await set_values(pilot, search_max_gpus="64")
        assert "deadline" in screen.result.why_none
        assert "No plan:" in str(screen.query_one("#search-status").content)
        await set_values(pilot, search_deadline="3")
        # Open the fastest within the budget: the measured run stays the baseline.
        table.move_cursor(
            row=next(i for i, (tag, _) in enumerate(shown) if "fast" in tag.split("+"))
        )
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert isinstance(app.screen, PlannerScreen)
        chosen = result.fastest_within_budget
        assert unnamed(app.state.plan) == unnamed(chosen.plan)
        assert app.state.projection.days == pytest.approx(chosen.days)
        assert app.state.baseline.projection.plan == measured

        # The Comparison view: the measured run (baseline) and the current plan.
        await pilot.press("f6")
        await pilot.pause()
        screen = app.screen
        assert isinstance(screen, ScenariosScreen)
        table = screen.query_one("#scenarios-table", DataTable)
        assert len(screen.columns) == 2 and screen.columns[1] is None
        now = [str(v) for v in table.get_column_at(2)]
        c = compare(app.state.projection, app.state.baseline.projection)
        assert now[0] == f"{chosen.projection.tokens_per_s / 1e3:,.1f}"
        assert now[8] == f"{c.speedup:.2f}x" and now[10] == f"{c.cost_ratio:.2f}x"
        low, high = c.speedup_range
        assert now[9] == f"{low:,.2f}-{high:,.2f}"
        await pilot.press("p")  # pin: the measured run stays the base
        assert len(app.state.scenarios) == 2 and app.state.baseline is app.state.scenarios[0]
        assert [str(v) for v in table.get_column_at(2)][8] == f"{c.speedup:.2f}x"
        await pilot.press("b")  # the highlighted pinned one: the base
        assert app.state.baseline is app.state.scenarios[1]
        measured_vs = [str(v) for v in table.get_column_at(1)]
        assert measured_vs[8] == f"{1 / c.speedup:.2f}x"  # measured vs the new one
        await pilot.press("r")  # rename the highlighted
        assert isinstance(app.screen, NameDialog)
        app.screen.query_one("#name-input").value = "fastest"
        await pilot.press("enter")
        assert app.state.baseline.name == "fastest"
        assert "fastest" in str(screen.query_one("#scenarios-names").content)
        table.move_cursor(column=1)  # the measured run
        await pilot.press("o")
        assert isinstance(app.screen, PlannerScreen)
        assert unnamed(app.state.plan) == unnamed(measured)
        await pilot.press("f6")
        table = app.screen.query_one("#scenarios-table", DataTable)
        table.move_cursor(column=2)  # "fastest": unpin
        await pilot.press("u")
        assert [s.projection.plan for s in app.state.scenarios] == [measured]
        assert app.state.baseline is app.state.scenarios[0]


async def test_the_limits_are_judged_at_worst_unless_switched_to_central():
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f5")
        screen = app.screen
        # One node of B200 or B300 within 3 days and 845: at the pessimistic end (the
        # default) every plan shown keeps both limits.
        await set_values(
            pilot,
            search_deadline="3",
            search_budget="845",
            search_gpus="b200,b300",
            search_one_node=True,
        )
        worst = screen.result
        assert worst.constraints.at == "pessimistic"
        table = screen.query_one("#search-table", DataTable)
        for i, (_, c) in enumerate(rows(worst)):
            assert c.pessimistic_days <= 3 and c.pessimistic_cost <= 845
            assert str(table.get_row_at(i)[4]).endswith("✓")
        assert "within 3 days and 845 at worst" in str(screen.query_one("#search-status").content)
        # At the central estimate more plans pass; the fastest (5 + 3 B300, 505) would cost
        # 875 at the pessimistic end, and its row says so.
        await set_values(pilot, search_at_worst=False)
        central = screen.result
        assert central.constraints.at == "central" and central.feasible > worst.feasible
        fastest = central.fastest_within_budget
        assert fastest.cost <= 845 < fastest.pessimistic_cost
        shown = rows(central)
        i = next(i for i, (_, c) in enumerate(shown) if c is fastest)
        assert str(table.get_row_at(i)[4]).endswith("✗")
        assert "(central)" in str(screen.query_one("#search-status").content)


def shown_lines(widget) -> list[str]:
    """The lines a widget has on screen, as plain text."""
    return [
        "".join(segment.text for segment in strip)
        for strip in widget.render_lines(widget.region.reset_offset)
    ]


async def test_the_search_chart_survives_view_switches_and_resizes():
    # Each render built the same plotext figure again, and a build takes the log of a log
    # axis's data in place: the second build of a front faster than a day took the log of
    # a negative number and the app died, its unsaved plan with it.
    app = planner()
    async with app.run_test(size=(80, 24)) as pilot:
        app.animation_level = "none"  # a key press waits for the tabs' underline
        await pilot.press("f5")
        screen = app.screen
        await set_values(pilot, search_deadline="3", search_budget="845", search_gpus=USERS)
        assert min(c.days for c in screen.result.front) < 1
        chart = screen.query_one("#pareto")
        for key in ["f3", "f4"] * 6:
            await pilot.press(key)
        assert chart.display
        for size in ((100, 30), (90, 26), (120, 33), (80, 24)):
            await pilot.resize_terminal(*size)
            await pilot.pause()
            lines = shown_lines(chart)
            assert any(f"front ({len(screen.result.front)} plans)" in line for line in lines)
            assert len(lines) == chart.size.height and chart.size.width >= size[0] - 2
        assert app.return_code is None and isinstance(app.screen, SearchScreen)


async def test_search_offline_too_evaluates_both_modes_and_opens_an_offline_plan():
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f5")
        screen = app.screen
        await set_values(pilot, search_gpus="b200", search_max_gpus="4")
        assert screen.result.modes == ("online",)
        screen.query_one("#search-both-modes").value = True
        await settle(pilot)
        result = screen.result
        assert result.modes == ("online", "offline") and result.covered == 16
        table = screen.query_one("#search-table", DataTable)
        chosen = result.most_tokens_per_cost
        assert chosen.mode == "offline"  # 2 + 2 B200, each phase billed alone
        row = next(i for i, (_, c) in enumerate(rows(result)) if c is chosen)
        cells = [str(cell) for cell in table.get_row_at(row)]
        assert cells[1].endswith(" offline") and cells[5] == f"{chosen.cost:,.0f}"
        table.move_cursor(row=row)
        await pilot.press("ctrl+o")
        await pilot.pause()
        assert app.state.plan.workload.mode == "offline"
        assert app.state.projection.offline.days == chosen.days


async def test_at_80_columns_the_gpu_types_show_whole_beside_no_switch():
    # The "offline too" switch on the GPU types' row cut their box to 12 columns
    # ("b200,b300,h2"); below 100 columns the switches take a row of their own.
    app = planner()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f5")
        screen = app.screen
        await set_values(pilot, search_gpus=USERS, search_budget="120,000")
        gpus = screen.query_one("#search-gpus")
        assert gpus.content_region.width > len(USERS)  # and a cell for the text cursor
        assert screen.query_one("#search-budget").content_region.width > len("120,000")
        boxes = [screen.query_one(f"#search-{k}") for k in ("deadline", "budget", "max-gpus")]
        switches = screen.query("#search-switches Checkbox")
        for widget in [gpus, *boxes, *switches]:  # every one whole on the screen
            assert widget.region.right <= 80 and widget.region.width > 0
        assert {w.region.y for w in switches} == {gpus.region.y + 1}
        await pilot.resize_terminal(120, 40)  # wide: one row, the GPU types still whole
        await pilot.pause()
        assert {w.region.y for w in switches} == {gpus.region.y}
        assert gpus.content_region.width > len(USERS)


async def test_the_search_table_fits_the_width_and_names_the_columns_left_out():
    # The cost/Mtok column pushed the table past 80 columns: a horizontal scrollbar and
    # its head cut to "cost/Mt" (its figures to "0.03").
    app = planner()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f5")
        screen = app.screen
        await set_values(pilot, search_deadline="3", search_budget="845", search_gpus=USERS)
        table = screen.query_one("#search-table", DataTable)
        note = screen.query_one("#search-left-out")
        assert table.virtual_size.width <= table.scrollable_content_region.width
        assert [str(c.label) for c in table.columns.values()][-1] == "cost/Mtok"
        assert not note.display
        # Mixed and offline plans have long names: the least needed columns give way, by
        # the figure registry's drop, and the line under the table names them.
        for switch in ("mixed", "both-modes"):
            screen.query_one(f"#search-{switch}").value = True
        await settle(pilot)
        await pilot.pause()
        assert table.virtual_size.width <= table.scrollable_content_region.width
        heads = [str(c.label) for c in table.columns.values()]
        assert "cost/Mtok" not in heads and heads[:6] == [
            "best for", "plan", "Ktok/s", "time", "at worst", "cost"
        ]  # fmt: skip
        assert note.display and "left out at 80 columns: cost/Mtok" in str(note.content)
        await pilot.resize_terminal(60, 24)  # narrower: throughput gives way too
        await pilot.pause()
        await pilot.pause()
        assert table.virtual_size.width <= table.scrollable_content_region.width
        heads = [str(c.label) for c in table.columns.values()]
        assert heads[:2] == ["best for", "plan"] and "cost" in heads and "Ktok/s" not in heads
        await pilot.resize_terminal(120, 40)  # wide again: every column, no note
        await pilot.pause()
        await pilot.pause()
        assert [str(c.label) for c in table.columns.values()][-1] == "cost/Mtok"
        assert not note.display


async def test_the_verdict_sits_at_the_same_place_in_every_row_the_cursor_row_too():
    # Under the cursor the ✓ took the row's colour and ran into the duration before it,
    # so a picture of the screen drew it beside the figure, not at the column's edge.
    app = planner()
    async with app.run_test(size=(80, 24)) as pilot:
        await pilot.press("f5")
        screen = app.screen
        await set_values(pilot, search_deadline="3", search_budget="845", search_gpus=USERS)
        table = screen.query_one("#search-table", DataTable)
        assert table.cursor_row == 0
        marks = set()
        for y in range(1, table.row_count + 1):  # under the header
            x = 0
            for segment in table.render_line(y):
                if "✓" in segment.text:
                    assert segment.text.strip() == "✓" and segment.style.color.name == "green"
                    marks.add(x + segment.text.index("✓"))
                x += segment.cell_length
        assert len(marks) == 1


async def test_under_72_columns_the_limits_wrap_and_every_box_shows_its_value():
    # The limits' row (deadline, budget in RTX PRO 6000-hours, max GPUs) needs 73 columns:
    # at 60 the budget's unit and the max GPUs box were cut off the screen's right edge.
    app = planner()
    async with app.run_test(size=(60, 24)) as pilot:
        await pilot.press("f5")
        screen = app.screen
        values = {"deadline": "3", "budget": "120,000", "max-gpus": "64", "gpus": USERS}
        await set_values(pilot, **{f"search_{k}": v for k, v in values.items()})
        for key, value in values.items():
            box = screen.query_one(f"#search-{key}")
            # What the screen shows of the box: its region within what clips it.
            shown = box.region.intersection(screen.region).intersection(box.parent.region)
            assert shown == box.region and box.region.right <= 60, (key, box.region)
            assert box.content_region.width > len(value), key  # and a cell for the cursor
            assert value in "".join(s.text for s in box.render_line(0)), key
        unit = screen.query("#search-budget-box Label.unit").first()
        assert unit.region.right <= 60 and unit.region.width >= len("RTX PRO 6000-h")


async def test_the_table_fits_again_once_the_status_above_it_wraps():
    # At 60x20 a finished search's status wraps to three lines ("prices not set in the
    # plan: ..."), which takes rows from the table below: fitted before that, the table
    # kept a column that the scrollbar those rows brought then cut (CI drew "cost" so
    # under load). The table is fitted again once the status is laid out.
    app = planner()
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.press("f5")
        screen = app.screen
        await set_values(pilot, search_deadline="3", search_budget="845", search_gpus=USERS)
        table = screen.query_one("#search-table", DataTable)
        # The order that raced: the table laid out under a one-line status, then the
        # result shown (its fit first, its three-line status after).
        screen._status("searching")
        await pilot.pause()
        screen.show(screen.query_count, screen.wanted(), screen.result)
        await pilot.pause()
        await pilot.pause()
        assert table.virtual_size.width <= table.scrollable_content_region.width
        heads = [str(c.label) for c in table.columns.values()]
        assert heads[:2] == ["best for", "plan"] and "cost" in heads


async def test_search_in_the_plans_topology_or_both_naming_the_winner_per_gpu_type():
    from dflash_plan.tui.report import topology_win_lines

    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f8")  # a colocated plan: the search is in its topology
        await pilot.pause()
        await pilot.press("f5")
        screen = app.screen
        await set_values(pilot, search_gpus="b200,b300", search_max_gpus="8")
        result = screen.result
        assert result.topologies == ("colocated",) and result.front
        assert "wins" not in str(screen.query_one("#search-status").content)
        table = screen.query_one("#search-table", DataTable)
        for i, (_, c) in enumerate(rows(result)):  # each row says it is colocated
            assert c.topology == "colocated"
            assert str(table.get_row_at(i)[1]).endswith(" colocated")
        screen.query_one("#search-both-topologies").value = True
        await settle(pilot)
        result = screen.result
        assert result.topologies == ("disaggregated", "colocated")
        assert [w.gpu for w in result.topology_wins] == ["b200", "b300"]
        status = str(screen.query_one("#search-status").content)
        names = {k: g.name for k, g in app.state.catalog.gpus.items()}
        lines = topology_win_lines(result, names)  # the CLI's lines, two GPU types
        assert len(lines) == 2 and all(line in status for line in lines)
        assert lines[0].startswith("B200: ") and " wins (fastest plans: " in lines[0]
        table.move_cursor(row=0)
        chosen = rows(result)[0][1]
        await pilot.press("ctrl+o")  # opens in its own topology
        await pilot.pause()
        assert app.state.plan.workload.topology == chosen.topology
        assert app.planner.view.colocated == (chosen.topology == "colocated")


def test_many_gpu_types_say_the_winning_topology_a_line_each():
    from types import SimpleNamespace

    from dflash_plan.model.explore.search import Fastest, TopologyWin
    from dflash_plan.tui.search import WIN_LINES, topology_wins

    fast = {"disaggregated": Fastest(3, 1, 1, 2.0, 10.0), "colocated": Fastest(2, 2, 1, 1.5, 9.0)}
    wins = tuple(
        TopologyWin(gpu, "colocated" if gpu.startswith("b3") else "disaggregated", fast)
        for gpu in ("b200", "b300", "h200", "b300x")
    )
    assert len(wins) > WIN_LINES
    names = {"b200": "B200", "b300": "B300", "h200": "H200", "b300x": "B300X"}
    assert topology_wins(SimpleNamespace(topology_wins=wins), names) == [
        "disaggregated wins on B200, H200",
        "colocated wins on B300, B300X",
    ]


async def test_the_search_objective_is_search_objectives_engine_with_tau_in_the_table():
    # Issue 33: the app's search takes search --objective's objectives and min tau; the
    # table shows the epochs chosen and the tau they buy, with its range.
    from dflash_plan.model.explore.objective import Goal, search_objective
    from dflash_plan.tui import format as fmt

    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f5")
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        await set_values(pilot, search_gpus=USERS, search_max_gpus="8")
        await set_values(pilot, search_objective="time-to-tau", search_min_tau="3.8")
        query = screen.wanted()
        assert query.goal == Goal("time-to-tau", 3.8)
        found = search_objective(
            query.plan, query.catalog, query.space, query.constraints, query.goal
        )
        assert found.outcome is not None and found.winner is not None
        table = screen.query_one("#search-table", DataTable)
        heads = [str(c.label) for c in table.columns.values()]
        assert heads[-2:] == ["epochs", "tau"], heads
        first = [str(cell) for cell in table.get_row_at(0)]
        assert first[0].startswith("to tau")
        assert first[1] == plan_label(found.winner.plan, app.state.catalog)
        o = found.outcome
        assert first[-1] == fmt.tau_spread(o.tau, *o.tau_range)
        assert first[-2] == str(o.epochs)
        status = str(screen.query_one("#search-status").content)
        assert status.startswith(f"tau >= 3.8 at the low end of its range needs {o.epochs}")
        # The highest tau needs a deadline or a budget: said, the deadline marked.
        await set_values(pilot, search_objective="tau", search_min_tau="")
        assert screen.query_one("#search-deadline").has_class("-invalid")
        assert "needs a deadline or a budget" in str(screen.query_one("#search-status").content)
        # A min tau with the time objective: marked, said.
        await set_values(pilot, search_objective="time", search_min_tau="3.8")
        assert screen.query_one("#search-min-tau").has_class("-invalid")
        # The cost objective: the front's rows cheapest first (after the winners).
        await set_values(pilot, search_objective="cost", search_min_tau="")
        shown = rows(screen.result, cheapest_first=True)
        front = [c.cost for tag, c in shown if tag == "front"]
        assert front == sorted(front) and len(screen.candidates) == len(shown)
        heads = [str(c.label) for c in table.columns.values()]
        assert "tau" not in heads
