"""The interactive planner: one plan, edited live; every figure comes from the model."""

from __future__ import annotations

import copy
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from textual.app import App, ComposeResult, SystemCommand
from textual.binding import Binding
from textual.containers import Horizontal
from textual.screen import ModalScreen, Screen
from textual.timer import Timer
from textual.widgets import Footer, Header, TabbedContent, TabPane

from ..model.compare import compare
from ..model.errors import PlanError
from ..model.launch import FORMATS, generate
from ..model.plan import Plan, default_plan, plan_from_dict, plan_to_dict, save_plan
from ..model.projection import Catalog, Projection, balance, project
from ..model.targets import PRESETS
from ..model.tomlfile import write_atomic
from .config import load_catalog, open_plan, user_template, with_target
from .fields import FIELDS, get, plan_path, put
from .screens import ConfirmDialog, HelpScreen, PathDialog
from .widgets import Field, InputsPanel, LaunchPanel, ResultsPanel

DEBOUNCE_S = 0.15


class PlannerApp(App[None]):
    """`PlannerApp()` opens the built-in plan; `PlannerApp(path)` opens a plan file."""

    CSS_PATH = "app.tcss"
    TITLE = "dflash-plan"
    BINDINGS = [
        Binding("ctrl+s", "save", "Save", id="save"),
        Binding("f2", "save_as", "Save as", id="save-as", show=False),
        Binding("ctrl+o", "open", "Open", id="open"),
        Binding("ctrl+n", "new", "New", id="new", show=False),
        Binding("less_than_sign", "to_drafter", "GPU→drafter", id="split-to-drafter",
                key_display="<", priority=True),
        Binding("greater_than_sign", "to_target", "GPU→target", id="split-to-target",
                key_display=">", priority=True),
        Binding("ctrl+b", "balance", "Balance", id="balance"),
        Binding("ctrl+l", "pin_baseline", "Pin baseline", id="pin-baseline", show=False),
        Binding("ctrl+y", "copy_launch", "Copy launch", id="copy-launch", show=False),
        Binding("ctrl+e", "export_launch", "Export launch", id="export-launch", show=False),
        Binding("ctrl+t", "toggle_theme", "Light/dark", id="toggle-theme", show=False),
        Binding("f1", "help", "Help", id="help"),
        Binding("question_mark", "help", "Help", id="help-question", show=False),
        Binding("ctrl+q", "quit", "Quit", id="quit", priority=True),
    ]

    def __init__(self, plan_path: Path | str | None = None, *, hardware: list[Path] | None = None,
                 debounce_s: float = DEBOUNCE_S) -> None:
        super().__init__()
        self.debounce_s = debounce_s
        self.catalog: Catalog = load_catalog(hardware)
        self.path: Path | None = Path(plan_path) if plan_path is not None else None
        plan, self.catalog = open_plan(self.path, None, self.catalog)
        self._load(plan)
        self._timer: Timer | None = None
        self._last_key = "target.count"
        self.template = user_template()          # the user config's launch template
        self.recompute_count = 0
        self.launch_format = plan.launch.format
        self.launch_text = ""

    # --- state -----------------------------------------------------------------------

    def _load(self, plan: Plan) -> None:
        """Make plan the current, saved and baseline plan."""
        self.plan = plan
        self.saved_plan: Plan | None = plan if self.path is not None else None
        self.doc: dict[str, Any] = plan_to_dict(plan)
        # Text that is not a value (per field), and what is wrong with the plan as a whole
        # (field, reason, whether the plan is still a valid file: True when it only does
        # not fit in memory).
        self.invalid: dict[str, str] = {}
        self.problem: tuple[str, str, bool] | None = None
        self.projection: Projection = project(plan, self.catalog)
        self.baseline: Projection = self.projection
        self.baseline_name = plan.name or (self.path.name if self.path else "built-in plan")
        self.stale: str | None = None
        if not self.projection.fits:
            self.problem = ("target.gpu", _unfit(self.projection), True)
            self.stale = self.problem[1]

    @property
    def broken(self) -> bool:
        """The edits do not make a valid plan file (so there is nothing to save)."""
        return bool(self.invalid) or (self.problem is not None and not self.problem[2])

    @property
    def dirty(self) -> bool:
        return self.broken or self.saved_plan != self.plan

    # --- layout ------------------------------------------------------------------------

    def compose(self) -> ComposeResult:
        yield Header(show_clock=False, icon="◆")
        gpu_options = [(gpu.name, key) for key, gpu in self.catalog.gpus.items()]
        model_options = [(m.name, key) for key, m in PRESETS.items()]
        spec = self.plan.workload.target_model
        if spec not in PRESETS:
            model_options.append((self.catalog.models[spec].name + " (config.json)", spec))
        with Horizontal(id="main"):
            values = {key: get(self.doc, plan_path(key, self.doc)) for key in FIELDS}
            yield InputsPanel(gpu_options, model_options, values)
            with TabbedContent(id="tabs", initial="tab-results"):
                with TabPane("Projection", id="tab-results"):
                    yield ResultsPanel(id="results")
                with TabPane("Launch", id="tab-launch"):
                    yield LaunchPanel(FORMATS, self.launch_format)
        yield Footer()

    def on_mount(self) -> None:
        self.theme = "textual-dark"
        self._fill_inputs()
        self._push()

    def _fill_inputs(self) -> None:
        panel = self.query_one(InputsPanel)
        for key in FIELDS:
            field = panel.field(key)
            field.set_value(get(self.doc, plan_path(key, self.doc)))
            field.set_error(self.invalid.get(key))
        if self.problem:
            panel.field(self.problem[0]).set_error(self.problem[1])
        self._label_roles()

    def _label_roles(self) -> None:
        """Price and calibration fields name the GPU they apply to."""
        panel = self.query_one(InputsPanel)
        names = {role: self.catalog.gpus[self.doc[role]["gpu"]].name
                 for role in ("target", "drafter")}
        same = self.doc["target"]["gpu"] == self.doc["drafter"]["gpu"]
        for key in ("price.drafter.ratio", "price.drafter.usd"):
            panel.field(key).display = not same
        for role in ("target", "drafter"):
            panel.field(f"measured.{role}").query_one(".field-unit").update(names[role])

    def _push(self) -> None:
        """Send the current projection (and launch script) down to the widgets."""
        versus = compare(self.projection, self.baseline)
        self.query_one(ResultsPanel).show(self.projection, versus, self.baseline_name, self.stale)
        self._refresh_prices()
        self._refresh_launch()
        self._refresh_title()

    def _refresh_prices(self) -> None:
        """The price fields show both views of each GPU's price (edit one, see the other)."""
        panel = self.query_one(InputsPanel)
        prices = self.projection.prices.by_gpu
        for role in ("target", "drafter"):
            gpu = self.projection.plan.target.gpu if role == "target" else self.projection.plan.drafter.gpu
            price = prices.get(gpu)
            if price is None or f"price.{role}.ratio" in self.invalid or f"price.{role}.usd" in self.invalid:
                continue
            panel.field(f"price.{role}.ratio").set_value(
                round(price.ratio, 4) if price.ratio is not None else None)
            panel.field(f"price.{role}.usd").set_value(
                round(price.usd_per_gpu_hour, 4) if price.usd_per_gpu_hour is not None else None)

    def _refresh_launch(self) -> None:
        try:
            self.launch_text = generate(self.plan, self.catalog, self.launch_format,
                                        template=self.template).text
        except PlanError as err:
            self.launch_text = f"# cannot write a {self.launch_format} launch for this plan:\n# {err}\n"
        self.query_one(LaunchPanel).show(self.launch_text)

    def _refresh_title(self) -> None:
        where = str(self.path) if self.path else "built-in plan (unsaved)"
        self.sub_title = f"{where}{' ●' if self.dirty and self.path else ''}"

    # --- editing -------------------------------------------------------------------------

    def on_field_edited(self, message: Field.Edited) -> None:
        key, value = message.key, message.value
        path = plan_path(key, self.doc)
        was_invalid = self.invalid.pop(key, None) is not None
        self.query_one(InputsPanel).field(key).set_error(None)
        changed = get(self.doc, path) != value
        if changed:
            if key.startswith("price."):
                # A price typed in one view (ratio or USD) replaces the other view's figure.
                other = "usd_per_gpu_hour" if path[1] == "ratio" else "ratio"
                put(self.doc, ("cost", other, path[2]), None)
            put(self.doc, path, value)
        if key in ("target.gpu", "drafter.gpu") and changed:
            self._label_roles()
            for role_key in ("measured.target", "measured.drafter"):
                self.query_one(InputsPanel).field(role_key).set_value(
                    get(self.doc, plan_path(role_key, self.doc)))
        if changed or was_invalid:
            self._schedule(key)

    def on_field_invalid(self, message: Field.Invalid) -> None:
        self._mark(message.key, message.reason)
        self._cancel()

    def _mark(self, key: str, reason: str) -> None:
        self.invalid[key] = reason
        self.query_one(InputsPanel).field(key).set_error(reason)
        self._set_stale(f"{FIELDS[key].label}: {reason}")

    def _set_stale(self, reason: str) -> None:
        self.stale = reason
        versus = compare(self.projection, self.baseline)
        self.query_one(ResultsPanel).show(self.projection, versus, self.baseline_name, reason)
        self._refresh_title()

    def _cancel(self) -> None:
        if self._timer is not None:
            self._timer.stop()
            self._timer = None

    def _schedule(self, key: str) -> None:
        """Recompute once the burst of keystrokes is over."""
        self._cancel()
        self._last_key = key
        self._timer = self.set_timer(self.debounce_s, self.recompute)

    def recompute(self) -> None:
        self._timer = None
        if self.invalid:
            return
        self.recompute_count += 1
        key = self._last_key
        if self.problem is not None:
            self.query_one(InputsPanel).field(self.problem[0]).set_error(None)
            self.problem = None
        try:
            plan = plan_from_dict(copy.deepcopy(self.doc), "plan")
            catalog = with_target(self.catalog, plan, self.path.parent if self.path else None)
            projection = project(plan, catalog)
        except PlanError as err:
            self._problem(self._field_for(str(err), key), str(err).removeprefix("plan: "), False)
            return
        self.plan, self.catalog = plan, catalog
        if not projection.fits:
            self._problem(key, _unfit(projection), True)
            return
        self.projection, self.stale = projection, None
        self._push()

    def _problem(self, key: str, reason: str, plan_is_valid: bool) -> None:
        self.problem = (key, reason, plan_is_valid)
        self.query_one(InputsPanel).field(key).set_error(reason)
        self._set_stale(reason)

    def _field_for(self, message: str, fallback: str) -> str:
        """The field an error message is about (its plan key appears in it), else fallback."""
        for key in FIELDS:
            dotted = ".".join(plan_path(key, self.doc))
            if f"{dotted} " in message or f"{dotted}:" in message or f"'{dotted}'" in message:
                return key
        return fallback

    # --- actions ---------------------------------------------------------------------------

    def check_action(self, action: str, parameters: tuple[object, ...]) -> bool | None:
        # The split keys are priority bindings: in a dialog, let < and > reach its input.
        return not (action in ("to_drafter", "to_target") and isinstance(self.screen, ModalScreen))

    def _set_counts(self, targets: int, drafters: int) -> None:
        panel = self.query_one(InputsPanel)
        for key, value in (("target.count", targets), ("drafter.count", drafters)):
            put(self.doc, (key.split(".")[0], "count"), value)
            self.invalid.pop(key, None)
            panel.field(key).set_error(None)
            control = panel.field(key).control
            with control.prevent(control.Changed):
                control.value = str(value)
        self._schedule("target.count")

    def _move(self, to_drafters: bool) -> None:
        """Move one GPU (one TP replica when tp > 1) between the two roles."""
        tp, t, d = self.plan.target.tp, self.plan.target.count, self.plan.drafter.count
        step = tp if to_drafters else -tp
        if self.plan.target.gpu != self.plan.drafter.gpu:
            self.notify("Both roles must use the same GPU type to move GPUs between them",
                        severity="warning")
        elif t - step < tp:
            self.notify("At least one target replica must stay", severity="warning")
        elif d + step < 1:
            self.notify("At least one drafter GPU must stay", severity="warning")
        else:
            self._set_counts(t - step, d + step)

    def action_to_drafter(self) -> None:
        """Move one GPU (one TP replica) from the targets to the drafters."""
        self._move(to_drafters=True)

    def action_to_target(self) -> None:
        """Move one GPU (one TP replica) from the drafters to the targets."""
        self._move(to_drafters=False)

    def action_balance(self) -> None:
        """The split of the same GPUs with the highest throughput."""
        try:
            best = balance(self.plan, self.catalog)
        except PlanError as err:
            self.notify(str(err), severity="warning")
            return
        self._set_counts(best.target.count, best.drafter.count)
        t, d = best.target.count, best.drafter.count
        self.notify(f"Balanced: {t} target{'s' * (t != 1)} + {d} drafter{'s' * (d != 1)}")

    def action_pin_baseline(self) -> None:
        """Make the current plan the baseline the deltas compare against."""
        if self.stale:
            self.notify("Fix the plan first: a stale projection cannot be the baseline",
                        severity="warning")
            return
        self.baseline = self.projection
        self.baseline_name = "pinned: " + (self.plan.name or "current plan")
        self._push()
        self.notify("Baseline pinned to the current plan")

    def action_help(self) -> None:
        """What every number means and what the model assumes."""
        if not isinstance(self.screen, HelpScreen):
            self.push_screen(HelpScreen())

    def action_toggle_theme(self) -> None:
        """Switch between the dark and the light theme."""
        self.theme = "textual-light" if self.theme == "textual-dark" else "textual-dark"

    def action_copy_launch(self) -> None:
        """Copy the launch script to the clipboard."""
        self.copy_to_clipboard(self.launch_text)
        self.notify(f"Copied the {self.launch_format} launch script to the clipboard")

    def on_launch_panel_format_changed(self, message: LaunchPanel.FormatChanged) -> None:
        """The chosen format becomes the plan's launch.format (saved with the plan)."""
        self.launch_format = message.fmt
        put(self.doc, ("launch", "format"), message.fmt)
        if not self.broken:
            self.plan = self.plan.model_copy(
                update={"launch": self.plan.launch.model_copy(update={"format": message.fmt})})
        self._refresh_launch()
        self._refresh_title()

    # files

    def _savable(self) -> bool:
        if self.broken:
            self.notify("Fix the marked fields before saving", severity="error")
            return False
        return True

    def _write(self, path: Path) -> bool:
        try:
            save_plan(self.plan, path)
        except OSError as err:
            self.notify(f"Could not save {path}: {err.strerror or err}", severity="error")
            return False
        self.path, self.saved_plan = path, self.plan
        self._refresh_title()
        self.notify(f"Saved {path}")
        return True

    def action_save(self) -> None:
        """Save the plan to its file (asks for one the first time)."""
        if not self._savable():
            return
        if self.path is None:
            self.action_save_as()
        else:
            self._write(self.path)

    def action_save_as(self, then=None) -> None:
        """Save the plan to a new file (then run `then`, when given, after a save)."""
        if not self._savable():
            return

        def write(path: Path) -> None:
            if self._write(path) and then is not None:
                then()

        def chosen(path: Path | None) -> None:
            if path is None:
                return
            if path.exists() and path != self.path:
                def answer(value: str | None) -> None:
                    if value == "overwrite":
                        write(path)

                self.push_screen(ConfirmDialog(f"{path} exists. Overwrite it?",
                                               [("Overwrite", "overwrite", "error"),
                                                ("Cancel", "cancel", "default")]), answer)
            else:
                write(path)

        self.push_screen(PathDialog("Save plan as", "Save", str(self.path or "plan.toml"),
                                    check=_writable), chosen)

    def _confirm_discard(self, then) -> None:
        """Run then() now, or after the user agreed to drop unsaved changes."""
        if not self.dirty or (self.path is None and not self.broken
                              and self.plan == default_plan()):
            then()
            return

        def answer(value: str | None) -> None:
            if value == "save":
                if self.path is None:
                    self.action_save_as(then)
                elif self._savable() and self._write(self.path):
                    then()
            elif value == "discard":
                then()

        self.push_screen(ConfirmDialog("This plan has unsaved changes.",
                                       [("Save", "save", "primary"),
                                        ("Discard", "discard", "error"),
                                        ("Cancel", "cancel", "default")]), answer)

    def _open(self, path: Path | None) -> None:
        plan, catalog = open_plan(path, None, self.catalog)
        self.path, self.catalog = path, catalog
        self._load(plan)
        self._fill_inputs()
        self._push()

    def action_open(self) -> None:
        """Open a plan file (it becomes the baseline)."""
        def chosen(path: Path | None) -> None:
            if path is not None:
                self._open(path)
                self.notify(f"Opened {path}")

        def check(path: Path) -> str | None:
            try:
                open_plan(path, None, self.catalog)
            except PlanError as err:
                return str(err)
            return None

        self._confirm_discard(lambda: self.push_screen(
            PathDialog("Open plan", "Open", str(self.path or ""), check=check), chosen))

    def action_new(self) -> None:
        """Start again from the built-in plan (the measured run)."""
        def fresh() -> None:
            self._open(None)
            self.notify("New plan from the built-in plan")

        self._confirm_discard(fresh)

    def action_export_launch(self) -> None:
        """Write the launch script to a file."""
        def chosen(path: Path | None) -> None:
            if path is None:
                return
            try:
                write_atomic(path, self.launch_text)
                path.chmod(path.stat().st_mode | 0o111)
            except OSError as err:
                self.notify(f"Could not write {path}: {err.strerror or err}", severity="error")
                return
            self.notify(f"Wrote {path}")

        default = f"launch-{self.launch_format}.sh"
        self.push_screen(PathDialog(f"Export the {self.launch_format} launch script to",
                                    "Export", default, check=_new_file), chosen)

    async def action_quit(self) -> None:
        self._confirm_discard(self.exit)

    def get_system_commands(self, screen: Screen) -> Iterable[SystemCommand]:
        yield from super().get_system_commands(screen)
        for binding in self.BINDINGS:
            if isinstance(binding, Binding) and binding.action not in ("quit",) and binding.id \
                    and binding.id != "help-question":
                method = getattr(self, f"action_{binding.action}")
                yield SystemCommand(binding.description, (method.__doc__ or binding.description)
                                    .strip().splitlines()[0], method)


def _unfit(p: Projection) -> str:
    """Which role runs out of memory, with the numbers."""
    for role in (p.target, p.drafter):
        if not role.memory.fits:
            return (f"{role.role} does not fit: needs {role.memory.needed_gb:,.1f} GB per GPU, "
                    f"{role.gpu_name} has {role.memory.available_gb:g} GB")
    return "does not fit in memory"


def _writable(path: Path) -> str | None:
    if path.is_dir():
        return f"{path} is a folder"
    if not path.parent.exists():
        return f"folder {path.parent} does not exist"
    return None


def _new_file(path: Path) -> str | None:
    if path.exists():
        return f"{path} exists; choose a new name"
    return _writable(path)
