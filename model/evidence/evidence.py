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
from dataclasses import dataclass, field, replace
from typing import Any

from ..basics.data import data_text
from ..basics.tomlfile import parse_toml
from ..basics.units import BYTES_PER_GIB
from ..inputs.catalog import Catalog
from ..physics import (
    acceptance,
    caserates,
    colocated,
    decode,
    fitting,
    memory,
    pipeline,
    roofline,
)
from ..physics.families import FAMILIES
from ..physics.fitting import case_model as _model
from ..physics.memory import capture_server_memory_gib, case_drafter_memory
from ..physics.roofline import ESTIMATE_SPREAD, dense_training_efficiency

# Rate cases are computed by physics/caserates.py (FP8 at roofline.FP8_SPEEDUP, FP4 on a GPU
# with FP4 tensor cores FP4_PREFILL_OVER_FP8 faster again). A case's range: the spread of
# the kind of estimate it is (roofline.ESTIMATE_SPREAD for rates; memory and matmul
# ceilings have their own).
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
    compares: str = ""  # "topology": a run of a source's topology table (validated apart)

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
        per_token = fitting.case_state_bytes_per_token(case)
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


def _predict_precision(case: Mapping[str, Any], c: Catalog) -> tuple[float, tuple[float, float]]:
    # NVFP4 over FP8 prefill, as the model runs it on the case's GPU.
    gpu = c.gpus[case["gpu"]]
    ratio = roofline.precision_speedup(case["precision"], gpu) / roofline.precision_speedup(
        case["baseline_precision"], gpu
    )
    return ratio, ESTIMATE_SPREAD["target"]


def _predict_engine_held(case: Mapping[str, Any], c: Catalog) -> tuple[float, tuple[float, float]]:
    return decode.DECODE_RUNTIME_HELD_GIB, MEMORY_SPREAD


def case_curve_inputs(case: Mapping[str, Any]) -> acceptance.CurveInputs:
    """A learning-curve case's conditions, as a plan's would be read (curve_inputs)."""
    family = case.get("drafter", acceptance.REFERENCE_FAMILY)
    target = acceptance.case_target_params(case)
    epochs = case.get("epochs")
    return acceptance.CurveInputs(
        family=family,
        # A block the case does not state: its family's own (16: DFlash's targets').
        block_size=int(case.get("block_size", FAMILIES[family].block_size or 16)),
        anchors=int(case.get("anchors", 0)),
        on_policy=bool(case.get("on_policy", False)),
        target_params=0.0 if target is None else target,
        samples=case["sample_passes"] / epochs if epochs else 0.0,
        sample_tokens=float(case.get("max_length", 0)),
    )


def _predict_tau(
    case: Mapping[str, Any], fitted: acceptance.Curve | None = None
) -> tuple[float, tuple[float, float]]:
    central, low, high = acceptance.tau_at(case_curve_inputs(case), case["sample_passes"], fitted)
    c = float(central)
    return c, (1 - float(low) / c, float(high) / c - 1)


def _predict_speedup(
    case: Mapping[str, Any],
    fitted: Mapping[tuple[str, str], acceptance.EngineFactor] | None = None,
) -> tuple[float, tuple[float, float]]:
    engine, regime = acceptance.case_engine(case)
    factors = acceptance.engine_factors(case["quantity"]) if fitted is None else fitted
    central, low, high = (
        float(x)
        for x in acceptance.speedup_at(case["acceptance_length"], engine, regime, fitted=factors)
    )
    return central, (1 - low / central, high / central - 1)


def _acceptance_predictor(case: Mapping[str, Any], _: Catalog) -> tuple[float, tuple[float, float]]:
    return _predict_tau(case)


def _speedup_predictor(case: Mapping[str, Any], _: Catalog) -> tuple[float, tuple[float, float]]:
    return _predict_speedup(case)


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
    "precision_speedup": _predict_precision,
    acceptance.CURVE_QUANTITY: _acceptance_predictor,
    "serving_speedup": _speedup_predictor,
    "serving_speedup_decode": _speedup_predictor,
}


