"""Prices: USD per GPU-hour and ratios against a reference GPU, kept consistent."""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from ..inputs.hardware import Gpu
from ..inputs.plan import Plan

if TYPE_CHECKING:
    from ..inputs.offers import Offer


# Where a price comes from: the plan's own figures ("plan usd": cost.usd_per_gpu_hour,
# "plan ratio": cost.ratio, "reference": the reference GPU of a plan that counts cost in
# its GPU-hours, 1x by definition), or borrowed ("offer": the plan's provider's offer;
# "catalog": the catalog's $/GPU-h, as a ratio to the reference's catalog price when the
# plan counts in reference-GPU-hours), or "none".
PLAN_OWN_SOURCES = frozenset({"plan usd", "plan ratio", "reference"})


@dataclass(frozen=True, slots=True)
class Price:
    gpu: str
    usd_per_gpu_hour: float | None
    ratio: float | None  # price relative to the reference GPU
    source: str  # "plan usd", "plan ratio", "reference", "offer", "catalog", "none"
    unit_gpus: int = 1  # GPUs per rental unit (billed in whole units)
    offer: Offer | None = None  # the provider's offer the price or unit comes from

    @property
    def plan_own(self) -> bool:
        """The price is the plan's own figure (not the catalog's or an offer's)."""
        return self.source in PLAN_OWN_SOURCES

    def to_json(self) -> dict[str, Any]:
        o = self.offer
        return {
            "gpu": self.gpu,
            "source": self.source,
            "ratio": self.ratio,
            "usd_per_gpu_hour": self.usd_per_gpu_hour,
            "offer": None
            if o is None
            else {
                "provider": o.provider,
                "kind": o.kind,
                "date": o.date,
                "unit_gpus": o.unit_gpus,
                "instance": o.instance,
                "region": o.region,
                "source": o.source,
            },
        }


@dataclass(frozen=True, slots=True)
class Prices:
    reference_gpu: str
    by_gpu: dict[str, Price]
    unit: str  # "USD" or "<reference name>-hours"
    in_usd: bool

    def per_hour(self, gpu: str) -> float | None:
        """Price of one GPU-hour in this view's unit."""
        price = self.by_gpu[gpu]
        return price.usd_per_gpu_hour if self.in_usd else price.ratio

    def borrowed(self, keys: Sequence[str]) -> tuple[Price, ...]:
        """The prices of these GPU types (and, in USD, of the reference the plan's ratios
        apply to) that are not the plan's own: what a view must say it used."""
        wanted = dict.fromkeys(keys)
        if self.in_usd and any(self.by_gpu[k].source == "plan ratio" for k in wanted):
            wanted = dict.fromkeys((self.reference_gpu, *wanted))
        return tuple(
            self.by_gpu[k]
            for k in wanted
            if not self.by_gpu[k].plan_own and self.by_gpu[k].source != "none"
        )


def prices(
    plan: Plan, gpus: dict[str, Gpu], keys: tuple[str, ...], offers: Sequence[Offer] = ()
) -> Prices:
    """Prices of the GPUs in keys. A plan with ratios and no USD figure reports cost in
    reference-GPU-hours; otherwise in USD, with ratios applied to the reference's price.
    A USD price is the plan's, else the plan's provider's offer, else the catalog's."""
    cost = plan.cost
    reference = cost.reference_gpu or plan.target.gpu

    def offer_of(key: str) -> Offer | None:
        if not cost.provider:
            return None
        from ..inputs.offers import find  # the offer table loads only for a provider's plan

        return find(offers, cost.provider, key, cost.kind)

    def usd_of(key: str) -> float | None:
        """The USD price a GPU has without a plan ratio: plan, offer, catalog."""
        if key in cost.usd_per_gpu_hour:
            return cost.usd_per_gpu_hour[key]
        offer = offer_of(key)
        return offer.usd_per_gpu_hour if offer is not None else gpus[key].usd_per_gpu_hour

    in_usd = bool(cost.usd_per_gpu_hour) or not cost.ratio or cost.provider is not None
    ref_usd = usd_of(reference)

    def one(key: str) -> Price:
        offer = offer_of(key)
        unit = cost.unit_gpus.get(key, offer.unit_gpus if offer else 1)

        def price(usd: float | None, ratio: float | None, source: str) -> Price:
            return Price(key, usd, ratio, source, unit, offer)

        if key in cost.usd_per_gpu_hour:
            usd = cost.usd_per_gpu_hour[key]
            return price(usd, usd / ref_usd if ref_usd else None, "plan usd")
        if key in cost.ratio:
            ratio = cost.ratio[key]
            return price(ratio * ref_usd if ref_usd else None, ratio, "plan ratio")
        if key == reference and not in_usd:
            return price(ref_usd, 1.0 if ref_usd else None, "reference")
        found = usd_of(key)
        if found is not None:
            return price(
                found, found / ref_usd if ref_usd else None, "offer" if offer else "catalog"
            )
        return price(None, None, "none")

    by_gpu = {key: one(key) for key in dict.fromkeys((reference, *keys))}
    unit = "USD" if in_usd else f"{gpus[reference].name}-hours"
    return Prices(reference_gpu=reference, by_gpu=by_gpu, unit=unit, in_usd=in_usd)


# --- what a probe costs (the projection prices a measurement; launch/probe.py writes it) ---

# Batches the probe tries for the drafter's memory ceiling, each for a few optimizer steps.
CEILING_BATCHES = (1, 2, 4, 8, 16, 32)
# Each ceiling run starts the stack and takes a few steps: about a minute (5 at most).
CEILING_MINUTES_EACH = 1.0


def probe_gpus(plan: Plan, spec: Gpu, role: str) -> tuple[int, int]:
    """(target GPUs, drafter GPUs) of the probe on one node of `spec`."""
    tp = plan.target.tp if spec.gpus_per_node % plan.target.tp == 0 else 1
    return tp, (1 if role == "drafter" else max(1, spec.gpus_per_node - tp))


def probe_gpu_hours(plan: Plan, spec: Gpu, role: str, minutes: float = 10.0) -> float:
    """What a probe costs in GPU-hours: its GPUs for the time budget, plus the memory
    ceiling's short runs when the drafter is measured."""
    targets, drafters = probe_gpus(plan, spec, role)
    ceiling = len(CEILING_BATCHES) * CEILING_MINUTES_EACH if role != "target" else 0.0
    return (targets + drafters) * (minutes + ceiling) / 60
