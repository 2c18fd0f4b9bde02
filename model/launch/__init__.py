"""Launch scripts for the planned run: the formats of the registry (inputs/formats.py:
SpecForge unified and legacy, vLLM speculators, Slurm, Kubernetes, SkyPilot, a user's
template), one module each, all rendering from one resolved plan and one device layout
(layout.py).

Every user-controlled value a format writes (shell words, comments, heredocs, YAML, TOML,
a template's placeholders) goes through the one escaping layer, escape.py. docs/launch.md
names the upstream versions each format is checked against.

Importing this package is light (no YAML, no format module); a format's module loads when a
script is generated.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..inputs import formats
from .paths import launch_path, launch_transport, own_path, path_sets, path_words, why_not

if TYPE_CHECKING:
    from ..inputs.catalog import Catalog
    from ..inputs.plan import Plan
    from .common import LaunchScript

# The format names (the registry's built-in rows, as the tests name them; the code reads
# the registry, which a new format's row joins).
FORMATS: tuple[str, ...] = formats.names()


def file_name(fmt: str) -> str:
    """The name a launch of format fmt is saved under by default."""
    return f"launch-{fmt}{formats.row_of(fmt).suffix}"


# Names other code imports from here, loaded on first use.
_LAZY = {
    "LaunchScript": "common",
    "mem_fraction_static": "common",
    "context": "common",
    "Layout": "layout",
    "Replica": "layout",
    "assign_devices": "layout",
    "MAX_NODES": "layout",
    "TEMPLATE_PLACEHOLDERS": "template",
}

__all__ = [
    "FORMATS",
    "file_name",
    "generate",
    "launch_line",
    "launch_path",
    "launch_transport",
    "own_path",
    *_LAZY,
]


def launch_line(plan: Plan, fmt: str | None = None) -> str:
    """One line: which launch a projection of plan describes."""
    fmt = fmt or plan.launch.format
    refused = formats.refusal(fmt, plan.workload.topology, plan.workload.drafter)
    if refused is not None:
        key, value, why = refused
        return (
            f"launch: {fmt} is not what these figures describe: it cannot run {key} {value}: {why}"
        )
    if plan.workload.topology == "colocated":  # the template's command too: nothing sent
        return (
            f"launch: these figures describe the {fmt} launch (colocated, no hidden-state "
            f"transport)"
        )
    own, path = own_path(plan), launch_path(plan, fmt)
    if path is None:
        why = formats.row_of(fmt).transport_why
        return f"launch: {fmt} is not what these figures describe: {why}"
    name, keys = path_words(own)
    if path == own:
        return f"launch: these figures describe the {fmt} launch ({name}, {keys})"
    return (
        f"launch: these figures are for {name} ({keys}), which the {fmt} launch does not "
        f"run: {why_not(plan, fmt, path)}; {path_sets(path)} projects the launched run"
    )


def __getattr__(name: str) -> Any:
    if name in _LAZY:
        return getattr(importlib.import_module(f".{_LAZY[name]}", __name__), name)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")


def format_module(fmt: str) -> Any:
    from ..basics.errors import PlanError

    if fmt not in formats.FORMATS:
        raise PlanError.flag(
            "launch format",
            repr(fmt),
            f"choose one of {', '.join(formats.names())}",
            "launch.format",
        )
    return importlib.import_module(f".{formats.row_of(fmt).module}", __name__)


def generate(
    plan: Plan,
    catalog: Catalog,
    fmt: str | None = None,
    template: str | None = None,
    upstream: str = "pinned",
) -> LaunchScript:
    """The launch script of plan in format fmt (default: the plan's launch.format).
    `template` is the user config's template, used when the plan has none; `upstream` the
    upstream line it installs (versions.py). The plan is resolved first, so launch refuses
    exactly what the projection refuses."""
    from ..basics.errors import PlanError
    from .common import context, require_receive
    from .versions import upstream_line

    name = fmt or plan.launch.format
    module = format_module(name)
    row = formats.row_of(name)
    ctx = context(plan, catalog, upstream_line(upstream))
    # What the format cannot run, refused in one line from its registry row.
    refused = formats.refusal(name, plan.workload.topology, plan.workload.drafter)
    if refused is not None:
        key, value, why = refused
        raise PlanError.said(f"launch.format {name} cannot run {key} {value}: {why}", key)
    if plan.workload.mode == "offline" and not row.own_command:
        # The template runs the user's command whatever the mode; the others write the
        # capture-then-train pair or refuse.
        if row.offline_refusal is not None:
            raise PlanError.field(
                "workload.mode",
                "offline",
                f"the {name} launch cannot write the offline run: {row.offline_refusal}",
            )
        offline: LaunchScript = module.render_offline(ctx, template)
        return offline
    require_receive(plan, name)
    result: LaunchScript = module.render(ctx, template)
    return result
