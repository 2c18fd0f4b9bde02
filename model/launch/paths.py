"""The hidden-state path each launch format runs, as the projection's workload.transport and
workload.receive name it (the script header projects the launched run on it), from the
format's row (inputs/formats.py)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..inputs.formats import row_of
from ..inputs.plan import launch_receive

if TYPE_CHECKING:
    from ..inputs.plan import Plan

# A hidden-state path: (workload.transport, workload.receive).
HiddenPath = tuple[str, str]


def launch_transport(plan: Plan, fmt: str | None = None) -> str | None:
    """The workload.transport of the run format fmt launches (None: not projected)."""
    row = row_of(fmt or plan.launch.format)
    return plan.workload.transport if row.own_command else row.transport


def own_path(plan: Plan) -> HiddenPath:
    return plan.workload.transport, plan.workload.receive


def launch_path(plan: Plan, fmt: str | None = None) -> HiddenPath | None:
    """The (workload.transport, workload.receive) of the run format fmt launches (None: not
    projected). Device to device has no receive mode: the plan's own is kept."""
    transport = launch_transport(plan, fmt)
    if transport is None:
        return None
    receive = launch_receive(plan, fmt) if transport == "mooncake" else None
    return transport, receive or plan.workload.receive


def path_words(path: HiddenPath) -> tuple[str, str]:
    """A path as the header and `project` say it: its name, and the plan keys that set it."""
    from ..physics.pipeline import path_name  # the pipeline loads with the projection

    transport, receive = path
    keys = f"workload.transport = {transport}"
    if transport == "mooncake":
        keys += f", workload.receive = {receive}"
    return f"hidden states {path_name(transport, receive)}", keys


def path_sets(path: HiddenPath) -> str:
    """The --set edits that project a path."""
    transport, receive = path
    sets = f"--set workload.transport={transport}"
    return sets + (f" --set workload.receive={receive}" if transport == "mooncake" else "")


def why_not(plan: Plan, fmt: str, path: HiddenPath) -> str:
    """Why the run format fmt launches is not on the plan's own path: another transport,
    else another receive mode."""
    own, row = own_path(plan), row_of(fmt)
    if path[0] != own[0]:
        return row.transport_why
    return row.receive_why  # the same store, another receive mode
