"""Checkpoints: sizes against SpecForge's DSpark report, the rotation's storage, the
Young/Daly interval, lost work, spot reclaims in a plan's days and cost, and resume."""

from __future__ import annotations

import math

import pytest
from dflash_plan.model.basics.errors import PlanError
from dflash_plan.model.basics.units import BYTES_PER_GB, BYTES_PER_GIB
from dflash_plan.model.core import checkpoints as C
from dflash_plan.model.core.projection import project
from dflash_plan.model.inputs.plan import load_plan
from dflash_plan.model.physics.families import drafter_shape
from support import edit
from test_families import QWEN38_27B


def dspark_moe_params() -> int:
    # The report's drafter (section 3.1): 5 layers on Qwen3.8-27B, 20.8 B parameters.
    return drafter_shape(QWEN38_27B, 5, 7, 5, "dspark").trainable_params


def test_a_specforge_checkpoint_is_the_dspark_reports_272_gb():
    params, ranks = dspark_moe_params(), 4
    size = C.checkpoint_bytes(C.SPECFORGE, params, ranks)
    # training_state.pt 41.6 GB (the bf16 weights) + 4 x training_state_rank{r}.pt
    # 62.5 GB (each rank's fp32 master, m and v): 291.5 GB = 271.5 GiB, "272 GB".
    assert params * C.SPECFORGE.weight_bytes / BYTES_PER_GB == pytest.approx(41.6, abs=0.05)
    per_rank = params * C.SPECFORGE.optimizer_bytes / ranks / BYTES_PER_GB
    assert per_rank == pytest.approx(62.5, abs=0.05)
    assert size / BYTES_PER_GIB == pytest.approx(272, abs=0.5)
    # The save writes its 292 GB of .tmp files before the rotation deletes one.
    assert size / BYTES_PER_GB == pytest.approx(292, abs=0.5)
    # The shared checkpoint size: the JSON's drafter.checkpoint_gb, one computation.
    shape = drafter_shape(QWEN38_27B, 5, 7, 5, "dspark")
    assert size == shape.checkpoint_bytes


def test_sharding_and_dtype_set_each_trainers_size():
    params = 1_000_000_000
    # speculators casts the optimizer state to bf16 and writes it whole from rank 0.
    assert C.checkpoint_bytes(C.SPECULATORS, params, 8) == 6 * params
    # The legacy trainer saves only rank 0's optimizer shard: 2 + 12 / ranks per parameter.
    assert C.checkpoint_bytes(C.LEGACY, params, 4) == 5 * params
    # SpecForge writes every rank's shard: the world size does not change the total.
    assert C.checkpoint_bytes(C.SPECFORGE, params, 1) == C.checkpoint_bytes(C.SPECFORGE, params, 64)


def test_rotation_needs_the_kept_checkpoints_plus_the_one_being_written():
    # SpecForge writes the new checkpoint before rotating: the DSpark recipe's 3 kept need
    # 4 at the peak, 1.17 TB for the 20.8 B drafter (the 49 TB volume held it; a foreign
    # writer filled it).
    assert C.peak_checkpoints(C.SPECFORGE, 3) == 4
    # speculators overwrites its epoch folder in place: no temporary copy.
    assert C.peak_checkpoints(C.SPECULATORS, 6) == 6
    size = C.checkpoint_bytes(C.SPECFORGE, dspark_moe_params(), 4)
    assert C.peak_checkpoints(C.SPECFORGE, 3) * size / 1e12 == pytest.approx(1.166, abs=0.001)


def test_young_daly_interval():
    # sqrt(2 x save x MTBF): a 0.1 h save against one interruption per 500 h: 10 h.
    assert C.young_daly_hours(0.1, 1 / 500) == pytest.approx(10.0)
    # Four times the interruption rate halves it.
    assert C.young_daly_hours(0.1, 4 / 500) == pytest.approx(5.0)
    assert C.young_daly_hours(0.1, 0.0) == math.inf


def test_the_defaults_come_from_their_measurements():
    # Llama 3: 419 interruptions / (54 days x 24 h x 16,384 GPUs) = 1.97e-5 per GPU-hour.
    assert C.llama3_failures_per_gpu_hour() == pytest.approx(1.973e-5, rel=1e-3)
    # AWS's 15 % a month of p5 nodes: -ln(0.85) = 0.1625 reclaims per node-month.
    assert C.reclaims_per_node_month(0.15) == pytest.approx(0.1625, abs=1e-4)
    # IBM's 7B DCP save: 84 GB in 148.8 s.
    save_gb_per_s = C.SAVE_GB_PER_S
    assert save_gb_per_s == pytest.approx(0.5645, abs=1e-4)
    # The DSpark report's two deaths: 35 / 8 h lost, less 120 steps and 3 h of lost work,
    # over two restarts: about 20 minutes each.
    restart = C.RESTART_HOURS
    assert restart == pytest.approx(0.332, abs=0.001)
    assert C.dspark_restart_hours(19.7) > restart > C.dspark_restart_hours(23.0)


