"""The inputs: every editable figure of the plan, in sections. One grid (label, control,
unit), an error row under a field when it has one. The panel shows the state's `View`
(bound with data_bind) and posts what the user types as FieldEdited/FieldInvalid."""

from __future__ import annotations

from typing import Any

from rich.cells import set_cell_size
from textual import events
from textual.app import ComposeResult
from textual.containers import VerticalScroll
from textual.content import Content
from textual.reactive import reactive
from textual.widget import AwaitMount, Widget
from textual.widgets import Input, Static

from ..fields import SECTIONS, FieldError, FieldSpec, parse, show
from ..picker import Picker
from ..state import View
from ..textinput import TextInput
from .messages import FieldEdited, FieldInvalid

# Keys that move GPUs between the roles anywhere in the planner, even in a number field.
SPLIT_KEYS = frozenset({"less_than_sign", "greater_than_sign"})

# What the pools are called, and the GPUs field's unit, by topology: colocated, the GPUs
# field is the plan's GPUs, each running a target shard and a drafter rank (tui/state.py).
POOL_TITLES = {
    False: {"target.gpu": "Target pool", "drafter.gpu": "Drafter pool"},
    True: {"target.gpu": "Colocated pool", "drafter.gpu": "Drafter (same GPUs)"},
}
GPUS_UNIT = {False: "", True: "both roles"}


class FieldInput(TextInput):
    """A field's text input. `<` and `>` are not typed into it: they move a GPU (or say
    why not); nor is `?` into a number, where it opens help as everywhere else."""

    def __init__(self, spec: FieldSpec, value: str) -> None:
        # No validation by the Input: the panel parses every change (on_input_changed) and
        # the row marks a bad value (-problem); the Input's own would parse it twice and
        # restyle every field once more at start-up (its -valid class).
        super().__init__(
            value,
            id=spec.widget_id,
            compact=True,
            select_on_focus=True,
            classes="field-control" + (" -number" if spec.numeric else ""),
            validate_on=[],
        )
        self.spec = spec

    def check_consume_key(self, key: str, character: str | None) -> bool:
        return key not in SPLIT_KEYS and super().check_consume_key(key, character)

    def _on_paste(self, event: events.Paste) -> None:
        # A number field holds one value: a paste replaces it whole (Input's own handler
        # inserts the first line at the cursor, making a number nobody pasted), and
        # several lines are shown as pasted, so the field says why they are not a number.
        if self.spec.numeric:
            event.prevent_default()
            event.stop()
            self.value = " ".join(line.strip() for line in event.text.splitlines() if line.strip())
            self.cursor_position = len(self.value)

    async def _on_key(self, event: events.Key) -> None:
        if event.key in SPLIT_KEYS:  # its binding is disabled (colocated): the screen says why
            event.prevent_default()
            return
        if self.spec.numeric and event.key == "question_mark":
            event.prevent_default()  # not typed (Input's handler): help, as elsewhere
            event.stop()
            await self.run_action("app.help")


class FieldSelect(Picker):
    """A GPU, model or choice picker."""

    def __init__(self, spec: FieldSpec, options: list[tuple[str, str]], value: Any) -> None:
        # The reference GPU may be unset (prices then come from the catalog).
        optional = spec.key == "cost.reference_gpu"
        super().__init__(
            options,
            value,
            id=spec.widget_id,
            allow_blank=optional,
            prompt="catalog prices" if optional else "choose",
            classes="field-control -span",
        )
        self.spec = spec


LABEL_WIDTH = 11
CONTROL_WIDTH = 14  # a number's box; NARROW below 100 columns, TINY below 72;
NARROW_CONTROL_WIDTH = 11  # text spans the row
TINY_CONTROL_WIDTH = 9
CONTROL_WIDTHS = {"-narrow": NARROW_CONTROL_WIDTH, "-tiny": TINY_CONTROL_WIDTH}
FIRST_FOCUS = "target.count"  # what a plan is first changed by: focused at start-up


