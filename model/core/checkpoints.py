"""Training checkpoints: what one save writes (the launch format's trainer, the drafter's
parameters, the optimizer state as that trainer keeps it, and its sharding), the storage
the rotation needs, the save interval, the work an interruption loses, and how the
format resumes (docs/model.md, "Checkpoints and interruptions", names every source).

The interval is Young's and Daly's: sqrt(2 x save time x mean time between
interruptions), the one that minimises the expected time lost to saving plus rework.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, field, replace
from typing import Any

from ..basics.units import BF16_BYTES, BYTES_PER_GB, FP32_BYTES, SECONDS_PER_HOUR, TERA
from ..inputs.formats import row_of
from ..inputs.plan import Plan
from ..physics.work import CHECKPOINT_BYTES_PER_PARAM
from .job import Job
from .phases import Phase

# --- the measurements the defaults are computed from ---

# Hardware interruptions: Meta's Llama 3 report (arXiv 2407.21783, section 3.3.4): 419
# unexpected interruptions in a 54-day snapshot of pre-training on 16,384 H100 GPUs (466
# with the 47 planned ones). Any GPU's fault stops a synchronous job: the job's rate is
# its GPUs' sum. The condition: H100 nodes under a steady training load.
LLAMA3_UNEXPECTED_INTERRUPTIONS = 419
LLAMA3_ALL_INTERRUPTIONS = 466
LLAMA3_DAYS = 54
LLAMA3_GPUS = 16_384


def llama3_failures_per_gpu_hour(interruptions: int = LLAMA3_UNEXPECTED_INTERRUPTIONS) -> float:
    return interruptions / (LLAMA3_DAYS * 24 * LLAMA3_GPUS)


# Spot reclaims: AWS's Spot Instance Advisor publishes each instance type's "frequency of
# interruption", the share of its instances reclaimed over the trailing month, in 5 %
# bands. p5.48xlarge (8 x H100) read 10-20 % on 2025-05-01 and 15-20 % on 2026-02-24
# (Thunder Compute's snapshots of the Advisor: thundercompute.com/blog/should-i-use-cloud-
# gpu-spot-instances, .../cloud-gpu-spot-instance-availability). The band 10-20 % per
# node-month, 15 % central, holds for the scarce 8-GPU instances; no cloud publishes one for
# B200 nodes yet.
SPOT_MONTHLY_SHARE_RANGE = (0.10, 0.20)
SPOT_MONTHLY_SHARE = 0.15
HOURS_PER_MONTH = 730.0  # 365.25 x 24 / 12, rounded as AWS bills a month


def reclaims_per_node_month(share: float) -> float:
    """The reclaim rate under which `share` of the nodes are reclaimed within a month."""
    return -math.log1p(-share)


# A save's write rate: PyTorch's distributed checkpoint saved IBM's 7B FSDP model with
# its AdamW state (fp32 weights, m and v: 12 bytes per parameter) in 148.8 s on average
# (pytorch.org/blog/reducing-checkpointing-times, 2024, the synchronous save): 0.56 GB/s for
# the whole job. The interval goes with the square root of it.
IBM_SAVE_PARAMS = 7e9
IBM_SAVE_BYTES_PER_PARAM = 3 * FP32_BYTES
IBM_SAVE_SECONDS = 148.8
SAVE_GB_PER_S = IBM_SAVE_PARAMS * IBM_SAVE_BYTES_PER_PARAM / IBM_SAVE_SECONDS / BYTES_PER_GB

# A restart: SpecForge's DSpark report (docs/reports/qwen38-dspark-moe-3ep-report.md @
# 6365249f, 8 x B200): about 35 of 715 B200-hours were lost to two deaths. The first lost
# 120 steps (5,620 died, 5,500 saved) at 19.7-23 s a step, the second the 3 hours it ran;
# what is left of the 35 / 8 hours is the two restarts' own time (its re-tokenisation
# alone takes about 25 minutes when the cache key changes).
DSPARK_LOST_GPU_HOURS = 35.0
DSPARK_GPUS = 8
DSPARK_DEATHS = 2
DSPARK_LOST_STEPS = 120
DSPARK_STEP_SECONDS = (19.7, 23.0)
DSPARK_SECOND_DEATH_HOURS = 3.0


def dspark_restart_hours(step_seconds: float) -> float:
    lost_work = DSPARK_LOST_STEPS * step_seconds / SECONDS_PER_HOUR + DSPARK_SECOND_DEATH_HOURS
    return (DSPARK_LOST_GPU_HOURS / DSPARK_GPUS - lost_work) / DSPARK_DEATHS


RESTART_HOURS = dspark_restart_hours(sum(DSPARK_STEP_SECONDS) / 2)

# SpecForge's DSpark recipe keeps 3 checkpoints (max_checkpoints 3, the report's section
# 3.2); its section 5 says to keep the count low.
SPECFORGE_KEEP = 3


# --- what each trainer writes ---


@dataclass(frozen=True, slots=True)
class Layout:
    """What one trainer's save writes per trainable parameter, and how it resumes."""

    trainer: str
    weight_bytes: float  # per parameter, the full weights once
    optimizer_bytes: float  # per parameter, every rank's optimizer state together
    rank0_optimizer_only: bool  # only rank 0's optimizer shard is written
    temporary_copy: bool  # a save writes a whole new checkpoint before rotation deletes one
    per_epoch: bool  # one directory per epoch, no rotation (keep = the epochs)
    keeps_all: bool  # no rotation: every save stays (keep = the saves of the run)
    same_world_size: bool  # per-rank state: resume needs the trainer's world size
    directory: str  # where one checkpoint lands, under launch.output_dir
    source: str