def predict(case: Mapping[str, Any], catalog: Catalog) -> Row:
    value, (lo, hi) = PREDICTORS[case["quantity"]](case, catalog)
    return Row(
        id=case["id"],
        source=case["source"],
        gpu=case.get("gpu", ""),  # a learning-curve case's training GPUs may go unsaid
        quantity=case["quantity"],
        measured=float(case["value"]),
        predicted=value,
        low=value * (1 - lo),
        high=value * (1 + hi),
        half=case["half"],
        tier=case["tier"],
        group=fitting.group(case),
        dflash_family=is_dflash_family(case),
        compares=str(case.get("compares", "")),
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


# The test of a topology table (issue 32: SpecForge's DFlash2 recipe, PR #869): with
# the table's source group left out, every figure within this share of the measured one
# and the winning topology right on every GPU type and count.
TOPOLOGY_TOLERANCE = 0.25


@dataclass(frozen=True, slots=True)
class TopologyRow:
    """One run of a source's topology table (`compares = "topology"`), predicted with its
    source group left out."""

    id: str
    topology: str  # "disaggregated" or "colocated"
    split: str  # "5 + 3" (targets + drafters), or "colocated"
    measured: float
    predicted: float
    cross_validated: bool  # False: it needs a constant fitted on its own group alone
    needs: tuple[str, ...] = ()  # those constants

    @property
    def error(self) -> float:
        return self.predicted / self.measured - 1


@dataclass(frozen=True, slots=True)
class TopologyCheck:
    """One GPU type and count of a topology table: the measured winner (colocated against
    the best disaggregated split the table measured) and the predicted one, over the same
    runs, each predicted with its source group left out."""

    group: str
    gpu: str
    gpus: int
    rows: tuple[TopologyRow, ...]

    def _winner(self, figure: Callable[[TopologyRow], float]) -> str:
        best = {
            t: max((figure(r) for r in self.rows if r.topology == t), default=0.0)
            for t in ("colocated", "disaggregated")
        }
        return "colocated" if best["colocated"] > best["disaggregated"] else "disaggregated"

    @property
    def measured_winner(self) -> str:
        return self._winner(lambda r: r.measured)

    @property
    def predicted_winner(self) -> str:
        return self._winner(lambda r: r.predicted)

    @property
    def worst_abs_error(self) -> float:
        return max(abs(r.error) for r in self.rows)

    @property
    def meets(self) -> bool:
        """The issue's criterion: the winner right, every figure within the tolerance, every
        row cross-validated (none resting on a constant fitted on its own group alone)."""
        return (
            self.measured_winner == self.predicted_winner
            and self.worst_abs_error <= TOPOLOGY_TOLERANCE
            and all(r.cross_validated for r in self.rows)
        )

    def to_json(self) -> dict[str, Any]:
        return {
            "group": self.group,
            "gpu": self.gpu,
            "gpus": self.gpus,
            "measured_winner": self.measured_winner,
            "predicted_winner": self.predicted_winner,
            "worst_abs_error": self.worst_abs_error,
            "meets": self.meets,
            "rows": [
                {
                    "id": r.id,
                    "topology": r.topology,
                    "split": r.split,
                    "measured": r.measured,
                    "predicted": r.predicted,
                    "error": r.error,
                    "cross_validated": r.cross_validated,
                    "needs_own_group": list(r.needs),
                }
                for r in self.rows
            ],
        }


def topology_checks(
    cases: Iterable[Mapping[str, Any]],
    fold_rows: Mapping[str, Row],
    needs: Mapping[str, tuple[str, ...]],
) -> tuple[TopologyCheck, ...]:
    """Each GPU type and count of every topology table, from the cross-validation's fold
    predictions (a row needing a constant of its own group alone is predicted with that
    constant as fitted on all its cases, and flagged)."""
    tables: dict[tuple[str, str, int], list[TopologyRow]] = {}
    for c in cases:
        if c.get("compares") != "topology":
            continue
        colocated = c.get("topology") == "colocated"
        split = "colocated" if colocated else f"{c['target_gpus']} + {c['drafter_gpus']}"
        row = TopologyRow(
            c["id"],
            "colocated" if colocated else "disaggregated",
            split,
            float(c["value"]),
            fold_rows[c["id"]].predicted,
            c["id"] not in needs,
            needs.get(c["id"], ()),
        )
        key = (fitting.group(c), str(c["gpu"]), int(c["gpu_count"]))
        tables.setdefault(key, []).append(row)
    return tuple(TopologyCheck(g, gpu, n, tuple(rows)) for (g, gpu, n), rows in tables.items())


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
    # The topology tables' verdicts, their source group left out (issue 32).
    topology: tuple[TopologyCheck, ...] = ()

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
                "topology": [t.to_json() for t in self.topology],
            },
        }


# The regeneration phase's decode model is validated apart (its own rows: the decode rates,
# and the memory a serving engine holds that sets its batch): the training model's tiers are
# as they were before it.
DECODE = "decode_tokens_per_s_per_gpu"
DECODE_MEMORY = "engine_held_gib"
# The acceptance model (tau against the training budget, speedup against tau) is validated
# apart too: its own tier, cross-validated by source group (acceptance_rows).
ACCEPTANCE = acceptance.CURVE_QUANTITY
SERVING = ("serving_speedup", "serving_speedup_decode")
APART = (DECODE, DECODE_MEMORY, ACCEPTANCE, *SERVING)
# The runs of a topology table are validated apart too, by the issue's own test of them
# (TopologyCheck: the winner per GPU type and count, each figure within 25 %), and in the
# DFlash-family tier; the tiers are as they were before them.
TOPOLOGY = "topology"


def _apart(r: Row) -> bool:
    return r.quantity in APART or r.compares == TOPOLOGY


