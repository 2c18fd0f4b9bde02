"""The pipeline against the user's measured run and the physics of each limit."""

from __future__ import annotations

import pytest
from dflash_plan.model.core.projection import project, target_roofline
from dflash_plan.model.core.scenarios import efficiency_band
from dflash_plan.model.explore.balance import balance
from dflash_plan.model.explore.compare import compare
from dflash_plan.model.inputs.catalog import Catalog
from dflash_plan.model.inputs.hardware import load_gpu_file
from dflash_plan.model.inputs.plan import default_plan
from dflash_plan.model.inputs.targets import PRESETS
from dflash_plan.model.physics import pipeline
from dflash_plan.model.physics.work import target_work
from support import CONTRACT, ROLE_CONTRACT, edit

# docs/workload.md, the measured run: 3 targets + 1 drafter on RTX PRO 6000, 14.8 Ktok/s, 6 epochs in 8.8 days.
MEASURED_TOKENS_PER_S = 14_800
MEASURED_DAYS = 8.8


def test_default_plan_reproduces_the_measured_run(catalog, baseline):
    p = project(baseline, catalog)
    assert p.tokens_per_s == pytest.approx(MEASURED_TOKENS_PER_S, rel=0.005)
    assert p.days == pytest.approx(MEASURED_DAYS, rel=0.01)
    assert p.bottleneck == "target"
    assert p.target.source == "measured" and p.drafter.source == "estimated"
    # The drafter's queue stayed empty: it keeps up with the measured rate. Its estimate
    # (sm120 has no DFlash-family measurement: the measured families' share of the ceiling)
    # falls below it, so the measured lower bound holds it at 14,799.9.
    assert p.drafter.capacity_tokens_per_s >= 14_799.9
    assert p.target.utilization == pytest.approx(1.0)


def test_seven_targets_with_a_measured_drafter(catalog, baseline):
    plan = edit(
        baseline,
        target={"count": 7},
        calibration={"target": {"rtx-pro-6000": 4933.3}, "drafter": {"rtx-pro-6000": 40_000}},
    )
    p = project(plan, catalog)
    # the hand projection (docs/workload.md): 14.8 x 7/3 = 34.5 Ktok/s, about 3.8 days.
    assert p.ktok_per_s == pytest.approx(34.5, rel=0.02)
    assert p.days == pytest.approx(3.8, rel=0.02)
    assert p.bottleneck == "target"


def test_seven_targets_with_the_single_estimated_drafter_says_it_binds(catalog, baseline):
    base = project(baseline, catalog)
    p = project(edit(baseline, target={"count": 7}), catalog)
    assert p.bottleneck == "drafter"
    assert p.tokens_per_s == pytest.approx(base.drafter.capacity_tokens_per_s)
    assert p.tokens_per_s < 7 / 3 * MEASURED_TOKENS_PER_S
    assert p.marginal_target_tokens_per_s == 0


def test_marginal_gains_inside_and_beyond_one_node(catalog, baseline):
    six = project(edit(baseline, target={"count": 6}), catalog)  # 6 + 1: drafter-bound
    assert six.bottleneck == "drafter" and six.marginal_target_tokens_per_s == 0
    # A second drafter in the same 8-GPU node lifts the rate to the targets' 6 x 4,933.
    assert six.marginal_drafter_tokens_per_s == pytest.approx(6 * 4933.3 - six.tokens_per_s)
    # 7 + 2 puts the ninth GPU on a second node. The drafters' all-reduce of 2.1 GB of bf16
    # gradients then takes 2.1 GB / 50 GB/s over PCIe (0.042 s) plus 2.1 GB / 25 GB/s
    # over the node's 200 Gb/s NIC (0.084 s): 0.126 s, hidden under the backward pass
    # (2/3 of a 2 x 2,344-token step at the drafter's 14.8 Ktok/s = 0.211 s). So the second
    # drafter adds a whole drafter, up to what the 7 targets feed.
    seven = project(edit(baseline, target={"count": 7}), catalog)
    nine = project(edit(baseline, target={"count": 7}, drafter={"count": 2}), catalog)
    assert nine.link.nodes == 2 and nine.drafter.scaling_efficiency == 1.0
    one = seven.drafter.capacity_tokens_per_s
    assert seven.marginal_drafter_tokens_per_s == pytest.approx(
        min(7 * 4933.3, 2 * one) - seven.tokens_per_s
    )


