"""Reading TOML with errors that name the file and line, and writing files atomically."""

from __future__ import annotations

import contextlib
import os
import tempfile
from pathlib import Path
from typing import Any

import tomllib

from .errors import PlanError


def parse_toml(text: str, where: str) -> dict[str, Any]:
    try:
        return tomllib.loads(text)
    except tomllib.TOMLDecodeError as err:
        raise PlanError(f"{where}: not valid TOML: {err}") from None


def read_toml(path: Path) -> tuple[dict[str, Any], str]:
    """The parsed document and its text (kept to point errors at line numbers)."""
    try:
        text = Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise PlanError(f"{path}: no such file") from None
    except IsADirectoryError:
        raise PlanError(f"{path}: is a folder, not a file") from None
    except UnicodeDecodeError as err:
        raise PlanError(f"{path}: not UTF-8 text ({err.reason} at byte {err.start})") from None
    except OSError as err:
        raise PlanError(f"{path}: cannot read: {err.strerror}") from None
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
    """Write text to path so that the file is either the old one or the whole new one."""
    path = Path(path)
    directory = path.parent if str(path.parent) else Path(".")
    fd, tmp = tempfile.mkstemp(prefix=f".{path.name}.", suffix=".tmp", dir=directory)
    try:
        with os.fdopen(fd, "w", encoding="utf-8") as handle:
            handle.write(text)
            handle.flush()
            os.fsync(handle.fileno())
        if path.exists():
            os.chmod(tmp, path.stat().st_mode & 0o777)
        else:
            umask = os.umask(0)
            os.umask(umask)
            os.chmod(tmp, 0o666 & ~umask)
        os.replace(tmp, path)
    except BaseException:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(tmp)
        raise
