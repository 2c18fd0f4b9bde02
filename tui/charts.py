"""Charts drawn with plotext (through textual-plotext): the Pareto front of a search, the
split curve of the current plan's GPUs and the tornado of what moves its days and cost.
Each `draw_*` function takes a plotext figure and the model's data, so the charts can be
drawn (and tested) without a running app; `chart_text` draws one on a fresh figure, or
says in one line why it cannot; `Chart` is the widget that shows one, and `ChartsScreen`
shows the split curve, the tornado and the acceptance curve (tau and the serving speedup
against epochs) of the current plan."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

import numpy as np
from rich.text import Text
from textual.app import ComposeResult, RenderResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.screen import Screen
from textual.widgets import Static
from textual_plotext import PlotextPlot
from textual_plotext.plot import Plot
from textual_plotext.plotext import colorize

from ..model.basics.errors import PlanError
from ..model.core import figures as F
from ..model.core.projection import Projection
from ..model.explore.search import Candidate
from ..model.explore.sensitivity import (
    AcceptanceCurve,
    Bar,
    SplitCurve,
    acceptance_curve,
    split_curve,
    tornado,
)
from ..model.inputs.catalog import Catalog
from . import format as fmt
from .footer import KeysFooter
from .report import serving_words
from .tabs import TabbedView

# A legend entry: marker, colour, label. A chart that returns its legend has it drawn on a
# line of its own under the plot, where it covers no point (plotext's own legend sits in
# the plot's top-left corner, over the data).
Legend = Sequence[tuple[str, str, str]]
Draw = Callable[[Any], "Legend | None"]

# The smallest chart plotext draws readably (cells); a smaller one says so instead.
MIN_WIDTH, MIN_HEIGHT = 24, 6
# The smallest plot inside the chart's frame, once its title, ticks, labels and legend
# have their rows: with fewer rows plotext draws an empty frame, or every point on one
# row with the axis's labels out of order.
MIN_PLOT_COLS, MIN_PLOT_ROWS = 16, 3


class CannotDraw(Exception):
    """Data a chart cannot show; the message says why, in one line."""


def chart_text(draw: Draw, width: int, height: int, theme: str | None = None) -> Text:
    """The chart `draw` makes, on a fresh figure of width x height cells, with its legend
    (if it returns one) on the last line; when it cannot be drawn (data it cannot show, a
    terminal too small, anything the drawing raises), one line saying why. A fresh figure
    each time because plotext's build changes the figure it builds (it takes the log of a
    log axis's data in place): drawn and built once, a figure draws the same on every
    resize."""
    if width < MIN_WIDTH or height < MIN_HEIGHT:
        return Text(
            f"No chart: it needs {MIN_WIDTH}x{MIN_HEIGHT} cells, it has "
            f"{width}x{height} (a larger terminal shows it)",
            no_wrap=True,
            overflow="ellipsis",
        )
    try:
        plt = Plot()
        if theme is not None:
            plt.theme(theme)
        plt._set_size(width, height)  # a draw may lay out by the figure's width
        legend = draw(plt)
        key_lines = legend_lines(legend, width)
        rows = height - len(key_lines)
        plt.plotsize(width, rows)
        plt._set_size(width, rows)  # as textual-plotext's widget sizes it
        chart = Text.from_ansi(plt.build().removesuffix("\n"), no_wrap=True)
        cols, rows = plot_area(chart.plain)
        if cols < MIN_PLOT_COLS or rows < MIN_PLOT_ROWS:
            raise CannotDraw(
                f"too small here (plot {cols}x{rows} cells, needs {MIN_PLOT_COLS}x"
                f"{MIN_PLOT_ROWS}); a larger terminal shows it"
            )
        # plotext's colours, on the chart's background, labels in its ticks' colour
        # (plotext's colorize: textual-plotext's Plot.colorize passes a keyword plotext
        # does not take).
        monitor: Any = plt.monitor  # type: ignore[attr-defined]
        paper, ink = monitor.canvas_color, monitor.ticks_color
        for entries in key_lines:
            key = colorize("  ", ink, None, paper, False).join(
                colorize(marker, colour, None, paper, False)
                + colorize(f" {label}", ink, None, paper, False)
                for marker, colour, label in entries
            )
            key += colorize(
                " " * max(0, width - len(Text.from_ansi(key).plain)), ink, None, paper, False
            )
            chart.append("\n")
            chart.append_text(Text.from_ansi(key, no_wrap=True))
    except Exception as err:  # a chart never takes the app down
        reason = (
            str(err)
            if isinstance(err, CannotDraw)
            else f"cannot draw this chart ({type(err).__name__}: {err})"
        )
        return Text(" ".join(f"No chart: {reason}".split()), no_wrap=True, overflow="ellipsis")
    return chart


def legend_lines(legend: Legend | None, width: int) -> list[list[tuple[str, str, str]]]:
    """A legend's entries on the lines under the chart: as many to a line as fit in
    `width` (two cells between entries), a line each when even one is wider."""
    lines: list[list[tuple[str, str, str]]] = []
    used = 0
    for entry in legend or ():
        marker, _, label = entry
        size = len(marker) + 1 + len(label)
        if lines and used + 2 + size <= width:
            lines[-1].append(entry)
            used += 2 + size
        else:
            lines.append([entry])
            used = size
    return lines


# The rows a chart's frame (2), its x ticks (1) and its x label (1) take.
FRAME_ROWS = 4


def inner_rows(plt: Any, legend: Legend | None, titled: bool) -> int:
    """The rows inside the frame of a chart with x ticks and an x label, a title or not,
    and this legend under it, at the size chart_text gives the figure before drawing."""
    return int(plt._height) - len(legend_lines(legend, plt._width)) - titled - FRAME_ROWS


def spaced_ticks(ticks: list[float], top: float, rows: int) -> list[float]:
    """Every other tick, again, until the ticks of an axis from 0 to `top` fall at least
    a row apart on `rows` rows (plotext writes a tick's label over the one before it on
    the same row: the axis read 0, 600, 800 with the front at 400)."""
    while len(ticks) > 1 and (rows - 1) * (ticks[1] - ticks[0]) / top < 1:
        ticks = ticks[::2]
    return ticks


def plot_area(chart: str) -> tuple[int, int]:
    """The cells inside a built chart's frame (columns, rows): what is left for the data
    once plotext has laid out the title, the ticks, the labels; (0, 0) when it drew no
    frame."""
    lines = chart.splitlines()
    for top, line in enumerate(lines):
        left = line.find("┌")
        if left < 0:
            continue
        right = line.find("┐", left)
        bottom = next(
            (i for i in range(top + 1, len(lines)) if lines[i][left : left + 1] == "└"), -1
        )
        if right < 0 or bottom < 0:
            break
        return right - left - 1, bottom - top - 1
    return 0, 0


def _finite(values: Sequence[float], what: str, log: bool = False) -> None:
    """CannotDraw unless every value can be placed on its axis (a log axis needs > 0)."""
    for value in values:
        if not math.isfinite(value) or (log and value <= 0):
            raise CannotDraw(
                f"{what} {value:g} cannot be placed on "
                f"{'a log axis (it needs values above 0)' if log else 'the axis'}"
            )


# Colours that read on the dark and the light theme.
FRONT, CURRENT, BASELINE = "cyan", "orange", "magenta"
TARGET, DRAFTER, LINK = "green", "orange", "magenta"
THROUGHPUT, CURRENT_SPLIT = "cyan", "white"
DAYS, COST = "cyan", "orange"


def _short_cost(unit: str) -> str:
    return "$" if unit == "USD" else unit.removesuffix("-hours") + "-h"


def log_ticks(low: float, high: float) -> list[float]:
    """1-2-5 ticks from low to high (for a log axis), at most seven."""
    ticks: list[float] = []
    decade = 10.0 ** math.floor(math.log10(low))
    while decade <= high * 10:
        ticks += [decade * m for m in (1, 2, 5) if low <= decade * m <= high]
        decade *= 10
    while len(ticks) > 7:
        ticks = ticks[::2]
    return ticks


def linear_ticks(low: float, high: float, count: int = 5) -> list[float]:
    """Round ticks (1, 2, 2.5 or 5 times a power of ten apart) covering low to high."""
    if not high > low:
        return [low]
    raw = (high - low) / count
    power = 10.0 ** math.floor(math.log10(raw))
    step = next(m * power for m in (1, 2, 2.5, 5, 10) if m * power >= raw)
    first = math.ceil(low / step) * step
    return [first + i * step for i in range(int((high - first) / step + 1e-9) + 1)]


def tick_label(value: float) -> str:
    return f"{value:g}"


def draw_pareto(
    plt: Any,
    front: Sequence[Candidate],
    current: Projection | None,
    baseline: Projection | None,
    cost_unit: str,
    deadline: float | None = None,
    budget: float | None = None,
) -> Legend:
    """Days (log scale: a front spans hours to weeks) against total cost (from 0); the
    deadline and the budget as lines. Returns the legend (drawn under the chart, where it
    covers no point). The days go to the log axis as they are: plotext takes their log."""
    plt.clear_data()
    plt.title("Pareto front: days against cost (red: the limits)")
    plt.xlabel("days (log scale)")
    plt.ylabel(_short_cost(cost_unit))
    same = current is not None and baseline is not None and current.plan == baseline.plan
    marks = [(current, CURRENT, "current = baseline" if same else "current", "◆")]
    if not same:
        marks.insert(0, (baseline, BASELINE, "baseline", "■"))
    # Each plan at its own mode's figures (an offline plan's offline run), as the front.
    marks = [
        m
        for m in marks
        if m[0] is not None and m[0].run_days is not None and m[0].run_cost is not None
    ]
    xs = [c.days for c in front] + [p.run_days for p, *_ in marks if p is not None and p.run_days]
    if deadline is not None:
        xs.append(deadline)
    ys = [c.cost for c in front] + [p.run_cost for p, *_ in marks if p is not None and p.run_cost]
    if budget is not None:
        ys.append(budget)
    if not front and not marks:
        raise CannotDraw("no plan to show")
    _finite(xs, "days", log=True)
    _finite(ys, "cost")
    plt.xscale("log")
    if deadline is not None:
        plt.vline(deadline, color="red")
    if budget is not None:
        plt.hline(budget, color="red")
    ticks = log_ticks(min(xs), max(xs))
    if len(ticks) >= 2:
        plt.xticks(ticks, [tick_label(t) for t in ticks])
    legend: list[tuple[str, str, str]] = []
    if front:
        plt.scatter([c.days for c in front], [c.cost for c in front], marker="●", color=FRONT)
        legend.append(("●", FRONT, f"front ({len(front)} plans)"))
    for p, colour, name, marker in marks:
        assert p is not None and p.run_days is not None and p.run_cost is not None
        plt.scatter([p.run_days], [p.run_cost], marker=marker, color=colour)
        legend.append((marker, colour, name))
    if ys and max(ys) > 0:  # from 0: cost ratios read as heights
        top = max(ys) * 1.08
        ticks = spaced_ticks(linear_ticks(0, max(ys) * 1.05), top, inner_rows(plt, legend, True))
        plt.ylim(0, top)
        plt.yticks(ticks, [f"{t:,.0f}" for t in ticks])
    return legend


def _split_lines(
    curve: SplitCurve,
) -> tuple[list[float], list[float], list[float], list[float], float]:
    """The split curve's lines in Ktok/s (throughput, target, drafter, link capacity) and
    the chart's ceiling."""
    k = [t / 1e3 for t in curve.tokens_per_s]
    target = [t / 1e3 for t in curve.target_tokens_per_s]
    drafter = [t / 1e3 for t in curve.drafter_tokens_per_s]
    link = [t / 1e3 for t in curve.link_tokens_per_s]
    if not k:
        raise CannotDraw("no split to show")
    for values in (k, target, drafter, link):
        _finite(values, "a throughput of")
    top = max(*k, *(min(a, b) for a, b in zip(target, drafter, strict=True)))
    return k, target, drafter, link, top * 1.6


