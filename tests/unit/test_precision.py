"""A target's precision (target.precision = bf16 | fp8 | fp4): the FP4 prefill speedup is
fitted on public NVFP4-against-FP8 measurements, an fp4 target needs FP4 tensor cores, and
the rate and the weights' memory follow the precision."""

from __future__ import annotations

import pytest
from dflash_plan.model.core.projection import project
from dflash_plan.model.core.resolve import resolve
from dflash_plan.model.evidence.evidence import validate
from dflash_plan.model.inputs.plan import default_plan, plan_to_toml
from dflash_plan.model.inputs.targets import PRESETS
from dflash_plan.model.physics import caserates, fitting, roofline
from dflash_plan.model.physics.memory import target_memory
from dflash_plan.model.physics.work import target_work
from dflash_plan.tui.cli import main
from support import edit

SGLANG_GB200 = "sglang-gb200-deepseek-r1-prefill-nvfp4-over-fp8"
VLLM_GB300 = "vllm-gb300-deepseek-v32-prefill-nvfp4-over-fp8"


def test_fp4_speedup_is_one_vote_per_source_over_fp8():
    # SGLang's DeepSeek-R1 prefill on GB200: 26,156 / 18,471 input tok/s per GPU; vLLM's
    # DeepSeek-V3.2 prefill on GB300: +14 %.
    cases = fitting.cases_by_id(fitting.FP4_PREFILL)
    assert cases[SGLANG_GB200]["value"] == pytest.approx(26_156 / 18_471, rel=1e-4)
    assert pytest.approx((1.4161 + 1.14) / 2) == roofline.FP4_PREFILL_OVER_FP8
    assert fitting.value_range("FP4_PREFILL_OVER_FP8") == pytest.approx((1.14, 1.4161))
    # Each source left out, the other one alone sets it: cross-validated.
    by_id = fitting.cases_by_id(fitting.all_case_ids())
    fold = fitting.fit_all(by_id, leave_out="sglang-gb200-blog")
    assert fold["FP4_PREFILL_OVER_FP8"] == pytest.approx(1.14)


def test_fp4_runs_faster_than_fp8_only_where_the_gpu_has_fp4_tensor_cores(catalog):
    b300, h200 = catalog.gpus["b300"], catalog.gpus["h200"]
    fp8 = roofline.FP8_SPEEDUP
    assert roofline.precision_speedup("bf16", b300) == 1.0
    assert roofline.precision_speedup("fp8", b300) == fp8
    assert roofline.precision_speedup("fp4", b300) == pytest.approx(
        fp8 * roofline.FP4_PREFILL_OVER_FP8
    )
    # FP4 weights on Hopper compute at FP8 (a weight-only format there).
    assert roofline.precision_speedup("fp4", h200) == fp8
    with_fp4 = sorted(k for k, g in catalog.gpus.items() if g.supports("fp4"))
    assert with_fp4 == ["b200", "b300", "gb200", "mi355x", "rtx-5090", "rtx-pro-6000"]


def test_an_fp4_case_is_predicted_at_the_fp4_rate(catalog):
    case = next(
        iter(fitting.cases_by_id(["trtllm-b200-qwen3-30b-a3b-fp4-isl2048-osl128"]).values())
    )
    fp4 = caserates.rate(case, catalog.gpus)
    fp8 = caserates.rate({**case, "precision": "fp8"}, catalog.gpus)
    assert fp4 / fp8 == pytest.approx(roofline.FP4_PREFILL_OVER_FP8)


def test_the_precision_cases_are_validated_with_their_source_left_out(catalog):
    result = validate(catalog)
    assert result.cv_rows[SGLANG_GB200].predicted == pytest.approx(1.14)
    assert result.cv_rows[VLLM_GB300].predicted == pytest.approx(1.4161)


