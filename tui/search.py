"""The Search view: constraints as inputs, the Pareto front of (days, cost) and the winners
as a table and a chart, searched again in a thread whenever a constraint changes. One key
opens a result as the current plan; the plan it replaces stays as the baseline."""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import cast

from rich.cells import cell_len
from rich.text import Text
from textual import work
from textual.app import ComposeResult
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import Screen
from textual.timer import Timer
from textual.widgets import (
    Checkbox,
    DataTable,
    Input,
    Label,
    Select,
    Static,
    Tab,
    Tabs,
)
from textual.worker import get_current_worker

from ..model.basics.errors import PlanError
from ..model.core import figures as F
from ..model.core.labels import split_label
from ..model.explore.objective import (
    DEFAULT_MAX_EPOCHS,
    FRONT_OBJECTIVES,
    HIGHEST_TAU,
    OBJECTIVES,
    Goal,
    Objective,
    ObjectiveResult,
    search_objective,
)
from ..model.explore.search import (
    MAX_SEARCH_GPUS,
    TIE_RULE,
    Candidate,
    Constraints,
    Result,
    Space,
    Sweep,
    default_space,
    rank,
    sweep,
)
from ..model.inputs.catalog import Catalog
from ..model.inputs.plan import MODES, TOPOLOGIES, Plan
from . import format as fmt
from .charts import Chart, draw_pareto
from .footer import KeysFooter
from .report import fitting, objective_words, topology_win_lines
from .state import PlannerHost
from .textinput import TextInput

# A search that takes longer than this shows its progress.
PROGRESS_AFTER_S = 0.5
# From this many rows the view shows the table and the chart together (no tabs).
TALL = 34


# The search's objectives: the (days, cost) front's, fastest or cheapest first, and
# search --objective's (model/explore/objective.py: epochs chosen for a tau).
TIME, COST = FRONT_OBJECTIVES
SEARCH_OBJECTIVES: tuple[str, ...] = (*FRONT_OBJECTIVES, *OBJECTIVES)
# The objectives that take a tau to reach (min tau); HIGHEST_TAU takes none.
TAU_TARGETS = ("time-to-tau", "speedup-per-cost")
# A tau objective's winner's tag in the table's "best for" column.
OBJECTIVE_TAGS = {"time-to-tau": "to tau", HIGHEST_TAU: "top tau", "speedup-per-cost": "x/cost"}


@dataclass(frozen=True, slots=True)
class Query:
    """One search: what it starts from and within what, and its objective (time, cost or
    one of search --objective's: `goal`)."""

    plan: Plan
    catalog: Catalog
    space: Space
    constraints: Constraints
    objective: str = TIME
    goal: Goal | None = None


def plan_label(plan: Plan, catalog: Catalog) -> str:
    """'29+12 B200', '4+2 H200 tp2', '45 B300+19 H200'."""
    return split_label(plan, {key: gpu.name for key, gpu in catalog.gpus.items()})


def rows(result: Result, cheapest_first: bool = False) -> list[tuple[str, Candidate]]:
    """The winners first (one row per plan, naming every objective it wins), then the rest
    of the front, fastest first (cheapest first: the cost objective)."""
    picks: list[tuple[str, Candidate]] = []
    for tag, c in (
        ("cheap", result.cheapest_within_deadline),
        ("fast", result.fastest_within_budget),
        ("tok/cost", result.most_tokens_per_cost),
    ):
        if c is None:
            continue
        for i, (tags, other) in enumerate(picks):
            if other.plan == c.plan:
                picks[i] = (f"{tags}+{tag}", other)
                break
        else:
            picks.append((tag, c))
    shown = [c.plan for _, c in picks]
    front = reversed(result.front) if cheapest_first else result.front
    return picks + [("front", c) for c in front if c.plan not in shown]


def objective_rows(found: ObjectiveResult) -> list[tuple[str, Candidate]]:
    """A tau objective's rows: the front at its epochs, its winner first and tagged."""
    picked = rows(found.result)
    if found.winner is None:
        return picked
    tag = OBJECTIVE_TAGS[found.goal.objective]
    for i, (tags, c) in enumerate(picked):
        if c.plan == found.winner.plan:
            return [(f"{tag}+{tags}", c), *picked[:i], *picked[i + 1 :]]
    return [(tag, found.winner), *picked]


