"""Charts drawn with plotext (through textual-plotext): the Pareto front of a search, the
split curve of the current plan's GPUs and the tornado of what moves its days and cost.
Each `draw_*` function takes a plotext figure and the model's data, so the charts can be
drawn (and tested) without a running app; `Chart` is the widget that shows one, and
`ChartsScreen` shows the split curve and the tornado of the current plan."""

from __future__ import annotations

import math
from collections.abc import Callable, Sequence
from typing import Any

from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.screen import Screen
from textual.widgets import Static
from textual_plotext import PlotextPlot

from ..model.catalog import Catalog
from ..model.errors import PlanError
from ..model.projection import Projection
from ..model.search import Candidate
from ..model.sensitivity import Bar, SplitCurve, split_curve, tornado
from .footer import KeysFooter
from .tabs import TabbedView

Draw = Callable[[Any], None]

# Colours that read on the dark and the light theme.
FRONT, CURRENT, BASELINE = "cyan", "orange", "magenta"
TARGET, DRAFTER, LINK = "green", "orange", "magenta"
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


def draw_pareto(plt: Any, front: Sequence[Candidate], current: Projection | None,
                baseline: Projection | None, cost_unit: str,
                deadline: float | None = None, budget: float | None = None) -> None:
    """Days (log scale: a front spans hours to weeks) against total cost (from 0); the
    deadline and the budget as lines."""
    plt.clear_data()
    plt.title("Pareto front: days against cost (red: the limits)")
    plt.xlabel("days (log scale)")
    plt.ylabel(_short_cost(cost_unit))
    plt.xscale("log")
    xs = [c.days for c in front] + [p.days for p in (current, baseline)
                                     if p is not None and p.days]
    if deadline is not None:
        xs.append(deadline)
        plt.vline(deadline, color="red")
    if budget is not None:
        plt.hline(budget, color="red")
    if xs:
        ticks = log_ticks(min(xs), max(xs))
        if len(ticks) >= 2:
            plt.xticks(ticks, [tick_label(t) for t in ticks])
    ys = [c.cost for c in front] + [p.total_cost for p in (current, baseline)
                                     if p is not None and p.total_cost]
    if budget is not None:
        ys.append(budget)
    if ys:                                  # from 0: cost ratios read as heights
        ticks = linear_ticks(0, max(ys) * 1.05)
        plt.ylim(0, max(ys) * 1.08)
        plt.yticks(ticks, [f"{t:,.0f}" for t in ticks])
    if front:
        plt.scatter([c.days for c in front], [c.cost for c in front], marker="●",
                    color=FRONT, label=f"front ({len(front)} plans)")
    same = current is not None and baseline is not None and current.plan == baseline.plan
    marks = [(current, CURRENT, "current = baseline" if same else "current", "◆")]
    if not same:
        marks.insert(0, (baseline, BASELINE, "baseline", "■"))
    for p, colour, name, marker in marks:
        if p is not None and p.days is not None and p.total_cost is not None:
            plt.scatter([p.days], [p.total_cost], marker=marker, color=colour, label=name)


def draw_split(plt: Any, curve: SplitCurve) -> str:
    """Throughput of every split of the same GPUs, with each part's capacity; the link's
    line is left out when it is far above the rest (it would flatten them). Returns the
    note to show with it (a plotext title longer than the chart is dropped)."""
    plt.clear_data()
    k = [t / 1e3 for t in curve.tokens_per_s]
    target = [t / 1e3 for t in curve.target_tokens_per_s]
    drafter = [t / 1e3 for t in curve.drafter_tokens_per_s]
    link = [t / 1e3 for t in curve.link_tokens_per_s]
    top = max(*k, *(min(a, b) for a, b in zip(target, drafter, strict=True)))
    ceiling = top * 1.6
    x = list(curve.targets)

    def clip(values: list[float]) -> list[float]:
        return [min(v, ceiling) for v in values]

    plt.plot(x, clip(target), color=TARGET, marker="braille", label="target capacity")
    plt.plot(x, clip(drafter), color=DRAFTER, marker="braille", label="drafter capacity")
    notes = []
    if min(link) <= ceiling:
        plt.plot(x, clip(link), color=LINK, marker="braille", label="link capacity")
    else:
        notes.append(f"the link carries {min(link):,.0f}+ Ktok/s, above the chart")
    plt.plot(x, k, color="cyan", marker="braille", label="throughput")
    if curve.current in curve.targets:
        plt.scatter([curve.current], [k[curve.targets.index(curve.current)]], marker="●",
                    color="white", label=f"current: {curve.current}")
    if curve.switch is not None:
        plt.vline(curve.switch, color="red")
        notes.insert(0, f"the drafters bind from {curve.switch} target GPUs (red line)")
    else:
        notes.insert(0, "the targets bind at every split")
    plt.title("Ktok/s by target GPUs")
    plt.xlabel("target GPUs (the rest are drafters)")
    plt.ylim(0, ceiling)
    ticks = [t for t in linear_ticks(x[0], x[-1], 8) if t == int(t)]
    plt.xticks(ticks, [f"{t:g}" for t in ticks])
    ticks = linear_ticks(0, ceiling)
    plt.yticks(ticks, [f"{t:,.0f}" for t in ticks])
    return "Throughput against target GPUs for the same total: " + "; ".join(notes) + "."


