"""Fitted constants are computed from measurements.toml (model/physics/fitting.py): each follows
its cases, and a leave-one-group-out fold never sees the group it leaves out."""

from __future__ import annotations

import copy

import pytest
from dflash_plan.model.basics.units import BYTES_PER_GIB
from dflash_plan.model.physics import decode, fitting, memory, pipeline, roofline
from dflash_plan.model.physics.fitting import builtin_gpus

PEAK = "mooncake-vllm-pd-qwen3-8b-h800-rdma-peak"
SINK = "specforge-domino-qwen3-8b-h200-hidden-state-rate-derived"
FETCH_B2 = "specforge-domino-qwen3-8b-h200-trainer-memory-b2"
FETCH_B8 = "specforge-domino-qwen3-8b-h200-trainer-memory-b8"
CAPTURE = "specforge-qwen3-8b-h200-capture-server-memory-mf050"
MICRO_B8 = "specforge-domino-qwen3-8b-h200-microbench-b8-memory"
MOE_B300 = "mbridge-b300-gptoss120b-bf16-pretrain"
TITAN = "torchtitan-a100-llama3-8b-bf16-mfu"
FOUNDRY = "llmfoundry-a100-mpt-7b-bf16-seq8192-mfu"
# Qwen3-8B: 5 captured layers x hidden 4096 x 2 bytes of bf16 per token.
BYTES_PER_TOKEN = 5 * 4096 * 2


@pytest.fixture()
def cases():
    """A private copy of every case a constant uses, to edit."""
    return copy.deepcopy(fitting.cases_by_id(fitting.all_case_ids()))


def test_slope_through_origin_is_least_squares():
    # sum(x y) = 1*2 + 2*4 + 3*7 = 31; sum(x^2) = 1 + 4 + 9 = 14.
    assert fitting.slope_through_origin([1, 2, 3], [2, 4, 7]) == pytest.approx(31 / 14)
    # 10 at m = 0, 14 at m = 1: 20 is reached at m = (20 - 10) / 4.
    assert fitting.linear_root(10, 14, 20) == pytest.approx(2.5)


def test_network_efficiency_is_the_measured_share_of_the_nic_rate(cases):
    # Mooncake: 142.25 GB/s of about 200 GB/s.
    assert fitting.fit_all(cases)["NETWORK_EFFICIENCY"] == pytest.approx(142.25 / 200)
    cases[PEAK]["value"] = 100e9
    assert fitting.fit_all(cases)["NETWORK_EFFICIENCY"] == pytest.approx(0.5)


def test_capture_sink_is_one_vote_per_rig(cases):
    # June (SpecForge's H200 benchmark): 44-57 samples/s of 550-token samples, midpoint
    # 50.5 x 550 x 40,960 bytes/s; September (the DFlash2 recipe): a B300 server published
    # 7.2 samples/s of 277 MB. The mean of the two rigs.
    june, september = 50.5 * 550 * BYTES_PER_TOKEN, 7.2 * 277e6
    assert fitting.fit_all(cases)["CAPTURE_SINK_BYTES_PER_S"] == pytest.approx(
        (june + september) / 2
    )
    cases[SINK]["sink_samples_per_s"] = [40, 60]
    assert fitting.fit_all(cases)["CAPTURE_SINK_BYTES_PER_S"] == pytest.approx(
        (50 * 550 * BYTES_PER_TOKEN + september) / 2
    )


def test_trainer_fetch_is_one_vote_per_rig(cases):
    # June: 20 ms for 2 samples and 90 ms for 8 (550 tokens each), time = bytes / rate
    # through the origin, so rate = sum(b^2) / sum(b t). September: the recipe's B300 rank
    # (8 x 277 MB in the 3.0 - 1.7 s its step lost to host receive) and the
    # DeepSeek-V4-Flash recipe's B200 rank (about 10 GiB in about 7 s). The mean of the three.
    b2, b8 = 2 * 550 * BYTES_PER_TOKEN, 8 * 550 * BYTES_PER_TOKEN
    june = (b2**2 + b8**2) / (b2 * 0.020 + b8 * 0.090)
    assert june == pytest.approx(2.0157e9, rel=1e-4)
    recipe, dsv4 = 8 * 277e6 / 1.3, 10 * 2**30 / 7
    rate = fitting.fit_all(cases)["TRAINER_FETCH_BYTES_PER_S"]
    assert rate == pytest.approx((june + recipe + dsv4) / 3, rel=1e-3)
    cases[FETCH_B8]["fetch_ms"] = 80
    june80 = (b2**2 + b8**2) / (b2 * 0.020 + b8 * 0.080)
    assert fitting.fit_all(cases)["TRAINER_FETCH_BYTES_PER_S"] == pytest.approx(
        (june80 + recipe + dsv4) / 3, rel=1e-3
    )


