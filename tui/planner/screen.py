"""The planner screen: inputs on the left, the projection (and the launch script) on the
right. It holds the planning state (tui.state.Planner) and one immutable snapshot of it,
`view`, that the panels are bound to; edits come up as messages, long work (balance, the
launch script) runs in workers, dialogs are awaited in workers."""

from __future__ import annotations

import asyncio
import math
from contextlib import AbstractContextManager
from pathlib import Path

from rich.cells import cell_len, set_cell_size
from textual import events, work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.content import Content
from textual.reactive import reactive
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import Static

from ...model.basics.errors import PlanError
from ...model.basics.tomlfile import write_atomic
from ...model.inputs.catalog import Catalog
from ...model.inputs.plan import Plan
from ..dialogs import PathDialog, not_written, overwrite_question, unsaved_question, writable
from ..fields import DRAFTER_LABELS, FIELDS
from ..footer import KeysFooter
from ..state import Opened, Planner, View
from ..tabs import TabbedView
from .inputs import FIRST_FOCUS, InputsPanel
from .launch import LaunchPanel
from .messages import FieldEdited, FieldInvalid
from .results import ResultsPanel

LaunchKey = tuple[Plan, Catalog, str, "str | None"]

# What moves GPUs between the roles: disabled colocated, where every GPU runs both.
SPLIT_ACTIONS = frozenset({"to_drafter", "to_target", "balance"})

# The longest a keystroke holds the screen's frames while its figures are computed (a
# projection takes a few milliseconds; this only bounds a keystroke that changes nothing).
HOLD_S = 0.05


def write_launch(plan: Plan, catalog: Catalog, fmt: str, template: str | None) -> str:
    """The launch script's text, or a comment saying why there is none. Runs in a thread."""
    from ...model.launch import generate  # YAML and the formats load on first use

    try:
        return str(generate(plan, catalog, fmt, template=template).text)
    except PlanError as err:
        return f"# cannot write a {fmt} launch for this plan:\n# {err}\n"


class TitleBar(Static):
    """The top line: the plan's name and its file. (Textual's Header lays the whole screen
    out again whenever its title changes, and the name changes with every count.)"""

    DEFAULT_CSS = """
    TitleBar {
        dock: top;
        height: 1;
        width: 1fr;
        background: $panel;
        content-align: center middle;
        text-wrap: nowrap;
        text-overflow: ellipsis;
    }
    """

    def __init__(self, view: View) -> None:
        self._shown = (view.shown_name, view.title)
        super().__init__(self._content(0), id="title-bar")

    def _content(self, width: int | None = None) -> Content:
        """The name, cut to leave the file's name and its marker whole at this width."""
        width = self.size.width if width is None else width
        name, title = self._shown
        suffix = f" — {title}" if title else ""
        room = width - 2 - cell_len(suffix)
        if width and cell_len(name) > room:
            name = set_cell_size(name, max(room - 1, 0)) + "…"
        parts: list[str | tuple[str, str]] = [("◆ ", "$accent"), name]
        if suffix:
            parts.append((suffix, "$foreground-muted"))
        return Content.assemble(*parts)

    def show(self, view: View) -> None:
        if (view.shown_name, view.title) != self._shown:
            self._shown = (view.shown_name, view.title)
            self.update(self._content(), layout=False)  # one line, always

    def on_resize(self) -> None:
        self.update(self._content(), layout=False)


