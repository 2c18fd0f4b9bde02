"""The planning state on its own (no textual): edits, errors on their fields, staleness,
names, the split, files. Expected figures come from the measured run: 3 targets at
4,933.3 tok/s each, 800,000 samples x 2,344 tokens x 6 epochs."""

from __future__ import annotations

import dataclasses
import json
import math

import pytest
from dflash_plan.model.basics.errors import PlanError
from dflash_plan.model.inputs.plan import load_plan
from dflash_plan.tui import format as fmt
from dflash_plan.tui.config import load_catalog
from dflash_plan.tui.state import Planner, check_finite, read_plan, reason_of

MEASURED_TOK_S = 3 * 4933.3  # 14.8 Ktok/s
MEASURED_DAYS = 800_000 * 2344 * 6 / MEASURED_TOK_S / 86_400  # 8.8 days


@pytest.fixture
def state() -> Planner:
    return Planner(load_catalog())


def test_opens_on_the_measured_run(state):
    p = state.projection
    assert p.tokens_per_s == pytest.approx(MEASURED_TOK_S)
    assert p.days == pytest.approx(MEASURED_DAYS)
    assert state.current and not state.dirty and state.banner is None
    assert state.view().values["measured.target"] == 4933.3  # the measurement's rate
    assert state.baseline.name == state.plan.name != ""


def test_an_edit_recomputes_and_a_change_back_is_clean(state):
    assert state.edit("target.count", 6) and state.edit("drafter.count", 2)
    state.recompute()
    # 6 measured targets; two drafters absorb what they supply.
    assert state.projection.tokens_per_s == pytest.approx(6 * 4933.3)
    assert state.dirty
    state.edit("target.count", 3)
    state.edit("drafter.count", 1)
    state.recompute()
    assert not state.dirty and state.plan == state.saved_plan


def test_text_that_is_not_a_value_keeps_the_last_projection(state):
    state.mark_invalid("target.count", "'abc' is not a whole number")
    state.recompute()
    assert state.stale and state.broken
    assert state.errors == {"target.count": "'abc' is not a whole number"}
    assert state.banner == "GPUs: 'abc' is not a whole number"
    assert state.projection.tokens_per_s == pytest.approx(MEASURED_TOK_S)
    assert state.edit("target.count", 3)  # the same value, but now valid text
    state.recompute()
    assert not state.stale and state.errors == {}


def test_a_plan_error_lands_on_its_field(state):
    state.edit("target.tp", 2)  # 3 targets are not TP-2 replicas
    state.recompute()
    assert state.stale
    assert "not a multiple of tp 2" in state.errors["target.tp"]
    state.edit("target.count", 4)
    state.recompute()
    assert not state.stale and state.errors == {}
    state.edit("target.count", 999_999)  # above the documented bound
    state.recompute()
    reason = state.errors["target.count"]
    assert "999" not in reason and "Input should" not in reason and "{" not in reason


def test_error_text_is_plain_english():
    err = PlanError.field("cost.ratio", "{'b200': -1.0}", "Input should be greater than 0", "plan")
    assert str(err) == "plan: cost.ratio = {'b200': -1.0}: Input should be greater than 0"
    assert reason_of(err) == "must be greater than 0"
    err = PlanError.at(
        "plan.toml:6",
        "unknown GPU 'b2000' (did you mean 'b200'?)",
        key="target.gpu",
        shown="target.gpu",
    )
    assert str(err) == "plan.toml:6: target.gpu: unknown GPU 'b2000' (did you mean 'b200'?)"
    assert reason_of(err) == "unknown GPU 'b2000' (did you mean 'b200'?)"


def test_a_field_shows_the_reason_the_error_carries():
    # Routed by its parts, not read out of the message (which says it another way here).
    err = PlanError(
        "somewhere else: target.count is wrong in some words",
        where="somewhere else",
        reason="must be at most 100,000",
        key="target.count",
    )
    assert reason_of(err) == "must be at most 100,000"


def test_a_plan_that_stops_fitting_keeps_the_last_one(state):
    state.edit("workload.target_model", "llama-3.3-70b-instruct")
    state.edit("target.gpu", "rtx-4090")
    state.edit("drafter.gpu", "rtx-4090")
    state.recompute()
    # 70 B parameters in bf16 are 140 GB: no 24 GB card holds them.
    assert state.stale and "does not fit" in state.errors["drafter.gpu"]
    assert state.projection.fits and not state.broken  # still a valid plan file


