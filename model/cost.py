"""Prices: USD per GPU-hour and ratios against a reference GPU, kept consistent."""

from __future__ import annotations

from dataclasses import dataclass

from .hardware import Gpu
from .plan import Plan


@dataclass(frozen=True, slots=True)
class Price:
    gpu: str
    usd_per_gpu_hour: float | None
    ratio: float | None          # price relative to the reference GPU
    source: str                  # "plan usd", "plan ratio", "reference", "catalog", "none"


@dataclass(frozen=True, slots=True)
class Prices:
    reference_gpu: str
    by_gpu: dict[str, Price]
    unit: str                    # "USD" or "<reference name>-hours"
    in_usd: bool

    def per_hour(self, gpu: str) -> float | None:
        """Price of one GPU-hour in this view's unit."""
        price = self.by_gpu[gpu]
        return price.usd_per_gpu_hour if self.in_usd else price.ratio


def prices(plan: Plan, gpus: dict[str, Gpu], keys: tuple[str, ...]) -> Prices:
    """Prices of the GPUs in keys. A plan with ratios and no USD figure reports cost in
    reference-GPU-hours; otherwise in USD, with ratios applied to the reference's price."""
    cost = plan.cost
    reference = cost.reference_gpu or plan.target.gpu
    in_usd = bool(cost.usd_per_gpu_hour) or not cost.ratio
    ref_usd = cost.usd_per_gpu_hour.get(reference, gpus[reference].usd_per_gpu_hour)

    def one(key: str) -> Price:
        catalog = gpus[key].usd_per_gpu_hour
        if key in cost.usd_per_gpu_hour:
            usd = cost.usd_per_gpu_hour[key]
            return Price(key, usd, usd / ref_usd if ref_usd else None, "plan usd")
        if key in cost.ratio:
            ratio = cost.ratio[key]
            return Price(key, ratio * ref_usd if ref_usd else None, ratio, "plan ratio")
        if key == reference:
            return Price(key, ref_usd, 1.0, "reference")
        if catalog is not None:
            return Price(key, catalog, catalog / ref_usd if ref_usd else None, "catalog")
        return Price(key, None, None, "none")

    by_gpu = {key: one(key) for key in dict.fromkeys((reference, *keys))}
    unit = "USD" if in_usd else f"{gpus[reference].name}-hours"
    return Prices(reference_gpu=reference, by_gpu=by_gpu, unit=unit, in_usd=in_usd)
