"""Unit conversions. Everything inside the model is SI (bytes, FLOP, seconds); and the
few rules that write a figure for people, shared by the launch headers and the views
(tui/format.py calls these, so a header and `project` write one figure alike)."""

from __future__ import annotations

import math
from collections.abc import Callable

SECONDS_PER_HOUR = 3600.0
SECONDS_PER_DAY = 86_400.0
TERA = 1e12
GIGA = 1e9
BYTES_PER_GB = 1e9  # decimal GB, as GPU datasheets print memory and bandwidth
BITS_PER_BYTE = 8
BF16_BYTES = 2
FP32_BYTES = 4
BYTES_PER_GIB = 2.0**30  # memory capacities: vendors' "GB" of HBM/GDDR are GiB


def duration(value_days: float, compact: bool = False) -> str:
    """Days, or hours below a day and minutes below an hour, so that a short run never
    reads '0.0 days' or '0.0 h'. Compact (a table cell): '7.7 h', '1.6 d', hours down to
    '0.1 h'."""
    hours = value_days * 24
    if hours < 1 and not compact:
        return f"{hours * 60:,.0f} min"
    if hours < 24:
        return f"{hours:,.1f} {'h' if compact else 'hours'}"
    return f"{value_days:,.1f} {'d' if compact else 'days'}"


def ktok(tokens_per_s: float) -> str:
    return f"{tokens_per_s / 1e3:,.1f} Ktok/s"


def fine(value: float) -> str:
    """Three significant digits without an exponent: '0.0449', '12.3', '1,234'."""
    if value == 0:
        return "0"
    digits = max(0, 2 - math.floor(math.log10(abs(value))))
    return f"{value:,.{digits}f}"


def amount(value: float) -> str:
    """A cost's figure: whole from 10 up ('845', '1,668'); below, to three significant
    digits ('2.04', '0.0449'), so that a small cost never reads 0 (a 1,000-sample plan's)."""
    return f"{value:,.0f}" if abs(value) >= 10 else fine(value)


def cost(
    value: float,
    unit: str,
    compact: bool = False,
    number: Callable[[float], str] = amount,
    dollar: bool = True,
) -> str:
    """A cost with its unit: USD as $ ('$1,668'), reference-GPU-hours named ('845 RTX PRO
    6000-hours', '845 RTX PRO 6000-h' when compact). The launch headers name USD too
    (dollar=False: '1,664 USD'), a script's comment reading as the plan's words."""
    if unit == "USD" and dollar:
        return f"${number(value)}"
    if compact and unit != "USD":
        unit = unit.removesuffix("-hours") + "-h"
    return f"{number(value)} {unit}"


def span(low: float, high: float, one: Callable[[float], str], sep: str = "-") -> str:
    """A range as 'a-b unit' from a one-value formatter ('58.7-98.6 Ktok/s'); the value
    alone when both ends agree once formatted. sep " - " lets a narrow table break it."""
    a, b = one(low), one(high)
    if a == b:
        return a
    if a[-1] == b[-1] == "x":  # ratios: '3.97-6.94x'
        return f"{a[:-1]}{sep}{b}"
    if a[0] == b[0] == "$":  # dollars: '$699-1,223'
        return f"{a}{sep}{b[1:]}"
    unit_a, unit_b = a.split(" ", 1), b.split(" ", 1)
    if len(unit_a) == 2 and len(unit_b) == 2 and unit_a[1] == unit_b[1]:
        return f"{unit_a[0]}{sep}{unit_b[0]} {unit_a[1]}"
    return f"{a} - {b}"


def spread(pair: tuple[float, float] | None, one: Callable[[float], str], sep: str = "-") -> str:
    """A figure's range as `span` writes it, or '' when there is none to show: no range,
    or ends that agree once formatted (a range is never shown zero wide)."""
    if pair is None or one(pair[0]) == one(pair[1]):
        return ""
    return span(pair[0], pair[1], one, sep)