# SpecForge unified (specforge 0.2.0 specforge/training/checkpoint.py): training_state.pt,
# the full bf16 weights, and training_state_rank{r}.pt per rank, its FSDP shard of the fp32
# master copy and AdamW's m and v; atomic .tmp writes, then -latest is repointed and the
# oldest rotated away (max_checkpoints). A rank file is read only at the world size it was
# written at. The DSpark report's 20.8 B drafter: 41.6 GB + 4 x 62.5 GB.
SPECFORGE = Layout(
    "SpecForge unified",
    BF16_BYTES,
    CHECKPOINT_BYTES_PER_PARAM - BF16_BYTES,
    rank0_optimizer_only=False,
    temporary_copy=True,
    per_epoch=False,
    keeps_all=False,
    same_world_size=True,
    directory="<output_dir>/<run_id>-step<N> (<run_id>-latest: the newest)",
    source="specforge 0.2.0 training/checkpoint.py (CheckpointManager)",
)
# speculators 0.9.0 (train/checkpointer.py DistributedCheckpointer): rank 0 writes the full
# state dict and the full optimizer state, both cast to bf16 (m and v: 2 bytes each), into
# <save_path>/<epoch>/, overwritten in place within an epoch; a restart reloads the newest
# epoch directory at any world size (broadcast from rank 0).
SPECULATORS = Layout(
    "speculators",
    BF16_BYTES,
    2 * BF16_BYTES,
    rank0_optimizer_only=False,
    temporary_copy=False,
    per_epoch=True,
    keeps_all=False,
    same_world_size=False,
    directory="<output_dir>/checkpoints/<epoch>",
    source="speculators 0.9.0 train/checkpointer.py (DistributedCheckpointer)",
)
# SpecForge's legacy trainer (scripts/train_dflash.py @ 40d8feff): rank 0 saves the full
# bf16 weights and its own BF16Optimizer state (rank-local fp32 masters, m, v of its FSDP
# shard) into epoch_E_step_S/, every save_interval steps and at each epoch's end, and
# deletes none; --resume loads that shard on every rank, so only the same world size
# reloads (the shapes are checked).
LEGACY = Layout(
    "SpecForge legacy",
    BF16_BYTES,
    CHECKPOINT_BYTES_PER_PARAM - BF16_BYTES,
    rank0_optimizer_only=True,
    temporary_copy=False,
    per_epoch=False,
    keeps_all=True,
    same_world_size=True,
    directory="<output_dir>/epoch_<E>_step_<S>",
    source="SpecForge 40d8feff scripts/train_dflash.py save_checkpoint",
)
# formats.FormatRow.checkpoints -> the layout; the template's command is sized as
# SpecForge's (its resume is the command's own).
LAYOUTS = {
    "specforge": SPECFORGE,
    "speculators": SPECULATORS,
    "specforge-legacy": LEGACY,
    "template": SPECFORGE,
}


