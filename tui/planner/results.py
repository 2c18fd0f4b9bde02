"""The projection of the current plan against the baseline. Rendering is a set of pure
functions from a projection to rich Text; the panel shows the state's `View` (bound with
data_bind). Lines wrap rather than being cut, so a narrow terminal scrolls and loses
nothing."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass

from rich.cells import cell_len
from rich.console import Group
from rich.table import Table
from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Vertical, VerticalScroll
from textual.content import Content
from textual.reactive import reactive
from textual.visual import visualize
from textual.widgets import Static

from ...model.core import figures as F
from ...model.core.calibration import measurements as calibration_measurements
from ...model.core.projection import Projection
from ...model.explore.compare import Comparison
from .. import format as fmt
from ..report import (
    acceptance_rows,
    job_name,
    job_parts,
    more_gpus,
    offline_lines,
    offline_rates,
    store_lines,
    topology_line,
)
from ..state import View

BAR_WIDTH = 6
NAME_WIDTH = 11

# Colocated ("time-shared"), every GPU runs one role or the other all the time (the
# utilisation says how its time divides).
BUSY = {
    "target": "100 % busy",
    "drafter": "100 % busy",
    "link": "full",
    "time-shared": "100 % busy",
}


def bar(share: float | None, width: int = BAR_WIDTH) -> Text:
    if share is None:
        return Text("░" * width, style="dim")
    filled = max(0, min(width, round(share * width)))
    style = "bold red" if share >= 0.999 else "green" if share < 0.8 else "yellow"
    return Text("█" * filled, style=style) + Text("░" * (width - filled), style="dim")


def _better(high: float | None, low: float | None) -> str:
    """Green when high > low (the change is good), red when it is bad, plain when even."""
    if high is None or low is None or abs(high - low) < 5e-3 * max(abs(high), abs(low), 1e-9):
        return ""
    return "green" if high > low else "red"


FigureRow = tuple[str, str, str]


def _range(pair: tuple[float, float] | None, one: Callable[[float | None], str]) -> str:
    """'range 6.7-9.9 days', '' when there is none to show."""
    text = fmt.spread(pair, one)
    return f"range {text}" if text else ""


def figure_rows(p: Projection) -> tuple[FigureRow, ...]:
    """The headline figures as (name, value, note) rows; a row without a name continues
    the one above (a range, a cost note)."""
    if p.does_not_fit is not None:
        # A plan that cannot run (GPU memory, storage, the store's host memory alike:
        # Projection.does_not_fit) has no figures; the banner says why.
        return (
            (F.TOKENS_PER_S.name, fmt.DASH, "does not fit"),
            (F.DAYS.name, fmt.DASH, ""),
            (F.TOTAL_COST.name, fmt.DASH, ""),
            (F.COST_PER_EPOCH.name, fmt.DASH, ""),
            (F.BOTTLENECK.name, fmt.DASH, "does not fit"),
            *((f.name, fmt.DASH, "") for f in F.rows(F.View.RESULTS)),
        )
    measured = p.target.source == "measured" and p.bottleneck == "target"
    unit = p.cost_unit

    def figure(f: F.Figure, compact: bool = True) -> str:
        """A figure of the plan as the registry writes it."""
        return fmt.figure(f, f.read(p), unit, compact)

    cost_note = [fmt.gpu_hours(p.gpu_hours)] if p.gpu_hours else []
    if unit != "USD" and p.total_cost_usd:
        cost_note.append(f"~{figure(F.TOTAL_COST_USD)}")
    r = p.ranges

    def span(f: F.Figure, compact: bool = True) -> str:
        """The range of an estimated figure ('58.7-102.7'), '' for a measured one."""
        pair = getattr(r, f.key) if r is not None else None
        text = fmt.spread(pair, fmt.figure_of(f, unit, compact))
        return f"range {text}" if text else ""

    rows: tuple[FigureRow, ...] = (
        (
            F.TOKENS_PER_S.name,
            figure(F.TOKENS_PER_S),
            "measured" if measured else "estimated",
        ),
        ("", span(F.TOKENS_PER_S), ""),
        (F.DAYS.name, figure(F.DAYS, compact=False), f"for {figure(F.EPOCHS)} {F.EPOCHS.name}"),
        ("", span(F.DAYS, compact=False), ""),
        (F.TOTAL_COST.name, figure(F.TOTAL_COST), ""),
        ("", span(F.TOTAL_COST), ""),
        ("", ", ".join(cost_note), ""),
        (F.COST_PER_EPOCH.name, figure(F.COST_PER_EPOCH), ""),
        (F.BOTTLENECK.name, figure(F.BOTTLENECK), BUSY.get(p.bottleneck or "", "does not fit")),
    )
    # The figures the rows above do not compose: a row each, from the registry (the job's
    # figures: they lead with the job's days and cost when the job is more than the online
    # pipeline, and follow the pipeline's rows, which are the same job, when it is not).
    own = tuple(
        (f.name, fmt.figure(f, f.read(p), p.cost_unit, compact=True), "")
        for f in F.rows(F.View.RESULTS)
    )
    if p.job.phased and (t := p.total) is not None:
        # The job the plan describes leads (its offline run, regeneration first when on),
        # with its phases named; the rows after it are the online pipeline's.
        o = p.job.stored
        # Data over storage.tb does not fit: no figures (above), so it fits here.
        storage = "" if o is None else f"{o.tb:,.1f} TB"
        usd = f"~{fmt.figure(F.TOTAL_COST_USD, t.cost_usd)}" if unit != "USD" and t.cost_usd else ""
        job_cost = p.job_cost_range
        rows = (
            (
                F.JOB_DAYS.name,
                fmt.figure(F.JOB_DAYS, t.days),
                ", ".join(x for x in (job_name(p), storage) if x),
            ),
            # A phase a line: "capture 1.5 d + train 6.6 d" would break inside a phase.
            *(("", ("+ " if i else "") + part, "") for i, part in enumerate(job_parts(p))),
            ("", _range(p.job_days_range, fmt.figure_of(F.JOB_DAYS)), ""),
            (F.JOB_COST.name, fmt.figure(F.JOB_COST, t.cost, unit, compact=True), ""),
            ("", _range(job_cost, fmt.figure_of(F.JOB_COST, unit, compact=True)), ""),
            ("", ", ".join([fmt.gpu_hours(t.gpu_hours), *([usd] if usd else [])]), ""),
            # An offline run's rates, a phase a line as its days are: after its days and
            # cost, which lead in the panel's first rows.
            *(
                (F.TOKENS_PER_S.name if i == 0 else "", rate, "")
                for i, rate in enumerate(offline_rates(p))
            ),
            *own,
            ("training" if o is None else "online", "the figures below", ""),
            *rows,
        )
    else:
        rows = (*rows, *own)
    return tuple(row for row in rows if row[1])


def note_style(note: str) -> str:
    """A note says what does not fit in red: the plan cannot run as it stands."""
    return "bold red" if note == "does not fit" else "dim"


def figures_content(rows: tuple[FigureRow, ...], stale: bool) -> Content:
    """The headline figures as lines: name, value (bold, struck through when stale) and a
    note; as figures_table shows them when no value wraps."""
    value_style = "bold strike" if stale else "bold"
    parts: list[str | tuple[str, str]] = []
    for name, value, note in rows:
        parts += [(f"{name:<{NAME_WIDTH}}", "dim"), (value, value_style if name else "dim")]
        if note:
            parts.append(("  " + note, note_style(note)))
        parts.append("\n")
    return Content.assemble(*parts[:-1])


def figures_table(rows: tuple[FigureRow, ...], stale: bool) -> Table:
    """The headline figures: name, value (bold, struck through when stale) and a note."""
    value_style = "bold strike" if stale else "bold"
    table = Table.grid(padding=(0, 0))
    table.add_column(width=NAME_WIDTH, no_wrap=True, style="dim")
    table.add_column(ratio=1)
    for name, value, note in rows:
        cell = Text(value, style=value_style if name else "dim", no_wrap=False)
        if note:
            cell.append("  " + note, style=note_style(note))
        table.add_row(name, cell)
    return table


def figures_stacked(rows: tuple[FigureRow, ...], stale: bool) -> Text:
    """The headline figures for a column too narrow to hold a value beside its name: the
    name on its line, the value and note under it, wrapping between words."""
    value_style = "bold strike" if stale else "bold"
    text = Text()
    for name, value, note in rows:
        if name:
            text.append(f"{name}\n", style="dim")
        text.append("  " + value, style=value_style if name else "dim")
        if note:
            text.append("  " + note, style=note_style(note))
        text.append("\n")
    text.rstrip()
    return text


def versus(c: Comparison | None, baseline_name: str, p: Projection | None = None) -> Text:
    text = Text()
    if c is None:
        return text
    text.append("vs baseline ", style="bold")
    text.append(baseline_name + "\n", style="dim")
    if p is not None and p.does_not_fit is not None:
        # compare() gives no ratio for a plan that cannot run (its storage as its memory).
        text.append("does not fit: no speed or cost to compare", style="bold red")
        return text
    speed = fmt.figure(F.SPEEDUP, c.speedup)
    text.append(f"{speed} {F.SPEEDUP.name}", style=_better(c.speedup, 1.0))
    if spread := fmt.spread(c.speedup_range, fmt.figure_of(F.SPEEDUP)):
        text.append(f" ({spread})", style="dim")
    text.append("  ")
    ratio = fmt.figure(F.COST_RATIO, c.cost_ratio)
    text.append(f"{ratio} cost", style=_better(1.0, c.cost_ratio))
    if spread := fmt.spread(c.cost_ratio_range, fmt.figure_of(F.COST_RATIO)):
        text.append(f" ({spread})", style="dim")
    text.append("  ")
    delta = c.days_delta
    text.append(
        fmt.figure(F.DAYS_DELTA, delta), style=_better(0.0, delta) if delta is not None else ""
    )
    if c.speedup_range and c.speedup_range_scenarios:
        # Both plans under the same scenario: what sets each end of the speed range.
        for value, at in zip(c.speedup_range, c.speedup_range_scenarios, strict=True):
            text.append(f"\n{fmt.figure(F.SPEEDUP, value)} if {at}", style="dim")
    if p is not None and p.job.phased:
        # compare() judges each plan's whole job: say so where the plan's is more than
        # the online pipeline.
        text.append(f"\neach plan's whole job (this plan's: {job_name(p)})", style="dim")
    if p is not None and c.break_even_price_ratio:
        text.append("\n" + fmt.break_even(p, c.break_even_price_ratio), style="dim")
    # The comparison's figures this line does not compose: one each, from the registry.
    for f in F.rows(F.View.RESULTS, "comparison"):
        text.append(f"\n{f.name} {fmt.figure(f, f.read(c), p.cost_unit if p else 'USD')}")
    return text


def measurements(p: Projection) -> Text:
    """The plan's measurements, with their source and date, what carries them to other
    GPUs, and what would narrow the estimates (the probe to run)."""
    text = Text()
    calibration = p.plan.calibration
    for role in ("target", "drafter"):
        for gpu, entry in getattr(calibration, role).items():
            for m in calibration_measurements(entry):
                name = p.resolved.gpus[gpu].name if gpu in p.resolved.gpus else gpu
                bound = "at least " if m.bound == "at_least" else ""
                text.append(f"{role} on {name}: {bound}{fmt.per_gpu(m.tokens_per_s)}")
                details = [d for d in (m.source, m.date, "busy" if m.gpu_busy else "") if d]
                if details:
                    text.append(f"  {'; '.join(details)}", style="dim")
                text.append("\n")
        rate = getattr(p, role).rate
        if rate.fitted_overhead_s_per_token is not None:
            text.append(
                f"{role} fit: device time at {rate.efficiency:.0%} of peak plus "
                f"{rate.fitted_overhead_s_per_token * 1e6:,.1f} us per token of "
                f"overhead\n",
                style="dim",
            )
    if p.narrowing:
        text.append("to narrow the range: ", style="bold")
        text.append(p.narrowing + "\n")
    text.rstrip()
    return text


def side(p: Projection, width: int = 0) -> Content:
    """Utilisation, memory, the value of one more GPU and what the training buys (the
    drafter's tau, serving speedup and break-even, one more epoch's gain), each under a
    title. `width`: the column's (0: not laid out yet); narrower than an acceptance row,
    the row's range (or what follows its value) goes on a line of its own under it."""
    sections = [
        ("utilisation  (busy, capacity)", utilisation(p)),
        ("memory per GPU (needed / usable)", memory(p)),
    ]
    if p.does_not_fit is None and (more := more_gpus(p)):
        # The widest label sets the column ("+1 colocated GPU", "+1 target replica" ran
        # into their figure at a fixed 16).
        labels = [f"+1 {name}" for name, _ in more]
        column = max(map(len, labels)) + 2
        lines = (
            f"{label:<{column}}{value}" for label, (_, value) in zip(labels, more, strict=True)
        )
        sections.append(("one more GPU", Text("\n".join(lines))))
    if rows := acceptance_rows(p):
        sections.append(("what the training buys", acceptance_text(rows, width)))
    parts: list[Content | tuple[str, str]] = []
    for i, (title, body) in enumerate(sections):
        parts += [
            (("\n" if i else "") + title + "\n", "bold $accent"),
            Content.from_rich_text(body),
            Content("\n"),
        ]
    return Content.assemble(*parts[:-1])


