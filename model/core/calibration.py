"""Measurements belong to the workload they were measured on.

A bare rate in a plan (`[calibration.target] rtx-pro-6000 = 4933.3`) means "measured on
this plan's workload". Before an edit changes the workload, `bind_to_workload` writes that
workload into every measurement, so that the rate keeps its meaning: the projection then
rescales it to the new workload by physics (rates.py, the "workload" reading) and says so,
instead of applying a Qwen3-8B rate to a 70B target.
"""

from __future__ import annotations

from collections.abc import Sequence
from pathlib import Path
from typing import TYPE_CHECKING

from ..basics.errors import PlanError
from ..inputs.plan import AcceptanceMeasurement, CalibrationEntry, Measurement, Plan

if TYPE_CHECKING:
    from ..inputs.acceptancelogs import AcceptanceReading
    from ..inputs.runlogs import Point


def measurements(entry: CalibrationEntry) -> tuple[Measurement, ...]:
    """The measurements of one calibration entry (a bare rate is one measurement)."""
    if isinstance(entry, Measurement):
        return (entry,)
    if isinstance(entry, tuple):
        return entry
    return (Measurement(tokens_per_s=float(entry)),)


def _bound(m: Measurement, plan: Plan, role: str) -> Measurement:
    w = plan.workload
    update: dict[str, object] = {}
    if m.target_model is None:
        update["target_model"] = w.target_model
    if m.avg_sample_tokens is None:
        update["avg_sample_tokens"] = w.avg_sample_tokens
    if role == "drafter":
        if m.num_anchors is None:
            update["num_anchors"] = w.num_anchors
        if m.batch_size is None:
            update["batch_size"] = plan.drafter.batch_size
        if m.drafter is None:
            update["drafter"] = w.drafter
    return m.model_copy(update=update) if update else m


def bind_to_workload(plan: Plan) -> Plan:
    """The plan with its workload written into every measurement."""
    calibration = plan.calibration
    update = {}
    for role in ("target", "drafter"):
        entries = getattr(calibration, role)
        bound: dict[str, CalibrationEntry] = {}
        for gpu, entry in entries.items():
            ms = tuple(_bound(m, plan, role) for m in measurements(entry))
            bound[gpu] = ms[0] if len(ms) == 1 else ms
        update[role] = bound
    return plan.model_copy(update={"calibration": calibration.model_copy(update=update)})


def rebound(before: Plan, after: Plan) -> list[str]:
    """What changed for the measurements when `before`'s workload became `after`'s: one
    line per role whose measurements now describe another workload."""
    notes = []
    w0, w1 = before.workload, after.workload
    for role in ("target", "drafter"):
        if not getattr(before.calibration, role):
            continue
        changed = [
            name
            for name, a, b in (
                ("target model", w0.target_model, w1.target_model),
                ("sample length", w0.avg_sample_tokens, w1.avg_sample_tokens),
                (
                    "anchors",
                    w0.num_anchors if role == "drafter" else None,
                    w1.num_anchors if role == "drafter" else None,
                ),
                (
                    "batch",
                    before.drafter.batch_size if role == "drafter" else None,
                    after.drafter.batch_size if role == "drafter" else None,
                ),
                (
                    "drafter family",
                    w0.drafter if role == "drafter" else None,
                    w1.drafter if role == "drafter" else None,
                ),
            )
            if a != b
        ]
        if changed:
            notes.append(
                f"the measured {role} rate was taken on another {', '.join(changed)}: "
                f"it is rescaled to this workload by its FLOP count (estimated)"
            )
    return notes


def add_points(plan: Plan, points: Sequence[Point], gpu: str | None = None) -> Plan:
    """The plan with measured points added to its calibration: a point replaces bare or
    older measurements of the same role and GPU on the same workload, and joins the
    others (several points per GPU let the model separate device time from overhead)."""
    calibration = plan.calibration
    update: dict[str, dict[str, CalibrationEntry]] = {
        "target": dict(calibration.target),
        "drafter": dict(calibration.drafter),
    }
    for point in points:
        key = point.gpu or gpu
        if key is None:
            raise PlanError.said(
                f"a {point.role} measurement ({point.measurement.source}) does "
                f"not say its GPU: give --gpu KEY",
                "calibration",
                where=point.measurement.source,
            )
        new = point.measurement
        kept = [
            m
            for m in measurements(update[point.role].get(key, ()))
            if (
                m.target_model,
                m.avg_sample_tokens,
                m.num_anchors,
                m.batch_size,
                m.drafter,
                m.bound,
            )
            != (
                new.target_model,
                new.avg_sample_tokens,
                new.num_anchors,
                new.batch_size,
                new.drafter,
                new.bound,
            )
            and m.target_model is not None
        ]
        entries = (*kept, new)
        update[point.role][key] = entries[0] if len(entries) == 1 else tuple(entries)
    return plan.model_copy(update={"calibration": calibration.model_copy(update=update)})


def add_acceptance(plan: Plan, readings: Sequence[AcceptanceReading]) -> Plan:
    """The plan with each log's measured tau in `[calibration.acceptance.<log name>]`: its
    tau, quartiles, sample passes, source and date (a log read again replaces its entry).
    The projection's curve then passes through the one at the most sample passes."""
    entries = dict(plan.calibration.acceptance)
    for r in readings:
        if r.sample_passes is None or r.sample_passes <= 0:
            raise PlanError.at(
                r.path,
                f"the logged acceptance is at no known number of sample passes (samples per "
                f"step {r.samples_basis}): set drafter.batch_size and drafter.count to the run's",
            )
        entries[Path(r.path).stem] = AcceptanceMeasurement(
            tau=r.tau,
            sample_passes=r.sample_passes,
            tau_low=r.tau_low,
            tau_high=r.tau_high,
            source=r.source,
            date=r.date,
        )
    calibration = plan.calibration.model_copy(update={"acceptance": entries})
    return plan.model_copy(update={"calibration": calibration})
