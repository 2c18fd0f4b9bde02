"""Modal screens: help, file paths (open, save as, export) and questions. Each returns its
answer with `dismiss`; the planner awaits them with `push_screen_wait` in a worker."""

from __future__ import annotations

from collections.abc import Callable
from importlib import resources
from pathlib import Path

from rich.console import RenderableType
from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal, Vertical, VerticalScroll
from textual.screen import ModalScreen
from textual.widgets import Button, Input, Label, Static

from ..model.basics.tomlfile import SaveError, writable_target
from ..model.core import figures as F
from .textinput import TextInput

# The line of help.md the results figures' list replaces.
FIGURES_MARKER = "<!-- figures: the app's results figures, from model/core/figures.py -->"


def figures_markdown() -> str:
    """The results figures as help lines, from the registry: one per name, its meanings
    joined (a figure the results show under the name of another, the whole job's days as
    "time", is described beside it)."""
    meanings: dict[str, list[str]] = {}
    for f in (*F.shown_in(F.View.RESULTS), *F.shown_in(F.View.RESULTS, "acceptance")):
        meanings.setdefault(f.name, []).append(f.meaning)
    return "\n".join(f"- **{name}**: {'; or '.join(said)}." for name, said in meanings.items())


def help_page() -> str:
    """help.md with the results figures' list in place of its marker."""
    text = resources.files(__package__).joinpath("help.md").read_text(encoding="utf-8")
    return text.replace(FIGURES_MARKER, figures_markdown(), 1)


def help_markdown(text: str, heading_color: str) -> RenderableType:
    """The help page as one Rich renderable, its headings in the theme's accent colour.
    Rich's Markdown in one Static: Textual's Markdown widget mounts a widget per block
    (about 0.8 s of CPU to open this page on a 2-core machine; this: about 0.2 s)."""
    from rich.markdown import Heading, Markdown  # markdown-it loads only when help opens

    class AccentHeading(Heading):
        def __init__(self, tag: str) -> None:
            super().__init__(tag)
            self.style_name = f"bold {heading_color}"

    class HelpMarkdown(Markdown):
        elements = {**Markdown.elements, "heading_open": AccentHeading}

    return HelpMarkdown(text, hyperlinks=False)


class HelpScreen(ModalScreen[None]):
    """What every number means and what the model assumes."""

    BINDINGS = [Binding("escape,f1,q", "close", "Close", id="help-close")]

    def compose(self) -> ComposeResult:
        text = help_page()
        with Vertical(id="help-box"):
            with VerticalScroll(id="help-scroll"):
                yield Static(
                    help_markdown(text, self.app.theme_variables["accent"]), id="help-text"
                )
            yield Static("esc: close", id="help-hint")

    def action_close(self) -> None:
        self.dismiss(None)


class PathDialog(ModalScreen[Path | None]):
    """Ask for a file path. `check` returns the reason it refuses a path, or None."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="dialog-cancel")]

    def __init__(
        self,
        title: str,
        action: str,
        initial: str = "",
        check: Callable[[Path], str | None] | None = None,
    ) -> None:
        super().__init__()
        self.title_text, self.action_text, self.initial, self.check = title, action, initial, check

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="path-dialog"):
            yield Label(self.title_text, classes="dialog-title", markup=False)
            yield TextInput(self.initial, placeholder="path/to/plan.toml", id="path-input")
            # A path's brackets are shown as they are, never read as markup.
            yield Static("", id="path-error", classes="dialog-error", markup=False)
            with Horizontal(classes="dialog-buttons"):
                yield Button(self.action_text, variant="primary", id="path-ok")
                yield Button("Cancel", id="path-cancel")

    def on_mount(self) -> None:
        self.query_one("#path-input", Input).focus()

    def _submit(self) -> None:
        text = self.query_one("#path-input", Input).value.strip()
        error = self.query_one("#path-error", Static)
        if not text:
            error.update("✗ enter a file path")
            return
        path = Path(text).expanduser()
        problem = self.check(path) if self.check else None
        if problem:
            error.update(f"✗ {problem}")
            return
        self.dismiss(path)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        event.stop()
        self._submit()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        if event.button.id == "path-ok":
            self._submit()
        else:
            self.dismiss(None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ConfirmDialog(ModalScreen[str]):
    """A question with a few answers; escape answers 'cancel'."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="confirm-cancel")]

    def __init__(self, question: str, answers: list[tuple[str, str, str]]) -> None:
        """answers: (label, value, variant) for each button, the first one focused."""
        super().__init__()
        self.question, self.answers = question, answers

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog", id="confirm-dialog"):
            yield Label(self.question, classes="dialog-title", markup=False)
            with Horizontal(classes="dialog-buttons"):
                for label, value, variant in self.answers:
                    yield Button(label, variant=variant, id=f"answer-{value}")  # type: ignore[arg-type]

    def on_mount(self) -> None:
        self.query(Button).first().focus()

    def on_button_pressed(self, event: Button.Pressed) -> None:
        event.stop()
        self.dismiss(str(event.button.id).removeprefix("answer-"))

    def action_cancel(self) -> None:
        self.dismiss("cancel")


class StartOffer(ConfirmDialog):
    """A question asked at start that does not stand in the way: a key the screen below
    binds (f7 the charts, f5 search, ctrl+s, ...) leaves it unanswered, as escape does, and
    then acts there. The recovery offer is one: an app ended by SIGHUP (tmux closing its
    window) leaves a recovery file, and the next start's offer took every key, so f7 in
    tmux did nothing (issue 33)."""

    def on_key(self, event: events.Key) -> None:
        below = self.app.screen_stack[0]
        # Its own keys and the app's (help, theme: they work over it) stay as they are.
        own = (self._bindings.key_to_bindings, self.app._bindings.key_to_bindings)
        if below is self or any(event.key in keys for keys in own):
            return
        if not below._bindings.key_to_bindings.get(event.key):
            return
        event.stop()
        event.prevent_default()
        self.dismiss("cancel")
        # Once this screen is gone, the key goes through the screen below as typed (its
        # check_action, priority and focus rules included).
        self.app.call_after_refresh(self.app.simulate_key, event.key)


def overwrite_question(path: Path) -> ConfirmDialog:
    return ConfirmDialog(
        f"{path} exists. Overwrite it?",
        [("Overwrite", "overwrite", "error"), ("Cancel", "cancel", "default")],
    )


def unsaved_question() -> ConfirmDialog:
    return ConfirmDialog(
        "This plan has unsaved changes.",
        [
            ("Save", "save", "primary"),
            ("Discard", "discard", "error"),
            ("Cancel", "cancel", "default"),
        ],
    )


def writable(path: Path) -> str | None:
    """Why path cannot be written to (None when it can): the check every save makes."""
    try:
        writable_target(path)
    except SaveError as err:
        return str(err)
    return None


def not_written(path: Path, err: OSError) -> str:
    """Why a file was not written, in one line naming it (a SaveError names it already)."""
    return str(err) if isinstance(err, SaveError) else f"{path}: {err.strerror or err}"
