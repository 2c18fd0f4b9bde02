"""The Launch tab: the launch script of the current plan in the chosen format, and the
command template of the `template` format. Its widgets are built the first time the tab
is shown, and the script is written off the UI thread (the screen's worker) only while
the tab is shown."""

from __future__ import annotations

import textwrap

from textual.containers import Horizontal, Vertical
from textual.reactive import reactive
from textual.widgets import Input, Label, Static

from ...model.basics.terminal import terminal_safe
from ..fields import TEMPLATE, parse
from ..picker import Picker
from ..state import View
from ..textinput import TextInput
from .messages import FieldEdited

# Beyond this many characters the tab shows the head of the script (copy and export
# always take the whole of it): a TextArea loads text on the UI thread.
SHOWN_CHARS = 200_000


def shown_text(text: str) -> str:
    """The script as the box draws it: its head, and terminal-safe (a path in a shell word
    holds the user's bytes exactly, ESC included; copy and export take it as it is)."""
    text = terminal_safe(text, keep="\n\t")
    if len(text) <= SHOWN_CHARS:
        return text
    head = text[:SHOWN_CHARS].rsplit("\n", 1)[0]
    rest = text.count("\n") - head.count("\n")
    return f"{head}\n# ... {rest:,} more lines: ctrl+y copies and ctrl+e exports all of it\n"


# Narrower than this, comment lines are left whole (the box scrolls sideways).
MIN_WRAP_WIDTH = 20


def wrap_comments(text: str, width: int) -> str:
    """The script with every comment line wider than `width` (a line starting with '#',
    not the '#!' line) wrapped at it, each piece a comment of its own, the continuations
    indented: the header (the plan, its projection, the notes, hundreds of characters a
    line) reads without scrolling sideways. Only the box shows it wrapped: ctrl+y and
    ctrl+e take the script as written."""
    if width < MIN_WRAP_WIDTH:
        return text
    lines = []
    for line in text.split("\n"):
        if len(line) <= width or not line.startswith("#") or line.startswith("#!"):
            lines.append(line)
            continue
        body = line[1:]
        indent = "#" + body[: len(body) - len(body.lstrip())]
        pieces = textwrap.wrap(
            body.strip(),
            width,
            initial_indent=indent,
            subsequent_indent=indent + "  ",
            break_on_hyphens=False,
        )
        lines += pieces or [line]
    return "\n".join(lines)


class LaunchPanel(Vertical):
    """Format picker, template input (template format only) and the script."""

    view: reactive[View | None] = reactive(None, init=False, repaint=False)

    def __init__(self) -> None:
        super().__init__(id="launch")
        self.built = False
        self.script = ""  # the script as written (the box shows its comments wrapped)

    def build(self, view: View) -> None:
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
        template.display = view.takes_template
        self.mount_all(
            [
                Horizontal(
                    Label("format", classes="field-label"),
                    Picker(
                        [(f, f) for f in view.launch_formats],
                        view.launch_format,
                        id="launch-format",
                    ),
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
        self.query_one("#template-bar").display = view.takes_template
        field = self.query_one("#launch-template", Input)
        text = view.values.get(TEMPLATE.key) or ""
        if not field.has_focus and field.value != text:
            with field.prevent(Input.Changed):
                field.value = text

    def show_text(self, text: str) -> None:
        self.script = text
        self._show_script()

    def on_resize(self) -> None:
        if self.built and self.script:
            self._show_script()  # its comments wrapped at the new width

    def _show_script(self) -> None:
        from textual.widgets import TextArea

        area = self.query_one("#launch-command", TextArea)
        # The box's text width, less its vertical scrollbar (a script is taller than it).
        width = area.content_region.width - area.styles.scrollbar_size_vertical
        text = wrap_comments(shown_text(self.script), width)
        if area.text != text:
            area.load_text(text)

    def on_picker_changed(self, event: Picker.Changed) -> None:
        event.stop()
        if event.value is not None:
            self.post_message(FieldEdited("launch.format", event.value))

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.post_message(FieldEdited(TEMPLATE.key, parse(TEMPLATE, event.value)))
