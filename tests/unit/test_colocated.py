"""The colocated topology: every GPU time-shares the target forward and the drafter step
(physics/colocated.py), its fitted efficiency, its memory, and the topology verdict."""

from __future__ import annotations

import numpy as np
import pytest
from dflash_plan.model.core.labels import split_label
from dflash_plan.model.core.projection import project
from dflash_plan.model.core.scenarios import COLOCATION, HIGH, LOW
from dflash_plan.model.core.stages import run_at
from dflash_plan.model.explore.balance import balance, balance_note
from dflash_plan.model.explore.compare import compare
from dflash_plan.model.explore.search import (
    Constraints,
    _variant,
    colocated_split,
    default_space,
    search,
    sweep,
)
from dflash_plan.model.inputs.targets import PRESETS
from dflash_plan.model.physics import colocated, fitting
from dflash_plan.model.physics.colocated import colocated_flow
from dflash_plan.model.physics.pipeline import flow
from support import edit


def _colocated(plan, gpu="rtx-pro-6000", targets=3, drafters=1, **workload):
    return edit(
        plan,
        target={"gpu": gpu, "count": targets},
        drafter={"gpu": gpu, "count": drafters},
        workload={"topology": "colocated", **workload},
    )


def test_the_fitted_efficiency_is_each_runs_rate_over_the_time_shared_rate():
    # Each colocated run of SpecForge's DFlash2 recipe (PR #869) against the per-GPU rates
    # its table's disaggregated splits bound (rate / targets, rate / drafters, the largest):
    # 8 x H200: target 6.82 / 3 (3 + 5), drafter 10.65 / 3 (5 + 3); colocated 8.61.
    h200 = 8.61 / (8 / (3 / 6.82 + 3 / 10.65))
    # 8 x B300: target 22.4 / 3 (3 + 5, device receive), drafter 18.3 / 4 (4 + 4, device
    # receive); colocated 18.9.
    b300 = 18.9 / (8 / (3 / 22.4 + 4 / 18.3))
    # 16 x H200: target 17.98 / 8 (8 + 8, TCP), drafter 20.41 / 6 (10 + 6); colocated 16.04.
    h200_2 = 16.04 / (16 / (8 / 17.98 + 6 / 20.41))
    c = fitting.BY_NAME["COLOCATION_EFFICIENCY"]
    cases = fitting.cases_by_id(c.fitted_on)
    implied = [c.implied(cases[i], {})[0] for i in c.fitted_on]
    assert implied == pytest.approx([h200, b300, h200_2])
    assert pytest.approx((h200 + b300 + h200_2) / 3) == colocated.COLOCATION_EFFICIENCY
    assert pytest.approx((h200_2, b300)) == colocated.COLOCATION_EFFICIENCY_RANGE
    # About 0.74, 0.83 and 0.78: the range is 0.74-0.83.
    assert round(h200_2, 2) == 0.74 and round(b300, 2) == 0.83


def test_the_colocated_rate_is_the_time_shared_rate_of_every_gpu(catalog, baseline):
    p = project(_colocated(baseline), catalog)
    # The built-in workload's RTX PRO 6000 rates: target 4,933.3 tok/s per GPU (measured,
    # TP 1), drafter 14,799.9 (the rate it kept up with); 4 drafter ranks inside one node
    # hide their all-reduce (scaling 1).
    assert p.target.per_gpu_tokens_per_s == 4933.3
    assert p.drafter.per_gpu_tokens_per_s == pytest.approx(14799.9)
    assert float(p.flow.drafter_scaling) == 1.0
    time_shared = 4 / (1 / 4933.3 + 1 / 14799.9)  # 14,800 tok/s on 4 GPUs
    expected = colocated.COLOCATION_EFFICIENCY * time_shared
    assert p.tokens_per_s == pytest.approx(expected)
    assert p.bottleneck == "time-shared"
    # Each GPU's time: 1/4,933.3 of a token on the target, 1/14,799.9 on the drafter.
    target_share = (1 / 4933.3) / (1 / 4933.3 + 1 / 14799.9)
    assert p.time_shares == pytest.approx((target_share, 1 - target_share))
    # Every GPU runs both roles; no hidden states cross a link (no store).
    assert p.target.count == p.drafter.count == 4
    assert p.store_memory is None


