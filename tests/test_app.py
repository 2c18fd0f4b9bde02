"""Pilot tests of the interactive planner: every input, the split keys, files, baseline."""

from __future__ import annotations

import pytest
from apphelp import SETTLE_S, choose, shown, type_into
from textual.widgets import Input, Select, TextArea

from dflash_plan.model.plan import load_plan
from dflash_plan.tui.app import PlannerApp
from dflash_plan.tui.screens import ConfirmDialog, HelpScreen, PathDialog

SIZE = (120, 40)


async def test_opens_on_the_measured_run():
    app = PlannerApp()
    async with app.run_test(size=SIZE):
        assert shown(app, "ktok-per-s") == "14.8 Ktok/s"
        assert shown(app, "days") == "8.8 days"
        assert shown(app, "total-cost") == "845 RTX PRO 6000-h"
        assert shown(app, "bottleneck") == "target"
        assert "measured" in shown(app, "ktok-per-s-note")
        assert app.query_one("#target-count", Input).value == "3"
        assert app.query_one("#target-gpu", Select).value == "rtx-pro-6000"


async def test_target_count_moves_the_bottleneck_to_the_drafter():
    app = PlannerApp()
    async with app.run_test(size=SIZE) as pilot:
        await type_into(pilot, "target-count", "7")
        # One estimated drafter caps 7 targets at its capacity (test_projection.py).
        assert shown(app, "bottleneck") == "drafter"
        assert shown(app, "ktok-per-s") == "22.2 Ktok/s"
        assert shown(app, "days") == "5.9 days"


async def test_drafter_count_relieves_the_drafter():
    app = PlannerApp()
    async with app.run_test(size=SIZE) as pilot:
        await type_into(pilot, "target-count", "6")
        await type_into(pilot, "drafter-count", "2")
        # 6 measured targets x 4,933.3 tok/s, drafters no longer binding.
        assert shown(app, "ktok-per-s") == "29.6 Ktok/s"
        assert shown(app, "bottleneck") == "target"


async def test_gpu_choice_and_baseline_deltas_for_four_b200():
    app = PlannerApp()
    async with app.run_test(size=SIZE) as pilot:
        await choose(pilot, "target-gpu", "b200")
        await choose(pilot, "drafter-gpu", "b200")
        # 3 targets x 4,933.3 x (2250/504) x (40 %/45 %) = 58.7 Ktok/s; 3.97x the baseline
        # at 3.4x the price per GPU-hour: 3.4 / 3.97 = 0.86x the cost.
        assert shown(app, "ktok-per-s") == "58.7 Ktok/s"
        versus = shown(app, "versus")
        assert "3.97x speed" in versus and "0.86x cost" in versus and "-6.6 days" in versus
        assert "estimated" in shown(app, "ktok-per-s-note")


async def test_tp_and_workload_inputs():
    app = PlannerApp()
    async with app.run_test(size=SIZE) as pilot:
        await type_into(pilot, "workload-epochs", "3")
        assert shown(app, "days") == "4.4 days"            # half of 8.8 days
        await type_into(pilot, "workload-samples", "400000")
        assert shown(app, "days") == "2.2 days"            # half again
        await type_into(pilot, "workload-num_anchors", "512")
        # 512 anchors: the drafter needs ~72 TFLOP per sample and binds (dflash.md).
        assert shown(app, "bottleneck") == "drafter"
        await type_into(pilot, "workload-num_anchors", "128")
        await type_into(pilot, "target-count", "4")
        await type_into(pilot, "target-tp", "2")
        assert "+1 target replica" in shown(app, "marginal")


async def test_cost_views_stay_consistent():
    app = PlannerApp()
    async with app.run_test(size=SIZE) as pilot:
        await choose(pilot, "target-gpu", "b200")
        ratio = app.query_one("#price-target-ratio", Input)
        usd = app.query_one("#price-target-usd", Input)
        assert ratio.value == "3.4"
        assert float(usd.value) == pytest.approx(3.4 * 1.975, rel=1e-3)
        await type_into(pilot, "price-target-ratio", "2")
        assert float(usd.value) == pytest.approx(2 * 1.975, rel=1e-3)
        await type_into(pilot, "price-target-usd", "7.9")
        assert float(ratio.value) == pytest.approx(7.9 / 1.975, rel=1e-3)
        assert app.plan.cost.usd_per_gpu_hour["b200"] == 7.9
        assert "b200" not in app.plan.cost.ratio


