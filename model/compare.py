"""A projection against a baseline: speed, cost, days, their ranges, the price at which
the plan breaks even, and the hardware ratios behind them."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from .projection import Projection, break_even


@dataclass(frozen=True, slots=True)
class Comparison:
    speedup: float | None            # baseline days / these days
    cost_ratio: float | None         # this total cost / baseline total cost
    days_delta: float | None         # these days - baseline days
    speedup_range: tuple[float, float] | None
    cost_ratio_range: tuple[float, float] | None
    break_even_price_ratio: dict[str, float] | None   # per role; {} when no price breaks even
    why: tuple[str, ...]

    def to_json(self) -> dict[str, Any]:
        return {"speedup": self.speedup, "cost_ratio": self.cost_ratio,
                "days_delta": self.days_delta,
                "speedup_range": list(self.speedup_range) if self.speedup_range else None,
                "cost_ratio_range": (list(self.cost_ratio_range) if self.cost_ratio_range
                                     else None),
                "break_even_price_ratio": self.break_even_price_ratio,
                "why": list(self.why)}


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def _cost(p: Projection, unit: str) -> tuple[float | None, tuple[float, float] | None]:
    """Total cost and its range in the given unit (the plan's unit or USD)."""
    if p.cost_unit == unit:
        return p.total_cost, p.ranges.total_cost if p.ranges else None
    return p.total_cost_usd, p.ranges.total_cost_usd if p.ranges else None


def compare(new: Projection, base: Projection) -> Comparison:
    speedup = _ratio(base.days, new.days)
    unit = new.cost_unit if new.cost_unit == base.cost_unit else "USD"
    new_cost, new_range = _cost(new, unit)
    base_cost, base_range = _cost(base, unit)
    cost_ratio = _ratio(new_cost, base_cost)
    days_delta = (new.days - base.days) if new.days is not None and base.days is not None else None
    speedup_range = cost_range = None
    if new.ranges and base.ranges:
        (n_fast, n_slow), (b_fast, b_slow) = new.ranges.days, base.ranges.days
        speedup_range = (b_fast / n_slow, b_slow / n_fast)
        if new_range and base_range:
            cost_range = (new_range[0] / base_range[1], new_range[1] / base_range[0])
    why: list[str] = []
    for role in ("target", "drafter"):
        a, b = getattr(new, role), getattr(base, role)
        if a.gpu == b.gpu:
            continue
        ga, gb = new.prices, base.prices
        sa, sb = a.spec, b.spec
        why.append(
            f"{role} GPU {a.gpu_name} vs {b.gpu_name}: dense bf16 "
            f"{sa.bf16_tflops:,.0f} vs {sb.bf16_tflops:,.0f} TFLOPS "
            f"({sa.bf16_tflops / sb.bf16_tflops:.2f}x), memory bandwidth "
            f"{sa.mem_bw_tb_s:g} vs {sb.mem_bw_tb_s:g} TB/s "
            f"({sa.mem_bw_tb_s / sb.mem_bw_tb_s:.2f}x); efficiency "
            f"{a.efficiency * 100:.1f} % vs {b.efficiency * 100:.1f} %; per-GPU rate "
            f"{a.per_gpu_tokens_per_s / b.per_gpu_tokens_per_s:.2f}x")
        pa, pb = ga.by_gpu[a.gpu].ratio, gb.by_gpu[b.gpu].ratio
        if pa and pb and ga.reference_gpu == gb.reference_gpu:
            why.append(f"{role} price {pa / pb:.2f}x per GPU-hour, so "
                       f"{(pa / pb) / (a.per_gpu_tokens_per_s / b.per_gpu_tokens_per_s):.2f}x "
                       f"the cost per {role} token")
    for role in ("target", "drafter"):
        a, b = getattr(new, role), getattr(base, role)
        if a.count != b.count:
            why.append(f"{role} GPUs {b.count} -> {a.count}")
    if new.bottleneck != base.bottleneck:
        why.append(f"bottleneck {base.bottleneck or 'none (does not fit)'} -> "
                   f"{new.bottleneck or 'none (does not fit)'}")
    return Comparison(speedup=speedup, cost_ratio=cost_ratio, days_delta=days_delta,
                      speedup_range=speedup_range, cost_ratio_range=cost_range,
                      break_even_price_ratio=break_even(new, base), why=tuple(why))
