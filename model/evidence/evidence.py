"""The validation set: public measurements (measurements.toml) against the model's
predictions at default settings. Each case is predicted from what its own source states
(GPU, model, lengths, batch, anchors, counts) and nothing else.

`validate(catalog)` returns one row per case and a summary per half (fit / check) and
tier (strong / weak); `dflash-plan validate` prints it and the tests hold it to its
thresholds.
"""

from __future__ import annotations

import copy
import functools
import math
import re
import statistics
from collections.abc import Callable, Iterable, Iterator, Mapping
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

from ..basics.data import data_text
from ..basics.tomlfile import parse_toml
from ..basics.units import BYTES_PER_GIB
from ..inputs.catalog import Catalog
from ..physics import caserates, colocated, decode, fitting, memory, pipeline, roofline
from ..physics.fitting import case_model as _model
from ..physics.memory import capture_server_memory_gib, case_drafter_memory
from ..physics.roofline import ESTIMATE_SPREAD, dense_training_efficiency

# Rate cases are computed by physics/caserates.py (FP8 at roofline.FP8_SPEEDUP; FP4 is not
# modelled and waits). A case's range: the spread of the kind of estimate it is
# (roofline.ESTIMATE_SPREAD for rates; memory and matmul ceilings have their own).
MEMORY_SPREAD = (0.15, 0.15)
CEILING_SPREAD = (0.05, 0.05)

HALVES = ("fit", "check")
TIERS = ("strong", "weak")


@dataclass(frozen=True, slots=True)
class Row:
    id: str
    source: str
    gpu: str
    quantity: str
    measured: float
    predicted: float
    low: float
    high: float
    half: str
    tier: str
    group: str = ""
    dflash_family: bool = False  # a DFlash-family trainer's run (DFlash, DFlash2, Domino, DSpark)

    @property
    def error(self) -> float:
        """Signed: predicted / measured - 1."""
        return self.predicted / self.measured - 1

    @property
    def covered(self) -> bool:
        return self.low <= self.measured <= self.high

    def to_json(self) -> dict[str, Any]:
        return {
            "id": self.id,
            "source": self.source,
            "gpu": self.gpu,
            "quantity": self.quantity,
            "measured": self.measured,
            "predicted": self.predicted,
            "low": self.low,
            "high": self.high,
            "error": self.error,
            "half": self.half,
            "tier": self.tier,
        }


def all_cases() -> list[dict[str, Any]]:
    """Every case of measurements.toml, those waiting for a capability included."""
    text = data_text("measurements.toml")
    cases: list[dict[str, Any]] = parse_toml(text, "measurements.toml")["case"]
    return cases


def load_cases() -> list[dict[str, Any]]:
    """The cases the model can predict: a case that needs what the planner cannot express
    yet (a drafter family, a topology, a precision) names it in `waiting` and is recorded,
    not bent to fit. Only these are parsed (each once per process; fresh copies)."""
    return [copy.deepcopy(c) for c in _predicted_cases()]


@functools.cache
def _predicted_cases() -> tuple[dict[str, Any], ...]:
    blocks = fitting.case_blocks()
    return tuple(
        fitting.cases_by_id(i for i, body in blocks.items() if not _WAITING.search(body)).values()
    )


_WAITING = re.compile(r"^waiting = ", re.MULTILINE)


def waiting_cases() -> dict[str, str]:
    """Case id -> the capability it waits for."""
    return {c["id"]: str(c["waiting"]) for c in all_cases() if c.get("waiting")}


Predictor = Callable[[Mapping[str, Any], Catalog], tuple[float, tuple[float, float]]]


def _rate(spread: str) -> Predictor:
    def predictor(case: Mapping[str, Any], c: Catalog) -> tuple[float, tuple[float, float]]:
        return caserates.rate(case, c.gpus), ESTIMATE_SPREAD[spread]

    return predictor


def _predict_mfu(case: Mapping[str, Any], c: Catalog) -> tuple[float, tuple[float, float]]:
    # Dense LLM training: the compute-bound limit a drafter is bounded by.
    gpu = c.gpus[case["gpu"]]
    return dense_training_efficiency(gpu, _model(case).is_moe), ESTIMATE_SPREAD["drafter"]