def test_capture_reserve_is_what_the_server_held_beyond_its_static_pool(cases):
    # 78 GB at mem_fraction_static 0.5 of an H200's 141 GiB.
    assert fitting.fit_all(cases)["RUNTIME_RESERVE_GIB"] == pytest.approx(78 - 0.5 * 141)
    cases[CAPTURE]["value"] = 80
    assert fitting.fit_all(cases)["RUNTIME_RESERVE_GIB"] == pytest.approx(80 - 0.5 * 141)


def test_activation_multiple_reproduces_its_case(cases):
    h200 = builtin_gpus()["h200"]
    for gb in (87.0, 95.0):
        cases[MICRO_B8]["value"] = gb
        m = fitting.fit_all(cases)["ACTIVATION_IO_MULTIPLE"]
        fit = fitting.case_drafter_memory(cases[MICRO_B8], h200, m, 0.0)
        assert fit.needed_gb * BYTES_PER_GIB / 1e9 == pytest.approx(gb)
    assert fitting.fit_all(cases)["ACTIVATION_IO_MULTIPLE"] > fitting.value(
        "ACTIVATION_IO_MULTIPLE"
    )


def test_trainer_reserve_follows_its_case_gib_for_gib(cases):
    before = fitting.fit_all(cases)["TRAINER_RUNTIME_RESERVE_GIB"]
    cases[FETCH_B2]["value"] += 5
    assert fitting.fit_all(cases)["TRAINER_RUNTIME_RESERVE_GIB"] == pytest.approx(before + 5)


def test_moe_factor_is_measured_over_the_dense_prediction(cases):
    before = fitting.fit_all(cases)["MOE_EFFICIENCY_FACTOR"]
    cases[MOE_B300]["value"] /= 2
    assert fitting.fit_all(cases)["MOE_EFFICIENCY_FACTOR"] == pytest.approx(before / 2)


def test_dense_training_share_is_the_mean_of_two_groups(cases):
    # torchtitan 58.2 % and llm-foundry 54.47 % MFU on A100, over its 86.9 % matmul
    # ceiling (stas00: 271.2 of 312 TFLOPS).
    ceiling = 271.2 / 312
    share = fitting.fit_all(cases)["DENSE_TRAINING_SHARE"]
    assert share == pytest.approx((0.582 + 0.5447) / 2 / ceiling, rel=1e-3)
    cases[FOUNDRY]["value"] = 0.5
    assert fitting.fit_all(cases)["DENSE_TRAINING_SHARE"] == pytest.approx(
        (0.582 + 0.5) / 2 / ceiling, rel=1e-3
    )


def test_module_constants_are_the_fits():
    assert memory.RUNTIME_RESERVE_GIB == fitting.value("RUNTIME_RESERVE_GIB") == 7.5
    assert fitting.value("ACTIVATION_IO_MULTIPLE") == memory.ACTIVATION_IO_MULTIPLE
    assert fitting.value("TRAINER_RUNTIME_RESERVE_GIB") == memory.TRAINER_RUNTIME_RESERVE_GIB
    assert fitting.value("NETWORK_EFFICIENCY") == pipeline.NETWORK_EFFICIENCY
    assert fitting.value("CAPTURE_SINK_BYTES_PER_S") == pipeline.CAPTURE_SINK_BYTES_PER_S
    assert fitting.value("TRAINER_FETCH_BYTES_PER_S") == pipeline.TRAINER_FETCH_BYTES_PER_S
    assert fitting.value("MOE_EFFICIENCY_FACTOR") == roofline.MOE_EFFICIENCY_FACTOR
    assert fitting.value("DENSE_TRAINING_SHARE") == roofline.DENSE_TRAINING_SHARE
    # A100 has no DFlash-family trainer case: the measured families' share of its ceiling.
    a100 = builtin_gpus()["a100-80g"]
    assert a100.training_efficiency == pytest.approx(
        fitting.value("TRAINING_SHARE") * a100.efficiency_ceiling
    )


