"""Recovery files: the plan being edited, unsaved edits included, written when the app is
stopped by an unhandled error, SIGTERM or SIGHUP, so that the next start offers it back.
Pure Python (no textual): the app calls `rescue` when it dies and `find_recovery` when
it starts.

A plan file's recovery file sits beside it (`.PLAN.toml.recovered`) when its folder is
writable, else in the user's state folder, named after the plan and a hash of its absolute
path (so two plans of the same name do not share one); the built-in plan's is in the state
folder."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import sys
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model.basics.errors import PlanError
from ..model.basics.tomlfile import SaveError, read_toml, write_atomic

STATE_DIR_ENV = "DFLASH_PLAN_STATE_DIR"
SUFFIX = ".recovered"
BUILT_IN = "built-in-plan.toml"


def user_state_dir() -> Path:
    """$DFLASH_PLAN_STATE_DIR, else the platform's user state folder for dflash-plan."""
    if os.environ.get(STATE_DIR_ENV):
        return Path(os.environ[STATE_DIR_ENV])
    if sys.platform.startswith("linux"):
        # platformdirs' rule on Linux (XDG base directories), without importing it (the
        # app looks for a recovery file at every start).
        xdg = os.environ.get("XDG_STATE_HOME", "").strip()
        return Path(xdg if xdg else Path.home() / ".local" / "state") / "dflash-plan"
    import platformdirs

    return Path(platformdirs.user_state_path("dflash-plan", appauthor=False))


def beside(plan_path: Path) -> Path:
    return plan_path.parent / f".{plan_path.name}{SUFFIX}"


def in_state_dir(plan_path: Path | None) -> Path:
    if plan_path is None:
        return user_state_dir() / f"{BUILT_IN}{SUFFIX}"
    key = hashlib.sha256(str(plan_path.absolute()).encode()).hexdigest()[:16]
    return user_state_dir() / f"{plan_path.name}-{key}{SUFFIX}"


def candidates(plan_path: Path | None) -> list[Path]:
    """Where a plan's recovery file may be, in the order it is written to."""
    if plan_path is None:
        return [in_state_dir(None)]
    return [beside(plan_path), in_state_dir(plan_path)]


def write_recovery(text: str, plan_path: Path | None) -> Path:
    """Write a recovery file for the plan at plan_path (None: the built-in plan),
    atomically; its path. SaveError naming each place tried when none can be written."""
    reasons = []
    for path in candidates(plan_path):
        try:
            if path.parent == user_state_dir():
                path.parent.mkdir(parents=True, exist_ok=True)
            elif not os.access(path.parent, os.W_OK | os.X_OK):
                reasons.append(f"{path.parent}: not writable")
                continue
            write_atomic(path, text)
        except OSError as err:  # SaveError too
            reasons.append(
                str(err) if isinstance(err, SaveError) else f"{path}: {err.strerror or err}"
            )
            continue
        return path
    raise SaveError("; ".join(reasons))


@dataclass(frozen=True, slots=True)
class Recovered:
    """A recovery file found at start: where, when it was written, and whether the plan
    file it belongs to has been written since (or at the same time)."""

    path: Path
    written: dt.datetime
    not_newer: bool

    def question(self, plan_path: Path | None) -> str:
        when = self.written.strftime("%Y-%m-%d %H:%M")
        of = f"{plan_path.name}" if plan_path is not None else "the built-in plan"
        text = f"A plan was recovered from {when} (edits to {of} that were not saved)."
        if self.not_newer and plan_path is not None:
            text += f" Note: {plan_path.name} was saved since, or at the same time."
        return text + f"\n{self.path}"


def find_recovery(plan_path: Path | None) -> Recovered | None:
    """The newest recovery file of the plan at plan_path (None: the built-in plan)."""
    found: list[tuple[float, Path]] = []
    for path in candidates(plan_path):
        try:
            found.append((path.stat().st_mtime, path))
        except OSError:
            continue
    if not found:
        return None
    mtime, path = max(found)
    try:
        not_newer = plan_path is not None and mtime <= plan_path.stat().st_mtime
    except OSError:
        not_newer = False
    return Recovered(path, dt.datetime.fromtimestamp(mtime), not_newer)


def read_recovery(path: Path) -> dict[str, Any]:
    """A recovery file's plan document (PlanError when it cannot be read)."""
    doc, _ = read_toml(path)
    return doc


def discard(path: Path) -> str | None:
    """Delete a recovery file; why it could not be (None when deleted or already gone)."""
    try:
        path.unlink(missing_ok=True)
    except OSError as err:
        return f"could not delete {path}: {err.strerror or err}"
    return None


def rescue(text: str | None, plan_path: Path | None, why: str) -> str:
    """Write the plan's text (None: nothing unsaved) to its recovery file; what to tell
    the user on stderr (one line; when the file cannot be written, the plan follows it,
    so that nothing is lost)."""
    head = f"dflash-plan: {why}"
    if text is None:
        return f"{head}; the plan had no unsaved changes"
    try:
        path = write_recovery(text, plan_path)
    except (OSError, PlanError) as err:
        return f"{head}; could not write a recovery file ({err}); the unsaved plan follows:\n{text}"
    return (
        f"{head}; the unsaved plan was written to {path} (the next dflash-plan "
        f"{'' if plan_path is None else str(plan_path) + ' '}offers to open it)"
    )