def test_a_colocated_plans_gpus_are_its_two_counts_summed(catalog, baseline):
    # 5 + 3 and 4 + 4 colocated are the same 8-GPU plan.
    a = project(_colocated(baseline, "b300", 5, 3), catalog)
    b = project(_colocated(baseline, "b300", 4, 4), catalog)
    assert a.tokens_per_s == b.tokens_per_s


def test_arrays_of_gpus_equal_one_count_at_a_time(catalog, baseline):
    inputs = project(_colocated(baseline, "b200"), catalog).inputs
    gpus = np.arange(1, 33)
    many = colocated_flow(inputs, gpus)
    for i, n in enumerate(gpus):
        assert float(many.tokens_per_s[i]) == pytest.approx(
            float(colocated_flow(inputs, int(n)).tokens_per_s)
        )


def test_run_at_runs_the_plans_topology(catalog, baseline):
    p = project(_colocated(baseline, "b300", 5, 3), catalog)
    assert p.run_inputs is not None
    own = run_at(p.run_inputs, 5, 3)
    assert float(own.tokens_per_s) == p.tokens_per_s
    assert float(own.days) == pytest.approx(p.days)
    # 16 GPUs run the colocated flow of 16 (any split of them).
    sixteen = run_at(p.run_inputs, np.array([8, 10]), np.array([8, 6]))
    assert np.asarray(sixteen.tokens_per_s) == pytest.approx(
        [float(colocated_flow(p.inputs, 16).tokens_per_s)] * 2
    )


def test_the_verdict_puts_colocated_against_the_best_split_of_the_same_gpus(catalog, baseline):
    plan = edit(baseline, target={"gpu": "b300", "count": 7}, drafter={"gpu": "b300", "count": 1})
    p = project(plan, catalog)
    v = p.topology_verdict
    assert v is not None and v.topology == "disaggregated" and v.gpus == 8
    # Every split of the 8 GPUs through the pipeline, one at a time: the best one.
    rates = {t: float(flow(p.inputs, t, 8 - t).tokens_per_s) for t in range(1, 8)}
    best = max(rates.values())
    targets = max(t for t, rate in rates.items() if rate >= best * (1 - 1e-9))
    assert v.disaggregated_split == (targets, 8 - targets)
    assert v.disaggregated_tokens_per_s == pytest.approx(best)
    assert v.colocated_tokens_per_s == pytest.approx(
        float(colocated_flow(p.inputs, 8).tokens_per_s)
    )
    high = max(v.colocated_tokens_per_s, best)
    low = min(v.colocated_tokens_per_s, best)
    assert v.winner == ("colocated" if v.colocated_tokens_per_s > best else "disaggregated")
    assert v.speedup == pytest.approx(high / low) and v.speedup >= 1
    # The colocated plan of the same GPUs has the same verdict, its own topology named.
    c = project(_colocated(baseline, "b300", 7, 1), catalog).topology_verdict
    assert c is not None and c.topology == "colocated"
    assert c.colocated_tokens_per_s == p.topology_verdict.colocated_tokens_per_s
    assert p.to_json()["topology"] == v.to_json()


def test_no_verdict_where_the_plan_cannot_run_both_ways(catalog, baseline):
    two_types = edit(baseline, drafter={"gpu": "b200"})
    offline = edit(baseline, workload={"mode": "offline"})
    for plan in (two_types, offline):
        p = project(plan, catalog)
        assert p.topology_verdict is None and p.to_json()["topology"] is None


