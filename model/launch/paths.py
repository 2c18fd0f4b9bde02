"""The hidden-state path each launch format runs, as the projection's workload.transport and
workload.receive name it (the script header projects the launched run on it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from ..inputs.plan import LAUNCH_RECEIVE, launch_receive

if TYPE_CHECKING:
    from ..inputs.plan import Plan

# The hidden-state path each format launches, as the projection's workload.transport names
# it, and why; None: the plan's own path (template) or no transfer (legacy, colocated). The
# receive mode each format runs is inputs/plan.py's LAUNCH_RECEIVE (the projection's
# receive-differs-from-launch diagnostic reads it too).
SPECFORGE_PATH = "SpecForge stages hidden states through its Mooncake store"
PATHS: dict[str, tuple[str | None, str]] = {
    "specforge": ("mooncake", SPECFORGE_PATH),
    "slurm": ("mooncake", SPECFORGE_PATH),
    "kubernetes": ("mooncake", SPECFORGE_PATH),
    "skypilot": ("mooncake", SPECFORGE_PATH),
    "speculators": (
        "mooncake",
        "speculators stages hidden states in host memory: files "
        "under /tmp on one node, its Mooncake backend across nodes "
        "(both projected with the Mooncake path's measured ceilings)",
    ),
    "specforge-legacy": (
        None,
        "the legacy trainer runs target and drafter colocated on "
        "every GPU, which the planner's target/drafter split does "
        "not describe",
    ),
    "template": (None, "your command runs the plan's own workload.transport"),
}

# A hidden-state path: (workload.transport, workload.receive).
HiddenPath = tuple[str, str]


def launch_transport(plan: Plan, fmt: str | None = None) -> str | None:
    """The workload.transport of the run format fmt launches (None: not projected)."""
    fmt = fmt or plan.launch.format
    if fmt == "template":
        return plan.workload.transport
    return PATHS[fmt][0]


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
    own = own_path(plan)
    if path[0] != own[0]:
        return PATHS[fmt][1]
    return LAUNCH_RECEIVE[fmt][1]  # the same store, another receive mode