def split_note(curve: SplitCurve, colocated: float | None = None) -> str:
    """What to show with the split curve (a plotext title longer than the chart is
    dropped): where the drafters bind, the link's line when it is left out, and each
    capacity that runs above the chart (drawn flat along its top, cut). `colocated`: the
    plan's own rate when it runs its GPUs colocated (the curve is the same GPUs split)."""
    _, target, drafter, link, ceiling = _split_lines(curve)
    notes = []
    if colocated is not None:
        shown = fmt.figure(F.TOKENS_PER_S, colocated)
        notes.append(f"the plan runs them colocated, {shown} (flat line)")
    if curve.switch is not None:
        notes.append(f"the drafters bind from {curve.switch} target GPUs (red line)")
    else:
        notes.append("the targets bind at every split")
    if min(link) > ceiling:
        notes.append(f"the link carries {min(link):,.0f}+ Ktok/s, above the chart")
    clipped = [
        (name, max(values))
        for name, values in (("target", target), ("drafter", drafter), ("link", link))
        if max(values) > ceiling and (name != "link" or min(link) <= ceiling)
    ]
    if clipped:
        names = " and ".join(name for name, _ in clipped)
        peaks = " and ".join(f"{peak:,.0f}" for _, peak in clipped)
        notes.append(
            f"the {names} capacit{'ies are' if len(clipped) > 1 else 'y is'} cut at the top "
            f"(up to {peaks} Ktok/s)"
        )
    split = "split disaggregated" if colocated is not None else "for the same total"
    return f"{curve.rate_name.capitalize()} against target GPUs {split}: " + "; ".join(notes) + "."


