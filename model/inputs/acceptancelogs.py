"""The acceptance length a running job already logs, as (sample passes, tau) points.

tau here is what the serving engine reports as the acceptance length: tokens committed per
verification step, the bonus token included (vLLM's `1 + accepted / drafts`,
speculators c05b95b3 tests/e2e/run_vllm.py:64). Each trainer's figure is turned into it:

SpecForge (sgl-project/SpecForge a6b6b02), the `step {step}: {dict}` lines of
specforge/training/assembly.py:291 (`_logger`; "train/" prefixed with an external tracker):
- `accept_len`: the Domino strategy's per-block accepted length + 1 over the training batch
  (specforge/algorithms/common/dflash_family_model.py:591-705): tau as is.
- `tau_probabilistic`: DSpark's expected accepted length + 1 (same file, :923-927, :1052):
  tau as is.
- `eval/simulated_acc_len` with `eval/per_position_acc` on the same line: a0 + a0*a1 + ...
  over the eval set (specforge/eval/evaluator.py:193-200), the draft tokens accepted without
  the bonus: tau = value + 1. Without the per-position list the evaluator falls back to the
  mean token accuracy under the same name (evaluator.py:159-164: plain DFlash at a6b6b02),
  which is not a length: such lines are counted and left out.
SpecForge's plain DFlash training lines carry no acceptance figure at a6b6b02.

speculators (vllm-project/speculators c05b95b3): metric dicts flattened with "/" and printed
as `key=value, ...` by the console handler (src/speculators/train/logger.py FormatDictFilter;
floats to 3 decimals; Rich may wrap a long message over several lines):
- `train/eal=...` in the record that ends with `global_step=N` (src/speculators/train/
  trainer.py:498-507), every log_freq steps;
- `val/eal_epoch=...` with `epoch=E` at each epoch's end (trainer.py:576-578);
eal = sum over drafted positions of the cumulative accuracy (src/speculators/models/dflash/
metrics.py:98-107), without the bonus token: tau = eal + 1.

Samples seen at a step: the step x the global samples per optimizer step, taken from the
log where it says (SpecForge's perf/global_samples_per_second x perf/optimizer_step_time_s),
else from the plan (batch size x accumulation x drafter GPUs), which is stated as assumed.
"""

from __future__ import annotations

import math
import re
import statistics
from dataclasses import dataclass, field
from pathlib import Path
from typing import Literal

from ..basics.errors import PlanError
from ..basics.lines import Progress, records
from .runlogs import MAX_LOG_LINE_BYTES, RunContext, file_date

Split = Literal["train", "eval"]

# The figure reported for the run: the median of its last reports, this share of them (at
# least MIN_FINAL_REPORTS of a training-batch series, whose batches are noisy; at least one
# of an eval series, each already an average over the eval set): late enough to be the
# run's level. Their quartiles are the measurement's scatter.
FINAL_SHARE = 0.1
MIN_FINAL_REPORTS = {"train": 3, "eval": 1}
# A logged acceptance length outside this is not one (tau counts the bonus token, so at
# least 1; the plan accepts up to 64 (inputs/plan.py AcceptanceMeasurement)).
TAU_MIN, TAU_MAX = 1.0, 64.0

_SF_LINE = re.compile(r"\bstep (\d+): (\{.*\})\s*$")
_SF_SCALAR = re.compile(r"'((?:[^'\\]|\\.)*)': (-?(?:\d+\.?\d*|\.\d+)(?:[eE][-+]?\d+)?|nan|-?inf)")
# SpecForge figures: key (prefix "train/" dropped) -> what to add to get tau.
_SF_TAU_KEYS = {"accept_len": 0.0, "tau_probabilistic": 0.0}
_SF_EVAL_KEY = "eval/simulated_acc_len"
_SF_PER_POSITION = "'eval/per_position_acc': ["
_SPEC_FIELD = re.compile(
    r"(?<![\w/])(train/eal|val/eal_epoch|global_step|epoch)=(-?\d+\.?\d*(?:[eE][-+]?\d+)?)"
)


