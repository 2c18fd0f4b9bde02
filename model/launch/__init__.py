"""Launch scripts for the planned run: a small registry of formats (SpecForge unified and
legacy, vLLM speculators, Slurm, a user's template), one module each, all rendering from
one resolved plan and one device layout (layout.py).

Every user-controlled value a format writes (shell words, comments, heredocs, YAML, TOML,
a template's placeholders) goes through the one escaping layer, escape.py. docs/launch.md
names the upstream versions each format is checked against.

Importing this package is light (no YAML, no format module): the app reads FORMATS from it
(the plan schema's list of names); a format's module loads when a script is generated.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

from ..inputs.plan import LAUNCH_FORMATS
from .paths import PATHS, launch_path, launch_transport, own_path, path_sets, path_words, why_not

if TYPE_CHECKING:
    from ..inputs.catalog import Catalog
    from ..inputs.plan import Plan
    from .common import LaunchScript

# The registry: format name (the plan schema's list) -> its module, named after it (which
# defines NAME and render(ctx, template)).
FORMATS: tuple[str, ...] = LAUNCH_FORMATS
_MODULES = {name: name.replace("-", "_") for name in FORMATS}

# What a format writes when it is not a script (no #!, not executable): the name's suffix.
DOCUMENT_SUFFIX: dict[str, str] = {"kubernetes": ".yaml", "skypilot": ".yaml"}


def file_name(fmt: str) -> str:
    """The name a launch of format fmt is saved under by default."""
    return f"launch-{fmt}{DOCUMENT_SUFFIX.get(fmt, '.sh')}"


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
    "DOCUMENT_SUFFIX",
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
    own, path = own_path(plan), launch_path(plan, fmt)
    if path is None:
        return f"launch: {fmt} is not what these figures describe: {PATHS[fmt][1]}"
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

    if fmt not in _MODULES:
        raise PlanError.flag(
            "launch format", repr(fmt), f"choose one of {', '.join(FORMATS)}", "launch.format"
        )
    return importlib.import_module(f".{_MODULES[fmt]}", __name__)


def generate(
    plan: Plan, catalog: Catalog, fmt: str | None = None, template: str | None = None
) -> LaunchScript:
    """The launch script of plan in format fmt (default: the plan's launch.format).
    `template` is the user config's template, used when the plan has none. The plan is
    resolved first, so launch refuses exactly what the projection refuses."""
    from ..basics.errors import PlanError
    from .common import OFFLINE_REFUSALS, context, require_receive

    name = fmt or plan.launch.format
    module = format_module(name)
    ctx = context(plan, catalog)
    if plan.workload.mode == "offline" and name != "template":
        # The template runs the user's command whatever the mode; the others write the
        # capture-then-train pair or refuse.
        if name in OFFLINE_REFUSALS:
            raise PlanError.field(
                "workload.mode",
                "offline",
                f"the {name} launch cannot write the offline run: {OFFLINE_REFUSALS[name]}",
            )
        offline: LaunchScript = module.render_offline(ctx, template)
        return offline
    require_receive(plan, name)
    result: LaunchScript = module.render(ctx, template)
    return result
