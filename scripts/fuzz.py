"""A long fuzzing run of the property tests (tests/contracts/test_properties.py):
generated plan files, --set values, hardware files and config.json files through every
command, plus the model's monotonicity properties, with many more examples than CI runs.

    python scripts/fuzz.py [--scale N] [--seed S]

Prints, per category, the inputs tried, how the command line answered them (exit 0, 2
bad input, 3 does not fit; properties skipped when the generated plan was rejected), and
the defects found (a traceback, another exit code, a second stderr line, a non-finite or
negative figure, a broken identity). A defect's smallest example is printed; the exit
status is the number of categories with a defect.
"""

from __future__ import annotations

import argparse
import collections
import sys
import time
import traceback
from pathlib import Path
from typing import Any

ROOT = Path(__file__).resolve().parent.parent
sys.path[:0] = [str(ROOT / "tests"), str(ROOT / "tests" / "contracts")]

import test_properties as props  # noqa: E402
from hypothesis import HealthCheck, given, seed, settings  # noqa: E402
from hypothesis import strategies as st  # noqa: E402

# Examples per category at --scale 1 (CI runs about a tenth to a half of these).
CATEGORIES: dict[str, tuple[int, Any, Any]] = {
    "plan files": (1000, props.plan_docs(), props.plan_file_property),
    "--set values": (2000, props.SETS, props.set_property),
    "hardware files": (
        1000,
        st.tuples(props.GPU_KEY, props.GPU_TABLE),
        lambda kt: props.hardware_property(*kt),
    ),
    "config.json files": (500, props.CONFIG, props.config_property),
    "cost vs price": (
        1000,
        st.tuples(props.plan_docs(hostile=False), props.log_floats(1.0001, 1000)),
        lambda df: props.cost_property(*df),
    ),
    "capacity +1 GPU": (1000, props.plan_docs(hostile=False), props.capacity_property),
}
OUTCOMES = {0: "exit 0", 2: "exit 2 (bad input)", 3: "exit 3 (does not fit)"}


def fuzz(
    name: str, examples: int, strategy: Any, check: Any, seed_value: int
) -> tuple[collections.Counter[str], str | None]:
    counts: collections.Counter[str] = collections.Counter()

    @seed(seed_value)
    @settings(
        max_examples=examples, deadline=None, database=None, suppress_health_check=list(HealthCheck)
    )
    @given(strategy)
    def run(value: Any) -> None:
        counts["inputs"] += 1
        result = check(value)
        counts[OUTCOMES.get(result, str(result))] += 1

    try:
        run()
    except Exception:  # a property failed: hypothesis shrank it
        return counts, traceback.format_exc(limit=6)
    return counts, None


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    parser.add_argument("--scale", type=float, default=1.0, help="multiply the example counts")
    parser.add_argument("--seed", type=int, default=20261130)
    parser.add_argument("--only", help="run the categories whose name contains this")
    args = parser.parse_args()
    defects = 0
    print(f"{'category':<20} {'inputs':>7}  outcomes")
    for name, (examples, strategy, check) in CATEGORIES.items():
        if args.only and args.only not in name:
            continue
        start = time.perf_counter()
        counts, failure = fuzz(name, max(1, int(examples * args.scale)), strategy, check, args.seed)
        inputs = counts.pop("inputs", 0)
        outcome = ", ".join(f"{label} {n}" for label, n in sorted(counts.items()))
        status = "0 defects" if failure is None else "DEFECT"
        print(f"{name:<20} {inputs:>7}  {outcome}; {status} ({time.perf_counter() - start:.0f} s)")
        if failure is not None:
            defects += 1
            print(failure)
    return defects


if __name__ == "__main__":
    sys.exit(main())
