"""Time `dflash-plan project --json` against `python -c "import pydantic"` in the same run.

All are started as fresh processes, alternately; the medians of wall time and of CPU
time (user + system, which other load on the machine disturbs less) are printed with
their ratios to `import pydantic`. The second command is the floor of any CLI that
validates its input with one pydantic model: `import pydantic` is lazy, and the first model
class builds pydantic's schema machinery (with pydantic's plugin scan skipped, as
dflash-plan skips it); the last line gives project --json over that floor, measured in the
same run (issue 31's target: within 1.5x).

The package is byte-compiled first, as a wheel install does (an environment with
PYTHONDONTWRITEBYTECODE would otherwise compile every module at every run).

`--baseline REF` also times project --json as it is at git REF (a temporary clone, as
scripts/bench_suite.py makes), in the same run: before and after a change.

    python scripts/bench_cli.py [--runs 21] [--baseline REF]
"""

from __future__ import annotations

import argparse
import os
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

RUNS = 21
# Issue 31: project --json within this multiple of the one-model pydantic floor.
FLOOR_TARGET = 1.5
ONE_MODEL = """
import os

os.environ["PYDANTIC_DISABLE_PLUGINS"] = "__all__"    # as dflash-plan does (tui/cli.py)
from pydantic import BaseModel, Field

class Plan(BaseModel):
    count: int = Field(gt=0)

print(Plan.model_validate({"count": 3}).model_dump_json())
"""
COMMANDS = {
    "import pydantic": [sys.executable, "-c", "import pydantic"],
    "one pydantic model": [sys.executable, "-c", ONE_MODEL],
    "project --json": [sys.executable, "-m", "dflash_plan.tui.cli", "project", "--json"],
}


def run_once(argv: list[str], env: dict[str, str] | None = None) -> tuple[float, float]:
    """Wall and CPU seconds of one run of argv."""
    start = time.perf_counter()
    child = subprocess.Popen(argv, stdout=subprocess.DEVNULL, env=env)
    _, status, usage = os.wait4(child.pid, 0)
    wall = time.perf_counter() - start
    child.returncode = os.waitstatus_to_exitcode(status)
    if child.returncode:
        raise SystemExit(f"{' '.join(argv)} exited {child.returncode}")
    return wall, usage.ru_utime + usage.ru_stime


def measure(
    runs: int, baseline: str | None, scratch: Path
) -> tuple[dict[str, list[float]], dict[str, list[float]]]:
    """Wall and CPU seconds of every command, run after run (at REF too, if given)."""
    import compileall

    import dflash_plan.model
    import dflash_plan.tui

    folders = [Path(str(p.__file__)).parent for p in (dflash_plan.model, dflash_plan.tui)]
    commands: dict[str, tuple[list[str], dict[str, str] | None]] = {
        name: (argv, None) for name, argv in COMMANDS.items()
    }
    if baseline:
        # Its sibling script (not on the path under PYTHONSAFEPATH).
        sys.path.insert(0, str(Path(__file__).resolve().parent))
        from bench_suite import clone, package_links

        tree = clone(baseline, scratch)
        folders += [tree / "model", tree / "tui"]
        # First on the path, the clone's package is imported instead of the editable one
        # (PYTHONSAFEPATH: not the dflash_plan/ of the working directory).
        links = package_links(tree, scratch / "links")
        env = dict(os.environ, PYTHONPATH=str(links), PYTHONSAFEPATH="1")
        commands[f"... at {baseline}"] = (COMMANDS["project --json"], env)
    for folder in folders:
        compileall.compile_dir(folder, quiet=1)
    wall: dict[str, list[float]] = {name: [] for name in commands}
    cpu: dict[str, list[float]] = {name: [] for name in commands}
    for _ in range(runs):
        for name, (argv, env) in commands.items():
            w, c = run_once(argv, env)
            wall[name].append(w)
            cpu[name].append(c)
    return wall, cpu


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=RUNS)
    parser.add_argument("--baseline", metavar="REF", help="also time project --json at git REF")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        wall, cpu = measure(options.runs, options.baseline, Path(scratch))
    runs = options.runs
    base_wall = statistics.median(wall["import pydantic"])
    base_cpu = statistics.median(cpu["import pydantic"])
    for name in wall:
        w, c = statistics.median(wall[name]), statistics.median(cpu[name])
        print(
            f"{name:>18}: wall {w * 1e3:6.1f} ms ({w / base_wall:.2f}x), "
            f"CPU {c * 1e3:6.1f} ms ({c / base_cpu:.2f}x)  median of {runs}"
        )
    floor = "one pydantic model"
    for ours in (n for n in wall if n.startswith(("project", "..."))):
        print(
            f"{ours} over {floor}: "
            f"wall {statistics.median(wall[ours]) / statistics.median(wall[floor]):.2f}x, "
            f"CPU {statistics.median(cpu[ours]) / statistics.median(cpu[floor]):.2f}x "
            f"(target: within {FLOOR_TARGET}x)"
        )


if __name__ == "__main__":
    main()