def test_a_drafter_on_a_second_node_never_costs_capacity(catalog, baseline):
    # 3 + 5 fills one 8-GPU node; the sixth drafter opens a second node. It must add about
    # one drafter's worth, not lose most of the pool to the all-reduce.
    plan = edit(baseline, calibration={"target": {}, "drafter": {}})
    five = project(edit(plan, drafter={"count": 5}), catalog).drafter
    six = project(edit(plan, drafter={"count": 6}), catalog).drafter
    assert six.capacity_tokens_per_s > five.capacity_tokens_per_s * 1.1


def test_a_measurement_carried_to_another_gpu_spans_its_readings(catalog, baseline):
    b200 = project(edit(baseline, target={"gpu": "b200"}, drafter={"gpu": "b200"}), catalog)
    rate = b200.target.rate
    roof = target_roofline(b200.target_work, catalog.gpus["b200"]).tokens_per_s
    # "workload": the measured 0.31x of default efficiency carries over; both GPUs are
    # compute-bound, so the rate scales with peak (2250 / 504) and default efficiency
    # (each its family's fitted share of its own matmul ceiling).
    b200_eff = catalog.gpus["b200"].prefill_efficiency
    rtx_eff = catalog.gpus["rtx-pro-6000"].prefill_efficiency
    workload = 4933.3 * (2250 / 504) * (b200_eff / rtx_eff)
    # "kernels": the shortfall is the RTX PRO 6000's (sm120); the B200 (sm100) runs at its
    # own default. The targets ran 100 % busy near their power limit: no "host".
    kernels = roof * b200_eff
    assert {r.name for r in rate.readings} == {"workload", "kernels"}
    assert rate.low_tokens_per_s == pytest.approx(workload, rel=1e-6)
    # Under "kernels" the B200 runs at its family's default, itself uncertain: the high end
    # is that default at the top of the measured efficiencies' band (scenarios.py).
    band = efficiency_band("target", "sm100")
    assert rate.high_tokens_per_s == pytest.approx(kernels * band.high, rel=1e-6)
    assert rate.tokens_per_s == pytest.approx((workload * kernels) ** 0.5, rel=1e-6)
    assert b200.target.source == "estimated"


def test_without_gpu_busy_a_host_bound_reading_stays_open(catalog, baseline):
    plan = edit(
        baseline,
        target={"gpu": "b200"},
        drafter={"gpu": "b200"},
        calibration={"target": {"rtx-pro-6000": 4933.3}},
    )
    rate = project(plan, catalog).target.rate
    # host time per token = measured time - device time at default efficiency.
    work = project(baseline, catalog).target_work
    rtx, b200 = catalog.gpus["rtx-pro-6000"], catalog.gpus["b200"]
    device_s = 1 / (target_roofline(work, rtx).tokens_per_s * rtx.prefill_efficiency)
    host_s = 1 / 4933.3 - device_s
    b200_s = 1 / (target_roofline(work, b200).tokens_per_s * b200.prefill_efficiency)
    assert rate.low_reading == "host"
    assert rate.low_tokens_per_s == pytest.approx(1 / (b200_s + host_s), rel=1e-6)


