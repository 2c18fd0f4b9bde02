"""The planning state: the plan being edited, its file, what was saved, the baseline, the
pinned scenarios, the last valid projection, what is wrong with the edits. Pure Python (no
textual): the planner screen holds one `Planner` and shows its `View` snapshots; the state
is tested on its own (tests/unit/test_state.py)."""

from __future__ import annotations

import contextlib
import copy
import math
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Protocol

from ..model.basics.errors import PlanError
from ..model.basics.terminal import terminal_safe, without_controls
from ..model.basics.validation import short_repr
from ..model.core.calibration import bind_to_workload, rebound
from ..model.core.labels import derived_name
from ..model.core.projection import Projection, project
from ..model.core.resolve import require_same_gpu_type
from ..model.explore.compare import Comparison, compare
from ..model.inputs import formats
from ..model.inputs.catalog import Catalog
from ..model.inputs.plan import Plan, Serving, plan_from_dict, plan_to_dict, save_plan
from .config import open_plan, with_target
from .fields import FIELDS, field_for, get, plan_path, put, show

# Edits that change the workload a measurement was taken on (model/core/calibration.py).
WORKLOAD_KEYS = frozenset(
    {
        "workload.target_model",
        "workload.avg_sample_tokens",
        "workload.num_anchors",
        "drafter.batch_size",
    }
)

# The fields that edit a colocated plan's GPUs (Planner._edit_colocated).
COLOCATED_KEYS = frozenset({"target.count", "target.tp", "target.gpu", "drafter.gpu"})


