"""The Comparison view: the pinned scenarios (the opened plan first) and the current plan
side by side, one column each, with every figure's range and its ratio to the baseline.
Pin the current plan, unpin, rename or open a scenario."""

from __future__ import annotations

from collections.abc import Callable

from rich.text import Text
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Vertical, VerticalScroll
from textual.screen import ModalScreen, Screen
from textual.widgets import DataTable, Input, Label, Static

from ..model.basics.terminal import terminal_safe
from ..model.core import figures as F
from ..model.core.projection import Projection
from ..model.explore.compare import compared, shown
from . import format as fmt
from .footer import KeysFooter
from .state import PlannerHost, Scenario
from .textinput import TextInput


def figure_rows() -> tuple[str, ...]:
    """A row per comparison figure (model/explore/compare.py), and one for its range."""
    return tuple(
        label for f in shown() for label in ((f.narrow, "  range") if f.ranged else (f.narrow,))
    )


ROWS = figure_rows()


def column(p: Projection, base: Projection) -> list[str | Text]:
    """One scenario's figures, in the order of ROWS."""
    out: list[str | Text] = []
    for c in compared(p, base).cells:
        out.append(fmt.narrow(c.figure, c.value, p.cost_unit))
        if c.figure.ranged:
            out.append(fmt.narrow_range(c.figure, c.range, c.value, p.cost_unit))
    return out


# Shown when a column runs offline (workload.mode): its storage and its own days and cost.
OFFLINE_ROWS = ("offline TB", "  days", "  cost", "  cheaper from")


def offline_column(p: Projection) -> list[str]:
    """An offline scenario's storage, days, cost and break-even epochs (dashes online or
    when it does not fit)."""
    o = p.job.stored
    if o is None or p.does_not_fit is not None:
        return [fmt.DASH] * len(OFFLINE_ROWS)
    even = fmt.DASH if o.break_even_epochs is None else f"{o.break_even_epochs:.2f} ep"
    return [
        fmt.narrow_number(o.tb),
        fmt.narrow(F.DAYS, o.days),
        fmt.narrow(F.TOTAL_COST, o.cost),
        even,
    ]


class NameDialog(ModalScreen[str | None]):
    """Ask for a scenario's new name."""

    BINDINGS = [Binding("escape", "cancel", "Cancel", id="name-cancel")]

    DEFAULT_CSS = """
    NameDialog { align: center middle; background: $background 60%; }
    """

    def __init__(self, name: str) -> None:
        super().__init__()
        self.initial = name

    def compose(self) -> ComposeResult:
        with Vertical(classes="dialog"):
            yield Label("Rename the scenario", classes="dialog-title")
            yield TextInput(self.initial, id="name-input", select_on_focus=True)

    def on_input_submitted(self, event: Input.Submitted) -> None:
        self.dismiss(event.value.strip() or None)

    def action_cancel(self) -> None:
        self.dismiss(None)


