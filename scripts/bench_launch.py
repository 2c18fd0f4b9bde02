"""Benchmark: writing launch scripts for the largest plan, refusing a larger one, and the
planner's edit to a huge count, each against a baseline measured in the same run.

Run from an installed checkout:  python scripts/bench_launch.py [--seconds 1.0]

The tests count work instead of timing it (tests/contracts/test_launch.py: a refusal does
less work than a one-node script; the work from 64 to 128 nodes grows no faster than the
files written); this prints the times. For each launch format: a one-node plan's script
(one node of B200s, the baseline), the 256-node plan's, and their ratio; then a
100,000-GPU plan's refusal against the one-node script, and the planning state's edit of
the target count to 20,000 against its edit to 4 (the app's no-freeze case,
tests/app/test_app.py).
"""

from __future__ import annotations

import argparse
import statistics
import time

from dflash_plan.model.basics.errors import PlanError
from dflash_plan.model.inputs.plan import Plan, default_plan
from dflash_plan.model.launch import FORMATS, generate
from dflash_plan.tui.config import load_catalog
from dflash_plan.tui.state import Planner


def per_call_ms(fn, seconds: float, repeats: int = 5) -> float:
    """Median over `repeats` batches of the mean milliseconds per call."""
    fn()  # caches filled
    start = time.perf_counter()
    fn()
    once = max(time.perf_counter() - start, 1e-6)
    calls = max(1, int(seconds / repeats / once))
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls * 1e3)
    return statistics.median(samples)


def sized(base: Plan, gpus_per_role: int) -> Plan:
    doc = base.model_dump()
    doc["target"].update(gpu="b200", count=gpus_per_role)
    doc["drafter"].update(gpu="b200", count=gpus_per_role)
    doc["launch"].update(template="go {node_rank} {target_devices}", volume_claim="work")
    return Plan.model_validate(doc)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    args = parser.parse_args()
    catalog = load_catalog()
    base = default_plan()
    per_node = catalog.gpus["b200"].gpus_per_node
    largest = sized(base, 128 * per_node)  # 256 nodes: the most a launch script is for
    one_node = sized(base, per_node // 2)

    rows: list[tuple[str, float, float]] = []
    for fmt in FORMATS:
        one = per_call_ms(lambda fmt=fmt: generate(one_node, catalog, fmt), args.seconds)
        big = per_call_ms(lambda fmt=fmt: generate(largest, catalog, fmt), args.seconds)
        rows.append((f"{fmt}: 256 nodes vs one", big, one))

    huge = sized(base, 100_000)

    def refuse() -> None:
        try:
            generate(huge, catalog, "speculators")
        except PlanError:
            return
        raise AssertionError("a 100,000-GPU plan was not refused")

    one = per_call_ms(lambda: generate(one_node, catalog, "speculators"), args.seconds)
    rows.append(("refusing 100,000 GPUs vs one node's script", per_call_ms(refuse, 0.3), one))

    state = Planner(catalog)

    def edit(count: str) -> None:
        state.edit("target.count", count)
        state.view()

    small = per_call_ms(lambda: (edit("4"), edit("3")), args.seconds)
    large = per_call_ms(lambda: (edit("20000"), edit("3")), args.seconds)
    rows.append(("planner: count 20,000 (and back) vs 4 (and back)", large, small))

    width = max(len(name) for name, _, _ in rows)
    print(f"{'measurement':<{width}}  {'ms':>9}  {'baseline':>9}  {'ratio':>7}")
    for name, ms, baseline_ms in rows:
        print(f"{name:<{width}}  {ms:9.3f}  {baseline_ms:9.3f}  {ms / baseline_ms:6.1f}x")


if __name__ == "__main__":
    main()