def test_the_built_in_plans_checkpoints(catalog, baseline):
    p = project(baseline, catalog)
    ck = p.checkpoints
    assert ck.size_gb == pytest.approx(14 * p.drafter_params / 1e9)
    assert ck.keep == C.SPECFORGE_KEEP
    assert ck.total_tb == pytest.approx(4 * ck.size_gb / 1e3)
    rate = C.llama3_failures_per_gpu_hour() * (baseline.target.count + baseline.drafter.count)
    assert ck.interruptions_per_hour == pytest.approx(rate)
    save = ck.size_gb / C.SAVE_GB_PER_S / 3600
    assert ck.interval_hours == pytest.approx(math.sqrt(2 * save / rate))
    assert ck.expected_lost_hours == pytest.approx(ck.interval_hours / 2 + C.RESTART_HOURS)
    assert p.job_days is not None
    assert ck.expected_interruptions == pytest.approx(rate * p.job_days * 24)
    # One node, online: SpecForge's managed_local, which has no resume.
    assert not ck.can_resume and "managed_local" in ck.resume
    js = p.to_json()["checkpoints"]
    for key in ("size_gb", "keep", "total_tb", "interval_hours", "expected_lost_hours"):
        assert js[key] == getattr(ck, key)
    assert js["resume"] == ck.resume
    # On demand, the job's days are the run's: hardware failures are reported, not added.
    assert [ph.name for ph in p.phases] == ["train"]


def test_a_plans_keep_and_interval_are_used(catalog, baseline):
    plan = edit(baseline, checkpoint={"keep": 2, "interval_hours": 4.0})
    ck = project(plan, catalog).checkpoints
    assert (ck.keep, ck.interval_hours) == (2, 4.0)
    assert ck.total_tb == pytest.approx(3 * ck.size_gb / 1e3)
    assert ck.expected_lost_hours == pytest.approx(2.0 + C.RESTART_HOURS)


def spot_b200(baseline, kind: str):
    return edit(
        baseline,
        target={"gpu": "b200", "count": 4},
        drafter={"gpu": "b200", "count": 4},
        cost={"provider": "verda", "kind": kind},
    )


def test_a_spot_plans_days_and_cost_include_the_expected_reclaims(catalog, baseline):
    on_demand = project(spot_b200(baseline, "on-demand"), catalog)
    spot = project(spot_b200(baseline, "spot"), catalog)
    ck = spot.checkpoints
    assert ck.spot and not on_demand.checkpoints.spot
    nodes = spot.link.nodes
    per_node = C.reclaims_per_node_month(C.SPOT_MONTHLY_SHARE) / C.HOURS_PER_MONTH
    assert ck.preemptions_per_hour == pytest.approx(per_node * nodes)
    run_days = spot.job.run_days
    assert run_days is not None and spot.job.run_cost is not None
    lost_days = ck.preemptions_per_hour * run_days * ck.expected_lost_hours / 1.0
    assert [ph.name for ph in spot.phases] == ["train", "preempted"]
    assert spot.job_days == pytest.approx(run_days + lost_days)
    assert spot.job_cost == pytest.approx(spot.job.run_cost * (1 + lost_days / run_days))
    # The range: the reclaim band at each end of the run's range, on top of the run's.
    low, high = spot.job_days_range or (0, 0)
    fast, slow = sorted(spot.job.run_days_range or (0, 0))
    band = ck.preemptions_per_hour_range
    assert low == pytest.approx(fast + band[0] * fast * ck.expected_lost_hours)
    assert high == pytest.approx(slow + band[1] * slow * ck.expected_lost_hours)
    # A shorter interval on spot: reclaims add to failures.
    assert ck.interval_hours < on_demand.checkpoints.interval_hours
    # No reclaims, no phase: the spot price alone.
    none = project(
        edit(spot_b200(baseline, "spot"), checkpoint={"preemptions_per_node_month": 0}), catalog
    )
    assert [ph.name for ph in none.phases] == ["train"]


@pytest.mark.parametrize(
    ("fmt", "nodes", "can", "words"),
    [
        ("specforge", 1, False, "managed_local"),
        ("specforge", 2, True, "training.resume_from"),
        ("slurm", 1, True, "training.resume_from"),
        ("speculators", 1, True, "newest <save_path>/<epoch>"),
        ("specforge-legacy", 1, True, "--resume"),
        ("template", 1, True, "your command"),
    ],
)
def test_each_format_says_how_it_resumes(catalog, baseline, fmt, nodes, can, words):
    plan = edit(baseline, launch={"format": fmt})
    if nodes > 1:
        plan = edit(plan, target={"count": 8}, drafter={"count": 4})
    ck = project(plan, catalog).checkpoints
    assert project(plan, catalog).link.nodes == nodes
    assert ck.can_resume is can and words in ck.resume
    same_world = any("same trainer world size" in w for w in ck.warnings)
    assert same_world is (fmt in ("slurm", "specforge-legacy") or (fmt, nodes) == ("specforge", 2))


def test_a_bad_checkpoint_value_is_one_line(tmp_path):
    path = tmp_path / "plan.toml"
    path.write_text("[checkpoint]\nkeep = 0\n")
    with pytest.raises(PlanError) as err:
        load_plan(path)
    assert "checkpoint.keep" in str(err.value) and "\n" not in str(err.value)


def test_a_keep_the_trainer_cannot_apply_is_said(catalog, baseline):
    plan = edit(baseline, launch={"format": "speculators"}, checkpoint={"keep": 2})
    ck = project(plan, catalog).checkpoints
    assert ck.keep == baseline.workload.epochs  # a folder per epoch
    assert any("checkpoint.keep = 2 is not applied" in w for w in ck.warnings)