def acceptance_text(rows: list[tuple[str, str, str]], width: int) -> Text:
    """The acceptance rows: name, value and what follows it (its range) on one line, or,
    when one of them is wider than `width`, what follows each value on a line under it."""
    pad = max(len(name) for name, _, _ in rows) + 2
    lines = [(f"{name:<{pad}}{value}", after) for name, value, after in rows]
    one_line = not width or all(
        cell_len(f"{line}  {after}") <= width for line, after in lines if after
    )
    text = Text()
    for line, after in lines:
        text.append(line)
        if after:
            text.append(f"  {after}" if one_line else f"\n{'':<{pad}}{after}", style="dim")
        text.append("\n")
    text.rstrip()
    return text


def side_part(p: Projection) -> Part:
    """The side column, laid out for its width (acceptance_text)."""
    wide = side(p)
    return Part((wide.plain, tuple(wide.spans)), wide.plain, lambda width: side(p, width))


def utilisation(p: Projection) -> Text:
    text = Text()
    for role in (p.target, p.drafter):
        text.append(f"{role.role:<8}")
        text.append_text(bar(role.utilization))
        capacity = fmt.ktok(role.capacity_tokens_per_s)
        text.append(f" {fmt.percent(role.utilization):>5} {capacity}\n")
    text.append(f"{'link':<8}")
    if (shares := p.time_shares) is not None:
        text.append("none: colocated, the states stay on their GPU\n", style="dim")
        text.append(f"{'shares':<8}{fmt.pct(shares[0])} target, {fmt.pct(shares[1])} drafter")
        text.append(" on each GPU\n", style="dim")
    else:
        text.append_text(bar(p.link_utilization))
        link = fmt.figure(F.TOKENS_PER_S, p.link.tokens_per_s)
        text.append(f" {fmt.percent(p.link_utilization):>5} {link}\n")
        text.append(f"        {p.link.description}\n", style="dim")
    for role in (p.target, p.drafter):
        text.append(f"{role.role:<8}")
        text.append(role.source, style="bold cyan" if role.source == "measured" else "italic")
        text.append(f", {role.limit}-bound\n")
    text.rstrip()
    return text


