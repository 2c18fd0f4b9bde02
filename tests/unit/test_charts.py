"""The charts, drawn without an app: each shows the model's data (the search's front, the
split curve, the tornado) with the marks the reader needs, at both terminal sizes."""

from __future__ import annotations

import dataclasses
import math

import pytest
from dflash_plan.model.core.projection import project
from dflash_plan.model.explore.search import Constraints, default_space, search
from dflash_plan.model.explore.sensitivity import split_curve, tornado
from dflash_plan.tui.charts import (
    MIN_PLOT_COLS,
    MIN_PLOT_ROWS,
    chart_text,
    draw_pareto,
    draw_split,
    draw_tornado,
    linear_ticks,
    log_ticks,
    plot_area,
    split_note,
)
from support import edit

SIZES = ((78, 17), (118, 31))  # the chart's room in an 80x24 and a 120x40 terminal


def drawn(draw, size) -> list[str]:
    """The chart's text as the Chart widget renders it at size."""
    return chart_text(draw, *size).plain.splitlines()


def test_ticks_are_round():
    assert log_ticks(0.083, 8.8) == [0.1, 0.2, 0.5, 1, 2, 5]
    assert linear_ticks(0, 887) == [0, 200, 400, 600, 800]
    assert linear_ticks(-50, 280) == [0, 100, 200]


@pytest.mark.parametrize("size", SIZES)
def test_pareto_marks_front_current_baseline_and_limits(catalog, baseline, size):
    space = default_space(baseline, catalog, ("b200", "rtx-pro-6000"), max_gpus=16)
    result = search(baseline, catalog, space, Constraints(deadline_days=3))
    current = project(edit(baseline, target={"count": 6}, drafter={"count": 2}), catalog)
    lines = drawn(
        lambda plt: draw_pareto(
            plt, result.front, current, project(baseline, catalog), result.cost_unit, 3
        ),
        size,
    )
    text = "\n".join(lines)
    assert f"front ({len(result.front)} plans)" in text
    assert "◆ current" in text and "■ baseline" in text
    assert text.count("●") >= min(len(result.front), 3)  # points may share a cell
    assert "days (log scale)" in text and len(lines) == size[1]
    assert all(len(line) <= size[0] for line in lines)


@pytest.mark.parametrize("size", SIZES)
def test_split_curve_marks_the_switch(catalog, baseline, size):
    curve = split_curve(project(edit(baseline, target={"count": 7}), catalog))
    text = "\n".join(drawn(lambda plt: draw_split(plt, curve), size))
    # The measured targets add 4,933 tok/s each; each drafter is held at the 14,800 tok/s
    # it kept up with (3 targets' worth), so 6 + 2 ties (the targets are named, as the
    # bottleneck names them) and the one drafter binds at 7 + 1.
    assert "drafters bind from 7 target GPUs" in split_note(curve) and "current: 7" in text
    for name in ("target capacity", "drafter capacity", "throughput"):
        assert name in text


@pytest.mark.parametrize("size", SIZES)
def test_tornado_lists_the_inputs_largest_first(catalog, baseline, size):
    p = project(edit(baseline, target={"gpu": "b200"}, drafter={"gpu": "b200"}), catalog)
    bars = tornado(p, catalog)
    lines = drawn(lambda plt: draw_tornado(plt, bars, p), size)
    order = [next(i for i, line in enumerate(lines) if b.name.split(" (")[0] in line) for b in bars]
    assert order == sorted(order)  # top to bottom: largest first
    assert "% change from the central plan" in "\n".join(lines)


BLOCKS = set("▀▄▝▗▖▘▌▐█")


