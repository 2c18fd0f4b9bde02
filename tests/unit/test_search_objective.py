"""search --objective: the epochs chosen are what brute force over epochs finds (the fewest
reaching --min-tau, the most a budget allows, the best speedup per cost), each objective's
winner is its definition over every epochs count, bad flags are one line, and the JSON
block has its documented keys."""

from __future__ import annotations

import json

import numpy as np
import pytest
from dflash_plan.model.core import acceptance as accept
from dflash_plan.model.core.resolve import resolve
from dflash_plan.model.explore.objective import Goal, search_objective
from dflash_plan.model.explore.search import AT_CHOICES, Constraints, default_space, search
from dflash_plan.model.physics import acceptance
from dflash_plan.tui.cli import main

MAX_EPOCHS = 6


@pytest.fixture(scope="module")
def small(catalog, baseline):
    return default_space(baseline, catalog, ("b200", "rtx-pro-6000"), max_gpus=8)


def _with_epochs(plan, epochs):
    return plan.model_copy(update={"workload": plan.workload.model_copy(update={"epochs": epochs})})


def _judged_tau(catalog, plan, epochs, at):
    """Tau of `epochs` passes over the plan's samples, straight from the curve."""
    central, low, _ = acceptance.tau_at(
        accept.curve_inputs(resolve(plan, catalog)),
        np.asarray([float(plan.workload.samples) * epochs]),
    )
    return float((low if at == "pessimistic" else central)[0])


@pytest.fixture(scope="module")
def every_epochs(catalog, baseline, small):
    """The search at every epochs count of the space, by end judged."""
    return {
        (e, at): search(_with_epochs(baseline, e), catalog, small, Constraints(at=at))
        for e in range(1, MAX_EPOCHS + 1)
        for at in AT_CHOICES
    }


@pytest.mark.parametrize("at", AT_CHOICES)
@pytest.mark.parametrize("target_epochs", [1, 3])
def test_the_epochs_chosen_are_the_fewest_that_reach_the_target(
    catalog, baseline, small, every_epochs, at, target_epochs
):
    # A target exactly at the tau of `target_epochs` (at the end judged): that count
    # reaches it, one fewer does not (the curve rises with passes).
    min_tau = _judged_tau(catalog, baseline, target_epochs, at)
    found = search_objective(
        baseline,
        catalog,
        small,
        Constraints(at=at),
        Goal("time-to-tau", min_tau, MAX_EPOCHS),
    )
    assert found.outcome is not None and found.outcome.epochs == target_epochs
    reaching = [
        e for e in range(1, MAX_EPOCHS + 1) if _judged_tau(catalog, baseline, e, at) >= min_tau
    ]
    assert min(reaching) == target_epochs
    # Brute force over epochs and configurations: the fastest and the cheapest plan that
    # reaches the target (the front's figures: central days and cost of the plans that
    # meet the constraints at `at`).
    plans = [c for e in reaching for c in every_epochs[(e, at)].front]
    fastest = min(plans, key=lambda c: (c.days, c.cost))
    cheapest = min(plans, key=lambda c: (c.cost, c.days))
    assert found.winner is not None
    assert (found.winner.days, found.winner.cost) == (fastest.days, fastest.cost)
    assert (found.result.front[-1].cost, found.result.front[-1].days) == (
        cheapest.cost,
        cheapest.days,
    )
    assert all(c.plan.workload.epochs == target_epochs for c in found.result.front)
    # The projection of the winner's plan says the same tau (one model).
    assert found.outcome.tau_range[0] <= found.outcome.tau <= found.outcome.tau_range[1]


def test_the_pessimistic_end_needs_more_epochs(catalog, baseline, small):
    min_tau = _judged_tau(catalog, baseline, 2, "central")
    central = search_objective(
        baseline, catalog, small, Constraints(at="central"), Goal("time-to-tau", min_tau)
    )
    pessimistic = search_objective(
        baseline, catalog, small, Constraints(), Goal("time-to-tau", min_tau)
    )
    assert central.outcome is not None and pessimistic.outcome is not None
    assert central.outcome.epochs == 2 < pessimistic.outcome.epochs


def test_objective_tau_is_the_most_epochs_the_budget_allows(catalog, baseline, small, every_epochs):
    # A budget between the cheapest plan's cost at 3 and at 4 epochs.
    at = "pessimistic"
    cost = [every_epochs[(e, at)].front[-1].judged(at)[1] for e in range(1, MAX_EPOCHS + 1)]
    budget = (cost[2] + cost[3]) / 2
    found = search_objective(
        baseline, catalog, small, Constraints(budget=budget), Goal("tau", None, MAX_EPOCHS)
    )
    feasible = [e for e in range(1, MAX_EPOCHS + 1) if cost[e - 1] <= budget]
    assert found.outcome is not None and found.outcome.epochs == max(feasible) == 3
    assert found.winner is not None and found.winner.judged(at)[1] <= budget
    assert found.winner.judged(at)[1] == cost[2]


def test_speedup_per_cost_is_the_best_over_every_epochs_count(
    catalog, baseline, small, every_epochs
):
    at = "pessimistic"
    found = search_objective(
        baseline, catalog, small, Constraints(), Goal("speedup-per-cost", None, MAX_EPOCHS)
    )
    assert found.outcome is not None and found.winner is not None
    values = {}
    for t in found.tried:
        cheapest = every_epochs[(t.outcome.epochs, at)].front[-1]
        assert t.cost == cheapest.judged(at)[1]
        values[t.outcome.epochs] = (t.outcome.judged_speedup(at) - 1) / t.cost
    assert sorted(values) == list(range(1, MAX_EPOCHS + 1))
    best = max(values.values())
    assert found.outcome.epochs == min(e for e, v in values.items() if v == best)


