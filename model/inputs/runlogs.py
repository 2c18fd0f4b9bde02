"""The throughput a running job already logs, as calibration measurements.

Three kinds of file, each read in bounded memory (model/lines.py):

- a trainer's log: SpecForge (the `specforge train` runtime and the legacy
  scripts/train_dflash.py) and TorchSpec, in the line formats their code prints (below);
- the user's own pipeline: CSV or JSON lines of `timestamp, role, gpu, tokens_per_s`
  (docs/own-numbers.md);
- a probe result: the TOML file a short benchmark writes (docs/own-numbers.md).

Each gives `Point`s: a role, the GPU key it belongs to and a `plan.Measurement` (per GPU,
dataset tokens per second) that the caller adds to `[calibration.<role>]`. What a log does
not say (the average sample length, the GPU counts, the batch) comes from a `RunContext`
the caller fills from the plan. A repeated figure is summarised by its median over the
steady part of the run (`steady`); lines that look like ours but cannot be read are
skipped, counted, and the first one is named.
"""

from __future__ import annotations

import csv
import datetime as dt
import json
import math
import re
import statistics
from collections.abc import Iterator, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

from pydantic import BaseModel, ConfigDict, ValidationError

from ..basics.errors import PlanError
from ..basics.lines import Progress, Record, records
from ..basics.tomlfile import read_toml
from ..basics.validation import explain, short_repr
from .plan import Measurement

Role = Literal["target", "drafter"]
ROLES: tuple[Role, ...] = ("target", "drafter")

# A log line longer than this is not one of the lines read here (the longest, SpecForge's
# metrics dict, is well under 2 KB); it is skipped unread and counted.
MAX_LOG_LINE_BYTES = 65_536
# The first reports of a run include compilation, cache warm-up and the first fetches:
# this share of them (at least one, once there are four) is dropped before the median.
WARMUP_SHARE = 0.1
MIN_REPORTS_FOR_WARMUP = 4
# A drafter that waits for data this share of its step or more was not the bottleneck.
DATA_WAIT_NOTE_SHARE = 0.05


@dataclass(frozen=True, slots=True)
class RunContext:
    """What a log does not say, from the plan or the run's config.

    avg_sample_tokens turns samples/s into dataset tokens/s. The GPU keys say which
    calibration entry a point belongs to. Counts and batch are those of the run the log
    is from: batch_size x accumulation_steps is the samples one drafter GPU trains per
    optimizer step."""

    avg_sample_tokens: float
    target_gpu: str | None = None
    drafter_gpu: str | None = None
    target_gpus: int | None = None
    drafter_gpus: int | None = None
    batch_size: int | None = None
    accumulation_steps: int = 1
    num_anchors: int | None = None
    target_model: str | None = None
    drafter: str | None = None  # the drafter family trained (workload.drafter)


@dataclass(frozen=True, slots=True)
class Spread:
    """A repeated figure over the steady part of a run: median and quartiles of the
    reports kept, how many were kept and how many were dropped as warm-up."""

    median: float
    low: float
    high: float
    count: int
    warmup: int

    def describe(self, unit: str = "tok/s") -> str:
        return (
            f"median of {self.count} reports {self.median:,.0f} {unit} (quartiles "
            f"{self.low:,.0f}-{self.high:,.0f}; first {self.warmup} dropped as warm-up)"
        )


@dataclass(frozen=True, slots=True)
class Point:
    """One calibration point: a role's measured rate on one GPU type. gpu is None when
    the file does not say and the context did not either. workload holds what the run
    was measured on beyond the Measurement's own fields (a probe's max_length, tp,
    block size), for the caller to compare with the plan."""

    role: Role
    gpu: str | None
    measurement: Measurement
    spread: Spread | None = None
    workload: Mapping[str, Any] = field(default_factory=dict)

    @property
    def samples_per_s(self) -> float | None:
        """The rate in samples per second per GPU, when the sample length is known."""
        tokens = self.measurement.avg_sample_tokens
        return self.measurement.tokens_per_s / tokens if tokens else None


@dataclass(frozen=True, slots=True)
class LogReading:
    """What one file gave: its points, how many records were used and skipped (the
    first skipped one named, `file:line: why`), and notes on how to read the points."""

    path: str
    format: str
    points: tuple[Point, ...]
    used: int
    skipped: int = 0
    first_skipped: str | None = None
    notes: tuple[str, ...] = ()

    def summary(self) -> str:
        """One line for the UI: what was read and what was skipped."""
        text = f"{self.path}: {self.format}, {self.used:,} reports used"
        if self.skipped:
            text += f", {self.skipped:,} skipped (first: {self.first_skipped})"
        return text