class FieldRow(Widget):
    """One field: its label, its control and its unit, and the title of its section
    above it when it is the first of one. A number or text field is drawn by the row
    itself until it is focused, which opens its editor (a FieldInput) in place: a Textual
    Input costs about twice a plain widget at start-up, and sixteen of them were a quarter
    of the planner's. Pickers are the row's child from the start. Its error, when it has
    one, is mounted on the row below."""

    SCOPED_CSS = False  # the narrow rule starts at the screen
    DEFAULT_CSS = f"""
    FieldRow {{
        layout: horizontal;
        height: 1;
    }}
    FieldRow > .field-control {{
        margin-left: {LABEL_WIDTH};
        width: {CONTROL_WIDTH};
    }}
    Screen.-narrow FieldRow > .field-control {{
        width: {NARROW_CONTROL_WIDTH};
    }}
    Screen.-tiny FieldRow > .field-control {{
        width: {TINY_CONTROL_WIDTH};
    }}
    FieldRow > .field-control.-span, Screen.-narrow FieldRow > .field-control.-span,
    Screen.-tiny FieldRow > .field-control.-span {{
        width: 1fr;
    }}
    FieldRow.-titled {{
        height: 3;                  /* a blank line, the section's title, the field */
    }}
    FieldRow.-titled > .field-control {{
        margin: 2 0 0 {LABEL_WIDTH};
    }}
    """

    def __init__(
        self, spec: FieldSpec, options: list[tuple[str, str]] | None, value: Any, title: str = ""
    ) -> None:
        super().__init__(
            id=f"row-{spec.widget_id}", classes="field-row -titled" if title else "field-row"
        )
        self.spec = spec
        self.title = title
        self.text = show(value)  # what the control shows, typed or set
        self.placeholder = ""
        self.control: FieldInput | FieldSelect | None = (
            FieldSelect(spec, options, value)
            if options is not None
            else self._editor()
            if spec.key == FIRST_FOCUS
            else None
        )
        self.can_focus = self.control is None  # focused, it opens its editor
        self.unit = spec.unit
        self.error: Static | None = None
        self.error_text: str | None = None

    def _editor(self) -> FieldInput:
        editor = FieldInput(self.spec, self.text).set_class(self.spec.kind == "text", "-span")
        editor.placeholder = self.placeholder
        return editor

    def compose(self) -> ComposeResult:
        if self.control is not None:
            yield self.control

    @property
    def editor(self) -> FieldInput | None:
        return self.control if isinstance(self.control, FieldInput) else None

    def open_editor(self) -> AwaitMount | None:
        """Mount the field's text input in place (the first time it is needed); what to
        await for it to be mounted."""
        if self.control is not None:
            return None
        editor = self.control = self._editor()
        editor.set_class(bool(self.error_text), "-problem")
        self.can_focus = False  # the editor takes the focus from now on
        return self.mount(editor)

    async def on_focus(self) -> None:
        mounting = self.open_editor()
        if mounting is not None:
            await mounting
        if self.editor is not None and self.screen.focused is self:  # still the row's
            self.screen.set_focus(self.editor)

    def on_key(self, event: events.Key) -> None:
        """A key typed before the editor took the focus (right after a tab) is its."""
        if self.editor is not None and event.is_printable and event.key not in SPLIT_KEYS:
            event.stop()
            event.prevent_default()
            self.editor.post_message(events.Key(event.key, event.character))

    def show_text(self, text: str) -> None:
        """Show `text` (a value set from outside, not typed)."""
        self.text = text
        editor = self.editor
        if editor is None:
            self.refresh()
        elif editor.value != text:
            with editor.prevent(Input.Changed):
                editor.value = text

    def show_placeholder(self, placeholder: str) -> None:
        if placeholder != self.placeholder:
            self.placeholder = placeholder
            if self.editor is not None:
                self.editor.placeholder = placeholder
            elif not self.text:
                self.refresh()

    def _box_width(self) -> int:
        if self.control is not None:
            return self.control.outer_size.width
        if self.spec.kind == "text":
            return max(self.size.width - LABEL_WIDTH, 0)
        return next(
            (width for name, width in CONTROL_WIDTHS.items() if self.screen.has_class(name)),
            CONTROL_WIDTH,
        )

    def render(self) -> Content:
        """The section's title, the label, the value (until the editor opens), then the
        unit."""
        width = self._box_width()
        parts: list[tuple[str, str] | str] = [
            (self.spec.label, "$foreground-muted"),
            " " * (LABEL_WIDTH - len(self.spec.label)),
        ]
        if self.control is None:
            box = "on $error 30%" if self.error_text else "on $surface"
            shown = self.text or self.placeholder
            style = "$foreground" if self.text else "$foreground-disabled"  # as Input's
            parts.append((set_cell_size(shown, width), f"{style} {box}"))  # wide glyphs too
        else:
            parts.append(" " * width)
        parts += [" ", (self.unit, "$foreground-muted")]
        line = Content.assemble(*parts)
        if self.title:
            return Content.assemble("\n", (self.title, "bold $accent"), "\n", line)
        return line

    def set_title(self, title: str) -> None:
        """A new title for the row's section (the row is a section's first)."""
        if title != self.title:
            self.title = title
            self.refresh()

    def set_unit(self, unit: str) -> None:
        if unit != self.unit:
            self.unit = unit
            self.refresh()

    def show_error(self, reason: str | None) -> None:
        """Show (or clear) why the field's value is not accepted."""
        if reason == self.error_text:
            return
        self.error_text = reason
        if self.control is not None:
            self.control.set_class(bool(reason), "-problem")
        else:
            self.refresh()
        if self.error is None:
            self.error = Static("", id=f"error-{self.spec.widget_id}", classes="field-error")
            self.parent.mount(self.error, after=self)  # type: ignore[union-attr]
        self.error.update(f"✗ {reason}" if reason else "")
        self.error.display = bool(reason) and self.display

    def show_row(self, shown: bool) -> None:
        if self.display != shown:
            self.display = shown
            if self.error is not None:
                self.error.display = shown and bool(self.error_text)