class ScenariosScreen(Screen[None]):
    """Pinned scenarios and the current plan against the baseline."""

    BINDINGS = [
        Binding("escape,f6", "app.pop_screen", "Back", id="scenarios-back"),
        Binding(
            "p",
            "pin",
            "Pin current",
            id="scenarios-pin",
            tooltip="Pin the current plan beside the others (the baseline stays)",
        ),
        Binding(
            "b",
            "make_baseline",
            "Baseline",
            id="scenarios-baseline",
            tooltip="Compare against the highlighted scenario",
        ),
        Binding(
            "u,delete",
            "unpin",
            "Unpin",
            id="scenarios-unpin",
            tooltip="Drop the highlighted scenario",
        ),
        Binding(
            "r",
            "rename",
            "Rename",
            id="scenarios-rename",
            tooltip="Rename the highlighted scenario",
        ),
        Binding(
            "o,enter",
            "open",
            "Open",
            id="scenarios-open",
            tooltip="Make the highlighted scenario the current plan",
        ),
    ]

    DEFAULT_CSS = """
    ScenariosScreen #scenarios-title { height: 1; background: $panel; width: 1fr;
        content-align: center middle; }
    ScenariosScreen #scenarios-body { height: 1fr; scrollbar-size: 1 1; }
    ScenariosScreen #scenarios-table { height: auto; margin: 0 1; scrollbar-size: 1 1; }
    ScenariosScreen #scenarios-names { height: auto; margin: 1 1 0 1; }
    """

    def __init__(self, planner: PlannerHost) -> None:
        super().__init__()
        self.planner = planner
        self.state = planner.state
        self.columns: list[Scenario | None] = []  # None: the current plan

    def compose(self) -> ComposeResult:
        yield Static("Scenarios against the baseline", id="scenarios-title")
        with VerticalScroll(id="scenarios-body"):
            yield DataTable(
                id="scenarios-table", cursor_type="column", zebra_stripes=True, fixed_columns=1
            )
            yield Static("", id="scenarios-names")
        yield KeysFooter()

    def on_mount(self) -> None:
        self.fill()
        self.query_one("#scenarios-table", DataTable).move_cursor(column=len(self.columns))
        self.query_one("#scenarios-table", DataTable).focus()

    def fill(self, at: int | None = None) -> None:
        state = self.state
        base = state.baseline.projection
        table = self.query_one("#scenarios-table", DataTable)
        table.clear(columns=True)
        self.columns = list(state.scenarios)
        if not any(s.projection is state.projection for s in state.scenarios):
            self.columns.append(None)
        table.add_column("", key="row")
        names = Text()
        unit = state.projection.cost_unit
        for i, scenario in enumerate(self.columns, 1):
            base_mark = scenario is state.baseline
            tag = f"{i} base" if base_mark else f"{i} now" if scenario is None else str(i)
            table.add_column(Text(tag, style="bold" if base_mark else ""), key=f"c{i}")
            names.append(f"{tag:<7}", style="bold")
            names.append(
                (terminal_safe(scenario.name) if scenario else f"current: {state.shown_name}")
                + "\n"
            )
        names.append(
            f"cost in {unit}; ×: ratio to the baseline; break-even: the price "
            f"per GPU-hour at which a plan costs what the baseline does",
            style="dim",
        )
        projections = [s.projection if s else state.projection for s in self.columns]
        if any(p.job.phased for p in projections):
            # Which days and cost compare (model/explore/compare.py): each plan's job.
            names.append(
                "; days, cost and their ×: each plan's whole job (regeneration when on, then "
                "its online or offline run)",
                style="dim",
            )
        values = [column(p, base) for p in projections]
        rows = figure_rows()
        if any(p.job.stored is not None for p in projections):
            rows += OFFLINE_ROWS
            values = [[*v, *offline_column(p)] for v, p in zip(values, projections, strict=True)]
        for r, label in enumerate(rows):
            table.add_row(
                Text(label, style="dim" if label.startswith(" ") else "bold"),
                *(
                    Text(str(v[r]), justify="right") if isinstance(v[r], str) else v[r]
                    for v in values
                ),
            )
        self.query_one("#scenarios-names", Static).update(names)
        if at is not None:
            table.move_cursor(column=min(at, len(self.columns)))

    def selected(self) -> tuple[int, Scenario | None] | None:
        """The highlighted column: its index among the scenarios and the scenario (None:
        the current plan); None on the row titles."""
        i = self.query_one("#scenarios-table", DataTable).cursor_column - 1
        return (i, self.columns[i]) if 0 <= i < len(self.columns) else None

    def pinned(self, verb: str) -> tuple[int, Scenario] | None:
        """The highlighted pinned scenario (warns when the column is not one)."""
        chosen = self.selected()
        if chosen is None or chosen[1] is None:
            self.notify(f"Highlight a pinned scenario to {verb}", severity="warning")
            return None
        return chosen[0], chosen[1]

    def action_pin(self) -> None:
        self.planner.flush()
        if any(s.projection is self.state.projection for s in self.state.scenarios):
            self.notify("The current plan is pinned already", severity="warning")
            return
        refusal = self.state.pin()
        if refusal:
            self.notify(refusal, severity="warning")
            return
        self.planner.publish()
        self.fill(at=len(self.state.scenarios))

    def _on_pinned(self, verb: str, act: Callable[[Scenario], str | None]) -> None:
        """Act on the highlighted pinned scenario: warn with the reason when it cannot be,
        else show the scenarios again with the cursor where it was."""
        chosen = self.pinned(verb)
        if chosen is None:
            return
        i, scenario = chosen
        refusal = act(scenario)
        if refusal:
            self.notify(refusal, severity="warning")
            return
        self.planner.publish()
        self.fill(at=i + 1)

    def action_make_baseline(self) -> None:
        self._on_pinned("make the baseline", self.state.make_baseline)

    def action_unpin(self) -> None:
        self._on_pinned("unpin", self.state.unpin)

    def action_rename(self) -> None:
        chosen = self.pinned("rename")
        if chosen is None:
            return
        i, scenario = chosen

        def renamed(name: str | None) -> None:
            if not name or scenario not in self.state.scenarios:
                return
            self.state.rename(scenario, name)
            self.planner.publish()
            self.fill(at=i + 1)

        self.app.push_screen(NameDialog(terminal_safe(scenario.name)), renamed)

    def action_open(self) -> None:
        chosen = self.selected()
        scenario = chosen[1] if chosen else None
        if scenario is None:  # the current plan: back to it
            self.app.pop_screen()
            return
        refusal = open_plan(self.planner, scenario.projection)
        if refusal:
            self.notify(refusal, severity="warning")
            return
        self.app.pop_screen()
        self.app.notify(f"Opened {scenario.name} as the current plan")


def open_plan(planner: PlannerHost, p: Projection) -> str | None:
    """Make a scenario's plan the current plan; the reason when it cannot be."""
    planner.flush()
    refusal = planner.state.adopt(p.plan)
    planner.publish()
    return refusal