def steady(values: Sequence[float], warmup_share: float = WARMUP_SHARE) -> Spread | None:
    """The median and quartiles of values after dropping the warm-up at their start
    (in the order given, which is the run's order), or None for no values."""
    if not values:
        return None
    drop = (
        max(1, math.ceil(len(values) * warmup_share))
        if len(values) >= MIN_REPORTS_FOR_WARMUP
        else 0
    )
    kept = sorted(values[drop:])
    median = statistics.median(kept)
    low, high = median, median
    if len(kept) >= 2:
        low, _, high = statistics.quantiles(kept, n=4, method="inclusive")
    return Spread(median, low, high, len(kept), drop)


class _Skips:
    """Counts records that looked like ours but could not be read; keeps the first."""

    def __init__(self, path: Path) -> None:
        self.path, self.count = path, 0
        self.first: str | None = None

    def add(self, line: int, why: str) -> None:
        self.count += 1
        if self.first is None:
            self.first = f"{self.path.name}:{line}: {why}"


def _text(record: Record, skips: _Skips) -> str | None:
    if record.data is None:
        skips.add(record.line, f"longer than {MAX_LOG_LINE_BYTES:,} bytes")
        return None
    return record.data.decode("utf-8", errors="replace")


def file_date(path: Path) -> str:
    """The log file's modification date (UTC): when its last line was written."""
    return dt.datetime.fromtimestamp(path.stat().st_mtime, dt.UTC).date().isoformat()


def _point(
    role: Role,
    gpu: str | None,
    tokens_per_s: float,
    ctx: RunContext,
    *,
    bound: str,
    source: str,
    date: str | None,
    spread: Spread | None,
    gpu_busy: bool | None = None,
    notes: list[str],
) -> Point | None:
    """A Point, or None with a note when the rate is outside what a plan accepts."""
    fields: dict[str, Any] = {
        "tokens_per_s": tokens_per_s,
        "bound": bound,
        "source": source,
        "date": date,
        "avg_sample_tokens": max(1, round(ctx.avg_sample_tokens)),
        "target_model": ctx.target_model,
        "gpu_busy": gpu_busy,
    }
    if role == "drafter":
        fields |= {
            "num_anchors": ctx.num_anchors,
            "batch_size": ctx.batch_size,
            "drafter": ctx.drafter,
        }
    try:
        measurement = Measurement(**{k: v for k, v in fields.items() if v is not None})
    except ValidationError as err:
        notes.append(f"{role} rate not used: {explain(err, role)}")
        return None
    return Point(role, gpu, measurement, spread)


def _require_tokens(ctx: RunContext) -> None:
    if not (
        isinstance(ctx.avg_sample_tokens, (int, float))
        and math.isfinite(ctx.avg_sample_tokens)
        and ctx.avg_sample_tokens > 0
    ):
        raise PlanError.flag(
            "average sample length",
            repr(ctx.avg_sample_tokens),
            "must be a positive number of tokens (it turns samples/s into tokens/s)",
            "workload.avg_sample_tokens",
        )


# --- SpecForge ------------------------------------------------------------------------
# The `specforge train` runtime prints one line per log interval
# (sgl-project/SpecForge a6b6b02, specforge/training/assembly.py:291, `_logger`):
#     print(f"step {step}: {printable}")
# printable is a dict repr of the metrics TrainerController._fit builds
# (specforge/training/controller.py:697-721): loss, acc, grad_norm, lr and, per window
# since the last line, perf/optimizer_step_time_s, perf/data_wait_time_s,
# perf/train_compute_time_s, perf/durable_ack_time_s (each per optimizer step),
# perf/optimizer_steps_per_hour and perf/global_samples_per_second (this rank's samples x
# the data-parallel size / the window). With an external tracker the keys carry a
# "train/" prefix (specforge/training/tracking.py, training_metric_names).
_SPECFORGE_STEP = re.compile(r"\bstep (\d+): \{")
_SPECFORGE_DICT = re.compile(r"\bstep (\d+): (\{.*\})\s*$")
_PY_SCALAR = re.compile(r"'((?:[^'\\]|\\.)*)': (-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|-?inf)")
# The legacy colocated trainer (scripts/train_dflash.py, SpecForge 40d8fef, removed in
# d5883d5) shows on its rank-0 tqdm bar, per micro step:
#     progress_bar.set_postfix({"loss": ..., "acc": ..., "iter_time": f"{elapsed:.2f}s"})
# (lines 671-677), on a bar described f"Training Epoch {epoch}".
_LEGACY_BAR = re.compile(r"Training Epoch (\d+):.*\biter_time=(\d+\.?\d*)s")