def _predict_ratio(case: Mapping[str, Any], c: Catalog) -> tuple[float, tuple[float, float]]:
    spread = CEILING_SPREAD if case["job"] == "matmul" else ESTIMATE_SPREAD["drafter"]
    return caserates.rate(case, c.gpus), spread


def _predict_matmul(case: Mapping[str, Any], c: Catalog) -> tuple[float, tuple[float, float]]:
    return caserates.matmul_tflops(c.gpus[case["gpu"]]), CEILING_SPREAD


def _predict_drafter_memory(
    case: Mapping[str, Any], c: Catalog
) -> tuple[float, tuple[float, float]]:
    fit = case_drafter_memory(case, c.gpus[case["gpu"]])
    gib = fit.needed_gb
    # The single-GPU benchmark reads torch.cuda.max_memory_allocated() / 1e9: decimal GB
    # of tensors, no runtime reserve.
    if "drafter_gpus" not in case:
        gib = (gib - dict(fit.items_gb)["runtime reserve"]) * BYTES_PER_GIB / 1e9
    return gib, MEMORY_SPREAD


def _predict_target_memory(
    case: Mapping[str, Any], c: Catalog
) -> tuple[float, tuple[float, float]]:
    gpu = c.gpus[case["gpu"]]
    return capture_server_memory_gib(case["mem_fraction"], gpu.memory_gb), MEMORY_SPREAD


def _predict_hidden(case: Mapping[str, Any], c: Catalog) -> tuple[float, tuple[float, float]]:
    gpu = c.gpus[case["gpu"]]
    if case.get("path") == "capture-sink":  # one capture server's copy into the store
        return min(gpu.host_link_bytes_per_s, pipeline.CAPTURE_SINK_BYTES_PER_S), (0.2, 0.2)
    if case.get("receive") == "host":  # one trainer rank's blocking receive
        return min(gpu.host_link_bytes_per_s, pipeline.TRAINER_FETCH_BYTES_PER_S), (0.2, 0.2)
    if "drafter_gpus" in case:  # the rate a whole pipeline moved
        per_token = fitting.hidden_state_bytes_per_token(_model(case))
        rate = caserates.pipeline_tokens_per_s(case, gpu)
        return rate * per_token, ESTIMATE_SPREAD["target"]
    if "target_gpus" in case:  # the capture server's device -> host copy
        return gpu.host_link_bytes_per_s, ESTIMATE_SPREAD["target"]
    # A transfer between two nodes: one node's network, at the share transfers reach.
    node = case.get("network_gb_per_s_per_node")
    node_bytes = node * 1e9 if node else gpu.network_bytes_per_s * gpu.gpus_per_node
    return node_bytes * pipeline.NETWORK_EFFICIENCY, ESTIMATE_SPREAD["target"]


def _predict_decode(case: Mapping[str, Any], c: Catalog) -> tuple[float, tuple[float, float]]:
    gpu = c.gpus[case["gpu"]]
    mature = decode.maturity(gpu, case["serving_engine"])
    rate = fitting.case_decode_rate(
        case,
        gpu,
        decode.DECODE_BANDWIDTH_EFFICIENCY,
        1.0 if mature is None else mature.factor,
        decode.DECODE_RUNTIME_HELD_GIB,
        decode.DECODE_STEP_S_PER_SEQUENCE,
    )
    return rate, ESTIMATE_SPREAD["target"]


def _predict_engine_held(case: Mapping[str, Any], c: Catalog) -> tuple[float, tuple[float, float]]:
    return decode.DECODE_RUNTIME_HELD_GIB, MEMORY_SPREAD


