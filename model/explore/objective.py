"""Search by outcome (issue 33): the plan that buys an acceptance length (tau), the highest
tau a budget or deadline buys, or the most serving speedup per unit of training cost.

Epochs are the searched dimension, without multiplying the candidate grid. Tau depends on
the sample passes (workload.samples x epochs) and on what `acceptance.curve_inputs` reads
(drafter family, block size, anchors, on- or off-policy data, target size), none of which
is a GPU type, count, TP, split, mode or topology. Every configuration's days and cost
grow with epochs (online each epoch runs the targets again; offline the training repeats
after one capture; a regeneration runs once), so:
- a tau target needs the same fewest epochs E* for every configuration, and any
  configuration at more epochs is dominated by itself at E*: the search at E* answers
  (E* is the first epochs count whose tau, at the end `--at` says, reaches the target:
  the curve is monotone in sample passes, evaluated once over 1..max_epochs);
- under a budget or deadline, a configuration that meets them at some epochs meets them at
  fewer, so the highest epochs with a feasible plan is found by bisection;
- the speedup per cost is compared across the epochs counts allowed, each at its cheapest
  plan (the speedup does not depend on the configuration, so the cheapest is the best).
The pessimistic end (`--at pessimistic`, the default) judges tau at the low end of its
range (more epochs needed) as it judges days and cost at theirs.
"""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Any, Literal, get_args

import numpy as np

from ..basics.errors import PlanError
from ..basics.validation import EPOCHS
from ..core import acceptance
from ..core.resolve import resolve
from ..inputs.catalog import Catalog
from ..inputs.plan import Plan, plan_to_dict
from ..physics import acceptance as curve
from .search import Candidate, Constraints, Result, Space, search

Objective = Literal["time-to-tau", "tau", "speedup-per-cost"]
OBJECTIVES: tuple[str, ...] = get_args(Objective)
# The objective that maximises tau within the constraints (named, so that a view testing it
# does not spell the tau figure's key).
HIGHEST_TAU: Objective = "tau"
# The (days, cost) front's own objectives, as the app's search names them beside these:
# its rows fastest or cheapest first (no epochs chosen).
FRONT_OBJECTIVES: tuple[str, ...] = ("time", "cost")
# The longest schedules in the public learning curves: DeepSpec #84 follows DFlash and
# DSpark to 10 epochs (still improving there); beyond, the curve is extrapolated.
DEFAULT_MAX_EPOCHS = 10


@dataclass(frozen=True, slots=True)
class Goal:
    """What the search is asked for."""

    objective: Objective
    min_tau: float | None = None
    max_epochs: int = DEFAULT_MAX_EPOCHS


@dataclass(frozen=True, slots=True)
class Outcome:
    """What one epochs count buys: tau and the serving speedup, each with its range."""

    epochs: int
    sample_passes: float
    tau: float
    tau_range: tuple[float, float]
    speedup: float
    speedup_range: tuple[float, float]

    def judged_tau(self, at: str) -> float:
        return self.tau_range[0] if at == "pessimistic" else self.tau

    def judged_speedup(self, at: str) -> float:
        return self.speedup_range[0] if at == "pessimistic" else self.speedup

    def to_json(self) -> dict[str, Any]:
        return {
            "epochs": self.epochs,
            "sample_passes": self.sample_passes,
            "tau": self.tau,
            "tau_range": list(self.tau_range),
            "speedup": self.speedup,
            "speedup_range": list(self.speedup_range),
        }


@dataclass(frozen=True, slots=True)
class Tried:
    """speedup-per-cost: one epochs count, its cheapest plan's judged cost and the value."""

    outcome: Outcome
    cost: float
    value: float  # speedup gained (speedup - 1) per unit of training cost


