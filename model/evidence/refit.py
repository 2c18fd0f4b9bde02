"""Every result a start would otherwise fit from the measurements, computed afresh: the
content of data/fitted.json (basics/fitcache.py), which scripts/refit.py writes.

The constants (fitting.value, value_range), the families' efficiency ranges and bases,
and the measured-over-predicted ratios of the validation set's rate and memory cases (the
model's efficiency and memory bands, core/scenarios.py). Cross-validation (validate's
leave-one-group-out fits) is not in it: it runs on demand.
"""

from __future__ import annotations

from typing import Any

from ..basics import fitcache
from ..inputs.catalog import Catalog
from ..physics import acceptance, fitting
from .evidence import load_cases, predict

# Rate quantities of the validation set, by role, whose measured / predicted ratio is an
# achieved efficiency against the default one (the efficiency bands).
ROLE_QUANTITIES: dict[str, tuple[str, ...]] = {
    "target": ("target_tokens_per_s_per_gpu",),
    "drafter": ("training_tokens_per_s_per_gpu", "training_mfu", "drafter_samples_per_s_per_gpu"),
}
# Memory quantities of the validation set, by role (the memory bands).
MEMORY_QUANTITIES: dict[str, tuple[str, ...]] = {
    "target": ("target_memory_gb",),
    "drafter": ("drafter_memory_gb",),
}
Ratio = tuple[str, str, str, str, float]


def case_ratios(memory: bool = False) -> tuple[Ratio, ...]:
    """(role, arch, tier, id, measured / predicted) of the validation set's rate (or
    memory) cases, predicted with the built-in catalog (the evidence, not the user's
    overrides)."""
    catalog = Catalog(gpus=fitting.builtin_gpus())
    out = []
    quantities = MEMORY_QUANTITIES if memory else ROLE_QUANTITIES
    for case in load_cases():
        role = next((r for r, qs in quantities.items() if case["quantity"] in qs), None)
        if role is None or case["gpu"] not in catalog.gpus:
            continue
        row = predict(case, catalog)
        out.append(
            (role, catalog.gpus[case["gpu"]].arch, row.tier, row.id, row.measured / row.predicted)
        )
    return tuple(out)


def fresh_results() -> dict[str, Any]:
    """Everything data/fitted.json holds, fitted afresh: call in a process that ignores the
    shipped file from its start (fitcache.ignore_shipped), or its readers take it."""
    if fitcache.shipped() is not None:
        raise RuntimeError("the shipped fit is in use: call fitcache.ignore_shipped() first")
    families = fitting.family_keys()
    return {
        "note": "written by scripts/refit.py from a fresh fit; do not edit",
        "key": fitcache.inputs_key(),
        "values": {c.name: fitting.value(c.name) for c in fitting.CONSTANTS},
        "ranges": {c.name: list(fitting.value_range(c.name)) for c in fitting.CONSTANTS},
        "family_share_ranges": {
            f"{arch} {field}": _listed(fitting.family_share_range(arch, field))
            for arch, field in families
        },
        "family_bases": {
            f"{f.arch} {f.field}": fitting.family_basis(f.arch, f.field)
            for f in fitting.FAMILY_EFFICIENCIES
            if f.arch
        },
        "ratios": {
            "rate": [list(r) for r in case_ratios()],
            "memory": [list(r) for r in case_ratios(True)],
        },
        # The acceptance curve and the engine factors (physics/acceptance.py).
        "acceptance": {
            "curve": acceptance.fit_curve(acceptance.curve_points()).to_json(),
            **{
                q: acceptance.factors_json(acceptance.fit_factors(acceptance.speedup_pairs(q)))
                for q in ("serving_speedup", "serving_speedup_decode")
            },
        },
    }


def _listed(span: tuple[float, float] | None) -> list[float] | None:
    return None if span is None else list(span)
