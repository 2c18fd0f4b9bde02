"""Recovery files: the plan being edited, unsaved edits included, written when the app is
stopped by an unhandled error, SIGTERM or SIGHUP, so that the next start offers it back.
Pure Python (no textual): the app calls `rescue` when it dies and `find_recoveries` when
it starts.

A plan file's recovery file sits beside it (`.PLAN.toml.recovered`) when its folder is
writable, else in the user's state folder, named after the plan and a hash of its absolute
path (so two plans of the same name do not share one); the built-in plan's is in the state
folder. A recovery file is only ever created, never replaced: a second one (two instances,
or one kept from an earlier stop) is `.PLAN.toml.recovered-2`, and so on; a link planted at
one of these names is never followed."""

from __future__ import annotations

import datetime as dt
import hashlib
import os
import stat
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from ..model.basics.errors import PlanError
from ..model.basics.tomlfile import SaveError, make_folder, read_toml, write_new
from .config import user_dir

STATE_DIR_ENV = "DFLASH_PLAN_STATE_DIR"
SUFFIX = ".recovered"
BUILT_IN = "built-in-plan.toml"
# Recovery files of one plan in one place, at most (`.PLAN.toml.recovered`, then `-2`...):
# past them the next place is tried, then the plan goes to stderr.
MAX_RECOVERIES = 100


def user_state_dir() -> Path:
    """$DFLASH_PLAN_STATE_DIR, else the platform's user state folder for dflash-plan."""
    return user_dir(STATE_DIR_ENV, "XDG_STATE_HOME", (".local", "state"), "state")


def beside(plan_path: Path) -> Path:
    return plan_path.parent / f".{plan_path.name}{SUFFIX}"


def in_state_dir(plan_path: Path | None) -> Path:
    if plan_path is None:
        return user_state_dir() / f"{BUILT_IN}{SUFFIX}"
    key = hashlib.sha256(str(plan_path.absolute()).encode()).hexdigest()[:16]
    return user_state_dir() / f"{plan_path.name}-{key}{SUFFIX}"


def candidates(plan_path: Path | None) -> list[Path]:
    """Where a plan's recovery files may be, in the order they are written to (each the
    first of its place's names: `numbered` gives the others)."""
    if plan_path is None:
        return [in_state_dir(None)]
    return [beside(plan_path), in_state_dir(plan_path)]


def numbered(first: Path, n: int) -> Path:
    """The nth recovery file of a place: `first`, then `first-2`, `first-3`..."""
    return first if n == 1 else first.with_name(f"{first.name}-{n}")


def _number(name: str, first: str) -> int | None:
    """n when name is the nth recovery file's name after `first` (None: it is not one)."""
    if name == first:
        return 1
    rest = name.removeprefix(f"{first}-")
    if rest != name and rest.isdigit() and rest[0] != "0" and int(rest) >= 2:
        return int(rest)
    return None


def write_recovery(text: str, plan_path: Path | None) -> Path:
    """Write a recovery file for the plan at plan_path (None: the built-in plan) under
    the first free name of the first place that takes it (never over a file or through a
    link: an earlier recovery, kept or from another instance, stays as it was); its path.
    SaveError naming each place tried when none can be written."""
    reasons = []
    for first in candidates(plan_path):
        try:
            if first.parent == user_state_dir():
                make_folder(first.parent)
            elif not os.access(first.parent, os.W_OK | os.X_OK):
                reasons.append(f"{first.parent}: not writable")
                continue
            return _first_free(first, text)
        except OSError as err:  # SaveError too
            reasons.append(
                str(err) if isinstance(err, SaveError) else f"{first}: {err.strerror or err}"
            )
    said = "; ".join(reasons)
    raise SaveError(said, where="recovery file", reason=said)


def _first_free(first: Path, text: str) -> Path:
    try:
        return write_new([numbered(first, n) for n in range(1, MAX_RECOVERIES + 1)], text)
    except FileExistsError:
        raise SaveError.at(
            str(first),
            f"{MAX_RECOVERIES} recovery files of this plan are there already "
            f"(open or discard them)",
        ) from None


@dataclass(frozen=True, slots=True)
class Recovered:
    """A recovery file found at start: where, when it was written, and whether the plan
    file it belongs to has been written since (or at the same time)."""

    path: Path
    written: dt.datetime
    not_newer: bool

    def question(self, plan_path: Path | None) -> str:
        when = self.written.strftime("%Y-%m-%d %H:%M")
        text = f"A plan was recovered from {when} (edits to {_of(plan_path)} that were not saved)."
        if self.not_newer and plan_path is not None:
            text += f" Note: {plan_path.name} was saved since, or at the same time."
        return text + f"\n{self.path}"

    def line(self, plan_path: Path | None) -> str:
        """One line of a list of recovered plans: when, the file (and a plan saved since)."""
        saved = f" ({plan_path.name} saved since)" if self.not_newer and plan_path else ""
        return f"{self.written:%Y-%m-%d %H:%M}{saved}  {self.path}"


def _of(plan_path: Path | None) -> str:
    return plan_path.name if plan_path is not None else "the built-in plan"


def offer(found: list[Recovered], at: int, plan_path: Path | None) -> str:
    """The question the app asks about found[at]; with several, every one is listed, newest
    first, found[at] marked."""
    if len(found) == 1:
        return found[0].question(plan_path)
    lines = [
        f"{len(found)} plans were recovered (edits to {_of(plan_path)} that were not saved); "
        f"the buttons answer for the one marked ▸:"
    ]
    lines += [f"{'▸' if i == at else ' '} {each.line(plan_path)}" for i, each in enumerate(found)]
    return "\n".join(lines)


def find_recoveries(plan_path: Path | None) -> list[Recovered]:
    """Every recovery file of the plan at plan_path (None: the built-in plan), newest first.
    Only regular files: a link or anything else at such a name is not one dflash-plan
    wrote."""
    found: list[tuple[float, int, Path]] = []
    for first in candidates(plan_path):
        try:
            with os.scandir(first.parent) as entries:
                names = [entry.name for entry in entries]
        except OSError:
            continue
        for name in names:
            n = _number(name, first.name)
            if n is None:
                continue
            path = first.parent / name
            try:
                status = path.lstat()
            except OSError:
                continue
            if stat.S_ISREG(status.st_mode):
                found.append((status.st_mtime, n, path))
    try:
        plan_mtime = plan_path.stat().st_mtime if plan_path is not None else None
    except OSError:
        plan_mtime = None
    return [
        Recovered(
            path, dt.datetime.fromtimestamp(mtime), plan_mtime is not None and mtime <= plan_mtime
        )
        for mtime, _, path in sorted(found, key=lambda f: (f[0], f[1]), reverse=True)
    ]


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
