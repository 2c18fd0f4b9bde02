"""Reading TOML with errors that name the file and line, and writing files atomically."""

from __future__ import annotations

import contextlib
import errno
import os
import time
import tomllib
from pathlib import Path
from typing import Any

from .errors import PlanError

# Files read whole (plans, hardware files, config.json, launch.toml) are at most this long:
# real ones are a few KB; the bound turns /dev/zero or a wrong path into an error, not a hang.
MAX_FILE_BYTES = 1_048_576
BOM = "\ufeff"
# Temporary files of a save sit next to the file: `.plan.toml.dflash-plan-<pid>-<random>.tmp`.
TEMP_MARK = ".dflash-plan-"
TEMP_SUFFIX = ".tmp"
# A temporary file this old is left over from a killed save even if its pid is in use again.
STALE_TEMP_S = 3600.0


class SaveError(PlanError, OSError):
    """A file could not be written. A PlanError (one line, exit 2) that code catching
    OSError around a save also catches."""


def parse_toml(text: str, where: str) -> dict[str, Any]:
    """The TOML document in text. A leading byte-order mark is accepted (Windows editors
    write one); anything that is not TOML is a one-line PlanError naming where."""
    try:
        return tomllib.loads(text.removeprefix(BOM))
    except tomllib.TOMLDecodeError as err:
        raise PlanError(f"{where}: not valid TOML: {err}") from None
    except RecursionError:
        raise PlanError(f"{where}: not valid TOML: tables or arrays nested too deeply") from None
    except ValueError as err:  # Python refuses integers of more than 4,300 digits
        detail = (
            "an integer of more than 4,300 digits"
            if "digits" in str(err)
            else str(err).splitlines()[0]
        )
        raise PlanError(f"{where}: not valid TOML: {detail}") from None


def read_text(path: Path, what: str = "", limit: int = MAX_FILE_BYTES) -> str:
    """The UTF-8 text of a regular file of at most limit bytes (a BOM is dropped), or a
    one-line PlanError. `what` says what the file should be, for "no such file"."""
    from .lines import open_regular

    hint = f" ({what})" if what else ""
    handle, _ = open_regular(path, what)
    try:
        with handle:
            data = handle.read(limit + 1)
    except OSError as err:
        raise PlanError(f"{path}: cannot read: {err.strerror or err}") from None
    if len(data) > limit:
        raise PlanError(f"{path}: larger than {limit:,} bytes; not a file dflash-plan reads{hint}")
    try:
        return data.decode("utf-8").removeprefix(BOM)
    except UnicodeDecodeError as err:
        raise PlanError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None


def read_toml(path: Path) -> tuple[dict[str, Any], str]:
    """The parsed document and its text (kept to point errors at line numbers)."""
    text = read_text(path)
    return parse_toml(text, str(path)), text


def line_of(text: str, dotted: tuple[str, ...]) -> int | None:
    """Best-effort 1-based line where a dotted key is set in a TOML text, or None.

    Handles `[a.b]` tables with `key = ...` lines and `a.b.key = ...` dotted keys, which is
    how plan and hardware files are written.
    """
    if not dotted:
        return None
    table: tuple[str, ...] = ()
    for number, raw in enumerate(text.splitlines(), start=1):
        line = raw.split("#", 1)[0].strip()
        if not line:
            continue
        if line.startswith("[") and line.endswith("]"):
            inner = line.strip("[]").strip()
            table = tuple(part.strip().strip('"') for part in inner.split("."))
            if table == dotted:
                return number
            continue
        if "=" in line:
            key = tuple(part.strip().strip('"') for part in line.split("=", 1)[0].split("."))
            full = table + key
            # A prefix match also finds `link = { kind = ... }` for the key link.kind.
            if full == dotted[: len(full)]:
                return number
    return None


def write_atomic(path: Path, text: str) -> None:
    """Write text to path so that the file is either the old one or the whole new one.

    A symbolic link is written through: its target gets the new text (atomically, in the
    target's folder) and the link stays. Temporary files are named
    `.NAME.dflash-plan-PID-RANDOM.tmp`; those a killed save left are removed by the next save
    of the same file. Any failure is a SaveError naming the file and the reason."""
    path = Path(path)
    target = Path(os.path.realpath(path)) if path.is_symlink() else path
    directory = target.parent if str(target.parent) else Path(".")
    if target.is_dir():
        raise SaveError(f"{path}: is a folder, not a file")
    if target.exists() and not target.is_file():
        # A device or a pipe (e.g. a link to /dev/full) is not replaced by a file.
        raise SaveError(f"{path}: cannot write: not a regular file")
    if not directory.is_dir():
        raise SaveError(f"{path}: cannot write: folder {directory} does not exist")
    _remove_stale_temps(directory, target.name)
    import tempfile  # only for writing: keeps read-only commands fast

    tmp = None
    try:
        fd, tmp = tempfile.mkstemp(
            prefix=f".{target.name}{TEMP_MARK}{os.getpid()}-", suffix=TEMP_SUFFIX, dir=directory
        )
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if target.exists():
            os.chmod(tmp, target.stat().st_mode & 0o777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except OSError as err:
        _discard(tmp)
        raise SaveError(f"{path}: cannot write: {_reason(err)}") from None
    except BaseException:
        _discard(tmp)
        raise


def _discard(tmp: str | None) -> None:
    if tmp is not None:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def _reason(err: OSError) -> str:
    reasons = {
        errno.EROFS: "read-only file system",
        errno.ENOSPC: "no space left on device",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.EDQUOT: "disk quota exceeded",
        errno.EISDIR: "is a folder",
    }
    return reasons.get(err.errno or 0, err.strerror or str(err))


def _remove_stale_temps(directory: Path, name: str) -> None:
    """Remove temporary files of earlier saves of `name` whose process is gone."""
    prefix = f".{name}{TEMP_MARK}"
    try:
        entries = [
            entry
            for entry in os.scandir(directory)
            if entry.name.startswith(prefix) and entry.name.endswith(TEMP_SUFFIX)
        ]
    except OSError:
        return
    for entry in entries:
        pid_text = entry.name[len(prefix) :].split("-", 1)[0]
        with contextlib.suppress(OSError, ValueError):
            old = time.time() - entry.stat(follow_symlinks=False).st_mtime > STALE_TEMP_S
            if old or not _alive(int(pid_text)):
                os.unlink(entry.path)


def _alive(pid: int) -> bool:
    if pid == os.getpid():
        return True  # this process: maybe a save in another thread
    if os.name != "posix":
        return True  # no safe liveness probe: rely on the age rule
    try:
        os.kill(pid, 0)
    except ProcessLookupError:
        return False
    except PermissionError:
        return True
    return True


def to_toml(doc: dict[str, Any]) -> str:
    """A TOML document from tomli_w (strings escaped as TOML basic strings)."""
    import tomli_w

    return tomli_w.dumps(doc)


def toml_value(value: object) -> str:
    """One TOML value as it is written after `key = `."""
    return to_toml({"v": value}).removeprefix("v = ").rstrip("\n")