# --- TorchSpec ------------------------------------------------------------------------
# lightseekorg/TorchSpec 6f21829, torchspec/controller/loop.py, through the logger of
# torchspec/utils/logging.py ("[%(asctime)s] %(filename)s:%(lineno)d %(levelname)s ..."):
#   line 222: f"Starting: num_steps=..., num_epochs=..., steps_per_epoch=...,
#             global_batch_size={G}, accumulation_steps={A}, dp_size={D},
#             per_dp_rank_batch_size={B}"
#   line 340: f"TIMING step={n}: step={s:.3f}s data={d:.3f}s compute={c:.3f}s
#             [fwd=...s bwd=...s opt=...s] dispatch={w:.3f}s"  (steps 1-5, then every 5th)
# and the tqdm bar's postfix (lines 368-381): thru (realised pipeline samples/s), I
# (inference capacity, samples/s), T (global_batch_size / step time), wait, pool, epoch.
# torchspec/inference/factory.py:129/184/327 print
#   f"Initializing {n} Sgl engines ({g} GPU(s) each, ...)" (HF and vLLM alike).
_TS_STAMP = re.compile(r"^\[(\d{4}-\d\d-\d\d)[ T]\d\d:\d\d:\d\d")
_TS_START = re.compile(
    r"Starting: num_steps=\d+.*?global_batch_size=(\d+), "
    r"accumulation_steps=(\d+), dp_size=(\d+), "
    r"per_dp_rank_batch_size=(\d+)"
)
_TS_ENGINES = re.compile(r"Initializing (\d+) (?:Sgl|HF|vLLM) engines \((\d+) GPU\(s\) each")
_TS_TIMING = re.compile(
    r"TIMING step=(\d+): step=(\d+\.?\d*)s data=(\d+\.?\d*)s "
    r"compute=(\d+\.?\d*)s .*dispatch=(\d+\.?\d*)s"
)
_TS_BAR_FIELD = re.compile(r"(?:^|[ ,])(thru|I|T)=(\d+\.?\d*)(?=[,\]\s]|$)")


def _metrics(text: str) -> dict[str, float]:
    """The scalar entries of a printed metrics dict, "train/" prefixes dropped."""
    out = {}
    for key, value in _PY_SCALAR.findall(text):
        out[key.removeprefix("train/")] = float(value)
    return out


@dataclass
class _Series:
    """Figures collected in run order, per kind; the steps they belong to; the date of
    the last timestamped line."""

    values: dict[str, list[float]] = field(default_factory=dict)
    steps: list[int] = field(default_factory=list)
    date: str | None = None

    def add(self, kind: str, value: float) -> None:
        self.values.setdefault(kind, []).append(value)


def read_training_log(path: Path, ctx: RunContext, progress: Progress | None = None) -> LogReading:
    """The drafter's (and, where the log shows it, the targets') per-GPU rate in a
    SpecForge or TorchSpec training log. PlanError when the file has none of their
    throughput lines."""
    path = Path(path)
    _require_tokens(ctx)
    skips = _Skips(path)
    spec, legacy, torch = _Series(), _Series(), _Series()
    ts_shape: dict[str, int] = {}
    for record in records(
        path, MAX_LOG_LINE_BYTES, split_cr=True, progress=progress, what="a training log"
    ):
        text = _text(record, skips)
        if text is None:
            continue
        if _SPECFORGE_STEP.search(text):
            _specforge_line(text, record, spec, skips)
        elif "iter_time=" in text and "Training Epoch" in text:
            match = _LEGACY_BAR.search(text)
            if match and float(match.group(2)) > 0:
                legacy.add("iter_s", float(match.group(2)))
            else:
                why = "cut short" if record.last else "unreadable"
                skips.add(record.line, f"{why} tqdm bar {short_repr(text.strip())}")
        else:
            _torchspec_line(text, record, torch, ts_shape, skips)
    date = file_date(path)
    if spec.values.get("step_s"):
        return _specforge_reading(path, ctx, spec, skips, date)
    if torch.values:
        return _torchspec_reading(path, ctx, torch, ts_shape, skips, torch.date or date)
    if legacy.values:
        return _legacy_reading(path, ctx, legacy, skips, date)
    hint = f"; skipped {skips.count:,} (first: {skips.first})" if skips.count else ""
    raise PlanError.at(
        str(path),
        f"no SpecForge or TorchSpec throughput lines (looked for "
        f"'step N: {{...perf/...}}', 'TIMING step=', tqdm 'iter_time=' or "
        f"'thru='): is this the trainer's log?{hint}",
    )


