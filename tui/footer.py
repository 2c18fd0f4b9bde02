"""The footer of every screen: the keys that work here, in one line, the command palette's
on the right. One widget drawing every key (Textual's Footer is a widget per key and is
composed again at every change of the bindings: three times before the planner's first
frame settled, mounting every key anew). A key is clicked like a key press; hovering one
highlights it and shows its tooltip."""

from __future__ import annotations

from typing import Any, NamedTuple

from textual import events
from textual.content import Content
from textual.screen import Screen
from textual.widget import Widget

SEPARATOR = "▏"

# When the keys do not all fit (the planner at 80 columns), these leave the footer first,
# in this order, so that the ones after them (Quit last) stay: each has another way in
# (the topology picker, the GPUs fields) and every key stays in the command palette.
LEFT_OUT_FIRST = ("topology", "split-to-target", "split-to-drafter")


class Key(NamedTuple):
    key: str  # what is pressed when the key is clicked
    shown: str  # how the key is written ("^s", "f1")
    description: str
    enabled: bool
    tooltip: str
    palette: bool  # the command palette's key, drawn on the right
    id: str | None = None  # the binding's id


class KeysFooter(Widget):
    ALLOW_SELECT = False
    DEFAULT_CSS = """
    KeysFooter {
        dock: bottom;
        height: 1;
        color: $footer-foreground;
        background: $footer-background;
    }
    """

    def __init__(self) -> None:
        super().__init__()
        self.keys: tuple[Key, ...] = ()
        self._spans: list[tuple[int, int, Key]] = []  # columns each key is drawn in
        self._hover: Key | None = None

    def on_mount(self) -> None:
        self.keys = self._read(self.screen)
        self.screen.bindings_updated_signal.subscribe(self, self.bindings_changed)

    def on_unmount(self) -> None:
        self.screen.bindings_updated_signal.unsubscribe(self)

    def bindings_changed(self, screen: Screen[Any]) -> None:
        if screen is self.screen:
            keys = self._read(screen)
            if keys != self.keys:
                self.keys = keys
                self.refresh()

    def _read(self, screen: Screen[Any]) -> tuple[Key, ...]:
        """Every shown binding, enabled or not, the first key of each action only (as
        Textual's footer), and the command palette's key."""
        palette_key = self.app.COMMAND_PALETTE_BINDING
        keys: dict[str, Key] = {}
        for key, (_node, binding, enabled, tooltip) in screen.active_bindings.items():
            if (binding.show or key == palette_key) and binding.action not in keys:
                keys[binding.action] = Key(
                    binding.key,
                    self.app.get_key_display(binding),
                    binding.description,
                    enabled,
                    tooltip or binding.tooltip or binding.description,
                    key == palette_key,
                    binding.id,
                )
        return tuple(keys.values())

    @property
    def line(self) -> str:
        """The footer's text as drawn at its width."""
        return self.render().plain

    def render(self) -> Content:
        width = self.size.width
        palette = [key for key in self.keys if key.palette]
        right = [self._drawn(key) for key in palette]
        right_width = sum(part.cell_length for part in right) + (1 if right else 0)
        parts: list[Content] = []
        self._spans = []
        column = 0
        for key in self._fitting(width - right_width):
            drawn = self._drawn(key)
            if column + drawn.cell_length > width - right_width:
                break  # no room: the palette lists every action
            parts.append(drawn + " ")
            self._spans.append((column, column + drawn.cell_length, key))
            column += drawn.cell_length + 1
        if right:
            start = max(width - right_width, column)
            parts.append(Content(" " * (start - column)))
            parts.append(Content.styled(SEPARATOR, "$foreground 20%"))
            column = start + 1
            for key, drawn in zip(palette, right, strict=True):
                parts.append(drawn)
                self._spans.append((column, column + drawn.cell_length, key))
                column += drawn.cell_length
        return Content("").join(parts)

    def _fitting(self, room: int) -> list[Key]:
        """The keys drawn left of the palette's: all of them, else without the ones
        LEFT_OUT_FIRST names, one at a time, until the rest fit (the draw stops at the
        edge if they still do not)."""
        keys = [key for key in self.keys if not key.palette]

        def width(shown: list[Key]) -> int:
            return sum(self._drawn(key).cell_length + 1 for key in shown)

        for name in LEFT_OUT_FIRST:
            if width(keys) - 1 <= room:
                break
            keys = [key for key in keys if key.id != name]
        return keys

    def _drawn(self, key: Key) -> Content:
        hover = " on $block-hover-background" if key == self._hover else ""
        dim = " dim" if not key.enabled else ""
        return Content.assemble(
            (key.shown, f"bold $footer-key-foreground{hover}{dim}"),
            (f" {key.description}", f"$footer-description-foreground{hover}{dim}"),
        )

    def _at(self, x: int) -> Key | None:
        return next((key for start, end, key in self._spans if start <= x < end), None)

    def on_click(self, event: events.Click) -> None:
        key = self._at(event.x)
        if key is None:
            return
        if key.enabled:
            self.app.simulate_key(key.key)
        else:
            self.app.bell()

    def on_mouse_move(self, event: events.MouseMove) -> None:
        key = self._at(event.x)
        if key != self._hover:
            self._hover = key
            self.tooltip = key.tooltip if key is not None else None
            self.refresh()

    def on_leave(self) -> None:
        if self._hover is not None:
            self._hover = None
            self.tooltip = None
            self.refresh()