def layout(fmt: str) -> Layout:
    """The trainer a launch format runs."""
    return LAYOUTS[row_of(fmt).checkpoints]


def checkpoint_bytes(lay: Layout, params: int, ranks: int) -> float:
    """One checkpoint on disk: the weights, and the optimizer state (rank 0's shard only
    where the trainer saves only that)."""
    share = 1 / ranks if lay.rank0_optimizer_only else 1.0
    return params * (lay.weight_bytes + lay.optimizer_bytes * share)


def peak_checkpoints(lay: Layout, keep: int) -> int:
    """Checkpoints on disk at the peak: the kept ones, plus the one being written where a
    save completes before the rotation deletes (the DSpark report's 292 GB of .tmp files)."""
    return keep + int(lay.temporary_copy)


def young_daly_hours(save_hours: float, interruptions_per_hour: float) -> float:
    """The interval minimising save time plus expected rework (Young 1974; Daly 2006's
    first-order form): sqrt(2 x save x MTBF)."""
    if interruptions_per_hour <= 0:
        return math.inf
    return math.sqrt(2 * save_hours / interruptions_per_hour)


@dataclass(frozen=True, slots=True)
class Checkpoints:
    size_gb: float  # one checkpoint on disk
    keep: int
    total_tb: float  # peak, the save's temporary copy included
    interval_hours: float
    expected_lost_hours: float  # per interruption: half an interval + the restart
    resume: str  # how the format resumes, or why it cannot
    # What the figures above are computed from.
    trainer: str = ""
    directory: str = ""  # where one checkpoint lands (under launch.output_dir)
    interval_steps: int | None = None  # optimizer steps between saves (None: does not fit)
    save_hours: float = 0.0
    restart_hours: float = 0.0
    interruptions_per_hour: float = 0.0  # the whole job's: failures, and spot reclaims
    failures_per_hour: float = 0.0
    preemptions_per_hour: float = 0.0
    preemptions_per_hour_range: tuple[float, float] = (0.0, 0.0)
    expected_interruptions: float = 0.0  # over the run
    job_lost_hours: float = 0.0  # over the run, every interruption
    run_hours: float | None = None  # the run the interval is set for (None: does not fit)
    spot: bool = False
    can_resume: bool = True
    warnings: tuple[str, ...] = field(default=())
    sources: tuple[str, ...] = field(default=())

    def to_json(self) -> dict[str, Any]:
        return {
            "size_gb": self.size_gb,
            "keep": self.keep,
            "total_tb": self.total_tb,
            "interval_hours": self.interval_hours,
            "interval_steps": self.interval_steps,
            "expected_lost_hours": self.expected_lost_hours,
            "resume": self.resume,
            "can_resume": self.can_resume,
            "trainer": self.trainer,
            "directory": self.directory,
            "save_hours": self.save_hours,
            "restart_hours": self.restart_hours,
            "interruptions_per_hour": self.interruptions_per_hour,
            "failures_per_hour": self.failures_per_hour,
            "spot": self.spot,
            "preemptions_per_hour": self.preemptions_per_hour,
            "preemptions_per_hour_range": list(self.preemptions_per_hour_range),
            "expected_interruptions": self.expected_interruptions,
            "job_lost_hours": self.job_lost_hours,
            "run_hours": self.run_hours,
            "warnings": list(self.warnings),
            "sources": list(self.sources),
        }


def _ranks(ranks: int) -> str:
    return f"{ranks} rank" + ("" if ranks == 1 else "s")