def _specforge_line(text: str, record: Record, series: _Series, skips: _Skips) -> None:
    match = _SPECFORGE_DICT.search(text)
    if not match:
        skips.add(record.line, "metrics line cut short (no closing '}')")
        return
    metrics = _metrics(match.group(2))
    step_s = metrics.get("perf/optimizer_step_time_s")
    samples_per_s = metrics.get("perf/global_samples_per_second")
    if step_s is None and samples_per_s is None:
        return  # an eval line or a version without perf figures: not ours
    if not (
        step_s
        and samples_per_s
        and step_s > 0
        and samples_per_s > 0
        and math.isfinite(step_s)
        and math.isfinite(samples_per_s)
    ):
        skips.add(
            record.line,
            f"step {match.group(1)}: perf figures missing or not "
            f"positive (step time {step_s}, samples/s {samples_per_s})",
        )
        return
    wait_s = metrics.get("perf/data_wait_time_s", 0.0)
    compute_s = metrics.get("perf/train_compute_time_s", step_s - wait_s)
    if not (math.isfinite(wait_s) and math.isfinite(compute_s) and compute_s > 0):
        skips.add(record.line, f"step {match.group(1)}: compute time {compute_s} s")
        return
    series.steps.append(int(match.group(1)))
    series.add("step_s", step_s)
    series.add("wait_s", wait_s)
    series.add("compute_s", compute_s)
    series.add("samples_per_s", samples_per_s)


def _specforge_reading(
    path: Path, ctx: RunContext, s: _Series, skips: _Skips, date: str
) -> LogReading:
    notes: list[str] = []
    points: list[Point] = []
    v = s.values
    windows = len(v["step_s"])
    where = f"{path.name}: SpecForge log, steps {s.steps[0]}-{s.steps[-1]}"
    # Samples one drafter GPU trains per optimizer step: from the batch, else from the
    # global rate and the GPU count (global samples per step / GPUs).
    per_gpu_step = None
    if ctx.batch_size:
        per_gpu_step = [float(ctx.batch_size * ctx.accumulation_steps)] * windows
        dp = [g * t / per_gpu_step[0] for g, t in zip(v["samples_per_s"], v["step_s"], strict=True)]
        dp_median = statistics.median(dp)
        notes.append(
            f"{dp_median:.1f} drafter GPUs implied by the log's global samples/s "
            f"and {ctx.batch_size} x {ctx.accumulation_steps} samples per GPU "
            f"per step"
        )
        if ctx.drafter_gpus and abs(dp_median / ctx.drafter_gpus - 1) > 0.1:
            notes.append(
                f"the plan says {ctx.drafter_gpus} drafter GPUs: check the batch "
                f"size and GPU count of the run this log is from"
            )
    elif ctx.drafter_gpus:
        per_gpu_step = [
            g * t / ctx.drafter_gpus for g, t in zip(v["samples_per_s"], v["step_s"], strict=True)
        ]
    if per_gpu_step is None:
        notes.append(
            "drafter rate not derived: give the run's batch size or its number of drafter GPUs"
        )
    else:
        # The drafter's own capacity: its samples over its compute time, data wait left
        # out (the model adds a blocking fetch separately, model/pipeline.py). Compute
        # includes the gradient all-reduce, so a multi-GPU run slightly understates one
        # GPU's compute rate.
        rates = [
            n / c * ctx.avg_sample_tokens for n, c in zip(per_gpu_step, v["compute_s"], strict=True)
        ]
        spread = steady(rates)
        assert spread is not None
        point = _point(
            "drafter",
            ctx.drafter_gpu,
            spread.median,
            ctx,
            bound="exact",
            source=f"{where}, samples per GPU-step / compute time, {spread.describe()}",
            date=date,
            spread=spread,
            notes=notes,
        )
        points += [point] if point else []
    shares = steady([w / t for w, t in zip(v["wait_s"], v["step_s"], strict=True)])
    assert shares is not None
    if shares.median >= DATA_WAIT_NOTE_SHARE:
        notes.append(
            f"the drafter waited for data {shares.median:.0%} of each step: "
            f"the targets or the hidden-state transfer set the pace"
        )
    else:
        notes.append(
            f"the drafter waited for data {shares.median:.0%} of each step: it "
            f"set the pace, so the targets' rate is a lower bound"
        )
    if ctx.target_gpus:
        rates = [g * ctx.avg_sample_tokens / ctx.target_gpus for g in v["samples_per_s"]]
        spread = steady(rates)
        assert spread is not None
        point = _point(
            "target",
            ctx.target_gpu,
            spread.median,
            ctx,
            bound="at_least",
            source=f"{where}, pipeline tokens/s over {ctx.target_gpus} target "
            f"GPUs, {spread.describe()}",
            date=date,
            spread=spread,
            notes=notes,
        )
        points += [point] if point else []
    else:
        notes.append("targets' rate not derived: give the run's number of target GPUs")
    return LogReading(
        str(path), "SpecForge log", tuple(points), windows, skips.count, skips.first, tuple(notes)
    )