PREDICTORS: dict[str, Predictor] = {
    "target_tokens_per_s_per_gpu": _rate("target"),
    "capture_samples_per_s_per_gpu": _rate("target"),
    "training_tokens_per_s_per_gpu": _rate("drafter"),
    "training_mfu": _predict_mfu,
    "gpu_ratio": _predict_ratio,
    "matmul_tflops": _predict_matmul,
    "drafter_samples_per_s_per_gpu": _rate("drafter"),
    "pipeline_samples_per_s": _rate("target"),
    "drafter_memory_gb": _predict_drafter_memory,
    "target_memory_gb": _predict_target_memory,
    "hidden_state_bytes_per_s": _predict_hidden,
    "decode_tokens_per_s_per_gpu": _predict_decode,
    "engine_held_gib": _predict_engine_held,
}


def predict(case: Mapping[str, Any], catalog: Catalog) -> Row:
    value, (lo, hi) = PREDICTORS[case["quantity"]](case, catalog)
    return Row(
        id=case["id"],
        source=case["source"],
        gpu=case["gpu"],
        quantity=case["quantity"],
        measured=float(case["value"]),
        predicted=value,
        low=value * (1 - lo),
        high=value * (1 + hi),
        half=case["half"],
        tier=case["tier"],
        group=fitting.group(case),
        dflash_family=is_dflash_family(case),
    )


# Drafter families of the DFlash line, as cases name them (`drafter`, or the older
# `variant`: "other" is SpecForge's Domino).
DFLASH_FAMILY = ("dflash", "dflash2", "domino", "dspark")


def is_dflash_family(case: Mapping[str, Any]) -> bool:
    """Whether a case comes from a DFlash-family trainer's run."""
    return case.get("drafter", case.get("variant")) in (*DFLASH_FAMILY, "other")


@dataclass(frozen=True, slots=True)
class Summary:
    cases: int
    median_abs_error: float
    worst_abs_error: float
    range_coverage: float
    median_range_width: float  # (high - low) / predicted

    def to_json(self) -> dict[str, Any]:
        return {
            "cases": self.cases,
            "median_abs_error": self.median_abs_error,
            "worst_abs_error": self.worst_abs_error,
            "range_coverage": self.range_coverage,
            "median_range_width": self.median_range_width,
        }


def summarize(rows: list[Row]) -> Summary:
    if not rows:
        return Summary(0, math.nan, math.nan, math.nan, math.nan)
    errors = [abs(r.error) for r in rows]
    return Summary(
        len(rows),
        statistics.median(errors),
        max(errors),
        sum(r.covered for r in rows) / len(rows),
        statistics.median((r.high - r.low) / r.predicted for r in rows),
    )


@dataclass(frozen=True, slots=True)
class FittedConstant:
    """A fitted constant as validate reports it: its value on all its cases, its range,
    and its value in each fold of the leave-one-group-out cross-validation (None where
    its fit cases are all in the left-out group)."""

    name: str
    home: str
    unit: str
    value: float
    low: float
    high: float
    fitted_on: tuple[str, ...]
    groups: tuple[str, ...]
    applies_when: str
    folds: tuple[tuple[str, float | None], ...]

    @property
    def cross_validatable(self) -> bool:
        """Fitted on more than one group: every fold can refit it."""
        return len(self.groups) > 1

    def to_json(self) -> dict[str, Any]:
        return {
            "name": self.name,
            "home": self.home,
            "unit": self.unit,
            "value": self.value,
            "range": [self.low, self.high],
            "fitted_on": list(self.fitted_on),
            "groups": list(self.groups),
            "applies_when": self.applies_when,
            "cross_validatable": self.cross_validatable,
            "folds": [{"left_out_group": g, "value": v} for g, v in self.folds],
        }


@dataclass(frozen=True, slots=True)
class CrossValidated:
    """One tier's figures when every case is predicted by constants fitted without its
    own group; cases needing a constant fitted on their group alone are listed apart."""

    summary: Summary
    not_cross_validatable: tuple[str, ...]  # case ids

    def to_json(self) -> dict[str, Any]:
        return {**self.summary.to_json(), "not_cross_validatable": list(self.not_cross_validatable)}