def memory(p: Projection) -> Text:
    text = Text()
    # Colocated, every GPU holds both roles: one fit, both roles' memory (the model's).
    roles = [("both", p.target)] if p.topology == "colocated" else []
    for name, role in roles or [(r.role, r) for r in (p.target, p.drafter)]:
        fits = role.memory.fits
        memory = role.memory
        text.append(f"{name:<8}{memory.needed_gb:,.1f} / {memory.available_gb:g} GB ")
        text.append("fits" if fits else "DOES NOT FIT", style="green" if fits else "bold red")
        text.append("\n")
    text.rstrip()
    return text


def storage(p: Projection) -> Text:
    """Offline storage and the Mooncake store, when the plan runs either: offline mode, or
    hidden states through the store."""
    text = Text()
    lines = [
        *(offline_lines(p) if p.job.stored is not None else []),
        *(store_lines(p) if p.plan.workload.transport == "mooncake" else []),
    ]
    for line in lines:
        text.append(line + "\n")
    text.rstrip()
    return text


PHASE_STYLES = {"regenerate": "magenta", "capture": "cyan", "train": "green"}
# Cells of the timeline: it fits the results panel of an 80-column terminal.
TIMELINE_WIDTH = 30


def phases_part(p: Projection) -> Part:
    """The whole job's timeline when it has a regeneration phase: a bar, each phase's share
    of the days in its colour, then a table of the phases and the decode figures."""
    t, regen = p.total, p.regeneration
    if t is None or regen is None or not t.days:
        return Part(None, "", lambda _width: "", False)
    spent = fmt.figure(F.JOB_COST, t.cost, p.cost_unit, compact=True)
    usd = (
        ""
        if p.cost_unit == "USD" or t.cost_usd is None
        else f" (~{fmt.figure(F.TOTAL_COST_USD, t.cost_usd)})"
    )
    rows = [
        (
            ph.name,
            fmt.figure(F.DAYS, ph.days, compact=True),
            f"{ph.gpus:,}",
            fmt.cell(F.TOTAL_COST, ph.cost, p.cost_unit),
        )
        for ph in p.phases
    ]
    note = fmt.regeneration(regen, compact=True)
    head = f"whole job  {fmt.figure(F.JOB_DAYS, t.days)}, {spent}{usd}"
    plain = "\n".join([head, "█" * TIMELINE_WIDTH, *("  ".join(r) for r in rows), note])

    def content(_width: int) -> Shown:
        bar = Text()
        for ph in p.phases:
            cells = max(1, round(ph.days / t.days * TIMELINE_WIDTH))
            bar.append("█" * cells, style=PHASE_STYLES[ph.name])
        table = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0), show_header=True)
        table.add_column("phase", no_wrap=True, header_style="dim")
        table.add_column(F.DAYS.name, justify="right", no_wrap=True, header_style="dim")
        table.add_column("GPUs", justify="right", no_wrap=True, header_style="dim")
        table.add_column("cost", justify="right", no_wrap=True, header_style="dim")
        for ph, (name, days, gpus, cost) in zip(p.phases, rows, strict=True):
            table.add_row(Text("■ ", style=PHASE_STYLES[ph.name]) + name, days, gpus, cost)
        return Group(Text(head, style="bold"), bar, table, Text(note, style="dim"))

    return Part((rows, head, note), plain, content)