def test_the_users_question_four_b200_at_3_4x(catalog, baseline):
    plan = edit(baseline, target={"gpu": "b200"}, drafter={"gpu": "b200"})
    new, base = project(plan, catalog), project(baseline, catalog)
    c = compare(new, base)
    # Per target GPU under the "workload" reading: peak x default efficiency (each the
    # family's fitted share of the GPU's ceiling): 4.46 x 0.503 / 0.484 = 4.64x.
    b200, rtx = catalog.gpus["b200"], catalog.gpus["rtx-pro-6000"]
    per_gpu_low = (2250 / 504) * (b200.prefill_efficiency / rtx.prefill_efficiency)
    # Central: the single B200 drafter binds. Low end: that drafter at the bottom of its
    # family's band (sm100's two DFlash-family sources disagree by 1.5x: scenarios.py),
    # below even the targets' "workload" reading (4.64x per target GPU).
    assert new.bottleneck == "drafter"
    assert c.speedup == pytest.approx(new.drafter.capacity_tokens_per_s / 14_799.9, rel=1e-6)
    drafter_low = new.drafter.capacity_tokens_per_s * efficiency_band("drafter", "sm100").low
    assert c.speedup_range[0] == pytest.approx(drafter_low / 14_799.9, rel=1e-6)
    assert c.speedup_range[0] < per_gpu_low
    assert c.speedup_range[0] < c.speedup < c.speedup_range[1]
    # Same GPU count, 3.4x the price per GPU-hour: cost ratio = 3.4 / speedup.
    assert c.cost_ratio == pytest.approx(3.4 / c.speedup, rel=1e-6)
    assert c.cost_ratio_range[1] == pytest.approx(3.4 * 14_799.9 / drafter_low, rel=1e-6)
    assert c.cost_ratio_range[1] < 1.15  # at worst 13 % dearer than the measured run
    # Break-even: the B200 price (in RTX PRO 6000s) at which it costs the same: 4 GPUs
    # for 1/speedup of the time, so the price ratio equals the speedup.
    assert c.break_even_price_ratio["target"] == pytest.approx(c.speedup, rel=1e-6)
    assert any("4.46x" in line and "4.30x" in line for line in c.why)  # bf16, bandwidth
    assert new.narrowing and "B200" in new.narrowing


def test_the_same_b200_run_through_a_mooncake_store(catalog, baseline):
    # SpecForge's store with host receive (specforge 0.2.0): a trainer waits for its
    # 40,960 bytes of states per token at the host rate fitted on three rigs (June's H200
    # benchmark, the DFlash2 recipe's B300 ranks, the DeepSeek-V4-Flash recipe's B200
    # ranks: about 1.75 GB/s, 23.4 us per token): more than the B200 drafter's own compute
    # time per token at 128 anchors, so the fetch more than halves the drafter.
    plan = edit(
        baseline,
        target={"gpu": "b200"},
        drafter={"gpu": "b200"},
        workload={"transport": "mooncake", "receive": "host"},
    )
    direct = project(edit(plan, workload={"transport": "direct"}), catalog)
    staged = project(plan, catalog)
    compute_s = 1 / direct.drafter.capacity_tokens_per_s
    fetch_s = 40_960 / pipeline.TRAINER_FETCH_BYTES_PER_S
    assert staged.drafter.capacity_tokens_per_s == pytest.approx(1 / (compute_s + fetch_s))
    assert staged.tokens_per_s < direct.tokens_per_s / 2


def test_b300_differs_from_b200_only_where_physics_says(catalog):
    b200, b300 = catalog.gpus["b200"], catalog.gpus["b300"]
    assert b300.bf16_tflops == b200.bf16_tflops
    model = PRESETS["qwen3-8b"]
    work = target_work(model, model.default_layer_ids(5), 3072)
    r200, r300 = target_roofline(work, b200), target_roofline(work, b300)
    # Softmax exponentials cost as much as attention's matmuls at head_dim 128: attention
    # costs 2x its matmul FLOPs on B200, 1 + 1/2 on B300. Linear layers are unchanged.
    lin, att = work.linear_flop_per_token, work.attention_flop_per_token
    assert r300.compute_tokens_per_s / r200.compute_tokens_per_s == pytest.approx(
        (lin + 2 * att) / (lin + 1.5 * att)
    )
    assert 1 < r300.compute_tokens_per_s / r200.compute_tokens_per_s < 1.2
    # Memory: gpt-oss-120b's 234 GB of bf16 weights fit one B300 (270 GB), not one B200.
    plan = edit(
        default_plan(),
        workload={"target_model": "gpt-oss-120b"},
        target={"gpu": "b200", "count": 1},
        drafter={"gpu": "b200"},
        calibration={},
    )
    assert not project(plan, catalog).target.memory.fits
    assert project(edit(plan, target={"gpu": "b300"}), catalog).target.memory.fits
    # Network: 800 vs 400 Gb/s per GPU.
    assert b300.network_bytes_per_s == 2 * b200.network_bytes_per_s


