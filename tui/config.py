"""Where the user's own files live, and the catalog built from them (no textual here)."""

from __future__ import annotations

import os
import stat
import sys
from pathlib import Path
from typing import TYPE_CHECKING

from ..model.basics.errors import PlanError
from ..model.basics.tomlfile import os_reason, read_toml
from ..model.basics.validation import short_repr
from ..model.core.labels import name_after_edits
from ..model.core.resolve import with_gpu_keys
from ..model.inputs.catalog import Catalog, Deferred
from ..model.inputs.hardware import load_gpu_file
from ..model.inputs.plan import Plan, load_plan
from ..model.inputs.targets import resolve_target
from ..model.physics.fitting import builtin_gpus

if TYPE_CHECKING:
    from ..model.inputs.offers import Offer

CONFIG_DIR_ENV = "DFLASH_PLAN_CONFIG_DIR"


def user_dir(env: str, xdg: str, linux_default: tuple[str, ...], kind: str) -> Path:
    """$env, else the platform's user folder of this kind ("config", "state") for
    dflash-plan: on Linux platformdirs' rule (the XDG variable, else the default under the
    home folder) without importing it (the app looks for a recovery file at every start)."""
    if os.environ.get(env):
        return Path(os.environ[env])
    if sys.platform.startswith("linux"):
        base = os.environ.get(xdg, "").strip()
        return Path(base if base else Path.home().joinpath(*linux_default)) / "dflash-plan"
    import platformdirs

    return Path(getattr(platformdirs, f"user_{kind}_path")("dflash-plan", appauthor=False))


def user_config_dir() -> Path:
    """$DFLASH_PLAN_CONFIG_DIR, else the platform's user config folder for dflash-plan."""
    return user_dir(CONFIG_DIR_ENV, "XDG_CONFIG_HOME", (".config",), "config")


def user_config_file(name: str) -> Path | None:
    """The user config's file `name`, None when there is none (no such file or folder
    yet); a folder that cannot be looked into (a name over 255 bytes, a file where a
    folder should be, no permission) or a `name` that is no regular file is a one-line
    PlanError naming where the folder comes from, its value cut short, and why (every
    command reads the config: it was a traceback in each, or silently no config)."""
    folder = user_config_dir()
    path = folder / name
    try:
        if stat.S_ISREG(path.stat().st_mode):
            return path
        reason = "not a regular file"
    except FileNotFoundError:
        return None
    except OSError as err:
        reason = os_reason(err, path)
    source = (
        f"{CONFIG_DIR_ENV}={short_repr(os.environ[CONFIG_DIR_ENV])}"
        if os.environ.get(CONFIG_DIR_ENV)
        else f"the config folder {short_repr(str(folder))}"
    )
    raise PlanError.at(source, f"cannot read {name} there: {reason}")


def load_catalog(hardware_files: list[Path] | None = None) -> Catalog:
    """Built-in GPUs, then the user config's hardware.toml, then each --hardware file;
    built-in rental offers, then the user config's offers.toml; today's date, against which
    prices are judged (read here, at the edge: the model never reads the clock)."""
    import datetime as dt

    gpus = builtin_gpus()
    user_file = user_config_file("hardware.toml")
    for path in ([user_file] if user_file else []) + list(hardware_files or []):
        gpus = load_gpu_file(path, gpus)
    return Catalog(gpus=gpus, offers=Deferred(_offers), today=dt.date.today())


def _offers() -> tuple[Offer, ...]:
    """The built-in rental offers, then the user config's offers.toml over them."""
    from ..model.inputs.offers import builtin_offers, load_offer_file

    offers = builtin_offers()
    user_offers = user_config_file("offers.toml")
    if user_offers is not None:
        offers = load_offer_file(user_offers, offers)
    return offers


def user_template() -> str | None:
    """The `template` of the user config's launch.toml, if there is one."""
    path = user_config_file("launch.toml")
    if path is None:
        return None
    doc, _ = read_toml(path)
    template = doc.get("template")
    if template is not None and not isinstance(template, str):
        raise PlanError.at(str(path), f"template = {template!r}: must be a string")
    unknown = set(doc) - {"template"}
    if unknown:
        raise PlanError.at(str(path), f"unknown key '{sorted(unknown)[0]}'; allowed: template")
    return template


def with_target(catalog: Catalog, plan: Plan, base_dir: Path | None) -> Catalog:
    """The catalog, plus the plan's target model when it is a config.json path."""
    spec = plan.workload.target_model
    if spec in catalog.models:
        return catalog
    return catalog.with_model(spec, resolve_target(spec, base_dir))


def open_plan(path: Path | None, sets: list[str] | None, catalog: Catalog) -> tuple[Plan, Catalog]:
    """The plan in path (or the built-in plan) with the --set edits, and the catalog with
    its target model. A plan the edits changed is named for what it now is, unless they
    named it."""
    # Every GPU as the catalog's key ('B200' is b200), as the projection reads it.
    plan = with_gpu_keys(load_plan(path, sets, catalog.find), catalog)
    catalog = with_target(catalog, plan, path.parent if path else None)
    if sets:
        plan = name_after_edits(with_gpu_keys(load_plan(path), catalog), plan, catalog)
    return plan, catalog
