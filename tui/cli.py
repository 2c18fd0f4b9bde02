"""The `dflash-plan` command. Headless subcommands import no textual (fast for scripts);
plain `dflash-plan [PLAN.toml]` opens the interactive app.

Each subcommand is one entry of COMMANDS: a function that adds its arguments and one that
runs it. Modules a command needs are imported inside its run function, so that
`project --json` pays for neither Rich nor the launch formats nor YAML.
"""

from __future__ import annotations

import argparse
import contextlib
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import TYPE_CHECKING, NoReturn

from ..model.basics.errors import PlanError
from ..model.basics.terminal import terminal_safe

if TYPE_CHECKING:
    from ..model.explore.search import Constraints, Space
    from ..model.inputs.acceptancelogs import AcceptanceReading
    from ..model.inputs.catalog import Catalog
    from ..model.inputs.plan import Plan
    from ..model.inputs.runlogs import LogReading, RunContext
    from .app import PlannerApp

# Exit codes (also in `dflash-plan --help` and the README).
EXIT_OK = 0
EXIT_BAD_INPUT = 2
EXIT_DOES_NOT_FIT = 3  # `check`: a valid plan that does not fit (Projection.does_not_fit)
EXIT_INTERRUPTED = 130

# What "does not fit" covers (Projection.does_not_fit), as the help says it.
FIT_WORDS = (
    "a role in GPU memory, the offline data in storage.tb, the Mooncake store in host memory"
)

EXIT_CODES = (
    f"exit codes: {EXIT_OK} ok; {EXIT_BAD_INPUT} bad input (one line on stderr "
    f"naming the file, line or key, the bad value and what is allowed); "
    f"{EXIT_DOES_NOT_FIT} (check only) the plan is valid but does not fit ({FIT_WORDS}); "
    f"the app: 1 an unexpected error, 143 SIGTERM, 129 SIGHUP (each first "
    f"writes the unsaved plan to a recovery file, named on stderr)"
)


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2), like every other bad input."""

    def error(self, message: str) -> NoReturn:
        said = f"{message} (see {self.prog} --help)"
        raise PlanError(said, where=self.prog, reason=said)


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--hardware",
        action="append",
        type=Path,
        default=[],
        metavar="FILE",
        help="extra GPU catalog TOML (adds or overrides GPUs); repeatable",
    )


def _plan_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "plan",
        nargs="?",
        type=Path,
        metavar="PLAN.toml",
        help="plan file (default: the built-in plan, the measured run)",
    )
    _edits(parser)
    _common(parser)


def _edits(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--set",
        dest="sets",
        action="append",
        default=[],
        metavar="KEY=VALUE",
        help="change a plan key, e.g. --set target.count=7 (repeatable); a "
        "changed plan is named for what it is unless you --set name",
    )
    _sources(parser)


def _sources(parser: argparse.ArgumentParser) -> None:
    parser.add_argument(
        "--from-config",
        type=Path,
        metavar="RUN.yaml",
        help="take the workload from a SpecForge config or a speculators "
        "config/launch script (anchors, block, layers, epochs, batch, ...)",
    )
    parser.add_argument(
        "--from-dataset",
        type=Path,
        metavar="TRAIN.jsonl",
        help="take the sample count and mean length from a JSONL dataset "
        "(streamed; cached next to the plan)",
    )
    parser.add_argument(
        "--tokenizer",
        type=Path,
        metavar="FILE",
        help="a local tokenizer.json for --from-dataset (default: an estimate "
        "of 4 characters per token)",
    )


def _source_sets(args: argparse.Namespace) -> list[str]:
    """--set edits from --from-config and --from-dataset (applied before the user's own
    --set), each source said on stderr (terminal-safe: it names the user's files)."""

    sets: list[str] = []
    if getattr(args, "from_config", None) is not None:
        from ..model.inputs.runconfig import read_run_config

        config = read_run_config(args.from_config)
        for setting in config.settings:
            print(terminal_safe(f"from {setting.describe()}"), file=sys.stderr)
        for note in config.notes:
            print(terminal_safe(f"note: {note}"), file=sys.stderr)
        sets += config.sets()
    if getattr(args, "from_dataset", None) is not None:
        from ..model.inputs.dataset import measure, measure_cached

        plan_path = getattr(args, "plan", None)
        tokenizer = getattr(args, "tokenizer", None)

        def progress(done: int, total: int) -> None:
            if total and sys.stderr.isatty():
                shown = terminal_safe(f"reading {args.from_dataset}: {done / total:.0%}")
                print(f"\r{shown}", end="", file=sys.stderr)

        stats = (
            measure_cached(args.from_dataset, plan_path, tokenizer, progress)
            if plan_path is not None
            else measure(args.from_dataset, tokenizer, progress)
        )
        if sys.stderr.isatty():
            print(file=sys.stderr)
        print(terminal_safe(f"from {args.from_dataset}: {stats.summary()}"), file=sys.stderr)
        for key, (value, where) in stats.workload_updates().items():
            print(terminal_safe(f"from {where}: {key} = {value}"), file=sys.stderr)
            sets.append(f"{key}={value}")
    return sets + list(getattr(args, "sets", []) or [])


# -- the commands -------------------------------------------------------------------------


def _add_project(p: argparse.ArgumentParser) -> None:
    _plan_args(p)
    p.add_argument("--json", action="store_true", help="print JSON (a stable contract)")
    p.add_argument(
        "--baseline",
        nargs="?",
        const="builtin",
        metavar="PLAN.toml",
        help="compare against a baseline plan (default: the built-in plan)",
    )


def _run_project(args: argparse.Namespace) -> int:
    from ..model.core.projection import project
    from .config import load_catalog, open_plan

    catalog = load_catalog(args.hardware)
    plan, catalog = open_plan(args.plan, _source_sets(args), catalog)
    projection = project(plan, catalog)
    baseline = None
    if args.baseline is not None:
        base_path = None if args.baseline == "builtin" else Path(args.baseline)
        base_plan, catalog = open_plan(base_path, None, catalog)
        baseline = project(base_plan, catalog)
    if args.json:
        from ..model.launch import launch_line, launch_path, own_path

        doc = projection.to_json()
        # Which launch these figures describe (the launch format's hidden-state path: its
        # transport and, through the Mooncake store, its receive mode).
        path = launch_path(plan)
        doc["launch"] = {
            "format": plan.launch.format,
            "transport": path and path[0],
            "receive": path[1] if path and path[0] == "mooncake" else None,
            "describes": path == own_path(plan),
            "line": launch_line(plan),
        }
        if baseline is not None:
            from ..model.explore.compare import compare

            doc["baseline"] = baseline.to_json()
            doc["versus_baseline"] = compare(projection, baseline).to_json()
        json.dump(doc, sys.stdout, indent=2)
        print()
    else:
        from . import report

        report.projection(projection, baseline)
    return EXIT_OK


def _add_launch(p: argparse.ArgumentParser) -> None:
    # The registry's formats (importing it loads no format module).
    from ..model.inputs.formats import DEFAULT, names

    _plan_args(p)
    p.add_argument(
        "--format",
        choices=names(),
        default=None,
        help=f"launch format (default: the plan's launch.format, else {DEFAULT})",
    )
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="FILE",
        help="write the script to FILE (atomically) instead of printing it",
    )
    p.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    p.add_argument(
        "--upstream",
        default="pinned",
        metavar="LINE",
        help="the upstream versions the script installs: pinned (the released wheels, "
        "default) or a newer line (docs/launch.md's version matrix)",
    )


