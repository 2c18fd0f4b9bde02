"""The pipeline function: one split or arrays of splits, closed-form placement, balance."""

from __future__ import annotations

import numpy as np
import pytest
from dflash_plan.model.core.projection import project
from dflash_plan.model.explore.balance import balance
from dflash_plan.model.physics import store
from dflash_plan.model.physics.pipeline import flow, placement
from support import edit


def _brute_placement(
    targets: int, drafters: int, per_node: int, same: bool
) -> tuple[float, int, int]:
    """Place GPU by GPU: targets fill nodes first, drafters follow (same type) or take
    nodes of their own; count target-drafter pairs that share a node."""
    t_nodes = [slot // per_node for slot in range(targets)]
    if same:
        d_nodes = [slot // per_node for slot in range(targets, targets + drafters)]
    else:
        d_nodes = [10_000 + slot // per_node for slot in range(drafters)]
    local = sum(t == d for t in t_nodes for d in d_nodes) / (targets * drafters)
    return 1 - local, len(set(t_nodes) | set(d_nodes)), len(set(d_nodes))


@pytest.mark.parametrize("same", [True, False])
def test_closed_form_placement_matches_gpu_by_gpu_placement(catalog, baseline, same):
    plan = baseline if same else edit(baseline, drafter={"gpu": "b200"})
    inputs = project(plan, catalog).inputs
    for targets in range(1, 20):
        for drafters in range(1, 20):
            crossing, nodes, d_nodes, _ = placement(inputs, targets, drafters)
            assert (crossing, nodes, d_nodes) == pytest.approx(
                _brute_placement(targets, drafters, 8, same)
            ), (targets, drafters)


def test_arrays_of_splits_equal_one_split_at_a_time(catalog, baseline):
    inputs = project(
        edit(baseline, target={"gpu": "b200"}, drafter={"gpu": "b200"}), catalog
    ).inputs
    targets = np.arange(1, 40)
    drafters = np.arange(39, 0, -1)
    many = flow(inputs, targets, drafters)
    for i, (t, d) in enumerate(zip(targets, drafters, strict=True)):
        one = flow(inputs, int(t), int(d))
        assert float(many.tokens_per_s[i]) == pytest.approx(float(one.tokens_per_s))
        assert float(many.drafter_tokens_per_s[i]) == pytest.approx(float(one.drafter_tokens_per_s))


def test_a_projection_is_the_pipeline_of_its_split(catalog, baseline):
    p = project(edit(baseline, target={"count": 5}, drafter={"count": 3}), catalog)
    f = flow(p.inputs, 5, 3)
    assert p.tokens_per_s == pytest.approx(float(f.tokens_per_s))
    assert p.target.capacity_tokens_per_s == pytest.approx(5 * 4933.3)


def test_balance_is_the_best_split_project_finds(catalog, baseline):
    plan = edit(baseline, target={"count": 7}, drafter={"count": 1})
    best = balance(plan, catalog)
    assert best.target.count + best.drafter.count == 8
    rates = {
        t: project(edit(plan, target={"count": t}, drafter={"count": 8 - t}), catalog).tokens_per_s
        for t in range(1, 8)
    }
    assert project(best, catalog).tokens_per_s == pytest.approx(max(rates.values()))
    # 6 targets + 2 drafters: 6 x 4,933.3 = 29.6 Ktok/s, the drafters keep up.
    assert best.target.count == 6


def test_balance_of_thousands_of_gpus_is_one_vectorised_call(catalog, baseline):
    plan = edit(
        baseline,
        target={"count": 3000},
        drafter={"count": 1000},
        calibration={"target": {}, "drafter": {}},
    )
    best = balance(plan, catalog)
    rates = [
        project(edit(plan, target={"count": t}, drafter={"count": 4000 - t}), catalog).tokens_per_s
        or 0
        for t in (best.target.count - 1, best.target.count, best.target.count + 1)
    ]
    assert rates[1] >= max(rates[0], rates[2]) * (1 - 1e-9)


def test_tp_replicas_move_between_roles_whole(catalog, baseline):
    plan = edit(baseline, target={"count": 4, "tp": 2}, drafter={"count": 4})
    best = balance(plan, catalog)
    assert best.target.count % 2 == 0 and best.target.count + best.drafter.count == 8


@pytest.mark.parametrize("per", [4, 8])
@pytest.mark.parametrize("tp", [1, 2])
def test_the_store_weighs_the_busiest_node_of_every_split(per, tp):
    """One GPU type: targets fill nodes from the first, drafters follow (pipeline.placement).
    A node's store load grows with its capture servers and its trainer ranks, so the
    nodes store.nodes_of_split_of weighs must include, for any positive weights, the
    heaviest node found by walking every node. 4 targets + 21 drafters on 8-GPU nodes put
    8 ranks on nodes 1 and 2, where the start (4 + 4) and the last node (1) hold fewer."""
    targets = np.array([t for t in range(tp, 4 * per + 1, tp) for _ in range(1, 4 * per)])
    drafters = np.array([d for _ in range(tp, 4 * per + 1, tp) for d in range(1, 4 * per)])
    weighed = store.nodes_of_split_of(targets, drafters, tp, per, per, True)
    for server_weight, rank_weight in ((1.0, 1.0), (1.0, 0.1), (0.1, 1.0), (0.0, 1.0)):
        candidate = np.max(
            [server_weight * servers + rank_weight * ranks for servers, ranks, _ in weighed],
            axis=0,
        )
        for i, (t, d) in enumerate(zip(targets, drafters, strict=True)):
            heaviest = 0.0
            for node in range((t + d - 1) // per + 1):
                lo, hi = node * per, min((node + 1) * per, t + d)
                on_targets = max(0, min(hi, t) - lo)
                ranks = max(0, hi - max(lo, t))
                heaviest = max(heaviest, server_weight * (on_targets // tp) + rank_weight * ranks)
            assert candidate[i] == pytest.approx(heaviest), (t, d, server_weight, rank_weight)
