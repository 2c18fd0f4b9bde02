"""Reading throughput from training logs, the user's own reports and probe results.

The log fixtures in tests/data/runlogs/ are written from the upstream print formats:
- specforge_train.log: sgl-project/SpecForge a6b6b02, specforge/training/assembly.py:291
  `print(f"step {step}: {printable}")` with the perf/* keys of
  specforge/training/controller.py:697-721 (4 drafter GPUs x 4 samples per step; the
  first window slow, as a compiling run's is; an eval line; a last line cut short).
- torchspec_train.log: lightseekorg/TorchSpec 6f21829, torchspec/controller/loop.py:222
  (Starting: ... global_batch_size=32, dp_size=4 ...), :340 (TIMING), the tqdm postfix of
  :368-381 (thru, I, T redrawn with carriage returns), torchspec/inference/factory.py:184.
- specforge_legacy.log: SpecForge 40d8fef, scripts/train_dflash.py:671-677 (the rank-0
  tqdm bar's iter_time postfix).
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest
from dflash_plan.model.basics.errors import PlanError
from dflash_plan.model.basics.lines import records
from dflash_plan.model.inputs import runlogs
from dflash_plan.model.inputs.runlogs import RunContext, read_probe, read_throughput, steady

DATA = Path(__file__).parents[1] / "data" / "runlogs"
# 2,000 tokens per sample throughout: rates below are samples/s x 2,000.
CTX = RunContext(
    avg_sample_tokens=2000,
    target_gpu="h200",
    drafter_gpu="h200",
    target_gpus=3,
    drafter_gpus=4,
    batch_size=4,
    num_anchors=512,
    target_model="qwen3-8b",
)


def by_role(reading):
    return {p.role: p for p in reading.points}


def test_steady_drops_warmup_and_takes_the_median():
    assert steady([]) is None
    # Three reports: too few to call the first one warm-up; median of 1, 2, 9 is 2.
    assert steady([9.0, 1.0, 2.0]).median == 2.0
    assert steady([9.0, 1.0, 2.0]).warmup == 0
    # Ten reports: ceil(10 x 0.1) = 1 dropped (the 100); the nine kept are 1..9:
    # median 5, inclusive quartiles at positions 2 and 6 of 0..8: 3 and 7.
    spread = steady([100.0, 1, 2, 3, 4, 5, 6, 7, 8, 9])
    assert (spread.median, spread.low, spread.high, spread.count, spread.warmup) == (5, 3, 7, 9, 1)


def test_specforge_log():
    reading = read_throughput(DATA / "specforge_train.log", CTX)
    assert reading.format == "SpecForge log"
    drafter, target = by_role(reading)["drafter"], by_role(reading)["target"]
    # Drafter: 4 samples per GPU-step (the batch) / 1.6 s compute = 2.5 samples/s x 2,000
    # = 5,000 tok/s; the steady windows' compute times are seven 1.6 s, one 1.5, one 1.7,
    # median 1.6. The first window (8 s) is the one warm-up report dropped of ten.
    assert drafter.measurement.tokens_per_s == pytest.approx(5000)
    assert drafter.samples_per_s == pytest.approx(2.5)
    assert drafter.measurement.bound == "exact"
    assert (drafter.spread.count, drafter.spread.warmup) == (9, 1)
    assert drafter.gpu == "h200"
    assert (drafter.measurement.num_anchors, drafter.measurement.batch_size) == (512, 4)
    # Targets: 16 samples per step / 2.0 s = 8 samples/s x 2,000 = 16,000 tok/s over 3
    # target GPUs = 5,333 per GPU, a lower bound (the pipeline's rate, not the targets').
    assert target.measurement.tokens_per_s == pytest.approx(16000 / 3)
    assert target.measurement.bound == "at_least"
    assert target.measurement.avg_sample_tokens == 2000
    # The line cut short at the end is skipped and named (line 14: two header lines,
    # five steps, the eval line, five steps).
    assert reading.skipped == 1
    assert reading.first_skipped.startswith("specforge_train.log:14: metrics line cut short")
    assert reading.used == 10
    # 0.4 s of data wait in a 2.0 s step: 20 %.
    assert any("waited for data 20%" in note for note in reading.notes)
    # 16 samples per step / 4 per GPU = 4 drafter GPUs, as the context says: no warning.
    assert any(note.startswith("4.0 drafter GPUs implied") for note in reading.notes)
    assert not any("check the batch size" in note for note in reading.notes)


def test_specforge_tracker_keys_and_gpu_count_instead_of_batch(tmp_path):
    # With a tracker, keys carry "train/" (specforge/training/tracking.py); the line may be
    # prefixed by torchrun's rank tag. No batch: samples per GPU-step = 6.0 samples/s x
    # 2.0 s / 4 GPUs = 3; / 1.5 s compute = 2 samples/s x 1,000 tokens = 2,000 tok/s.
    log = tmp_path / "train.log"
    log.write_text(
        "[rank0]: step 10: {'train/loss': 2.0, "
        "'train/perf/optimizer_step_time_s': 2.0, "
        "'train/perf/data_wait_time_s': 0.0, "
        "'train/perf/train_compute_time_s': 1.5, "
        "'train/perf/global_samples_per_second': 6.0}\n"
    )
    ctx = RunContext(avg_sample_tokens=1000, drafter_gpus=4)
    reading = read_throughput(log, ctx)
    drafter = by_role(reading)["drafter"]
    assert drafter.measurement.tokens_per_s == pytest.approx(2000)
    assert drafter.gpu is None
    # No target GPU count: no target point, and the notes say what is missing.
    assert "target" not in by_role(reading)
    assert any("number of target GPUs" in note for note in reading.notes)
    # A 0 % wait: the drafter set the pace.
    assert any("it set the pace" in note for note in reading.notes)


def test_specforge_batch_disagreeing_with_gpu_count_is_noted():
    # The log implies 4 GPUs at 4 samples each; a plan of 8 drafters is flagged.
    ctx = RunContext(avg_sample_tokens=2000, drafter_gpus=8, batch_size=4)
    reading = read_throughput(DATA / "specforge_train.log", ctx)
    assert any("the plan says 8 drafter GPUs" in note for note in reading.notes)


def test_specforge_without_batch_or_gpu_count_gives_no_drafter_point():
    reading = read_throughput(
        DATA / "specforge_train.log", RunContext(avg_sample_tokens=2000, target_gpus=3)
    )
    assert set(by_role(reading)) == {"target"}
    assert any("drafter rate not derived" in note for note in reading.notes)


def test_torchspec_log():
    ctx = RunContext(avg_sample_tokens=2000, target_gpu="h100", drafter_gpu="h100")
    reading = read_throughput(DATA / "torchspec_train.log", ctx)
    assert reading.format == "TorchSpec log"
    drafter, target = by_role(reading)["drafter"], by_role(reading)["target"]
    # global_batch_size 32 / dp_size 4 = 8 samples per GPU-step / 1.0 s compute = 8
    # samples/s x 2,000 = 16,000 tok/s. Fourteen TIMING lines (steps 1-5, 10-50):
    # ceil(1.4) = 2 warm-up reports dropped (steps 1 and 2, 9 s and 3 s).
    assert drafter.measurement.tokens_per_s == pytest.approx(16000)
    assert (drafter.spread.count, drafter.spread.warmup) == (12, 2)
    assert drafter.measurement.bound == "exact"
    # Targets: bar I (inference capacity) 3 (warm-up), 12, 12, 11, 13 samples/s: median
    # 12 x 2,000 / (4 engines x 1 GPU) = 6,000 tok/s per GPU.
    assert target.measurement.tokens_per_s == pytest.approx(6000)
    assert target.measurement.bound == "exact"
    assert target.measurement.date == "2026-04-16"  # from the log's own timestamps
    assert reading.skipped == 0


def test_torchspec_bar_without_perf_metrics_gives_lower_bounds(tmp_path):
    # Without debug.enable_perf_metrics the bar shows thru only: what flowed, a lower bound
    # on the targets. 5 samples/s x 1,000 tokens / 2 GPUs = 2,500 tok/s.
    log = tmp_path / "ts.log"
    log.write_text(
        "\r".join(
            f"Training:   1%|   | {n}/100 [00:0{n}<01:00, 1.00step/s, "
            f"loss=2.000, acc=0.300, acc_len=1.50, thru=5.0, epoch=1/1]"
            for n in range(1, 4)
        )
        + "\n"
    )
    reading = read_throughput(log, RunContext(avg_sample_tokens=1000, target_gpus=2))
    target = by_role(reading)["target"]
    assert target.measurement.tokens_per_s == pytest.approx(2500)
    assert target.measurement.bound == "at_least"
    assert "drafter" not in by_role(reading)


def test_specforge_legacy_bar():
    ctx = RunContext(avg_sample_tokens=2000, target_gpu="a100", drafter_gpu="a100", batch_size=2)
    reading = read_throughput(DATA / "specforge_legacy.log", ctx)
    assert reading.format == "SpecForge legacy log"
    # iter_time 6.0 (warm-up, dropped), 2.0, 2.0, 2.1, 1.9 s: 2 samples x 2,000 tokens /
    # 2.0 s = 2,000 tok/s is the median of 2,000, 2,000, 1,905, 2,105. Colocated: each
    # role runs at least this fast.
    points = by_role(reading)
    for role in ("target", "drafter"):
        assert points[role].measurement.tokens_per_s == pytest.approx(2000)
        assert points[role].measurement.bound == "at_least"
    assert points["drafter"].spread.warmup == 1


def test_own_csv():
    reading = read_throughput(DATA / "own.csv", RunContext(avg_sample_tokens=2344))
    assert reading.format == "own pipeline"
    target, drafter = by_role(reading)["target"], by_role(reading)["drafter"]
    # Target reports 1,000 (first of six: warm-up), 4,900, 5,000, 5,100, 4,950, 5,050:
    # median of the five kept is 5,000; inclusive quartiles 4,950 and 5,050.
    assert target.measurement.tokens_per_s == 5000
    assert (target.spread.low, target.spread.high, target.spread.count) == (4950, 5050, 5)
    assert target.gpu == "rtx-pro-6000"
    # Drafter (unix seconds): 20,000 dropped; 40,000, 41,000, 39,000, 40,000: median 40,000.
    assert drafter.measurement.tokens_per_s == 40000
    assert drafter.measurement.date == "2026-11-30"  # 1796033040 s is 2026-11-30 UTC
    # Three bad lines: a rate that is not a number (line 13), an unknown role, a short row.
    assert reading.skipped == 3
    assert reading.first_skipped == ("own.csv:13: tokens_per_s 'fast': must be a positive number")
    assert reading.notes == ("columns not used: note",)


def test_own_json_lines_sorted_by_time(tmp_path):
    # Written out of order: sorted by time, the first report (t = 0, 1 tok/s) is the warm-up
    # of four; the rest are 10, 20, 30: median 20.
    path = tmp_path / "own.jsonl"
    rows = [(3, 30), (0, 1), (2, 20), (1, 10)]
    path.write_text(
        "".join(
            json.dumps({"timestamp": t, "role": "drafter", "gpu": "b200", "tokens_per_s": r}) + "\n"
            for t, r in rows
        )
        + '{"timestamp": 4, "role": "drafter", "gpu": "b2'
    )
    reading = read_throughput(path, RunContext(avg_sample_tokens=100))
    assert reading.points[0].measurement.tokens_per_s == 20
    # The last line is cut short (no newline, not JSON): counted and named.
    assert reading.skipped == 1
    assert reading.first_skipped == "own.jsonl:5: not JSON: cut short (the file may be truncated)"


@pytest.mark.parametrize(
    "text, message",
    [
        ("", "empty file"),
        (
            "time,role,gpu,tokens_per_s\n1,target,b200,5\n",
            "own.csv:1: header 'time,role,gpu,tokens_per_s' lacks timestamp",
        ),
        (
            "timestamp,role,gpu,tokens_per_s\nyesterday,target,b200,5\n",
            "no throughput reports (1 skipped, first: own.csv:2: timestamp 'yesterday'",
        ),
        (
            "timestamp,role,gpu,tokens_per_s\n1,target,b200,-5\n",
            "tokens_per_s '-5': must be a positive number",
        ),
    ],
)
def test_own_format_errors_name_file_and_line(tmp_path, text, message):
    path = tmp_path / "own.csv"
    path.write_text(text)
    with pytest.raises(PlanError) as err:
        read_throughput(path, RunContext(avg_sample_tokens=100))
    assert message in str(err.value)
    assert "\n" not in str(err.value)


def test_huge_line_is_skipped_and_the_rest_read(tmp_path):
    # A 100 KB line (over the 64 KiB limit) between good reports: skipped unread, counted.
    path = tmp_path / "own.csv"
    path.write_text(
        "timestamp,role,gpu,tokens_per_s\n1,target,b200,5000\n"
        + "x" * 100_000
        + "\n2,target,b200,7000\n"
    )
    reading = read_throughput(path, RunContext(avg_sample_tokens=100))
    # Two reports: no warm-up dropped; median (5,000 + 7,000) / 2 = 6,000.
    assert reading.points[0].measurement.tokens_per_s == 6000
    assert reading.first_skipped == "own.csv:3: longer than 65,536 bytes"


def test_a_log_without_throughput_lines_is_an_error(tmp_path):
    path = tmp_path / "other.log"
    path.write_text("INFO starting\nstep 5: {'eval/loss': 1.0}\n")
    with pytest.raises(PlanError, match="no SpecForge or TorchSpec throughput lines"):
        read_throughput(path, CTX)


def test_bad_average_sample_length_is_refused():
    with pytest.raises(PlanError, match="average sample length 0"):
        read_throughput(DATA / "own.csv", RunContext(avg_sample_tokens=0))


PROBE = """\
probe_format = 1
tool_version = "dflash-plan 0.1.0"
date = "2026-11-30"
gpu = "b200"