def test_roofline_has_two_limits(catalog):
    model = PRESETS["qwen3-8b"]
    work = target_work(model, model.default_layer_ids(5), 2344)
    gpu = catalog.gpus["rtx-pro-6000"]
    roof = target_roofline(work, gpu)
    assert roof.limit == "compute"
    assert roof.compute_tokens_per_s == pytest.approx(504e12 / work.time_flop(1.0))
    # The same GPU with 1/100 of the memory bandwidth: weights (13.1 GB per 2344-token
    # forward) and activations now take longer to stream than to multiply.
    slow = gpu.model_copy(update={"mem_bw_tb_s": 0.0179})
    slow_roof = target_roofline(work, slow)
    assert slow_roof.limit == "memory"
    assert slow_roof.tokens_per_s == pytest.approx(0.0179e12 / work.bytes_per_token)
    assert work.weight_bytes_per_forward == 2 * 36 * model.layer_params_total


def test_bottleneck_moves_with_the_split(catalog, baseline):
    plan = edit(baseline, calibration={"target": {}, "drafter": {}})
    splits = {
        t: project(edit(plan, target={"count": t}, drafter={"count": 8 - t}), catalog)
        for t in range(1, 8)
    }
    assert splits[1].bottleneck == "target"
    assert splits[7].bottleneck == "drafter"
    switch = [t for t in range(1, 7) if splits[t].bottleneck != splits[t + 1].bottleneck]
    assert len(switch) == 1


def test_sample_length_moves_the_bottleneck(catalog, baseline):
    plan = edit(
        baseline,
        calibration={"target": {}, "drafter": {}},
        workload={"num_anchors": 512, "max_length": 8192},
    )
    # 1 target + 2 drafters: at 600-token samples the drafters bind by 8x; at 8,000 the
    # same two drafters outrun the target.
    plan = edit(plan, target={"count": 1}, drafter={"count": 2})
    short = project(edit(plan, workload={"avg_sample_tokens": 600}), catalog)
    long = project(edit(plan, workload={"avg_sample_tokens": 8000}), catalog)
    # Drafter work per sample is set by anchors, so longer samples cost it less per token.
    assert short.bottleneck == "drafter"
    assert long.bottleneck == "target"
    per_token_short = 1 / short.drafter.capacity_tokens_per_s
    per_token_long = 1 / long.drafter.capacity_tokens_per_s
    assert per_token_long < per_token_short / 5


def test_balance_finds_the_fastest_split(catalog, baseline):
    plan = edit(baseline, target={"count": 7}, drafter={"count": 1})
    best = balance(plan, catalog)
    assert best.target.count + best.drafter.count == 8
    rates = [
        project(edit(plan, target={"count": t}, drafter={"count": 8 - t}), catalog).tokens_per_s
        for t in range(1, 8)
    ]
    assert project(best, catalog).tokens_per_s == pytest.approx(max(rates))


def test_a_70b_target_on_one_24gb_card_does_not_fit(catalog, baseline):
    plan = edit(
        baseline,
        workload={"target_model": "llama-3.3-70b-instruct"},
        target={"gpu": "rtx-4090", "count": 1},
        drafter={"gpu": "rtx-4090"},
        calibration={"target": {}, "drafter": {}},
    )
    p = project(plan, catalog)
    # 70.55 B parameters x 2 bytes = 141 GB = 131.4 GiB of weights against 24 GiB.
    assert p.target.memory.items_gb[0] == ("weights", pytest.approx(131.4, rel=0.01))
    assert not p.fits and p.tokens_per_s is None and p.days is None and p.bottleneck is None
    assert any("target does not fit" in w for w in p.warnings)
    assert p.to_json()["target"]["fits"] is False