@dataclass(frozen=True, slots=True)
class Validation:
    rows: tuple[Row, ...]
    summary: dict[str, Summary]  # "all", "strong", "weak", "fit", "check", "strong/fit", ...
    constants: tuple[FittedConstant, ...] = ()
    cross_validated: dict[str, CrossValidated] = field(default_factory=dict)
    # Why a case is not cross-validatable: the constants fitted on its own group alone.
    needs_own_group: dict[str, tuple[str, ...]] = field(default_factory=dict)
    cv_rows: dict[str, Row] = field(default_factory=dict)  # by id: the fold's prediction
    # Recorded cases that wait for a capability the planner lacks: id -> the capability.
    waiting: dict[str, str] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        overall = self.summary["strong"].to_json()
        return {
            "cases": [
                {
                    **r.to_json(),
                    "group": r.group,
                    "cross_validated": r.id in self.cv_rows,
                    "dflash_family": r.dflash_family,
                    "cv_predicted": cv.predicted if cv else None,
                    "cv_error": cv.error if cv else None,
                    "needs_own_group": list(self.needs_own_group.get(r.id, ())),
                }
                for r in self.rows
                for cv in (self.cv_rows.get(r.id),)
            ],
            "constants": [c.to_json() for c in self.constants],
            "summary": {
                **overall,
                "groups": {k: v.to_json() for k, v in self.summary.items()},
                "sources": len({r.source.split(" ")[0] for r in self.rows}),
                "cross_validated": {k: v.to_json() for k, v in self.cross_validated.items()},
                "waiting": dict(self.waiting),
            },
        }


# The regeneration phase's decode model is validated apart (its own rows: the decode rates,
# and the memory a serving engine holds that sets its batch): the training model's tiers are
# as they were before it.
DECODE = "decode_tokens_per_s_per_gpu"
DECODE_MEMORY = "engine_held_gib"
APART = (DECODE, DECODE_MEMORY)


def _tiers(rows: Iterable[Row]) -> dict[str, list[Row]]:
    every = list(rows)
    rows = [r for r in every if r.quantity not in APART]
    return {
        # Matmul ceilings set catalog defaults directly (matmul_ceiling): the model's own
        # predictions are everything else.
        "strong/model": [r for r in rows if r.tier == "strong" and r.quantity != "matmul_tflops"],
        "strong": [r for r in rows if r.tier == "strong"],
        "weak": [r for r in rows if r.tier == "weak"],
        "all": rows,
        "decode": [r for r in every if r.quantity == DECODE],
        "decode/memory": [r for r in every if r.quantity == DECODE_MEMORY],
        # Every tier of the runs of the drafter the plan trains: the part of the model the
        # answer rests on.
        "dflash-family": [r for r in rows if r.dflash_family],
    }


@contextmanager
def constants_applied(catalog: Catalog, values: Mapping[str, float | None]) -> Iterator[Catalog]:
    """The model with these fitted constants (None: left as they are) for the duration:
    module constants set and restored, a GPU field on a copy of the catalog. Validation
    only (it swaps module globals: not for threads)."""
    homes = {
        "memory": memory,
        "pipeline": pipeline,
        "roofline": roofline,
        "decode": decode,
        "colocated": colocated,
    }
    saved: list[tuple[Any, str, float]] = []
    gpus = dict(catalog.gpus)
    # Efficiencies follow their family's share and the GPU's ceiling: recomputed for every
    # built-in GPU from the fitted values with these in place.
    shares: dict[str, float | None] = {}
    try:
        for name, value in values.items():
            c = fitting.BY_NAME[name]
            if value is None:
                continue
            if c.home == "efficiency" or (c.gpu_fields and c.gpu_fields[0][1] == "matmul_ceiling"):
                shares[name] = value
            if c.home == "efficiency":
                continue
            if c.gpu_fields:
                for key, gpu_field in c.gpu_fields:
                    if key in gpus:
                        gpus[key] = fitting.set_gpu_field(gpus[key], gpu_field, value)
                continue
            module = homes[c.home]
            saved.append((module, name, getattr(module, name)))
            setattr(module, name, value)
        if shares:
            merged: dict[str, float | None] = {
                c.name: fitting.value(c.name)
                for c in fitting.CONSTANTS
                if c.home == "efficiency" or c.gpu_fields
            }
            merged.update(shares)
            for (key, gpu_field), efficiency in fitting.efficiency_fields(merged).items():
                if key in gpus:
                    gpus[key] = gpus[key].model_copy(update={gpu_field: efficiency})
        yield Catalog(gpus=gpus, models=catalog.models, offers=catalog.offers, today=catalog.today)
    finally:
        for module, name, old in reversed(saved):
            setattr(module, name, old)