def topology_text(line: str | None) -> Text:
    """The topology the figures are and which would win on the plan's GPUs: the line
    the command line prints (report.topology_line), its head bold."""
    text = Text(line or "")
    head = text.plain.split(":", 1)[0]
    text.stylize("bold", 0, len(head))
    return text


def warnings(p: Projection) -> Text:
    text = Text()
    for line in p.warnings:
        text.append("⚠ ", style="yellow")
        text.append(str(line) + "\n")
    text.rstrip()
    return text


def assumptions(p: Projection) -> Text:
    text = Text(style="dim")
    text.append("assumptions\n", style="bold")
    for role in (p.target, p.drafter):
        text.append(f"{role.role}: {role.basis}; {role.limit}-bound\n")
    for line in p.assumptions:
        text.append(f"{line}\n")
    text.rstrip()
    return text


Shown = Table | Text | Content | Group | str


@dataclass(frozen=True, slots=True)
class Part:
    """One Static's part of a view: what it shows, comparable (an unchanged part costs no
    render); its text as laid out without wrapping (a height measured without rendering);
    the content for a width (0: not laid out yet), built only when the part changed;
    whether it is shown."""

    key: object
    plain: str
    content: Callable[[int], Shown]
    shown: bool = True


def text_part(content: Text | Content, shown: bool = True) -> Part:
    key = (
        content.plain,
        tuple(content.spans),
        content.style if isinstance(content, Text) else None,
    )
    return Part(key, content.plain, lambda _width: content, shown)


