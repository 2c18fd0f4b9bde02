"""The interactive planner app: loads the plan, opens the planner screen, owns the keys
that work everywhere (help, theme, quit) and the command palette. Everything about the plan
lives in tui.state (the planning state) and tui.planner (its screen and panels)."""

from __future__ import annotations

import gc
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import Any

from textual import events
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.screen import Screen

from .config import load_catalog, user_template
from .dialogs import ConfirmDialog, HelpScreen, PathDialog
from .planner.inputs import FieldInput
from .planner.screen import PlannerScreen
from .state import Planner

# An edit typed after this much quiet is recomputed at once; edits typed closer together
# than this (a burst) wait for its end and cost one more projection.
DEBOUNCE_S = 0.02
# Keys that change an Input's text besides printable ones (Textual's Input bindings).
EDIT_KEYS = frozenset({"backspace", "delete", "ctrl+h", "ctrl+d", "ctrl+u", "ctrl+k", "ctrl+w",
                       "ctrl+x", "ctrl+v"})


class PlannerApp(App[None]):
    """`PlannerApp()` opens the built-in plan; `PlannerApp(path)` opens a plan file (a bad
    file raises PlanError here, before any screen opens)."""

    CSS_PATH = "app.tcss"
    TITLE = "dflash-plan"
    # Below 100 columns the inputs narrow and the Launch tab takes the whole width; below
    # 72 they narrow again (the figures keep room for a word); from 134 the projection
    # shows in two columns.
    HORIZONTAL_BREAKPOINTS = [(0, "-tiny"), (72, "-narrow"), (100, "-normal"), (134, "-wide")]
    BINDINGS = [
        Binding("f1", "help", "Help", id="help", show=False,
                tooltip="What each number means, the keys"),
        Binding("question_mark", "help", "Help", id="help-question", show=False),
        Binding("ctrl+t", "toggle_theme", "Light/dark", id="toggle-theme", show=False,
                tooltip="Switch between the dark and the light theme"),
        Binding("ctrl+q", "quit", "Quit", id="quit", priority=True,
                tooltip="Quit (asks first when there are unsaved changes)"),
    ]

    def __init__(self, plan_path: Path | str | None = None, *, hardware: list[Path] | None = None,
                 debounce_s: float = DEBOUNCE_S) -> None:
        super().__init__()
        # What the imports built lives as long as the process: frozen out of the cyclic
        # collector's walks from here (on_load says why the collector then waits).
        gc.freeze()
        self._frozen = True                 # unfrozen when the app ends
        self._gc_paused = False             # on_load to the first frame (on_load says why)
        path = Path(plan_path) if plan_path is not None else None
        try:
            self.state = Planner(load_catalog(hardware), path, template=user_template())
        except BaseException:
            gc.unfreeze()
            raise
        self.debounce_s = debounce_s

    def get_default_screen(self) -> Screen[None]:
        return PlannerScreen(self.state, self.debounce_s)

    async def on_event(self, event: events.Event) -> None:
        # A keystroke that edits a number field: its echo waits for its figures (one
        # frame for both; PlannerScreen.hold_frames says why).
        if (isinstance(event, events.Key) and (event.is_printable or event.key in EDIT_KEYS)
                and isinstance(self.focused, FieldInput) and self.screen is self.planner):
            self.planner.hold_frames()
        await super().on_event(event)

    def on_load(self) -> None:
        # Start-up builds every widget, style and strip at once: the cyclic collector
        # would walk them (and every imported module) twice before the first frame
        # settles, a fifth of the start-up (scripts/bench_app.py). It is paused until
        # then; what exists by then lives as long as the app, so it is frozen out of
        # later collections (a keystroke never waits for a walk of it) until the app ends.
        self._gc_paused = gc.isenabled()
        gc.disable()

    def on_mount(self) -> None:
        self.theme = "textual-dark"
        self.call_after_refresh(self._started)

    def _started(self) -> None:
        if self._gc_paused:
            self._gc_paused = False
            gc.freeze()
            gc.enable()

    def on_unmount(self) -> None:
        self._started()                 # an app closed before its first frame
        if self._frozen:
            self._frozen = False
            gc.unfreeze()

    @property
    def planner(self) -> PlannerScreen:
        screen = self.screen_stack[0]
        assert isinstance(screen, PlannerScreen)
        return screen

    def action_help(self) -> None:
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_toggle_theme(self) -> None:
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"

    async def action_quit(self) -> None:
        if isinstance(self.screen, (PathDialog, ConfirmDialog)):
            self.bell()                 # answer the open question first
            return
        while len(self.screen_stack) > 1:
            self.pop_screen()
        self.planner.quit()

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """The palette: Textual's own commands, then every action of the planner and the
        app, titled as in the footer, with the binding's tooltip as help."""
        yield from super().get_system_commands(screen)
        for owner, bindings in ((self.planner, PlannerScreen.BINDINGS), (self, self.BINDINGS)):
            for binding in bindings:
                if isinstance(binding, Binding) and binding.tooltip and binding.id != "quit":
                    yield SystemCommand(binding.description, binding.tooltip,
                                        partial(owner.run_action, binding.action))
