"""One exception type for bad input: its message is the one line a user sees."""

from __future__ import annotations

import difflib
from collections.abc import Iterable, Mapping


class PlanError(ValueError):
    """Bad input. ``str(err)`` is a complete one-line message: where, what, what is allowed.

    Every error carries its parts, so that no reader parses the message: ``where``, the
    file (and line), flag, key or source the error is about (what the message starts
    with, when it starts with a place); ``reason``, what is wrong and what is allowed (what
    a field shows beside the value it already shows: the message ends with it); ``key``,
    the dotted plan key the error concerns when there is one (``target.count``: the app
    marks that field; a config.json's errors concern ``workload.target_model``, which
    names it), or for a run config, the key in that file (``training.batch_size``);
    ``value``, the bad value as the user wrote it; ``detail``, the message without its
    leading ``where: `` (the same error said elsewhere: ``--set`` instead of the file).

    `where` and `reason` are required: the constructors `field`, `at` and `flag` make the
    message of the parts; a sentence of another shape passes its message with them.
    """

    def __init__(
        self,
        message: str,
        *,
        where: str,
        reason: str,
        key: str | None = None,
        value: str | None = None,
        detail: str | None = None,
    ) -> None:
        super().__init__(message)
        self.key = key
        self.where = where
        self.value = value
        self.reason = reason
        self.detail = message if detail is None else detail

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
        the user wrote it; shown: the key as the message names it, a list's index kept;
        without a file, the field is where the error is)."""
        detail = f"{shown or key} = {value}: {reason}"
        if where is None:
            return cls(detail, where=shown or key, reason=reason, key=key, value=value)
        return cls(
            f"{where}: {detail}", where=where, reason=reason, key=key, value=value, detail=detail
        )

    @classmethod
    def at(
        cls,
        where: str,
        reason: str,
        *,
        key: str | None = None,
        shown: str | None = None,
        value: str | None = None,
    ) -> PlanError:
        """An error of a file (or a line of it, or a source), `where: [shown: ]reason`,
        with its parts (shown: the key the message names, when it names one)."""
        detail = f"{shown}: {reason}" if shown else reason
        return cls(
            f"{where}: {detail}", where=where, reason=reason, key=key, value=value, detail=detail
        )

    @classmethod
    def flag(cls, name: str, value: str, reason: str, key: str | None = None) -> PlanError:
        """The error of a command-line flag's value (or of a named figure), `name value:
        reason`, with its parts."""
        detail = f"{value}: {reason}"
        return cls(
            f"{name} {detail}", where=name, reason=reason, key=key, value=value, detail=detail
        )

    @classmethod
    def said(
        cls, sentence: str, key: str, *, where: str | None = None, value: str | None = None
    ) -> PlanError:
        """An error said as one sentence about a plan key (or the source given): the
        sentence is its reason, whole, since it names what it is about."""
        return cls(sentence, where=where or key, reason=sentence, key=key, value=value)

    def moved(self, where: str) -> PlanError:
        """The same error said from another place, `where detail` (`--set key = value:
        reason` for a plan file's), its other parts kept."""
        return PlanError(
            f"{where} {self.detail}",
            where=where,
            reason=self.reason,
            key=self.key,
            value=self.value,
            detail=self.detail,
        )


def suggest(value: str, choices: Iterable[str], say: Mapping[str, str] | None = None) -> str:
    """' (did you mean 'x'?)' for the nearest known name, or '' when nothing is close.
    With `say`, the choices are compared forms and the name suggested is say[form]."""
    close = difflib.get_close_matches(value, list(choices), n=1, cutoff=0.5)
    if not close:
        return ""
    return f" (did you mean '{say.get(close[0], close[0]) if say else close[0]}'?)"
