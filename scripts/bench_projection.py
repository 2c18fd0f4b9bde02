"""Benchmark: how many full projections, and how many pipeline splits, per second.

Run it from an installed checkout:  python scripts/bench_projection.py [--seconds 1.0]

It prints the median time of one projection for three plans, of the pipeline function on
one split and on a million splits at once (numpy arrays: what balance and search call),
and in the same run the
time of two baselines on the same machine: validating the plan (the least any tool does
with its input) and turning a projection into JSON (what `project --json` adds). If the
package `llm_analysis` is importable, it also times one llm-analysis training analysis,
the reference point named in the issue (about 0.5 ms).
"""

from __future__ import annotations

import argparse
import json
import statistics
import time

from dflash_plan.model.core.projection import project
from dflash_plan.model.explore.balance import balance
from dflash_plan.model.inputs.catalog import Catalog
from dflash_plan.model.inputs.plan import Plan, default_plan, load_plan
from dflash_plan.model.physics.fitting import builtin_gpus
from dflash_plan.model.physics.pipeline import flow


def per_call_us(fn, seconds: float, repeats: int = 7) -> float:
    """Median over `repeats` batches of the mean microseconds per call."""
    calls = 1
    while True:  # size a batch to ~seconds / repeats
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        elapsed = time.perf_counter() - start
        if elapsed > seconds / repeats / 4:
            break
        calls *= 2
    calls = max(1, int(calls * (seconds / repeats) / elapsed))
    samples = []
    for _ in range(repeats):
        start = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - start) / calls * 1e6)
    return statistics.median(samples)


def llm_analysis_us(seconds: float) -> float | None:
    try:
        from llm_analysis.analysis import train
    except Exception:
        return None

    def one() -> None:
        train(
            model_name="facebook_opt-1.3b",
            gpu_name="a100-sxm-80gb",
            total_num_tokens=int(1e9),
            batch_size_per_gpu=4,
            seq_len=2048,
            total_num_gpus=8,
            flops_efficiency=0.5,
            log_level="CRITICAL",
        )

    return per_call_us(one, seconds)


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--seconds", type=float, default=1.0, help="time per measurement")
    args = parser.parse_args()
    catalog = Catalog(gpus=builtin_gpus())
    plans: dict[str, Plan] = {
        "built-in plan (3+1 RTX PRO 6000)": default_plan(),
        "4x B200, calibrated carry-over": load_plan(None, ["target.gpu=b200", "drafter.gpu=b200"]),
        "Llama-70B, 6+2 B200 TP2": load_plan(
            None,
            [
                "workload.target_model=llama-3.3-70b-instruct",
                "target.gpu=b200",
                "target.count=6",
                "target.tp=2",
                "drafter.gpu=b200",
                "drafter.count=2",
            ],
        ),
    }
    doc = default_plan().model_dump()
    projection = project(default_plan(), catalog)
    rows = [
        (f"project(): {name}", per_call_us(lambda p=plan: project(p, catalog), args.seconds))
        for name, plan in plans.items()
    ]
    from dflash_plan.model.explore.compare import compare

    # What the app does per keystroke with a baseline: project the edited plan, compare it
    # with the baseline under every joint scenario (the baseline's figures stay memoised).
    b200 = project(plans["4x B200, calibrated carry-over"], catalog)
    b300_plan = load_plan(None, ["target.gpu=b300", "drafter.gpu=b300"])
    rows.append(
        (
            "project() + compare(): 4x B300 vs 4x B200",
            per_call_us(lambda: compare(project(b300_plan, catalog), b200), args.seconds),
        )
    )
    rows.append(
        (
            "balance(): 8 GPUs, 7 splits",
            per_call_us(
                lambda: balance(plans["built-in plan (3+1 RTX PRO 6000)"], catalog), args.seconds
            ),
        )
    )
    inputs = projection.inputs
    rows.append(
        ("flow(): one split (scalars)", per_call_us(lambda: flow(inputs, 3, 1), args.seconds))
    )
    import numpy as np

    targets = np.arange(1, 1_000_001) % 4096 + 1
    drafters = np.arange(1_000_000) % 512 + 1
    million = per_call_us(lambda: flow(inputs, targets, drafters), args.seconds, repeats=3)
    rows.append(("flow(): 1,000,000 splits in one call, per split", million / 1e6))
    rows.append(
        (
            "baseline: Plan.model_validate (reading the input)",
            per_call_us(lambda: Plan.model_validate(doc), args.seconds),
        )
    )
    rows.append(
        (
            "baseline: json.dumps(projection.to_json())",
            per_call_us(lambda: json.dumps(projection.to_json()), args.seconds),
        )
    )
    reference = llm_analysis_us(args.seconds)
    if reference is not None:
        rows.append(("reference: llm-analysis train() (one configuration)", reference))
    width = max(len(name) for name, _ in rows)
    print(f"{'measurement':<{width}}  {'us/call':>9}  {'calls/s':>12}")
    for name, us in rows:
        print(f"{name:<{width}}  {us:9.3f}  {1e6 / us:12,.0f}")
    print(f"one vectorised split is {rows[0][1] / (million / 1e6):,.0f}x faster than project()")
    if reference is None:
        print("(llm-analysis not importable here: the issue quotes ~500 us for it)")


if __name__ == "__main__":
    main()