@pytest.mark.parametrize("size", SIZES)
def test_tornado_names_sit_beside_their_bars_and_the_legend_reads_apart(catalog, baseline, size):
    # The snapshot's plan: one input (the price, in cost) reaches -50 %, the others start
    # at 0; each name still ends a cell or two before its own bars.
    plan = edit(baseline, target={"gpu": "b200", "count": 12}, drafter={"gpu": "b200", "count": 5})
    p = project(plan, catalog)
    bars = tornado(p, catalog)
    lines = drawn(lambda plt: draw_tornado(plt, bars, p), size)
    assert len(lines) == size[1] and all(len(line) <= size[0] for line in lines)
    for bar in bars:
        name = f"{bar.name.split(' (')[0]} {bar.low_label}..{bar.high_label}"
        row = next(i for i, line in enumerate(lines) if name in line)
        end = lines[row].index(name) + len(name)
        start = min(
            col
            for line in lines[row - 1 : row + 2]
            for col, char in enumerate(line)
            if col >= end and char in BLOCKS
        )
        assert 1 <= start - end <= 3, (name, start - end, "\n".join(lines))
    # The legend: each entry on its own, on the chart's last line, no caption run into it.
    assert lines[-1].split() == ["▄▄", "days", "(upper", "bar)", "▄▄", "cost", "(lower", "bar)"]


def front_of(catalog, baseline):
    space = default_space(baseline, catalog, ("b200", "rtx-pro-6000"), max_gpus=16)
    return search(baseline, catalog, space, Constraints(deadline_days=3)).front


def with_days(candidate, days: float):
    p = candidate.projection
    job = dataclasses.replace(p.job, run_days=days)
    return dataclasses.replace(candidate, projection=dataclasses.replace(p, days=days, job=job))


@pytest.mark.parametrize("days", [-1.115, 0.0, math.nan, math.inf])
def test_a_chart_that_cannot_place_its_data_says_why_in_one_line(catalog, baseline, days):
    # -1.115 is log10 of 0.077 days: data already logged, given to the log axis again.
    front = list(front_of(catalog, baseline))
    front[0] = with_days(front[0], days)
    lines = drawn(lambda plt: draw_pareto(plt, front, None, None, "USD"), SIZES[0])
    assert len(lines) == 1 and lines[0].startswith("No chart: days")
    assert "log axis" in lines[0] and len(lines[0]) <= SIZES[0][0]


def test_any_error_of_a_draw_and_a_tiny_terminal_are_one_line_too(catalog, baseline):
    def broken(plt):
        raise ZeroDivisionError("float division by zero")

    assert drawn(broken, SIZES[0]) == [
        "No chart: cannot draw this chart (ZeroDivisionError: float division by zero)"
    ]
    p = project(baseline, catalog)
    assert drawn(lambda plt: draw_tornado(plt, [], p), SIZES[0]) == [
        "No chart: no uncertain input to show"
    ]
    assert drawn(lambda plt: draw_pareto(plt, [], None, None, "USD"), SIZES[0]) == [
        "No chart: no plan to show"
    ]
    tiny = drawn(
        lambda plt: draw_pareto(plt, front_of(catalog, baseline), None, None, "USD"), (20, 5)
    )
    assert len(tiny) == 1 and tiny[0].startswith("No chart: it needs 24x6 cells, it has 20x5")


@pytest.mark.parametrize("size", SIZES)
def test_the_pareto_chart_is_drawn_alike_each_time(catalog, baseline, size):
    # plotext takes the log of a log axis's data in place when it builds: a figure built
    # again (each resize) took the log of the log.
    front = front_of(catalog, baseline)
    assert min(c.days for c in front) < 1
    first = chart_text(lambda plt: draw_pareto(plt, front, None, None, "USD", 3), *size)
    again = chart_text(lambda plt: draw_pareto(plt, front, None, None, "USD", 3), *size)
    assert first == again and "No chart" not in first.plain


