"""One exception type for bad input: its message is the one line a user sees."""

from __future__ import annotations

import difflib
from collections.abc import Iterable


class PlanError(ValueError):
    """Bad input. ``str(err)`` is a complete one-line message: where, what, what is allowed.

    ``key`` is the dotted plan key the error concerns (``target.count``), when there is
    one, so that the app can mark that field without reading the message.
    """

    def __init__(self, message: str, key: str | None = None) -> None:
        super().__init__(message)
        self.key = key


def suggest(value: str, choices: Iterable[str]) -> str:
    """' (did you mean 'x'?)' for the nearest known name, or '' when nothing is close."""
    close = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.5)
    return f" (did you mean '{close[0]}'?)" if close else ""
