"""Balance: the target/drafter split of the same GPUs with the highest throughput."""

from __future__ import annotations

from ..core.projection import project_resolved
from ..core.resolve import require_same_gpu_type, resolve
from ..inputs.catalog import Catalog
from ..inputs.plan import Plan
from ..physics.pipeline import best_split


def balance(plan: Plan, catalog: Catalog) -> Plan:
    """The split of the plan's GPUs with the highest throughput (fewest drafters on a tie).
    Only for plans whose two roles use the same GPU type. Every split is evaluated in one
    vectorised call of the pipeline; per-GPU rates do not depend on the split except
    through the drafters' optimizer traffic, so they are taken from the plan as it is.
    A colocated plan is returned as it is: `balance_note` says why."""
    require_same_gpu_type(plan, "balance moves GPUs between roles")
    if plan.workload.topology == "colocated":
        return plan  # every GPU runs both roles: no split to balance (balance_note says so)
    r = resolve(plan, catalog)
    inputs = project_resolved(r, catalog).inputs
    total = plan.target.count + plan.drafter.count
    best = best_split(inputs, total, plan.target.tp)
    if best is None:
        return plan
    targets = best[0]
    return plan.model_copy(
        update={
            "target": plan.target.model_copy(update={"count": targets}),
            "drafter": plan.drafter.model_copy(update={"count": total - targets}),
        }
    )


def balance_note(plan: Plan, catalog: Catalog) -> str | None:
    """What balancing a colocated plan says: there is no split to balance, and the best
    disaggregated split of the same GPUs for comparison; None for a disaggregated plan."""
    if plan.workload.topology != "colocated":
        return None
    gpus = plan.target.count + plan.drafter.count
    said = f"colocated: each of the {gpus} GPUs runs both roles, no split to balance"
    v = project_resolved(resolve(plan, catalog), catalog).topology_verdict
    if v is None:
        return said
    targets, drafters = v.disaggregated_split
    return (
        f"{said}; the best disaggregated split of them, {targets} + {drafters}, would make "
        f"{v.disaggregated_tokens_per_s / 1e3:,.1f} Ktok/s against "
        f"{v.colocated_tokens_per_s / 1e3:,.1f} colocated ({v.winner} wins, {v.speedup:.2f}x)"
    )
