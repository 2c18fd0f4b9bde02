"""The `dflash-plan` command. Headless subcommands import no textual (fast for scripts);
plain `dflash-plan [PLAN.toml]` opens the interactive app."""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path

from ..model.errors import PlanError
from ..model.launch import FORMATS

COMMANDS = ("project", "launch", "gpus", "models", "check", "new")


class _Parser(argparse.ArgumentParser):
    """argparse with one-line errors (exit 2), like every other bad input."""

    def error(self, message: str):  # type: ignore[override]
        raise PlanError(f"{message} (see {self.prog} --help)")


def _common(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("--hardware", action="append", type=Path, default=[], metavar="FILE",
                        help="extra GPU catalog TOML (adds or overrides GPUs); repeatable")


def _plan_args(parser: argparse.ArgumentParser) -> None:
    parser.add_argument("plan", nargs="?", type=Path, metavar="PLAN.toml",
                        help="plan file (default: the built-in plan, the measured run)")
    parser.add_argument("--set", dest="sets", action="append", default=[], metavar="KEY=VALUE",
                        help="change a plan key, e.g. --set target.count=7 (repeatable)")
    _common(parser)


def build_parser() -> argparse.ArgumentParser:
    parser = _Parser(
        prog="dflash-plan",
        description="Plan DFlash drafter-training clusters. Without a command, opens the "
                    "interactive planner on PLAN.toml (or the built-in plan).")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND")
    p = sub.add_parser("project", help="project a plan: throughput, days, cost, bottleneck")
    _plan_args(p)
    p.add_argument("--json", action="store_true", help="print JSON (a stable contract)")
    p.add_argument("--baseline", nargs="?", const="builtin", metavar="PLAN.toml",
                   help="compare against a baseline plan (default: the built-in plan)")
    p = sub.add_parser("launch", help="print the command that starts the planned run")
    _plan_args(p)
    p.add_argument("--format", choices=FORMATS, default=None,
                   help="launch format (default: the plan's launch.format, else specforge)")
    p.add_argument("-o", "--output", type=Path, metavar="FILE",
                   help="write the script to FILE (atomically) instead of printing it")
    p.add_argument("--force", action="store_true", help="overwrite FILE if it exists")
    p = sub.add_parser("gpus", help="list the GPU catalog")
    _common(p)
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("models", help="list the target model presets")
    p.add_argument("--json", action="store_true")
    p = sub.add_parser("check", help="validate a plan file; exit 0 when it can be projected")
    p.add_argument("plan", type=Path, metavar="PLAN.toml")
    _common(p)
    p = sub.add_parser("new", help="write the built-in plan to a file, to edit")
    p.add_argument("plan", type=Path, metavar="PLAN.toml")
    p.add_argument("--force", action="store_true", help="overwrite an existing file")
    return parser


def _app_parser() -> argparse.ArgumentParser:
    parser = _Parser(prog="dflash-plan",
                                     description="Open the interactive DFlash planner.",
                                     epilog=f"Headless commands: {', '.join(COMMANDS)} "
                                            f"(dflash-plan COMMAND --help)")
    parser.add_argument("plan", nargs="?", type=Path, metavar="PLAN.toml")
    _common(parser)
    return parser


def main(argv: list[str] | None = None) -> int:
    argv = list(sys.argv[1:] if argv is None else argv)
    try:
        if argv and (argv[0] in COMMANDS or argv[0] in ("-h", "--help")):
            args = build_parser().parse_args(argv)
            return _run(args)
        args = _app_parser().parse_args(argv)
        return _open_app(args)
    except PlanError as err:
        print(f"dflash-plan: {err}", file=sys.stderr)
        return 2
    except BrokenPipeError:
        return 0


def _open_app(args: argparse.Namespace) -> int:
    from .app import PlannerApp                 # textual only for the interactive app

    # The constructor loads the plan: a bad file fails here, before the screen opens.
    PlannerApp(args.plan, hardware=args.hardware).run()
    return 0


def _run(args: argparse.Namespace) -> int:
    from . import report
    from .config import load_catalog, open_plan

    if args.command == "models":
        return report.models(args.json)
    if args.command == "new":
        from ..model.plan import default_plan_text
        from ..model.tomlfile import write_atomic

        if args.plan.exists() and not args.force:
            raise PlanError(f"{args.plan}: already exists (use --force to overwrite)")
        write_atomic(args.plan, default_plan_text())
        print(f"wrote {args.plan}")
        return 0
    catalog = load_catalog(args.hardware)
    if args.command == "gpus":
        return report.gpus(catalog, args.json)
    from ..model.projection import project

    if args.command == "check":
        plan, catalog = open_plan(args.plan, None, catalog)
        projection = project(plan, catalog)
        print(f"{args.plan}: ok ({plan.name or 'unnamed plan'}; "
              f"{'fits' if projection.fits else 'does NOT fit in memory'}; "
              f"{len(projection.warnings)} warning(s))")
        return 0
    plan, catalog = open_plan(args.plan, args.sets, catalog)
    if args.command == "launch":
        return _launch(args, plan, catalog)
    projection = project(plan, catalog)
    baseline = None
    if args.baseline is not None:
        base_path = None if args.baseline == "builtin" else Path(args.baseline)
        base_plan, catalog = open_plan(base_path, None, catalog)
        baseline = project(base_plan, catalog)
    if args.json:
        doc = projection.to_json()
        if baseline is not None:
            from ..model.compare import compare

            doc["baseline"] = baseline.to_json()
            doc["versus_baseline"] = compare(projection, baseline).to_json()
        json.dump(doc, sys.stdout, indent=2)
        print()
    else:
        report.projection(projection, baseline)
    return 0


def _launch(args: argparse.Namespace, plan, catalog) -> int:
    from ..model.launch import generate
    from ..model.tomlfile import write_atomic
    from .config import user_template

    script = generate(plan, catalog, args.format, template=user_template())
    if args.output is None:
        sys.stdout.write(script.text)
        return 0
    if args.output.exists() and not args.force:
        raise PlanError(f"{args.output}: already exists (use --force to overwrite)")
    write_atomic(args.output, script.text)
    args.output.chmod(args.output.stat().st_mode | 0o111)
    print(f"wrote {args.output} ({script.format})", file=sys.stderr)
    return 0


if __name__ == "__main__":
    sys.exit(main())
