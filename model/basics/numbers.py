"""Numbers as people type them: the one reader of a typed number, for the app's fields and
the command line's `--set`, so both accept and refuse the same text with the same words.

Accepted: an optional sign, digits with `_` between them as a separator, an optional
decimal part after a dot, an optional exponent (`1e6`, `2.5E-3`). A value that is exactly
whole (`7`, `7.0`, `1e6`, `1.5e3`) reads as a whole number, so a count may be typed in
scientific notation; the check is done in decimal, never through a binary float, so
`1.0000000000000001e6` is not whole. A comma is refused: `3,4` is a decimal comma in much of
the world and a thousands separator in the rest, and reading it either way silently is
wrong for someone.
"""

from __future__ import annotations

import re
from decimal import Decimal, InvalidOperation

_NUMBER = re.compile(r"[+-]?(\d+(_\d+)*)?(\.\d+(_\d+)*|\.)?([eE][+-]?\d+)?")
_HAS_DIGIT = re.compile(r"\d")
# A number written with commas: what `3,4`, `1,000` or `2,5e3` look like.
_COMMA_NUMBER = re.compile(r"[+-]?[\d_.]*\d,[\d_.,]*([eE][+-]?\d+)?")
# Exponents beyond this are not a plan's number (and Decimal would build huge integers).
_MAX_EXPONENT = 400


class TypedNumber(str):
    """Text typed where any value may go (`--set key=value`) that reads as a number: a
    number's check parses it (`parse_number`), a text key takes it as written. A number
    in quotes in a plan file is a plain str and stays an error."""


class NumberError(ValueError):
    """Text that is not a number; the message says what is allowed."""


def comma_message(text: str) -> str:
    return (
        f"'{text}' has a comma: use a dot for a decimal point (3.4) and no thousands "
        f"separator (800000 or 800_000)"
    )


def looks_like_number(text: str) -> bool:
    """Text the number grammar reads (commas included, so that they get their message)."""
    raw = text.strip()
    return bool(_HAS_DIGIT.search(raw)) and bool(
        _NUMBER.fullmatch(raw) or _COMMA_NUMBER.fullmatch(raw)
    )


def parse_number(text: str, what: str = "a number") -> int | float:
    """The number in text: an int when it is exactly whole, else a float. NumberError
    (a ValueError) says what is wrong, calling the value `what` is expected to be."""
    raw = text.strip()
    if not raw:
        raise NumberError(f"enter {what}")
    if _COMMA_NUMBER.fullmatch(raw):
        raise NumberError(comma_message(raw))
    if not (_NUMBER.fullmatch(raw) and _HAS_DIGIT.search(raw)):
        raise NumberError(f"'{raw}' is not {what}")
    try:
        exact = Decimal(raw.replace("_", ""))
    except InvalidOperation:
        raise NumberError(f"'{raw}' is not {what}") from None
    exponent = exact.as_tuple().exponent
    if isinstance(exponent, int) and abs(exponent) > _MAX_EXPONENT:
        raise NumberError(f"'{raw}' is out of range")
    if exact == exact.to_integral_value():
        return int(exact)
    return float(exact)


def parse_whole(text: str) -> int:
    """A whole number typed as text (`7`, `800_000`, `1e6`); NumberError otherwise."""
    value = parse_number(text, "a whole number")
    if not isinstance(value, int):
        raise NumberError(f"'{text.strip()}' is not a whole number")
    return value
