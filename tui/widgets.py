"""The planner's widgets. Inputs post messages up; the app pushes projections down."""

from __future__ import annotations

from typing import Any

from rich.text import Text
from textual.app import ComposeResult
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.message import Message
from textual.widget import Widget
from textual.widgets import Input, Label, Select, Static, TextArea

from ..model.compare import Comparison
from ..model.projection import Projection
from . import format as fmt
from .fields import SECTIONS, FieldError, FieldSpec, parse, show

BAR_WIDTH = 6


def steady(widget):
    """A text widget whose cursor does not blink when the app runs headless, so that
    snapshots do not depend on when they are taken."""
    widget.cursor_blink = not widget.app.is_headless
    return widget


class Field(Widget):
    """One labelled input (or GPU/model picker), its unit, and its error when it has one.
    A grid: label, control and unit on the first row; the error spans the second."""

    DEFAULT_CSS = """
    Field {
        layout: grid;
        grid-size: 3;
        grid-columns: 11 16 1fr;
        grid-rows: 1 auto;
        height: auto;
    }
    Field > .field-error {
        column-span: 3;
        height: auto;
    }
    """

    class Edited(Message):
        def __init__(self, key: str, value: Any) -> None:
            self.key, self.value = key, value
            super().__init__()

    class Invalid(Message):
        def __init__(self, key: str, reason: str) -> None:
            self.key, self.reason = key, reason
            super().__init__()

    def __init__(self, spec: FieldSpec, options: list[tuple[str, str]] | None = None,
                 initial: Any = None) -> None:
        super().__init__(id=f"field-{spec.widget_id}", classes="field")
        self.spec = spec
        self.options = options or []
        self.initial = initial

    def compose(self) -> ComposeResult:
        yield Label(self.spec.label, classes="field-label", id=f"label-{self.spec.widget_id}")
        if self.spec.kind in ("gpu", "model"):
            yield Select(self.options, id=self.spec.widget_id, compact=True,
                         allow_blank=False, classes="field-control", value=self.initial)
        else:
            yield steady(Input(show(self.initial), id=self.spec.widget_id, compact=True,
                               classes="field-control", select_on_focus=True))
        yield Label(self.spec.unit, classes="field-unit")

    @property
    def control(self) -> Input | Select:
        return self.query_one(f"#{self.spec.widget_id}")

    def set_value(self, value: Any) -> None:
        """Show a value without reporting it as an edit."""
        control = self.control
        if isinstance(control, Select):
            with control.prevent(Select.Changed):
                if value is not None and value != control.value:
                    control.value = value
        else:
            text = value if isinstance(value, str) else show(value)
            if control.value != text and not control.has_focus:
                with control.prevent(Input.Changed):
                    control.value = text

    def set_error(self, reason: str | None) -> None:
        """Show (or clear) the reason this field's value is not accepted; the error line is
        only mounted once a field first has one."""
        errors = self.query(".field-error")
        if not reason and not errors:
            return
        if not errors:
            self.mount(Static("", classes="field-error", id=f"error-{self.spec.widget_id}"))
        error = self.query_one(".field-error", Static)
        error.update(f"✗ {reason}" if reason else "")
        error.display = bool(reason)
        self.set_class(bool(reason), "-invalid")

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        try:
            value = parse(self.spec, event.value)
        except FieldError as err:
            self.post_message(self.Invalid(self.spec.key, str(err)))
            return
        self.post_message(self.Edited(self.spec.key, value))

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if event.value is not Select.BLANK:
            self.post_message(self.Edited(self.spec.key, event.value))


class InputsPanel(VerticalScroll):
    """Every editable figure of the plan, in sections."""

    def __init__(self, gpu_options: list[tuple[str, str]], model_options: list[tuple[str, str]],
                 values: dict[str, Any]):
        super().__init__(id="inputs")
        self.gpu_options, self.model_options, self.values = gpu_options, model_options, values

    def compose(self) -> ComposeResult:
        for title, fields in SECTIONS:
            yield Label(title, classes="section-title")
            for spec in fields:
                options = (self.gpu_options if spec.kind == "gpu" else
                           self.model_options if spec.kind == "model" else None)
                yield Field(spec, options, self.values.get(spec.key))

    def field(self, key: str) -> Field:
        return self.query_one(f"#field-{key.replace('.', '-')}", Field)