class PlannerScreen(Screen[None]):
    """One plan, edited live; every figure comes from the model."""

    BINDINGS = [
        Binding(
            "f1",
            "app.help",
            "Help",
            id="help-footer",  # first in the footer
            tooltip="What each number means, the keys",
        ),
        Binding(
            "ctrl+s",
            "save",
            "Save",
            id="save",
            tooltip="Save the plan to its file (asks for one the first time)",
        ),
        Binding(
            "ctrl+o",
            "open",
            "Open",
            id="open",
            show=False,
            tooltip="Open a plan file; it becomes the baseline",
        ),
        Binding(
            "less_than_sign",
            "to_drafter",
            "GPU→drafter",
            key_display="<",
            id="split-to-drafter",
            priority=True,
            tooltip="Move one GPU (one TP replica) from the targets to the drafters",
        ),
        Binding(
            "greater_than_sign",
            "to_target",
            "GPU→target",
            key_display=">",
            id="split-to-target",
            priority=True,
            tooltip="Move one GPU (one TP replica) from the drafters to the targets",
        ),
        Binding(
            "f8",
            "topology",
            "Topology",
            id="topology",
            tooltip="Switch between disaggregated (target and drafter GPUs apart) and "
            "colocated (every GPU runs both)",
        ),
        Binding(
            "f9",
            "drafter",
            "Drafter",
            id="drafter",
            show=False,
            tooltip="The next drafter family: DFlash, DFlash2, DSpark, EAGLE-3",
        ),
        Binding(
            "ctrl+b",
            "balance",
            "Balance",
            id="balance",
            tooltip="Split the same GPUs between the roles for the highest throughput",
        ),
        Binding(
            "f2",
            "save_as",
            "Save as",
            id="save-as",
            show=False,
            tooltip="Save the plan to a new file",
        ),
        Binding(
            "ctrl+n",
            "new",
            "New",
            id="new",
            show=False,
            tooltip="Start again from the built-in plan (the measured run)",
        ),
        Binding(
            "ctrl+l",
            "pin_baseline",
            "Pin baseline",
            id="pin-baseline",
            show=False,
            tooltip="Compare against the current plan from now on",
        ),
        Binding(
            "f3",
            "show_tab('results')",
            "Projection",
            id="tab-results",
            show=False,
            tooltip="Show the projection",
        ),
        Binding(
            "f4",
            "show_tab('launch')",
            "Launch",
            id="tab-launch",
            show=False,
            tooltip="Show the launch script of the plan",
        ),
        # priority (as ctrl+e, f6, f7): the launch script's text area would take ctrl+y
        # as "redo" (of nothing: it is read-only), f6 and f7 as "select line" and "select
        # all", and the keys would do nothing in the box where they are wanted most.
        Binding(
            "ctrl+y",
            "copy_launch",
            "Copy launch",
            id="copy-launch",
            show=False,
            priority=True,
            tooltip="Copy the launch script to the clipboard",
        ),
        Binding(
            "f5",
            "search",
            "Search",
            id="search",
            show=False,
            tooltip="Search every GPU type and split for the cheapest or fastest plan",
        ),
        Binding(
            "f6",
            "scenarios",
            "Compare",
            id="scenarios",
            show=False,
            priority=True,
            tooltip="The pinned scenarios side by side against the baseline",
        ),
        Binding(
            "f7",
            "charts",
            "Charts",
            id="charts",
            show=False,
            priority=True,
            tooltip="The split curve and what moves days and cost (tornado)",
        ),
        # priority: a text input would take ctrl+e as "end of line"
        Binding(
            "ctrl+e",
            "export_launch",
            "Export launch",
            id="export-launch",
            show=False,
            priority=True,
            tooltip="Write the launch script to a file",
        ),
    ]

    AUTO_FOCUS = f"#{FIELDS[FIRST_FOCUS].widget_id}"  # what a plan is first changed by

    view: reactive[View] = reactive(
        None,  # type: ignore[arg-type]
        init=False,
        always_update=True,
        repaint=False,
    )

    def __init__(self, state: Planner, debounce_s: float) -> None:
        super().__init__()
        self.state = state
        self.debounce_s = debounce_s
        self.recompute_count = 0
        self._last_edit_at = -math.inf  # when the last edit was typed
        self._timer: Timer | None = None
        self._hold: AbstractContextManager[None] | None = None  # frames held (hold_frames)
        self._hold_timer: Timer | None = None
        self._launch: tuple[LaunchKey, str] | None = None
        self.set_reactive(PlannerScreen.view, state.view())
        self._colocated = self.view.colocated  # the topology the keys were checked for

    def compose(self) -> ComposeResult:
        # The breakpoint class for the size the app starts at, before anything is styled:
        # set on the first resize instead, it would restyle every widget once more.
        breakpoints = self.app.HORIZONTAL_BREAKPOINTS or []
        self.add_class(*self._get_breakpoint_classes(self.app.size.width, breakpoints))
        yield TitleBar(self.view)
        gpus = [(gpu.name, key) for key, gpu in self.state.catalog.gpus.items()]
        yield InputsPanel(self.view, gpus).data_bind(PlannerScreen.view)
        yield TabbedView(
            ("Projection", ResultsPanel(self.view).data_bind(PlannerScreen.view)),
            ("Launch", LaunchPanel().data_bind(PlannerScreen.view)),
            id="tabs",
        )
        yield KeysFooter()

    def on_resize(self, event: events.Resize) -> None:
        # Textual forwards the size it starts at to the screen up to three times after the
        # screen has been laid out at that size (once from the driver, once more when the
        # app is idle, once from the screen's own first layout), and each is a full layout
        # pass of every widget. A size the screen is already laid out at changes nothing.
        if event.size == self.outer_size:
            event.prevent_default()

    # --- the state, shown ---------------------------------------------------------------

    def publish(self) -> None:
        """Show the state as it is now."""
        self.view = self.state.view()
        if self._hold is not None:
            # The widgets tell the screen what they repainted in messages of their own:
            # the frames are released once the screen has heard from them.
            self.call_after_refresh(self.release_frames)

    # --- frames -------------------------------------------------------------------------

    def hold_frames(self) -> None:
        """Paint nothing until this keystroke's figures are shown (publish), for at most
        HOLD_S. Textual paints a keystroke's echo at once and its next frame 17-33 ms
        later (its frame timer skips a tick after a pause): the figures would wait for
        that frame. Held, the echo and the figures share the first one."""
        if self._hold is None:
            self._hold = self.app.batch_update()
            self._hold.__enter__()
            self._hold_timer = self.set_timer(HOLD_S, self.release_frames)

    def release_frames(self) -> None:
        if self._hold is not None:
            hold, self._hold = self._hold, None
            if self._hold_timer is not None:
                self._hold_timer.stop()
                self._hold_timer = None
            hold.__exit__(None, None, None)

    def watch_view(self, view: View) -> None:
        # The name shows in the TitleBar only (Screen.title would repaint the whole screen),
        # and after the figures have been painted: it changes with every count, and one
        # update spanning the title row and the figures repaints every line in between.
        self.call_after_refresh(self.query_one(TitleBar).show, view)
        if view.colocated != self._colocated:
            self._colocated = view.colocated
            self.refresh_bindings()  # the split keys: enabled disaggregated only
        if self._launch_shown:
            self.refresh_launch()

    @property
    def _launch_shown(self) -> bool:
        return self.query_one(TabbedView).active == "launch"

    # --- editing ------------------------------------------------------------------------

    def on_field_edited(self, message: FieldEdited) -> None:
        if self.state.edit(message.key, message.value):
            self._schedule(message.edited_at)
        else:
            self.release_frames()  # nothing to project: paint the echo

    def on_field_invalid(self, message: FieldInvalid) -> None:
        self._cancel()
        self.state.mark_invalid(message.key, message.reason)
        self.publish()

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def _schedule(self, edited_at: float) -> None:
        """Recompute at once for an edit typed after a quiet spell (what a person typing
        sees), and once at the end of a burst for the edits typed within the debounce
        of the one before. When an edit was typed counts, not when
        it is handled: a loaded machine handles a burst slowly, and it stays a burst."""
        self._cancel()
        quiet = edited_at - self._last_edit_at >= self.debounce_s
        self._last_edit_at = edited_at
        if quiet:
            self.recompute()
        else:
            self.release_frames()  # a burst: its keys show as they come
            self._timer = self.set_timer(self.debounce_s, self.recompute)

    def recompute(self) -> None:
        self._timer = None
        self.recompute_count += 1
        self.state.recompute()
        self.publish()
        for notice in self.state.take_notices():
            self.notify(notice, title="Measurements rescaled", timeout=8)

    def flush(self) -> None:
        """Recompute now if keystrokes are waiting for it (before acting on the plan)."""
        if self._timer is not None:
            self._cancel()
            self.recompute()

    # --- the split ----------------------------------------------------------------------

    def _move(self, to_drafters: bool) -> None:
        self.flush()
        refusal = self.state.move(to_drafters)
        if refusal:
            self.notify(refusal, severity="warning")
        else:
            self.publish()

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # Colocated, every GPU runs both roles: the keys that split them show disabled
        # (None), and pressed, say why (on_key).
        if action in SPLIT_ACTIONS and self.view.colocated:
            return None
        return True

    def on_key(self, event: events.Key) -> None:
        """A key of a disabled split action (colocated): the action says why, not silence
        (the key reaches the screen: its binding did not take it)."""
        if not self.view.colocated:
            return
        for binding in self._bindings.key_to_bindings.get(event.key, ()):
            if binding.action in SPLIT_ACTIONS:
                event.stop()
                getattr(self, f"action_{binding.action}")()
                return

    def _pick(self, key: str, value: str, said: str) -> None:
        """Choose a picker's value by its key, as picking it does."""
        self.flush()
        if self.state.edit(key, value):
            self.recompute()
        self.notify(said)

    def action_topology(self) -> None:
        value = "disaggregated" if self.state.colocated else "colocated"
        self._pick("workload.topology", value, f"Topology: {value}")

    def action_drafter(self) -> None:
        from ...model.inputs.plan import DRAFTERS

        now = self.state.doc["workload"].get("drafter", DRAFTERS[0])
        value = DRAFTERS[(DRAFTERS.index(now) + 1) % len(DRAFTERS)]
        self._pick("workload.drafter", value, f"Drafter: {DRAFTER_LABELS[value]}")

    def action_to_drafter(self) -> None:
        self._move(to_drafters=True)

    def action_to_target(self) -> None:
        self._move(to_drafters=False)

    @work(exclusive=True, group="balance")
    async def action_balance(self) -> None:
        from ...model.explore.balance import balance

        self.flush()
        try:
            source = self.state.balance_input()
            best = await asyncio.to_thread(balance, source, self.state.catalog)
        except PlanError as err:
            self.notify(str(err), severity="warning")
            return
        if self.state.apply_balance(source, best):
            self.publish()
            t, d = best.target.count, best.drafter.count
            self.notify(f"Balanced: {t} target{'s' * (t != 1)} + {d} drafter{'s' * (d != 1)}")

    def action_pin_baseline(self) -> None:
        self.flush()
        refusal = self.state.pin(as_baseline=True)
        if refusal:
            self.notify(refusal, severity="warning")
            return
        self.publish()
        self.notify("Baseline pinned to the current plan")

    # --- search, scenarios, charts (their own screens) -----------------------------------

    def _push_view(self, screen: Screen[None]) -> None:
        """Open a view over the planner (not a second one of the same kind)."""
        self.flush()
        if type(self.app.screen) is not type(screen):
            self.app.push_screen(screen)

    def action_search(self) -> None:
        from ..search import SearchScreen

        self._push_view(SearchScreen(self))

    def action_scenarios(self) -> None:
        from ..scenarios import ScenariosScreen

        self._push_view(ScenariosScreen(self))

    def action_charts(self) -> None:
        from ..charts import ChartsScreen

        self._push_view(
            ChartsScreen(self.state.projection, self.state.catalog, self.state.shown_name)
        )

    # --- tabs and the launch script ------------------------------------------------------

    def action_show_tab(self, tab: str) -> None:
        self.query_one(TabbedView).active = tab

    def on_tabbed_view_changed(self, event: TabbedView.Changed) -> None:
        launch = event.pane == "launch"
        self.set_class(launch, "-launch")
        if launch:
            self.query_one(LaunchPanel).build(self.view)
            self.refresh_launch()

    async def launch_text(self) -> str:
        """The launch script of the plan as it is now (written in a thread, kept until the
        plan, the format or the template change)."""
        key: LaunchKey = self.state.launch_input()
        if self._launch is not None and self._launch[0] == key:
            return self._launch[1]
        text = await asyncio.to_thread(write_launch, *key)
        self._launch = (key, text)
        return text

    @work(exclusive=True, group="launch")
    async def refresh_launch(self) -> None:
        text = await self.launch_text()
        self.query_one(LaunchPanel).show_text(text)

    @work(group="copy")
    async def action_copy_launch(self) -> None:
        self.flush()
        text = await self.launch_text()
        self.app.copy_to_clipboard(text)
        self.notify(f"Copied the {self.state.plan.launch.format} launch script to the clipboard")

    @work(exclusive=True, group="dialog")
    async def action_export_launch(self) -> None:
        self.flush()
        from ...model.inputs.formats import row_of
        from ...model.launch import file_name

        fmt = self.state.plan.launch.format
        path = await self.app.push_screen_wait(
            PathDialog(
                f"Export the {fmt} launch script to", "Export", file_name(fmt), check=writable
            )
        )
        if path is None:
            return
        if (
            path.exists()
            and await self.app.push_screen_wait(overwrite_question(path)) != "overwrite"
        ):
            return
        text = await self.launch_text()
        try:
            write_atomic(path, text)
            if row_of(fmt).executable:  # a script, not a document for a launcher
                path.chmod(path.stat().st_mode | 0o111)
        except OSError as err:
            self.notify(not_written(path, err), title="Could not export", severity="error")
            return
        self.notify(f"Wrote {path}")

    # --- files --------------------------------------------------------------------------

    def _savable(self) -> bool:
        self.flush()
        if self.state.broken:
            self.notify("Fix the marked fields before saving", severity="error")
            return False
        return True

    def _write(self, path: Path) -> bool:
        try:
            self.state.save(path)
        except OSError as err:
            self.notify(not_written(path, err), title="Could not save", severity="error")
            return False
        self.publish()
        self.notify(f"Saved {path}")
        return True

    async def save(self) -> bool:
        """Save to the plan's file, or ask for one; True when saved."""
        if not self._savable():
            return False
        if self.state.path is None:
            return await self.save_as()
        return self._write(self.state.path)

    async def save_as(self) -> bool:
        if not self._savable():
            return False
        path = await self.app.push_screen_wait(
            PathDialog("Save plan as", "Save", str(self.state.path or "plan.toml"), check=writable)
        )
        if path is None:
            return False
        if (
            path.exists()
            and path != self.state.path
            and await self.app.push_screen_wait(overwrite_question(path)) != "overwrite"
        ):
            return False
        return self._write(path)

    async def may_discard(self) -> bool:
        """True when there are no unsaved changes, or the user saved or dropped them."""
        self.flush()
        if not self.state.dirty:
            return True
        answer = await self.app.push_screen_wait(unsaved_question())
        if answer == "save":
            return await self.save()
        return answer == "discard"

    def _load(self, opened: Opened) -> None:
        self._cancel()
        self.state.load(opened)
        self.publish()

    @work(exclusive=True, group="dialog")
    async def action_save(self) -> None:
        await self.save()

    @work(exclusive=True, group="dialog")
    async def action_save_as(self) -> None:
        await self.save_as()

    @work(exclusive=True, group="dialog")
    async def action_open(self) -> None:
        if not await self.may_discard():
            return
        checked: dict[Path, Opened] = {}

        def check(path: Path) -> str | None:
            try:
                checked[path] = self.state.read(path)
            except PlanError as err:
                message = str(err)
                return message if str(path) in message else f"{path}: {message}"
            return None

        path = await self.app.push_screen_wait(
            PathDialog("Open plan", "Open", str(self.state.path or ""), check=check)
        )
        if path is not None:
            self._load(checked[path])
            self.notify(f"Opened {path}")

    @work(exclusive=True, group="dialog")
    async def action_new(self) -> None:
        if await self.may_discard():
            self._load(self.state.read(None))
            self.notify("New plan from the built-in plan")

    @work(exclusive=True, group="dialog")
    async def quit(self) -> None:
        """Quit, once unsaved changes are saved or dropped."""
        if await self.may_discard():
            self.state.forget_recovery()  # its edits were saved or dropped just now
            self.app.exit()
