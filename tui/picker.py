"""A choice from a short list (a GPU, a model, a launch format) in one line, its list built
when it is first opened. Textual's Select is six widgets and fills its option list at
mount: the planner's four were a fifth of its widgets at start-up. The list drops below
the line over whatever is under it, as Select's does; typing jumps to a matching name."""

from __future__ import annotations

from collections.abc import Sequence
from time import monotonic

from rich.cells import set_cell_size
from textual import events
from textual.binding import Binding
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import OptionList

ARROW = " ▼"
SEARCH_PAUSE_S = 0.7  # a pause this long starts a new search (as Select's does)


class PickerList(OptionList):
    """The open list: enter or a click picks, escape (or focus moving away) closes it."""

    BINDINGS = [Binding("escape", "close", "Close", show=False)]

    def __init__(self) -> None:
        super().__init__()
        self._query = ""
        self._typed_at = -SEARCH_PAUSE_S

    @property
    def picker(self) -> Picker:
        parent = self.parent
        assert isinstance(parent, Picker)
        return parent

    def check_consume_key(self, key: str, character: str | None = None) -> bool:
        return character is not None and character.isprintable()

    def on_key(self, event: events.Key) -> None:
        if event.character is None or not event.is_printable:
            return
        event.stop()
        event.prevent_default()
        now = monotonic()
        self._query = self._query if now - self._typed_at < SEARCH_PAUSE_S else ""
        self._query += event.character
        self._typed_at = now
        found = self.picker.search(self._query)
        if found is not None:
            self.highlighted = found

    def on_option_list_option_selected(self, event: OptionList.OptionSelected) -> None:
        event.stop()
        self.picker.choose(event.option_index)

    def on_option_list_option_highlighted(self, event: OptionList.OptionHighlighted) -> None:
        event.stop()

    def action_close(self) -> None:
        self.picker.close(refocus=True)

    def on_blur(self) -> None:
        self.picker.close(refocus=False)


class Picker(Widget, can_focus=True):
    """One of `options` (label, value); `None` only when `allow_blank` (shown as `prompt`).
    Posts `Picker.Changed` when the user picks another value or `value` is set."""

    DEFAULT_CSS = """
    Picker {
        height: 1;
        width: 1fr;
        background: $surface;
        color: $foreground;
        pointer: pointer;
    }
    Picker > PickerList {
        display: none;
        overlay: screen;
        offset-y: 1;                /* under the line, which stays in sight */
        constrain: none inside;
        height: auto;
        max-height: 12;
        width: 1fr;
        border: tall $border-blurred;
        background: $surface;
        color: $foreground;
    }
    Picker > PickerList:focus {
        background-tint: $foreground 5%;
    }
    Picker > PickerList > .option-list--option {
        padding: 0 1;
    }
    Picker.-open > PickerList {
        display: block;
    }
    """

    BINDINGS = [Binding("enter,space,down,up", "open", "Choose", show=False)]

    value: reactive[str | None] = reactive(None, init=False, layout=False)

    class Changed(Message):
        def __init__(self, picker: Picker, value: str | None) -> None:
            super().__init__()
            self.picker = picker
            self.value = value

        @property
        def control(self) -> Picker:
            return self.picker

    def __init__(
        self,
        options: Sequence[tuple[str, str]],
        value: str | None = None,
        *,
        prompt: str = "choose",
        allow_blank: bool = False,
        id: str | None = None,
        classes: str | None = None,
    ) -> None:
        super().__init__(id=id, classes=classes)
        self.prompt = prompt
        self.allow_blank = allow_blank
        self.options: tuple[tuple[str, str], ...] = ()
        self._set_options(options)
        self.set_reactive(Picker.value, self._checked(value))

    # --- the value ----------------------------------------------------------------------

    def _set_options(self, options: Sequence[tuple[str, str]]) -> None:
        self.options = tuple(options)
        if not self.options and not self.allow_blank:
            raise ValueError("a picker without a blank needs at least one option")

    def _checked(self, value: str | None) -> str | None:
        if value is None:
            if self.allow_blank:
                return None
            return self.options[0][1]
        if all(value != known for _, known in self.options):
            raise ValueError(f"{value!r} is not one of this picker's options")
        return value

    def validate_value(self, value: str | None) -> str | None:
        return self._checked(value)

    def watch_value(self, value: str | None) -> None:
        self.post_message(self.Changed(self, value))

    def set_options(self, options: Sequence[tuple[str, str]]) -> None:
        """New options; the value stays if it is still one of them (else the first, or
        blank when allowed)."""
        self._set_options(options)
        kept = self.value if any(self.value == v for _, v in self.options) else None
        self.value = self._checked(kept)
        if self.children:
            self._fill(self.query_one(PickerList))
        self.refresh()

    @property
    def label(self) -> str | None:
        for label, value in self.options:
            if value == self.value:
                return label
        return None

    def render(self) -> Content:
        label = self.label
        width = max(self.content_size.width - len(ARROW), 1)
        shown = set_cell_size(label if label is not None else self.prompt, width)
        return Content.assemble(
            (shown, "" if label is not None else "$foreground 50%"), (ARROW, "$foreground 50%")
        )

    def search(self, query: str) -> int | None:
        """The entry whose label holds `query` earliest (ignoring case)."""
        query = query.lower()
        found = [
            (label.lower().find(query), index) for index, (label, _) in enumerate(self.entries)
        ]
        matches = [(at, index) for at, index in found if at >= 0]
        return min(matches)[1] if matches else None

    # --- the list -----------------------------------------------------------------------

    @property
    def is_open(self) -> bool:
        return self.has_class("-open")

    @property
    def entries(self) -> tuple[tuple[str, str | None], ...]:
        """What the open list shows: the options, after the blank when it is allowed."""
        blank: tuple[tuple[str, str | None], ...] = ((self.prompt, None),)
        return (blank if self.allow_blank else ()) + self.options

    def _fill(self, listing: PickerList) -> None:
        listing.clear_options()
        listing.add_options(
            [
                Content.styled(label, "$foreground 50%") if value is None else label
                for label, value in self.entries
            ]
        )

    def action_open(self) -> None:
        if self.is_open:
            return
        if not self.children:
            listing = PickerList()
            self._fill(listing)
            self.mount(listing)
        listing = self.query_one(PickerList)
        self.add_class("-open")
        index = next((i for i, (_, v) in enumerate(self.entries) if v == self.value), 0)
        listing.highlighted = index
        listing.focus(scroll_visible=False)
        listing.call_after_refresh(listing.scroll_to_highlight)

    def close(self, refocus: bool) -> None:
        if self.is_open:
            self.remove_class("-open")
            if refocus:
                self.focus()

    def choose(self, index: int) -> None:
        self.value = self.entries[index][1]
        self.close(refocus=True)

    def on_click(self, event: events.Click) -> None:
        if event.widget is self:  # a click on the list is the list's
            if self.is_open:
                self.close(refocus=True)
            else:
                self.action_open()