# Up to this many GPU types, the topology each wins on is said a line each, with the
# fastest plans (as the CLI says it); more, a line for each winning topology (the status
# would take the table's rows).
WIN_LINES = 3


def topology_wins(result: Result, names: dict[str, str]) -> list[str]:
    """Both topologies searched: which wins on each GPU type."""
    if len(result.topology_wins) <= WIN_LINES:
        return topology_win_lines(result, names)
    by_winner: dict[str, list[str]] = {}
    for w in result.topology_wins:
        by_winner.setdefault(w.winner, []).append(names.get(w.gpu, w.gpu))
    return [f"{winner} wins on {', '.join(gpus)}" for winner, gpus in by_winner.items()]


class SearchScreen(Screen[None]):
    """Search from the planner's current plan."""

    BINDINGS = [
        Binding("escape,f5", "app.pop_screen", "Back", id="search-back"),
        Binding(
            "ctrl+o",
            "open_result",
            "Open as plan",
            id="search-open",
            priority=True,
            tooltip="Make the highlighted result the current plan (the current one "
            "becomes the baseline)",
        ),
        Binding("f3", "show('search-front')", "Table", id="search-table-tab"),
        Binding("f4", "show('search-chart')", "Chart", id="search-chart-tab"),
    ]

    # The app's breakpoints (tui/app.py), -tiny reaching 74 columns: the limits' row
    # (deadline, budget, max GPUs) needs 73 with a budget in reference-GPU-hours.
    HORIZONTAL_BREAKPOINTS = [(0, "-tiny"), (74, "-narrow"), (100, "-normal"), (134, "-wide")]

    DEFAULT_CSS = """
    SearchScreen { overflow: hidden hidden; }
    SearchScreen #search-title { height: 1; background: $panel; width: 1fr;
        content-align: center middle; text-wrap: nowrap; text-overflow: ellipsis; }
    SearchScreen .search-row { height: 1; margin: 0 1; }
    SearchScreen .search-row Label { padding: 0 1 0 0; color: $text-muted; }
    SearchScreen .search-row Label.unit { padding: 0 2 0 1; }
    SearchScreen .search-row Input { width: 7; }
    SearchScreen #search-budget { width: 10; }  /* a budget in USD: "120,000" */
    SearchScreen .search-row Input.-invalid { background: $error 30%; }
    SearchScreen #search-gpus { width: 1fr; }
    SearchScreen #search-types { width: 1fr; }
    SearchScreen #search-switches { width: auto; }
    SearchScreen #search-limits > Horizontal { width: auto; }
    SearchScreen.-tiny #search-limits { layout: vertical; height: 2; }
    SearchScreen.-narrow #search-choices, SearchScreen.-tiny #search-choices {
        layout: vertical; height: 2; }
    SearchScreen.-narrow #search-switches, SearchScreen.-tiny #search-switches {
        height: 1; width: 1fr; }
    SearchScreen.-narrow #search-switches > Checkbox:first-child,
    SearchScreen.-tiny #search-switches > Checkbox:first-child { margin-left: 0; }
    SearchScreen Checkbox { margin-left: 1; }
    /* Below 74 columns the five switches take two rows (a grid of three columns). */
    SearchScreen.-tiny #search-choices { height: 3; }
    SearchScreen.-tiny #search-switches { layout: grid; grid-size: 3; grid-columns: auto;
        grid-gutter: 0 1; height: 2; }
    SearchScreen.-tiny #search-switches > Checkbox { margin: 0; }
    SearchScreen #search-objective { width: 22; }
    SearchScreen #search-goal Label.unit { padding: 0 2 0 0; }
    SearchScreen #search-status { height: auto; margin: 0 1; }
    SearchScreen #search-status.-none { color: $text-warning; }
    SearchScreen #search-status.-error { color: $error; }
    SearchScreen #search-table.-both { height: auto; max-height: 14; }
    SearchScreen #pareto.-both { margin-top: 1; }
    SearchScreen #search-table { height: 1fr; width: 100%; scrollbar-size: 1 1; }
    SearchScreen #search-left-out { height: 1; margin: 0 1; color: $text-muted; }
    """

    def __init__(self, planner: PlannerHost) -> None:
        super().__init__()
        self.planner = planner
        self.state = planner.state
        self.result: Result | None = None
        self.candidates: list[Candidate] = []
        self.query_count = 0  # the latest search; older ones are dropped
        self.started = 0.0
        self.share = 0.0  # of the running search, for its progress
        self._sweep: Sweep | None = None  # the last complete sweep, ranked again
        self._busy: Timer | None = None

    # --- layout ---------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        unit = self.state.projection.cost_unit
        yield Static(f"Search from {self.state.shown_name}", id="search-title", markup=False)
        # The limits: one row; under 74 columns (a budget in reference-GPU-hours needs 73)
        # the budget and the GPUs take a row below the deadline.
        with Horizontal(classes="search-row", id="search-limits"):
            with Horizontal(id="search-deadline-box"):
                yield Label("deadline")
                yield TextInput("", id="search-deadline", compact=True, placeholder="none")
                yield Label(F.DAYS.unit, classes="unit")
            with Horizontal(id="search-budget-box"):
                yield Label("budget")
                yield TextInput("", id="search-budget", compact=True, placeholder="none")
                yield Label(
                    fmt.cost(0, unit, compact=True).split(" ", 1)[-1] if unit != "USD" else "USD",
                    classes="unit",
                )
                yield Label("max GPUs")
                yield TextInput("64", id="search-max-gpus", compact=True)
        # The GPU types and the switches: one row when wide; below 100 columns the switches
        # take a row of their own, so that the GPU types show whole.
        with Horizontal(classes="search-row", id="search-choices"):
            with Horizontal(id="search-types"):
                yield Label("GPU types")
                yield TextInput("", id="search-gpus", compact=True, placeholder="all with a price")
            with Horizontal(id="search-switches"):
                yield from self._switches()
        # The objective (search --objective's, and the front's time or cost) and the tau
        # to reach.
        with Horizontal(classes="search-row", id="search-goal"):
            yield Label("objective")
            yield Select(
                [(o, o) for o in SEARCH_OBJECTIVES],
                value=TIME,
                allow_blank=False,
                compact=True,
                id="search-objective",
                tooltip="time, cost: the (days, cost) front, fastest or cheapest first; "
                "time-to-tau: the fewest epochs reaching min tau; tau: the highest tau "
                "within the deadline or budget; speedup-per-cost: the most serving speedup "
                "per unit of training cost",
            )
            yield Label(" ", classes="unit")
            yield Label("min tau")
            yield TextInput("", id="search-min-tau", compact=True, placeholder="none")
        yield Static("", id="search-status")
        # Below TALL rows the table and the chart take turns (tabs); from TALL, both show.
        yield Tabs(
            Tab("Front and winners", id="search-front"),
            Tab("Pareto chart", id="search-chart"),
            id="search-tabs",
        )
        yield DataTable(
            id="search-table",
            cursor_type="row",
            zebra_stripes=True,
            # A cell keeps its colours under the cursor: the verdict's ✓ stays green.
            cursor_foreground_priority="renderable",
        )
        yield Static("", id="search-left-out")
        yield Chart(id="pareto")
        yield KeysFooter()

    def _switches(self) -> ComposeResult:
        """What the search covers and how the limits are judged."""
        yield Checkbox(
            "mixed",
            id="search-mixed",
            compact=True,
            tooltip="The two roles may use different GPU types",
        )
        yield Checkbox(
            "one node",
            id="search-one-node",
            compact=True,
            tooltip="The pipeline needs both roles on one node",
        )
        yield Checkbox(
            "offline too",
            id="search-both-modes",
            compact=True,
            tooltip="Evaluate each split online and offline (capture to storage, then "
            "train; storage.tb bounds it); off: in the plan's own mode",
        )
        yield Checkbox(
            "both topologies",
            id="search-both-topologies",
            compact=True,
            tooltip="Search disaggregated splits and colocated GPU counts (every GPU runs "
            "both roles), each row naming its topology, and say which wins on each GPU type; "
            "off: in the plan's own topology (f8 on the planner switches it)",
        )
        yield Checkbox(
            "at worst",
            True,
            id="search-at-worst",
            compact=True,
            tooltip="Judge the deadline and the budget at the pessimistic end "
            "of the rates (off: at the central estimate). The front "
            "and the winners both come from the plans within them; "
            f"ties: {TIE_RULE}",
        )

    def on_mount(self) -> None:
        unit = self.state.projection.cost_unit
        cost = "$" if unit == "USD" else F.TOTAL_COST.narrowest
        # (head, key, drop): a table too wide for the screen leaves out the highest drop
        # first (as the CLI's search table does) and says which; 0: never left out.
        self.base_columns: list[tuple[str, str, int]] = [
            ("best for", "tag", 0),
            ("plan", "plan", 0),
            (F.TOKENS_PER_S.narrowest, "ktok", F.TOKENS_PER_S.drop),
            (F.DAYS.narrowest, F.DAYS.key, 0),
            ("at worst", "worst", 2),
            (cost, F.TOTAL_COST.key, 0),
            (F.BOTTLENECK.narrowest, F.BOTTLENECK.key, F.BOTTLENECK.drop),
            # The registry's other search figures, a column each.
            *((f.narrowest, f.key, f.drop) for f in F.rows(F.View.SEARCH)),
        ]
        self.columns = list(self.base_columns)  # and a tau objective's epochs and tau
        self.cells: list[list[str | Text]] = []  # a row per result, a cell per column
        self.query_one("#search-deadline", Input).focus()
        self._fit()
        self.refresh_search()

    def _fit(self) -> None:
        """Fill the table with the columns that fit its width; the note under it names
        those left out. Again at each resize: the widths depend on the screen's."""
        table = self.query_one("#search-table", DataTable)
        note = self.query_one("#search-left-out", Static)
        width = table.size.width
        if not table.display or not width:  # behind the chart, or not laid out yet
            note.display = False
            return
        widths = [
            max([cell_len(head), *(cell_len(str(row[i])) for row in self.cells)])
            for i, (head, _, _) in enumerate(self.columns)
        ]

        def choose(height: int) -> tuple[list[int], list[int]]:
            # A vertical scrollbar takes a column when the rows do not all show.
            rows = len(self.cells) + table.header_height
            free = width - (table.styles.scrollbar_size_vertical if rows > height else 0)
            return fitting(
                widths, [drop for _, _, drop in self.columns], free, 2 * table.cell_padding
            )

        keep, left = choose(table.size.height)
        if left and not note.display:
            # The note about to show takes rows from the table (CI drew the last column cut
            # by the scrollbar that then appeared): fit at the height the table will have.
            lines = -(-cell_len(self._note_text(left)) // max(self.size.width, 1))
            keep, left = choose(table.size.height - lines)
        shown = [self.columns[i][1] for i in keep]
        if list(table.columns) != shown or table.row_count != len(self.cells):
            cursor = table.cursor_row
            table.clear(columns=True)
            for i in keep:
                head, key, _ = self.columns[i]
                table.add_column(head, key=key)
            for row in self.cells:
                table.add_row(*(row[i] for i in keep))
            if self.cells:
                table.move_cursor(row=min(cursor, len(self.cells) - 1))
        note.update(self._note_text(left) if left else "")
        note.display = bool(left)

    def _note_text(self, left: list[int]) -> str:
        names = ", ".join(self.columns[i][0] for i in left)
        return f"left out at {self.size.width} columns: {names} (a wider terminal shows all)"

    # --- constraints ----------------------------------------------------------------------

    def wanted(self) -> Query:
        """The search the inputs ask for (PlanError naming the input that is wrong)."""

        def number(widget: str, what: str, whole: bool = False) -> float | None:
            text = self.query_one(f"#{widget}", Input).value.strip().replace(",", "")
            if not text:
                return None
            try:
                value = int(text) if whole else float(text)
            except ValueError:
                raise PlanError.at(
                    what, f"'{text}' is not a {'whole number' if whole else 'number'}", key=widget
                ) from None
            if not value > 0 or value == float("inf"):
                raise PlanError.at(what, "must be above 0 (empty for none)", key=widget)
            return value

        deadline = number("search-deadline", "deadline")
        budget = number("search-budget", "budget")
        max_gpus = number("search-max-gpus", "max GPUs", whole=True)
        if max_gpus is None or not 2 <= max_gpus <= MAX_SEARCH_GPUS:
            raise PlanError.at("max GPUs", f"2 to {MAX_SEARCH_GPUS}", key="search-max-gpus")
        state = self.state
        text = self.query_one("#search-gpus", Input).value
        keys = tuple(k.strip().lower() for k in text.replace(" ", ",").split(",") if k.strip())
        unknown = [k for k in keys if k not in state.catalog.gpus]
        if unknown:
            raise PlanError.at(
                "GPU types",
                f"unknown {', '.join(unknown)} (dflash-plan gpus lists them: "
                f"{', '.join(list(state.catalog.gpus)[:4])}, ...)",
                key="search-gpus",
            )
        space = default_space(
            state.plan,
            state.catalog,
            keys or None,
            max_gpus=int(max_gpus),
            mixed=self.query_one("#search-mixed", Checkbox).value,
            one_node=self.query_one("#search-one-node", Checkbox).value,
            modes=MODES if self.query_one("#search-both-modes", Checkbox).value else None,
            topologies=(
                TOPOLOGIES if self.query_one("#search-both-topologies", Checkbox).value else None
            ),
        )
        at_worst = self.query_one("#search-at-worst", Checkbox).value
        objective = str(self.query_one("#search-objective", Select).value)
        min_tau = number("search-min-tau", "min tau")
        goal = self._goal(objective, min_tau, deadline is not None or budget is not None)
        return Query(
            state.plan,
            state.catalog,
            space,
            Constraints(deadline, budget, at="pessimistic" if at_worst else "central"),
            objective,
            goal,
        )

    @staticmethod
    def _goal(objective: str, min_tau: float | None, bounded: bool) -> Goal | None:
        """search --objective's goal (None for time and cost), its rules said in the
        screen's words (PlanError naming the input)."""
        if min_tau is not None and objective not in TAU_TARGETS:
            raise PlanError.at(
                "min tau",
                f"goes with the objectives {' or '.join(TAU_TARGETS)} (empty for none)",
                key="search-min-tau",
            )
        if objective == "time-to-tau" and min_tau is None:
            raise PlanError.at(
                "min tau", "time-to-tau needs the tau to reach", key="search-min-tau"
            )
        if objective == HIGHEST_TAU and not bounded:
            raise PlanError.at(
                "objective tau",
                "needs a deadline or a budget (without either, more epochs always buy more tau)",
                key="search-deadline",
            )
        if objective not in OBJECTIVES:
            return None  # time, cost: the front's own
        return Goal(cast(Objective, objective), min_tau, DEFAULT_MAX_EPOCHS)

    def on_input_changed(self, event: Input.Changed) -> None:
        event.stop()
        self.refresh_search()

    def on_checkbox_changed(self, event: Checkbox.Changed) -> None:
        event.stop()
        self.refresh_search()

    def on_select_changed(self, event: Select.Changed) -> None:
        event.stop()
        self.refresh_search()

    def refresh_search(self) -> None:
        """Search again for the inputs as they are (the previous search is cancelled)."""
        for widget in self.query(".search-row Input"):
            widget.remove_class("-invalid")
        self.query_count += 1
        try:
            query = self.wanted()
        except PlanError as err:
            if err.key:
                self.query_one(f"#{err.key}", Input).add_class("-invalid")
            self.workers.cancel_group(self, "search")
            self._done()
            self._status(str(err), "-error")
            return
        self.started = time.monotonic()
        self.share = 0.0
        if self._busy is not None:
            self._busy.stop()
        self._busy = self.set_timer(PROGRESS_AFTER_S, self._show_busy)
        self.run_search(self.query_count, query)

    def _show_busy(self) -> None:
        """A search still running after PROGRESS_AFTER_S: say so, with its progress."""
        done = f"{self.share:.0%} of the GPU types" if self.share < 1 else "projecting the front"
        self._status(f"searching… {done} (change a constraint to start again)")

    # --- searching ------------------------------------------------------------------------

    @work(thread=True, exclusive=True, group="search")
    def run_search(self, count: int, query: Query) -> None:
        worker = get_current_worker()

        def progress(share: float) -> bool:
            if worker.is_cancelled:
                return False
            if count == self.query_count:
                self.share = share
                if time.monotonic() - self.started > PROGRESS_AFTER_S:
                    self.app.call_from_thread(self._progress, count)
            return True

        if query.goal is not None:
            try:
                found = search_objective(
                    query.plan, query.catalog, query.space, query.constraints, query.goal, progress
                )
            except PlanError as err:
                if not worker.is_cancelled:
                    self.app.call_from_thread(self._failed, count, str(err))
                return
            if not worker.is_cancelled:
                self.app.call_from_thread(self.show, count, query, found.result, found)
            return
        try:
            # Only the constraints changed: rank the last sweep again (no second sweep).
            swept = self._sweep
            if swept is None or (swept.plan, swept.catalog, swept.space) != (
                query.plan,
                query.catalog,
                query.space,
            ):
                swept = sweep(query.plan, query.catalog, query.space, progress)
                if swept.complete:
                    self._sweep = swept
            result = rank(swept, query.constraints)
        except PlanError as err:
            if not worker.is_cancelled:
                self.app.call_from_thread(self._failed, count, str(err))
            return
        if not worker.is_cancelled:
            self.app.call_from_thread(self.show, count, query, result)

    def _status(self, text: str, kind: str = "") -> None:
        status = self.query_one("#search-status", Static)
        status.update(text)
        status.set_classes(kind)

    def _progress(self, count: int) -> None:
        if count == self.query_count:
            self._show_busy()

    def _done(self) -> None:
        if self._busy is not None:
            self._busy.stop()
            self._busy = None

    def _failed(self, count: int, reason: str) -> None:
        if count == self.query_count:
            self._done()
            self._status(reason, "-error")

    def show(
        self, count: int, query: Query, result: Result, found: ObjectiveResult | None = None
    ) -> None:
        """A finished search: the table, the chart and what was searched (`found`: a tau
        objective's, its epochs and the tau they buy a column each)."""
        if count != self.query_count:
            return
        self._done()
        self.result = result
        picked = objective_rows(found) if found else rows(result, query.objective == COST)
        self.candidates = [c for _, c in picked]
        outcome = found.outcome if found else None
        self.columns = self.base_columns + (
            [(F.EPOCHS.narrowest, F.EPOCHS.key, 0), (F.TAU.narrowest, F.TAU.key, 0)]
            if outcome
            else []
        )
        bought = (
            [
                Text(fmt.figure(F.EPOCHS, outcome.epochs), justify="right"),
                Text(fmt.tau_spread(outcome.tau, *outcome.tau_range), justify="right"),
            ]
            if outcome
            else []
        )
        self.cells = []
        deadline = query.constraints.deadline_days
        for tag, c in picked:
            p = c.projection
            # Its job's rate and what bounds it (an offline run's training); "offline" in
            # the name of a plan that stores its hidden states.
            rate, stored = p.job.tokens_per_s, p.job.stored is not None
            worst = Text(fmt.cell(F.DAYS, c.pessimistic_days, p.cost_unit), justify="right")
            checks = [
                ok
                for ok in (c.meets_deadline_pessimistic, c.within_budget_pessimistic)
                if ok is not None
            ]
            if checks:
                worst.append(" ✓" if all(checks) else " ✗", style="green" if all(checks) else "red")
            self.cells.append(
                [
                    Text(tag, style="bold" if tag != "front" else "dim"),
                    plan_label(c.plan, query.catalog) + (" offline" if stored else ""),
                    Text(fmt.cell(F.TOKENS_PER_S, rate or 0, p.cost_unit), justify="right"),
                    Text(fmt.cell(F.DAYS, c.days, p.cost_unit), justify="right"),
                    worst,
                    # The head names the unit, "$" included: the amount alone.
                    Text(fmt.amount(c.cost), justify="right"),
                    fmt.figure(F.BOTTLENECK, p.job.bound),
                    *(
                        Text(fmt.cell(f, f.read(p), p.cost_unit), justify="right")
                        for f in F.rows(F.View.SEARCH)
                    ),
                    *bought,
                ]
            )
        # Rows changed: the table again, as wide as they need (at most the screen's).
        self.query_one("#search-table", DataTable).clear(columns=True)
        self._fit()
        if result.why_none:
            self._status(f"No plan: {result.why_none}.", "-none")
        else:
            k = query.constraints
            limits = (
                " and ".join(
                    x
                    for x in (
                        f"{deadline:g} days" if deadline is not None else "",
                        f"{k.budget:g}" if k.budget is not None else "",
                    )
                    if x
                )
                or "the limits"
            )
            judged = (
                ""
                if limits == "the limits"
                else " at worst"
                if k.at == "pessimistic"
                else " (central)"
            )
            # Covered and evaluated apart: the splits left out are proved dominated.
            pruned = (
                " (all evaluated)"
                if result.evaluated_splits == result.covered
                else f" ({result.evaluated_splits:,} evaluated, the rest dominated)"
            )
            text = (
                f"{result.covered:,} plans{pruned}, {result.feasible:,} within "
                f"{limits}{judged}, {len(result.front)} on the front"
            )
            if judged == " (central)":
                text += "; ✓: at worst too"
            names = {k: g.name for k, g in query.catalog.gpus.items()}
            if result.topology_wins:
                text += "\n" + "\n".join(topology_wins(result, names))
            if borrowed := fmt.borrowed_prices(result, names):
                text += f"\nprices not set in the plan: {borrowed}"
            if found is not None:
                text = f"{objective_words(found)}\n{text}"
            self._status(text)
        # The plans as they are now: the chart is drawn again at each resize.
        current, baseline = self.state.projection, self.state.baseline.projection
        self.query_one("#pareto", Chart).draw(
            lambda plt: draw_pareto(
                plt,
                result.front,
                current,
                baseline,
                result.cost_unit,
                deadline,
                query.constraints.budget,
            )
        )
        # The status above may now wrap to more lines, which takes rows from the table (and
        # a scrollbar a column, which cut the last one under load): fit once laid out.
        self.call_after_refresh(self._fit)

    # --- actions --------------------------------------------------------------------------

    def action_show(self, tab: str) -> None:
        self.query_one(Tabs).active = tab

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # The table and the chart both show on a tall screen: no keys to switch them.
        return action != "show" or self.size.height < TALL

    def on_tabs_tab_activated(self, event: Tabs.TabActivated) -> None:
        event.stop()
        self._arrange()

    def on_resize(self) -> None:
        self._arrange()

    def _arrange(self) -> None:
        """Tall enough: the table over the chart; else the active tab's."""
        both = self.size.height >= TALL
        chart = self.query_one(Tabs).active == "search-chart"
        self.refresh_bindings()
        self.query_one(Tabs).display = not both
        self.query_one("#search-table").set_class(both, "-both").display = both or not chart
        self.query_one("#pareto").set_class(both, "-both").display = both or chart
        self.call_after_refresh(self._fit)  # the table's width once laid out again

    def on_data_table_row_selected(self, event: DataTable.RowSelected) -> None:
        event.stop()
        self.action_open_result()

    def selected(self) -> Candidate | None:
        table = self.query_one("#search-table", DataTable)
        row = table.cursor_row
        return self.candidates[row] if 0 <= row < len(self.candidates) else None

    def action_open_result(self) -> None:
        chosen = self.selected()
        if chosen is None:
            self.notify("No result to open", severity="warning")
            return
        self.planner.flush()
        if self.state.broken:
            self.notify("Fix the marked field of the plan first", severity="warning")
            return
        previous = open_candidate(self.planner, chosen)
        self.app.pop_screen()
        self.app.notify(
            f"Opened {plan_label(chosen.plan, self.state.catalog)}; baseline: {previous}"
        )


def open_candidate(planner: PlannerHost, chosen: Candidate) -> str:
    """Make a search result the current plan, the plan it replaces the baseline (pinned,
    unless it is the baseline already); the baseline's name."""
    state = planner.state
    planner.flush()
    state.adopt(chosen.plan)
    planner.publish()
    return state.baseline.name
