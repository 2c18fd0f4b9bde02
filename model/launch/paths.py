"""The hidden-state path each launch format runs, as the projection's workload.transport
names it (the script header projects the launched run on it)."""

from __future__ import annotations

from typing import TYPE_CHECKING

if TYPE_CHECKING:
    from ..inputs.plan import Plan

# The hidden-state path each format launches, as the projection's workload.transport names
# it, and why; None: the plan's own path (template) or no transfer (legacy, colocated).
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
TRANSPORT_NAMES = {"mooncake": "host-staged through a Mooncake store", "direct": "device to device"}


def launch_transport(plan: Plan, fmt: str | None = None) -> str | None:
    """The workload.transport of the run format fmt launches (None: not projected)."""
    fmt = fmt or plan.launch.format
    if fmt == "template":
        return plan.workload.transport
    return PATHS[fmt][0]
