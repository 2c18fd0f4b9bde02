"""What plans refer to by name: GPU types and target models, with lookups that fail with
the plan key that named the missing entry."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable, Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, overload

from ..basics.errors import PlanError, suggest
from .hardware import Gpu
from .targets import PRESETS, TargetModel

if TYPE_CHECKING:
    from .offers import Offer


class Deferred(Sequence["Offer"]):
    """Rental offers read on first use: most plans never name a provider, and parsing
    and validating the offer table is a tenth of `project --json`'s start-up. A bad
    user offers.toml is reported (one line, PlanError) by the first command that needs
    offers."""

    def __init__(self, load: Callable[[], Iterable[Offer]]) -> None:
        self._load = load
        self._items: tuple[Offer, ...] | None = None

    def _all(self) -> tuple[Offer, ...]:
        if self._items is None:
            self._items = tuple(self._load())
        return self._items

    @overload
    def __getitem__(self, index: int) -> Offer: ...
    @overload
    def __getitem__(self, index: slice) -> Sequence[Offer]: ...
    def __getitem__(self, index: int | slice) -> Offer | Sequence[Offer]:
        return self._all()[index]

    def __len__(self) -> int:
        return len(self._all())


@dataclass(frozen=True, slots=True)
class Catalog:
    """GPUs (built-in plus the user's files), target models (presets plus config.json
    files a plan names), rental offers, and the date prices are judged against (read at the
    edge, so the model stays deterministic). Immutable: `with_model` returns a new one."""

    gpus: Mapping[str, Gpu]
    models: Mapping[str, TargetModel] = field(default_factory=lambda: dict(PRESETS))
    offers: Sequence[Offer] = ()
    today: dt.date | None = None

    def with_model(self, spec: str, model: TargetModel) -> Catalog:
        return Catalog(
            gpus=self.gpus,
            models={**self.models, spec: model},
            offers=self.offers,
            today=self.today,
        )

    def gpu(self, key: str, plan_key: str) -> Gpu:
        """The GPU `key`, named by the plan at `plan_key`."""
        try:
            return self.gpus[key]
        except KeyError:
            raise PlanError(
                f"{plan_key}: unknown GPU {key!r}{suggest(key, self.gpus)}; "
                f"known: {', '.join(self.gpus)}",
                plan_key,
            ) from None

    def model(self, spec: str) -> TargetModel:
        try:
            return self.models[spec]
        except KeyError:
            raise PlanError(
                f"workload.target_model = {spec!r}: not loaded (a preset: "
                f"{', '.join(PRESETS)}, or the path of a config.json)",
                "workload.target_model",
            ) from None