@pytest.mark.parametrize("size", SIZES)
def test_the_pareto_legend_covers_no_point(catalog, baseline, size):
    # The old legend sat in the plot's top-left corner, where the fast, costly plans are.
    front = front_of(catalog, baseline)
    current = project(edit(baseline, target={"count": 6}, drafter={"count": 2}), catalog)
    lines = drawn(
        lambda plt: draw_pareto(plt, front, current, project(baseline, catalog), "USD", 3), size
    )
    bottom = max(i for i, line in enumerate(lines) if "└" in line)  # the plot's lower edge
    legend = [i for i, line in enumerate(lines) if "front (" in line]
    assert legend and all(i > bottom for i in legend)
    plot = lines[: bottom + 1]
    for marker in "●■◆":  # every point is drawn in the plot
        assert any(marker in line for line in plot)
    assert len(front) >= 2  # a front to place, not one point
    assert lines[-1].startswith(f"● front ({len(front)} plans)  ■ baseline  ◆ current")


# The charts' room in a 60x20 terminal (measured in the app): the Search view's Pareto
# chart, the split curve under its note, the tornado under its caption.
PARETO_60x20, SPLIT_60x20, TORNADO_60x20 = (60, 6), (60, 12), (60, 14)


def y_labels(lines: list[str]) -> list[float]:
    """The y axis's labels, top to bottom (the numbers left of the frame's ┤ ticks)."""
    return [
        float(line.split("┤")[0].replace(",", ""))
        for line in lines
        if "┤" in line and line.split("┤")[0].strip()
    ]


@pytest.mark.parametrize("height", range(PARETO_60x20[1], 18))
def test_a_pareto_chart_too_short_for_its_plot_says_so_and_its_axis_reads_upwards(
    catalog, baseline, height
):
    # Issue 29 item 18c: at 60x20 the chart passed the size check (6 rows) and drew an
    # empty frame, its y labels upside down (0 above 800): the title, ticks, labels and
    # legend took every row. The check is now on the plot inside the frame.
    front = front_of(catalog, baseline)
    measured = project(baseline, catalog)
    lines = drawn(lambda plt: draw_pareto(plt, front, measured, measured, "USD", 3), (60, height))
    if len(lines) == 1:
        assert lines[0].startswith("No chart: too small here (plot ")
        assert height < 9  # 6 rows of title, frame, ticks, labels, legend; 3 of plot
        return
    cols, rows = plot_area("\n".join(lines))
    assert rows >= MIN_PLOT_ROWS and cols >= MIN_PLOT_COLS
    labels = y_labels(lines)
    assert len(labels) >= 2 and labels == sorted(labels, reverse=True)  # no label lost
    assert any("●" in line for line in lines)


def test_at_60x20_the_pareto_chart_is_one_line_saying_why(catalog, baseline):
    lines = drawn(
        lambda plt: draw_pareto(plt, front_of(catalog, baseline), None, None, "USD", 3),
        PARETO_60x20,
    )
    # The frame would hold no row: 6 rows less the title, the frame's 2, the ticks, the
    # axes' labels and the legend.
    assert lines == [
        "No chart: too small here (plot 57x0 cells, needs 16x3); a larger terminal shows it"
    ]


def tornado_cells(text, colour: str) -> list[int]:
    """How many bar cells of a colour (plotext's ANSI index) each line of a chart has."""
    return [
        sum(
            char in BLOCKS
            for span in line.spans
            if str(span.style).startswith(f"color({colour}) ")
            for char in line.plain[span.start : span.end]
        )
        for line in text.split("\n")
    ]