def test_a_plan_that_never_fitted_is_not_stale(tmp_path):
    path = tmp_path / "big.toml"
    path.write_text(
        '[workload]\ntarget_model = "llama-3.3-70b-instruct"\n'
        '[target]\ngpu = "rtx-4090"\n[drafter]\ngpu = "rtx-4090"\n'
    )
    state = Planner(load_catalog(), path)
    assert not state.stale and not state.projection.fits
    assert "does not fit" in (state.banner or "")


def test_a_changed_plan_never_keeps_the_baseline_name(state):
    measured = state.name
    state.edit("target.gpu", "b200")
    state.edit("drafter.gpu", "b200")
    state.recompute()
    assert state.plan.name == "3 targets + 1 drafter, B200, Qwen3-8B" != measured
    assert state.baseline.name == measured
    state.edit("name", "four B200")
    state.recompute()
    assert state.plan.name == "four B200"
    state.edit("name", "")  # cleared: back to the derived name
    state.edit("target.gpu", "rtx-pro-6000")
    state.edit("drafter.gpu", "rtx-pro-6000")
    state.recompute()
    assert state.plan.name == measured and not state.dirty


def test_moving_gpus_between_the_roles(state):
    assert state.move(to_drafters=True) is None
    assert (state.plan.target.count, state.plan.drafter.count) == (2, 2)
    assert state.move(to_drafters=False) is None
    assert state.move(to_drafters=False) == "At least one drafter GPU must stay"
    state.edit("drafter.gpu", "b200")
    state.recompute()
    assert "same GPU type" in (state.move(to_drafters=True) or "")


def test_pin_and_scenarios(state):
    opened = state.baseline
    state.edit("target.count", 6)
    state.recompute()
    # Pinning keeps the baseline (the Comparison view's p): the opened plan stays the
    # one everything is compared with.
    assert state.pin() is None
    assert state.baseline is opened
    assert [s.name for s in state.scenarios][1:] == [
        "pinned: 6 targets + 1 drafter, RTX PRO 6000, Qwen3-8B"
    ]
    assert state.make_baseline(state.scenarios[1]) is None
    assert state.baseline is state.scenarios[1]
    state.edit("target.count", 5)
    state.recompute()
    assert state.pin(as_baseline=True) is None  # ctrl+l
    assert state.baseline is state.scenarios[2] and len(state.scenarios) == 3
    state.mark_invalid("target.count", "enter a whole number")
    assert state.pin() is not None  # a stale projection is no scenario


def test_prices_show_both_views(state):
    state.edit("target.gpu", "b200")
    state.edit("drafter.gpu", "b200")
    state.recompute()
    values = state.view().values
    # The built-in plan prices a B200 at 3.4x the RTX PRO 6000, whose catalog price is
    # $1.975 per GPU-hour (hardware.toml).
    assert values["price.target.ratio"] == 3.4
    assert values["price.target.usd"] == pytest.approx(3.4 * 1.975)
    state.edit("price.target.usd", 7.9)
    state.recompute()
    assert state.plan.cost.usd_per_gpu_hour["b200"] == 7.9 and "b200" not in state.plan.cost.ratio


def test_a_typed_rate_replaces_the_measurement(state):
    # The one drafter is held at the 14,799.9 tok/s it kept up with (the built-in plan's
    # at_least bound; its default-efficiency estimate is lower), so a typed target rate
    # above 14,799.9 / 3 = 4,933.3 would be drafter-bound and hide the typed rate: 4,500
    # keeps the targets binding, at 3 x 4,500.
    kept = state.plan.calibration.drafter["rtx-pro-6000"].tokens_per_s
    assert kept > 3 * 4500.0
    state.edit("measured.target", 4500.0)
    state.recompute()
    assert state.plan.calibration.target["rtx-pro-6000"] == 4500.0
    assert state.projection.bottleneck == "target"
    assert state.projection.tokens_per_s == pytest.approx(3 * 4500)


@pytest.mark.parametrize(
    "plan, files",
    [
        ('[target]\ngpu = "b2000"\n', {}),  # unknown GPU
        ("[workload]\ntarget_layer_ids = [1, 99]\n", {}),  # no layer 99
        ("[target]\ntp = 16\ncount = 16\n", {}),  # TP above a node
        ("[calibration.target]\nrtx-pro-6000 = 5e-324\n", {}),  # denormal rate
        (
            '[workload]\ntarget_model = "m/config.json"\n',
            {"m/config.json": '{"hidden_size": "wide", "num_hidden_layers": NaN}'},
        ),
        ('[workload]\ntarget_model = "m/config.json"\n', {"m/config.json": "[" * 100_000}),
    ],
)
def test_reading_a_bad_plan_is_a_plan_error(tmp_path, plan, files):
    for name, content in files.items():
        (tmp_path / name).parent.mkdir(exist_ok=True)
        (tmp_path / name).write_text(content)
    path = tmp_path / "plan.toml"
    path.write_text(plan)
    with pytest.raises(PlanError) as err:
        read_plan(path, load_catalog())
    assert str(err.value).strip() and "Traceback" not in str(err.value)