@dataclass(frozen=True, slots=True)
class TauPoint:
    """One logged acceptance: the optimizer step, the samples seen by then (None when
    neither the log nor the plan says the samples per step) and tau (bonus included)."""

    step: int
    tau: float
    split: Split
    sample_passes: float | None


@dataclass(frozen=True, slots=True)
class AcceptanceReading:
    """What one log gave: its points in run order, the series used for the run's figure
    (eval when the log has any, else train), and that figure: the median tau of the last
    reports at the median of their sample passes, with their quartiles."""

    path: str
    format: str
    metric: str  # the logged key and how it became tau, for the source
    points: tuple[TauPoint, ...]
    split: Split
    tau: float
    tau_low: float
    tau_high: float
    step: int
    sample_passes: float | None
    final_reports: int
    samples_per_step: float | None
    samples_basis: str  # where samples_per_step came from
    date: str  # the log's modification date (UTC): when its last line was written
    notes: tuple[str, ...] = ()

    @property
    def used(self) -> tuple[TauPoint, ...]:
        return tuple(p for p in self.points if p.split == self.split)

    @property
    def source(self) -> str:
        """The source a plan's calibration entry names."""
        which = (
            f"median of the last {self.final_reports} {self.split} reports"
            if self.final_reports > 1
            else f"the last {self.split} report"
        )
        return (
            f"{Path(self.path).name}: {self.format} {self.metric}, {which} to step "
            f"{self.used[-1].step:,}"
        )


def _plan_samples_per_step(ctx: RunContext) -> tuple[float | None, str]:
    if ctx.batch_size and ctx.drafter_gpus:
        per_step = ctx.batch_size * ctx.accumulation_steps * ctx.drafter_gpus
        return float(per_step), (
            f"assumed from the plan: {ctx.batch_size} x {ctx.accumulation_steps} samples "
            f"per GPU-step x {ctx.drafter_gpus} drafter GPUs = {per_step:,} per step"
        )
    return None, "unknown: the log does not say and the plan gives no batch size or GPU count"


@dataclass
class _Scan:
    """What a pass over a log collected: each trainer's (step, tau) series, the SpecForge
    keys they came from, the global samples per step the perf lines give, and how many
    eval lines carried the accuracy under the length's name."""

    sf: dict[Split, list[tuple[int, float]]] = field(
        default_factory=lambda: {"train": [], "eval": []}
    )
    sf_metric: dict[Split, str] = field(default_factory=dict)
    spec: dict[Split, list[tuple[int, float]]] = field(
        default_factory=lambda: {"train": [], "eval": []}
    )
    per_step: list[float] = field(default_factory=list)
    accuracy_fallback: int = 0


def _scan(path: Path, progress: Progress | None) -> _Scan:
    scan = _Scan()
    sf, sf_metric, spec, per_step = scan.sf, scan.sf_metric, scan.spec, scan.per_step
    pending: float | None = None  # a speculators train/eal waiting for its global_step
    last_step = 0
    for record in records(
        path, MAX_LOG_LINE_BYTES, split_cr=True, progress=progress, what="a training log"
    ):
        if record.data is None:
            continue
        text = record.data.decode("utf-8", errors="replace")
        if match := _SF_LINE.search(text):
            step = int(match.group(1))
            values = {
                k.removeprefix("train/"): float(v) for k, v in _SF_SCALAR.findall(match.group(2))
            }
            g, t = (
                values.get("perf/global_samples_per_second"),
                values.get("perf/optimizer_step_time_s"),
            )
            if g and t and g > 0 and t > 0 and math.isfinite(g * t):
                per_step.append(g * t)
            for key, add in _SF_TAU_KEYS.items():
                if key in values:
                    sf["train"].append((step, values[key] + add))
                    sf_metric["train"] = f"'{key}' (tau as logged)"
                    break
            if _SF_EVAL_KEY in values:
                if _SF_PER_POSITION in match.group(2):
                    sf["eval"].append((step, values[_SF_EVAL_KEY] + 1.0))
                    sf_metric["eval"] = f"'{_SF_EVAL_KEY}' + 1 (the bonus token)"
                else:
                    scan.accuracy_fallback += 1
            continue
        for key, raw in _SPEC_FIELD.findall(text):
            value = float(raw)
            if key == "train/eal":
                pending = value
            elif key == "global_step":
                last_step = int(value)
                if pending is not None:
                    spec["train"].append((last_step, pending + 1.0))
                    pending = None
            elif key == "val/eal_epoch":
                spec["eval"].append((last_step, value + 1.0))
    return scan