@dataclass(frozen=True, slots=True)
class ObjectiveResult:
    goal: Goal
    result: Result  # the search at the chosen epochs
    outcome: Outcome | None  # what the chosen epochs buy (None: no epochs count qualifies)
    winner: Candidate | None
    why_none: str | None = None
    tried: tuple[Tried, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out = self.result.to_json()
        at = self.result.constraints.at
        extra = {} if self.outcome is None else self.outcome.to_json()
        for row in out["front"]:
            row.update(extra)
        winner = None
        if self.winner is not None:
            days, cost = self.winner.judged(at)
            winner = {
                "mode": self.winner.mode,
                "topology": self.winner.topology,
                "days": self.winner.days,
                "cost": self.winner.cost,
                "judged_days": days,
                "judged_cost": cost,
                "plan": plan_to_dict(self.winner.plan),
                **extra,
            }
        out["objective"] = {
            "objective": self.goal.objective,
            "min_tau": self.goal.min_tau,
            "max_epochs": self.goal.max_epochs,
            "at": at,
            "outcome": None if self.outcome is None else self.outcome.to_json(),
            "winner": winner,
            "why_none": self.why_none,
            "tried": [
                {**t.outcome.to_json(), "judged_cost": t.cost, "speedup_gain_per_cost": t.value}
                for t in self.tried
            ],
        }
        return out


def _with_epochs(plan: Plan, epochs: int) -> Plan:
    if plan.workload.epochs == epochs:
        return plan
    return plan.model_copy(update={"workload": plan.workload.model_copy(update={"epochs": epochs})})


class _Curve:
    """The acceptance model for this plan (model/physics/acceptance.py, the one curve, read
    as the projection's acceptance stage reads it: model/core/acceptance.py)."""

    def __init__(self, plan: Plan, catalog: Catalog) -> None:
        r = resolve(plan, catalog)
        self.plan = plan
        self.inputs = acceptance.curve_inputs(r)
        # The serving engine and regime (a plan naming one no public pair measured is
        # refused here as in its projection).
        self.engine, self.regime = acceptance.serving_key(r)
        self.factor = plan.serving.engine_factor
        self.samples = float(plan.workload.samples)

    def outcomes(self, epochs: np.ndarray) -> list[Outcome]:
        passes = self.samples * np.asarray(epochs, float)
        tau, tau_low, tau_high = (np.asarray(x, float) for x in curve.tau_at(self.inputs, passes))

        def speedup(t: np.ndarray, end: int) -> np.ndarray:
            return np.asarray(
                curve.speedup_at(t, self.engine, self.regime, self.factor)[end], float
            )

        # As the acceptance stage: the low speedup at the low tau, the high at the high.
        central, low, high = speedup(tau, 0), speedup(tau_low, 1), speedup(tau_high, 2)
        return [
            Outcome(
                int(e),
                float(passes[i]),
                float(tau[i]),
                (float(tau_low[i]), float(tau_high[i])),
                float(central[i]),
                (float(low[i]), float(high[i])),
            )
            for i, e in enumerate(np.asarray(epochs))
        ]

    def ceiling(self, at: str) -> float:
        """The most tau any number of sample passes buys, at that end (the curve's level)."""
        central, low, _ = curve.tau_ceiling(self.inputs)
        return float(np.asarray(low if at == "pessimistic" else central)[0])

    def what(self) -> str:
        w = self.plan.workload
        return f"{w.drafter} on {w.target_model}"


def _check(goal: Goal, constraints: Constraints) -> None:
    if not EPOCHS.lo <= goal.max_epochs <= EPOCHS.hi:
        raise PlanError.flag(
            "--max-epochs",
            str(goal.max_epochs),
            f"must be a whole number from {EPOCHS.lo:,} to {EPOCHS.hi:,}",
        )
    if goal.objective not in OBJECTIVES:
        raise PlanError.flag(
            "--objective", repr(goal.objective), f"use one of {', '.join(OBJECTIVES)}"
        )
    if goal.min_tau is not None and not (0 < goal.min_tau < math.inf):
        raise PlanError.flag("--min-tau", str(goal.min_tau), "must be a positive number")
    if goal.objective == "tau":
        if goal.min_tau is not None:
            raise PlanError.flag(
                "--min-tau",
                f"{goal.min_tau:g}",
                "--objective tau finds the highest tau itself; a target goes with "
                "--objective time-to-tau or speedup-per-cost",
            )
        if constraints.budget is None and constraints.deadline_days is None:
            raise PlanError.flag(
                "--objective",
                "tau",
                "needs --budget or --deadline-days (without either, more epochs always "
                "buy more tau)",
            )
    if goal.objective == "time-to-tau" and goal.min_tau is None:
        raise PlanError.flag(
            "--objective", "time-to-tau", "needs --min-tau, the tau to reach (e.g. --min-tau 3.8)"
        )


def _fewest_epochs(curve: _Curve, goal: Goal, at: str) -> tuple[int, list[Outcome]]:
    """The fewest epochs reaching --min-tau at the end judged (1 without a target), and
    every epochs count's outcome. A target above what the curve reaches at all, or within
    --max-epochs, is refused in one line."""
    outcomes = curve.outcomes(np.arange(1, goal.max_epochs + 1))
    if goal.min_tau is None:
        return 1, outcomes
    reached = [o.epochs for o in outcomes if o.judged_tau(at) >= goal.min_tau]
    if reached:
        return reached[0], outcomes
    end = "at the low end of its range" if at == "pessimistic" else "at the central estimate"
    ceiling = curve.ceiling(at)
    if goal.min_tau > ceiling:
        raise PlanError.flag(
            "--min-tau",
            f"{goal.min_tau:g}",
            f"above what the curve reaches for {curve.what()} ({ceiling:.2f} at most, {end})",
        )
    best = outcomes[-1]
    raise PlanError.flag(
        "--min-tau",
        f"{goal.min_tau:g}",
        f"not reached within --max-epochs {goal.max_epochs:,} of workload.samples "
        f"{curve.plan.workload.samples:,} ({best.judged_tau(at):.2f} at most, {end}); "
        "raise --max-epochs or workload.samples",
    )


def search_objective(
    plan: Plan,
    catalog: Catalog,
    space: Space,
    constraints: Constraints,
    goal: Goal,
    progress: Callable[[float], bool] | None = None,
) -> ObjectiveResult:
    """The plan that best meets the objective, epochs chosen (the module's docstring)."""
    _check(goal, constraints)
    at = constraints.at
    curve = _Curve(plan, catalog)
    first, outcomes = _fewest_epochs(curve, goal, at)

    def at_epochs(epochs: int) -> Result:
        return search(_with_epochs(plan, epochs), catalog, space, constraints, progress)

    if goal.objective == "time-to-tau":
        result = at_epochs(first)
        winner = result.front[0] if result.front else None
        return ObjectiveResult(goal, result, outcomes[first - 1], winner, result.why_none)
    if goal.objective == "tau":
        # Feasibility falls with epochs: the highest feasible count by bisection.
        low_result = at_epochs(1)
        if not low_result.front:
            return ObjectiveResult(goal, low_result, None, None, low_result.why_none)
        good, bad, best = 1, goal.max_epochs + 1, low_result
        while bad - good > 1:
            middle = (good + bad) // 2
            r = at_epochs(middle)
            if r.front:
                good, best = middle, r
            else:
                bad = middle
        # The highest tau; of its plans, the cheapest (the front's last).
        return ObjectiveResult(goal, best, outcomes[good - 1], best.front[-1])
    # speedup-per-cost: each epochs count from the fewest reaching the target, at its
    # cheapest plan; the most speedup gained per unit of cost, fewer epochs on a tie.
    tried: list[Tried] = []
    results: dict[int, Result] = {}
    for o in outcomes[first - 1 :]:
        r = at_epochs(o.epochs)
        if not r.front:
            continue
        results[o.epochs] = r
        cost = r.front[-1].judged(at)[1]
        tried.append(Tried(o, cost, (o.judged_speedup(at) - 1.0) / cost))
    if not tried:
        r = at_epochs(first)
        return ObjectiveResult(goal, r, None, None, r.why_none)
    pick = max(tried, key=lambda t: (t.value, -t.outcome.epochs))
    best = results[pick.outcome.epochs]
    return ObjectiveResult(goal, best, pick.outcome, best.front[-1], tried=tuple(tried))