# A line's mark in a legend.
LINE = "──"


def draw_split(plt: Any, curve: SplitCurve, colocated: float | None = None) -> Legend:
    """Throughput of every split of the same GPUs, with each part's capacity; the link's
    line is left out when it is far above the rest (it would flatten them; split_note
    says so, and which capacities are cut at the top). `colocated`: the plan's own rate,
    running the same GPUs colocated, as a flat line (no split is the plan's). Returns the
    legend (drawn under the chart: plotext's own sits over the curves)."""
    plt.clear_data()
    k, target, drafter, link, ceiling = _split_lines(curve)
    x = list(curve.targets)

    def clip(values: list[float]) -> list[float]:
        return [min(v, ceiling) for v in values]

    lines = [(target, TARGET, curve.target_name), (drafter, DRAFTER, curve.drafter_name)]
    if min(link) <= ceiling:
        lines.append((link, LINK, "link capacity"))
    lines.append((k, THROUGHPUT, curve.rate_name))
    legend: list[tuple[str, str, str]] = []
    for values, colour, name in lines:
        plt.plot(x, clip(values), color=colour, marker="braille")
        legend.append((LINE, colour, name))
    if colocated is not None:
        plt.hline(min(colocated / 1e3, ceiling), color=CURRENT_SPLIT)
        legend.append((LINE, CURRENT_SPLIT, "colocated: the plan"))
    elif curve.current in curve.targets:
        plt.scatter(
            [curve.current],
            [k[curve.targets.index(curve.current)]],
            marker="●",
            color=CURRENT_SPLIT,
        )
        legend.append(("●", CURRENT_SPLIT, f"current: {curve.current}"))
    if curve.switch is not None:
        plt.vline(curve.switch, color="red")
    plt.title(curve.title)
    plt.xlabel("target GPUs (the rest are drafters)")
    plt.ylim(0, ceiling)
    ticks = [t for t in linear_ticks(x[0], x[-1], 8) if t == int(t)]
    plt.xticks(ticks, [f"{t:g}" for t in ticks])
    ticks = spaced_ticks(linear_ticks(0, ceiling), ceiling, inner_rows(plt, legend, True))
    plt.yticks(ticks, [f"{t:,.0f}" for t in ticks])
    return legend