def _legacy_reading(
    path: Path, ctx: RunContext, s: _Series, skips: _Skips, date: str
) -> LogReading:
    notes = [
        "colocated trainer: every GPU ran the target forward and the drafter step "
        "in turn at this rate, so each role alone runs at least this fast"
    ]
    points: list[Point] = []
    iters = s.values["iter_s"]
    if not ctx.batch_size:
        notes.append(
            "rates not derived: give the run's --batch-size (samples per GPU "
            "per step; the bar does not show it)"
        )
    else:
        rates = [ctx.batch_size * ctx.avg_sample_tokens / t for t in iters]
        spread = steady(rates)
        assert spread is not None
        pairs: tuple[tuple[Role, str | None], ...] = (
            ("target", ctx.target_gpu),
            ("drafter", ctx.drafter_gpu),
        )
        for role, gpu in pairs:
            point = _point(
                role,
                gpu,
                spread.median,
                ctx,
                bound="at_least",
                source=f"{path.name}: SpecForge legacy train_dflash.py bar, "
                f"batch / iter_time, {spread.describe()}",
                date=date,
                spread=spread,
                notes=notes,
            )
            points += [point] if point else []
    return LogReading(
        str(path),
        "SpecForge legacy log",
        tuple(points),
        len(iters),
        skips.count,
        skips.first,
        tuple(notes),
    )


def _torchspec_line(
    text: str, record: Record, series: _Series, shape: dict[str, int], skips: _Skips
) -> None:
    stamp = _TS_STAMP.match(text)
    if "TIMING step=" in text:
        match = _TS_TIMING.search(text)
        if not match:
            skips.add(record.line, f"unreadable TIMING line {short_repr(text.strip())}")
            return
        compute_s = float(match.group(4))
        if compute_s <= 0:
            skips.add(record.line, f"TIMING step={match.group(1)}: compute time 0 s")
            return
        series.steps.append(int(match.group(1)))
        series.add("compute_s", compute_s)
        series.add("step_s", float(match.group(2)))
        series.add("data_s", float(match.group(3)))
        series.add("dispatch_s", float(match.group(5)))
    elif "thru=" in text:
        fields = dict(_TS_BAR_FIELD.findall(text))
        if "thru" not in fields:
            skips.add(record.line, f"unreadable tqdm bar {short_repr(text.strip())}")
            return
        for key, kind in (("thru", "thru"), ("I", "infer"), ("T", "train")):
            if key in fields and float(fields[key]) > 0:
                series.add(kind, float(fields[key]))
    elif match := _TS_START.search(text):
        shape.update(global_batch=int(match.group(1)), dp=int(match.group(3)))
    elif match := _TS_ENGINES.search(text):
        shape["target_gpus"] = shape.get("target_gpus", 0) + int(match.group(1)) * int(
            match.group(2)
        )
    else:
        return
    if stamp:
        series.date = stamp.group(1)


