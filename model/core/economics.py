"""Time, GPU-hours, cost and energy of a run at a given throughput. Plain arithmetic, so
it takes scalars or numpy arrays (search evaluates many splits at once)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..basics.units import SECONDS_PER_DAY, SECONDS_PER_HOUR

Number = Any


@dataclass(frozen=True, slots=True)
class RolePrices:
    """Price per GPU-hour of each role in the plan's cost unit, and in USD when known."""

    target_per_hour: float | None
    drafter_per_hour: float | None
    target_usd_per_hour: float | None
    drafter_usd_per_hour: float | None
    target_tdp_w: float
    drafter_tdp_w: float


def billed(
    targets: Number,
    drafters: Number,
    same_gpu_type: bool,
    target_unit_gpus: int,
    drafter_unit_gpus: int,
) -> tuple[Number, Number]:
    """GPUs billed per role when GPUs are rented in whole units (a node-only offer bills
    8 for 4 used). One GPU type rents one pool; the idle GPUs are counted with the
    targets (the price is the same)."""
    if same_gpu_type:
        total = -(-(targets + drafters) // target_unit_gpus) * target_unit_gpus
        return total - drafters, drafters
    return (
        -(-targets // target_unit_gpus) * target_unit_gpus,
        -(-drafters // drafter_unit_gpus) * drafter_unit_gpus,
    )


@dataclass(frozen=True, slots=True)
class Economics:
    seconds: Number
    days: Number
    gpu_hours: Number
    total_cost: Number | None  # in the plan's cost unit
    total_cost_usd: Number | None
    energy_kwh: Number  # at TDP, an upper bound


def economics(
    tokens_per_s: Number,
    total_tokens: float,
    targets: Number,
    drafters: Number,
    prices: RolePrices,
    billed_targets: Number | None = None,
    billed_drafters: Number | None = None,
) -> Economics:
    """Time, GPU-hours (GPUs used) and cost (GPUs billed: the used ones unless given)."""
    seconds = total_tokens / tokens_per_s
    hours = seconds / SECONDS_PER_HOUR
    bt = targets if billed_targets is None else billed_targets
    bd = drafters if billed_drafters is None else billed_drafters
    cost = usd = None
    if prices.target_per_hour is not None and prices.drafter_per_hour is not None:
        cost = (bt * prices.target_per_hour + bd * prices.drafter_per_hour) * hours
    if prices.target_usd_per_hour is not None and prices.drafter_usd_per_hour is not None:
        usd = (bt * prices.target_usd_per_hour + bd * prices.drafter_usd_per_hour) * hours
    energy = (targets * prices.target_tdp_w + drafters * prices.drafter_tdp_w) * hours / 1e3
    return Economics(
        seconds=seconds,
        days=seconds / SECONDS_PER_DAY,
        gpu_hours=(targets + drafters) * hours,
        total_cost=cost,
        total_cost_usd=usd,
        energy_kwh=energy,
    )


def break_even_price_ratio(
    baseline_cost: float,
    hours: float,
    targets: int,
    drafters: int,
    target_ratio: float | None,
    drafter_ratio: float | None,
    target_is_reference: bool,
    drafter_is_reference: bool,
    same_type: bool,
) -> dict[str, float] | None:
    """The price ratio (to the reference GPU) of the plan's non-reference GPU type(s) at
    which this plan costs what the baseline costs (baseline_cost in reference-GPU-hours).
    With two non-reference types both prices scale together from their current ratios.
    None when both roles run on the reference GPU (nothing to break even on); empty when
    no price makes it as cheap (the reference GPUs alone cost more than the baseline)."""
    fixed = (targets if target_is_reference else 0) + (drafters if drafter_is_reference else 0)
    budget_per_hour = baseline_cost / hours - fixed  # reference-GPU-hours per hour left
    if target_is_reference and drafter_is_reference:
        return None
    if budget_per_hour <= 0:
        return {}
    if same_type:
        ratio = budget_per_hour / (targets + drafters)
        return {"target": ratio, "drafter": ratio}
    if not target_is_reference and not drafter_is_reference:
        if target_ratio is None or drafter_ratio is None:
            return None
        scale = budget_per_hour / (targets * target_ratio + drafters * drafter_ratio)
        return {"target": target_ratio * scale, "drafter": drafter_ratio * scale}
    if target_is_reference:
        return {"drafter": budget_per_hour / drafters}
    return {"target": budget_per_hour / targets}