def _resume(plan: Plan, lay: Layout, ranks: int, nodes: int) -> tuple[str, bool, list[str]]:
    """How the plan's launch resumes, whether it can, and the warnings it needs."""
    row, w = row_of(plan.launch.format), plan.workload
    warnings: list[str] = []
    if row.own_command:
        return "your command decides (launch.template): pass it the checkpoint folder", True, []
    if lay is SPECULATORS:
        text = (
            "speculators resumes by itself from the newest <save_path>/<epoch> folder "
            "(--no-resume-from-checkpoint absent), at any trainer world size"
        )
        return text, True, []
    if lay is LEGACY:
        warnings.append(
            f"a resume of specforge-legacy needs the same trainer world size "
            f"({_ranks(ranks)}): its checkpoint holds rank 0's optimizer shard"
        )
        return (
            "--resume: the legacy trainer reloads the newest epoch_E_step_S folder of "
            "output_dir, at the same world size",
            True,
            warnings,
        )
    one_node = nodes == 1 and w.mode == "online" and w.topology != "colocated"
    if row.one_node_managed_local and one_node:
        # specforge 0.2.0 config/schema.py: managed_local refuses training.resume_from;
        # model.draft_checkpoint_path loads weights only, training.max_steps caps the run
        # (and sets the learning-rate horizon when total_steps is unset).
        warnings.append(
            "SpecForge's managed_local launch (one node) cannot resume (its schema "
            "refuses training.resume_from): a second launch warm-starts from the newest "
            "checkpoint's weights and trains only the remaining steps, and loses the "
            "AdamW moments (rebuilt from zero), the learning-rate schedule (a new warm-up, "
            "then a cosine over the remaining steps) and the data order (the prompt "
            "stream restarts from its first sample, so the last ones of the run are not "
            "trained); it re-tokenises the dataset (the cache key holds the checkpoint "
            "path) and keeps the earlier launch's checkpoints beside its own"
        )
        return (
            "warm start: managed_local refuses training.resume_from; a second launch "
            "loads the newest <run_id>[-from<N>]-step<S> checkpoint's weights "
            "(model.draft_checkpoint_path) and trains the remaining steps "
            "(training.max_steps) as <run_id>-from<N + S>",
            False,
            warnings,
        )
    warnings.append(
        f"resuming SpecForge needs the same trainer world size ({_ranks(ranks)}): each "
        f"rank reloads its own FSDP optimizer shard"
    )
    if w.mode == "online" and w.topology != "colocated":
        # specforge 0.2.0 launch_plan._validate_consumer_database: a resumed consumer
        # needs the metadata database of the run (and a fresh one refuses a stale one).
        warnings.append(
            "SpecForge's online consumer resumes only with its metadata database kept "
            "(consumer_state_dir, node-local on the first trainer node): a restart on a "
            "fresh node cannot resume"
        )
    return (
        "training.resume_from = output_dir: a second launch reloads the run's -latest "
        "checkpoint (same trainer world size)",
        True,
        warnings,
    )


def _kept(
    lay: Layout, keep: int | None, epochs: int, interval: float, run_hours: float | None
) -> int:
    """Checkpoints on disk at the end: the plan's keep where the trainer rotates, else the
    trainer's rule (an epoch's folder each; every save of the run, at each interval and
    each epoch's end; SpecForge's recipe's 3)."""
    if lay.per_epoch:
        return epochs
    if lay.keeps_all:
        saves = math.floor(run_hours / interval) if run_hours and interval else 0
        return saves + epochs
    return SPECFORGE_KEEP if keep is None else keep


