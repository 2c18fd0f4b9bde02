"""The acceptance stage: what the job's training budget buys. The drafter's acceptance
length (tau) after the plan's sample passes, the serving speedup it gives on the plan's
serving engine, the serving hours after which the serving GPUs it saves repay the
training, and the value of one more epoch (physics/acceptance.py holds the curve and the
engine factors; this stage reads the plan and the job into them)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..basics.errors import PlanError
from ..inputs.catalog import Catalog
from ..physics import acceptance as model
from ..physics.acceptance import CurveInputs
from . import serving
from .cost import prices
from .diagnostics import Diagnostic
from .job import Job
from .resolve import Resolved


@dataclass(frozen=True, slots=True)
class Acceptance:
    tau: float
    tau_range: tuple[float, float]
    speedup: float
    speedup_range: tuple[float, float]
    # Serving hours of the plan's serving GPUs until the GPUs saved repay the job's cost;
    # None where the job does not run or the drafter does not speed serving up; the range
    # None where its slow end never pays back.
    break_even_hours: float | None
    break_even_range: tuple[float, float] | None
    sample_passes: float
    one_more_epoch_tau: float  # tau gained by one more epoch
    one_more_epoch_cost: float | None  # its cost, in the plan's cost unit
    sources: tuple[str, ...]
    calibrated: bool
    engine: str = "sglang"
    regime: str = model.LOW_BATCH
    serving_gpus: int = 1
    serving_gpu: str = ""
    # The plan's conditions no public series measured for its family, each of which
    # widened tau's range (physics/conditions.py's names); () where none did.
    widened_by: tuple[str, ...] = ()
    # One line where the plan's measured tau cannot set the curve's level; else None.
    calibration_note: str | None = None
    # serving.requests_per_s: the fleet serving it without the drafter (None: per
    # serving.count GPUs); the GPUs the drafter frees either way, with their range.
    fleet: serving.Fleet | None = None
    serving_gpus_saved: float = 0.0
    serving_gpus_saved_range: tuple[float, float] = (0.0, 0.0)

    def to_json(self) -> dict[str, Any]:
        """The JSON's `acceptance` block (README: the JSON contract)."""
        return {
            "tau": self.tau,
            "tau_range": list(self.tau_range),
            "sample_passes": self.sample_passes,
            "speedup": self.speedup,
            "speedup_range": list(self.speedup_range),
            "engine": self.engine,
            "regime": self.regime,
            "serving_gpu": self.serving_gpu,
            "serving_gpus": self.serving_gpus,
            "break_even_hours": self.break_even_hours,
            "break_even_range": None
            if self.break_even_range is None
            else list(self.break_even_range),
            "one_more_epoch_tau": self.one_more_epoch_tau,
            "one_more_epoch_cost": self.one_more_epoch_cost,
            "calibrated": self.calibrated,
            "sources": list(self.sources),
            "widened_by": list(self.widened_by),
            "requests_per_s": None if self.fleet is None else self.fleet.requests_per_s,
            "serving_gpus_saved": self.serving_gpus_saved,
            "serving_gpus_saved_range": list(self.serving_gpus_saved_range),
            "fleet": None if self.fleet is None else self.fleet.to_json(),
        }


def curve_inputs(r: Resolved) -> CurveInputs:
    """What the curve reads of a resolved plan; with calibration.acceptance entries, the
    measurement at the most sample passes sets the level (the latest of a run)."""
    w = r.plan.workload
    measured = r.plan.calibration.acceptance
    point = scatter = None
    if measured:
        last = max(measured.values(), key=lambda m: m.sample_passes)
        point = (last.sample_passes, last.tau)
        if last.tau_low is not None and last.tau_high is not None:
            scatter = (last.tau_low, last.tau_high)
    return CurveInputs(
        family=w.drafter,
        block_size=r.block_size,
        anchors=w.num_anchors,
        on_policy=bool(w.regenerate),
        target_params=float(r.model.total_params),
        measured=point,
        measured_range=scatter,
        samples=float(w.samples),
        sample_tokens=float(w.avg_sample_tokens),
    )