@pytest.mark.parametrize(
    ("argv", "names"),
    [
        (
            ["--objective", "time-to-tau", "--min-tau", "9"],
            ["--min-tau 9", "above what the curve reaches for dflash on qwen3-8b", "at most"],
        ),
        (
            ["--objective", "time-to-tau", "--min-tau", "6.5"],
            ["--min-tau 6.5", "--max-epochs 10", "at most"],
        ),
        (["--objective", "tau", "--min-tau", "3.8", "--budget", "500"], ["--min-tau 3.8"]),
        (["--objective", "tau"], ["--objective tau", "--budget"]),
        (["--objective", "time-to-tau"], ["--objective time-to-tau", "--min-tau"]),
        (["--min-tau", "3.8"], ["--min-tau 3.8", "--objective"]),
        (["--max-epochs", "4"], ["--max-epochs 4", "--objective"]),
        (["--objective", "time-to-tau", "--min-tau", "3", "--max-epochs", "0"], ["--max-epochs 0"]),
        (["--objective", "time-to-tau", "--min-tau", "-1"], ["--min-tau -1"]),
        (["--objective", "fastest"], ["--objective", "'fastest'"]),
    ],
)
def test_bad_objective_flags_are_one_line(capsys, argv, names):
    assert main(["search", "--gpus", "b200", "--max-gpus", "4", *argv]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1 and "Traceback" not in err
    for name in names:
        assert name in err, err


def test_a_target_within_the_curve_but_beyond_max_epochs_says_so(capsys, catalog, baseline):
    at_most = _judged_tau(catalog, baseline, 2, "pessimistic")
    argv = ["search", "--gpus", "b200", "--max-gpus", "4", "--objective", "time-to-tau"]
    assert main([*argv, "--min-tau", f"{at_most + 0.01:.3f}", "--max-epochs", "2"]) != 0
    err = capsys.readouterr().err.strip()
    assert len(err.splitlines()) == 1
    assert "--max-epochs 2" in err and "workload.samples" in err


# The keys of the `objective` block of `search --json` (README, "Searching and comparing").
OBJECTIVE_KEYS = {
    "objective",
    "min_tau",
    "max_epochs",
    "at",
    "outcome",
    "winner",
    "why_none",
    "tried",
}
OUTCOME_KEYS = {"epochs", "sample_passes", "tau", "tau_range", "speedup", "speedup_range"}


def test_objective_json_keys(capsys, tmp_path):
    argv = ["search", "--gpus", "b200", "--max-gpus", "8", "--json", "-o", str(tmp_path)]
    assert main([*argv, "--objective", "time-to-tau", "--min-tau", "3.5"]) == 0
    doc = json.loads(capsys.readouterr().out)
    # The objective's plan is written too, its epochs chosen, and it projects the same tau.
    written = tmp_path / "time-to-tau.toml"
    assert main(["project", str(written), "--json"]) == 0
    projected = json.loads(capsys.readouterr().out)
    assert projected["acceptance"]["tau"] == doc["objective"]["outcome"]["tau"]
    block = doc["objective"]
    assert set(block) == OBJECTIVE_KEYS
    assert set(block["outcome"]) == OUTCOME_KEYS
    assert block["outcome"]["tau_range"][0] >= 3.5
    assert set(block["winner"]) >= OUTCOME_KEYS
    for row in doc["front"]:
        assert row["epochs"] == block["outcome"]["epochs"] == row["plan"]["workload"]["epochs"]
        assert row["tau"] == block["outcome"]["tau"]
        # One model: each row's own projection says the same tau and range.
        assert row["projection"]["acceptance"]["tau"] == row["tau"]
        assert row["projection"]["acceptance"]["tau_range"] == row["tau_range"]
    assert block["winner"]["judged_days"] == doc["front"][0]["judged_days"]


def test_without_an_objective_the_json_has_no_objective_block(capsys):
    assert main(["search", "--gpus", "b200", "--max-gpus", "4", "--json"]) == 0
    doc = json.loads(capsys.readouterr().out)
    assert "objective" not in doc and "epochs" not in doc["front"][0]


# The README's answer to "the cheapest plan to reach tau >= 3.8 for Qwen3-8B" (the
# built-in plan's target), as `search` prints it.
README_COMMAND = (
    "dflash-plan search --objective time-to-tau --min-tau 3.8 --gpus b200,b300,h200,rtx-pro-6000"
)


def test_the_readmes_tau_answer_is_what_search_prints(capsys, monkeypatch):
    from pathlib import Path

    monkeypatch.setenv("COLUMNS", "200")
    readme = (Path(__file__).parents[2] / "README.md").read_text()
    assert f"$ {README_COMMAND}\n" in readme
    assert main(README_COMMAND.split()[1:]) == 0
    said = [
        line
        for line in capsys.readouterr().out.splitlines()
        if line.startswith(("tau >= 3.8", "fastest reaching", "cheapest reaching"))
    ]
    assert len(said) == 3
    for line in said:
        assert f"  {line}\n" in readme, line