def test_a_config_json_target_reads(tmp_path):
    from test_config_json import QWEN3_8B_CONFIG

    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(QWEN3_8B_CONFIG))
    path = tmp_path / "plan.toml"
    path.write_text(load_plan(None, ['workload.target_model="m/config.json"']).to_toml())
    opened = read_plan(path, load_catalog())
    # The same architecture as the Qwen3-8B preset: the measured run's throughput.
    assert opened.projection.tokens_per_s == pytest.approx(MEASURED_TOK_S)
    assert "m/config.json" in opened.catalog.models


def test_undefined_figures_are_an_error(state):
    broken = dataclasses.replace(state.projection, days=math.nan)
    with pytest.raises(PlanError):
        check_finite(broken)


def test_durations_percentages():
    assert fmt.duration(1 / 24) == "1.0 hours"  # a one-hour run
    assert fmt.duration(0.25 / 24) == "15 min"
    assert fmt.duration(MEASURED_DAYS) == "8.8 days"
    assert fmt.signed_duration(-1e-9) == "+0.0 days"  # never "-0.0"
    assert fmt.signed_duration(-6.6) == "-6.6 days"
    assert fmt.signed_duration(-0.5) == "-12.0 hours"
    assert fmt.percent(12.5) == "1,250 %"


def test_a_measured_rate_follows_its_workload_when_the_model_changes(catalog):
    # Issue 11: switching Qwen3-8B to Llama-3.3-70B kept 4,933 tok/s and showed a 70B run
    # 1.8x faster than the 8B baseline. The measurement now keeps its workload: the 70B
    # target is rescaled by its FLOP count, far slower than the measured 8B run.
    from dflash_plan.tui.state import Planner

    state = Planner(catalog)
    assert state.edit("workload.target_model", "llama-3.3-70b-instruct")
    state.edit("target.count", 4)  # 131 GiB of weights: TP 4 over 96 GiB cards
    state.edit("target.tp", 4)
    state.edit("drafter.count", 4)  # a 70B drafter's optimizer state, sharded
    state.recompute()
    notices = state.take_notices()
    assert any("another target model" in n for n in notices) and not state.take_notices()
    view = state.view()
    p = view.projection
    assert p.target.source == "estimated" and "rescaled" in p.target.basis
    assert view.comparison.speedup < 0.2


def test_adopting_a_plan_pins_the_current_one_and_scenarios_can_be_managed(catalog):
    from dflash_plan.tui.state import Planner
    from support import edit

    state = Planner(catalog)
    opened = state.plan
    b200 = edit(
        opened,
        target={"gpu": "b200"},
        drafter={"gpu": "b200"},
        cost={**opened.cost.model_dump(), "usd_per_gpu_hour": {"b200": 5.0}},
    )
    assert state.adopt(b200) is None
    # Exactly the plan adopted, prices included; the opened plan is still the baseline.
    assert state.plan.model_copy(update={"name": ""}) == b200.model_copy(update={"name": ""})
    assert state.baseline.projection.plan == opened
    state.pin(as_baseline=True)
    assert len(state.scenarios) == 2 and state.baseline is state.scenarios[-1]
    state.rename(state.baseline, "four B200")
    assert state.baseline.name == "four B200"
    assert state.unpin(state.baseline) is None
    assert state.baseline.projection.plan == opened
    assert state.unpin(state.baseline) == "The last scenario is the baseline: it stays"


# --- topology and drafter family (issue 32) ------------------------------------------


