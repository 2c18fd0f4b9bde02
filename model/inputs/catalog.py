"""What plans refer to by name: GPU types and target models, with lookups that fail with
the plan key that named the missing entry."""

from __future__ import annotations

import datetime as dt
import re
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


def gpu_form(name: str) -> str:
    """A GPU's name as names are compared: case, and whether words are joined by spaces,
    '_' or '-', do not count ('RTX PRO 6000', 'rtx_pro_6000' and 'rtx-pro-6000' are one)."""
    return re.sub(r"[\s_-]+", "-", name.casefold()).strip("-")


def gpu_forms(gpus: Mapping[str, Gpu]) -> dict[str, str]:
    """form -> key for every key and display name: a key before any name ('h200' is the
    key h200, whatever another GPU is called); a name two GPUs share names neither."""
    forms = {gpu_form(key): key for key in gpus}
    by_name: dict[str, set[str]] = {}
    for key, gpu in gpus.items():
        by_name.setdefault(gpu_form(gpu.name), set()).add(key)
    for form, keys in by_name.items():
        if len(keys) == 1 and form not in forms:
            forms[form] = next(iter(keys))
    return forms


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

    def gpu(self, name: str, plan_key: str) -> Gpu:
        """The GPU `name` (its key, or as people write it: see `key`), named at `plan_key`."""
        return self.gpus[self.key(name, plan_key)]

    def find(self, name: str) -> str | None:
        """The catalog key of the GPU `name` (see `key`); None when no GPU is called so."""
        if name in self.gpus:
            return name
        return gpu_forms(self.gpus).get(gpu_form(name))

    def key(self, name: str, plan_key: str) -> str:
        """The catalog key of the GPU a plan, a --set or a flag names at `plan_key`: its key,
        or the GPU as people write it: any case, words joined by spaces, '_' or '-', or the
        catalog's display name ('B200', 'RTX PRO 6000', 'h200 sxm'). The one lookup of a GPU
        by name: unknown, a PlanError suggesting the nearest key."""
        key = self.find(name)
        if key is not None:
            return key
        forms = gpu_forms(self.gpus)
        form = gpu_form(name)
        # A name without its variant ('H100': SXM or PCIe) means one of those keys.
        variants = dict.fromkeys(k for f, k in forms.items() if form and f.startswith(form + "-"))
        hint = (
            f" (did you mean {' or '.join(repr(k) for k in variants)}?)"
            if variants
            else suggest(form, forms, forms)
        )
        reason = f"unknown GPU {name!r}{hint}; known: {', '.join(self.gpus)}"
        raise PlanError.at(plan_key, reason, key=plan_key, value=name)

    def model(self, spec: str) -> TargetModel:
        try:
            return self.models[spec]
        except KeyError:
            raise PlanError.field(
                "workload.target_model",
                repr(spec),
                f"not loaded (a preset: {', '.join(PRESETS)}, or the path of a config.json)",
            ) from None
