"""Closed forms over counts that take a number or a numpy array of them alike: one
projection runs them on numbers (without importing numpy, which the headless commands
never load for one plan), search and balance on arrays over every split, so both compute
the same figures bit for bit."""

from __future__ import annotations

import math
import sys
from typing import Any

Count = Any  # int or a numpy integer array
Number = Any  # float or a numpy float array


def numpy_in(*values: object) -> Any:
    """numpy, when one of values is one of its arrays (then it is loaded); else None."""
    np = sys.modules.get("numpy")
    if np is not None and any(isinstance(v, np.ndarray) for v in values):
        return np
    return None


def minimum(a: Number, b: Number) -> Number:
    np = numpy_in(a, b)
    return np.minimum(a, b) if np is not None else min(a, b)


def maximum(a: Number, b: Number) -> Number:
    np = numpy_in(a, b)
    return np.maximum(a, b) if np is not None else max(a, b)


def where(condition: Any, a: Number, b: Number) -> Number:
    np = numpy_in(condition, a, b)
    if np is not None:
        return np.where(condition, a, b)
    return a if condition else b


def ceil_int(value: Number) -> Count:
    """The smallest whole number at least value (an integer array of them)."""
    np = numpy_in(value)
    return np.ceil(value).astype(np.int64) if np is not None else math.ceil(value)


def any_of(flags: list[Any]) -> Any:
    """Element-wise or of flags (bools, or bool arrays of one shape)."""
    out = flags[0]
    for flag in flags[1:]:
        out = out | flag
    return out