def checkpoints(
    plan: Plan,
    params: int,
    nodes: int,
    run_hours: float | None,
    samples_per_s: float | None,
) -> Checkpoints:
    """The plan's checkpoints. `params`: the drafter's trainable parameters; `nodes`: the
    nodes the plan occupies; `run_hours`: the run of its own mode (None: it does not fit);
    `samples_per_s`: the training's rate."""
    c, w = plan.checkpoint, plan.workload
    lay = layout(plan.launch.format)
    row = row_of(plan.launch.format)
    # Colocated (or a trainer that runs both roles on every GPU: the legacy one), every GPU
    # is a trainer rank.
    colocated = w.topology == "colocated" or (row.transport is None and not row.own_command)
    ranks = plan.target.count + plan.drafter.count if colocated else plan.drafter.count
    gpus = plan.target.count + plan.drafter.count
    size = checkpoint_bytes(lay, params, ranks)
    save_hours = size / ((c.write_gb_per_s or SAVE_GB_PER_S) * BYTES_PER_GB) / SECONDS_PER_HOUR
    restart = RESTART_HOURS if c.restart_hours is None else c.restart_hours
    per_gpu = (
        llama3_failures_per_gpu_hour()
        if c.failures_per_gpu_hour is None
        else c.failures_per_gpu_hour
    )
    failures = per_gpu * gpus
    spot = plan.cost.kind == "spot"
    low, high = SPOT_MONTHLY_SHARE_RANGE
    shares = (low, SPOT_MONTHLY_SHARE, high)
    monthly = [
        reclaims_per_node_month(s)
        if c.preemptions_per_node_month is None
        else c.preemptions_per_node_month
        for s in shares
    ]
    preempt = [m * nodes / HOURS_PER_MONTH if spot else 0.0 for m in monthly]
    rate = failures + preempt[1]
    interval = c.interval_hours or young_daly_hours(save_hours, rate)
    if run_hours is not None and c.interval_hours is None:
        interval = min(interval, run_hours)  # at least one save in the run
    if not math.isfinite(interval):
        interval = 0.0  # nothing interrupts and nothing bounds it: save at the end only
    keep = _kept(lay, c.keep, w.epochs, interval, run_hours)
    total_tb = peak_checkpoints(lay, keep) * size / TERA
    lost = interval / 2 + restart
    expected = rate * run_hours if run_hours is not None else 0.0
    steps = None
    if samples_per_s and interval:
        per_step = plan.drafter.batch_size * ranks
        steps = max(1, round(interval * SECONDS_PER_HOUR * samples_per_s / per_step))
    text, can_resume, warnings = _resume(plan, lay, ranks, nodes)
    if c.keep is not None and keep != c.keep:
        warnings.append(
            f"checkpoint.keep = {c.keep} is not applied: {lay.trainer} has no rotation "
            f"(it keeps {keep})"
        )
    return Checkpoints(
        size_gb=size / BYTES_PER_GB,
        keep=keep,
        total_tb=total_tb,
        interval_hours=interval,
        expected_lost_hours=lost,
        resume=text,
        trainer=lay.trainer,
        directory=lay.directory,
        interval_steps=steps,
        save_hours=save_hours,
        restart_hours=restart,
        interruptions_per_hour=rate,
        failures_per_hour=failures,
        preemptions_per_hour=preempt[1],
        preemptions_per_hour_range=(preempt[0], preempt[2]),
        expected_interruptions=expected,
        job_lost_hours=expected * lost,
        run_hours=run_hours,
        spot=spot,
        can_resume=can_resume,
        warnings=tuple(warnings),
        sources=(lay.source,),
    )


def lost_days(preemptions_per_hour: float, run_days: float, lost_hours: float) -> float:
    """The days a run's expected reclaims add: each loses half an interval and a restart."""
    return preemptions_per_hour * run_days * 24 * lost_hours / 24


def with_preemptions(job: Job, ck: Checkpoints, billed: int) -> Job:
    """A spot plan's job with its expected reclaims as a phase after the run, at the run's
    own cost per day, and their range (the reclaim band at each end of the run's); the
    job unchanged on-demand or when it does not fit."""
    days, cost = job.run_days, job.run_cost
    if not ck.spot or ck.preemptions_per_hour <= 0 or days is None or days <= 0:
        return job
    per_day = None if cost is None else cost / days
    usd = job.phases[-1].cost_usd if job.phases else None
    usd_per_day = None if usd is None else usd / job.phases[-1].days
    central = lost_days(ck.preemptions_per_hour, days, ck.expected_lost_hours)

    def priced(value: float | None, lost: float) -> float | None:
        return None if value is None else value * lost

    phase = Phase(
        "preempted",
        billed,
        central,
        priced(per_day, central),
        priced(usd_per_day, central),
        f"the run's GPUs, {ck.expected_interruptions:.2g} expected interruptions",
    )
    after_days = job.after_days
    after_cost = job.after_cost
    if job.run_days_range is not None:
        fast, slow = sorted(job.run_days_range)
        low_rate, high_rate = ck.preemptions_per_hour_range
        after_days = (
            lost_days(low_rate, fast, ck.expected_lost_hours),
            lost_days(high_rate, slow, ck.expected_lost_hours),
        )
        after_cost = None
        if job.run_cost_range is not None:
            cheap, dear = sorted(job.run_cost_range)
            after_cost = (cheap / fast * after_days[0], dear / slow * after_days[1])
    return replace(
        job,
        phases=(*job.phases, phase),
        phased=True,
        label="whole job",
        after_days=after_days,
        after_cost=after_cost,
    )