def colocated_counts(total: int, drafters: int, tp: int) -> tuple[int, int] | None:
    """The plan file's (target.count, drafter.count) for a colocated plan of `total`
    GPUs: whole target replicas of `tp`, the drafters' count kept while that leaves at
    least one replica; None when the file cannot hold it (each count is at least 1 and
    the targets a multiple of tp). Whether the total holds whole replicas is the model's
    rule (resolve.check_colocated), said on the GPUs field."""
    targets = max(tp, (total - drafters) // tp * tp)
    if total - targets < 1 or tp < 1:
        return None
    return targets, total - targets


# What reading a user's file (a plan, or the config.json it names) can raise besides
# PlanError, when the file is hostile or broken: reported as an error, never a crash.
FILE_ERRORS = (
    OSError,
    ValueError,
    TypeError,
    KeyError,
    IndexError,
    ArithmeticError,
    RecursionError,
    UnicodeError,
)


@dataclass(frozen=True, slots=True)
class Opened:
    """A plan read from a file (or the built-in plan) and checked end to end."""

    path: Path | None
    plan: Plan
    catalog: Catalog
    projection: Projection


@dataclass(frozen=True, slots=True)
class Problem:
    """What is wrong with the edited plan: the field it concerns (None: no field shows that
    key), a plain-English reason, and whether the edits still make a valid plan file (True
    when the plan only does not fit in memory)."""

    field: str | None
    reason: str
    valid_file: bool


@dataclass(frozen=True, slots=True)
class Scenario:
    name: str
    projection: Projection


@dataclass(frozen=True, eq=False)
class View:
    """One immutable snapshot of the state, everything the widgets show. A new object on
    every change (eq=False: two snapshots are never equal), so a reactive holding it fires
    its watchers each time."""

    generation: int  # bumps when a plan is opened or started anew
    source: str | None  # the field whose edit made this view
    values: dict[str, Any]  # field key -> value
    errors: dict[str, str]  # field key -> reason
    unparsed: frozenset[str]  # fields whose text is not a value
    projection: Projection | None
    comparison: Comparison | None
    baseline_name: str
    banner: str | None  # what is wrong, above the figures
    stale: bool  # the figures are not the edited plan's
    gpu_names: dict[str, str]  # role -> GPU name
    same_gpu: bool
    colocated: bool  # every GPU runs both roles: target.count shows the plan's GPUs
    model_options: tuple[tuple[str, str], ...]
    launch_format: str
    launch_formats: tuple[str, ...]  # the picker's entries: the registry's
    takes_template: bool  # the launch runs launch.template (the template bar shows)
    title: str
    dirty: bool
    name: str  # the plan's name, given or derived (the name field's placeholder)
    shown_name: str  # the name of the plan whose figures are shown (the title bar)


def plain(reason: str) -> str:
    """Validation wording as a person would say it."""
    reason = reason.removeprefix("Value error, ")
    for theirs, ours in (
        ("Input should be greater than or equal to", "must be at least"),
        ("Input should be less than or equal to", "must be at most"),
        ("Input should be greater than", "must be greater than"),
        ("Input should be less than", "must be less than"),
        ("Input should be a valid integer", "must be a whole number"),
        ("Input should be a valid number", "must be a number"),
        ("Input should be", "must be"),
    ):
        reason = reason.replace(theirs, ours)
    return reason


def reason_of(err: PlanError) -> str:
    """What a field shows of a PlanError: its reason (what is wrong and what is allowed),
    in plain words; the field already shows the key and the value."""
    return plain(err.reason)


def file_error(path: Path | None, err: Exception) -> PlanError:
    """A PlanError for whatever reading a user's file raised."""
    if isinstance(err, PlanError):
        return err
    where = str(path) if path else "built-in plan"
    if isinstance(err, OSError):
        return PlanError.at(where, f"cannot read: {err.strerror or err}")
    if isinstance(err, RecursionError):
        return PlanError.at(where, "a file it names is nested too deeply to read")
    first = str(err).strip().splitlines()[0] if str(err).strip() else type(err).__name__
    return PlanError.at(where, f"cannot use this plan: {plain(first)}")


def check_finite(p: Projection) -> None:
    """A projection with NaN or infinite figures (a measurement far below anything a GPU
    does, say) is an error, not a figure to show."""
    for value in (p.tokens_per_s, p.days, p.total_cost):
        if value is not None and not math.isfinite(value):
            raise PlanError.at(
                "plan",
                "the figures come out infinite or undefined; check the measured rates and prices",
            )


def read_plan(path: Path | None, catalog: Catalog) -> Opened:
    """Read and check a plan file end to end (the checks of `dflash-plan project`): a
    PlanError for anything wrong, whatever the file holds."""
    try:
        plan, with_model = open_plan(path, None, catalog)
        projection = project(plan, with_model)
        check_finite(projection)
    except FILE_ERRORS as err:
        raise file_error(path, err) from None
    return Opened(path, plan, with_model, projection)


def measured_rate(entry: Any) -> float | None:
    """The rate a calibration entry gives: a bare number, a measurement's tokens_per_s, or
    the first of several measurements'. (A rate typed into the field replaces the entry:
    it is a measurement on the plan's own workload.)"""
    if isinstance(entry, list | tuple):
        entry = entry[0] if entry else None
    if isinstance(entry, dict):
        entry = entry.get("tokens_per_s")
    return entry if isinstance(entry, int | float) and not isinstance(entry, bool) else None


def _without_none(node: Any) -> Any:
    """A document without its None values (TOML has none; a key left out is unset)."""
    if isinstance(node, dict):
        return {k: _without_none(v) for k, v in node.items() if v is not None}
    if isinstance(node, list | tuple):
        return [_without_none(v) for v in node]
    return node


def _content(doc: dict[str, Any]) -> dict[str, Any]:
    return {k: v for k, v in doc.items() if k != "name"}


# A recovery file with more values than this that cannot be restored is not opened.
MAX_NOT_RESTORED = 20
_MISSING: Any = object()


def _revert(doc: dict[str, Any], parts: list[str], opened: dict[str, Any]) -> bool:
    """Give the key at parts in doc the opened plan's value (remove it where that has
    none); where a table on the way is not a table, that whole entry. False when doc
    holds the opened plan's value already: nothing there to revert."""
    node: dict[str, Any] = doc
    theirs: Any = opened
    for i, part in enumerate(parts):
        if i < len(parts) - 1 and isinstance(node.get(part), dict):
            node = node[part]
            theirs = theirs.get(part) if isinstance(theirs, dict) else None
            continue
        kept = theirs.get(part, _MISSING) if isinstance(theirs, dict) else _MISSING
        if kept is _MISSING:
            return node.pop(part, _MISSING) is not _MISSING
        if node.get(part, _MISSING) == kept:
            return False
        node[part] = copy.deepcopy(kept)
        return True
    return False


class Planner:
    """One plan being edited. Edits go in with `edit`/`invalid`/`set_counts`; `recompute`
    validates and projects; `view()` is what to show."""

    def __init__(
        self,
        catalog: Catalog,
        path: Path | None = None,
        *,
        template: str | None = None,
        opened: Opened | None = None,
    ) -> None:
        self.template = template  # the user config's launch template
        self.generation = 0
        self.notices: list[str] = []  # to tell the user once (taken by take_notices)
        self.scenarios: list[Scenario] = []
        self.recovered: Path | None = None  # the recovery file the edits were opened from
        self.load(opened or read_plan(path, catalog))

    # --- opening ------------------------------------------------------------------------

    def read(self, path: Path | None) -> Opened:
        """Check a plan file against this state's catalog (raises PlanError)."""
        return read_plan(path, self.catalog)

    def load(self, opened: Opened) -> None:
        """Make an opened plan the current, saved and baseline plan."""
        self.forget_recovery()
        self.path, self.catalog = opened.path, opened.catalog
        self.plan = self.saved_plan = opened.plan
        self.doc: dict[str, Any] = plan_to_dict(opened.plan)
        self._loaded_name = opened.plan.name
        self._loaded_content = copy.deepcopy(_content(self.doc))
        self._user_name: str | None = None
        self.invalid: dict[str, str] = {}  # field -> why its text is not a value
        self.problem: Problem | None = None
        self.last_key = "target.count"  # where an error without a field shows
        self.source: str | None = None  # the field being typed into
        self.projection: Projection = opened.projection
        self.current = True  # the projection is the edited plan's
        name = opened.plan.name or (opened.path.name if opened.path else "built-in plan")
        self.baseline = Scenario(name, opened.projection)
        self.scenarios = [self.baseline]
        if (unfit := opened.projection.unfit) is not None:
            # By the field of the key to change (no field was edited yet).
            field = field_for(unfit.key, self.doc) or "target.gpu"
            self.problem = Problem(field, unfit.message, True)
        self.generation += 1

    # --- reading ------------------------------------------------------------------------

    @property
    def given_name(self) -> str:
        """The name the user gave, or the opened plan's while its content is unchanged;
        '' when the name is derived from the plan."""
        if self._user_name:
            return self._user_name
        if self._loaded_name and _content(self.doc) == self._loaded_content:
            return str(self._loaded_name)
        return ""

    @property
    def name(self) -> str:
        """The plan's name: the user's, else the opened plan's while its content is
        unchanged, else one derived from the plan (a changed plan never keeps the name of
        the plan it came from)."""
        return self.given_name or derived_name(self.doc, self.catalog)

    @property
    def shown_name(self) -> str:
        """The name of the plan whose figures are shown, as the screen draws it (a plan
        file's name may hold C1 controls and a recovery file's any character, which the
        terminal would act on): the plan's name while they are the edits' own; while they
        are stale, the user's name or else the name of the plan they were computed for (a
        name derived from edits that make no plan, or none that fits, named a plan nobody
        computed: "1000000000 targets" over the figures of 3)."""
        if self.current or self._user_name:
            return terminal_safe(self.name)
        computed = self.projection.plan
        return terminal_safe(computed.name or derived_name(plan_to_dict(computed), self.catalog))

    @property
    def colocated(self) -> bool:
        """The edited plan runs both roles on every GPU (workload.topology)."""
        return bool(self.doc["workload"].get("topology") == "colocated")

    @property
    def launch_format(self) -> str:
        return str(self.doc["launch"].get("format", formats.DEFAULT))

    @property
    def takes_template(self) -> bool:
        """The plan's launch format runs the user's command (launch.template)."""
        row = formats.FORMATS.get(self.launch_format)
        return row is not None and row.own_command

    @property
    def broken(self) -> bool:
        """The edits do not make a valid plan file (so there is nothing to save)."""
        return bool(self.invalid) or (self.problem is not None and not self.problem.valid_file)

    @property
    def dirty(self) -> bool:
        return self.broken or self.plan != self.saved_plan

    @property
    def stale(self) -> bool:
        """The projection shown is an earlier plan's: the edits are wrong or do not fit."""
        return not self.current

    @property
    def errors(self) -> dict[str, str]:
        errors = dict(self.invalid)
        if self.problem is not None and self.problem.field is not None:
            errors.setdefault(self.problem.field, self.problem.reason)
        return errors

    @property
    def banner(self) -> str | None:
        """What is wrong, in one line, for above the figures."""
        if self.invalid:
            key, reason = next(iter(self.invalid.items()))
            return f"{FIELDS[key].label}: {reason}"
        return self.problem.reason if self.problem else None

    @property
    def title(self) -> str:
        """The file's name, ● when changed ('unsaved' for a changed built-in plan): the
        header shows it after the plan's name, and both fit in 80 columns."""
        if self.path is None:
            return "unsaved" if self.dirty else ""
        return f"{self.path.name}{' ●' if self.dirty else ''}"

    def gpu_name(self, key: Any) -> str:
        spec = self.catalog.gpus.get(key) if isinstance(key, str) else None
        return spec.name if spec is not None else str(key)

    def values(self) -> dict[str, Any]:
        """Field key -> the value it shows. Prices show both views (ratio and USD) of each
        role's price as the projection worked them out."""
        values = {key: get(self.doc, plan_path(key, self.doc)) for key in FIELDS}
        for key, spec in FIELDS.items():  # a switch's picker holds its shown choice
            if spec.kind == "switch":
                values[key] = show(bool(values[key]))
        # The serving table is written only when set (plan_to_dict): a plan that leaves it
        # out shows the defaults it is read with.
        for key in FIELDS:
            if key.startswith("serving.") and values[key] is None:
                values[key] = getattr(Serving(), key.removeprefix("serving."))
        values["name"] = terminal_safe(self.given_name)  # shown, not saved: see shown_name
        if self.colocated:  # the GPUs field holds the plan's GPUs, each running both roles
            values["target.count"] = self.doc["target"]["count"] + self.doc["drafter"]["count"]
        for role in ("target", "drafter"):
            values[f"measured.{role}"] = measured_rate(values[f"measured.{role}"])
        if values["launch.template"] is None:
            values["launch.template"] = self.template
        if self.current:
            plan = self.projection.plan
            for role in ("target", "drafter"):
                price = self.projection.prices.by_gpu.get(getattr(plan, role).gpu)
                if price is None:
                    continue
                for view, figure in (("ratio", price.ratio), ("usd", price.usd_per_gpu_hour)):
                    key = f"price.{role}.{view}"
                    if key not in self.invalid:
                        values[key] = round(figure, 4) if figure is not None else None
        return values

    def view(self) -> View:
        comparison = (
            compare(self.projection, self.baseline.projection)
            if self.projection is not None
            else None
        )
        models = tuple(
            (m.name + (" (config.json)" if key not in _preset_keys() else ""), key)
            for key, m in self.catalog.models.items()
        )
        return View(
            generation=self.generation,
            source=self.source,
            values=self.values(),
            errors=self.errors,
            unparsed=frozenset(self.invalid),
            projection=self.projection,
            comparison=comparison,
            baseline_name=terminal_safe(self.baseline.name),
            banner=self.banner,
            stale=self.stale,
            gpu_names={
                role: self.gpu_name(self.doc[role]["gpu"]) for role in ("target", "drafter")
            },
            same_gpu=self.doc["target"]["gpu"] == self.doc["drafter"]["gpu"],
            colocated=self.colocated,
            model_options=models,
            launch_format=self.launch_format,
            launch_formats=formats.names(),
            takes_template=self.takes_template,
            title=self.title,
            dirty=self.dirty,
            name=terminal_safe(self.name),
            shown_name=self.shown_name,
        )

    # --- editing ------------------------------------------------------------------------

    def edit(self, key: str, value: Any) -> bool:
        """A value typed or chosen in a field. True when the plan changed (recompute)."""
        was_invalid = self.invalid.pop(key, None) is not None
        self.last_key = self.source = key
        if key == "name":
            name = str(value).strip() or None
            changed = name != self._user_name
            self._user_name = name
            return changed or was_invalid
        if self.colocated and key in COLOCATED_KEYS:
            return self._edit_colocated(key, value) or was_invalid
        path = plan_path(key, self.doc)
        changed = get(self.doc, path) != value
        if changed and key in WORKLOAD_KEYS and not self.broken:
            # A measured rate belongs to the workload it was measured on: write that
            # workload into the measurements before it changes, so the projection rescales
            # them by physics (and says so) instead of reusing them as they are.
            before = self.plan
            bound = plan_to_dict(bind_to_workload(before))["calibration"]
            self.doc["calibration"] = bound
            put(self.doc, path, value)
            try:
                after = plan_from_dict(copy.deepcopy({**self.doc, "name": self.name}), "plan")
            except PlanError:
                after = None
            if after is not None:
                self.notices += rebound(before, after)
            return True
        if changed:
            if key.startswith("price."):
                # A price typed in one view (ratio or USD) replaces the other view's figure.
                other = "usd_per_gpu_hour" if path[1] == "ratio" else "ratio"
                put(self.doc, ("cost", other, path[2]), None)
            put(self.doc, path, value)
        return changed or was_invalid

    def _edit_colocated(self, key: str, value: Any) -> bool:
        """An edit of the GPUs a colocated plan runs on. Its GPUs field is the plan's
        GPUs (target.count + drafter.count, each running both roles), kept in the file as
        the two counts: whole target replicas, the drafters' count kept while that leaves
        one (toggled back to disaggregated, the split is the one it had). Either role's
        GPU type sets both (one GPU type runs both). True when the plan changed."""
        target, drafter = self.doc["target"], self.doc["drafter"]
        if key in ("target.gpu", "drafter.gpu"):
            changed = (target["gpu"], drafter["gpu"]) != (value, value)
            target["gpu"] = drafter["gpu"] = value
            return changed
        total, tp = target["count"] + drafter["count"], target["tp"]
        if key == "target.count":
            total = value
        else:  # target.tp: the same GPUs in replicas of another size
            tp = value
        counts = colocated_counts(total, drafter["count"], tp)
        if counts is None and key == "target.count":
            self.mark_invalid(
                key,
                f"must be at least {2 * tp} (a colocated plan's file keeps target.count and "
                f"drafter.count, each at least {tp})",
            )
            return False
        before = (target["count"], drafter["count"], target["tp"])
        if counts is not None:
            target["count"], drafter["count"] = counts
        target["tp"] = tp  # GPUs too few for replicas of tp: the model says so
        return before != (target["count"], drafter["count"], target["tp"])

    def mark_invalid(self, key: str, reason: str) -> None:
        """Text in a field that is not a value of its kind: nothing to compute until fixed."""
        self.invalid[key] = reason
        self.last_key = self.source = key
        self.current = False

    def set_counts(self, targets: int, drafters: int) -> None:
        for key, value in (("target.count", targets), ("drafter.count", drafters)):
            self.invalid.pop(key, None)
            put(self.doc, tuple(key.split(".")), value)
        self.last_key, self.source = "target.count", None
        self.recompute()

    def recompute(self) -> None:
        """Validate the edited plan and project it; on an error keep the last valid
        projection (stale) and say what is wrong, on which field."""
        if self.invalid:
            self.current = False
            return
        self.problem = None
        doc = copy.deepcopy(self.doc)
        doc["name"] = self.name
        try:
            plan, catalog, projection = self._projected(doc, "plan")
        except PlanError as err:
            self.problem = Problem(self._field_of(err.key), reason_of(err), False)
            self.current = False
            return
        self.plan, self.catalog = plan, catalog
        # A plan that cannot run (GPU memory, storage, the store's host memory: one rule,
        # Projection.does_not_fit) is said by the field just edited.
        if (unfit := projection.does_not_fit) is not None:
            self.problem = Problem(self.last_key, unfit, True)
            if self.projection.does_not_fit is None:  # keep the last plan that fitted
                self.current = False
                return
        self.projection, self.current = projection, True

    def _field_of(self, plan_key: str | None) -> str:
        """The field that shows an error about a plan key: the field that edits it, the
        GPUs field for the drafters' count of a colocated plan (its own row is hidden:
        both counts are the GPUs field's), else the field last edited."""
        field = field_for(plan_key, self.doc) or self.last_key
        return "target.count" if self.colocated and field == "drafter.count" else field

    def _projected(self, doc: dict[str, Any], where: str) -> tuple[Plan, Catalog, Projection]:
        """A plan document read as a plan file is (a table left out has its defaults) and
        checked end to end against this catalog: the plan, the catalog with its target
        model, the projection. A PlanError naming the key it concerns for anything wrong
        (what reading a config.json the plan names raised concerns workload.target_model)."""
        try:
            plan = plan_from_dict(doc, where)
            catalog = with_target(self.catalog, plan, self.path.parent if self.path else None)
            projection = project(plan, catalog)
            check_finite(projection)
        except PlanError:
            raise
        except FILE_ERRORS as err:  # a config.json the plan names
            error = file_error(None, err)  # said whole on the field, as a read error is
            raise PlanError.said(str(error), "workload.target_model", where=error.where) from None
        return plan, catalog, projection

    def take_notices(self) -> list[str]:
        """What the user should be told about the last edits, once."""
        notices, self.notices = self.notices, []
        return notices

    # --- GPUs between roles -------------------------------------------------------------

    def move(self, to_drafters: bool) -> str | None:
        """Move one GPU (one TP replica when tp > 1) between the roles; the reason when
        it cannot."""
        if self.broken:
            return "Fix the marked field first"
        if self.colocated:
            return (
                "Colocated: every GPU runs the target and the drafter, no GPU to move; "
                "change GPUs to change how many"
            )
        plan = self.plan
        try:
            require_same_gpu_type(plan, "< and > move a GPU from one role to the other")
        except PlanError as err:
            return str(err)
        tp, t, d = plan.target.tp, plan.target.count, plan.drafter.count
        step = tp if to_drafters else -tp
        if t - step < tp:
            return "At least one target replica must stay"
        if d + step < 1:
            return "At least one drafter GPU must stay"
        self.set_counts(t - step, d + step)
        return None

    def balance_input(self) -> Plan:
        """The plan to balance (raises PlanError when it cannot be)."""
        if self.broken:
            said = "Fix the marked field first"
            raise PlanError(said, where="plan", reason=said)
        if self.colocated:  # no split to balance: why, and the best split beside
            from ..model.explore.balance import balance_note

            said = balance_note(self.plan, self.catalog) or "colocated: no split to balance"
            raise PlanError(said, where="plan", reason=said)
        require_same_gpu_type(self.plan, "balance moves GPUs between roles")
        return self.plan

    def apply_balance(self, source: Plan, best: Plan) -> bool:
        """Take a balanced split, unless the plan changed while it was worked out."""
        if self.plan != source or self.broken:
            return False
        self.set_counts(best.target.count, best.drafter.count)
        return True

    # --- baseline and scenarios ---------------------------------------------------------

    def pin(self, as_baseline: bool = False) -> str | None:
        """Keep the current plan as a scenario, and make it the baseline when asked (the
        Comparison view pins beside the baseline; ctrl+l pins the baseline); the reason
        when it cannot be."""
        if not self.current:
            return "Fix the plan first: a stale projection cannot be pinned"
        pinned = Scenario("pinned: " + self.name, self.projection)
        self.scenarios.append(pinned)
        if as_baseline:
            self.baseline = pinned
        return None

    def make_baseline(self, scenario: Scenario) -> str | None:
        """Compare everything against a pinned scenario; the reason when it cannot be."""
        if scenario not in self.scenarios:
            return "That scenario is not pinned"
        self.baseline = scenario
        return None

    def unpin(self, scenario: Scenario) -> str | None:
        """Drop a pinned scenario (the last one stays: it is the baseline); the reason
        when it cannot be dropped."""
        if scenario not in self.scenarios:
            return "That scenario is not pinned"
        if len(self.scenarios) == 1:
            return "The last scenario is the baseline: it stays"
        self.scenarios.remove(scenario)
        if scenario is self.baseline:
            self.baseline = self.scenarios[-1]
        return None

    def rename(self, scenario: Scenario, name: str) -> None:
        """Give a pinned scenario a new name (the baseline keeps being the baseline)."""
        renamed = Scenario(name, scenario.projection)
        self.scenarios[self.scenarios.index(scenario)] = renamed
        if scenario is self.baseline:
            self.baseline = renamed

    def adopt(self, plan: Plan) -> str | None:
        """Make a plan (a search result, a pinned scenario) the current plan, exactly: its
        GPUs, counts, workload, prices and measurements. The plan it replaces becomes the
        baseline unless it is the baseline already. The reason when it cannot be done."""
        if self.broken:
            return "Fix the marked field first"
        if self.plan != self.baseline.projection.plan:
            self.pin(as_baseline=True)
        self.doc = plan_to_dict(plan.model_copy(update={"name": ""}))
        self._user_name = None
        self.last_key, self.source = "target.count", None
        self.recompute()
        return None

    # --- files --------------------------------------------------------------------------

    def save(self, path: Path) -> None:
        """Write the plan (atomically); OSError when it cannot be written."""
        save_plan(self.plan, path)
        self.path, self.saved_plan = path, self.plan
        self.forget_recovery()

    # --- recovery (tui/recovery.py writes and finds the files) ---------------------------

    def recovery_text(self) -> str | None:
        """The plan being edited, unsaved edits included (those not yet projected too),
        as a plan file's text; None when nothing is unsaved. The edits are written as they
        are, even when they do not make a valid plan yet; text typed that is not a value
        is named in a comment."""
        # An edit still waiting for its debounce; the edits are written even if it fails.
        with contextlib.suppress(Exception):
            self.recompute()
        if not self.dirty:
            return None
        import tomli_w

        doc = _without_none({**copy.deepcopy(self.doc), "name": self.given_name})
        if not doc["name"]:
            del doc["name"]
        where = str(self.path) if self.path is not None else "the built-in plan"
        lines = [
            f"# dflash-plan recovery file: unsaved edits to {where}.",
            "# dflash-plan offers to open it at its next start; saving then writes "
            f"{where if self.path is not None else 'a plan file'}.",
        ]
        lines += [
            f"# {FIELDS[key].label}: the text typed was not a value ({reason})"
            for key, reason in self.invalid.items()
        ]
        return "\n".join(lines) + "\n" + tomli_w.dumps(doc)

    def restore(self, doc: dict[str, Any], recovered: Path | None = None) -> list[str]:
        """Take a recovery file's plan as the edits of the plan opened now (unsaved, saved
        to this plan's file), read as a plan file is (a table left out has its defaults)
        and checked against this catalog. A value that cannot be restored (a GPU of a
        --hardware file not given now, a config.json since deleted, a value that is not
        valid) keeps the opened plan's: what was not restored is returned, one
        "key = value (why)" each. PlanError when the file is not a plan this can open."""
        where = str(recovered) if recovered is not None else "recovery file"
        doc = copy.deepcopy(doc)
        if isinstance(doc.get("name"), str):  # shown in the title: nothing a terminal runs
            doc["name"] = without_controls(doc["name"]).strip()
        opened = _content(self.doc)
        lost: list[str] = []
        while True:
            try:
                plan = self._projected(doc, where)[0]
                break
            except PlanError as err:
                parts = err.key.split(".") if err.key else []
                value = get(doc, tuple(parts))  # a TOML document holds no None
                if len(lost) >= MAX_NOT_RESTORED or not parts or not _revert(doc, parts, opened):
                    raise
                shown = "(left out)" if value is None else short_repr(value)
                lost.append(f"{err.key} = {shown} ({reason_of(err)})")
        self.doc = plan_to_dict(plan)
        name = self.doc.pop("name", "")
        self._user_name = str(name).strip() or None
        self.invalid = {}
        self.last_key, self.source = "target.count", None
        self.recovered = recovered
        self.recompute()
        self.generation += 1
        return lost

    def forget_recovery(self) -> None:
        """The recovered edits were saved or dropped: their recovery file goes."""
        if self.recovered is not None:
            from .recovery import discard

            discard(self.recovered)
            self.recovered = None

    def launch_input(self) -> tuple[Plan, Catalog, str, str | None]:
        """What a launch script is generated from: plan, catalog, format, template."""
        return self.plan, self.catalog, self.plan.launch.format, self.template


def _preset_keys() -> frozenset[str]:
    from ..model.inputs.targets import PRESETS

    return frozenset(PRESETS)


class PlannerHost(Protocol):
    """What a view opened over the planner (search, scenarios) needs of the planner screen:
    its state, to recompute waiting keystrokes first and to show the state once changed.
    (The views name this, not the screen, which opens them: no import runs back up.)"""

    @property
    def state(self) -> Planner: ...

    def flush(self) -> None: ...

    def publish(self) -> None: ...
