"""Panes behind a row of tabs: the planner's Projection and Launch, the charts. The tabs
are one widget drawing the labels and the bar under them (Textual's TabbedContent is eleven
widgets for two tabs, every one styled and laid out at start-up). A click or left/right
(when the tabs have focus) shows a pane; screens bind their own keys to `active`."""

from __future__ import annotations

from textual import events
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical
from textual.content import Content
from textual.message import Message
from textual.reactive import reactive
from textual.widget import Widget
from textual.widgets import ContentSwitcher

PAD = 1  # columns either side of a label


class TabBar(Widget, can_focus=True):
    DEFAULT_CSS = """
    TabBar {
        height: 2;
        width: 1fr;
    }
    """
    BINDINGS = [
        Binding("left", "step(-1)", "Previous tab", show=False),
        Binding("right", "step(1)", "Next tab", show=False),
    ]

    active: reactive[str] = reactive("", init=False)

    class Activated(Message):
        def __init__(self, bar: TabBar, tab: str) -> None:
            super().__init__()
            self.bar = bar
            self.tab = tab

    def __init__(self, tabs: list[tuple[str, str]], active: str) -> None:
        super().__init__()
        self.tabs = tabs  # (label, pane id)
        self._hover: str | None = None
        self.set_reactive(TabBar.active, active)

    def watch_active(self, tab: str) -> None:
        self.post_message(self.Activated(self, tab))

    def _spans(self) -> list[tuple[int, int, str]]:
        spans, column = [], 0
        for label, tab in self.tabs:
            width = len(label) + 2 * PAD
            spans.append((column, column + width, tab))
            column = column + width
        return spans

    def render(self) -> Content:
        labels: list[Content] = []
        bar: list[Content] = []
        column = 0
        for (label, tab), (start, end, _) in zip(self.tabs, self._spans(), strict=True):
            labels.append(Content(" " * (start - column)))
            bar.append(Content.styled("━" * (start - column), "$foreground 10%"))
            if tab == self.active:
                style = (
                    "$block-cursor-foreground on $block-cursor-background bold"
                    if self.has_focus
                    else "$foreground"
                )
                under = "$block-cursor-background"
            else:
                style = "$foreground" if tab == self._hover else "$foreground 50%"
                under = "$foreground 10%"
            labels.append(Content.styled(f"{' ' * PAD}{label}{' ' * PAD}", style))
            bar.append(Content.styled("━" * (end - start), under))
            column = end
        rest = max(self.size.width - column, 0)
        bar.append(Content.styled("━" * rest, "$foreground 10%"))
        return Content("").join(labels) + "\n" + Content("").join(bar)

    def _at(self, x: int) -> str | None:
        return next((tab for start, end, tab in self._spans() if start <= x < end), None)

    def on_click(self, event: events.Click) -> None:
        tab = self._at(event.x)
        if tab is not None:
            self.active = tab

    def on_mouse_move(self, event: events.MouseMove) -> None:
        tab = self._at(event.x)
        if tab != self._hover:
            self._hover = tab
            self.refresh()

    def on_leave(self) -> None:
        self._hover = None
        self.refresh()

    def on_focus(self) -> None:
        self.refresh()

    def on_blur(self) -> None:
        self.refresh()

    def action_step(self, step: int) -> None:
        ids = [tab for _, tab in self.tabs]
        self.active = ids[(ids.index(self.active) + step) % len(ids)]


class TabbedView(Vertical):
    """The tabs over the panes; `active` is the shown pane's id. Posts `Changed`."""

    DEFAULT_CSS = """
    TabbedView {
        height: 1fr;
    }
    TabbedView > ContentSwitcher {
        height: 1fr;
    }
    """

    class Changed(Message):
        def __init__(self, view: TabbedView, pane: str) -> None:
            super().__init__()
            self.view = view
            self.pane = pane

    def __init__(self, *panes: tuple[str, Widget], id: str | None = None) -> None:
        super().__init__(id=id)
        self.panes = panes
        tabs = [(label, pane.id or "") for label, pane in panes]
        self.bar = TabBar(tabs, tabs[0][1])

    def compose(self) -> ComposeResult:
        yield self.bar
        yield ContentSwitcher(*(pane for _, pane in self.panes), initial=self.bar.active)

    @property
    def active(self) -> str:
        return self.bar.active

    @active.setter
    def active(self, pane: str) -> None:
        self.bar.active = pane

    def on_tab_bar_activated(self, event: TabBar.Activated) -> None:
        event.stop()
        self.query_one(ContentSwitcher).current = event.tab
        self.post_message(self.Changed(self, event.tab))