def _torchspec_reading(
    path: Path, ctx: RunContext, s: _Series, shape: dict[str, int], skips: _Skips, date: str
) -> LogReading:
    notes: list[str] = []
    points: list[Point] = []
    v = s.values
    where = f"{path.name}: TorchSpec log"
    dp = shape.get("dp") or ctx.drafter_gpus
    per_gpu_step = (
        shape["global_batch"] / shape["dp"]
        if "global_batch" in shape and shape.get("dp")
        else ctx.batch_size * ctx.accumulation_steps
        if ctx.batch_size
        else None
    )
    if "dp" in shape and ctx.drafter_gpus and shape["dp"] != ctx.drafter_gpus:
        notes.append(
            f"the log's run had dp_size={shape['dp']} drafter GPUs, the plan "
            f"{ctx.drafter_gpus}: the per-GPU rate is the log's"
        )
    target_gpus = shape.get("target_gpus") or ctx.target_gpus
    if v.get("compute_s") and per_gpu_step:
        # Per GPU: the global batch over the data-parallel ranks, over rank 0's CUDA-event
        # compute time (forward, backward, optimizer; docs/performance_metrics.md).
        spread = steady([per_gpu_step / c * ctx.avg_sample_tokens for c in v["compute_s"]])
        assert spread is not None
        point = _point(
            "drafter",
            ctx.drafter_gpu,
            spread.median,
            ctx,
            bound="exact",
            source=f"{where}, TIMING steps {s.steps[0]}-{s.steps[-1]}, batch "
            f"per GPU / compute time, {spread.describe()}",
            date=date,
            spread=spread,
            notes=notes,
        )
        points += [point] if point else []
    elif v.get("train") and dp:
        # T = global batch / step time: includes the data wait, so a lower bound.
        spread = steady([t / dp * ctx.avg_sample_tokens for t in v["train"]])
        assert spread is not None
        point = _point(
            "drafter",
            ctx.drafter_gpu,
            spread.median,
            ctx,
            bound="at_least",
            source=f"{where}, bar T over {dp} GPUs, {spread.describe()}",
            date=date,
            spread=spread,
            notes=notes,
        )
        points += [point] if point else []
    else:
        notes.append(
            "drafter rate not derived: no TIMING lines with a known batch per "
            "GPU (debug.enable_perf_metrics, or give the batch size)"
        )
    kind, bound = ("infer", "exact") if v.get("infer") else ("thru", "at_least")
    if v.get(kind) and target_gpus:
        # I: the engines' capacity if every slot were busy; thru: what flowed.
        label = "bar I (inference capacity)" if kind == "infer" else "bar thru (pipeline samples/s)"
        spread = steady([x * ctx.avg_sample_tokens / target_gpus for x in v[kind]])
        assert spread is not None
        point = _point(
            "target",
            ctx.target_gpu,
            spread.median,
            ctx,
            bound=bound,
            source=f"{where}, {label} over {target_gpus} target GPUs, {spread.describe()}",
            date=date,
            spread=spread,
            notes=notes,
        )
        points += [point] if point else []
    elif v.get(kind):
        notes.append(
            "targets' rate not derived: the log names no engines; give the "
            "run's number of target GPUs"
        )
    used = max(len(v.get("compute_s", ())), len(v.get("thru", ())))
    return LogReading(
        str(path), "TorchSpec log", tuple(points), used, skips.count, skips.first, tuple(notes)
    )


# --- the user's own pipeline ------------------------------------------------------------
OWN_COLUMNS = ("timestamp", "role", "gpu", "tokens_per_s")


def _timestamp(value: Any) -> float:
    """Seconds since the epoch from a number or an ISO 8601 text (UTC if no zone)."""
    if isinstance(value, bool):
        raise ValueError("must be seconds since 1970 or an ISO 8601 date and time")
    if isinstance(value, (int, float)):
        seconds = float(value)
    else:
        text = str(value).strip()
        try:
            seconds = float(text)
        except ValueError:
            try:
                stamp = dt.datetime.fromisoformat(text)
            except ValueError:
                raise ValueError(
                    "must be seconds since 1970 or an ISO 8601 date and time (2026-11-30T15:04:05Z)"
                ) from None
            if stamp.tzinfo is None:
                stamp = stamp.replace(tzinfo=dt.UTC)
            seconds = stamp.timestamp()
    if not math.isfinite(seconds) or not 0 <= seconds < 1e11:
        raise ValueError("must be seconds since 1970 or an ISO 8601 date and time")
    return seconds