# The tornado's bars need this many cells beside the longest input's name.
TORNADO_BARS_MIN_WIDTH = 20


def draw_tornado(plt: Any, bars: Sequence[Bar], p: Projection) -> Legend:
    """Each uncertain input across its range: the change in days (upper bar) and in cost
    (lower bar) from the central plan, in percent, largest first (at the top). Each input's
    name ends just before its bars start (as y ticks, the names would end at the axis,
    far from bars that start at 0 when another input's bars reach below 0): the x axis
    reaches left of the data by the room the names take at the figure's width. Each
    input has rows of its own, its two bars on half-rows of their own (placed at a
    fraction of a row apart, the cost bar took the days bar's cells when rows were few)."""
    plt.clear_data()
    if p.days is None:
        raise CannotDraw("the plan has no days to change")
    if not bars:
        raise CannotDraw("no uncertain input to show")
    legend = [("▄▄", DAYS, "days (upper bar)"), ("▄▄", COST, "cost (lower bar)")]
    n = len(bars)
    rows = inner_rows(plt, legend, titled=False)
    block = rows // n  # the rows of each input: its days bar, its name, its cost bar
    # plotext puts a value v of an axis from 0 to `top` on half-row floor(0.5 + v *
    # (2 rows - 1) / top) (the "hd" marker) and a text on row floor(0.5 + v * (rows - 1)
    # / top), counted from the bottom: with top = 2 rows - 1, half-row h is v = h.
    top = 2 * rows - 1

    def on_row(row: int) -> float:
        return row * top / max(rows - 1, 1)

    pad = (rows - n * block) // 2  # the rows left over, above and below the bars
    labels: list[tuple[str, float, float]] = []  # name, where its bars start, its y
    lows, highs = [0.0], [0.0]
    for i, bar in enumerate(bars):
        # The input's first row (from the bottom); three rows (bar, name, bar) are
        # centred in a block of more, two (name and days bar, cost bar) fill one of two.
        first = rows - 1 - pad - i * block - max(0, (block - 3) // 2)
        if block >= 3:
            days_y, name_y, cost_y = 2 * first, on_row(first - 1), 2 * first - 3
        else:
            days_y, name_y, cost_y = 2 * first + 1, on_row(first), 2 * first - 1
        d = [(v / p.days - 1) * 100 for v in bar.days]
        lo, hi = min(d), max(d)
        starts = [lo]
        lows.append(lo)
        highs.append(hi)
        plt.plot(
            [lo, hi] if hi > lo else [lo - 0.3, lo + 0.3],
            [days_y, days_y],
            marker="hd",
            color=DAYS,
        )
        if p.total_cost and None not in bar.cost:
            c = [((v or 0) / p.total_cost - 1) * 100 for v in bar.cost]
            lo, hi = min(c), max(c)
            starts.append(lo)
            lows.append(lo)
            highs.append(hi)
            plt.plot(
                [lo, hi] if hi > lo else [lo - 0.3, lo + 0.3],
                [cost_y, cost_y],
                marker="hd",
                color=COST,
            )
        name = bar.name.split(" (")[0]
        labels.append((f"{name} {bar.low_label}..{bar.high_label}", min(starts), name_y))
    # The plot's cells inside its frame (chart_text sets the figure's size before drawing),
    # and the x axis's left end that leaves every name two cells clear of its bars:
    # (start - left) / (right - left) * cells >= len(name) + 4, solved for left.
    right = max(highs)
    cells = plt._width - 2
    longest = max(len(name) for name, _, _ in labels)
    if cells - longest - 4 < TORNADO_BARS_MIN_WIDTH:
        raise CannotDraw(
            f"the tornado needs {longest + 4 + TORNADO_BARS_MIN_WIDTH + 2} columns for its "
            f"names and bars, it has {plt._width}"
        )
    if block < 2:
        raise CannotDraw(
            f"the tornado needs {2 * n} rows for the bars of its {n} inputs, it has "
            f"{max(rows, 0)}; a taller terminal shows it"
        )
    left = min(
        (start * cells - (len(name) + 4) * right) / (cells - len(name) - 4)
        for name, start, _ in labels
    )
    per_cell = (right - left) / cells
    ink = plt.monitor.ticks_color  # the names read as the axes' words do
    for name, start, y in labels:
        plt.text(name, start - 3 * per_cell, y, color=ink, alignment="right")
    plt.yticks([], [])
    plt.xlim(left, right)
    plt.vline(0, color="gray")
    ticks = linear_ticks(min(lows), right)
    plt.xticks(ticks, [f"{t:+,.0f}" if t else "0" for t in ticks])
    plt.ylim(0, top)
    plt.xlabel("% change from the central plan")
    return legend


TAU, TAU_RANGE, PLAN_POINT, NEXT_EPOCH = "cyan", "gray", "orange", "green"


def acceptance_note(curve: AcceptanceCurve, serving: tuple[str, str]) -> str:
    """What the acceptance chart shows, in a line above it: the cost of an epoch (the x
    axis is epochs of the plan's samples) and what the right axis reads, on `serving`
    (report.serving_words: the engine and regime, the serving GPUs)."""
    cost = (
        ""
        if curve.cost_per_epoch is None
        else f", {fmt.figure(F.COST_PER_EPOCH, curve.cost_per_epoch, curve.cost_unit)} each"
    )
    right = (
        f"; right axis: the {F.SERVING_SPEEDUP.name} at that {F.TAU.name} on {', '.join(serving)}"
    )
    return f"{F.TAU.name.capitalize()} against epochs of the plan's samples{cost}{right}."


def draw_acceptance(plt: Any, curve: AcceptanceCurve) -> Legend:
    """Tau (left axis) against epochs, its range as the two grey lines either side, the
    plan's point, and one more epoch's; the right axis reads the serving speedup at each
    tau tick (the speedup is a function of tau: one curve, two scales). Returns the
    legend (drawn under the chart)."""
    plt.clear_data()
    x = list(curve.epochs)
    for values in (curve.tau, curve.tau_low, curve.tau_high):
        _finite(values, f"a {F.TAU.name} of")
    if len(x) < 2:
        raise CannotDraw("no curve to show")
    bottom = min(curve.tau_low)
    top = max(curve.tau_high)
    top += (top - bottom) * 0.05 or 0.5
    now = curve.current_epochs
    next_tau = float(np.interp(now + 1, x, curve.tau))
    legend: list[tuple[str, str, str]] = [
        (LINE, TAU, F.TAU.name),
        (LINE, TAU_RANGE, "its range"),
        ("◆", PLAN_POINT, f"plan: {now} epochs, {fmt.figure(F.TAU, curve.current_tau)}"),
        ("●", NEXT_EPOCH, f"+1 epoch: {fmt.figure(F.TAU, next_tau)}"),
    ]
    if curve.speedups:  # the right axis's curve: the same line, drawn under the left's
        plt.plot(x, list(curve.tau), color=TAU, marker="braille", yside="right")
    plt.plot(x, list(curve.tau_low), color=TAU_RANGE, marker="braille")
    plt.plot(x, list(curve.tau_high), color=TAU_RANGE, marker="braille")
    plt.plot(x, list(curve.tau), color=TAU, marker="braille")
    rows = inner_rows(plt, legend, titled=True)

    def on_curve(tau: float) -> float:
        """A marker's y on the row the braille curve draws `tau` on: plotext puts a
        braille dot on sub-row floor(0.5 + v * (4 rows - 1) / span) (four to a row) and
        a marker on row floor(0.5 + v * (rows - 1) / span), which differ by a row."""
        span = top - bottom
        row = math.floor(0.5 + (tau - bottom) * (4 * rows - 1) / span) // 4
        return bottom + row * span / max(rows - 1, 1)

    plt.scatter([now + 1], [on_curve(next_tau)], marker="●", color=NEXT_EPOCH)
    plt.scatter([now], [on_curve(curve.current_tau)], marker="◆", color=PLAN_POINT)
    plt.title(
        f"{F.TAU.name} by epochs"
        + (f" (right: {F.SERVING_SPEEDUP.name})" if curve.speedups else "")
    )
    plt.xlabel("epochs of the plan's samples")
    plt.xlim(x[0], x[-1])
    ticks = [t for t in linear_ticks(x[0], x[-1], 8) if t == int(t)]
    plt.xticks(ticks, [f"{t:g}" for t in ticks])
    plt.ylim(bottom, top)
    ticks = spaced_ticks(linear_ticks(bottom, top), top - bottom, inner_rows(plt, legend, True))
    plt.yticks(ticks, [fmt.figure(F.TAU, t) for t in ticks])
    if curve.speedups:
        plt.ylim(bottom, top, yside="right")
        speedups = np.interp(ticks, curve.speedup_taus, curve.speedups)
        plt.yticks(ticks, [fmt.figure(F.SERVING_SPEEDUP, s) for s in speedups], yside="right")
    return legend


class Chart(PlotextPlot):
    """A plotext chart; `draw` replaces what it shows. It is drawn afresh, at the widget's
    size, each time it renders (chart_text)."""

    DEFAULT_CSS = """
    Chart { height: 1fr; width: 100%; }
    """

    _draw: Draw | None = None

    def draw(self, draw: Draw) -> None:
        self._draw = draw
        self.refresh()

    def render(self) -> RenderResult:
        if self._draw is None:
            return ""
        return chart_text(
            self._draw,
            self.size.width,
            self.size.height,
            self._get_plotext_theme_name(self.app.theme),
        )


class ChartsScreen(Screen[None]):
    """The split curve, the tornado and the acceptance curve of the current plan."""

    BINDINGS = [
        Binding("escape,f7", "app.pop_screen", "Back", id="charts-back"),
        Binding(
            "f3",
            "show('split')",
            "Split",
            id="charts-split",
            tooltip="Throughput against target GPUs",
        ),
        Binding(
            "f4",
            "show('tornado')",
            "Tornado",
            id="charts-tornado",
            tooltip="What moves days and cost",
        ),
        Binding(
            "f5",
            "show('acceptance')",
            "Tau",
            id="charts-acceptance",
            tooltip="Tau and serving speedup against epochs",
        ),
    ]

    DEFAULT_CSS = """
    ChartsScreen { overflow: hidden hidden; }
    ChartsScreen #charts-note { height: 1; background: $panel; width: 1fr;
        content-align: center middle; text-wrap: nowrap; text-overflow: ellipsis; }
    ChartsScreen .chart-why { height: auto; padding: 0 1; }
    ChartsScreen #chart-tabs { height: 1fr; }
    ChartsScreen .chart-pane { height: 1fr; }
    """

    def __init__(self, projection: Projection, catalog: Catalog, title: str) -> None:
        super().__init__()
        self.projection, self.catalog, self.plan_title = projection, catalog, title

    def compose(self) -> ComposeResult:
        yield Static(f"Charts of {self.plan_title}", id="charts-note", markup=False)
        split = Vertical(
            Static("", id="split-why", classes="chart-why"),
            Chart(id="split-chart"),
            id="split",
            classes="chart-pane",
        )
        tornado_pane = Vertical(
            Static(
                "Each input across its range: % change from the central plan, largest first",
                classes="chart-why",
                id="tornado-key",
            ),
            Chart(id="tornado-chart"),
            id="tornado",
            classes="chart-pane",
        )
        acceptance_pane = Vertical(
            Static("", id="acceptance-why", classes="chart-why"),
            Chart(id="acceptance-chart"),
            id="acceptance",
            classes="chart-pane",
        )
        yield TabbedView(
            ("Split curve", split),
            ("Tornado", tornado_pane),
            ("Tau", acceptance_pane),
            id="chart-tabs",
        )
        yield KeysFooter()

    def on_mount(self) -> None:
        p = self.projection
        why = self.query_one("#split-why", Static)
        # A colocated plan: the curve is its GPUs split, its own rate a line across it.
        colocated = p.tokens_per_s if p.topology == "colocated" else None
        try:
            curve = split_curve(p)
            note = split_note(curve, colocated)
        except (PlanError, CannotDraw) as err:
            why.update(str(err))
            self.query_one("#split-chart", Chart).display = False
        else:
            why.update(note)
            self.query_one("#split-chart", Chart).draw(
                lambda plt: draw_split(plt, curve, colocated)
            )
        bars = tornado(p, self.catalog)
        self.query_one("#tornado-chart", Chart).draw(lambda plt: draw_tornado(plt, bars, p))
        why = self.query_one("#acceptance-why", Static)
        if p.does_not_fit is not None:
            why.update(f"No {F.TAU.name} chart: the plan does not fit ({p.does_not_fit})")
            self.query_one("#acceptance-chart", Chart).display = False
            return
        taus = acceptance_curve(p)
        why.update(acceptance_note(taus, serving_words(p)))
        self.query_one("#acceptance-chart", Chart).draw(lambda plt: draw_acceptance(plt, taus))

    def action_show(self, tab: str) -> None:
        self.query_one(TabbedView).active = tab
