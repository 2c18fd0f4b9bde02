"""Turning pydantic validation errors into the one-line messages users see."""

from __future__ import annotations

from pydantic import ValidationError

from .errors import PlanError, suggest
from .tomlfile import line_of


def explain(err: ValidationError, where: str, text: str | None = None,
            prefix: tuple[str, ...] = (), known: dict[tuple[str, ...], list[str]] | None = None
            ) -> PlanError:
    """A PlanError for the first problem in err: file, line, key, bad value, what is allowed."""
    first = err.errors()[0]
    loc = prefix + tuple(str(part) for part in first["loc"])
    key = ".".join(loc)
    line = line_of(text, loc) if text else None
    place = f"{where}:{line}" if line else where
    kind = first["type"]
    if kind == "extra_forbidden":
        parent = loc[:-1]
        hint = suggest(loc[-1], (known or {}).get(parent, []))
        allowed = (known or {}).get(parent)
        listing = f"; allowed: {', '.join(allowed)}" if allowed and not hint else ""
        return PlanError(f"{place}: unknown key '{key}'{hint}{listing}")
    if kind == "missing":
        return PlanError(f"{place}: missing required key '{key}'")
    value = first.get("input")
    message = first["msg"]
    if message.startswith("Value error, "):
        message = message[len("Value error, "):]
    return PlanError(f"{place}: {key} = {value!r}: {message}")