def test_a_fold_never_sees_the_group_it_leaves_out(cases):
    # Leaving torchtitan out, the dense share is llm-foundry's alone, whatever torchtitan
    # measured; with all groups in, torchtitan's value moves it.
    ceiling = 271.2 / 312
    fold = fitting.fit_all(cases, leave_out="torchtitan")["DENSE_TRAINING_SHARE"]
    assert fold == pytest.approx(0.5447 / ceiling, rel=1e-3)
    cases[TITAN]["value"] = 0.9
    assert fitting.fit_all(cases, leave_out="torchtitan")["DENSE_TRAINING_SHARE"] == fold
    assert fitting.fit_all(cases)["DENSE_TRAINING_SHARE"] == pytest.approx(
        (0.9 + 0.5447) / 2 / ceiling, rel=1e-3
    )
    # A family measured by one group alone falls back to the measured families' share.
    without = fitting.fit_all(cases, leave_out="torchspec-prs")
    assert without["SM100_TRAINING_SHARE"] != fitting.fit_all(cases)["SM100_TRAINING_SHARE"]
    # A constant fitted on one group alone cannot be refitted without it; a constant it
    # needs is missing too.
    without = fitting.fit_all(cases, leave_out="specforge")
    assert without["ACTIVATION_IO_MULTIPLE"] is None
    assert without["TRAINER_RUNTIME_RESERVE_GIB"] is None
    assert without["NETWORK_EFFICIENCY"] == pytest.approx(142.25 / 200)


def test_range_spans_what_the_cases_of_its_kind_imply(cases):
    values = fitting.fit_all(cases)
    low, high = fitting.span(fitting.BY_NAME["DENSE_TRAINING_SHARE"], cases, values)
    ceiling = 271.2 / 312
    assert low <= 0.5447 / ceiling and high >= 0.582 / ceiling
    # The trainer's reserve reaches down to a bare process's (the capture server's).
    low, _ = fitting.span(fitting.BY_NAME["TRAINER_RUNTIME_RESERVE_GIB"], cases, values)
    assert low == pytest.approx(78 - 0.5 * 141)
    # The sink's range runs from June's quoted 44 samples/s to September's 7.2 x 277 MB.
    assert fitting.span(
        fitting.BY_NAME["CAPTURE_SINK_BYTES_PER_S"], cases, values
    ) == pytest.approx((44 * 550 * BYTES_PER_TOKEN, 7.2 * 277e6))


def test_matmul_ceilings_are_the_measured_matmul_over_the_dense_peak(cases):
    # stas00: B200 1,745 of 2,250 dense TFLOPS; H100 SXM 794.5 of 989, which H100 PCIe and
    # H200 share.
    assert fitting.fit_all(cases)["B200_MATMUL_CEILING"] == pytest.approx(1745 / 2250)
    gpus = builtin_gpus()
    assert gpus["b200"].matmul_ceiling == pytest.approx(1745 / 2250)
    assert (
        gpus["h200"].matmul_ceiling
        == gpus["h100-pcie"].matmul_ceiling
        == pytest.approx(794.5 / 989)
    )
    cases["stas00-mamf-b200-bf16"]["value"] = 1800
    assert fitting.fit_all(cases)["B200_MATMUL_CEILING"] == pytest.approx(1800 / 2250)


def test_a_constants_range_is_available_to_projections():
    # What validate lists, without running it: the dense share spans the two groups'
    # MFUs (54.47 % and 58.2 % over the A100's ceiling); the trainer reserve reaches down
    # to a bare process's 7.5 GiB (78 - 0.5 x 141).
    ceiling = 271.2 / 312
    low, high = fitting.value_range("DENSE_TRAINING_SHARE")
    assert low <= 0.5447 / ceiling + 1e-9 and high >= 0.582 / ceiling - 1e-9
    low, high = fitting.value_range("TRAINER_RUNTIME_RESERVE_GIB")
    assert low == pytest.approx(7.5) and high > memory.TRAINER_RUNTIME_RESERVE_GIB


DECODE_CASE = "silybench-h100-qwen3-8b-bf16-decode-2048-2048"
OCI = "oracle-mi300x-llama31-405b-fp8-tp8-decode-128-2048"