def figures_part(rows: tuple[FigureRow, ...], stale: bool) -> Part:
    """The figures as plain lines (cheap to render) where every row fits the width, else
    as a table whose values wrap under their column."""
    plain = "\n".join(
        f"{name:<{NAME_WIDTH}}{value}" + (f"  {note}" if note else "") for name, value, note in rows
    )

    longest_word = max(
        (cell_len(word) for _, value, note in rows for word in f"{value} {note}".split()), default=0
    )

    def content(width: int) -> Shown:
        if width and height_unwrapped(plain, width) is not None:
            return figures_content(rows, stale)
        if width and width - NAME_WIDTH < longest_word:
            return figures_stacked(rows, stale)  # no word is cut or broken
        return figures_table(rows, stale)

    return Part((rows, stale), plain, content)


def height_unwrapped(plain: str, width: int) -> int | None:
    """The lines a text takes at width when none of them wraps (None when one does)."""
    lines = plain.split("\n")
    return len(lines) if max(map(cell_len, lines)) <= width else None


def replace(widget: Static, part: Part) -> None:
    """Show a part in a Static; lay the screen out again only when its height changes (a
    layout pass costs more than everything else in an update)."""
    width, height = widget.content_size
    content = part.content(width)
    same = False
    if width and widget.display:
        needed = height_unwrapped(part.plain, width)
        if needed is None:
            needed = visualize(widget, content).get_height(widget.styles, width)  # type: ignore[arg-type]
        same = needed == height
    widget.update(content, layout=not same)


