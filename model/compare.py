"""A projection against a baseline: speed, cost, days, and the hardware ratios behind them."""

from __future__ import annotations

from dataclasses import dataclass

from .projection import Projection


@dataclass(frozen=True, slots=True)
class Comparison:
    speedup: float | None            # baseline days / these days
    cost_ratio: float | None         # this total cost / baseline total cost
    days_delta: float | None         # these days - baseline days
    why: tuple[str, ...]

    def to_json(self) -> dict:
        return {"speedup": self.speedup, "cost_ratio": self.cost_ratio,
                "days_delta": self.days_delta, "why": list(self.why)}


def _ratio(a: float | None, b: float | None) -> float | None:
    return a / b if a is not None and b else None


def compare(new: Projection, base: Projection) -> Comparison:
    speedup = _ratio(base.days, new.days)
    cost_ratio = (_ratio(new.total_cost, base.total_cost) if new.cost_unit == base.cost_unit
                  else _ratio(new.total_cost_usd, base.total_cost_usd))
    days_delta = (new.days - base.days) if new.days is not None and base.days is not None else None
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
                      why=tuple(why))