def test_a_colocated_gpu_that_cannot_hold_both_roles_does_not_fit(catalog, baseline):
    # An L40S (48 GB) holds the Qwen3-8B target shard (bf16, TP 1) or the drafter rank,
    # not both: one error, naming the colocated GPU and the topology key.
    p = project(_colocated(baseline, "l40s"), catalog)
    assert not p.fits and p.tokens_per_s is None
    d = p.unfit
    assert d is not None and d.key == "workload.topology"
    assert d.message.startswith("colocated GPU (target shard + drafter rank) does not fit")
    # What the GPU holds: the target's items and the drafter's, one runtime reserve.
    items = dict(p.target.memory.items_gb)
    assert sum(1 for name in items if "reserve" in name) == 1
    assert {"target weights", "drafter weights", "drafter optimizer state"} <= set(items)
    assert p.target.memory.needed_gb > 48
    v = p.topology_verdict
    assert v is not None and not v.colocated_fits


def test_search_both_topologies_lists_each_kind_and_names_the_winner_per_gpu(catalog, baseline):
    space = default_space(
        baseline, catalog, ("b200", "b300"), max_gpus=8, topologies=("disaggregated", "colocated")
    )
    swept = sweep(baseline, catalog, space)
    # Colocated: one configuration per GPU count, whole replicas, at least two of them:
    # tp 1: 2..8 (7), tp 2: 4, 6, 8 (3), tp 4: 8 (1), tp 8: none; per GPU type.
    colocated_blocks = [b for b in swept.blocks if b.topology == "colocated"]
    assert sum(b.covered for b in colocated_blocks) == 2 * (7 + 3 + 1)
    result = search(baseline, catalog, space, Constraints())
    assert result.topologies == ("disaggregated", "colocated")
    # Each GPU type's winner is the faster of its two fastest plans, each the minimum of
    # its topology's projected days over every plan of that kind (enumerated here).
    for win in result.topology_wins:
        for topology, fastest in win.fastest.items():
            days = []
            for tp in (1, 2, 4):
                for gpus in range(2 * tp, 9, tp):
                    if topology == "colocated":
                        pairs = [colocated_split(gpus, tp)] if gpus % tp == 0 else []
                    else:
                        pairs = [(t, gpus - t) for t in range(tp, gpus, tp)]
                    for t, d in pairs:
                        plan = _variant(baseline, win.gpu, win.gpu, tp, t, d, None, topology)
                        p = project(plan, catalog)
                        if p.job_days is not None:
                            days.append(p.job_days)
            assert fastest.days == pytest.approx(min(days), rel=1e-12)
        faster = min(win.fastest, key=lambda t: win.fastest[t].days)
        assert win.winner == faster
    assert {w.gpu for w in result.topology_wins} == {"b200", "b300"}
    # A colocated candidate's plan is colocated and projects to the sweep's figures.
    for c in result.front:
        assert c.projection.topology == c.topology
    doc = result.to_json()
    assert doc["topologies"] == ["disaggregated", "colocated"]
    assert [w["gpu"] for w in doc["topology_wins"]] == ["b200", "b300"]


def test_search_of_a_colocated_plan_searches_colocated_plans_by_default(catalog, baseline):
    plan = _colocated(baseline, "b300", 4, 4)
    space = default_space(plan, catalog, ("b300",), max_gpus=8)
    assert space.topologies == ("colocated",)
    result = search(plan, catalog, space, Constraints())
    assert result.front and all(c.topology == "colocated" for c in result.front)
    assert result.topology_wins == ()  # one topology searched: nothing to name
    for c in result.front:
        p = c.projection
        assert c.days == pytest.approx(p.job_days)
        assert (p.plan.target.count + p.plan.drafter.count) % p.plan.target.tp == 0