async def test_calibration_input_marks_the_figure_measured():
    app = PlannerApp()
    async with app.run_test(size=SIZE) as pilot:
        await type_into(pilot, "target-count", "7")
        await type_into(pilot, "measured-drafter", "40000")
        # situation.md's hand projection: 14.8 x 7/3 = 34.5 Ktok/s, 3.8 days.
        assert shown(app, "ktok-per-s") == "34.5 Ktok/s"
        assert shown(app, "days") == "3.8 days"
        assert "drafter measured" in shown(app, "utilisation")


async def test_one_recompute_per_burst_of_keys():
    app = PlannerApp()
    async with app.run_test(size=SIZE) as pilot:
        before = app.recompute_count
        await type_into(pilot, "workload-samples", "1600000")
        assert app.recompute_count == before + 1
        assert shown(app, "days") == "17.6 days"


async def test_split_keys_and_balance():
    app = PlannerApp()
    async with app.run_test(size=SIZE) as pilot:
        app.set_focus(None)
        await pilot.press("less_than_sign")
        await pilot.pause(SETTLE_S)
        assert (app.plan.target.count, app.plan.drafter.count) == (2, 2)
        await pilot.press("greater_than_sign", "greater_than_sign")
        await pilot.pause(SETTLE_S)
        assert (app.plan.target.count, app.plan.drafter.count) == (3, 1)   # one drafter stays
        await type_into(pilot, "target-count", "7")
        app.set_focus(None)
        await pilot.press("ctrl+b")
        await pilot.pause(SETTLE_S)
        # 8 GPUs: 6 measured targets (29.6 Ktok/s) + 2 drafters beats 7 + 1 (22.2).
        assert (app.plan.target.count, app.plan.drafter.count) == (6, 2)
        assert app.query_one("#target-count", Input).value == "6"
        assert shown(app, "ktok-per-s") == "29.6 Ktok/s"


@pytest.mark.parametrize("field, text, reason", [
    ("target-count", "abc", "'abc' is not a whole number"),
    ("target-count", "0", "greater than 0"),
    ("target-tp", "2", "not a multiple of tp 2"),
    ("drafter-count", "", "enter a whole number"),
])
async def test_invalid_input_is_marked_and_recovers(field, text, reason):
    app = PlannerApp()
    async with app.run_test(size=SIZE) as pilot:
        await type_into(pilot, field, text)
        assert reason in shown(app, f"error-{field}")
        assert "STALE" in shown(app, "stale")
        assert shown(app, "ktok-per-s") == "14.8 Ktok/s"      # the last valid projection
        assert app.dirty
        await type_into(pilot, field, {"target-tp": "1"}.get(field, "3" if "target" in field else "1"))
        assert shown(app, f"error-{field}") == ""
        assert not app.query_one("#stale").display
        assert shown(app, "ktok-per-s") == "14.8 Ktok/s"


async def test_a_plan_that_does_not_fit_keeps_the_last_projection():
    app = PlannerApp()
    async with app.run_test(size=SIZE) as pilot:
        await choose(pilot, "workload-target_model", "llama-3.3-70b-instruct")
        await choose(pilot, "target-gpu", "rtx-4090")
        assert "does not fit" in shown(app, "stale")
        assert "does not fit" in shown(app, "error-target-gpu")
        assert shown(app, "ktok-per-s") != "—"


async def test_save_then_open_round_trip(tmp_path):
    app = PlannerApp()
    path = tmp_path / "mine.toml"
    async with app.run_test(size=SIZE) as pilot:
        await type_into(pilot, "target-count", "5")
        app.set_focus(None)
        await pilot.press("ctrl+s")                     # no file yet: asks where
        await pilot.pause()
        assert isinstance(app.screen, PathDialog)
        await type_into(pilot, "path-input", str(path), settle=False)
        await pilot.press("enter")
        await pilot.pause()
        assert load_plan(path) == app.plan and app.plan.target.count == 5
        assert not app.dirty and app.path == path
    other = PlannerApp()
    async with other.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+o")
        await pilot.pause()
        await type_into(pilot, "path-input", str(path), settle=False)
        await pilot.press("enter")
        await pilot.pause(SETTLE_S)
        assert other.plan == load_plan(path)
        assert other.query_one("#target-count", Input).value == "5"
        assert other.path == path


async def test_open_refuses_a_bad_file_with_the_reason(tmp_path):
    bad = tmp_path / "bad.toml"
    bad.write_text("[target]\ncount = 0\n")
    app = PlannerApp()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+o")
        await pilot.pause()
        await type_into(pilot, "path-input", str(bad), settle=False)
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, PathDialog)
        assert "target.count = 0" in shown(app.screen, "path-error")


