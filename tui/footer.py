"""The footer of every screen: Textual's, with its keys in the first frame and composed
again only when the keys it shows change. Textual's starts empty and composes itself again
at every change of the bindings (focus moving between fields, a screen resuming), three
times before the planner's first frame settles, each time mounting every key anew."""

from __future__ import annotations

from typing import Any

from textual.app import ComposeResult
from textual.screen import Screen
from textual.widgets import Footer


class KeysFooter(Footer):
    def __init__(self) -> None:
        super().__init__(compact=True)
        self._shown: tuple[object, ...] | None = None     # the keys composed last
        self.set_reactive(Footer._bindings_ready, True)   # the screen's keys, at once

    def compose(self) -> ComposeResult:
        self._shown = self._keys(self.screen)
        yield from super().compose()

    def bindings_changed(self, screen: Screen[Any]) -> None:
        if screen.app.app_focus and self.is_attached and screen is self.screen:
            shown = self._keys(screen)
            if shown == self._shown:
                return
            self._shown = shown
        super().bindings_changed(screen)

    def _keys(self, screen: Screen[Any]) -> tuple[object, ...]:
        """What compose() shows: every shown binding, enabled or not, with its tooltip,
        and the command palette's key."""
        return tuple((binding.key, binding.description, binding.action, enabled, tooltip)
                     for key, (_node, binding, enabled, tooltip)
                     in screen.active_bindings.items()
                     if binding.show or key == self.app.COMMAND_PALETTE_BINDING)
