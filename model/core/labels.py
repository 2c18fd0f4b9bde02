"""Names that say what a plan is, for a plan the user did not name (or changed since)."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from ..inputs.catalog import Catalog
from ..inputs.plan import Plan, plan_to_dict
from ..physics.families import DEFAULT_FAMILY, FAMILIES


def derived_name(doc: dict[str, Any], catalog: Catalog) -> str:
    """A name that says what the plan is: '3 targets + 1 drafter, B200, Qwen3-8B', with
    the drafter family when it is not DFlash ('..., Qwen3-8B, DFlash2')."""

    def gpu(key: Any) -> str:
        spec = catalog.gpus.get(key) if isinstance(key, str) else None
        return spec.name if spec is not None else str(key)

    def n(count: Any, what: str) -> str:
        return f"{count} {what}{'s' * (count != 1)}"

    t, d = doc["target"], doc["drafter"]
    colocated = doc["workload"].get("topology") == "colocated"
    if colocated and isinstance(t.get("count"), int) and isinstance(d.get("count"), int):
        # Every GPU runs both roles: the plan is its GPUs.
        pools = f"{n(t['count'] + d['count'], 'GPU')} colocated, {gpu(t.get('gpu'))}"
    elif t.get("gpu") == d.get("gpu"):
        pools = (
            f"{n(t.get('count'), 'target')} + {n(d.get('count'), 'drafter')}, {gpu(t.get('gpu'))}"
        )
    else:
        pools = (
            f"{n(t.get('count'), gpu(t.get('gpu')) + ' target')} + "
            f"{n(d.get('count'), gpu(d.get('gpu')) + ' drafter')}"
        )
    model = catalog.models.get(doc["workload"].get("target_model", ""))
    name = f"{pools}, {model.name if model else doc['workload'].get('target_model')}"
    # The built-in family goes unsaid, as in the report's header.
    drafter = FAMILIES.get(doc["workload"].get("drafter", DEFAULT_FAMILY))
    if drafter is not None and drafter.key != DEFAULT_FAMILY:
        name += f", {drafter.name}"
    return name


def split_label(plan: Plan, names: Mapping[str, str], plus: str = "+") -> str:
    """A plan's GPUs in a few characters: '29+12 B200', '4+2 H200 tp2', '45 B300+19 H200',
    '8 B300 colocated' (names: GPU key -> name; a key not in it is shown as it is)."""
    t, d = plan.target, plan.drafter
    tp = f" tp{t.tp}" if t.tp > 1 else ""
    if plan.workload.topology == "colocated":  # every GPU runs both roles
        return f"{t.count + d.count} {names.get(t.gpu, t.gpu)}{tp} colocated"
    if t.gpu == d.gpu:
        return f"{t.count}{plus}{d.count} {names.get(t.gpu, t.gpu)}{tp}"
    return f"{t.count} {names.get(t.gpu, t.gpu)}{tp}{plus}{d.count} {names.get(d.gpu, d.gpu)}"


def name_after_edits(before: Plan, after: Plan, catalog: Catalog) -> Plan:
    """`after`, named for what it is when edits changed it from `before` without naming
    it: a changed plan never keeps the name of the plan it came from (the app does the
    same as you type)."""
    if after.name != before.name or after.model_copy(update={"name": before.name}) == before:
        return after
    return after.model_copy(update={"name": derived_name(plan_to_dict(after), catalog)})