def _decode_terms(case):
    gpu = builtin_gpus()[case["gpu"]]
    return decode.case_terms(case, gpu, fitting.value("DECODE_RUNTIME_HELD_GIB"))


@pytest.mark.parametrize("case_id", [*fitting.DECODE_RANGE[:6], *fitting.MI300X_VLLM_RANGE[:3]])
def test_a_decode_case_implies_the_constants_that_reproduce_it(cases, case_id):
    # The efficiency (or the time per sequence) a rate implies gives that rate back: the
    # sample's time is piecewise linear in the step's memory time, solved segment by segment.
    terms = _decode_terms(cases[case_id])
    for efficiency, per_sequence in ((0.9, 1e-5), (0.6, 3e-5), (0.95, 0.0)):
        rate = terms.at(efficiency, per_sequence).tokens_per_s_per_gpu
        assert terms.s_per_sequence_for(rate, efficiency) == pytest.approx(per_sequence, abs=1e-12)
        if terms.memory_s_at_full_bandwidth / efficiency > terms.compute_s + terms.chunk_s:
            assert terms.efficiency_for(rate, per_sequence) == pytest.approx(efficiency)


def test_the_decode_fit_recovers_the_constants_its_cases_were_made_with(cases):
    # Rates made by the model at efficiency 0.8 and 20 us per sequence: the least-squares
    # fit of the time per sequence, with the efficiency its cases then imply, finds both.
    # (Cases whose rate there does not move with the efficiency, compute-bound, carry none:
    # left out.)
    fit = []
    for case in (cases[i] for i in fitting.DECODE_FIT):
        terms = _decode_terms(case)
        rate = terms.at(0.8, 2e-5).tokens_per_s_per_gpu
        if terms.at(0.79, 2e-5).tokens_per_s_per_gpu < rate:
            case["value"] = rate
            fit.append(case)
    assert len(fit) >= 5
    held = {"DECODE_RUNTIME_HELD_GIB": fitting.value("DECODE_RUNTIME_HELD_GIB")}
    per_sequence = fitting.BY_NAME["DECODE_STEP_S_PER_SEQUENCE"].fit(fit, held)
    assert per_sequence == pytest.approx(2e-5, rel=1e-3)
    values = {**held, "DECODE_STEP_S_PER_SEQUENCE": per_sequence}
    efficiency = fitting.BY_NAME["DECODE_BANDWIDTH_EFFICIENCY"].fit(fit, values)
    assert efficiency == pytest.approx(0.8, rel=1e-3)


def test_the_decode_maturity_fold_never_sees_its_group(cases):
    # vLLM on MI300X: leaving OCI out, the maturity is AMD's cases' alone, whatever OCI
    # measured; with every group in, OCI's case moves it.
    fold = fitting.fit_all(cases, leave_out="oracle-oci-mi300x")["MI300X_VLLM_DECODE_MATURITY"]
    full = fitting.fit_all(cases)["MI300X_VLLM_DECODE_MATURITY"]
    cases[OCI]["value"] *= 2
    assert fitting.fit_all(cases, leave_out="oracle-oci-mi300x")[
        "MI300X_VLLM_DECODE_MATURITY"
    ] == pytest.approx(fold)
    assert fitting.fit_all(cases)["MI300X_VLLM_DECODE_MATURITY"] > full
    # The built-in catalog carries the fit, dated, on MI300X's vLLM decode entry.
    entry = builtin_gpus()["mi300x"].maturity_of("decode", "vllm")
    assert entry is not None and entry.factor == fitting.value("MI300X_VLLM_DECODE_MATURITY")
    assert (entry.low, entry.high) == pytest.approx(
        fitting.value_range("MI300X_VLLM_DECODE_MATURITY")
    )


def test_the_runtime_held_by_vllm_is_the_mean_of_its_two_groups(cases):
    # vLLM's PR #10511 log (1.79 + 1.26 GiB) and silybench's pool (0.9 x 79.22 - 15.26 -
    # 51.78 GiB).
    assert fitting.fit_all(cases)["DECODE_RUNTIME_HELD_GIB"] == pytest.approx((3.05 + 4.24) / 2)
    assert fitting.value("DECODE_RUNTIME_HELD_GIB") == decode.DECODE_RUNTIME_HELD_GIB
