"""The interactive planner app: loads the plan, opens the planner screen, owns the keys
that work everywhere (help, theme, quit) and the command palette. Everything about the plan
lives in tui.state (the planning state) and tui.planner (its screen and panels)."""

from __future__ import annotations

import asyncio
import gc
import signal
from collections.abc import Iterable
from functools import partial
from pathlib import Path
from typing import Any

from textual import events, work
from textual.app import App, SystemCommand
from textual.binding import Binding
from textual.notifications import SeverityLevel
from textual.screen import Screen

from ..model.basics.errors import PlanError
from ..model.basics.terminal import terminal_safe
from .config import load_catalog, user_template
from .dialogs import ConfirmDialog, HelpScreen, PathDialog, StartOffer
from .planner.inputs import FieldInput
from .planner.screen import PlannerScreen
from .recovery import Recovered, discard, find_recoveries, offer, read_recovery, rescue
from .state import Planner

# An edit typed after this much quiet is recomputed at once; edits typed closer together
# than this (a burst) wait for its end and cost one more projection.
DEBOUNCE_S = 0.02
# Keys that change an Input's text besides printable ones (Textual's Input bindings).
EDIT_KEYS = frozenset(
    {"backspace", "delete", "ctrl+h", "ctrl+d", "ctrl+u", "ctrl+k", "ctrl+w", "ctrl+x", "ctrl+v"}
)
# Signals that end the app after the unsaved plan is written to a recovery file; the exit
# status is 128 + the signal's number, as a shell reports a process killed by it.
STOP_SIGNALS = (signal.SIGTERM, signal.SIGHUP)