def read_acceptance(
    path: Path, ctx: RunContext, progress: Progress | None = None
) -> AcceptanceReading:
    """The acceptance points of a SpecForge or speculators training log (module doc).
    PlanError, one line naming the file, when it logs no acceptance."""
    path = Path(path)
    scan = _scan(path, progress)
    sf, sf_metric, spec, per_step = scan.sf, scan.sf_metric, scan.spec, scan.per_step
    accuracy_fallback = scan.accuracy_fallback
    notes: list[str] = []
    if accuracy_fallback:
        notes.append(
            f"{accuracy_fallback:,} '{_SF_EVAL_KEY}' lines without 'eval/per_position_acc' "
            "left out: SpecForge then logs the mean token accuracy under that name, not a length"
        )
    if sf["train"] or sf["eval"]:
        fmt, series = "SpecForge log", sf
        metrics = sf_metric
    elif spec["train"] or spec["eval"]:
        fmt, series = "speculators log", spec
        metrics = {"train": "'train/eal' + 1 (the bonus token)", "eval": "'val/eal_epoch' + 1"}
    else:
        raise PlanError.at(
            str(path),
            "no logged acceptance length (looked for SpecForge's 'accept_len', "
            "'tau_probabilistic', 'eval/simulated_acc_len' with 'eval/per_position_acc', and "
            "speculators' 'train/eal', 'val/eal_epoch')" + (f"; {notes[0]}" if notes else ""),
        )
    if per_step:
        samples_per_step: float | None = statistics.median(per_step)
        basis = (
            f"from the log: perf/global_samples_per_second x perf/optimizer_step_time_s, "
            f"median {samples_per_step:,.0f} per step"
        )
    else:
        samples_per_step, basis = _plan_samples_per_step(ctx)
    split: Split = "eval" if series["eval"] else "train"
    points: list[TauPoint] = []
    for kind in ("train", "eval"):
        bad = [(s, tau) for s, tau in series[kind] if not TAU_MIN <= tau <= TAU_MAX]
        if bad:
            notes.append(
                f"{len(bad):,} {kind} reports outside {TAU_MIN:g}-{TAU_MAX:g} tokens left "
                f"out (first: step {bad[0][0]:,}, tau {bad[0][1]:g})"
            )
        points += [
            TauPoint(
                s,
                tau,
                kind,
                s * samples_per_step if samples_per_step is not None else None,
            )
            for s, tau in series[kind]
            if TAU_MIN <= tau <= TAU_MAX
        ]
    points.sort(key=lambda p: (p.step, p.split))
    used = [p for p in points if p.split == split]
    if not used:
        raise PlanError.at(str(path), f"no usable logged acceptance length; {notes[-1]}")
    count = min(len(used), max(MIN_FINAL_REPORTS[split], math.ceil(len(used) * FINAL_SHARE)))
    last = used[-count:]
    taus = [p.tau for p in last]
    low, high = taus[0], taus[0]
    if count >= 2:
        low, _, high = statistics.quantiles(taus, n=4, method="inclusive")
    step = round(statistics.median(p.step for p in last))
    if split == "eval" and series["train"]:
        notes.append("the eval reports are used (held out); the training-batch ones are listed")
    return AcceptanceReading(
        path=str(path),
        format=fmt,
        metric=metrics[split],
        points=tuple(points),
        split=split,
        tau=statistics.median(taus),
        tau_low=low,
        tau_high=high,
        step=step,
        sample_passes=step * samples_per_step if samples_per_step is not None else None,
        final_reports=count,
        samples_per_step=samples_per_step,
        samples_basis=basis,
        date=file_date(path),
        notes=tuple(notes),
    )
