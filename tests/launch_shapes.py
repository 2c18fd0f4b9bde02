"""The plan shapes every launch format is tested and upstream-validated on (issue 12)."""

from __future__ import annotations

from dflash_plan.model.inputs.plan import Plan
from support import edit


def shapes(baseline: Plan) -> dict[str, Plan]:
    b200 = {"gpu": "b200"}
    return {
        # the measured run: 3 + 1 RTX PRO 6000 on one node
        "builtin": baseline,
        # 8 x B200, 6 targets in TP2 pairs + 2 drafters
        "b200-6+2-tp2": edit(
            baseline, target={**b200, "count": 6, "tp": 2}, drafter={**b200, "count": 2}
        ),
        # 16 GPUs on two nodes: node 1 runs 2 capture servers and the 6 trainers
        "two-nodes-shared": edit(
            baseline,
            target={**b200, "count": 10},
            drafter={**b200, "count": 6},
            launch={"hosts": ["gpu-a", "gpu-b"]},
        ),
        # 24 GPUs: 8 capture servers on node 0, trainers spanning nodes 1 and 2
        "trainers-span-two": edit(
            baseline,
            target={**b200, "count": 8},
            drafter={**b200, "count": 16},
            launch={"hosts": ["gpu-a", "gpu-b", "gpu-c"]},
        ),
        # issue 21: 8 capture servers on node 0, 8 trainers on node 1
        "two-nodes-8+8": edit(baseline, target={**b200, "count": 8}, drafter={**b200, "count": 8}),
        # optimizer-step quanta above SpecForge's default in-flight watermarks (256 > 192)
        "32+128": edit(baseline, target={**b200, "count": 32}, drafter={**b200, "count": 128}),
        "8+8-batch32": edit(
            baseline, target={**b200, "count": 8}, drafter={**b200, "count": 8, "batch_size": 32}
        ),
    }
