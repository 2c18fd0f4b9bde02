"""The Launch tab: the launch script of the current plan in the chosen format, and the
command template of the `template` format. Its widgets are built the first time the tab
is shown, and the script is written off the UI thread (the screen's worker) only while
the tab is shown."""

from __future__ import annotations

from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widgets import Input, Label, Static

from ..fields import TEMPLATE, parse
from ..picker import Picker
from ..state import View
from ..textinput import TextInput
from .messages import FieldEdited

# Beyond this many characters the tab shows the head of the script (copy and export
# always take the whole of it): a TextArea loads text on the UI thread.
SHOWN_CHARS = 200_000


def shown_text(text: str) -> str:
    if len(text) <= SHOWN_CHARS:
        return text
    head = text[:SHOWN_CHARS].rsplit("\n", 1)[0]
    rest = text.count("\n") - head.count("\n")
    return f"{head}\n# ... {rest:,} more lines: ctrl+y copies and ctrl+e exports all of it\n"


class LaunchPanel(Vertical):
    """Format picker, template input (template format only) and the script."""

    view: reactive[View | None] = reactive(None, init=False, repaint=False)

    def __init__(self) -> None:
        super().__init__(id="launch")
        self.built = False

    def build(self, formats: tuple[str, ...], view: View) -> None:
        """Mount the tab's widgets (the first time it is shown)."""
        from textual.widgets import TextArea  # loads only when the tab is shown

        if self.built:
            return
        self.built = True
        template = Horizontal(
            Label("template", classes="field-label"),
            TextInput(
                view.values.get(TEMPLATE.key) or "",
                compact=True,
                id="launch-template",
                placeholder="my-launcher --targets {target_devices} ...",
            ),
            id="template-bar",
        )
        template.display = view.launch_format == "template"
        self.mount_all(
            [
                Horizontal(
                    Label("format", classes="field-label"),
                    Picker([(f, f) for f in formats], view.launch_format, id="launch-format"),
                    Static("ctrl+y copy · ctrl+e export", id="launch-hint"),
                    id="launch-bar",
                ),
                template,
                TextArea(
                    "# writing the launch script…",
                    id="launch-command",
                    read_only=True,
                    soft_wrap=False,
                    show_line_numbers=False,
                ),
            ]
        )

    def watch_view(self, view: View | None) -> None:
        if view is None or not self.built:
            return
        picker = self.query_one("#launch-format", Picker)
        if picker.value != view.launch_format:
            with picker.prevent(Picker.Changed):
                picker.value = view.launch_format
        self._show_template(view)

    def _show_template(self, view: View) -> None:
        self.query_one("#template-bar").display = view.launch_format == "template"
        field = self.query_one("#launch-template", Input)
        text = view.values.get(TEMPLATE.key) or ""
        if not field.has_focus and field.value != text:
            with field.prevent(Input.Changed):
                field.value = text

    def show_text(self, text: str) -> None:
        from textual.widgets import TextArea

        area = self.query_one("#launch-command", TextArea)
        text = shown_text(text)
        if area.text != text:
            area.load_text(text)

    def on_picker_changed(self, event: Picker.Changed) -> None:
        event.stop()
        if event.value is not None:
            self.post_message(FieldEdited("launch.format", event.value))

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.post_message(FieldEdited(TEMPLATE.key, parse(TEMPLATE, event.value)))
