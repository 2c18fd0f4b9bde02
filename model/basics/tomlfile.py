"""Reading TOML with errors that name the file and line, and writing files atomically."""

from __future__ import annotations

import contextlib
import errno
import os
import stat
import time
import tomllib
from collections.abc import Sequence
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
# Linux file systems (ext4, xfs, btrfs, tmpfs) allow 255 bytes in one name (NAME_MAX); a
# temporary file's name keeps this many of its file's name, leaving room for the rest.
NAME_MAX_BYTES = 255
TEMP_NAME_BYTES = 200
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
        raise PlanError.at(where, f"not valid TOML: {err}") from None
    except RecursionError:
        raise PlanError.at(where, "not valid TOML: tables or arrays nested too deeply") from None
    except ValueError as err:  # Python refuses integers of more than 4,300 digits
        detail = (
            "an integer of more than 4,300 digits"
            if "digits" in str(err)
            else str(err).splitlines()[0]
        )
        raise PlanError.at(where, f"not valid TOML: {detail}") from None


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
        raise PlanError.at(str(path), f"cannot read: {err.strerror or err}") from None
    if len(data) > limit:
        raise PlanError.at(
            str(path), f"larger than {limit:,} bytes; not a file dflash-plan reads{hint}"
        )
    try:
        return data.decode("utf-8").removeprefix(BOM)
    except UnicodeDecodeError as err:
        raise PlanError.at(
            str(path), f"not UTF-8 text ({err.reason} at byte {err.start})"
        ) from None


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


def writable_target(path: Path) -> Path:
    """The file a write to path replaces: path, or a symbolic link's target. A SaveError
    (one line) when it cannot be written: a folder, a device or a pipe, a folder that does
    not exist, a name the file system refuses (over 255 bytes) or cannot look at."""
    path = Path(path)
    found = _status(path, path, follow=False)
    is_link = found is not None and stat.S_ISLNK(found.st_mode)
    target = Path(os.path.realpath(path)) if is_link else path
    directory = target.parent if str(target.parent) else Path(".")
    found = _status(path, target, follow=True)
    if found is not None and stat.S_ISDIR(found.st_mode):
        raise SaveError.at(str(path), "is a folder, not a file")
    if found is not None and not stat.S_ISREG(found.st_mode):
        # A device or a pipe (e.g. a link to /dev/full) is not replaced by a file.
        raise SaveError.at(str(path), "cannot write: not a regular file")
    folder = _status(path, directory, follow=True)
    if folder is None or not stat.S_ISDIR(folder.st_mode):
        raise SaveError.at(str(path), f"cannot write: folder {directory} does not exist")
    return target


def _status(path: Path, looked_at: Path, follow: bool) -> os.stat_result | None:
    """looked_at's status (None: nothing there); a SaveError about path when the file
    system refuses to look (a name too long, a folder that cannot be searched)."""
    try:
        return os.stat(looked_at, follow_symlinks=follow)
    except (FileNotFoundError, NotADirectoryError):
        return None
    except OSError as err:
        if follow and err.errno == errno.ELOOP:
            return None  # a link to itself: nothing there to replace
        raise SaveError.at(str(path), f"cannot write: {os_reason(err, path)}") from None


def make_folder(path: Path) -> None:
    """Create a folder and its parents unless it exists: a SaveError (one line) when it
    cannot be (a file in its place or above it, a name too long, no permission)."""
    path = Path(path)
    try:
        path.mkdir(parents=True, exist_ok=True)
    except FileExistsError:
        raise SaveError.at(str(path), "exists and is not a folder") from None
    except NotADirectoryError:
        above = next((p for p in path.parents if p.is_file()), path.parent)
        raise SaveError.at(str(path), f"cannot create the folder: {above} is a file") from None
    except OSError as err:
        raise SaveError.at(str(path), f"cannot create the folder: {os_reason(err, path)}") from None


def write_atomic(path: Path, text: str) -> None:
    """Write text to path so that the file is either the old one or the whole new one.

    A symbolic link is written through: its target gets the new text (atomically, in the
    target's folder) and the link stays. Temporary files are named
    `.NAME.dflash-plan-PID-RANDOM.tmp`; those a killed save left are removed by the next save
    of the same file. Any failure is a SaveError naming the file and the reason."""
    path = Path(path)
    target = writable_target(path)
    directory = target.parent if str(target.parent) else Path(".")
    _remove_stale_temps(directory, target.name)

    tmp = None
    try:
        tmp = _synced_temp(directory, target.name, text)
        if target.exists():
            os.chmod(tmp, target.stat().st_mode & 0o777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, target)
    except OSError as err:
        _discard(tmp)
        raise SaveError.at(str(path), f"cannot write: {os_reason(err, path)}") from None
    except BaseException:
        _discard(tmp)
        raise