class ResultsPanel(VerticalScroll):
    """The projection, against the baseline, bound to the planner's view."""

    view: reactive[View | None] = reactive(None, init=False, repaint=False)

    def __init__(self, first: View) -> None:
        super().__init__(id="results")
        self.first = first
        self._keys: dict[str, object] = {}  # what each Static shows now
        self._figures: Part | None = None  # the figures shown, chosen by width
        self._figures_width = 0  # the width they were chosen at
        self._side: Part | None = None  # the side column, laid out for its width
        self._side_width = 0

    def compose(self) -> ComposeResult:
        # The first view's figures are composed in (filled after mounting, every Static
        # would change height and the screen would be laid out twice before its first frame).
        parts = self._parts(self.first)

        def static(widget_id: str) -> Static:
            part = parts.get(widget_id, Part("", "", lambda _width: "", False))
            self._keys[widget_id] = part.key
            if widget_id == "figures":
                self._figures = part
            if widget_id == "side":
                self._side = part
            widget = Static(part.content(0), id=widget_id)
            widget.display = part.shown
            return widget

        yield static("banner").set_class(self.first.stale, "-stale")
        with Vertical(id="result-columns"):
            with Vertical(id="col-main"):
                yield static("figures")
                yield static("topology")
                yield static("versus")
            yield static("side")
        yield static("measurements")
        yield static("storage")
        yield static("phases")
        yield static("warnings")
        yield static("assumptions")

    def watch_view(self, view: View | None) -> None:
        if view is None or view is self.first:
            return
        self.query_one("#banner", Static).set_class(view.stale, "-stale")
        for widget_id, part in self._parts(view).items():
            widget = self.query_one(f"#{widget_id}", Static)
            if self._keys.get(widget_id) != part.key:  # an unchanged part costs no render
                self._keys[widget_id] = part.key
                replace(widget, part)
                if widget_id == "figures":
                    self._figures, self._figures_width = part, widget.content_size.width
                if widget_id == "side":
                    self._side, self._side_width = part, widget.content_size.width
            widget.display = part.shown

    def on_resize(self) -> None:
        # The figures' layout (plain lines, a table, or stacked) and the side column's
        # acceptance rows (one line or two) are chosen for a width: chosen again once the
        # new width is laid out.
        self.call_after_refresh(self._refit_figures)

    def _refit_figures(self) -> None:
        widget = self.query_one("#figures", Static)
        width = widget.content_size.width
        if self._figures is not None and width and width != self._figures_width:
            self._figures_width = width
            replace(widget, self._figures)
        side = self.query_one("#side", Static)
        width = side.content_size.width
        if self._side is not None and width and width != self._side_width:
            self._side_width = width
            replace(side, self._side)

    @staticmethod
    def _parts(view: View) -> dict[str, Part]:
        """Each Static's part of the view."""
        banner = ("STALE: " if view.stale else "") + (view.banner or "")
        parts = {"banner": Part(banner, banner, lambda _width: banner, bool(view.banner))}
        p = view.projection
        if p is None:
            return parts
        known = measurements(p)
        stored = storage(p)
        verdict = topology_line(p)
        parts.update(
            figures=figures_part(figure_rows(p), view.stale),
            topology=text_part(topology_text(verdict), verdict is not None),
            versus=text_part(versus(view.comparison, view.baseline_name, p)),
            side=side_part(p),
            measurements=text_part(known, bool(known.plain)),
            storage=text_part(stored, bool(stored.plain)),
            phases=phases_part(p),
            warnings=text_part(warnings(p), bool(p.warnings)),
            assumptions=text_part(assumptions(p)),
        )
        return parts
