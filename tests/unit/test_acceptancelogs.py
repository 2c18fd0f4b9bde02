"""Reading the acceptance length a trainer logs (model/inputs/acceptancelogs.py).

The fixtures in tests/data/runlogs/ are written in the upstream print formats:
- specforge_domino.log: sgl-project/SpecForge a6b6b02, `print(f"step {step}: {printable}")`
  of specforge/training/assembly.py:291 with the Domino strategy's metrics
  (specforge/algorithms/common/dflash_family_model.py:700-708: accept_len, base_accept_len,
  lambda_base), the perf/* keys of specforge/training/controller.py:697-721 (32 global
  samples/s x 2.0 s = 64 samples per step) and eval lines every 10,000 steps whose
  eval/simulated_acc_len is the scalar accuracy fallback of specforge/eval/evaluator.py:159.
- speculators_dflash.log: vllm-project/speculators c05b95b3, the metric records of
  src/speculators/train/trainer.py:498-507 (train, every log_freq steps) and :576-578 (val,
  each epoch's end) as the console prints them (src/speculators/train/logger.py
  FormatDictFilter: flattened with "/", floats to 3 decimals) through Rich's handler at
  80 columns, which wraps a record over many lines; a DFlash run of block 16.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from dflash_plan.model.basics.errors import PlanError
from dflash_plan.model.inputs.acceptancelogs import read_acceptance
from dflash_plan.model.inputs.runlogs import RunContext

DATA = Path(__file__).parents[1] / "data" / "runlogs"
# 4 samples per GPU-step x 8 drafter GPUs = 32 samples per optimizer step from the plan.
CTX = RunContext(avg_sample_tokens=2000, batch_size=4, drafter_gpus=8)


def test_specforge_domino_accept_len_with_samples_from_the_log():
    reading = read_acceptance(DATA / "specforge_domino.log", CTX)
    assert (reading.format, reading.split) == ("SpecForge log", "train")
    # Ten training reports, steps 2,000-20,000; accept_len already counts the bonus token.
    assert [p.step for p in reading.points] == list(range(2000, 20001, 2000))
    assert reading.points[0].tau == pytest.approx(2.30)
    # 32 samples/s x 2.0 s per step = 64 samples per step, from the log's perf keys (the
    # plan's 4 x 8 = 32 is not used).
    assert reading.samples_per_step == pytest.approx(64)
    assert "from the log" in reading.samples_basis
    assert reading.points[-1].sample_passes == pytest.approx(1_280_000)
    # The run's figure: ten reports, so the last max(3, ceil(10 x 0.1)) = 3 (3.10, 3.08,
    # 3.11): median 3.10, inclusive quartiles 3.09 and 3.105, at their median step 18,000
    # = 1,152,000 sample passes.
    assert reading.tau == pytest.approx(3.10)
    assert (reading.tau_low, reading.tau_high) == pytest.approx((3.09, 3.105))
    assert (reading.step, reading.sample_passes) == (18_000, pytest.approx(1_152_000))
    # Its two eval lines carry the accuracy under the length's name: left out, said.
    assert any("2 'eval/simulated_acc_len' lines" in note for note in reading.notes)
    assert reading.source == (
        "specforge_domino.log: SpecForge log 'accept_len' (tau as logged), median of the "
        "last 3 train reports to step 20,000"
    )


def test_speculators_console_log_wrapped_by_rich():
    reading = read_acceptance(DATA / "speculators_dflash.log", CTX)
    assert reading.format == "speculators log"
    # eal has no bonus token: tau = eal + 1. Train 0.912 at step 0 ... 2.747 at 3,000;
    # val 2.331 after step 1,000 and 2.802 after step 3,000.
    train = [(p.step, round(p.tau, 3)) for p in reading.points if p.split == "train"]
    assert train == [
        (0, 1.912),
        (500, 2.906),
        (1000, 3.288),
        (1500, 3.542),
        (2000, 3.651),
        (2500, 3.713),
        (3000, 3.747),
    ]
    assert [(p.step, round(p.tau, 3)) for p in reading.used] == [(1000, 3.331), (3000, 3.802)]
    # The held-out series is used: its last report, no scatter of its own.
    assert reading.split == "eval"
    assert (reading.tau, reading.tau_low, reading.tau_high) == pytest.approx((3.802,) * 3)
    # The log says no batch: the plan's 4 x 1 x 8 = 32 per step, said to be assumed.
    assert reading.samples_basis.startswith("assumed from the plan")
    assert reading.sample_passes == pytest.approx(3000 * 32)


def test_eval_length_with_per_position_accuracy_and_tracker_prefix(tmp_path):
    log = tmp_path / "run.log"
    log.write_text(
        "step 200: {'train/loss': 1.0, 'train/tau_probabilistic': 3.1}\n"
        # a0 + a0 a1 + a0 a1 a2 = 0.8 + 0.4 + 0.1 = 1.3 accepted draft tokens: tau 2.3.
        "step 200: {'eval/avg_loss': 2.0, 'eval/avg_acc': 0.8, 'eval/per_position_acc': "
        "[0.8, 0.5, 0.25], 'eval/simulated_acc_len': 1.3}\n"
    )
    reading = read_acceptance(log, RunContext(avg_sample_tokens=1000))
    assert reading.split == "eval"
    assert reading.tau == pytest.approx(2.3)
    # DSpark's tau_probabilistic (bonus included), its tracker prefix dropped: listed.
    assert [(p.split, p.tau) for p in reading.points] == [("eval", 2.3), ("train", 3.1)]
    # Neither the log nor the plan says the samples per step.
    assert reading.sample_passes is None
    assert reading.samples_basis.startswith("unknown")


def test_a_log_without_acceptance_is_refused_in_one_line():
    with pytest.raises(PlanError) as err:
        read_acceptance(DATA / "specforge_train.log", CTX)
    message = str(err.value)
    assert message.startswith(f"{DATA / 'specforge_train.log'}: no logged acceptance length")
    assert "\n" not in message


def test_values_that_are_no_acceptance_length_are_left_out(tmp_path):
    log = tmp_path / "run.log"
    log.write_text("step 1: {'accept_len': 0.4}\nstep 2: {'accept_len': 2.5}\n")
    reading = read_acceptance(log, CTX)
    assert [p.tau for p in reading.points] == [2.5]
    assert "1 train reports outside 1-64 tokens left out (first: step 1, tau 0.4)" in (
        reading.notes
    )
    log.write_text("step 1: {'accept_len': 0.4}\n")
    with pytest.raises(PlanError, match="no usable logged acceptance length"):
        read_acceptance(log, CTX)
