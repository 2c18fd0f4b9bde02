"""The drafter families against counts derived by hand from each family's upstream code."""

from __future__ import annotations

import json
from typing import get_args

import pytest
from dflash_plan.model.inputs.plan import Drafter
from dflash_plan.model.inputs.targets import PRESETS, TargetModel
from dflash_plan.model.physics.families import FAMILIES, default_block_size, drafter_shape
from dflash_plan.model.physics.footprint import drafter_footprint
from dflash_plan.model.physics.work import (
    SHARDED_BYTES_PER_PARAM,
    drafter_work,
)
from dflash_plan.tui.cli import main

# Qwen/Qwen3.8-27B as the DFlash2 recipe states it (measurements.toml, model_dims): 64
# layers, hidden 5120, FFN 17408, 24 Q / 4 KV heads of 256, vocabulary 248,320.
QWEN38_27B = TargetModel(
    key="qwen3.8-27b",
    name="Qwen3.8-27B",
    n_layers=64,
    hidden=5120,
    intermediate=17408,
    n_heads=24,
    n_kv_heads=4,
    head_dim=256,
    vocab=248_320,
)

# The DFlash2 drafter upstream builds for it: the published z-lab/Qwen3.8-27B-DFlash2
# config.json (hidden 5120, intermediate 17408, 5 layers, 32 Q / 8 KV heads of 128, vocab
# 248,320, conv_kernel_size 2, conv_group_size 16, selector_rank 256, 5 target layers) put
# through the module shapes of SpecForge specforge/modeling/draft/dflash2.py @ 5943b2f6
# and z-lab/dflash dflash/model.py @ 07ebd93d. Per decoder layer:
#   q_proj 5120 x 4096 = 20,971,520; k_proj, v_proj 5120 x 1024 = 5,242,880 each;
#   o_proj 4096 x 5120 = 20,971,520; q_norm, k_norm 128 each          -> 52,429,056
#   mlp gate, up, down 3 x 5120 x 17408                                = 267,386,880
#   input_layernorm, post_attention_layernorm 5120 each                = 10,240
#   attention_conv and mlp_conv, each: base_kernel 2 x 2 x 5120 = 20,480 and
#     kernel_projection 5120 x (2 x 2 x 320 groups) = 6,553,600         -> 13,148,160
#   one layer                                                          = 332,974,336
# 5 layers = 1,664,871,680; fc 5 x 5120 x 5120 = 131,072,000; hidden_norm, norm 10,240;
# candidate_selector: two codebooks 248,320 x 256 = 127,139,840 and hidden_projection
# 5120 x 256 = 1,310,720 -> 128,450,560. Total 1,924,404,480 (the recipe's "~1.9B").
UPSTREAM_DFLASH2_PARAMS = 1_664_871_680 + 131_072_000 + 10_240 + 128_450_560


def test_every_plan_drafter_has_a_family():
    assert set(FAMILIES) == set(get_args(Drafter))


def test_dflash2_parameters_match_upstream_within_2_percent():
    assert UPSTREAM_DFLASH2_PARAMS == 1_924_404_480
    shape = drafter_shape(QWEN38_27B, 5, 8, 5, "dflash2")
    assert shape.trainable_params == pytest.approx(UPSTREAM_DFLASH2_PARAMS, rel=0.02)
    # Ours leaves out the norms only (5 x (256 + 10,240) + 10,240 = 62,720 parameters).
    assert UPSTREAM_DFLASH2_PARAMS - shape.trainable_params == 62_720
    # The drafter's own attention shape, not the target's 24 x 256 / 4 x 256.
    assert (shape.q_dim, shape.kv_dim, shape.head_dim) == (4096, 1024, 128)
    assert shape.sliding_window == 2048


def test_default_block_size_per_family():
    # DFlash: the target's (16; gpt-oss's row says 10); DFlash2 8 (its config's
    # dflash_config.block_size); DSpark 7 (SpecForge configs/*-dspark.json); EAGLE-3 7
    # (SpecForge's test-time-training length).
    qwen, gpt_oss = PRESETS["qwen3-8b"], PRESETS["gpt-oss-20b"]
    assert default_block_size("dflash", qwen) == 16
    assert default_block_size("dflash", gpt_oss) == 10
    assert default_block_size("dflash2", qwen) == 8
    assert default_block_size("dflash2", gpt_oss) == 8
    assert default_block_size("dspark", qwen) == 7
    assert default_block_size("eagle3", qwen) == 7