def bar(share: float | None, width: int = BAR_WIDTH) -> Text:
    if share is None:
        return Text("░" * width, style="dim")
    filled = max(0, min(width, round(share * width)))
    style = "bold red" if share >= 0.999 else "green" if share < 0.8 else "yellow"
    return Text("█" * filled, style=style) + Text("░" * (width - filled), style="dim")


class Figure(Horizontal):
    """A headline figure: its name, the value (the id'd widget), and a note. Optional
    notes give way when the panel is narrow."""

    def __init__(self, name: str, value_id: str, optional_note: bool = False) -> None:
        super().__init__(classes="figure")
        self.figure_name, self.value_id, self.optional_note = name, value_id, optional_note

    def compose(self) -> ComposeResult:
        yield Label(self.figure_name, classes="figure-name")
        yield Static("", id=self.value_id, classes="figure-value")
        yield Static("", id=f"{self.value_id}-note",
                     classes="figure-note" + (" -optional" if self.optional_note else ""))


class ResultsPanel(VerticalScroll):
    """The projection of the current plan, against the baseline."""

    def on_resize(self) -> None:
        self.set_class(self.size.width < 50, "-narrow")
        self.set_class(self.size.width >= 90, "-wide")

    def compose(self) -> ComposeResult:
        yield Static("", id="stale")
        with Horizontal(id="result-columns"):
            with Vertical(id="col-main"):
                yield Figure("throughput", "ktok-per-s")
                yield Figure("time", "days")
                yield Figure("total cost", "total-cost", optional_note=True)
                yield Figure("per epoch", "cost-per-epoch", optional_note=True)
                yield Figure("bottleneck", "bottleneck", optional_note=True)
                yield Static("", id="versus")
            with Vertical(id="col-side"):
                yield Label("utilisation  (busy, capacity)", classes="section-title")
                yield Static("", id="utilisation")
                yield Label("memory per GPU (needed / usable)", classes="section-title")
                yield Static("", id="memory")
                yield Label("one more GPU", classes="section-title")
                yield Static("", id="marginal")
        yield Static("", id="warnings")
        yield Label("assumptions", classes="section-title -optional")
        yield Static("", id="assumptions", classes="-optional")

    def show(self, p: Projection, versus: Comparison | None, baseline_name: str,
             stale: str | None) -> None:
        stale_widget = self.query_one("#stale", Static)
        stale_widget.update(f"STALE: {stale}" if stale else "")
        stale_widget.display = bool(stale)
        self.set_class(bool(stale), "-stale")
        measured = p.target.source == "measured" and p.bottleneck == "target"
        self._figure("ktok-per-s", fmt.ktok(p.tokens_per_s),
                     ("measured" if measured else "estimated") if p.fits else "does not fit")
        self._figure("days", fmt.days(p.days), f"to {p.epochs} epochs" if p.fits else "")
        self._figure("total-cost", fmt.cost(p.total_cost, p.cost_unit, compact=True),
                     f"{p.gpu_hours:,.0f} GPU-h" if p.gpu_hours else "")
        self._figure("cost-per-epoch", fmt.cost(p.cost_per_epoch, p.cost_unit, compact=True),
                     f"~${p.total_cost_usd:,.0f} total" if p.cost_unit != "USD"
                     and p.total_cost_usd else "")
        self._figure("bottleneck", p.bottleneck or "—",
                     {"target": "targets 100 % busy", "drafter": "drafters 100 % busy",
                      "link": "hidden-state link full"}.get(p.bottleneck or "", "does not fit"))
        versus_text = Text()
        if versus is not None:
            versus_text.append("vs baseline ", style="bold")
            versus_text.append(baseline_name + "\n", style="dim")
            versus_text.append(f"{fmt.times(versus.speedup)} speed",
                               style=_better(versus.speedup, 1.0))
            versus_text.append("  ")
            versus_text.append(f"{fmt.times(versus.cost_ratio)} cost",
                               style=_better(1.0, versus.cost_ratio))
            versus_text.append("  ")
            delta = versus.days_delta
            versus_text.append(fmt.signed_days(delta),
                               style=_better(0.0, delta) if delta is not None else "")
        self.query_one("#versus", Static).update(versus_text)
        rows = Text()
        for role in (p.target, p.drafter):
            rows.append(f"{role.role:<8}")
            rows.append_text(bar(role.utilization))
            rows.append(f" {fmt.pct(role.utilization):>5}  {fmt.ktok(role.capacity_tokens_per_s)}\n")
        rows.append(f"{'link':<8}")
        rows.append_text(bar(p.link_utilization))
        rows.append(f" {fmt.pct(p.link_utilization):>5}  {fmt.ktok(p.link.tokens_per_s)}\n")
        rows.append(f"        {p.link.description}\n", style="dim")
        for role in (p.target, p.drafter):
            rows.append(f"{role.role:<8}")
            rows.append(role.source, style="bold cyan" if role.source == "measured" else "italic")
            rows.append(f", {role.limit}-bound" + ("\n" if role is p.target else ""))
        self.query_one("#utilisation", Static).update(rows)
        memory = Text()
        for role in (p.target, p.drafter):
            fits = role.memory.fits
            memory.append(f"{role.role:<8}{role.memory.needed_gb:,.1f} / "
                          f"{role.memory.available_gb:g} GB ")
            memory.append("fits" if fits else "DOES NOT FIT", style="green" if fits else "bold red")
            if role is p.target:
                memory.append("\n")
        self.query_one("#memory", Static).update(memory)
        marginal = Text()
        if p.fits:
            unit = "replica" if p.plan.target.tp > 1 else "GPU"
            marginal.append(f"{'+1 target ' + unit:<19}{p.marginal_target_tokens_per_s / 1e3:+,.1f} Ktok/s\n")
            marginal.append(f"{'+1 drafter GPU':<19}{p.marginal_drafter_tokens_per_s / 1e3:+,.1f} Ktok/s")
        self.query_one("#marginal", Static).update(marginal)
        warnings = Text()
        for line in p.warnings:
            warnings.append("⚠ ", style="yellow")
            warnings.append(line + "\n")
        self.query_one("#warnings", Static).update(warnings)
        details = Text(style="dim")
        for role in (p.target, p.drafter):
            details.append(f"{role.role}: {role.basis}; {role.limit}-bound\n")
        for line in p.assumptions:
            details.append(f"{line}\n")
        self.query_one("#assumptions", Static).update(details)

    def _figure(self, value_id: str, value: str, note: str) -> None:
        self.query_one(f"#{value_id}", Static).update(value)
        self.query_one(f"#{value_id}-note", Static).update(note)


