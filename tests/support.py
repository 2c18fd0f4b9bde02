"""Helpers for building test plans."""

from __future__ import annotations

from dflash_plan.model.core import figures
from dflash_plan.model.inputs.plan import Plan

# The JSON contract of `project --json` (README): keys that stay (additions only): the
# figure registry's JSON figures and the projection's parts.
CONTRACT = {f.key for f in figures.shown_in(figures.View.JSON)} | {
    "warnings",
    "target",
    "drafter",
    "phases",
    "total",
    "regeneration",
}
ROLE_CONTRACT = {
    "gpu",
    "count",
    "capacity_tokens_per_s",
    "utilization",
    "efficiency",
    "source",
    "memory_gb_needed",
    "memory_gb_available",
    "fits",
}


def edit(plan: Plan, **sections: dict) -> Plan:
    """A validated copy of plan with fields of some sections changed, e.g.
    edit(plan, target={"count": 7}, workload={"num_anchors": 512})."""
    doc = plan.model_dump()
    for name, fields in sections.items():
        doc[name] = {**doc[name], **fields} if isinstance(doc[name], dict) else fields
    return Plan.model_validate(doc)