def test_dspark_optimizer_on_total_params_flops_on_active():
    shape = drafter_shape(QWEN38_27B, 5, 7, 5, "dspark")
    # Per layer, SpecForge's DSpark MoE report (section 3.1): attention 5120 x (4096 + 2 x
    # 1024) + 4096 x 5120 = 52,428,800; 512 experts x 3 x 5120 x 512 = 4,026,531,840 (10
    # active: 78,643,200); shared expert 3 x 5120 x 2048 = 31,457,280; router 5120 x 512
    # + shared gate 5120 = 2,626,560. Beside the layers: fc 131,072,000 and the Markov head
    # 2 x 248,320 x 256 = 127,139,840 plus its confidence head 5121.
    beside = 131_072_000 + 127_139_840 + 5_121
    total = 5 * (52_428_800 + 4_026_531_840 + 31_457_280 + 2_626_560) + beside
    active = 5 * (52_428_800 + 78_643_200 + 31_457_280 + 2_626_560) + beside
    assert (shape.trainable_params, shape.active_params) == (total, active)
    assert total == 20_823_439_361 and active == 1_083_996_161  # the report: 20.8 B, 1.08 B
    # A training checkpoint: 14 bytes per parameter (bf16 weights + fp32 master, m, v):
    # 291.5 GB = 271.5 GiB, the report's "272 GB" per checkpoint.
    assert shape.checkpoint_bytes == 14 * total

    samples, tokens, gpus = 512, 3600.0, 4
    work = drafter_work(shape, samples, tokens, batch_size=4, drafter_gpus=gpus)
    # FLOPs: 512 anchors x 7 = 3,584 positions, 6 FLOPs per active layer weight.
    assert work.positions == 3584
    assert work.layer_flop == 6.0 * 3584 * 5 * (52_428_800 + 78_643_200 + 31_457_280 + 2_626_560)
    memory = dict(drafter_footprint(shape, work, tokens, 4, gpus, 180.0, True, 2.0, 10.0).items_gb)
    # Optimizer state: 14 bytes per parameter of all experts, sharded over the 4 ranks.
    assert SHARDED_BYTES_PER_PARAM == 14
    assert memory["optimizer state"] == pytest.approx(14 * total / 4 / 2**30)
    assert memory["weights"] == pytest.approx(2 * total / 2**30)


def test_dflash2_bytes_per_token_include_the_final_hidden_state(tmp_path, capsys):
    """A DFlash2 plan sends and stores six tensors per token of the recipe's target: the
    five captured layers and the final hidden state, 6 x 5120 x 2 bytes = 61,440 bytes;
    speculators' format already appends the final layer, so it is not counted twice."""
    config = {
        "architectures": ["Qwen3ForCausalLM"],
        "num_hidden_layers": 64,
        "hidden_size": 5120,
        "intermediate_size": 17408,
        "num_attention_heads": 24,
        "num_key_value_heads": 4,
        "head_dim": 256,
        "vocab_size": 248_320,
    }
    (tmp_path / "config.json").write_text(json.dumps(config))
    tensors = 6 * 5120 * 2
    assert tensors == 61_440
    for fmt, ids_and_masks in (("specforge", 8 + 8), ("speculators", 8 + 1)):
        argv = ["project", "--json", "--set", f"workload.target_model={tmp_path}/config.json"]
        argv += ["--set", "workload.drafter=dflash2", "--set", f"launch.format={fmt}"]
        argv += ["--set", "target.gpu=b300", "--set", "drafter.gpu=b300"]
        assert main(argv) == 0
        doc = json.loads(capsys.readouterr().out)
        assert doc["link"]["bytes_per_token"] == tensors
        assert doc["storage"]["bytes_per_token"] == tensors + ids_and_masks
    # The same plan as DFlash: five tensors.
    argv = ["project", "--json", "--set", f"workload.target_model={tmp_path}/config.json"]
    argv += ["--set", "target.gpu=b300", "--set", "drafter.gpu=b300"]
    assert main(argv) == 0
    doc = json.loads(capsys.readouterr().out)
    assert doc["link"]["bytes_per_token"] == 5 * 5120 * 2
    assert doc["storage"]["bytes_per_token"] == 5 * 5120 * 2 + 16


def test_eagle3_one_fused_layer_and_a_draft_vocabulary():
    shape = drafter_shape(PRESETS["llama-3.1-8b-instruct"], 5, 7, 3, "eagle3")
    # SpecForge LlamaForCausalLMEagle3 (llama3_eagle.py @ a6b6b023) on Llama-3.1-8B: q, k, v
    # read 2 x 4096: 8192 x (4096 + 2 x 1024) = 50,331,648; o 4096 x 4096 = 16,777,216;
    # MLP 3 x 4096 x 14336 = 176,160,768; fc 3 x 4096 x 4096 = 50,331,648; lm_head
    # 4096 x 32,000 = 131,072,000.
    assert shape.layers == 1 and shape.captured_layers == 3 and shape.vocab == 32_000
    assert shape.trainable_params == (
        50_331_648 + 16_777_216 + 176_160_768 + 50_331_648 + 131_072_000
    )
    # The frozen embedding and the target's LM head keep the full vocabulary.
    assert shape.frozen_params == 2 * 128_256 * 4096
    # Every position trains, unrolled over 7 steps; four tensors per token (three taps and
    # the final hidden state).
    work = drafter_work(shape, 512, 2000.0, batch_size=1, drafter_gpus=1)
    assert (work.anchors, work.positions) == (2000, 14_000)
    assert shape.state_tensors == 4


@pytest.mark.parametrize(
    ("argv", "expected"),
    [
        (["--set", "workload.drafter=medusa"], "must be one of 'dflash', 'dflash2'"),
        (
            ["--set", "workload.drafter=eagle3", "--set", "workload.draft_layers=2"],
            "workload.draft_layers = 2: EAGLE-3 trains 1 decoder layer(s); allowed: 1",
        ),
    ],
)
def test_a_bad_family_is_one_line(capsys, argv, expected):
    assert main(["project", *argv]) == 2
    _, err = capsys.readouterr()
    lines = err.strip().splitlines()
    assert len(lines) == 1 and expected in lines[0] and "Traceback" not in err
