"""Rental offers: who rents which GPU, at what price, in what unit, as of when.

`offers.toml` ships a dated table from public rate cards; a user's own `offers.toml`
(user config folder) adds offers or replaces ones with the same provider, GPU and kind.
A plan picks a provider (`cost.provider`, `cost.kind`); its prices, and the unit in which
the GPUs are billed, then come from that provider's offers unless the plan sets them.
"""

from __future__ import annotations

import datetime as dt
from collections.abc import Mapping, Sequence
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, Field, ValidationError

from ..basics.data import data_text
from ..basics.errors import PlanError
from ..basics.tomlfile import parse_toml, read_toml
from ..basics.validation import explain

# A price older than this is flagged: rate cards move within months.
PRICE_MAX_AGE_DAYS = 180
# An offer's price per GPU-hour: above 0 and at most this (far above any rate card).
MAX_USD_PER_GPU_HOUR = 1000.0
Kind = Literal["on-demand", "spot", "reserved"]


class Offer(BaseModel):
    model_config = ConfigDict(frozen=True, extra="forbid")
    provider: str = Field(min_length=1, max_length=64, pattern=r"^[a-z0-9][a-z0-9._-]*$")
    gpu: str = Field(min_length=1, max_length=64)
    kind: Kind = "on-demand"
    usd_per_gpu_hour: float = Field(gt=0.0, le=MAX_USD_PER_GPU_HOUR, allow_inf_nan=False)
    unit_gpus: int = Field(1, ge=1, le=1024)
    instance: str = Field("", max_length=200)
    region: str = Field("", max_length=100)
    date: str = Field(
        pattern=r"^(\d{4}-\d{2}(-\d{2})?|undated)$",
        description="YYYY-MM-DD or YYYY-MM when the source showed the price, or undated",
    )
    source: str = Field("", max_length=2000)
    quote: str = Field("", max_length=4000)
    notes: str = Field("", max_length=4000)
    # "FORMAT:PROVIDER" on offers `prices --import` wrote: the next import of the same
    # catalog replaces them; "" on offers written by hand, which an import keeps.
    imported: str = Field("", max_length=100)

    def age_days(self, today: dt.date) -> int | None:
        """Days since the price was seen (the first of the month for YYYY-MM), or None
        when undated or dated after today (a typo or a wrong clock: no age to give)."""
        if self.date == "undated":
            return None
        parts = [int(x) for x in self.date.split("-")] + [1]
        age = (today - dt.date(parts[0], parts[1], parts[2])).days
        return age if age >= 0 else None

    def future(self, today: dt.date) -> bool:
        """Dated after today: not a price anyone has seen yet."""
        return self.date != "undated" and self.age_days(today) is None

    def stale(self, today: dt.date) -> bool:
        """Old, undated or dated after today: check the provider's price first."""
        age = self.age_days(today)
        return age is None or age > PRICE_MAX_AGE_DAYS


def parse_offers(doc: Mapping[str, Any], where: str, text: str | None = None) -> tuple[Offer, ...]:
    rows = doc.get("offer", [])
    unknown = set(doc) - {"offer"}
    if unknown:
        raise PlanError.at(where, f"unknown table '{sorted(unknown)[0]}'; allowed: [[offer]]")
    if not isinstance(rows, list):
        raise PlanError.at(where, "'offer' must be an array of tables [[offer]]")
    offers = []
    for i, row in enumerate(rows):
        try:
            offers.append(Offer.model_validate(row))
        except ValidationError as err:
            raise explain(err, where, text, prefix=("offer", str(i))) from None
    return tuple(offers)


def builtin_offers() -> tuple[Offer, ...]:
    text = data_text("offers.toml")
    return parse_offers(parse_toml(text, "offers.toml"), "offers.toml", text)


def load_offer_file(path: Path, base: Sequence[Offer]) -> tuple[Offer, ...]:
    """A user's offers: each replaces the built-in one with its provider, GPU and kind."""
    doc, text = read_toml(path)
    mine = parse_offers(doc, str(path), text)
    keys = {(o.provider, o.gpu, o.kind) for o in mine}
    return tuple(o for o in base if (o.provider, o.gpu, o.kind) not in keys) + mine


def find(offers: Sequence[Offer], provider: str, gpu: str, kind: str) -> Offer | None:
    """The provider's offer for a GPU: the smallest rental unit, then the lowest price."""
    matches = [o for o in offers if o.provider == provider and o.gpu == gpu and o.kind == kind]
    return min(matches, key=lambda o: (o.unit_gpus, o.usd_per_gpu_hour), default=None)