def test_colocated_shows_the_plans_gpus_and_their_total_is_edited(state):
    assert state.edit("workload.topology", "colocated")
    state.recompute()
    view = state.view()
    # The measured run's 3 + 1 GPUs, each running a target shard and a drafter rank.
    assert view.colocated and view.values["target.count"] == 4
    assert state.plan.workload.topology == "colocated" and state.dirty
    assert state.edit("target.count", 8)  # the total: the drafters' count is kept
    state.recompute()
    assert (state.plan.target.count, state.plan.drafter.count) == (7, 1)
    assert not state.edit("target.count", 8)  # the same total: nothing changed
    assert state.edit("target.tp", 2)  # whole replicas of 2 over the same 8 GPUs
    state.recompute()
    assert (state.plan.target.count, state.plan.drafter.count, state.plan.target.tp) == (6, 2, 2)
    assert state.view().values["target.count"] == 8
    # Back to disaggregated: the split the file keeps, the split field shown again.
    state.edit("workload.topology", "disaggregated")
    state.recompute()
    assert not state.view().colocated and state.view().values["target.count"] == 6


def test_colocated_gpus_the_file_cannot_hold_or_the_model_refuses_land_on_the_gpus_field(state):
    state.edit("workload.topology", "colocated")
    state.edit("target.tp", 2)
    state.recompute()
    assert (state.plan.target.count, state.plan.drafter.count) == (2, 2)
    state.edit("target.count", 3)  # not whole replicas of 2: the model's rule
    state.recompute()
    assert state.stale and set(state.errors) == {"target.count"}  # not the hidden drafters'
    assert "multiple of target.tp 2" in state.errors["target.count"]
    state.edit("target.count", 2)  # one replica: no drafter count is left for the file
    assert state.errors["target.count"].startswith("must be at least 4")
    assert state.banner is not None and "\n" not in state.banner
    state.edit("target.count", 6)
    state.recompute()
    assert not state.stale and state.errors == {}
    assert state.plan.target.count + state.plan.drafter.count == 6


def test_the_split_keys_and_balance_say_why_they_do_nothing_colocated(state):
    state.edit("workload.topology", "colocated")
    state.recompute()
    reason = state.move(to_drafters=True)
    assert reason is not None and reason.startswith("Colocated: every GPU runs")
    assert state.move(to_drafters=False) == reason
    with pytest.raises(PlanError, match="no split to balance"):
        state.balance_input()
    assert (state.plan.target.count, state.plan.drafter.count) == (3, 1)  # unchanged


def test_colocated_needs_one_gpu_type_said_in_one_line_on_the_drafters_gpu(state):
    state.edit("drafter.gpu", "b200")
    state.recompute()
    assert not state.stale
    state.edit("workload.topology", "colocated")
    state.recompute()
    assert state.stale and state.plan.workload.topology == "disaggregated"  # the last valid
    banner = state.banner
    assert banner is not None and "\n" not in banner and "same GPU type" in banner
    assert "same GPU type" in state.errors["drafter.gpu"]
    # Colocated, either role's GPU type is both roles': one pick puts the plan right.
    state.edit("target.gpu", "h200")
    state.recompute()
    assert not state.stale and state.plan.workload.topology == "colocated"
    assert state.plan.target.gpu == state.plan.drafter.gpu == "h200"


def test_picking_a_drafter_family_changes_the_plan(state):
    from dflash_plan.model.inputs.plan import DRAFTERS
    from dflash_plan.tui.fields import DRAFTER_LABELS, FIELDS

    assert tuple(DRAFTER_LABELS) == DRAFTERS  # a label for each family, in the model's order
    options = FIELDS["workload.drafter"].options
    assert options == [("DFlash", "dflash"), ("DFlash2", "dflash2"), ("DSpark", "dspark"),
                       ("EAGLE-3", "eagle3")]  # fmt: skip
    assert state.view().values["workload.drafter"] == "dflash"
    assert state.edit("workload.drafter", "dflash2")
    state.recompute()
    assert state.plan.workload.drafter == "dflash2" and state.dirty and state.current
    assert state.view().values["workload.drafter"] == "dflash2"
    state.edit("workload.drafter", "dflash")
    state.recompute()
    assert not state.dirty


@pytest.mark.parametrize(
    ("total", "drafters", "tp", "counts"),
    [
        (8, 1, 1, (7, 1)),  # the drafters' count kept
        (8, 3, 2, (4, 4)),  # whole replicas of 2: the targets round down
        (2, 5, 1, (1, 1)),  # fewer GPUs than drafters: one target, the rest drafters
        (9, 2, 4, (4, 5)),  # not whole replicas: the model says so (check_colocated)
        (4, 1, 4, None),  # one replica and no GPU left for a drafter count
        (1, 1, 1, None),
    ],
)
def test_colocated_counts(total, drafters, tp, counts):
    from dflash_plan.tui.state import colocated_counts

    assert colocated_counts(total, drafters, tp) == counts