def test_balance_of_a_colocated_plan_leaves_it_and_names_the_best_split(catalog, baseline):
    plan = _colocated(baseline, "b300", 5, 3)
    assert balance(plan, catalog) is plan
    note = balance_note(plan, catalog)
    v = project(plan, catalog).topology_verdict
    assert v is not None and note is not None
    targets, drafters = v.disaggregated_split
    assert note.startswith("colocated: each of the 8 GPUs runs both roles, no split to balance")
    assert f"{targets} + {drafters}" in note
    # The split balance picks on the same GPUs disaggregated is the verdict's.
    disaggregated = edit(plan, workload={"topology": "disaggregated"})
    assert balance(disaggregated, catalog).target.count == targets
    assert balance_note(disaggregated, catalog) is None


def test_compare_says_each_plans_topology(catalog, baseline):
    a = edit(baseline, target={"gpu": "b300", "count": 5}, drafter={"gpu": "b300", "count": 3})
    b = _colocated(baseline, "b300", 5, 3)
    pa, pb = project(a, catalog), project(b, catalog)
    c = compare(pb, pa)
    assert "topology disaggregated -> colocated" in c.why
    # Same GPUs, same verdict; the speed is the colocated rate over the split's.
    assert c.speedup == pytest.approx(pb.tokens_per_s / pa.tokens_per_s)
    assert split_label(b, {"b300": "B300"}) == "8 B300 colocated"


def _recipe_model():
    case = next(iter(fitting.cases_by_id(fitting.COLOCATED_SPLITS).values()))
    return fitting.case_model(case)


def test_the_colocation_band_is_the_fitted_range_where_its_runs_conditions_hold():
    # The efficiency's runs: SpecForge's in-process capture of Qwen3.8-27B (dense, TP1
    # servers, 4.5k-token samples) on H200 (sm90) and B300 (sm100).
    model = _recipe_model()
    for arch in ("sm90", "sm100"):
        band = colocated.efficiency_range(arch, 1, model, 4500)
        assert band == colocated.COLOCATION_EFFICIENCY_RANGE
    # Within a factor of two of their target size and sample length, still theirs.
    assert colocated.efficiency_range("sm100", 1, model, 2300) == (
        colocated.COLOCATION_EFFICIENCY_RANGE
    )


def test_outside_its_runs_conditions_the_band_reaches_the_physical_bound(catalog):
    model, central = _recipe_model(), colocated.COLOCATION_EFFICIENCY
    fitted_low, fitted_high = colocated.COLOCATION_EFFICIENCY_RANGE
    widened = (min(fitted_low, central**2), colocated.NO_INTERFERENCE)
    assert widened[0] < fitted_low and widened[1] > fitted_high
    moe = PRESETS["qwen3-30b-a3b"]
    small = PRESETS["qwen3-8b"]
    for arch, tp, target, tokens in (
        ("sm120", 1, model, 4500),  # RTX PRO 6000: no colocated run on its family
        ("sm90", 2, model, 4500),  # a TP island of two
        ("sm90", 1, moe, 4500),  # an MoE target
        ("sm90", 1, small, 4500),  # a third of the runs' target
        ("sm90", 1, model, 1000),  # samples a fifth as long
    ):
        assert colocated.efficiency_range(arch, tp, target, tokens) == widened, (arch, target)


def test_a_colocated_plan_outside_the_conditions_spans_the_widened_band(catalog, baseline):
    p = project(_colocated(baseline), catalog)
    s = p.scenarios
    assert s is not None
    low, high = s.colocation_range
    assert (low, high) == colocated.efficiency_range(
        "sm120", 1, PRESETS["qwen3-8b"], baseline.workload.avg_sample_tokens
    )
    assert high == colocated.NO_INTERFERENCE
    # The rate at each end of the band is that efficiency x the time-shared rate.
    time_shared = float(p.tokens_per_s) / colocated.COLOCATION_EFFICIENCY
    assert float(s.flow({COLOCATION: HIGH}).tokens_per_s) == pytest.approx(time_shared)
    assert float(s.flow({COLOCATION: LOW}).tokens_per_s) == pytest.approx(low * time_shared)
