"""Driving the planner app in Pilot tests and snapshots."""

from __future__ import annotations

from textual.widgets import Input, Select

SETTLE_S = 0.35      # longer than the app's debounce


async def type_into(pilot, widget_id: str, text: str, settle: bool = True) -> None:
    """Focus an input (its text gets selected), type text over it key by key."""
    field = pilot.app.screen.query_one(f"#{widget_id}", Input)
    field.focus()
    await pilot.pause()
    field.select_all()
    if text:
        await pilot.press(*list(text))
    else:
        await pilot.press("backspace")
    if settle:
        await pilot.pause(SETTLE_S)


async def choose(pilot, widget_id: str, value: str) -> None:
    pilot.app.screen.query_one(f"#{widget_id}", Select).value = value
    await pilot.pause(SETTLE_S)


def shown(app, widget_id: str) -> str:
    """The text a result widget shows."""
    return str(app.query_one(f"#{widget_id}").render())