def _better(high: float | None, low: float | None) -> str:
    """Green when high > low (the change is good), red when it is bad, plain when even."""
    if high is None or low is None or abs(high - low) < 5e-3 * max(abs(high), abs(low), 1e-9):
        return ""
    return "green" if high > low else "red"


class LaunchPanel(Vertical):
    """The launch script of the current plan, in the chosen format."""

    class FormatChanged(Message):
        def __init__(self, fmt: str) -> None:
            self.fmt = fmt
            super().__init__()

    def __init__(self, formats: tuple[str, ...], current: str) -> None:
        super().__init__(id="launch")
        self.formats, self.current = formats, current

    def compose(self) -> ComposeResult:
        with Horizontal(id="launch-bar"):
            yield Label("format", classes="field-label")
            yield Select([(f, f) for f in self.formats], value=self.current, compact=True,
                         allow_blank=False, id="launch-format")
            yield Static("ctrl+y copy · ctrl+e export", id="launch-hint", classes="-optional")
        yield steady(TextArea("", id="launch-command", read_only=True, soft_wrap=False,
                              show_line_numbers=False))

    def on_resize(self) -> None:
        self.set_class(self.size.width < 60, "-narrow")

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        if event.value is not Select.BLANK and event.value != self.current:
            self.current = str(event.value)
            self.post_message(self.FormatChanged(self.current))

    def show(self, text: str) -> None:
        area = self.query_one("#launch-command", TextArea)
        if area.text != text:
            area.load_text(text)
