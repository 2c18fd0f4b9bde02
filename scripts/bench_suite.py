"""Wall time of the whole test suite (`pytest -q`, the README's command), run N times, and
the files that take longest, summed over their tests' durations.

    python scripts/bench_suite.py [--runs 3] [--baseline REF] [-- PYTEST_ARGS...]

Prints the median, min and max wall time of the runs (the command's own, from start to
exit, collection and worker start included), the CPU time the runs used (user + system,
the workers and the commands the tests start included) and the top files by summed test
duration (setup, call and teardown, from `--durations=0`, medians over the runs).
`--baseline REF` also runs the suite as it is at git REF, in a temporary clone that uses
this checkout's virtualenv, the two alternating so that both meet the same load. Each tree's
package is imported from that tree (the editable install maps dflash_plan.model to one
folder, so a directory of links, first on PYTHONPATH, maps it to the tree's own).
"""

from __future__ import annotations

import argparse
import collections
import os
import re
import resource
import statistics
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent
DURATION = re.compile(r"^([\d.]+)s (?:setup|call|teardown)\s+(\S+?)::")
TOP_FILES = 10


def package_links(tree: Path, into: Path) -> Path:
    """A folder holding dflash_plan/ as pyproject's package-dir lays it out, of links into
    `tree`: first on PYTHONPATH, it is imported instead of the editable install's."""
    package = into / "dflash_plan"
    package.mkdir(parents=True)
    for name in ("__init__.py", "__main__.py"):
        (package / name).symlink_to(tree / "dflash_plan" / name)
    for name in ("model", "tui"):
        (package / name).symlink_to(tree / name)
    return into


def run_once(tree: Path, links: Path, args: list[str]) -> tuple[float, float, dict[str, float]]:
    """One suite run in `tree`: its wall and CPU seconds and the seconds per test file."""
    command = [sys.executable, "-m", "pytest", "-q", "--durations=0", "-p", "no:cacheprovider"]
    # PYTHONSAFEPATH: the tree's own dflash_plan/ (in the working directory) would come
    # first, and the editable install then maps its subpackages to its own checkout.
    env = dict(os.environ, PYTHONPATH=str(links), PYTHONSAFEPATH="1")
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.monotonic()
    done = subprocess.run(
        [*command, *args], cwd=tree, env=env, capture_output=True, text=True, check=False
    )
    wall_s = time.monotonic() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu_s = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    if done.returncode != 0:
        tail = "\n".join(done.stdout.splitlines()[-15:])
        sys.exit(f"the suite failed in {tree} (exit {done.returncode}):\n{tail}")
    per_file: dict[str, float] = collections.defaultdict(float)
    for line in done.stdout.splitlines():
        found = DURATION.match(line)
        if found:
            per_file[found[2]] += float(found[1])
    return wall_s, cpu_s, per_file


def clone(ref: str, into: Path) -> Path:
    tree = into / "baseline"
    subprocess.run(["git", "clone", "-q", "--shared", str(ROOT), str(tree)], check=True)
    subprocess.run(["git", "-C", str(tree), "checkout", "-q", ref], check=True)
    return tree


def spread(values: list[float]) -> str:
    return f"{statistics.median(values):6.1f} {min(values):6.1f} {max(values):6.1f}"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=3)
    parser.add_argument("--baseline", metavar="REF", help="also time the suite at git REF")
    parser.add_argument("pytest_args", nargs="*", help="passed to pytest (after --)")
    options = parser.parse_args()
    with tempfile.TemporaryDirectory() as scratch:
        trees = {"this": ROOT}
        if options.baseline:
            trees = {options.baseline: clone(options.baseline, Path(scratch)), **trees}
        links = {
            n: package_links(t, Path(scratch) / f"links-{i}")
            for i, (n, t) in enumerate(trees.items())
        }
        results: dict[str, list[tuple[float, float, dict[str, float]]]] = {n: [] for n in trees}
        for i in range(options.runs):
            for name, tree in trees.items():
                results[name].append(run_once(tree, links[name], options.pytest_args))
                wall_s, cpu_s, _ = results[name][-1]
                print(f"run {i + 1} {name}: {wall_s:.1f} s wall, {cpu_s:.1f} s CPU", flush=True)
    print(f"\n{options.runs} runs; seconds: median min max")
    for name, runs in results.items():
        print(
            f"{name:>12} wall {spread([r[0] for r in runs])}   CPU {spread([r[1] for r in runs])}"
        )
    for name, runs in results.items():
        files = {f for r in runs for f in r[2]}
        medians = {f: statistics.median(r[2].get(f, 0.0) for r in runs) for f in files}
        total_s = statistics.median(sum(r[2].values()) for r in runs)
        print(f"\n{name}: summed test durations {total_s:.1f} s; top files")
        for f, seconds in sorted(medians.items(), key=lambda kv: -kv[1])[:TOP_FILES]:
            print(f"  {seconds:6.2f} {f}")


if __name__ == "__main__":
    main()