def test_a_70b_target_across_nodes_on_a_slow_network_is_link_bound(catalog, baseline, tmp_path):
    slow = tmp_path / "slow.toml"
    slow.write_text("[b200]\nnetwork_gbps_per_gpu = 1\n")
    gpus = load_gpu_file(slow, catalog.gpus)
    plan = edit(
        baseline,
        workload={"target_model": "llama-3.3-70b-instruct"},
        target={"gpu": "b200", "count": 8, "tp": 8},
        drafter={"gpu": "b200", "count": 8},
        calibration={"target": {}, "drafter": {}},
    )
    p = project(plan, Catalog(gpus=gpus))
    assert p.link.nodes == 2 and p.link.crossing_share == 1.0
    assert p.bottleneck == "link"
    # 8 target GPUs x 1 Gb/s = 1 GB/s of NICs, of which transfers reach 142.25 / 200
    # (Mooncake's measured peak on its 8 RoCE NICs); 5 x 8192 x 2 = 81,920 bytes per token.
    assert p.tokens_per_s == pytest.approx(8 * 1e9 / 8 * (142.25 / 200) / 81_920)


def test_tensor_parallel_pays_for_its_all_reduces(catalog, baseline):
    plan = edit(
        baseline,
        calibration={"target": {}, "drafter": {}},
        target={"count": 4, "tp": 2},
        drafter={"count": 4},
    )
    pcie = project(plan, catalog).target
    nvlink = project(
        edit(plan, target={"gpu": "h100-sxm"}, drafter={"gpu": "h100-sxm"}), catalog
    ).target
    assert 0.5 < pcie.scaling_efficiency < nvlink.scaling_efficiency < 1


def test_a_calibration_beyond_the_hardware_is_flagged(catalog, baseline):
    plan = edit(
        baseline,
        target={"gpu": "b200"},
        drafter={"gpu": "b200"},
        calibration={"target": {"b200": 200_000}},
    )
    p = project(plan, catalog)
    assert any("calibration.target.b200" in w and "ceiling" in w for w in p.warnings)


def test_an_estimate_contradicting_a_measurement_is_flagged(catalog, baseline):
    # The measured 4,933 tok/s per GPU is 14 % of peak, against 45 % assumed by default.
    warnings = project(baseline, catalog).warnings
    assert any("measured 4,933 tok/s per GPU" in w and "default efficiency" in w for w in warnings)


def test_json_contract_has_the_documented_fields(catalog, baseline):
    doc = project(baseline, catalog).to_json()
    assert set(doc) >= CONTRACT
    for role in ("target", "drafter"):
        assert set(doc[role]) >= ROLE_CONTRACT | {"capacity_tokens_per_s_range"}
    assert set(doc["ranges"]) >= {"tokens_per_s", "days", "total_cost"}
    # The measured run: the target rate is measured and binds, so its ranges are points.
    assert doc["ranges"]["tokens_per_s"] == pytest.approx([doc["tokens_per_s"]] * 2)


def test_gpu_catalog_has_every_reference_gpu(catalog):
    assert set(catalog.gpus) >= {
        "rtx-pro-6000",
        "b200",
        "b300",
        "gb200",
        "h100-sxm",
        "h100-pcie",
        "h200",
        "a100-80g",
        "l40s",
        "rtx-5090",
        "rtx-4090",
        "mi300x",
        "mi325x",
        "mi355x",
    }


def _reading_figure(message: str) -> float:
    """The figure a note gives its reading: 'default efficiency 37.5 %, 19,719 tok/s'."""
    import re

    return float(re.search(r", ([\d,]+) tok/s", message).group(1).replace(",", ""))