class PlannerApp(App[None]):
    """`PlannerApp()` opens the built-in plan; `PlannerApp(path)` opens a plan file (a bad
    file raises PlanError here, before any screen opens). An unhandled error, SIGTERM or
    SIGHUP writes the unsaved plan to a recovery file first (tui/recovery.py), and ends
    the app with a non-zero return_code and `recovery_note` to print on stderr; a start
    that finds a recovery file of its plan offers to open it."""

    CSS_PATH = "app.tcss"
    TITLE = "dflash-plan"
    # Below 100 columns the inputs narrow and the Launch tab takes the whole width; below
    # 72 they narrow again (the figures keep room for a word); from 134 the projection
    # shows in two columns.
    HORIZONTAL_BREAKPOINTS = [(0, "-tiny"), (72, "-narrow"), (100, "-normal"), (134, "-wide")]
    BINDINGS = [
        Binding(
            "f1", "help", "Help", id="help", show=False, tooltip="What each number means, the keys"
        ),
        Binding("question_mark", "help", "Help", id="help-question", show=False),
        Binding(
            "ctrl+t",
            "toggle_theme",
            "Light/dark",
            id="toggle-theme",
            show=False,
            tooltip="Switch between the dark and the light theme",
        ),
        Binding(
            "ctrl+q",
            "quit",
            "Quit",
            id="quit",
            priority=True,
            tooltip="Quit (asks first when there are unsaved changes)",
        ),
    ]

    def __init__(
        self,
        plan_path: Path | str | None = None,
        *,
        hardware: list[Path] | None = None,
        debounce_s: float = DEBOUNCE_S,
    ) -> None:
        super().__init__()
        # What the imports built lives as long as the process: frozen out of the cyclic
        # collector's walks from here (on_load says why the collector then waits).
        gc.freeze()
        self._frozen = True  # unfrozen when the app ends
        self._gc_paused = False  # on_load to the first frame (on_load says why)
        path = Path(plan_path) if plan_path is not None else None
        try:
            self.state = Planner(load_catalog(hardware), path, template=user_template())
        except BaseException:
            gc.unfreeze()
            raise
        self.debounce_s = debounce_s
        self.recovery_note: str | None = None  # what the last words on stderr say
        self._signals: list[signal.Signals] = []

    def get_default_screen(self) -> Screen[None]:
        return PlannerScreen(self.state, self.debounce_s)

    async def on_event(self, event: events.Event) -> None:
        # A keystroke that edits a number field: its echo waits for its figures (one
        # frame for both; PlannerScreen.hold_frames says why).
        if (
            isinstance(event, events.Key)
            and (event.is_printable or event.key in EDIT_KEYS)
            and isinstance(self.focused, FieldInput)
            and self.screen is self.planner
        ):
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
        loop = asyncio.get_running_loop()
        for sig in STOP_SIGNALS:
            try:
                loop.add_signal_handler(sig, self._stopped_by, sig)
            except (ValueError, RuntimeError, NotImplementedError):
                continue  # not the main thread, or no signals here
            self._signals.append(sig)
        found = find_recoveries(self.state.path)
        if found:
            self.offer_recovery(found)

    def _started(self) -> None:
        if self._gc_paused:
            self._gc_paused = False
            gc.freeze()
            gc.enable()

    def on_unmount(self) -> None:
        self._started()  # an app closed before its first frame
        loop = asyncio.get_running_loop()
        while self._signals:
            loop.remove_signal_handler(self._signals.pop())
        if self._frozen:
            self._frozen = False
            gc.unfreeze()

    # --- no crash loses work ----------------------------------------------------------

    def recover(self, why: str) -> None:
        """Write the unsaved plan to its recovery file (once), and say where."""
        if self.recovery_note is not None:
            return
        try:
            text = self.state.recovery_text()
        except Exception as err:  # the last words must be said
            self.recovery_note = (
                f"dflash-plan: {why}; the unsaved plan could not be "
                f"written ({type(err).__name__}: {err})"
            )
            return
        self.recovery_note = rescue(text, self.state.path, why)

    def _handle_exception(self, error: Exception) -> None:
        # Textual's hook for an unhandled error in a handler or a worker: it ends the app
        # (return code 1). The plan is written before anything else is torn down.
        self.recover(f"stopped by an error ({type(error).__name__})")
        super()._handle_exception(error)

    def _stopped_by(self, sig: signal.Signals) -> None:
        self.recover(f"stopped by {sig.name}")
        self.exit(return_code=128 + sig.value)

    @work(exclusive=True, group="dialog")
    async def offer_recovery(self, found: list[Recovered]) -> None:
        """Offer the recovered plans, newest first, each in turn (the question lists them
        all): opened, one is this plan's unsaved edits (saving writes this plan's file)
        and the others are kept; discarded, its file is deleted; kept, the next start
        offers it again."""
        found, at = list(found), 0
        while at < len(found):
            answer = await self.push_screen_wait(
                StartOffer(
                    offer(found, at, self.state.path),
                    [
                        ("Open it", "open", "primary"),
                        ("Discard", "discard", "error"),
                        ("Keep", "keep", "default"),
                    ],
                )
            )
            chosen = found[at]
            if answer == "open":
                if self.open_recovery(chosen):
                    return
                at += 1  # not opened: kept, the next one is offered
            elif answer == "discard":
                problem = discard(chosen.path)
                self.notify(
                    problem or f"Discarded {chosen.path}",
                    severity="error" if problem else "information",
                )
                if problem:
                    at += 1
                else:
                    found.pop(at)
            elif answer == "keep":
                self.notify(f"Kept {chosen.path}: the next start offers it again")
                at += 1
            else:  # escape: every one not answered yet is kept
                kept = found[at:]
                self.notify(
                    f"Kept {kept[0].path}: the next start offers it again"
                    if len(kept) == 1
                    else f"Kept {len(kept)} recovered plans: the next start offers them again"
                )
                return

    def open_recovery(self, found: Recovered) -> bool:
        """Open a recovered plan as this plan's unsaved edits, and say in one line what
        could not be restored; False (and why, in a notice) when it cannot be opened."""
        try:
            lost = self.state.restore(read_recovery(found.path), found.path)
        except PlanError as err:
            self.notify(
                str(err), title="Could not open the recovered plan", severity="error", timeout=10
            )
            return False
        self.planner.publish()
        said = f"Opened the plan recovered from {found.path} (not saved yet)"
        if not lost:
            self.notify(said)
            return True
        of = self.state.path.name if self.state.path is not None else "the built-in plan"
        self.notify(
            f"{said}; could not restore {'; '.join(lost)}; {of}'s values are kept for those",
            severity="warning",
            timeout=15,
        )
        return True

    def notify(
        self,
        message: str,
        *,
        title: str = "",
        severity: SeverityLevel = "information",
        timeout: float | None = None,
        markup: bool = False,
    ) -> None:
        """Every notice, the screens' too: shown as it is written (a file name, a table
        name such as [storage] or a plan name is never read as markup) and without
        control characters (what a file holds never reaches the terminal raw)."""
        super().notify(
            terminal_safe(message, keep="\n"),
            title=terminal_safe(title),
            severity=severity,
            timeout=timeout,
            markup=False,
        )

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
            self.bell()  # answer the open question first
            return
        while len(self.screen_stack) > 1:
            self.pop_screen()
        self.planner.quit()

    def get_system_commands(self, screen: Screen[Any]) -> Iterable[SystemCommand]:
        """The palette: Textual's own commands, then every action of the planner and the
        app, titled as in the footer, with the binding's tooltip as help; an action bound
        twice (f1 is the app's help and the planner's footer key for it) once."""
        yield from super().get_system_commands(screen)
        listed: set[tuple[str, str]] = set()
        for owner, bindings in ((self.planner, PlannerScreen.BINDINGS), (self, self.BINDINGS)):
            for binding in bindings:
                if not (isinstance(binding, Binding) and binding.tooltip) or binding.id == "quit":
                    continue
                on_app = owner is self or binding.action.startswith("app.")
                where = "app" if on_app else "planner"
                action = (where, binding.action.removeprefix("app."))
                if action in listed:
                    continue
                listed.add(action)
                yield SystemCommand(
                    binding.description,
                    binding.tooltip,
                    partial(owner.run_action, binding.action),
                )
