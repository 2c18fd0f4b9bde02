"""Formatting of model figures for people: the only place numbers get units and rounding."""

from __future__ import annotations

DASH = "—"


def ktok(tokens_per_s: float | None) -> str:
    return DASH if tokens_per_s is None else f"{tokens_per_s / 1e3:,.1f} Ktok/s"


def days(value: float | None) -> str:
    return DASH if value is None else f"{value:,.1f} days"


def cost(value: float | None, unit: str, compact: bool = False) -> str:
    """USD as $; reference-GPU-hours with the unit ("845 RTX PRO 6000-hours", or "-h"
    when compact)."""
    if value is None:
        return DASH
    if unit == "USD":
        return f"${value:,.0f}"
    if compact:
        unit = unit.removesuffix("-hours") + "-h"
    return f"{value:,.0f} {unit}"


def pct(value: float | None) -> str:
    """Whole percent; one decimal below 10 % so that a nearly idle link does not read 0 %."""
    if value is None:
        return DASH
    return f"{value * 100:.1f} %" if value < 0.1 else f"{value * 100:.0f} %"


def gb(value: float) -> str:
    return f"{value:,.1f} GB"


def times(value: float | None) -> str:
    return DASH if value is None else f"{value:.2f}x"


def signed_days(value: float | None) -> str:
    return DASH if value is None else f"{value:+,.1f} days"