def _depends(case: Mapping[str, Any], catalog: Catalog, name: str) -> bool:
    """Whether the case's prediction moves with the constant (scaled by half again)."""
    c = fitting.BY_NAME[name]
    current = fitting.value(name)
    base = PREDICTORS[case["quantity"]](case, catalog)[0]
    with constants_applied(catalog, {c.name: current * 1.5}) as changed:
        moved = PREDICTORS[case["quantity"]](case, changed)[0]
    return abs(moved / base - 1) > 1e-9


def cross_validate(
    catalog: Catalog, cases: list[dict[str, Any]]
) -> tuple[tuple[FittedConstant, ...], tuple[Row, ...], dict[str, tuple[str, ...]]]:
    """Leave one source group out: refit every constant without the group, predict the
    group's cases with that fold's constants. Returns the constants with their fold
    values, the out-of-sample rows, and the cases that need a constant fitted on their
    own group alone (not cross-validatable) with those constants."""
    by_id = {c["id"]: c for c in cases}
    groups = sorted({fitting.group(c) for c in cases})
    full = fitting.fit_all(by_id)
    folds = {g: fitting.fit_all(by_id, leave_out=g) for g in groups}
    rows: list[Row] = []
    needs: dict[str, tuple[str, ...]] = {}
    for g in groups:
        fold = folds[g]
        missing = [n for n, v in fold.items() if v is None]
        with constants_applied(catalog, fold) as fold_catalog:
            for case in (c for c in cases if fitting.group(c) == g):
                row = predict(case, fold_catalog)
                own = tuple(n for n in missing if _depends(case, catalog, n))
                if own:
                    needs[case["id"]] = own
                else:
                    rows.append(row)
    constants = []
    for c in fitting.CONSTANTS:
        value = full[c.name]
        assert value is not None
        low, high = fitting.span(c, by_id, full, (folds[g][c.name] for g in groups))
        mine = fitting.given_cases(by_id, c.fitted_on)
        fitted_groups = tuple(dict.fromkeys(fitting.group(mine[i]) for i in c.fitted_on))
        constants.append(
            FittedConstant(
                c.name,
                c.home,
                c.unit,
                value,
                low,
                high,
                c.fitted_on,
                fitted_groups,
                c.applies_when,
                tuple((g, folds[g][c.name]) for g in groups),
            )
        )
    return tuple(constants), tuple(rows), needs


def validate(catalog: Catalog) -> Validation:
    cases = load_cases()
    rows = tuple(predict(case, catalog) for case in cases)
    training = [r for r in rows if r.quantity not in APART]
    groups: dict[str, list[Row]] = {"all": training}
    groups["strong/model"] = _tiers(rows)["strong/model"]
    for tier in TIERS:
        groups[tier] = [r for r in training if r.tier == tier]
        for half in HALVES:
            groups[f"{tier}/{half}"] = [r for r in training if r.tier == tier and r.half == half]
    for half in HALVES:
        groups[half] = [r for r in training if r.half == half]
    groups["decode"] = [r for r in rows if r.quantity == DECODE]
    groups["decode/memory"] = [r for r in rows if r.quantity == DECODE_MEMORY]
    groups["dflash-family"] = [r for r in training if r.dflash_family]
    constants, cv_rows, needs = cross_validate(catalog, cases)
    apart = _tiers(r for r in rows if r.id in needs)
    cross = {
        tier: CrossValidated(summarize(kept), tuple(r.id for r in apart[tier]))
        for tier, kept in _tiers(cv_rows).items()
    }
    return Validation(
        rows,
        {k: summarize(v) for k, v in groups.items()},
        constants,
        cross,
        needs,
        {r.id: r for r in cv_rows},
        waiting_cases(),
    )
