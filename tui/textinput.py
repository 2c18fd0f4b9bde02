"""A text input that applies keys in the order they were typed.

Textual's Input inserts a printable key in its own key handler, but runs a bound key
(backspace, delete, the arrows, home, end, ctrl+u...) only once the key has bubbled up
through every parent to the app, one message queue per parent: in a burst (a paste, a
macro, tmux send-keys, a loaded machine) the characters typed after a backspace are
inserted before it runs, and it deletes one of them (`BSpace 1 2` into "3" made "31", not
"12"). Textual 8.2.8; upstream issue Textualize/textual#6605 (open, 2026-06), fix proposed
in PR #6631. Every Input of the app is one of these."""

from __future__ import annotations

from textual import events
from textual.widget import Widget
from textual.widgets import Input


async def run_own_binding(widget: Widget, event: events.Key) -> bool:
    """Run the widget's own binding of a key now, where the app would run it once the key
    had bubbled up (the focused widget's bindings come first in the app's look-up, and a
    priority binding has run before the key reached the widget); True when one ran."""
    for binding in widget._bindings.key_to_bindings.get(event.key, ()):
        if not binding.priority and await widget.app.run_action(binding.action, widget):
            event.stop()
            event.prevent_default()
            return True
    return False


class TextInput(Input):
    """Input whose bound keys run in turn with the characters typed."""

    async def _on_key(self, event: events.Key) -> None:
        await run_own_binding(self, event)
