"""The checkpoints of the run a launch format starts, and the script header's lines about
them (core/checkpoints.py computes them; launch/checkpointing.py passes them to the
trainer). Apart from launch/common.py, whose header reads it."""

from __future__ import annotations

from ..basics.units import duration
from ..core.checkpoints import Checkpoints
from ..inputs.catalog import Catalog
from ..inputs.formats import row_of
from ..inputs.plan import Plan
from .paths import launch_path


def launch_checkpoints(plan: Plan, catalog: Catalog, fmt: str) -> Checkpoints:
    """The checkpoints of the run this format launches (its hidden-state path)."""
    from ..core.projection import project

    path = launch_path(plan, fmt) if plan.workload.topology != "colocated" else None
    workload = plan.workload
    if path is not None:
        transport, receive = path
        workload = workload.model_copy(update={"transport": transport, "receive": receive})
    launched = plan.model_copy(
        update={"workload": workload, "launch": plan.launch.model_copy(update={"format": fmt})}
    )
    return project(launched, catalog).checkpoints


def header_lines(plan: Plan, catalog: Catalog, fmt: str) -> list[str]:
    """The script header's checkpoint lines: size, rotation, interval, lost work, resume."""
    ck = launch_checkpoints(plan, catalog, fmt)
    every = f"every {duration(ck.interval_hours / 24)}" if ck.interval_hours else "at the end"
    steps = f" ({ck.interval_steps:,} steps)" if ck.interval_steps else ""
    lines = [
        f"checkpoints: {ck.size_gb:,.1f} GB each ({ck.trainer}), keep {ck.keep}, "
        f"{ck.total_tb:,.2f} TB at the peak, {every}{steps}; an interruption loses "
        f"{duration(ck.expected_lost_hours / 24)}; in {ck.directory}",
        f"resume: {ck.resume}",
    ]
    if not row_of(fmt).own_command:
        lines += [f"warning: {w}" for w in ck.warnings]
    return lines