def _run_launch(args: argparse.Namespace) -> int:
    from ..model.core.projection import project
    from ..model.launch import generate
    from .config import load_catalog, open_plan, user_template

    plan, catalog = open_plan(args.plan, _source_sets(args), load_catalog(args.hardware))
    script = generate(plan, catalog, args.format, template=user_template(), upstream=args.upstream)
    # As `check`: a plan that does not fit is launched all the same, and said so (the
    # script's header says it too).
    if (unfit := project(plan, catalog).does_not_fit) is not None:
        print(
            f"warning: the plan does not fit: {one_line(unfit)}; the launch is "
            f"written all the same",
            file=sys.stderr,
        )
    if args.output is None:
        sys.stdout.write(script.text)
        return EXIT_OK
    from ..model.inputs.formats import row_of

    # A script is executable; a launcher's document (SkyPilot's YAML) is not.
    _write_new(args.output, script.text, args.force, executable=row_of(script.format).executable)
    print(terminal_safe(f"wrote {args.output} ({script.format})"), file=sys.stderr)
    return EXIT_OK


def _add_gpus(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument("--json", action="store_true")


def _run_gpus(args: argparse.Namespace) -> int:
    from . import report
    from .config import load_catalog

    return report.gpus(load_catalog(args.hardware), args.json)


def _add_models(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true")


def _run_models(args: argparse.Namespace) -> int:
    from . import report

    return report.models(args.json)


def _add_check(p: argparse.ArgumentParser) -> None:
    p.add_argument("plan", type=Path, metavar="PLAN.toml")
    _common(p)


def _run_check(args: argparse.Namespace) -> int:
    from ..model.core.projection import project
    from .config import load_catalog, open_plan

    plan, catalog = open_plan(args.plan, None, load_catalog(args.hardware))
    projection = project(plan, catalog)
    name = terminal_safe(plan.name) or "unnamed plan"  # a name may hold C1 controls
    unfit = projection.does_not_fit
    if unfit is None:
        print(terminal_safe(f"{args.plan}: ok ({name}; {len(projection.warnings)} warning(s))"))
        return EXIT_OK
    print(terminal_safe(f"{args.plan}: valid, but does NOT fit ({name}): {unfit}"))
    return EXIT_DOES_NOT_FIT


def _add_new(p: argparse.ArgumentParser) -> None:
    p.add_argument("plan", type=Path, metavar="PLAN.toml")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    _edits(p)
    _common(p)


def _run_new(args: argparse.Namespace) -> int:
    from ..model.inputs.plan import default_plan_text, plan_to_toml
    from .config import load_catalog, open_plan

    sets = _source_sets(argparse.Namespace(**{**vars(args), "plan": None}))
    text = default_plan_text()
    if sets:
        plan, _ = open_plan(None, sets, load_catalog(args.hardware))
        text = plan_to_toml(plan, text)
    _write_new(args.plan, text, args.force)
    print(terminal_safe(f"wrote {args.plan}"))
    return EXIT_OK


def _add_probe(p: argparse.ArgumentParser) -> None:
    _plan_args(p)
    p.add_argument("--gpu", required=True, metavar="KEY", help="the GPU type to measure")
    p.add_argument("--role", choices=("target", "drafter", "both"), default="both")
    p.add_argument(
        "--minutes", type=float, default=10.0, help="how long to run the workload (default 10)"
    )
    p.add_argument(
        "-o",
        "--output",
        type=Path,
        metavar="FILE",
        help="write the probe script to FILE instead of printing it",
    )
    p.add_argument("--force", action="store_true", help="overwrite FILE if it exists")


def _run_probe(args: argparse.Namespace) -> int:
    from ..model.launch.probe import probe_script
    from . import format as fmt
    from .config import load_catalog, open_plan

    plan, catalog = open_plan(args.plan, _source_sets(args), load_catalog(args.hardware))
    probe = probe_script(plan, catalog, args.gpu, args.role, args.minutes)
    summary = (
        f"probe {probe.gpu}: {probe.gpus} GPUs on one node for about "
        f"{fmt.probe_time(probe.gpu_hours, probe.gpus, probe.cost_usd)}; afterwards: "
        f"dflash-plan calibrate OUT_DIR --plan PLAN --write"
    )
    if args.output is None:
        sys.stdout.write(probe.text)
    else:
        _write_new(args.output, probe.text, args.force, executable=True)
    print(terminal_safe(summary), file=sys.stderr)
    return EXIT_OK


def _add_doctor(p: argparse.ArgumentParser) -> None:
    from ..model.inputs.formats import names

    _plan_args(p)
    p.add_argument(
        "--format",
        choices=names(),
        default=None,
        help="the launch whose pre-flight runs (default: the plan's launch.format)",
    )
    p.add_argument(
        "--upstream",
        default="pinned",
        metavar="LINE",
        help="the upstream versions the launch installs, whose pins are checked (as launch "
        "--upstream; default pinned)",
    )
    p.add_argument(
        "--node-rank",
        type=int,
        default=0,
        metavar="N",
        help="this machine's node in the plan's layout (default 0)",
    )
    p.add_argument(
        "--script",
        type=Path,
        metavar="FILE",
        help="write the pre-flight as a bash script to FILE instead of running it",
    )
    p.add_argument("--force", action="store_true", help="overwrite FILE if it exists")


def _run_doctor(args: argparse.Namespace) -> int:
    import subprocess

    from ..model.launch.common import context
    from ..model.launch.preflight import call, needs, program
    from ..model.launch.versions import upstream_line
    from .config import load_catalog, open_plan

    plan, catalog = open_plan(args.plan, _source_sets(args), load_catalog(args.hardware))
    fmt = args.format or plan.launch.format
    # The checks the launch's script runs on each node: the same block, this node's part.
    checks = needs(context(plan, catalog, upstream_line(args.upstream)), fmt)
    if not 0 <= args.node_rank < len(checks.nodes):
        raise PlanError.at(
            "--node-rank",
            f"{args.node_rank} is not a node of this plan: choose 0-{len(checks.nodes) - 1}",
        )
    text = "#!/usr/bin/env bash\nset -uo pipefail\n" + program(checks) + "\n"
    text += call(str(args.node_rank)) + "\n"
    if args.script is not None:
        _write_new(args.script, text, args.force, executable=True)
        print(terminal_safe(f"wrote {args.script} (pre-flight of {fmt})"), file=sys.stderr)
        return EXIT_OK
    # The lines name plan values (paths, hosts): shown through the one terminal layer.
    done = subprocess.run(["bash", "-c", text], check=False, capture_output=True)
    sys.stdout.write(terminal_safe(done.stdout.decode(errors="replace"), keep="\n"))
    sys.stderr.write(terminal_safe(done.stderr.decode(errors="replace"), keep="\n"))
    if done.returncode == 0:
        print(f"preflight: node{args.node_rank}: every check passed")
        return EXIT_OK
    return 1


def _add_calibrate(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "results",
        nargs="+",
        type=Path,
        metavar="RESULT",
        help="probe folders or result files (probe.toml), training logs "
        "(SpecForge, TorchSpec), or your pipeline's CSV / JSON lines",
    )
    p.add_argument(
        "--plan",
        type=Path,
        metavar="PLAN.toml",
        help="the plan to calibrate (default: the built-in plan)",
    )
    p.add_argument("--gpu", metavar="KEY", help="the GPU type of points whose file does not say")
    p.add_argument(
        "--write", action="store_true", help="save the measurements into PLAN.toml (comments kept)"
    )
    _common(p)


def _calibration_reading(
    path: Path, ctx: RunContext
) -> tuple[LogReading | None, AcceptanceReading | None]:
    """What one calibrate argument gives: a probe folder or result, or an own-format file,
    its rates; a training log, its rates and its logged acceptance length, either of which
    may be missing but not both (one line naming the file, saying what was looked for)."""
    from ..model.inputs.acceptancelogs import read_acceptance
    from ..model.inputs.runlogs import read_throughput
    from ..model.launch.probe import read_probe_dir

    if path.is_dir():
        return read_probe_dir(path), None
    if path.suffix.lower() in (".toml", ".csv", ".jsonl"):
        return read_throughput(path, ctx), None
    rates: LogReading | None = None
    missing: PlanError | None = None
    try:
        rates = read_throughput(path, ctx)
    except PlanError as err:
        if err.where != str(path) or "throughput lines" not in err.reason:
            raise  # not a missing-lines verdict (an unreadable file, a bad context)
        missing = err
    if rates is not None and rates.format == "own pipeline":
        return rates, None
    try:
        return rates, read_acceptance(path, ctx)
    except PlanError as err:
        if missing is not None:
            raise PlanError.at(str(path), f"{missing.reason}; and {err.reason}") from None
        return rates, None


def _run_calibrate(args: argparse.Namespace) -> int:
    from ..model.core import figures as F
    from ..model.core.calibration import add_acceptance, add_points
    from ..model.core.projection import project
    from ..model.inputs.plan import save_plan
    from ..model.inputs.runlogs import Point, RunContext
    from . import format as fmt
    from .config import load_catalog, open_plan

    plan, catalog = open_plan(args.plan, None, load_catalog(args.hardware))
    ctx = RunContext(
        avg_sample_tokens=float(plan.workload.avg_sample_tokens),
        target_gpu=plan.target.gpu,
        drafter_gpu=plan.drafter.gpu,
        target_gpus=plan.target.count,
        drafter_gpus=plan.drafter.count,
        batch_size=plan.drafter.batch_size,
        num_anchors=plan.workload.num_anchors,
        target_model=plan.workload.target_model,
        drafter=plan.workload.drafter,
    )
    points: list[Point] = []
    taus: list[AcceptanceReading] = []
    for path in args.results:
        reading, logged = _calibration_reading(path, ctx)
        if reading is not None:
            print(terminal_safe(reading.summary()), file=sys.stderr)  # names the user's files
            for note in reading.notes:
                print(terminal_safe(f"  note: {note}"), file=sys.stderr)
            points += reading.points
        if logged is not None:
            print(
                terminal_safe(
                    f"{logged.path}: {logged.format}, {len(logged.points):,} acceptance reports"
                ),
                file=sys.stderr,
            )
            for note in (f"samples per step {logged.samples_basis}", *logged.notes):
                print(terminal_safe(f"  note: {note}"), file=sys.stderr)
            taus.append(logged)
    before = project(plan, catalog)
    gpu = catalog.key(args.gpu, "--gpu") if args.gpu else None  # 'B200' is b200
    calibrated = add_acceptance(add_points(plan, points, gpu), taus)
    after = project(calibrated, catalog)
    for point in points:
        m = point.measurement
        print(
            terminal_safe(
                f"{point.role} on {point.gpu or gpu}: {fmt.per_gpu(m.tokens_per_s)} per GPU"
                f"{' (at least)' if m.bound == 'at_least' else ''} ({m.source})"
            )
        )
    for logged in taus:
        print(terminal_safe(f"acceptance: {fmt.logged_tau(logged)} ({logged.source})"))
        print(terminal_safe(f"  {logged.split} reports (step: tau): {fmt.tau_points(logged)}"))
    for label, p in (("before", before), ("after", after)) if taus else ():
        print(terminal_safe(f"{label}: {fmt.projected_tau(p.acceptance)}"))
    for label, p in (("before", before), ("after", after)):
        pair = p.ranges.tokens_per_s if p.ranges else None
        spread = fmt.spread(pair, fmt.figure_of(F.TOKENS_PER_S))
        print(
            f"{label}: {fmt.figure(F.TOKENS_PER_S, p.tokens_per_s)}"
            + (f" (range {spread})" if spread else "")
            + f", {fmt.figure(F.DAYS, p.days)}, {F.BOTTLENECK.name} "
            f"{fmt.figure(F.BOTTLENECK, p.bottleneck)}"
        )
    if args.write:
        if args.plan is None:
            said = "--write needs --plan PLAN.toml (the built-in plan is not a file)"
            raise PlanError(said, where="--write", reason=said)
        save_plan(calibrated, args.plan)
        print(terminal_safe(f"wrote {args.plan}"), file=sys.stderr)
    else:
        where = args.plan or "PLAN.toml"
        print(
            f"dry run: nothing written; add --write{'' if args.plan else ' --plan PLAN.toml'}"
            f" to save these measurements into {where}",
            file=sys.stderr,
        )
    return EXIT_OK


def _add_validate(p: argparse.ArgumentParser) -> None:
    _common(p)
    p.add_argument(
        "--json", action="store_true", help="print JSON (cases, fitted constants and summary)"
    )


def _run_validate(args: argparse.Namespace) -> int:
    from ..model.evidence.evidence import validate
    from .config import load_catalog

    result = validate(load_catalog(args.hardware))
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2)
        print()
        return EXIT_OK
    from . import report

    report.validation(result)
    return EXIT_OK


def _add_search(p: argparse.ArgumentParser) -> None:
    from ..model.explore.objective import DEFAULT_MAX_EPOCHS, OBJECTIVES
    from ..model.explore.search import AT_CHOICES

    _plan_args(p)
    p.add_argument(
        "--deadline-days",
        type=float,
        metavar="D",
        help="finish within D days (judged where --at says)",
    )
    p.add_argument(
        "--budget",
        type=float,
        metavar="X",
        help="total cost at most X, in the plan's cost unit (judged where --at says)",
    )
    p.add_argument(
        "--at",
        choices=AT_CHOICES,
        default=AT_CHOICES[0],
        help="judge the deadline and the budget at the pessimistic end of the "
        "rate range (the default: the most days and cost the ranges allow) "
        "or at the central estimate; the front and the winners both come "
        "from the plans that pass",
    )
    p.add_argument(
        "--gpus", metavar="KEY,KEY", help="GPU types allowed (default: all with a price)"
    )
    p.add_argument(
        "--max-gpus",
        type=int,
        default=64,
        metavar="N",
        help="at most N GPUs in all (2 to 512; default 64)",
    )
    p.add_argument("--max-nodes", type=int, metavar="N", help="at most N nodes")
    p.add_argument("--mixed", action="store_true", help="the two roles may use different GPU types")
    p.add_argument("--one-node", action="store_true", help="both roles on one node")
    p.add_argument(
        "--mode",
        choices=("online", "offline", "both"),
        help="evaluate each split online, offline (capture to storage, then train) or both "
        "(default: the plan's workload.mode)",
    )
    p.add_argument(
        "--topology",
        choices=("disaggregated", "colocated", "both"),
        help="search disaggregated splits, colocated GPU counts (every GPU runs the target "
        "and the drafter; one GPU type, online) or both, each row naming its topology "
        "(default: the plan's workload.topology)",
    )
    p.add_argument(
        "--objective",
        choices=OBJECTIVES,
        help="search by outcome, epochs chosen: time-to-tau (the fastest plan reaching "
        "--min-tau; the cheapest is said too), tau (the highest tau within --budget or "
        "--deadline-days) or speedup-per-cost (the most serving speedup gained per unit of "
        "training cost, at --min-tau or above if given); tau is judged where --at says",
    )
    p.add_argument(
        "--min-tau",
        type=float,
        metavar="TAU",
        help="the acceptance length to reach (with --objective time-to-tau or speedup-per-cost)",
    )
    p.add_argument(
        "--max-epochs",
        type=int,
        default=DEFAULT_MAX_EPOCHS,
        metavar="N",
        help=f"epochs an objective may choose, 1 to N (default {DEFAULT_MAX_EPOCHS}: the longest "
        "public learning curves, DeepSpec #84; beyond, the curve is extrapolated)",
    )
    p.add_argument(
        "--json",
        action="store_true",
        help="print JSON: the front and the winners, each a plan and its projection "
        "(with --objective, an `objective` block and each row's epochs and tau)",
    )
    p.add_argument(
        "-o", "--output", type=Path, metavar="DIR", help="write the winners as plan files into DIR"
    )


def _run_search(args: argparse.Namespace) -> int:
    from ..model.explore.objective import DEFAULT_MAX_EPOCHS, OBJECTIVES
    from ..model.explore.search import Constraints, default_space, search
    from ..model.inputs.plan import MODES, TOPOLOGIES
    from .config import load_catalog, open_plan

    plan, catalog = open_plan(args.plan, _source_sets(args), load_catalog(args.hardware))
    for name, value in (("--deadline-days", args.deadline_days), ("--budget", args.budget)):
        if value is not None and not (0 < value < float("inf")):
            raise PlanError.flag(name, str(value), "must be a positive number")
    if args.max_nodes is not None and args.max_nodes < 1:
        raise PlanError.flag("--max-nodes", str(args.max_nodes), "must be 1 or more")
    gpus = tuple(k.strip() for k in args.gpus.split(",") if k.strip()) if args.gpus else None
    space = default_space(
        plan,
        catalog,
        gpus,
        max_gpus=args.max_gpus,
        max_nodes=args.max_nodes,
        mixed=args.mixed,
        one_node=args.one_node,
        modes=MODES if args.mode == "both" else (args.mode,) if args.mode else None,
        topologies=(
            TOPOLOGIES if args.topology == "both" else (args.topology,) if args.topology else None
        ),
    )
    constraints = Constraints(args.deadline_days, args.budget, at=args.at)
    if args.objective is not None:
        return _search_objective(args, plan, catalog, space, constraints)
    for name, given in (
        ("--min-tau", args.min_tau is not None),
        ("--max-epochs", args.max_epochs != DEFAULT_MAX_EPOCHS),
    ):
        if given:
            value = args.min_tau if name == "--min-tau" else args.max_epochs
            raise PlanError.flag(
                name, f"{value:g}", f"goes with --objective ({', '.join(OBJECTIVES)})"
            )
    result = search(plan, catalog, space, constraints)
    if args.output is not None:
        _write_winners(args.output, result)
    if args.json:
        json.dump(result.to_json(), sys.stdout, indent=2)
        print()
        return EXIT_OK
    from . import report

    report.search(result, catalog)
    return EXIT_OK


def _search_objective(
    args: argparse.Namespace, plan: Plan, catalog: Catalog, space: Space, constraints: Constraints
) -> int:
    """search --objective: the plan that best meets it, epochs chosen."""
    from ..model.explore.objective import Goal, search_objective

    found = search_objective(
        plan, catalog, space, constraints, Goal(args.objective, args.min_tau, args.max_epochs)
    )
    if args.output is not None:
        _write_winners(args.output, found.result)
        if found.winner is not None:
            # The objective's own plan, its epochs chosen (time-to-tau.toml, ...).
            _write_plan(args.output, args.objective, found.winner.plan)
    if args.json:
        json.dump(found.to_json(), sys.stdout, indent=2)
        print()
        return EXIT_OK
    from . import report

    report.search(found.result, catalog, found)
    return EXIT_OK


def _write_winners(folder: Path, result) -> None:  # type: ignore[no-untyped-def]
    from ..model.basics.tomlfile import make_folder

    make_folder(folder)
    for name in ("cheapest_within_deadline", "fastest_within_budget", "most_tokens_per_cost"):
        candidate = getattr(result, name)
        if candidate is not None:
            _write_plan(folder, name, candidate.plan)


def _write_plan(folder: Path, name: str, plan: Plan) -> None:
    """One winner as a plan file, DIR/NAME.toml, named for what it won."""
    from ..model.inputs.plan import save_plan

    plan = plan.model_copy(update={"name": f"search: {name.replace('_', ' ')}"})
    save_plan(plan, folder / f"{name}.toml")  # a SaveError names the file, once
    print(terminal_safe(f"wrote {folder / name}.toml"), file=sys.stderr)


def _add_compare(p: argparse.ArgumentParser) -> None:
    p.add_argument(
        "plans",
        nargs="+",
        type=Path,
        metavar="PLAN.toml",
        help="plans to compare; the first is the baseline",
    )
    _common(p)
    out = p.add_mutually_exclusive_group()
    out.add_argument(
        "--json",
        action="store_true",
        help="print JSON: per plan, its projection, its ratios to the first and the prices "
        "it does not set (default: a table at the terminal's width)",
    )
    out.add_argument(
        "--markdown",
        action="store_true",
        help="print the table as Markdown, its notes as a list after it",
    )
    out.add_argument(
        "--csv", action="store_true", help="print the table as CSV: a header row, a row per plan"
    )


def _run_compare(args: argparse.Namespace) -> int:
    from ..model.core.projection import project
    from ..model.explore.compare import compared
    from .config import load_catalog, open_plan

    catalog = load_catalog(args.hardware)
    projections = []
    for path in args.plans:
        plan, catalog = open_plan(path, None, catalog)
        projections.append((path, project(plan, catalog)))
    base = projections[0][1]
    rows = [(path, compared(p, base)) for path, p in projections]
    from . import report

    if args.json:
        json.dump(
            [
                {
                    "file": str(path),
                    "projection": x.projection.to_json(),
                    "versus_baseline": x.comparison.to_json(),
                    "prices_not_from_plan": [
                        price.to_json()
                        for price in x.projection.prices.borrowed(x.projection.plan.gpus_in_use())
                    ],
                }
                for path, x in rows
            ],
            sys.stdout,
            indent=2,
        )
        print()
    else:
        report.comparison(rows, "markdown" if args.markdown else "csv" if args.csv else "table")
    return EXIT_OK


def _add_prices(p: argparse.ArgumentParser) -> None:
    p.add_argument("--gpu", metavar="KEY", help="only this GPU type")
    p.add_argument(
        "--provider",
        metavar="NAME",
        help="only this provider; with --import, the provider the catalog's rows are "
        "offers of (default: a SkyPilot file's folder, a gpuhunt file's name)",
    )
    p.add_argument("--json", action="store_true")
    p.add_argument(
        "--import",
        dest="import_file",
        type=Path,
        metavar="FILE",
        help="read a price catalog CSV (SkyPilot's catalogs/v8/<cloud>/vms.csv or a gpuhunt "
        "<provider>.csv) into your offers.toml, replacing the offers an earlier import "
        "of the same catalog wrote; your own offers are kept",
    )
    p.add_argument(
        "--date",
        metavar="YYYY-MM-DD",
        help="with --import: when the catalog snapshot was taken (neither format dates its rows)",
    )
    p.add_argument(
        "--source",
        default="",
        metavar="TEXT",
        help="with --import: the catalog's commit or version, kept with each offer "
        "(a gpuhunt version such as 20260818-42 also dates the rows)",
    )


def _run_prices(args: argparse.Namespace) -> int:
    from . import report
    from .config import load_catalog

    if args.import_file is not None:
        return _import_prices(args)
    if args.date is not None or args.source:
        said = "--date and --source go with --import FILE"
        raise PlanError(said, where="--date" if args.date is not None else "--source", reason=said)
    return report.offers(load_catalog(), args.gpu, args.provider, args.json)


# A catalog file is read whole: SkyPilot's largest (AWS, GCP) are a few tens of MB.
MAX_CATALOG_BYTES = 256 * 1024 * 1024


def _import_prices(args: argparse.Namespace) -> int:
    """`prices --import FILE`: the catalog's offers into the user's offers.toml."""
    from ..model.basics.tomlfile import make_folder, read_text, write_atomic
    from ..model.inputs.pricecatalog import merge, read_catalog
    from .config import user_config_dir

    if args.gpu is not None or args.json:
        said = "--gpu and --json do not go with --import FILE"
        raise PlanError(said, where="--gpu" if args.gpu is not None else "--json", reason=said)
    text = read_text(args.import_file, "a price catalog CSV", MAX_CATALOG_BYTES)
    imported = read_catalog(
        args.import_file, text, date=args.date, source=args.source, provider=args.provider
    )
    target = user_config_dir() / "offers.toml"
    existing = read_text(target) if target.is_file() else None
    merged = merge(existing, str(target), imported)
    make_folder(target.parent)
    write_atomic(target, merged.text)
    print(imported.summary())
    replaced = f", replacing {merged.replaced:,} from an earlier import" if merged.replaced else ""
    print(
        terminal_safe(
            f"wrote {target}: {len(imported.offers):,} offers of {imported.provider}"
            f"{replaced}; {merged.kept:,} other offers kept"
        )
    )
    return EXIT_OK


class Command:
    """A subcommand: its one-line help, what adds its arguments, what runs it."""

    __slots__ = ("add", "description", "help", "run")

    def __init__(
        self,
        help: str,
        add: Callable[[argparse.ArgumentParser], None],
        run: Callable[[argparse.Namespace], int],
        description: str = "",
    ) -> None:
        self.help, self.add, self.run, self.description = help, add, run, description


COMMANDS: dict[str, Command] = {
    "project": Command(
        "project a plan: throughput, days, cost, bottleneck", _add_project, _run_project
    ),
    "launch": Command("print the command that starts the planned run", _add_launch, _run_launch),
    "gpus": Command("list the GPU catalog", _add_gpus, _run_gpus),
    "models": Command("list the target model presets", _add_models, _run_models),
    "check": Command(
        "validate a plan file; exit 0 when it can be projected and fits, "
        f"{EXIT_DOES_NOT_FIT} when it is valid but does not fit",
        _add_check,
        _run_check,
        description=f"Validate PLAN.toml and project it. Exit {EXIT_OK}: valid "
        f"and fits; {EXIT_DOES_NOT_FIT}: valid but does not fit ({FIT_WORDS}), the "
        f"reason on stdout; {EXIT_BAD_INPUT}: bad input (one line on stderr).",
    ),
    "new": Command("write the built-in plan to a file, to edit", _add_new, _run_new),
    "validate": Command(
        "the model against public measurements, cross-validated by source group",
        _add_validate,
        _run_validate,
        description="Predict every case of the validation set "
        "(model/data/measurements.toml) at default settings and "
        "compare with the measured value. Every fitted constant "
        "(model/physics/fitting.py) is refitted with each source group "
        "left out and that group's cases predicted: the "
        "headline.",
    ),
    "search": Command(
        "search GPU types, counts, TP and splits: the (days, cost) front and "
        "the best plan per objective",
        _add_search,
        _run_search,
    ),
    "compare": Command("several plans side by side, against the first", _add_compare, _run_compare),
    "prices": Command(
        "rental offers per provider and GPU: price, rental unit, date", _add_prices, _run_prices
    ),
    "probe": Command(
        "write a short benchmark of the plan's workload for one node of a GPU type",
        _add_probe,
        _run_probe,
    ),
    "doctor": Command(
        "check this machine as a node of the plan (GPUs, driver, Python, packages, "
        "network, disk, memory); exit 0 when it can run it, 1 with one line per problem",
        _add_doctor,
        _run_doctor,
    ),
    "calibrate": Command(
        "add measured rates (probe results, training logs, your own reports) to a plan",
        _add_calibrate,
        _run_calibrate,
    ),
}


def _write_new(path: Path, text: str, force: bool, executable: bool = False) -> None:
    """Write a file the user named (atomically; refuses to overwrite without --force)."""
    from ..model.basics.tomlfile import writable_target, write_atomic

    writable_target(path)  # a folder, a name too long: said before "already exists"
    if (path.exists() or path.is_symlink()) and not force:
        raise PlanError.at(str(path), "already exists (use --force to overwrite)")
    write_atomic(path, text)
    if executable:
        try:
            path.chmod(path.stat().st_mode | 0o111)
        except OSError as err:
            raise PlanError.at(
                str(path), f"written, but cannot make it executable: {err.strerror or err}"
            ) from None


def one_line(text: str) -> str:
    """text with line breaks and other control characters shown as escapes (\\n), so that
    a message quoting user input stays one line."""
    return "".join(c if c.isprintable() else repr(c)[1:-1] for c in text)


def _version() -> str:
    from importlib.metadata import PackageNotFoundError, version

    try:
        return version("dflash-plan")
    except PackageNotFoundError:
        return "unknown"


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The parser of every command, or with `only`, of that one (faster: argparse costs
    about a millisecond per command)."""
    parser = _Parser(
        prog="dflash-plan",
        description="Plan DFlash drafter-training clusters. Without a command, opens the "
        "interactive planner on PLAN.toml (or the built-in plan).",
        epilog=EXIT_CODES,
    )
    parser.add_argument("--version", action="store_true", help="print the version and exit")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    for name, command in COMMANDS.items():
        if only is not None and name != only:
            continue
        command.add(
            sub.add_parser(
                name, help=command.help, description=command.description or None, epilog=EXIT_CODES
            )
        )
    return parser


def _app_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="dflash-plan",
        description="Open the interactive DFlash planner.",
        epilog=f"Headless commands: {', '.join(COMMANDS)} "
        f"(dflash-plan COMMAND --help). {EXIT_CODES}",
    )
    parser.add_argument("plan", nargs="?", type=Path, metavar="PLAN.toml")
    _common(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and argv[0] == "--version":
            print(f"dflash-plan {_version()}")
            return EXIT_OK
        _no_pydantic_plugins()
        if argv and (argv[0] in COMMANDS or argv[0] in ("-h", "--help")):
            args = build_parser(argv[0] if argv[0] in COMMANDS else None).parse_args(argv)
            code = COMMANDS[args.command].run(args)
            sys.stdout.flush()  # a reader gone shows here, not in the flush at exit
            return code
        args = _app_parser().parse_args(argv)
        return _open_app(args)
    except PlanError as err:
        print(f"dflash-plan: {one_line(str(err))}", file=sys.stderr)
        return EXIT_BAD_INPUT
    except BrokenPipeError:
        # `dflash-plan project | head -2`: the reader has what it wanted. Exit 0 quietly,
        # as Unix tools do; what Python still holds for stdout goes to devnull, or its
        # flush at exit fails again (Python docs, signal: "Note on SIGPIPE").
        with contextlib.suppress(OSError, ValueError):
            os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return EXIT_OK
    except KeyboardInterrupt:
        return EXIT_INTERRUPTED


def _no_pydantic_plugins() -> None:
    """pydantic looks for plugins (hooks for observing services, found by reading the
    metadata of every installed package: 50-80 ms of CPU on a 2-core machine) when it
    builds its first model. dflash-plan's models are its own and need none; a value the
    user set is kept. Every command and the app build their models after this."""
    os.environ.setdefault("PYDANTIC_DISABLE_PLUGINS", "__all__")


def import_app() -> type[PlannerApp]:
    """The interactive app's class, imported as `dflash-plan` imports it (the benchmark of
    its first frame, scripts/bench_app.py, imports it through here too)."""
    import gc

    _no_pydantic_plugins()
    # Everything the imports build lives as long as the app: the cyclic collector walking
    # it while it is built is time lost (PlannerApp freezes it out of later walks).
    gc.disable()
    try:
        from .app import PlannerApp  # textual only for the interactive app
    finally:
        gc.enable()
    return PlannerApp


def _open_app(args: argparse.Namespace) -> int:
    # The constructor loads the plan: a bad file fails here, before the screen opens.
    app = import_app()(args.plan, hardware=args.hardware)
    app.run()
    if app.recovery_note:  # an error or a signal ended it
        # No terminal left (SIGHUP): the recovery file is written all the same.
        with contextlib.suppress(OSError):
            print(terminal_safe(app.recovery_note, keep="\n"), file=sys.stderr, flush=True)
    return app.return_code or EXIT_OK


if __name__ == "__main__":
    sys.exit(main())