def write_new(paths: Sequence[Path], text: str) -> Path:
    """Create the first of paths (names in one folder) that nothing holds yet, holding
    text, whole or not at all: never through a symbolic link, never over a file (a
    recovery file: one planted or written before is never replaced). Its path;
    FileExistsError when every name is taken, a SaveError for any other failure. The
    file is the writer's only (mode 600)."""
    first = Path(paths[0])
    directory = first.parent if str(first.parent) else Path(".")
    _remove_stale_temps(directory, first.name)
    tmp = None
    path = first
    try:
        tmp = _synced_temp(directory, first.name, text)
        for path in map(Path, paths):
            with contextlib.suppress(FileExistsError):
                _link_new(tmp, path, text)
                return path
        raise FileExistsError(errno.EEXIST, "every name is taken", str(first))
    except FileExistsError:
        raise
    except OSError as err:
        raise SaveError.at(str(path), f"cannot write: {os_reason(err, path)}") from None
    finally:
        _discard(tmp)


def _link_new(tmp: str, path: Path, text: str) -> None:
    """Give the written file tmp the name path where nothing holds it (FileExistsError
    where something does). A hard link is made only where no name exists (a dangling link
    included) and never follows one: the whole file appears at once."""
    try:
        os.link(tmp, path)
    except FileExistsError:
        raise
    except OSError as err:
        if err.errno not in NO_HARD_LINKS:
            raise
        _write_exclusive(path, text)  # a file system without hard links (FAT, some FUSE)


# What os.link raises where a file system has no hard links.
NO_HARD_LINKS = frozenset({errno.EPERM, errno.EOPNOTSUPP, errno.ENOTSUP, errno.EXDEV, errno.ENOSYS})


def _write_exclusive(path: Path, text: str) -> None:
    """Create path (O_EXCL: only where no name exists; O_NOFOLLOW: never through a link)
    and write text; a file left half-written by a failure is removed."""
    flags = os.O_WRONLY | os.O_CREAT | os.O_EXCL | getattr(os, "O_NOFOLLOW", 0)
    _write_synced(os.open(path, flags, 0o600), str(path), text)


def _temp_stem(name: str) -> str:
    """The start of the temporary files' names beside the file `name`: the name cut to
    leave room for the mark, the pid and the random part within the 255 bytes a file
    system allows in one name (so that a name near the limit is still written)."""
    cut = os.fsencode(name)[:TEMP_NAME_BYTES].decode("utf-8", "ignore")
    return f".{cut}{TEMP_MARK}"


def _temp_prefix(name: str) -> str:
    return f"{_temp_stem(name)}{os.getpid()}-"


def _discard(tmp: str | None) -> None:
    if tmp is not None:
        with contextlib.suppress(OSError):
            os.unlink(tmp)


def os_reason(err: OSError, path: Path | None = None) -> str:
    """Why an operation on path failed, in words ('name too long (300 bytes in one name;
    at most 255)', 'permission denied')."""
    if err.errno == errno.ENAMETOOLONG and path is not None:
        longest = max(len(os.fsencode(part)) for part in Path(path).parts)
        if longest > NAME_MAX_BYTES:
            return f"name too long ({longest:,} bytes in one name; at most {NAME_MAX_BYTES})"
        return f"path too long ({len(os.fsencode(str(path))):,} bytes)"
    reasons = {
        errno.EROFS: "read-only file system",
        errno.ENOSPC: "no space left on device",
        errno.EACCES: "permission denied",
        errno.EPERM: "permission denied",
        errno.EDQUOT: "disk quota exceeded",
        errno.EISDIR: "is a folder",
        errno.ENOTDIR: "a part of the path is a file, not a folder",
        errno.ELOOP: "too many levels of symbolic links",
    }
    return reasons.get(err.errno or 0, err.strerror or str(err))


def _remove_stale_temps(directory: Path, name: str) -> None:
    """Remove temporary files of earlier saves of `name` whose process is gone."""
    prefix = _temp_stem(name)
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


def _synced_temp(directory: Path, name: str, text: str) -> str:
    """A new temporary file beside `name` in directory holding text, on disk (fsync):
    what a save renames or links into place. Its path (mode 600)."""
    import tempfile  # only for writing: keeps read-only commands fast

    fd, tmp = tempfile.mkstemp(prefix=_temp_prefix(name), suffix=TEMP_SUFFIX, dir=directory)
    _write_synced(fd, tmp, text)
    return tmp


def _write_synced(fd: int, path: str, text: str) -> None:
    """text into the new file open as fd (named path), on disk before it returns; a
    failure removes the file, never left half-written."""
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
    except BaseException:
        _discard(path)
        raise