def _own_rows(
    path: Path, skips: _Skips, progress: Progress | None
) -> Iterator[tuple[int, dict[str, Any]]]:
    header: list[str] | None = None
    json_lines: bool | None = None
    for record in records(
        path,
        MAX_LOG_LINE_BYTES,
        progress=progress,
        what="a throughput file (timestamp, role, gpu, tokens_per_s)",
    ):
        text = _text(record, skips)
        if text is None:
            continue
        text = text.strip().removeprefix("\ufeff")
        if json_lines is None:
            json_lines = text.startswith("{")
            if not json_lines:
                header = [name.strip().lower() for name in next(csv.reader([text]))]
                missing = [c for c in OWN_COLUMNS if c not in header]
                if missing:
                    raise PlanError.at(
                        f"{path}:{record.line}",
                        f"header {short_repr(text)} lacks "
                        f"{', '.join(missing)}; the columns are "
                        f"{', '.join(OWN_COLUMNS)} (docs/own-numbers.md)",
                    )
                continue
        if json_lines:
            try:
                row = json.loads(text)
            except ValueError as err:
                why = "cut short (the file may be truncated)" if record.last else str(err)
                skips.add(record.line, f"not JSON: {why}")
                continue
            if not isinstance(row, dict):
                skips.add(record.line, "not a JSON object")
                continue
        else:
            assert header is not None
            cells = next(csv.reader([text]))
            if len(cells) != len(header):
                why = " (the file may be truncated)" if record.last else ""
                skips.add(record.line, f"{len(cells)} columns, the header has {len(header)}{why}")
                continue
            row = dict(zip(header, cells, strict=True))
        yield record.line, row
    if json_lines is None:
        what = f"no readable line (first: {skips.first})" if skips.count else "empty file"
        raise PlanError.at(
            str(path), f"{what}; expected lines of {', '.join(OWN_COLUMNS)} (docs/own-numbers.md)"
        )


def read_own_log(
    path: Path,
    ctx: RunContext,
    progress: Progress | None = None,
    warmup_share: float = WARMUP_SHARE,
) -> LogReading:
    """Per (role, GPU) the median rate of a `timestamp, role, gpu, tokens_per_s` file
    (CSV with that header, or JSON lines with those keys; docs/own-numbers.md), over the
    steady part of each series in time order."""
    path = Path(path)
    _require_tokens(ctx)
    skips = _Skips(path)
    series: dict[tuple[str, str], list[tuple[float, float]]] = {}
    extra: set[str] = set()
    for line, row in _own_rows(path, skips, progress):
        missing = [c for c in OWN_COLUMNS if row.get(c) in (None, "")]
        if missing:
            skips.add(line, f"no {', '.join(missing)}")
            continue
        extra.update(k for k in row if k not in OWN_COLUMNS)
        role = str(row["role"]).strip().lower()
        gpu = str(row["gpu"]).strip()
        try:
            seconds = _timestamp(row["timestamp"])
        except ValueError as err:
            skips.add(line, f"timestamp {short_repr(row['timestamp'])}: {err}")
            continue
        try:
            rate = float(row["tokens_per_s"])
        except (TypeError, ValueError):
            rate = math.nan
        if role not in ROLES:
            skips.add(line, f"role {short_repr(row['role'])}: must be target or drafter")
        elif not gpu or len(gpu) > 200 or not gpu.isprintable():
            skips.add(line, f"gpu {short_repr(row['gpu'])}: must be a GPU key (b200)")
        elif not (math.isfinite(rate) and rate > 0):
            skips.add(
                line, f"tokens_per_s {short_repr(row['tokens_per_s'])}: must be a positive number"
            )
        else:
            series.setdefault((role, gpu), []).append((seconds, rate))
    if not series:
        hint = f" ({skips.count:,} skipped, first: {skips.first})" if skips.count else ""
        raise PlanError.at(
            str(path),
            f"no throughput reports{hint}; expected lines of "
            f"{', '.join(OWN_COLUMNS)} (docs/own-numbers.md)",
        )
    notes = [f"columns not used: {', '.join(sorted(extra))}"] if extra else []
    points: list[Point] = []
    for (role, gpu), reports in sorted(series.items()):
        reports.sort()
        spread = steady([rate for _, rate in reports], warmup_share)
        assert spread is not None
        date = dt.datetime.fromtimestamp(reports[-1][0], dt.UTC).date().isoformat()
        point = _point(
            role,  # type: ignore[arg-type]
            gpu,
            spread.median,
            ctx,
            bound="exact",
            source=f"{path.name}: own pipeline, {spread.describe()}",
            date=date,
            spread=spread,
            notes=notes,
        )
        points += [point] if point else []
    used = sum(len(r) for r in series.values())
    return LogReading(
        str(path), "own pipeline", tuple(points), used, skips.count, skips.first, tuple(notes)
    )


# --- probe results ----------------------------------------------------------------------
PROBE_FORMAT = 1


class _ProbeRole(BaseModel):
    """One role's result in a probe file: the rate and the workload it ran."""

    model_config = ConfigDict(extra="forbid", frozen=True)
    tokens_per_s: float
    seconds: float | None = None
    gpu_busy: bool | None = None
    target_model: str | None = None
    avg_sample_tokens: int | None = None
    max_length: int | None = None
    tp: int | None = None
    num_anchors: int | None = None
    batch_size: int | None = None
    block_size: int | None = None
    draft_layers: int | None = None
    max_batch_size: int | None = None
    # "at_least": the rate is a lower bound (a target measured through the pipeline)
    bound: Literal["exact", "at_least"] = "exact"


