"""Reading a text file record by record in bounded memory: logs and JSON lines of any size.

Training logs and datasets run to gigabytes, and a log can hold one enormous "line": tqdm
redraws its bar with carriage returns, so a bar left running into a file is one line of
every redraw. Nothing here holds more than one record (at most `max_record_bytes`) and one
read chunk in memory; a longer record is reported as too long and skipped unread.
"""

from __future__ import annotations

import os
import re
import stat
from collections.abc import Callable, Generator
from dataclasses import dataclass
from pathlib import Path
from typing import BinaryIO

from .errors import PlanError

CHUNK_BYTES = 1 << 20
# progress(bytes_read, total_bytes): called after every chunk, for the UI's progress bar.
Progress = Callable[[int, int], None]

_NEWLINE = re.compile(rb"\n")
_NEWLINE_OR_CR = re.compile(rb"[\r\n]")


@dataclass(frozen=True, slots=True)
class Record:
    """One record of a file. `line` is 1-based and counts newlines only, as editors do, so
    every carriage-return-separated redraw of a progress bar carries the line it sits on.
    `data` is None when the record was longer than the limit (its bytes were not kept)."""

    line: int
    data: bytes | None
    last: bool = False  # the file's last record, not ended by a newline: maybe cut


def open_regular(path: Path, what: str = "") -> tuple[BinaryIO, int]:
    """path opened for binary reading, and its size; a one-line PlanError for a missing
    file, a folder or a device (a pipe would block the reader forever)."""
    hint = f" ({what})" if what else ""
    try:
        if (
            os.path.exists(path)
            and not stat.S_ISREG(os.stat(path).st_mode)
            and not os.path.isdir(path)
        ):
            raise PlanError.at(str(path), f"not a regular file{hint}")
        handle = open(path, "rb")  # noqa: SIM115 (closed by the caller's generator)
    except FileNotFoundError:
        raise PlanError.at(str(path), f"no such file{hint}") from None
    except IsADirectoryError:
        raise PlanError.at(str(path), f"is a folder, not a file{hint}") from None
    except OSError as err:
        raise PlanError.at(str(path), f"cannot read: {err.strerror or err}") from None
    info = os.fstat(handle.fileno())
    if not stat.S_ISREG(info.st_mode):
        handle.close()
        raise PlanError.at(str(path), f"not a regular file{hint}")
    return handle, info.st_size


def records(
    path: Path,
    max_record_bytes: int,
    *,
    split_cr: bool = False,
    progress: Progress | None = None,
    what: str = "",
    chunk_bytes: int = CHUNK_BYTES,
) -> Generator[Record, None, None]:
    """Every non-blank record of path, in order. Records end at a newline, and also at a
    carriage return when split_cr (progress bars). Blank records are skipped."""
    handle, total = open_regular(path, what)
    separator = _NEWLINE_OR_CR if split_cr else _NEWLINE
    line = 1
    pending = bytearray()
    overflow = False  # the current record passed the limit: skip to its end
    done = 0
    with handle:
        while True:
            try:
                chunk = handle.read(chunk_bytes)
            except OSError as err:
                raise PlanError.at(str(path), f"cannot read: {err.strerror or err}") from None
            if not chunk:
                break
            done += len(chunk)
            start = 0
            for match in separator.finditer(chunk):
                end = match.start()
                if not overflow and len(pending) + end - start <= max_record_bytes:
                    pending += chunk[start:end]
                    if pending.strip():
                        yield Record(line, bytes(pending))
                else:
                    yield Record(line, None)
                pending.clear()
                overflow = False
                if match.group() == b"\n":
                    line += 1
                start = match.end()
            if not overflow:
                if len(pending) + len(chunk) - start > max_record_bytes:
                    overflow = True
                    pending.clear()
                else:
                    pending += chunk[start:]
            if progress is not None:
                progress(done, max(total, done))
    if overflow:
        yield Record(line, None, last=True)
    elif pending.strip():
        yield Record(line, bytes(pending), last=True)