[target]
tokens_per_s = 41000.0
gpu_busy = true
seconds = 600.0
target_model = "qwen3-8b"
avg_sample_tokens = 2344
max_length = 3072
tp = 1

[drafter]
tokens_per_s = 30500.0
seconds = 600.0
target_model = "qwen3-8b"
avg_sample_tokens = 2344
num_anchors = 128
batch_size = 2
block_size = 16
max_batch_size = 8
"""


def test_probe_result(tmp_path):
    path = tmp_path / "probe.toml"
    path.write_text(PROBE)
    reading = read_throughput(path)
    target, drafter = by_role(reading)["target"], by_role(reading)["drafter"]
    assert (target.gpu, target.measurement.tokens_per_s, target.measurement.gpu_busy) == (
        "b200",
        41000,
        True,
    )
    assert target.measurement.source == "probe probe.toml (dflash-plan 0.1.0, 600 s)"
    assert target.workload == {"max_length": 3072, "tp": 1}
    assert (drafter.measurement.num_anchors, drafter.measurement.batch_size) == (128, 2)
    assert drafter.workload == {"block_size": 16, "max_batch_size": 8}
    assert drafter.measurement.date == "2026-11-30"
    assert reading.notes == ()


def test_probe_from_a_newer_minor_version_lists_unknown_keys(tmp_path):
    path = tmp_path / "probe.toml"
    path.write_text(PROBE.replace("[target]\n", "[target]\npower_w = 980.0\n"))
    reading = read_probe(path)
    assert reading.notes == ("keys not known to this version, left out: target.power_w",)
    assert len(reading.points) == 2


@pytest.mark.parametrize(
    "text, message",
    [
        (
            PROBE.replace("probe_format = 1", "probe_format = 2"),
            "probe_format 2 was written by a newer dflash-plan",
        ),
        (PROBE.replace("probe_format = 1\n", ""), "not a dflash-plan probe result"),
        (PROBE.replace("tokens_per_s = 41000.0", 'tokens_per_s = "fast"'), "probe.toml:7:"),
        (PROBE.replace("tokens_per_s = 30500.0", "tokens_per_s = 0.0"), "probe.toml:16:"),
        (
            "probe_format = 1\ntool_version = 'x'\ndate = '2026-11-30'\ngpu = 'b200'\n",
            "no [target] or [drafter] result",
        ),
        (PROBE[:40], "not valid TOML"),
    ],
)
def test_probe_errors(tmp_path, text, message):
    path = tmp_path / "probe.toml"
    path.write_text(text)
    with pytest.raises(PlanError) as err:
        read_probe(path)
    assert message in str(err.value)


def test_records_keep_line_numbers_across_chunks_and_carriage_returns(tmp_path):
    # Chunks of 7 bytes cut records in the middle; the \r-separated redraws stay on line 2;
    # the 12-byte record passes the 10-byte limit and comes back without its bytes.
    path = tmp_path / "x.log"
    path.write_bytes(b"first\nbar 1\rbar 2\r\nabcdefghijkl\n\nlast")
    got = [(r.line, r.data, r.last) for r in records(path, 10, split_cr=True, chunk_bytes=7)]
    assert got == [
        (1, b"first", False),
        (2, b"bar 1", False),
        (2, b"bar 2", False),
        (3, None, False),
        (5, b"last", True),
    ]


def test_records_report_progress(tmp_path):
    path = tmp_path / "x.log"
    path.write_bytes(b"a\n" * 10)
    seen = []
    list(records(path, 10, progress=lambda done, total: seen.append((done, total)), chunk_bytes=8))
    # 20 bytes in chunks of 8: 8, 16, 20.
    assert seen == [(8, 20), (16, 20), (20, 20)]


def test_missing_file_and_folder_are_one_line_errors(tmp_path):
    with pytest.raises(PlanError, match="no such file"):
        read_throughput(tmp_path / "none.log", CTX)
    with pytest.raises(PlanError, match="is a folder"):
        runlogs.read_training_log(tmp_path, CTX)


def test_a_bar_cut_mid_redraw_is_counted(tmp_path):
    # tqdm ends its line only when closed: a log copied mid-run ends inside a redraw.
    # One whole redraw (2 samples x 500 tokens / 0.50 s = 2,000 tok/s) and one cut short.
    path = tmp_path / "legacy.log"
    path.write_text(
        "Training Epoch 0:   0%|   | 1/9 [00:01<00:04, 0.50s/it, loss=2.0, "
        "acc=0.3, iter_time=0.50s]\rTraining Epoch 0:   0%|   | 2/9 [00:01<00:04,"
        " 0.50s/it, loss=2.0, acc=0.3, iter_time=0."
    )
    reading = read_throughput(path, RunContext(avg_sample_tokens=500, batch_size=2))
    assert reading.points[0].measurement.tokens_per_s == 2000
    assert reading.skipped == 1
    assert reading.first_skipped.startswith("legacy.log:1: cut short tqdm bar")
