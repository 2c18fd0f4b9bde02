"""Driving the planner app in Pilot tests and snapshots: values are set directly (one
change event, as a paste would make) unless typing is what a test is about, and the app
runs without a debounce."""

from __future__ import annotations

import contextlib
import io
from typing import Any

import pytest
from dflash_plan.tui.app import PlannerApp
from dflash_plan.tui.picker import Picker
from dflash_plan.tui.planner.inputs import InputsPanel
from rich.console import Console
from textual.content import Content
from textual.widgets import Input, Static, TextArea
from textual.worker import WorkerCancelled


@pytest.fixture(autouse=True)
def steady_cursors(monkeypatch):
    """Text cursors do not blink in tests, so that a snapshot does not depend on when it is
    taken. (Imported by the app test modules, which makes it autouse there.)"""
    for widget in (Input, TextArea):
        monkeypatch.setattr(widget.__dict__["cursor_blink"], "_default", False)


def planner(path=None, **kwargs: Any) -> PlannerApp:
    """The app with recomputes at once (no debounce)."""
    return PlannerApp(path, debounce_s=kwargs.pop("debounce_s", 0), **kwargs)


def widget_id(key: str) -> str:
    return key.replace(".", "-")


async def field(pilot, key: str) -> Input:
    """A field's text input (a field key like 'target.count', or a widget id); a plan
    field's editor is opened if it is not yet (as focusing the field does)."""
    rows = pilot.app.screen.query(f"#row-{widget_id(key)}")
    if rows and rows.first().open_editor() is not None:
        await pilot.pause()
    return pilot.app.screen.query_one(f"#{widget_id(key)}", Input)


async def put(pilot, key: str, text: str) -> None:
    """Set a field's text (a field key like 'target.count', or a widget id)."""
    (await field(pilot, key)).value = text
    await pilot.pause()


async def choose(pilot, key: str, value: str) -> None:
    picker = pilot.app.screen.query_one(f"#{widget_id(key)}", Picker)
    picker.value = value
    await pilot.pause()
    # A choice reaches the plan in two messages (the picker's, then its field's), and the
    # plan's new name shows after the next repaint (title bar, name field): a pause waits
    # for the messages queued when it starts, so on a loaded machine a part can lag.
    spec = getattr(picker, "spec", None)
    planner = pilot.app.planner
    for _ in range(50):
        view = planner.view
        if (
            (spec is None or view.values.get(spec.key) == value)
            and planner.query_one(InputsPanel).rows["name"].placeholder == view.name
            and view.name in text(pilot.app, "title-bar")
        ):
            break
        await pilot.pause()


async def settle(pilot) -> None:
    """Let the workers that are not waiting on a dialog (balance, the launch script, a
    search) finish and their results show. A worker an edit starts may start only after a
    pause has delivered the edit's messages (on a loaded machine, after the first look):
    the app is settled when two looks in a row find none running."""
    idle = 0
    for _ in range(200):
        await pilot.pause()
        busy = [w for w in pilot.app.workers if w.group != "dialog" and not w.is_finished]
        if not busy:
            idle += 1
            if idle == 2:
                return
            continue
        idle = 0
        for worker in busy:
            with contextlib.suppress(WorkerCancelled):  # a later edit started a newer one
                await worker.wait()
    raise AssertionError("the app's workers did not settle")


def text(app, widget: str) -> str:
    """The plain text a widget shows (a Static's content as laid out at its width, an
    Input's value, a TextArea's text)."""
    found = app.screen.query(f"#{widget}")
    if not found:  # a plan field whose editor is not open
        return app.screen.query_one(f"#row-{widget}").text
    node = found.first()
    if isinstance(node, Input):
        return node.value
    if isinstance(node, TextArea):
        return node.text
    assert isinstance(node, Static)
    content = node.content
    if isinstance(content, str):
        return content
    if isinstance(content, Content):
        return content.plain
    console = Console(width=node.content_size.width or 200, file=io.StringIO(), record=True)
    console.print(content)
    return console.export_text()


def error(app, key: str) -> str:
    """The error shown under a field ('' when none)."""
    found = app.screen.query(f"#error-{widget_id(key)}")
    return text(app, f"error-{widget_id(key)}") if found and found.first().display else ""


def snap(snap_compare: Any, steps: Any, size: tuple[int, int], unfocused: bool = False) -> bool:
    """The planner after `steps(pilot)` at SIZE, against its snapshot (snap_compare: a fresh
    app, pytest-textual-snapshot's report on a difference). snap_compare runs the app with
    App.run, not run_test: it starts as run_test starts it (no notifications or tooltips,
    the first screen's messages handled before the steps), as the snapshots always were.
    `unfocused`: the field focused at start-up loses the focus before the steps (a scene
    that shows a focused field focuses it)."""
    app = planner()
    app._disable_notifications = True
    app._disable_tooltips = True

    async def run_before(pilot: Any) -> None:
        await pilot._wait_for_screen()
        if unfocused:
            pilot.app.screen.set_focus(None)
            await pilot.pause()
        await steps(pilot)

    return bool(snap_compare(app, terminal_size=size, run_before=run_before))