def draw_tornado(plt: Any, bars: Sequence[Bar], p: Projection) -> None:
    """Each uncertain input across its range: the change in days (upper bar) and in cost
    (lower bar) from the central plan, in percent, largest first (at the top)."""
    plt.clear_data()
    if not bars or p.days is None:
        return
    n = len(bars)
    names = []
    lows, highs = [0.0], [0.0]
    for i, bar in enumerate(bars):
        y = n - i                                     # largest at the top
        d = [(v / p.days - 1) * 100 for v in bar.days]
        lo, hi = min(d), max(d)
        lows.append(lo)
        highs.append(hi)
        plt.plot([lo, hi] if hi > lo else [lo - 0.3, lo + 0.3], [y + 0.2, y + 0.2],
                 marker="hd", color=DAYS)
        if p.total_cost and None not in bar.cost:
            c = [((v or 0) / p.total_cost - 1) * 100 for v in bar.cost]
            lo, hi = min(c), max(c)
            lows.append(lo)
            highs.append(hi)
            plt.plot([lo, hi] if hi > lo else [lo - 0.3, lo + 0.3], [y - 0.2, y - 0.2],
                     marker="hd", color=COST)
        name = bar.name.split(" (")[0]
        names.append(f"{name} {bar.low_label}..{bar.high_label}")
    plt.yticks([n - i for i in range(n)], names)
    plt.vline(0, color="gray")
    ticks = linear_ticks(min(lows), max(highs))
    plt.xticks(ticks, [f"{t:+,.0f}" if t else "0" for t in ticks])
    plt.ylim(0.4, n + 0.6)
    plt.xlabel("% change from the central plan")


class Chart(PlotextPlot):
    """A plotext chart; `draw` replaces what it shows."""

    DEFAULT_CSS = """
    Chart { height: 1fr; width: 100%; }
    """

    def draw(self, draw: Draw) -> None:
        draw(self.plt)
        self.refresh()


class ChartsScreen(Screen[None]):
    """The split curve and the tornado of the current plan."""

    BINDINGS = [
        Binding("escape,f7", "app.pop_screen", "Back", id="charts-back"),
        Binding("f3", "show('split')", "Split", id="charts-split",
                tooltip="Throughput against target GPUs"),
        Binding("f4", "show('tornado')", "Tornado", id="charts-tornado",
                tooltip="What moves days and cost"),
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
        yield Static(f"Charts of {self.plan_title}", id="charts-note")
        split = Vertical(Static("", id="split-why", classes="chart-why"),
                         Chart(id="split-chart"), id="split", classes="chart-pane")
        tornado_pane = Vertical(
            Static(Content.assemble(
                ("▄▄", DAYS), " days  ", ("▄▄", COST), " cost: % change from the "
                "central plan as each input moves across its range, largest first"),
                classes="chart-why", id="tornado-key"),
            Chart(id="tornado-chart"), id="tornado", classes="chart-pane")
        yield TabbedView(("Split curve", split), ("Tornado", tornado_pane), id="chart-tabs")
        yield KeysFooter()

    def on_mount(self) -> None:
        p = self.projection
        why = self.query_one("#split-why", Static)
        try:
            curve = split_curve(p)
        except PlanError as err:
            why.update(str(err))
            self.query_one("#split-chart", Chart).display = False
        else:
            why.update(draw_split(self.query_one("#split-chart", Chart).plt, curve))
        bars = tornado(p, self.catalog)
        self.query_one("#tornado-chart", Chart).draw(lambda plt: draw_tornado(plt, bars, p))

    def action_show(self, tab: str) -> None:
        self.query_one(TabbedView).active = tab
