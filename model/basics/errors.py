"""One exception type for bad input: its message is the one line a user sees."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping


class PlanError(ValueError):
    """Bad input. ``str(err)`` is a complete one-line message: where, what, what is allowed.

    Its parts, when the raiser knows them, so that no reader parses the message: ``key``,
    the dotted plan key the error concerns (``target.count``: the app marks that field; a
    config.json's errors concern ``workload.target_model``, which names it), or for a run
    config, the key in that file (``training.batch_size``);
    ``where``, the file (and line) or source the message starts with; ``value``, the bad
    value as the user wrote it; ``reason``, what is wrong and what is allowed (what a
    field shows beside the value it already shows).
    """

    def __init__(
        self,
        message: str,
        key: str | None = None,
        *,
        where: str | None = None,
        value: str | None = None,
        reason: str | None = None,
    ) -> None:
        super().__init__(message)
        self.key = key
        self.where = where
        self.value = value
        self.reason = reason

    @classmethod
    def field(
        cls,
        key: str,
        value: str,
        reason: str,
        where: str | None = None,
        *,
        shown: str | None = None,
    ) -> PlanError:
        """The error of one field, `[where: ]key = value: reason`, with its parts (value as
        the user wrote it; shown: the key as the message names it, a list's index kept)."""
        head = f"{where}: " if where else ""
        return cls(
            f"{head}{shown or key} = {value}: {reason}",
            key,
            where=where,
            value=value,
            reason=reason,
        )

    @classmethod
    def at(cls, where: str, reason: str, key: str | None = None) -> PlanError:
        """An error of a file, or of a key in it without a value to show,
        `where: [key: ]reason`, with its parts."""
        head = f"{where}: {key}: " if key else f"{where}: "
        return cls(head + reason, key, where=where, reason=reason)

    @property
    def detail(self) -> str:
        """The message without its leading `where: ` (the same error said elsewhere)."""
        message = str(self)
        if self.where is not None and message.startswith(self.where + ": "):
            return message[len(self.where) + 2 :]
        return message.split(": ", 1)[1] if ": " in message else message

    def moved(self, message: str) -> PlanError:
        """The same error, said with another message (its parts kept)."""
        return PlanError(message, self.key, where=self.where, value=self.value, reason=self.reason)


def suggest(value: str, choices: Iterable[str], say: Mapping[str, str] | None = None) -> str:
    """' (did you mean 'x'?)' for the nearest known name, or '' when nothing is close.
    With `say`, the choices are compared forms and the name suggested is say[form]."""
    close = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.5)
    if not close:
        return ""
    return f" (did you mean '{say.get(close[0], close[0]) if say else close[0]}'?)"