def _tiers(rows: Iterable[Row]) -> dict[str, list[Row]]:
    every = list(rows)
    rows = [r for r in every if not _apart(r)]
    return {
        # Matmul ceilings set catalog defaults directly (matmul_ceiling): the model's own
        # predictions are everything else.
        "strong/model": [r for r in rows if r.tier == "strong" and r.quantity != "matmul_tflops"],
        "strong": [r for r in rows if r.tier == "strong"],
        "weak": [r for r in rows if r.tier == "weak"],
        "all": rows,
        "decode": [r for r in every if r.quantity == DECODE],
        "decode/memory": [r for r in every if r.quantity == DECODE_MEMORY],
        "acceptance": [r for r in every if r.quantity == ACCEPTANCE],
        "acceptance/serving": [r for r in every if r.quantity in SERVING],
        # Every tier of the runs of the drafter the plan trains: the part of the model the
        # answer rests on.
        "dflash-family": [r for r in every if r.dflash_family and r.quantity not in APART],
        TOPOLOGY: [r for r in every if r.compares == TOPOLOGY],
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


@functools.cache
def _fold_curve(left_out: str) -> acceptance.Curve | None:
    """The acceptance curve fitted without one source group; None where the others hold
    no series at two budgets (the shape is the left-out group's alone)."""
    try:
        return acceptance.fit_curve([p for p in acceptance.curve_points() if p.group != left_out])
    except ValueError:
        return None


def _acceptance_fold(case: Mapping[str, Any]) -> tuple[float, tuple[float, float]] | None:
    """An acceptance-model case predicted without its own source group: the curve or the
    engine factors refitted on the other groups; None where they cannot be (its group is
    the only one that measured it)."""
    g = fitting.group(case)
    if case["quantity"] == ACCEPTANCE:
        fold = _fold_curve(g)
        return None if fold is None else _predict_tau(case, fold)
    others = [c for c in acceptance.speedup_pairs(case["quantity"]) if c["source_group"] != g]
    factors = acceptance.fit_factors(others)
    if acceptance.case_engine(case) not in factors:
        return None
    return _predict_speedup(case, factors)


# What an acceptance-model case needs fitted on its own group when no other group can
# refit it (validate lists it apart, as a constant's).
ACCEPTANCE_FITS = {ACCEPTANCE: "acceptance curve shape", **dict.fromkeys(SERVING, "engine factor")}


def _acceptance_row(case: Mapping[str, Any]) -> Row | None:
    fold = _acceptance_fold(case)
    if fold is None:
        return None
    value, (lo, hi) = fold
    row = predict(case, Catalog(gpus={}))
    return replace(row, predicted=value, low=value * (1 - lo), high=value * (1 + hi))


def cross_validate(
    catalog: Catalog, cases: list[dict[str, Any]]
) -> tuple[tuple[FittedConstant, ...], tuple[Row, ...], dict[str, tuple[str, ...]]]:
    """Leave one source group out: refit every constant without the group, predict the
    group's cases with that fold's constants. Returns the constants with their fold
    values, the out-of-sample rows, and the cases that need a constant fitted on their
    own group alone (not cross-validatable) with those constants."""
    constants, rows, needs, _ = _cross_validate(catalog, cases)
    return constants, rows, needs


def _cross_validate(
    catalog: Catalog, cases: list[dict[str, Any]]
) -> tuple[tuple[FittedConstant, ...], tuple[Row, ...], dict[str, tuple[str, ...]], dict[str, Row]]:
    """cross_validate, with every case's fold prediction too (those set apart included:
    a constant its fold cannot refit keeps its value on all its cases)."""
    by_id = {c["id"]: c for c in cases}
    groups = sorted({fitting.group(c) for c in cases})
    full = fitting.fit_all(by_id)
    folds = {g: fitting.fit_all(by_id, leave_out=g) for g in groups}
    rows: list[Row] = []
    needs: dict[str, tuple[str, ...]] = {}
    every: dict[str, Row] = {}
    for g in groups:
        fold = folds[g]
        missing = [n for n, v in fold.items() if v is None]
        with constants_applied(catalog, fold) as fold_catalog:
            for case in (c for c in cases if fitting.group(c) == g):
                if case["quantity"] in ACCEPTANCE_FITS:
                    fold_row = _acceptance_row(case)
                    every[case["id"]] = fold_row or predict(case, catalog)
                    if fold_row is None:
                        needs[case["id"]] = (ACCEPTANCE_FITS[case["quantity"]],)
                    else:
                        rows.append(fold_row)
                    continue
                row = predict(case, fold_catalog)
                every[case["id"]] = row
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
    return tuple(constants), tuple(rows), needs, every


def validate(catalog: Catalog) -> Validation:
    cases = load_cases()
    rows = tuple(predict(case, catalog) for case in cases)
    training = [r for r in rows if not _apart(r)]
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
    groups["acceptance"] = [r for r in rows if r.quantity == ACCEPTANCE]
    groups["acceptance/serving"] = [r for r in rows if r.quantity in SERVING]
    groups["dflash-family"] = [r for r in rows if r.dflash_family and r.quantity not in APART]
    groups[TOPOLOGY] = [r for r in rows if r.compares == TOPOLOGY]
    constants, cv_rows, needs, fold_rows = _cross_validate(catalog, cases)
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
        topology_checks(cases, fold_rows, needs),
    )