def serving_key(r: Resolved) -> tuple[str, str]:
    """The plan's (engine, regime), refused in one line when no public pair measures it
    and the plan sets no engine factor (project and search --objective alike)."""
    s = r.plan.serving
    key = (s.engine, s.regime)
    if s.engine_factor is None and key not in model.engine_factors():
        known = ", ".join(f"{e} at {g}" for e, g in sorted(model.engine_factors()))
        raise PlanError.field(
            "serving.engine",
            s.engine,
            f"no public tau-vs-speedup pair measured {s.engine} at {s.regime}; measured: "
            f"{known}; or set serving.engine_factor (speedup per unit of tau)",
        )
    return key


def acceptance_stage(r: Resolved, catalog: Catalog, job: Job) -> Acceptance:
    plan, s = r.plan, r.plan.serving
    engine, regime = serving_key(r)
    inputs = curve_inputs(r)
    w = plan.workload
    passes = float(w.samples * w.epochs)
    tau, tau_lo, tau_hi = (float(x) for x in model.tau_at(inputs, passes))
    more = float(model.tau_at(inputs, passes + w.samples)[0]) - tau
    speed = model.speedup_at(tau, engine, regime, s.engine_factor)[0]
    lo = model.speedup_at(tau_lo, engine, regime, s.engine_factor)[1]
    hi = model.speedup_at(tau_hi, engine, regime, s.engine_factor)[2]
    gpu = s.gpu or plan.target.gpu
    price = prices(plan, r.gpus, (gpu,), catalog.offers).per_hour(gpu)
    # The GPUs serving without the drafter: the plan's count, or a fleet's at a rate.
    at_rate = serving.fleet(r, gpu)
    gpus, gpus_range = (
        (float(s.count), (float(s.count), float(s.count)))
        if at_rate is None
        else (at_rate.gpus_without, at_rate.gpus_without_range)
    )
    paid = serving.payback(
        job.cost, job.cost_range, float(speed), (float(lo), float(hi)), gpus, gpus_range, price
    )
    hours, hours_range = paid.hours, paid.hours_range
    run_cost = job.run_cost
    c = model.curve()
    own = c.families.get(inputs.family) if inputs.family != model.REFERENCE_FAMILY else None
    # The source groups the curve and the engine factor were fitted on (measurements.toml):
    # the reference's, and the plan's family's own where it has a fit.
    groups = (*c.groups, *(own.groups if own is not None else ()))
    if s.engine_factor is not None:
        sources: tuple[str, ...] = (*groups, "plan serving.engine_factor")
    else:
        sources = tuple(dict.fromkeys((*groups, *model.engine_factors()[(engine, regime)].groups)))
    if inputs.measured is not None:
        sources = (*sources, "plan calibration.acceptance")
    # A measurement the guard rejects leaves the public curve central: not calibrated.
    note = model.calibration_note(inputs)
    return Acceptance(
        tau=tau,
        tau_range=(tau_lo, tau_hi),
        speedup=float(speed),
        speedup_range=(float(lo), float(hi)),
        break_even_hours=hours,
        break_even_range=hours_range,
        sample_passes=passes,
        one_more_epoch_tau=more,
        one_more_epoch_cost=None if run_cost is None else run_cost / w.epochs,
        sources=sources,
        calibrated=inputs.measured is not None and note is None,
        engine=engine,
        regime=regime,
        serving_gpus=s.count if at_rate is None else math.ceil(at_rate.gpus_without),
        serving_gpu=gpu,
        widened_by=() if inputs.measured is not None else model.widened_by(inputs),
        calibration_note=note,
        fleet=at_rate,
        serving_gpus_saved=paid.gpus_saved,
        serving_gpus_saved_range=paid.gpus_saved_range,
    )


def acceptance_diagnostics(a: Acceptance) -> tuple[Diagnostic, ...]:
    """The calibration guard's line, as a diagnostic of the projection."""
    if a.calibration_note is None:
        return ()
    return (Diagnostic("acceptance-calibration", "calibration.acceptance", a.calibration_note),)