async def test_unsaved_changes_prompt_before_quitting():
    app = PlannerApp()
    async with app.run_test(size=SIZE) as pilot:
        await type_into(pilot, "target-count", "4")
        await pilot.press("ctrl+q")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.click("#answer-cancel")
        await pilot.pause()
        assert not isinstance(app.screen, ConfirmDialog) and app.is_running
        await pilot.press("ctrl+q")
        await pilot.pause()
        await pilot.click("#answer-discard")
        await pilot.pause()
    assert app.return_code == 0


async def test_quit_without_changes_asks_nothing():
    app = PlannerApp()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("ctrl+q")
        await pilot.pause()
    assert app.return_code == 0


async def test_pin_baseline():
    app = PlannerApp()
    async with app.run_test(size=SIZE) as pilot:
        await type_into(pilot, "target-count", "6")
        await type_into(pilot, "drafter-count", "2")
        app.set_focus(None)
        await pilot.press("ctrl+l")
        await pilot.pause()
        assert "1.00x speed" in shown(app, "versus")
        await type_into(pilot, "drafter-count", "1")
        assert "0.75x speed" in shown(app, "versus")    # 22.2 / 29.6 Ktok/s


async def test_launch_panel_follows_the_plan_and_switches_format(tmp_path):
    app = PlannerApp()
    async with app.run_test(size=SIZE) as pilot:
        text = app.query_one("#launch-command", TextArea).text
        assert "specforge train -c run.yaml" in text and text.count("- port: ") == 3
        await type_into(pilot, "target-count", "5")
        assert app.query_one("#launch-command", TextArea).text.count("- port: ") == 5
        await choose(pilot, "launch-format", "speculators")
        text = app.query_one("#launch-command", TextArea).text
        assert "launch_vllm.py" in text and "--data-parallel-size 5" in text
        app.set_focus(None)
        await pilot.press("ctrl+y")
        assert app.clipboard == text
        out = tmp_path / "go.sh"
        await pilot.press("ctrl+e")
        await pilot.pause()
        await type_into(pilot, "path-input", str(out), settle=False)
        await pilot.press("enter")
        await pilot.pause()
        assert out.read_text() == text


async def test_help_and_command_palette():
    app = PlannerApp()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f1")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape")
        await pilot.pause()
        assert not isinstance(app.screen, HelpScreen)
        titles = {command.title for command in app.get_system_commands(app.screen)}
        assert {"Save", "Save as", "Open", "New", "Balance", "Pin baseline", "Copy launch",
                "Export launch", "Help", "GPU→drafter", "GPU→target", "Light/dark"} <= titles


async def test_theme_toggle():
    app = PlannerApp()
    async with app.run_test(size=SIZE) as pilot:
        app.set_focus(None)
        await pilot.press("ctrl+t")
        assert app.theme == "textual-light"


async def test_new_resets_to_the_builtin_plan():
    app = PlannerApp()
    async with app.run_test(size=SIZE) as pilot:
        await type_into(pilot, "target-count", "5")
        app.set_focus(None)
        await pilot.press("ctrl+n")
        await pilot.pause()
        await pilot.click("#answer-discard")
        await pilot.pause(SETTLE_S)
        assert app.plan.target.count == 3
        assert app.query_one("#target-count", Input).value == "3"


async def test_save_on_quit_asks_for_a_file_then_quits(tmp_path):
    app = PlannerApp()
    path = tmp_path / "q.toml"
    async with app.run_test(size=SIZE) as pilot:
        await type_into(pilot, "target-count", "4")
        await pilot.press("ctrl+q")
        await pilot.pause()
        await pilot.click("#answer-save")
        await pilot.pause()
        await type_into(pilot, "path-input", str(path), settle=False)
        await pilot.press("enter")
        await pilot.pause()
    assert app.return_code == 0
    assert load_plan(path).target.count == 4


async def test_launch_format_is_saved_with_the_plan(tmp_path):
    path = tmp_path / "p.toml"
    path.write_text(load_plan(None).to_toml())
    app = PlannerApp(path)
    async with app.run_test(size=SIZE) as pilot:
        await choose(pilot, "launch-format", "slurm")
        assert app.dirty
        app.set_focus(None)
        await pilot.press("ctrl+s")
        await pilot.pause()
    assert load_plan(path).launch.format == "slurm"
