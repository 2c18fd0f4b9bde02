"""FLOP and byte counts against numbers derived by hand from the architecture."""

from __future__ import annotations

import pytest
from dflash_plan.model.inputs.targets import PRESETS
from dflash_plan.model.physics.families import drafter_shape
from dflash_plan.model.physics.work import (
    drafter_work,
    mean_causal_context,
    target_work,
)

QWEN3_8B = PRESETS["qwen3-8b"]

# Qwen3-8B, one layer (config.json: H 4096, I 12288, 32 q heads / 8 kv heads of 128):
#   q 4096*4096 + k 4096*1024 + v 4096*1024 + o 4096*4096 = 41,943,040
#   MLP gate/up/down 3*4096*12288                           = 150,994,944
LAYER_PARAMS = 41_943_040 + 150_994_944  # 192,937,984


def test_qwen3_8b_parameter_count_matches_its_config():
    assert QWEN3_8B.layer_params_active == LAYER_PARAMS
    # 36 layers = 6.95 B non-embedding; + embedding and LM head 2 * 151,936 * 4096.
    assert QWEN3_8B.n_layers * LAYER_PARAMS == 6_945_767_424
    assert QWEN3_8B.total_params == 6_945_767_424 + 2 * 151_936 * 4096  # 8.19 B


def test_default_captured_layers_follow_dflash():
    # build_target_layer_ids (z-lab/dflash, SpecForge): round(1 + i * (n - 4) / (k - 1)).
    assert QWEN3_8B.default_layer_ids(5) == (1, 9, 17, 25, 33)
    sixty_four = QWEN3_8B.model_copy(update={"n_layers": 64})
    assert sixty_four.default_layer_ids(5) == (1, 16, 31, 46, 61)  # the Qwen3.6-27B drafter
    # One captured layer per drafter layer; a one-layer drafter takes the middle layer.
    assert QWEN3_8B.default_layer_ids(3) == (1, 17, 33)
    assert QWEN3_8B.default_layer_ids(1) == (18,)


def test_target_prefill_flops_per_token_qwen3_8b():
    work = target_work(QWEN3_8B, (1, 9, 17, 25, 33), sample_tokens=2344)
    # Capture servers run the whole forward (SpecForge's SGLang patch samples one token):
    # all 36 layers; the LM head for one position per sample is left out.
    assert work.layers_run == 36
    assert work.linear_flop_per_token == 2 * 36 * LAYER_PARAMS  # 13.89 GFLOP
    # Attention: 4 x layers x mean causal context (2344 / 2) x (32 heads x 128).
    assert work.attention_flop_per_token == 4 * 36 * 1172 * 4096  # 0.691 GFLOP
    assert work.flop_per_token == pytest.approx(14.58e9, rel=1e-3)


def test_hidden_state_bytes_per_token_match_the_reference():
    # K x H x 2 bytes (docs/workload.md): 40 KB, 25.6 KB, 20 KB, 28.8 KB, 80 KB.
    expected = {
        "qwen3-8b": 40_960,
        "llama-3.1-8b-instruct": 40_960,
        "qwen3-4b": 25_600,
        "qwen3-30b-a3b": 20_480,
        "gpt-oss-20b": 28_800,
        "llama-3.3-70b-instruct": 81_920,
    }
    for key, bytes_per_token in expected.items():
        model = PRESETS[key]
        work = target_work(model, model.default_layer_ids(5), 2048)
        assert work.hidden_state_bytes_per_token == bytes_per_token, key


def test_moe_counts_active_experts_only():
    model = PRESETS["qwen3-30b-a3b"]
    # attention: 2*2048*4096 + 2*2048*512 = 18,874,368; router 2048*128 = 262,144;
    # 8 active experts of 3*2048*768 = 4,718,592 each.
    assert model.layer_params_active == 18_874_368 + 262_144 + 8 * 4_718_592
    assert model.layer_params_total == 18_874_368 + 262_144 + 128 * 4_718_592
    assert model.total_params / 1e9 == pytest.approx(30.5, rel=0.01)  # config: 30.5 B


@pytest.mark.parametrize(
    "key, billions",
    [
        ("qwen3-4b", 4.0),
        ("qwen3-8b", 8.2),
        ("llama-3.1-8b-instruct", 8.0),
        ("llama-3.3-70b-instruct", 70.6),
        ("gpt-oss-20b", 21),
        ("gpt-oss-120b", 117),
    ],
)
def test_preset_sizes_match_published_totals(key, billions):
    assert PRESETS[key].total_params / 1e9 == pytest.approx(billions, rel=0.02)


def test_sliding_window_caps_the_context():
    assert mean_causal_context(2000) == 1000
    assert mean_causal_context(100, window=128) == 50
    # S = 2000, w = 128: 128 - 128^2 / 4000 = 123.904
    assert mean_causal_context(2000, window=128) == pytest.approx(123.904)


def test_drafter_size_for_qwen3_8b_is_1_05_b():
    shape = drafter_shape(QWEN3_8B, layers=5, block_size=16, captured_layers=5)
    # 5 layers of 192,937,984 + the 5*4096 -> 4096 fusing projection.
    assert shape.trainable_params == 5 * LAYER_PARAMS + 5 * 4096 * 4096 == 1_048_576_000


def test_drafter_training_flops_per_sample_qwen3_8b():
    shape = drafter_shape(QWEN3_8B, layers=5, block_size=16, captured_layers=5)
    work = drafter_work(shape, num_anchors=512, sample_tokens=2344, batch_size=2, drafter_gpus=1)
    positions = 512 * 16  # 8,192 drafted positions
    assert work.positions == positions
    assert work.layer_flop == 6 * positions * 5 * LAYER_PARAMS  # 47.4 TFLOP
    # Frozen LM head under SpecForge's checkpointed loss: forward, recompute, input grad.
    assert work.lm_head_flop == 6 * positions * 4096 * 151_936  # 30.6 TFLOP
    assert work.attention_flop == 12 * positions * 5 * (1172 + 16) * 4096
    assert work.context_kv_flop == 6 * 2344 * 5 * 2 * 4096 * 1024
    assert work.projection_flop == 6 * 2344 * 5 * 4096 * 4096
    # docs/workload.md's source counts the LM head once forward and once backward: "on the order of 70
    # TFLOP per sample"; the checkpointed loss recomputes it (+10.2 TFLOP): 82 TFLOP.
    assert work.flop_per_sample - 2 * positions * 4096 * 151_936 == pytest.approx(72.0e12, rel=0.01)
    half = drafter_work(shape, num_anchors=256, sample_tokens=2344, batch_size=2, drafter_gpus=1)
    assert half.flop_per_sample / work.flop_per_sample == pytest.approx(0.51, abs=0.02)


def test_anchors_cannot_exceed_the_sample():
    shape = drafter_shape(QWEN3_8B, layers=5, block_size=16, captured_layers=5)
    work = drafter_work(shape, num_anchors=512, sample_tokens=300, batch_size=1, drafter_gpus=1)
    assert work.anchors == 300
