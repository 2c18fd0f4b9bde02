"""Time and peak memory of `dflash-plan search --mixed --max-gpus N --json` before and after
issue 23's pruning, and of one `project --json` for the "within 10x" target.

Each case runs in a fresh process; wall time is measured around it and the peak resident
memory is the child's own (`ru_maxrss` from wait4). "after" is the command itself. "before"
is the search module as it was before the pruning (`model/search.py` at BEFORE_COMMIT,
read from git and imported beside the package), run with the same plan and space and
printing the same JSON; `--before brute` runs today's code with `brute=True` instead
(every split evaluated, but ranked with the running front). The median of `--runs` runs
is printed (before at 512 GPUs runs once: about 20 s and 5 GB).

    python scripts/bench_search.py [--runs 3] [--gpus 64,128,512] [--before git|brute|none]
                                   [--mode online|offline|both]

`--mode` searches in that mode (issue 22: an offline block is evaluated whole); "before"
is online only. Each "after" line says the search's size: configurations covered and
evaluated.
"""

from __future__ import annotations

import argparse
import json
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
# The last commit before the pruning (issue 23): its search evaluates every split.
BEFORE_COMMIT = "b336b47"
RUNS = 3

# Loads model/search.py as it was at a commit as dflash_plan.model._search_before, its
# relative imports pointed at where those modules live now (model/ was split into layers
# after it), then searches as the CLI does and prints the JSON.
BEFORE = """
import importlib.util, json, re, subprocess, sys
source = subprocess.run(["git", "-C", {root!r}, "show", {commit!r} + ":model/search.py"],
                        check=True, capture_output=True, text=True).stdout
moved = {{"catalog": "inputs.catalog", "cost": "core.cost", "economics": "core.economics",
         "errors": "basics.errors", "memory": "physics.memory", "pipeline": "physics.pipeline",
         "plan": "inputs.plan", "projection": "core.projection", "rates": "core.rates",
         "resolve": "core.resolve", "scenarios": "core.scenarios", "work": "physics.work"}}
source = re.sub(r"^( *)from [.](\\w+) import", lambda m: m[1] + "from dflash_plan.model."
                + moved[m[2]] + " import", source, flags=re.M)
import dflash_plan.model
spec = importlib.util.spec_from_loader("dflash_plan.model._search_before", loader=None)
module = importlib.util.module_from_spec(spec)
module.__package__ = "dflash_plan.model"
sys.modules[spec.name] = module
exec(compile(source, "search.py@{commit}", "exec"), module.__dict__)
from dflash_plan.model.inputs.catalog import Catalog
from dflash_plan.model.inputs.plan import default_plan
from dflash_plan.model.physics.fitting import builtin_gpus
plan, catalog = default_plan(), Catalog(gpus=builtin_gpus())
space = module.default_space(plan, catalog, max_gpus={gpus}, mixed=True)
result = module.search(plan, catalog, space, module.Constraints())
json.dump(result.to_json(), sys.stdout)
"""
BRUTE = """
import json, sys
from dflash_plan.model.explore import search as module
from dflash_plan.model.inputs.catalog import Catalog
from dflash_plan.model.inputs.plan import default_plan
from dflash_plan.model.physics.fitting import builtin_gpus
plan, catalog = default_plan(), Catalog(gpus=builtin_gpus())
space = module.default_space(plan, catalog, max_gpus={gpus}, mixed=True)
result = module.search(plan, catalog, space, module.Constraints(), brute=True)
json.dump(result.to_json(), sys.stdout)
"""


SIZES: dict[str, tuple[int, int]] = {}  # by command: (covered, evaluated) of its JSON


def run_once(argv: list[str]) -> tuple[float, float]:
    """Wall seconds and peak resident MB of one run of argv (its JSON's size kept)."""
    with tempfile.TemporaryFile() as out:
        start = time.perf_counter()
        child = subprocess.Popen(argv, stdout=out, cwd=ROOT)
        _, status, usage = os.wait4(child.pid, 0)
        wall = time.perf_counter() - start
        if os.waitstatus_to_exitcode(status):
            raise SystemExit(f"{' '.join(argv)[:200]} exited {os.waitstatus_to_exitcode(status)}")
        out.seek(0)
        doc = json.loads(out.read() or b"{}")
    if "covered" in doc:
        SIZES[" ".join(argv)] = (doc["covered"], doc["evaluated_after_pruning"])
    return wall, usage.ru_maxrss / 1024  # ru_maxrss is in KiB on Linux


def median_of(argv: list[str], runs: int) -> tuple[float, float]:
    results = [run_once(argv) for _ in range(runs)]
    return (statistics.median(w for w, _ in results), statistics.median(m for _, m in results))


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument(
        "--gpus", default="64,128,512", help="max GPUs of each case, comma-separated"
    )
    parser.add_argument("--before", choices=("git", "brute", "none"), default="git")
    parser.add_argument("--mode", choices=("online", "offline", "both"))
    args = parser.parse_args()
    mode = ["--mode", args.mode] if args.mode else []
    cli = [sys.executable, "-m", "dflash_plan.tui.cli"]
    project_s, project_mb = median_of([*cli, "project", "--json"], max(args.runs, 5))
    print(
        f"project --json: {project_s:.2f} s, {project_mb:.0f} MB peak "
        f"(median of {max(args.runs, 5)})"
    )
    for gpus in (int(g) for g in args.gpus.split(",")):
        argv = [*cli, "search", "--mixed", "--max-gpus", str(gpus), *mode, "--json"]
        after = median_of(argv, args.runs)
        covered, evaluated = SIZES[" ".join(argv)]
        line = (
            f"search --mixed --max-gpus {gpus}{' --mode ' + args.mode if mode else ''}: "
            f"{covered:,} covered, {evaluated:,} evaluated; after {after[0]:.2f} s "
            f"({after[0] / project_s:.1f}x project), {after[1]:.0f} MB peak"
        )
        if args.before != "none":
            code = (
                BEFORE.format(root=str(ROOT), commit=BEFORE_COMMIT, gpus=gpus)
                if args.before == "git"
                else BRUTE.format(gpus=gpus)
            )
            runs = 1 if gpus > 256 else args.runs
            before = median_of([sys.executable, "-c", code], runs)
            line += (
                f"; before ({args.before}) {before[0]:.2f} s, {before[1]:.0f} MB peak "
                f"(median of {runs})"
            )
        print(line, flush=True)


if __name__ == "__main__":
    main()