class InputsPanel(VerticalScroll):
    """The plan's inputs, bound to the planner's view."""

    view: reactive[View | None] = reactive(None, init=False, repaint=False)

    def __init__(self, first: View, gpu_options: list[tuple[str, str]]) -> None:
        super().__init__(id="inputs")
        self.first, self.gpu_options = first, gpu_options
        self._generation = first.generation
        self._models = first.model_options
        self.rows: dict[str, FieldRow] = {}
        self._units: dict[str, str] = {}
        self._colocated: bool | None = None  # the topology the rows show

    def compose(self) -> ComposeResult:
        for title, fields in SECTIONS:
            for index, spec in enumerate(fields):
                options = (
                    self.gpu_options
                    if spec.kind == "gpu"
                    else list(self._models)
                    if spec.kind == "model"
                    else spec.options
                    if spec.kind in ("choice", "switch")
                    else None
                )
                row = self.rows[spec.key] = FieldRow(
                    spec, options, self.first.values.get(spec.key), title if index == 0 else ""
                )
                yield row
        # The first view's rows and units as a later view's are shown (before the rows are
        # mounted): a start showed the drafter's price rows of a one-GPU plan, and the
        # measured rows without their GPU, until the first edit.
        self._show_rows(self.first)

    def on_mount(self) -> None:
        for key, row in self.rows.items():
            row.show_error(self.first.errors.get(key))
        self.rows["name"].show_placeholder(self.first.name)

    def watch_view(self, view: View | None) -> None:
        if view is not None and view is not self.first:
            force = view.generation != self._generation
            self._generation = view.generation
            self._show(view, force)

    def _show(self, view: View, force: bool) -> None:
        """Show the view's values and errors. A field keeps its text while the user is
        typing into it, and while it holds text that is not a value (until a plan is
        opened, which replaces everything)."""
        if view.model_options != self._models:
            self._models = view.model_options
            model = self.rows["workload.target_model"].control
            assert isinstance(model, FieldSelect)
            with model.prevent(Picker.Changed):
                model.set_options(list(self._models))
        for key, row in self.rows.items():
            control, value = row.control, view.values.get(key)
            if isinstance(control, FieldSelect):
                if value != control.value and (value is not None or control.allow_blank):
                    with control.prevent(Picker.Changed):
                        control.value = value
            elif force or not (
                key in view.unparsed
                or (control is not None and control.has_focus and key == view.source)
            ):
                text = show(value)
                if row.text != text or (control is not None and control.value != text):
                    row.show_text(text)
            row.show_error(view.errors.get(key))
        # A name derived from the plan shows as the name field's placeholder: it changes
        # with every count, and a placeholder repaints without a layout pass. It is set
        # after the figures are painted, for the reason the title bar is (screen.py).
        self.call_after_refresh(self._show_name, view.name)
        self._show_rows(view)

    def _show_rows(self, view: View) -> None:
        """The rows the view has (a drafter price only when its GPU is not the target's),
        and the measured rows' GPU."""
        for role in ("target", "drafter"):
            if self._units.get(role) != view.gpu_names[role]:
                self._units[role] = view.gpu_names[role]
                self.rows[f"measured.{role}"].set_unit(view.gpu_names[role])
        for key in ("price.drafter.ratio", "price.drafter.usd"):
            self.rows[key].show_row(not view.same_gpu)
        if self._colocated != view.colocated:
            self._colocated = colocated = view.colocated
            for key, title in POOL_TITLES[colocated].items():
                self.rows[key].set_title(title)
            self.rows["target.count"].set_unit(GPUS_UNIT[colocated])
            self.rows["drafter.count"].show_row(not colocated)  # its GPUs are the targets'

    def _show_name(self, name: str) -> None:
        self.rows["name"].show_placeholder(name)

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        spec = getattr(event.input, "spec", None)
        if spec is None:
            return
        row = self.rows[spec.key]
        if event.value == row.text:  # the text it was given, not an edit
            return
        row.text = event.value
        try:
            value = parse(spec, event.value)
        except FieldError as err:
            self.post_message(FieldInvalid(spec.key, str(err)))
            return
        self.post_message(FieldEdited(spec.key, value, event.time))

    def on_picker_changed(self, event: Picker.Changed) -> None:
        event.stop()
        spec = getattr(event.picker, "spec", None)
        if spec is not None and (event.value is not None or event.picker.allow_blank):
            switch = spec.kind == "switch" and event.value is not None
            value = parse(spec, event.value or "") if switch else event.value
            self.post_message(FieldEdited(spec.key, value))