def test_each_end_of_a_rate_band_is_named_with_its_own_figure(catalog, baseline):
    # 7 + 1 on RTX PRO 6000, the drafter known to keep up at 13,500 tok/s (inside its
    # band, below its default estimate of about 14,400): its low end is that, its high end the default
    # estimate at the top of its family's efficiency band (no measurement of sm120 yet);
    # the note must give the default reading its own figure, not the band's end.
    bound = {"rtx-pro-6000": {"tokens_per_s": 13_500, "bound": "at_least"}}
    p = project(
        edit(
            baseline,
            target={"count": 7},
            calibration={"target": baseline.calibration.target, "drafter": bound},
        ),
        catalog,
    )
    note = next(
        d for d in p.diagnostics if d.code == "carry-over-range" and d.key == "calibration.drafter"
    )
    assert note.values["low"] == pytest.approx(13_500, abs=0.5)
    assert note.values["low_reading"] == "kept up"
    default = _reading_figure(note.message.split("high if")[1])
    high = efficiency_band("drafter", "sm120").high
    assert note.values["high"] == pytest.approx(default * high, abs=1)
    assert "high if default" in note.message and f"{(high - 1) * 100:+.0f} %" in note.message
    assert f"{note.values['high']:,.0f}" not in note.message.split("high if")[1]


def test_a_gpu_without_a_measurement_states_its_band(catalog, baseline):
    # 4x B200: no measurement of the drafter on B200; its band (default efficiency, within
    # the spread of measured training efficiencies) is what the answer rests on, and the
    # report says it.
    p = project(edit(baseline, target={"gpu": "b200"}, drafter={"gpu": "b200"}), catalog)
    note = next(d for d in p.diagnostics if d.key == "calibration.drafter")
    assert note.code == "estimate-range"
    central = _reading_figure(note.message)
    band = efficiency_band("drafter", "sm100")
    assert (note.values["low"], note.values["high"]) == pytest.approx(
        (central * band.low, central * band.high), abs=1
    )
    assert f"{note.values['low']:,.0f}-{note.values['high']:,.0f} tok/s" in note.message


def test_a_role_that_mostly_waits_says_why(catalog, baseline):
    # 100,000 targets at the measured 4,933.3 tok/s each behind one drafter: the drafter
    # binds, and ceil(drafter rate / 4,933.3) targets would keep it fed.
    import math

    p = project(edit(baseline, target={"count": 100_000}), catalog)
    idle = next(d for d in p.diagnostics if d.code == "role-idle")
    assert p.bottleneck == "drafter" and idle.key == "target.count"
    # The drafter is held at its measured 14,799.9 tok/s (its estimate falls below): exactly
    # the 3 measured targets' 3 x 4,933.3.
    needed = math.ceil(p.drafter.capacity_tokens_per_s / 4_933.3 - 1e-9)
    assert idle.values["gpus_needed"] == needed == 3
    assert f"the other {100_000 - needed:,} wait" in idle.message
    # A balanced split (6 + 2) and the measured run (the drafter kept up) say nothing.
    for counts in ((6, 2), (3, 1)):
        split = edit(baseline, target={"count": counts[0]}, drafter={"count": counts[1]})
        assert not any(d.code == "role-idle" for d in project(split, catalog).diagnostics)


def test_two_b200_capture_servers_bind_on_their_copy_into_the_store(catalog, baseline):
    # 2 + 2 B200 through SpecForge's store with pinned receive (README): the drafters no
    # longer wait for their fetch, and the two capture servers' copy into the store binds:
    # 2 x CAPTURE_SINK_BYTES_PER_S (fitted on June's H200 sink and the DFlash2 recipe's B300
    # server) over 40,960 bytes of Qwen3-8B states per token.
    plan = edit(
        baseline,
        target={"gpu": "b200", "count": 2},
        drafter={"gpu": "b200", "count": 2},
        workload={"transport": "mooncake", "receive": "pinned"},
    )
    p = project(plan, catalog)
    assert p.bottleneck == "link"
    sink = min(catalog.gpus["b200"].host_link_bytes_per_s, pipeline.CAPTURE_SINK_BYTES_PER_S)
    assert p.tokens_per_s == pytest.approx(2 * sink / 40_960, rel=1e-3)
