"""Helpers for building test plans."""

from __future__ import annotations

from dflash_plan.model.inputs.plan import Plan


def edit(plan: Plan, **sections: dict) -> Plan:
    """A validated copy of plan with fields of some sections changed, e.g.
    edit(plan, target={"count": 7}, workload={"num_anchors": 512})."""
    doc = plan.model_dump()
    for name, fields in sections.items():
        doc[name] = {**doc[name], **fields} if isinstance(doc[name], dict) else fields
    return Plan.model_validate(doc)