def test_the_target_rate_and_weights_follow_the_precision(catalog, baseline):
    plan = edit(
        baseline,
        target={"gpu": "b300", "count": 4},
        drafter={"gpu": "b300", "count": 4},
        calibration={"target": {}, "drafter": {}},
    )
    rates = {
        p: project(edit(plan, target={"precision": p}), catalog).target.per_gpu_tokens_per_s
        for p in ("bf16", "fp8", "fp4")
    }
    assert rates["fp8"] / rates["bf16"] == pytest.approx(roofline.FP8_SPEEDUP)
    assert rates["fp4"] / rates["fp8"] == pytest.approx(roofline.FP4_PREFILL_OVER_FP8)
    # Weights: bf16 2 bytes a parameter; fp8 1 (+ a block scale), fp4 0.5 + an E4M3 scale
    # per 16; the embeddings and the LM head stay bf16.
    model = PRESETS["qwen3-8b"]
    gib = {
        p: dict(target_memory(model, 1, 3072, 5, 180.0, p).items_gb)["weights"]
        for p in ("bf16", "fp8", "fp4")
    }
    embeddings = 2 * model.embedding_params / 2**30
    layers = gib["bf16"] - embeddings
    assert gib["bf16"] == pytest.approx(2 * model.total_params / 2**30)
    assert gib["fp8"] - embeddings == pytest.approx(layers / 2 * (1 + 4 / 128**2))
    assert gib["fp4"] - embeddings == pytest.approx(layers / 4 * (1 + 1 / 8))
    # A long-sample prefill is compute-bound: the bytes only move the memory roof.
    work = target_work(model, model.default_layer_ids(5), 3072.0)
    bf16, fp4 = (roofline.target_roofline(work, catalog.gpus["b300"], p) for p in ("bf16", "fp4"))
    assert fp4.memory_tokens_per_s > bf16.memory_tokens_per_s
    assert fp4.compute_tokens_per_s == pytest.approx(
        bf16.compute_tokens_per_s * roofline.precision_speedup("fp4", catalog.gpus["b300"])
    )


def test_fp4_on_a_gpu_without_fp4_tensor_cores_is_refused_in_one_line(capsys):
    code = main(["project", "--set", "target.gpu=h200", "--set", "target.precision=fp4"])
    err = capsys.readouterr().err.strip()
    assert code == 2 and len(err.splitlines()) == 1 and "Traceback" not in err
    assert "target.precision = fp4" in err and "H200" in err
    assert "b200, b300, gb200, mi355x, rtx-5090, rtx-pro-6000" in err


def test_a_bf16_plan_reads_and_writes_as_before(catalog, baseline):
    assert baseline.target.precision == "bf16"
    assert "precision" not in plan_to_toml(baseline)
    fp4 = edit(baseline, target={"precision": "fp4"})
    assert 'precision = "fp4"' in plan_to_toml(fp4)
    assert resolve(default_plan(), catalog).plan.target.precision == "bf16"


def test_project_says_the_precision_when_not_bf16(capsys):
    assert main(["project", "--set", "target.precision=fp4"]) == 0
    first = capsys.readouterr().out.splitlines()[0]
    assert first.endswith("Qwen3-8B  (target in fp4)")
    assert main(["project"]) == 0
    assert "target in" not in capsys.readouterr().out.splitlines()[0]
    assert main(["project", "--json", "--set", "target.precision=fp8"]) == 0
    assert '"target_precision": "fp8"' in capsys.readouterr().out


def test_search_says_which_target_gpus_it_leaves_out_for_the_precision(capsys):
    # NVFP4 tensor cores: B200 yes, H200 and A100 no. The two are left out as targets
    # (still searched as drafters), in one line.
    sets = ["--set", "target.precision=fp4", "--gpus", "b200,h200,a100-80g", "--max-gpus", "4"]
    assert main(["search", *sets]) == 0
    out = capsys.readouterr().out.replace("\n", " ")
    assert (
        "left out as targets, without fp4 tensor cores (target.precision = fp4): H200 SXM, "
        "A100 80GB " in out
    )
    assert main(["search", "--gpus", "b200,h200", "--max-gpus", "4"]) == 0
    assert "left out as targets" not in capsys.readouterr().out  # bf16 runs everywhere


def test_a_quantized_targets_launch_says_it_needs_the_quantized_checkpoint(catalog, baseline):
    from dflash_plan.model.launch import generate

    b200 = edit(baseline, target={"gpu": "b200", "precision": "fp4"}, drafter={"gpu": "b200"})
    text = generate(b200, catalog, "specforge").text
    assert (
        "# note: target.precision = fp4: the capture servers load target_model_path as it "
        "is, so it must be an NVFP4 export of Qwen3-8B (e.g. NVIDIA ModelOpt's, with its "
        "hf_quant_config.json); SGLang reads the quantization from the checkpoint, no "
        "--quantization flag; launch.target_model_path is unset, so this script loads the "
        "preset's Qwen/Qwen3-8B: set it to the export\n"
    ) in text
    assert "--quantization" not in text.replace("no --quantization flag", "")
    exported = edit(b200, launch={"target_model_path": "/models/qwen3-8b-nvfp4"})
    assert "is unset" not in generate(exported, catalog, "specforge").text
    fp8 = edit(baseline, target={"precision": "fp8"}, launch={"format": "speculators"})
    assert "must be an FP8 export of Qwen3-8B" in generate(fp8, catalog, "speculators").text
    assert "target.precision" not in generate(baseline, catalog, "specforge").text
