"""Balance: the target/drafter split of the same GPUs with the highest throughput."""

from __future__ import annotations

import numpy as np

from ..core.projection import project_resolved
from ..core.resolve import require_same_gpu_type, resolve
from ..inputs.catalog import Catalog
from ..inputs.plan import Plan
from ..physics.pipeline import splits


def balance(plan: Plan, catalog: Catalog) -> Plan:
    """The split of the plan's GPUs with the highest throughput (fewest drafters on a tie).
    Only for plans whose two roles use the same GPU type. Every split is evaluated in one
    vectorised call of the pipeline; per-GPU rates do not depend on the split except
    through the drafters' optimizer traffic, so they are taken from the plan as it is."""
    require_same_gpu_type(plan, "balance moves GPUs between roles")
    r = resolve(plan, catalog)
    inputs = project_resolved(r, catalog).inputs
    total = plan.target.count + plan.drafter.count
    sweep = splits(inputs, total, plan.target.tp)
    if sweep is None:
        return plan
    targets, f = sweep
    tokens = np.asarray(f.tokens_per_s, dtype=float)
    best = int(targets[::-1][np.argmax(tokens[::-1] >= tokens.max() * (1 - 1e-9))])
    return plan.model_copy(
        update={
            "target": plan.target.model_copy(update={"count": best}),
            "drafter": plan.drafter.model_copy(update={"count": total - best}),
        }
    )