class _ProbeFile(BaseModel):
    model_config = ConfigDict(extra="forbid", frozen=True)
    probe_format: int
    tool_version: str
    date: str
    gpu: str
    target: _ProbeRole | None = None
    drafter: _ProbeRole | None = None


_MEASUREMENT_FIELDS = (
    "tokens_per_s",
    "gpu_busy",
    "target_model",
    "avg_sample_tokens",
    "num_anchors",
    "batch_size",
    "bound",
)


def read_probe(path: Path) -> LogReading:
    """The per-role rates a probe wrote (docs/own-numbers.md), exact, on the GPU and the
    workload it ran. Unknown keys (a newer minor version) are listed in the notes and
    left out; a newer probe_format is an error."""
    path = Path(path)
    doc, text = read_toml(path)
    version = doc.get("probe_format")
    if version is None:
        raise PlanError.at(str(path), "not a dflash-plan probe result (no probe_format key)")
    if isinstance(version, int) and not isinstance(version, bool) and version > PROBE_FORMAT:
        raise PlanError.at(
            str(path),
            f"probe_format {version} was written by a newer "
            f"dflash-plan; this one reads probe_format {PROBE_FORMAT}",
        )
    known_top = set(_ProbeFile.model_fields)
    known_role = set(_ProbeRole.model_fields)
    ignored = [k for k in doc if k not in known_top]
    clean = {k: v for k, v in doc.items() if k in known_top}
    for role in ROLES:
        if isinstance(clean.get(role), dict):
            ignored += [f"{role}.{k}" for k in clean[role] if k not in known_role]
            clean[role] = {k: v for k, v in clean[role].items() if k in known_role}
    try:
        probe = _ProbeFile.model_validate(clean)
    except ValidationError as err:
        raise explain(err, str(path), text) from None
    if probe.probe_format != PROBE_FORMAT:
        raise PlanError.at(
            str(path),
            f"probe_format = {probe.probe_format!r}: this dflash-plan "
            f"reads probe_format {PROBE_FORMAT}",
        )
    notes = [f"keys not known to this version, left out: {', '.join(ignored)}"] if ignored else []
    points: list[Point] = []
    for role in ROLES:
        result: _ProbeRole | None = getattr(probe, role)
        if result is None:
            continue
        values = result.model_dump(exclude_none=True)
        measured = {k: values.pop(k) for k in _MEASUREMENT_FIELDS if k in values}
        if role == "target":
            measured.pop("num_anchors", None)
            measured.pop("batch_size", None)
        seconds = f", {result.seconds:,.0f} s" if result.seconds else ""
        try:
            measurement = Measurement(
                **measured,
                date=probe.date,
                source=f"probe {path.name} ({probe.tool_version}{seconds})",
            )
        except ValidationError as err:
            raise explain(err, str(path), text, prefix=(role,)) from None
        values.pop("seconds", None)
        points.append(Point(role, probe.gpu, measurement, None, values))
    if not points:
        raise PlanError.at(str(path), "no [target] or [drafter] result")
    return LogReading(str(path), "probe result", tuple(points), len(points), notes=tuple(notes))


def read_throughput(
    path: Path, ctx: RunContext | None = None, progress: Progress | None = None
) -> LogReading:
    """Any of the three kinds: a .toml file is a probe result; a .csv or .jsonl file, or
    one whose first line is a JSON object or names tokens_per_s, the own format; anything
    else a training log. ctx is required for the last two."""
    path = Path(path)
    if path.suffix.lower() == ".toml":
        return read_probe(path)
    if ctx is None:
        raise PlanError.at(
            str(path), "reading a log needs the plan's average sample length (tokens per sample)"
        )
    if path.suffix.lower() in (".csv", ".jsonl"):
        return read_own_log(path, ctx, progress)
    stream = records(path, MAX_LOG_LINE_BYTES, what="a log or throughput file")
    first = next(stream, None)
    stream.close()
    if first is None:
        raise PlanError.at(str(path), "empty file")
    head = (first.data or b"").lstrip(b"\xef\xbb\xbf").lstrip().lower()
    if head.startswith(b"{") or b"tokens_per_s" in head:
        return read_own_log(path, ctx, progress)
    return read_training_log(path, ctx, progress)