@pytest.mark.parametrize("size", [TORNADO_60x20, (60, 9), (78, 17), (118, 31)])
def test_every_input_of_the_tornado_keeps_its_days_bar(catalog, baseline, size):
    # Issue 29 item 18d: an offline B200 plan at 60x20 had four inputs on nine rows; the
    # bars 0.4 of an input apart fell in the same cells and the cost bars covered the
    # days bars. Each input now has rows of its own, or the chart says it needs more.
    # Three drafters: with the fitted B200 drafter (sm100's share of the ceiling) two no
    # longer keep up with three targets, and the drafter's efficiency bar makes a fifth
    # input whose name is too wide for 60 columns; three keep the targets binding, with
    # the four inputs.
    plan = edit(
        baseline,
        target={"gpu": "b200", "count": 3},
        drafter={"gpu": "b200", "count": 3},
        workload={"mode": "offline"},
    )
    p = project(plan, catalog)
    bars = tornado(p, catalog)
    # Issue 31: the tornado charts the plan's own job, the offline run, whose training
    # from storage the drafters bind (the online pipeline's targets bound the chart of
    # before): the drafter's efficiency is its fifth input.
    assert len(bars) == 5
    assert any(bar.name.startswith("drafter efficiency") for bar in bars)
    chart = chart_text(lambda plt: draw_tornado(plt, bars, p), *size)
    plot_rows = {(60, 9): 4, TORNADO_60x20: 9}  # 2 rows are needed for each input
    if size in plot_rows:
        assert chart.plain == (
            "No chart: the tornado needs 10 rows for the bars of its 5 inputs, it has "
            f"{plot_rows[size]}; a taller terminal shows it"
        )
        return
    days, cost = tornado_cells(chart, "6"), tornado_cells(chart, "3")  # cyan, orange
    lines = chart.plain.splitlines()
    for bar in bars:
        name = f"{bar.name.split(' (')[0]} {bar.low_label}..{bar.high_label}"
        row = next(i for i, line in enumerate(lines) if name in line)
        # Its days bar on its name's row or the row above, its cost bar on the row below.
        assert days[row - 1] + days[row] > 0, (name, chart.plain)
        assert cost[row + 1] > 0, (name, chart.plain)
    assert sum(1 for n in days[:-1] if n) == len(bars)  # one row of days bar per input


@pytest.mark.parametrize("size", [SPLIT_60x20, *SIZES])
def test_the_split_legend_sits_under_the_plot_and_a_clipped_curve_is_noted(catalog, baseline, size):
    # Issue 29 item 18e: plotext's legend sat in the plot's top-left corner, over the
    # capacity lines; the drafter capacity, above the chart at few targets, was drawn flat
    # along the top with nothing saying so. Each drafter is held at the 14,799.9 tok/s it
    # kept up with: one target and three drafters give 3 x 14.8 = 44 Ktok/s against a top
    # of 1.6 x 14.8 = 23.7 Ktok/s (the best split's throughput with room above it).
    p = project(baseline, catalog)
    curve = split_curve(p)
    lines = drawn(lambda plt: draw_split(plt, curve), size)
    bottom = max(i for i, line in enumerate(lines) if "└" in line)
    for name in ("target capacity", "drafter capacity", "throughput", "current: 3"):
        row = next(i for i, line in enumerate(lines) if name in line)
        assert row > bottom + 2, name  # under the plot, its ticks and its x label
    assert len(lines) == size[1] and all(len(line) <= size[0] for line in lines)
    note = split_note(curve)
    kept = baseline.calibration.drafter["rtx-pro-6000"].tokens_per_s
    assert 3 * kept / 1e3 > 1.6 * 3 * 4.9333  # the top: 3 targets' 14.8 Ktok/s x 1.6
    assert f"; the drafter capacity is cut at the top (up to {3 * kept / 1e3:,.0f} Ktok/s)." in note
    assert "target capacity" not in note  # 3 x 4.9 = 14.8 Ktok/s: under the top


@pytest.mark.parametrize("size", SIZES)
def test_a_colocated_plans_split_curve_is_its_gpus_split_with_its_own_rate_across(
    catalog, baseline, size
):
    p = project(edit(baseline, workload={"topology": "colocated"}), catalog)
    curve = split_curve(p)  # the plan's 4 GPUs split disaggregated
    assert curve.targets == (1, 2, 3)
    text = "\n".join(drawn(lambda plt: draw_split(plt, curve, p.tokens_per_s), size))
    assert "colocated: the plan" in text and "current:" not in text  # no split is the plan's
    note = split_note(curve, p.tokens_per_s)
    assert note.startswith("Throughput against target GPUs split disaggregated: the plan runs")
    assert "colocated, 11.6 Ktok/s (flat line)" in note  # the verdict line's colocated rate
