"""The plan's own job, decided once from its mode: the online pipeline, or the offline run
(capture once, then every epoch from storage), after the regeneration phase when the plan
regenerates its answers first. Every view reads the job; none asks which mode it is in."""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from .offline import Offline
from .phases import Phase, Regeneration, Total, regenerate_phase, total, training_phases
from .resolve import Resolved
from .stages import Money, Pipeline, Run, run_at


@dataclass(frozen=True, slots=True, kw_only=True)
class Job:
    mode: str  # workload.mode: "online" or "offline"
    label: str  # what the job is, in words: "online run", "offline run", "whole job"
    # The job is more than one run of the online pipeline (it captures first or
    # regenerates first): its headline is the job's, not the pipeline's.
    phased: bool
    # The phases before the run (regeneration) at the fast and the slow end of their range.
    before_days: tuple[float, float]
    before_cost: tuple[float, float] | None
    phases: tuple[Phase, ...] = ()  # empty when the plan does not fit
    # The rate that trains the drafter and what sets it: the pipeline's (target, drafter,
    # link) online; offline, the training's from storage (drafter, storage).
    tokens_per_s: float | None = None
    bound: str | None = None
    # The run of the plan's own mode, before any regeneration: its days and cost and their
    # (fast, slow) ranges.
    run_days: float | None = None
    run_cost: float | None = None
    run_days_range: tuple[float, float] | None = None
    run_cost_range: tuple[float, float] | None = None
    # Offline: the capture's rate (the targets', a phase of its own) and the data kept on
    # storage; None online (the capture runs inside the pipeline).
    capture_tokens_per_s: float | None = None
    stored: Offline | None = None
    # What one more target replica (tp GPUs) and one more drafter GPU do to the job's rate
    # and to its run's days (negative: sooner); None when it does not fit.
    more_target_tokens_per_s: float | None = None
    more_drafter_tokens_per_s: float | None = None
    more_target_days: float | None = None
    more_drafter_days: float | None = None
    # The phases after the run (a spot plan's expected reclaims: checkpoints.py) at the
    # fast and the slow end of their range.
    after_days: tuple[float, float] = (0.0, 0.0)
    after_cost: tuple[float, float] | None = (0.0, 0.0)

    def to_json(self) -> dict[str, Any]:
        """The JSON's `job` block: the plan's own job, as every view headlines it."""
        return {
            "mode": self.mode,
            "label": self.label,
            "phased": self.phased,
            "tokens_per_s": self.tokens_per_s,
            "bound": self.bound,
            "capture_tokens_per_s": self.capture_tokens_per_s,
            "run_days": self.run_days,
            "run_cost": self.run_cost,
            "run_days_range": _pair(self.run_days_range),
            "run_cost_range": _pair(self.run_cost_range),
            "days": self.days,
            "cost": self.cost,
            "days_range": _pair(self.days_range),
            "cost_range": _pair(self.cost_range),
        }

    @property
    def total(self) -> Total | None:
        """Every phase summed: the whole job."""
        return total(self.phases) if self.phases else None

    @property
    def days(self) -> float | None:
        return self.total.days if self.total else None

    @property
    def cost(self) -> float | None:
        return self.total.cost if self.total else None

    @property
    def days_range(self) -> tuple[float, float] | None:
        if self.run_days_range is None or self.days is None:
            return None
        low, high = sorted(self.run_days_range)
        after = self.after_days
        return self.before_days[0] + low + after[0], self.before_days[1] + high + after[1]

    @property
    def cost_range(self) -> tuple[float, float] | None:
        before, after = self.before_cost, self.after_cost
        if self.run_cost_range is None or self.cost is None or before is None or after is None:
            return None
        low, high = sorted(self.run_cost_range)
        return before[0] + low + after[0], before[1] + high + after[1]


def _pair(value: tuple[float, float] | None) -> list[float] | None:
    return None if value is None else sorted(value)


def job_stage(
    r: Resolved, pipe: Pipeline, money: Money, run_: Run | None, regen: Regeneration | None
) -> Job:
    plan = r.plan
    mode = plan.workload.mode
    label = "whole job" if regen is not None else f"{mode} run"
    phased = mode == "offline" or regen is not None
    before_days, before_cost = _before(regen, money)
    base = Job(
        mode=mode, label=label, phased=phased, before_days=before_days, before_cost=before_cost
    )
    if run_ is None:
        return base
    econ, off, own = run_.economics, run_.offline, run_.own
    online_cost = None if econ.total_cost is None else float(econ.total_cost)
    phases = training_phases(
        mode,
        float(econ.days),
        sum(money.billed),
        online_cost,
        None if econ.total_cost_usd is None else float(econ.total_cost_usd),
        _train_gpus(r),
        off,
        (money.role_prices.target_usd_per_hour, money.role_prices.drafter_usd_per_hour),
        (r.target_gpu.name, r.drafter_gpu.name),
    )
    if regen is not None:
        phases = (regenerate_phase(regen, money.prices), *phases)
    more_t, more_d = _neighbours(r, run_)
    job = replace(
        base,
        phases=phases,
        tokens_per_s=float(own.tokens_per_s),
        run_days=float(own.days),
        run_cost=None if own.cost is None else float(own.cost),
        more_target_tokens_per_s=more_t[0],
        more_drafter_tokens_per_s=more_d[0],
        more_target_days=more_t[1],
        more_drafter_days=more_d[1],
    )
    if mode == "offline":
        o = off.ranges
        return replace(
            job,
            bound=off.bound,
            run_days_range=o.days if o else None,
            run_cost_range=o.cost if o else None,
            capture_tokens_per_s=off.capture_tokens_per_s,
            stored=off,
        )
    return replace(
        job,
        bound=run_.bottleneck,
        run_days_range=run_.ranges.days,
        run_cost_range=run_.ranges.total_cost,
    )


def _before(
    regen: Regeneration | None, money: Money
) -> tuple[tuple[float, float], tuple[float, float] | None]:
    """The regeneration phase's days and cost at the fast and the slow end of its decode
    range (search's pessimistic figures add the same); nothing without one."""
    if regen is None:
        return (0.0, 0.0), (0.0, 0.0)
    ends = [regenerate_phase(regen, money.prices, end) for end in (0, 1)]
    fast, slow = ends[0].cost, ends[1].cost
    return (ends[0].days, ends[1].days), None if fast is None or slow is None else (fast, slow)


def _train_gpus(r: Resolved) -> str:
    """The train phase's GPUs: each role's, or colocated every GPU running both."""
    t, d = r.plan.target, r.plan.drafter
    if r.plan.workload.topology == "colocated":
        return f"{t.count + d.count} x {r.target_gpu.name} colocated"
    return f"{t.count} x {r.target_gpu.name} + {d.count} x {r.drafter_gpu.name}"


def _neighbours(r: Resolved, run_: Run) -> tuple[tuple[float, float], tuple[float, float]]:
    """What one more target replica and one more drafter GPU each do to the job's rate
    and to its run's days (run_at: the run of the plan's own mode at any counts)."""
    plan, own = r.plan, run_.own
    T, D, tp = plan.target.count, plan.drafter.count, plan.target.tp
    rate, days = float(own.tokens_per_s), float(own.days)
    # Colocated, a GPU more is one more of each role: whole replicas (tp GPUs), either way.
    more_d = tp if plan.workload.topology == "colocated" else 1
    t, d = (run_at(run_.inputs, *counts) for counts in ((T + tp, D), (T, D + more_d)))
    return (
        (float(t.tokens_per_s) - rate, float(t.days) - days),
        (float(d.tokens_per_s) - rate, float(d.days) - days),
    )
