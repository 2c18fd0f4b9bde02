"""Pilot tests of the planner app: what a user does and sees. Values are set directly
(apphelp.put) unless typing is the subject; the planning rules themselves are tested without
textual in test_state.py. Expected figures come from the measured run (3 targets at
4,933.3 tok/s each: 14.8 Ktok/s, 8.8 days) or from GPU specifications, as stated."""

from __future__ import annotations

import json
import math
import os
import time

import pytest
from apphelp import choose, error, field, planner, put, settle, steady_cursors, text  # noqa: F401
from dflash_plan.model.core.projection import project
from dflash_plan.model.inputs.plan import load_plan
from dflash_plan.tui import format as fmt
from dflash_plan.tui.app import DEBOUNCE_S, PlannerApp
from dflash_plan.tui.dialogs import ConfirmDialog, HelpScreen, PathDialog
from dflash_plan.tui.footer import KeysFooter
from dflash_plan.tui.picker import Picker, PickerList
from dflash_plan.tui.planner.inputs import FieldRow, InputsPanel
from dflash_plan.tui.planner.results import figure_rows, memory
from dflash_plan.tui.tabs import TabBar, TabbedView
from textual import events
from textual.widgets import Input

SIZE = (120, 40)
MEASURED_DAYS = 800_000 * 2344 * 6 / (3 * 4933.3) / 86_400  # 8.8 days
SMALL = (80, 24)


async def test_opens_on_the_measured_run_with_a_visible_first_focus():
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        figures = text(app, "figures")
        assert "14.8 Ktok/s  measured" in figures and "8.8 days  for 6 epochs" in figures
        assert "845 RTX PRO 6000-h" in figures  # 3 + 1 GPUs x 8.8 days x 24 h
        focused = app.focused
        assert focused is not None and focused.id == "target-count"
        other = await field(pilot, "drafter.count")
        assert focused.styles.background != other.styles.background  # focus you can see
        await pilot.press("f4")
        assert app.screen.query_one(TabbedView).active == "launch"
        await pilot.press("f3")
        assert app.screen.query_one(TabbedView).active == "results"
        await pilot.click(TabBar, offset=(len(" Projection  L"), 0))  # the Launch label
        await pilot.pause()
        assert app.screen.query_one(TabbedView).active == "launch"
        assert app.screen.query_one("#launch").display and "-launch" in app.screen.classes
        app.screen.query_one(TabBar).focus()
        await pilot.press("left")  # the tabs, focused, step with arrows
        assert app.screen.query_one(TabbedView).active == "results"


async def test_typing_updates_the_numbers():
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("6")  # into the focused target count
        await pilot.press("tab", "tab", "tab", "tab")  # tp, weights, the drafter GPU, its count
        await pilot.press("2")  # typed as the field opens
        await pilot.pause()
        # 6 measured targets x 4,933.3 tok/s; two drafters keep up with them.
        assert "29.6 Ktok/s" in text(app, "figures")


async def test_a_field_is_drawn_by_its_row_until_focused_and_keeps_keys_typed_meanwhile():
    from textual import events

    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        assert not app.screen.query("#target-tp")  # no editor until it is needed
        assert text(app, "target-tp") == "1"
        await pilot.click("#row-workload-epochs", offset=(12, 0))  # a click opens one
        await pilot.pause()
        assert app.focused.id == "workload-epochs"
        await pilot.press("3")  # its text was selected: replaced
        await pilot.pause()
        assert app.state.plan.workload.epochs == 3
        app.screen.query_one("#row-target-tp").focus()  # as tab does, and at once a key,
        app.post_message(events.Key("2", "2"))  # before the editor has the focus
        await pilot.pause()
        await pilot.pause()
        assert app.focused.id == "target-tp" and text(app, "target-tp") == "2"


async def test_a_burst_of_keys_is_one_recompute():
    app = PlannerApp()  # the real debounce
    async with app.run_test(size=SIZE) as pilot:
        samples = await field(pilot, "workload.samples")
        before = app.planner.recompute_count
        for typed in ("1", "16", "160", "1600", "16000", "160000", "1600000"):
            samples.value = typed  # as fast as a paste
        deadline = time.monotonic() + 5
        while app.planner.recompute_count == before and time.monotonic() < deadline:
            await pilot.pause(DEBOUNCE_S)
        await pilot.pause(DEBOUNCE_S * 3)
        # Seven edits: the first at once, the other six in one recompute at the end of the
        # burst (one more when a loaded machine spreads the burst's messages over more
        # than one debounce interval).
        assert before + 2 <= app.planner.recompute_count <= before + 3
        assert "17.6 days" in text(app, "figures")  # twice the samples: 2 x 8.8 days


async def test_keys_typed_in_one_burst_after_a_backspace_apply_in_order():
    # Issue 29 item 4: tmux `send-keys BSpace 1 2` saved 1. The backspace (an Input
    # binding) ran once it had bubbled up to the app, after the 1 and the 2 were typed.
    app = PlannerApp()  # the real debounce: a burst is what is under test
    async with app.run_test(size=SIZE) as pilot:

        async def burst(key: str, keys: tuple[str, ...]) -> Input:
            box = await field(pilot, key)
            box.focus()
            await pilot.pause()
            await pilot.press("end")
            for typed in keys:  # as the terminal driver posts them: no pause between
                app.post_message(events.Key(typed, typed if len(typed) == 1 else None))
            deadline = time.monotonic() + 5
            while (app.planner._timer is not None or box.value == "") and (
                time.monotonic() < deadline
            ):
                await pilot.pause(DEBOUNCE_S)
            await pilot.pause()
            return box

        # "3", end, backspace, 0, 2: "02", 2 targets at 4,933.3 tok/s each = 9.9 Ktok/s,
        # 8.8 days x 3/2 = 13.2 days (the field held "30" before).
        count = await burst("target.count", ("backspace", "0", "2"))
        assert count.value == "02" and error(app, "target.count") == ""
        assert app.state.plan.target.count == 2 and not app.planner.view.stale
        assert "9.9 Ktok/s" in text(app, "figures") and "13.2 days" in text(app, "figures")
        assert "2 targets" in text(app, "title-bar")
        # "6", end, backspace, 1, 2: 12 epochs, twice the 13.2 days of 6 (was "61").
        epochs = await burst("workload.epochs", ("backspace", "1", "2"))
        assert epochs.value == "12" and app.state.plan.workload.epochs == 12
        assert "26.4 days  for 12 epochs" in text(app, "figures")


async def test_split_keys_move_a_gpu_even_from_a_number_field():
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        assert app.focused.id == "target-count"
        await pilot.press("<")
        assert text(app, "target-count") == "2"  # not "3<"
        assert (app.state.plan.target.count, app.state.plan.drafter.count) == (2, 2)
        await pilot.press(">", ">")
        assert (app.state.plan.target.count, app.state.plan.drafter.count) == (3, 1)
        await pilot.press("ctrl+o")  # in a dialog, < and > are text
        await pilot.pause()
        await pilot.press("<", ">")
        assert app.screen.query_one("#path-input", Input).value.endswith("<>")


async def test_a_paste_into_a_number_field_is_projected_whole():
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        count = app.focused
        assert count.id == "target-count"
        count.post_message(events.Paste("6"))  # 3 is selected: replaced
        await pilot.pause()
        assert count.value == "6" and app.state.plan.target.count == 6
        count.post_message(events.Paste("7\n"))  # the cursor at the end: still 7,
        await pilot.pause()  # never 67
        assert count.value == "7" and app.state.plan.target.count == 7
        assert "7 targets" in text(app, "title-bar")
        count.post_message(events.Paste("12\n34"))  # two values: said, not one taken
        await pilot.pause()
        assert "'12 34' is not a whole number" in error(app, "target.count")
        assert app.state.plan.target.count == 7


async def test_question_mark_opens_help_from_a_number_field_and_types_in_text():
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        assert app.focused.id == "target-count"
        await pilot.press("question_mark")
        await pilot.pause()
        assert isinstance(app.screen, HelpScreen)
        assert app.state.plan.target.count == 3 and "target.count" not in app.state.invalid
        await pilot.press("escape")
        await pilot.pause()
        (await field(pilot, "name")).focus()
        await pilot.press("question_mark")  # a name may hold a '?'
        assert text(app, "name") == "?"


async def test_a_picker_opens_searches_picks_and_closes(monkeypatch):
    import dflash_plan.tui.picker as picker_module

    now = [0.0]  # the picker's clock, stepped here
    monkeypatch.setattr(picker_module, "monotonic", lambda: now[0])
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        picker = app.screen.query_one("#target-gpu", Picker)
        assert not picker.children  # its list is built when opened
        picker.focus()
        await pilot.press("<")  # split keys work here too
        assert (app.state.plan.target.count, app.state.plan.drafter.count) == (2, 2)
        await pilot.press(">", "enter")
        listing = picker.query_one(PickerList)
        assert app.focused is listing and listing.region.height == 12  # over the fields
        assert listing.highlighted == 0  # the current value, RTX PRO 6000
        await pilot.press("h", "2")  # typed: the first name with "h2"
        assert picker.entries[listing.highlighted][1] == "h200"
        now[0] += picker_module.SEARCH_PAUSE_S  # a pause starts a new search
        await pilot.press("b", "2", "enter")  # "b2": B200 before GB200
        assert picker.value == "b200" and app.state.plan.target.gpu == "b200"
        assert app.focused is picker and not picker.is_open
        await pilot.press("down", "escape")  # escape: closed, nothing changed
        assert picker.value == "b200" and app.focused is picker and not picker.is_open
        await pilot.click("#target-gpu")  # a click opens it
        assert picker.is_open
        await pilot.press("home")
        await pilot.click(listing, offset=(2, 1))  # the first row under the border
        assert picker.value == "rtx-pro-6000" and not picker.is_open
        assert app.state.plan.target.gpu == "rtx-pro-6000"
        reference = app.screen.query_one("#cost-reference_gpu", Picker)
        reference.focus()  # optional: its list starts blank
        await pilot.press("enter", "home", "enter")
        assert reference.value is None and app.state.plan.cost.reference_gpu is None
        assert "catalog prices" in reference.render().plain


async def test_balance_runs_off_the_ui_thread():
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        await put(pilot, "target.count", "7")
        assert "drafter" in text(app, "figures")  # one drafter cannot keep up
        await pilot.press("ctrl+b")
        await settle(pilot)
        # 6 targets supply 6 x 4,933.3 = 29.6 Ktok/s, which 2 drafters absorb.
        assert (app.state.plan.target.count, app.state.plan.drafter.count) == (6, 2)
        assert text(app, "target-count") == "6"


BAD_VALUES = [
    ("target.count", "abc", "'abc' is not a whole number"),
    ("target.count", "0", "must be at least 1"),
    ("target.count", "999999", "100,000"),  # the model's documented bound
    ("target.tp", "2", "not a multiple of tp 2"),
    ("measured.target", "5e-324", "from 1 to"),  # a denormal rate
    # A decimal comma: refused with the command line's words, never read as 34.
    ("price.target.ratio", "3,4", "'3,4' has a comma: use a dot for a decimal point"),
]


async def test_a_bad_value_is_marked_in_plain_words_and_recovers():
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        for key, typed, reason in BAD_VALUES:
            await put(pilot, key, typed)
            shown = error(app, key)
            assert reason in shown and "Input should" not in shown and "{" not in shown
            assert text(app, "banner").startswith("STALE")
            assert "14.8 Ktok/s" in text(app, "figures")  # the last valid projection
            await put(
                pilot,
                key,
                {"target.tp": "1", "measured.target": "4933.3", "price.target.ratio": "1"}.get(
                    key, "3"
                ),
            )
            assert error(app, key) == "" and not app.screen.query_one("#banner").display


async def test_the_title_names_the_plan_whose_figures_are_shown():
    # Issue 29 item 18g: 1e9 in the target count put "1000000000 targets" in the title
    # over the measured run's figures (the plan refused it: at most 100,000 GPUs).
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        measured = text(app, "title-bar")
        await put(pilot, "target.count", "1e9")
        await pilot.pause()
        assert "100,000" in error(app, "target.count")
        assert "14.8 Ktok/s" in text(app, "figures")  # the measured run's, stale
        assert "1000000000" not in text(app, "title-bar")
        assert text(app, "title-bar").startswith(measured)  # its name, and "unsaved"
        await put(pilot, "target.count", "5")  # a plan again: named for what it is
        await pilot.pause()
        assert "5 targets + 1 drafter" in text(app, "title-bar")


async def test_a_plan_that_stops_fitting_is_stale_one_that_never_fitted_is_not(tmp_path):
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        await choose(pilot, "workload.target_model", "llama-3.3-70b-instruct")
        await choose(pilot, "target.gpu", "rtx-4090")
        # 70 B bf16 weights are 140 GB: a 24 GB RTX 4090 cannot hold them.
        assert "does not fit" in error(app, "target.gpu")
        assert text(app, "banner").startswith("STALE")
        assert "14.8 Ktok/s" in text(app, "figures")
    path = tmp_path / "big.toml"
    path.write_text(
        '[workload]\ntarget_model = "llama-3.3-70b-instruct"\n'
        '[target]\ngpu = "rtx-4090"\n[drafter]\ngpu = "rtx-4090"\n'
    )
    app = planner(path)
    async with app.run_test(size=SIZE):
        assert "does not fit" in text(app, "banner") and "STALE" not in text(app, "banner")
        assert "does not fit" in text(app, "figures")


async def test_a_plan_over_its_storage_is_shown_as_one_out_of_memory(tmp_path):
    """Offline data over storage.tb does not fit as GPU memory does not (one rule,
    Projection.does_not_fit): an edit that makes it is stale, the last plan that fitted
    kept, the reason in the banner and by the field; a file that never fitted shows no
    figures, "does not fit" in their place. It showed the offline run's days and cost with
    a red note by its storage. The built-in workload captures 76.8 TB
    (tests/contracts/test_cli.py)."""
    reason = "offline hidden states need 76.8 TB"
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        await choose(pilot, "workload.mode", "offline")
        fitted = text(app, "figures")
        await put(pilot, "storage.tb", "50")
        await pilot.pause()
        assert text(app, "banner").startswith("STALE") and reason in text(app, "banner")
        assert reason in error(app, "storage.tb")
        assert text(app, "figures") == fitted
    path = tmp_path / "offline.toml"
    path.write_text('[workload]\nmode = "offline"\n[storage]\ntb = 50\n')
    app = planner(path)
    async with app.run_test(size=SIZE):
        banner, figures = text(app, "banner"), text(app, "figures")
        assert reason in banner and "STALE" not in banner
        assert "does not fit" in figures and "DOES NOT FIT" not in figures
        assert "days" not in figures and "GPU-h" not in figures
        assert reason in error(app, "storage.tb")


async def _open(pilot, path) -> None:
    await pilot.press("ctrl+o")
    await pilot.pause()
    await put(pilot, "path-input", str(path))
    await pilot.press("enter")
    await pilot.pause()


def _hostile_config(tmp_path):
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text('{"hidden_size": "wide"}')
    return '[workload]\ntarget_model = "m/config.json"\n'


BAD_PLANS = [
    '[target]\ngpu = "b2000"\n',  # unknown GPU
    "[workload]\ntarget_layer_ids = [1, 99]\n",  # Qwen3-8B has 36 layers
    "[target]\ntp = 16\ncount = 16\n",  # an RTX PRO 6000 node has 8 GPUs
    _hostile_config,
]


async def test_open_of_a_bad_plan_stays_in_the_dialog(tmp_path):
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        for i, plan in enumerate(BAD_PLANS):
            path = tmp_path / f"bad{i}.toml"
            path.write_text(plan(tmp_path) if callable(plan) else plan)
            await _open(pilot, path)
            assert isinstance(app.screen, PathDialog) and app.is_running
            assert str(path) in text(app, "path-error")
            await pilot.press("escape")
            await pilot.pause()


async def test_open_and_new_refresh_the_focused_field(tmp_path):
    from test_config_json import QWEN3_8B_CONFIG

    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(QWEN3_8B_CONFIG))
    path = tmp_path / "five.toml"
    path.write_text(
        load_plan(
            None, ["target.count=5", "drafter.count=2", 'workload.target_model="m/config.json"']
        ).to_toml()
    )
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        assert app.focused.id == "target-count"
        await _open(pilot, path)  # a config.json target opens
        assert text(app, "target-count") == "5" and app.focused.id == "target-count"
        model = app.screen.query_one("#workload-target_model", Picker)
        assert model.value == "m/config.json"
        # The same architecture as the Qwen3-8B preset: 5 measured targets x 4,933.3 tok/s
        # = 24.7 Ktok/s, which two drafters absorb.
        assert "24.7 Ktok/s" in text(app, "figures")
        await put(pilot, "target.count", "6")
        app.screen.query_one("#target-count").focus()
        await pilot.press("ctrl+n")
        await pilot.pause()
        await pilot.click("#answer-discard")
        await pilot.pause()
        assert text(app, "target-count") == "3"


async def test_name_is_editable_and_a_changed_plan_never_looks_like_the_baseline(tmp_path):
    path = tmp_path / "b200.toml"
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        measured = app.state.name
        await choose(pilot, "target.gpu", "b200")
        await choose(pilot, "drafter.gpu", "b200")
        await pilot.pause()  # the name is shown in the frame after the figures
        name_row = app.screen.query_one("#row-name", FieldRow)
        assert name_row.placeholder == "3 targets + 1 drafter, B200, Qwen3-8B"
        assert "3 targets + 1 drafter, B200" in name_row.render().plain  # shown, dim
        assert name_row.placeholder in text(app, "title-bar")  # the title bar names it
        assert (await field(pilot, "name")).placeholder == name_row.placeholder  # opened
        # Against the baseline, named as it was opened (the figures are the model's:
        # test_projection.py derives them).
        b200 = project(app.state.plan, app.state.catalog)
        assert fmt.ktok(b200.tokens_per_s) in text(app, "figures")
        versus = text(app, "versus")
        assert measured in versus.replace("\n", " ")
        assert f"{fmt.times(MEASURED_DAYS / b200.days)} speed" in versus
        await pilot.press("f2")
        await pilot.pause()
        await put(pilot, "path-input", str(path))
        await pilot.press("enter")
        await pilot.pause()
        await put(pilot, "name", "four B200")
        # A long name is cut, never the file's name and its unsaved marker.
        await put(pilot, "name", "four B200 for the December run of the drafter team " * 3)
        await pilot.pause()
        title = text(app, "title-bar")
        assert title.rstrip().endswith(f"— {path.name} ●") and "…" in title
        await pilot.resize_terminal(60, 20)
        await pilot.pause()
        assert text(app, "title-bar").rstrip().endswith(f"— {path.name} ●")
    assert load_plan(path).name == "3 targets + 1 drafter, B200, Qwen3-8B"
    assert app.state.plan.name.startswith("four B200 for the December")


async def test_save_as_refuses_a_name_over_255_bytes_in_one_line(tmp_path, monkeypatch):
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        await put(pilot, "target.count", "7")
        await pilot.press("f2")
        await pilot.pause()
        # Linux file systems allow 255 bytes in one name: 300 + ".toml" is refused in the
        # dialog, which stays open for another name.
        await put(pilot, "path-input", str(tmp_path / ("a" * 300 + ".toml")))
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, PathDialog)
        shown = app.screen.query_one("#path-error").render().plain
        assert shown.endswith(": cannot write: name too long (305 bytes in one name; at most 255)")
        # A folder whose name reads as markup is shown as it is.
        await put(pilot, "path-input", str(tmp_path / "[/]" / "plan.toml"))
        await pilot.press("enter")
        await pilot.pause()
        shown = app.screen.query_one("#path-error").render().plain
        assert shown.endswith(f"folder {tmp_path / '[/]'} does not exist")
        # A file that fails as it is written (a full disk): a notice, the plan kept.
        from dflash_plan.model.basics import tomlfile

        monkeypatch.setattr(tomlfile.os, "fsync", _no_space)
        await put(pilot, "path-input", str(tmp_path / "[b]plan.toml"))
        await pilot.press("enter")
        await pilot.pause()
        assert not isinstance(app.screen, PathDialog)
        (toast,) = app._notifications
        assert toast.title == "Could not save" and not toast.markup
        assert (
            toast.message == f"{tmp_path / '[b]plan.toml'}: cannot write: no space left on device"
        )
        assert app.state.dirty and app.state.path is None
    assert list(tmp_path.iterdir()) == []


def _no_space(fd):
    import errno

    raise OSError(errno.ENOSPC, os.strerror(errno.ENOSPC))


async def test_80x24_cuts_nothing():
    app = planner()
    async with app.run_test(size=SMALL) as pilot:
        figures = text(app, "figures")
        for shown in ("14.8 Ktok/s", "for 6 epochs", "845 GPU-h", "~$", "100 % busy"):
            assert shown in figures
        assert text(app, "side").count("Ktok/s") >= 3  # target, drafter and link rows
        await pilot.pause()
        line = app.screen.query_one(KeysFooter).line
        assert line.startswith("f1 Help") and line.endswith("^p palette")  # nothing covered
        await pilot.click("#workload-target_model")
        await pilot.pause()
        overlay = app.screen.query_one("#workload-target_model PickerList")
        assert overlay.region.width >= len("Llama-3.3-70B-Instruct") + 2  # no wrapped names
        await pilot.press("escape", "f4")
        await settle(pilot)
        assert app.screen.query_one("#launch-command").region.width >= 78


@pytest.mark.parametrize("width", [60, 48])
async def test_narrow_terminals_wrap_figures_between_words(width):
    app = planner()
    async with app.run_test(size=SIZE) as pilot:  # opened wide, then narrowed
        await pilot.resize_terminal(width, 20)
        await pilot.pause()
        await pilot.pause()
        shown = text(app, "figures").split()
        assert "…" not in text(app, "figures")
        for _, value, note in figure_rows(app.state.projection):
            for word in f"{value} {note}".split():
                assert word in shown, f"{word!r} cut or broken at {width} columns"


async def test_huge_counts_do_not_freeze_and_launch_text_waits_for_its_tab():
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        # How long such an edit takes: scripts/bench_launch.py (the tests count, never time).
        await put(pilot, "target.count", "20000")
        # Typed far from balance: the warnings say why the targets wait, not only 0 %. The
        # one drafter is held at the 14,799.9 tok/s it kept up with (the built-in plan's
        # at_least bound, above its default-efficiency estimate): 14,799.9 / 4,933.3 = 3
        # measured targets' worth, so 20,000 - 3 = 19,997 of them wait.
        calibration = app.state.plan.calibration
        kept = calibration.drafter["rtx-pro-6000"].tokens_per_s
        needed = math.ceil(kept / calibration.target["rtx-pro-6000"].tokens_per_s - 1e-9)
        assert needed == 3
        assert f"{20_000 - needed:,} wait" in text(app, "warnings").replace("\n", " ")
        await put(pilot, "drafter.count", "20000")
        assert not app.screen.query_one("#launch").children  # nothing built off-tab
        await pilot.press("f4")
        await settle(pilot)
        assert "launch" in text(app, "launch-command")


async def test_short_runs_show_hours():
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        await put(pilot, "workload.samples", "4000")
        await put(pilot, "workload.epochs", "1")
        # 4,000 x 2,344 tokens at 14.8 Ktok/s: 634 s, 11 minutes.
        assert "11 min" in text(app, "figures")


async def test_launch_format_template_copy_export(tmp_path):
    out = tmp_path / "go.sh"
    out.write_text("old")
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f4")
        await settle(pilot)
        assert "specforge train -c run.yaml" in text(app, "launch-command")
        await choose(pilot, "launch-format", "template")
        await put(pilot, "launch-template", "go {target_devices}")
        await settle(pilot)
        assert "go 0,1,2" in text(app, "launch-command")  # the 3 target GPUs, devices 0-2
        assert app.state.plan.launch.template == "go {target_devices}"
        await pilot.press("ctrl+y")
        await settle(pilot)
        assert app.clipboard == await app.planner.launch_text()  # as written, not wrapped
        await pilot.press("ctrl+e")
        await pilot.pause()
        await put(pilot, "path-input", str(out))
        await pilot.press("enter")
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)  # the file exists: asks first
        await pilot.click("#answer-overwrite")
        await settle(pilot)
        assert out.read_text() == app.clipboard


async def test_the_planner_keys_work_in_the_launch_script_box():
    # Issue 29 item 18a: with the script's box focused, ctrl+y did nothing (the text
    # area's redo), nor f6 and f7 (its select line, select all).
    from dflash_plan.tui.charts import ChartsScreen
    from dflash_plan.tui.scenarios import ScenariosScreen
    from textual.widgets import TextArea

    app = planner()
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.press("f4")
        await settle(pilot)
        box = app.screen.query_one("#launch-command", TextArea)
        for key, opened in (("f7", ChartsScreen), ("f6", ScenariosScreen)):
            box.focus()
            await pilot.press(key)
            await pilot.pause()
            assert isinstance(app.screen, opened), key
            await pilot.press("escape")
            await pilot.pause()
        box.focus()
        await pilot.press("ctrl+y")
        await settle(pilot)
        assert app.focused is box
        assert app.clipboard == await app.planner.launch_text()
        assert "specforge train -c run.yaml" in app.clipboard


async def test_the_launch_header_wraps_to_the_box_and_copies_as_written():
    # Issue 29 item 18b: header lines of 200-340 characters were cut at the box's edge.
    from textual.widgets import TextArea

    def comments(script: str) -> list[str]:
        return [line for line in script.splitlines() if line.startswith("# ")]

    app = planner()
    async with app.run_test(size=(60, 20)) as pilot:
        await pilot.press("f4")
        await settle(pilot)
        box = app.screen.query_one("#launch-command", TextArea)
        script = await app.planner.launch_text()
        assert max(len(line) for line in comments(script)) > 200  # the projection's line
        room = box.content_region.width - 1  # less the scrollbar
        shown = box.text
        assert all(len(line) <= room for line in comments(shown))
        # Every word of the header is shown, in order, each piece a comment; the script's
        # commands are as written.
        words = [w for line in comments(shown) for w in line.split() if w != "#"]
        assert words == [w for line in comments(script) for w in line.split() if w != "#"]
        assert [x for x in shown.splitlines() if not x.startswith("#")] == [
            x for x in script.splitlines() if not x.startswith("#")
        ]
        await pilot.resize_terminal(90, 20)  # a wider box: wrapped again, at its width
        await pilot.pause()
        wider = box.content_region.width - 1
        assert wider > room and len(comments(box.text)) < len(comments(shown))
        assert all(len(line) <= wider for line in comments(box.text))
        await pilot.press("ctrl+y")
        await settle(pilot)
        assert app.clipboard == script


def test_no_widget_of_the_planner_takes_a_planner_key_for_itself():
    # The rule behind item 18a: a key of the planner (or the app) that a widget on the
    # planner also binds is a priority binding, or the focused widget would take it.
    from dflash_plan.tui.planner.screen import PlannerScreen
    from textual.containers import VerticalScroll
    from textual.widgets import OptionList, TextArea

    def keys(bindings) -> dict[str, object]:
        return {k.strip(): b for b in bindings for k in b.key.split(",")}

    planner_keys = {**keys(PlannerApp.BINDINGS), **keys(PlannerScreen.BINDINGS)}
    widgets = (Input, TextArea, Picker, PickerList, OptionList, TabBar, VerticalScroll)
    taken = [
        (key, widget.__name__)
        for widget in widgets
        for key in keys(widget.BINDINGS)
        if key in planner_keys and not planner_keys[key].priority
    ]
    assert taken == []


async def test_the_launch_tab_offers_every_format_and_exports_a_manifest_as_yaml(tmp_path):
    from dflash_plan.model.launch import FORMATS
    from dflash_plan.tui.picker import Picker

    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f4")
        await settle(pilot)
        picker = app.screen.query_one("#launch-format", Picker)
        assert [value for _, value in picker.options] == list(FORMATS)
        await choose(pilot, "launch-format", "kubernetes")
        await settle(pilot)
        assert "kind: JobSet" in text(app, "launch-command")
        await pilot.press("ctrl+e")
        await pilot.pause()
        assert text(app, "path-input").endswith("launch-kubernetes.yaml")


async def test_save_open_and_unsaved_changes(tmp_path):
    path = tmp_path / "mine.toml"
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        await put(pilot, "target.count", "5")
        await pilot.press("ctrl+q")  # unsaved: asks
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.click("#answer-cancel")
        await pilot.pause()
        assert app.is_running
        await pilot.press("ctrl+q")
        await pilot.pause()
        await pilot.click("#answer-save")  # no file yet: asks where
        await pilot.pause()
        await put(pilot, "path-input", str(path))
        await pilot.press("enter")
        await pilot.pause()
    assert app.return_code == 0 and load_plan(path).target.count == 5
    app = planner(path)
    async with app.run_test(size=SIZE) as pilot:
        assert text(app, "target-count") == "5" and not app.state.dirty
        await pilot.press("ctrl+t")
        assert app.theme == "textual-light"
        await pilot.press("f1")
        assert isinstance(app.screen, HelpScreen)
        await pilot.press("escape", "ctrl+q")  # nothing unsaved: quits at once
        await pilot.pause()
    assert app.return_code == 0


async def test_the_palette_has_every_action_in_plain_words():
    app = planner()
    async with app.run_test(size=SIZE):
        titles = [c.title for c in app.get_system_commands(app.screen)]
        assert len(titles) == len(set(titles))  # "Help" was there twice (issue 29, 18f)
        commands = {c.title: c.help for c in app.get_system_commands(app.screen)}
        for title in (
            "Save",
            "Save as",
            "Open",
            "New",
            "GPU→drafter",
            "GPU→target",
            "Balance",
            "Pin baseline",
            "Projection",
            "Launch",
            "Copy launch",
            "Export launch",
            "Help",
            "Light/dark",
        ):
            assert title in commands
        assert commands["Save as"] == "Save the plan to a new file"
        assert not any("`" in help or "then" in help for help in commands.values())


async def test_the_footer_shows_the_keys_that_work_here_and_a_click_presses_one():
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        footer = app.screen.query_one(KeysFooter)
        assert footer.line.startswith("f1 Help ^s Save") and footer.line.endswith("^p palette")
        await pilot.hover(KeysFooter, offset=(1, 0))
        assert footer.tooltip == "What each number means, the keys"
        await pilot.press("f5")  # search: tall, no table/chart keys
        await pilot.pause()
        footer = app.screen.query_one(KeysFooter)
        assert footer.line.startswith("esc Back ^o Open")  # one key per action (not f5)
        assert "Chart" not in footer.line
        await pilot.resize_terminal(*SMALL)  # short: the keys to switch them
        await pilot.pause()
        assert "f3 Table f4 Chart" in footer.line
        await pilot.click(KeysFooter, offset=(1, 0))  # "esc Back", clicked
        await pilot.pause()
        assert app.screen is app.planner


async def test_at_80_columns_the_footer_leaves_out_keys_with_another_way_in_and_keeps_quit():
    # At 80 columns all seven keys (73 columns) and the palette's (11) do not fit: f8
    # Topology (the topology picker is the first field) leaves the footer, the rest stay,
    # Quit last; the palette still lists Topology.
    app = planner()
    async with app.run_test(size=(80, 24)) as pilot:
        footer = app.screen.query_one(KeysFooter)
        assert " ".join(footer.line.split()) == (
            "f1 Help ^s Save < GPU→drafter > GPU→target ^b Balance ^q Quit ▏^p palette"
        )
        await pilot.resize_terminal(120, 40)
        await pilot.pause()
        assert "f8 Topology ^b Balance ^q Quit" in footer.line
        assert any(b.id == "topology" for b in app.screen.BINDINGS)  # the palette's too


async def test_the_collector_waits_for_the_first_frame_and_is_restored_on_exit():
    import gc

    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert gc.isenabled()  # running again once the screen is up
        assert gc.get_freeze_count() > 0  # the start-up's objects are skipped
    assert gc.isenabled() and gc.get_freeze_count() == 0


async def test_a_keystroke_and_its_figures_are_painted_together_and_nothing_stays_held(monkeypatch):
    import dflash_plan.tui.planner.screen as screen_module
    from textual import events

    app = planner()
    painted: list[str] = []
    async with app.run_test(size=SIZE) as pilot:
        display = app._display

        def record(*args):
            display(*args)
            painted.append(text(app, "figures"))

        app._display = record
        field = app.screen.query_one("#target-count", Input)
        field.focus()
        field.select_all()
        await pilot.pause()
        painted.clear()
        # The order of frames, not the time limit, is under test: a loaded machine may take
        # longer than HOLD_S to project.
        monkeypatch.setattr(screen_module, "HOLD_S", 10.0)
        app.post_message(events.Key("2", "2"))  # as the terminal driver does
        await pilot.pause()
        # The first frame after the key already has 2 targets' figures (9.9 Ktok/s: 2 x
        # 4,933.3 measured), not the measured run's 14.8. (More targets would show 14.8
        # too: the one drafter is held at the 14,799.9 tok/s it kept up with.)
        assert painted and "9.9 Ktok/s" in painted[0]
        assert app._batch_count == 0  # the frames are released
        monkeypatch.setattr(screen_module, "HOLD_S", 0.05)
        field.cursor_position = 0
        await pilot.press("backspace")  # an edit key that changes nothing
        deadline = time.monotonic() + 5
        while app._batch_count and time.monotonic() < deadline:
            await pilot.pause(0.01)
        assert app._batch_count == 0 and text(app, "target-count") == "2"


async def test_the_launch_tab_offers_skypilot_and_exports_its_yaml(tmp_path):
    from textual.widgets import Input

    out = tmp_path / "task.yaml"
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.press("f4")
        await settle(pilot)
        await choose(pilot, "launch-format", "skypilot")
        await settle(pilot)
        shown = await app.planner.launch_text()  # as written (the box wraps comments)
        assert "accelerators: RTXPRO6000:4" in text(app, "launch-command")
        assert app.state.plan.launch.format == "skypilot"
        await pilot.press("ctrl+e")
        await pilot.pause()
        # A task YAML, not a script: named so, and not made executable.
        assert app.screen.query_one("#path-input", Input).value.endswith("launch-skypilot.yaml")
        await put(pilot, "path-input", str(out))
        await pilot.press("enter")
        await settle(pilot)
    assert out.read_text() == shown and not os.access(out, os.X_OK)


# --- topology and drafter family (issue 32) ------------------------------------------


def _messages(app) -> list[str]:
    return [toast.message for toast in app._notifications]


async def test_the_topology_picker_shows_a_colocated_plans_gpus_and_disables_the_split_keys():
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        rows = app.screen.query_one(InputsPanel).rows
        footer = app.screen.query_one(KeysFooter)
        await choose(pilot, "workload.topology", "colocated")
        assert app.state.plan.workload.topology == "colocated"
        # 3 + 1 GPUs: 4, each running the target and the drafter; no drafter count.
        assert text(app, "target-count") == "4" and rows["target.count"].unit == "both roles"
        assert rows["target.gpu"].title == "Colocated pool" and not rows["drafter.count"].display
        await pilot.pause()
        split = {key.shown: key.enabled for key in footer.keys if key.shown in ("<", ">", "^b")}
        assert split == {"<": False, ">": False, "^b": False}  # shown disabled
        app.screen.query_one("#target-count").focus()
        await pilot.press("<", ">", "ctrl+b")  # from the GPUs field: not typed, and said why
        await settle(pilot)
        assert text(app, "target-count") == "4"
        said = _messages(app)[-3:]
        assert said[:2] == [app.state.move(True)] * 2
        assert said[2].startswith("colocated: each of the 4 GPUs runs both roles, no split")
        assert app.state.move(True).startswith("Colocated: every GPU runs")
        assert (app.state.plan.target.count, app.state.plan.drafter.count) == (3, 1)
        await put(pilot, "target.count", "8")  # the total
        assert app.state.plan.target.count + app.state.plan.drafter.count == 8
        await choose(pilot, "workload.topology", "disaggregated")
        assert text(app, "target-count") == "7" and rows["drafter.count"].display
        assert rows["target.gpu"].title == "Target pool" and rows["target.count"].unit == ""
        await pilot.pause()
        assert all(key.enabled for key in footer.keys)
        await pilot.press("<")  # enabled again: a GPU moves
        assert (app.state.plan.target.count, app.state.plan.drafter.count) == (6, 2)


async def test_f8_switches_the_topology_and_f9_the_drafter_family():
    from dflash_plan.model.inputs.plan import DRAFTERS
    from dflash_plan.tui.fields import DRAFTER_LABELS

    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        topology = app.screen.query_one("#workload-topology", Picker)
        drafter = app.screen.query_one("#workload-drafter", Picker)
        assert (topology.label, drafter.label) == ("disaggregated", "DFlash")
        await pilot.press("f8")
        await pilot.pause()
        assert app.state.plan.workload.topology == "colocated" and topology.value == "colocated"
        assert _messages(app)[-1] == "Topology: colocated"
        await pilot.press("f8")
        await pilot.pause()
        assert app.state.plan.workload.topology == "disaggregated"
        for family in (*DRAFTERS[1:], DRAFTERS[0]):  # around the four, back to DFlash
            await pilot.press("f9")
            await pilot.pause()
            assert app.state.plan.workload.drafter == family == drafter.value
            assert drafter.label == DRAFTER_LABELS[family]
            assert _messages(app)[-1] == f"Drafter: {DRAFTER_LABELS[family]}"
        assert not app.state.dirty  # back where it started
        commands = {c.title: c.help for c in app.get_system_commands(app.screen)}
        assert "colocated" in commands["Topology"] and "EAGLE-3" in commands["Drafter"]


@pytest.mark.parametrize("family", ["dflash", "dflash2", "dspark", "eagle3"])
async def test_the_drafter_picker_picks_each_family(family):
    from dflash_plan.tui.fields import DRAFTER_LABELS

    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        picker = app.screen.query_one("#workload-drafter", Picker)
        await pilot.click(picker)  # as a user: open the list, type, enter
        await pilot.pause()
        await pilot.press(*DRAFTER_LABELS[family].lower(), "enter")
        await pilot.pause()
        assert picker.label == DRAFTER_LABELS[family] and not picker.is_open
        assert app.state.plan.workload.drafter == family
        assert app.state.dirty == (family != "dflash")


async def test_a_colocated_plan_on_two_gpu_types_shows_the_models_error():
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        await choose(pilot, "drafter.gpu", "b200")
        await choose(pilot, "workload.topology", "colocated")
        banner = text(app, "banner")
        assert banner.startswith("STALE: ") and "same GPU type" in banner and "\n" not in banner
        assert "same GPU type" in error(app, "drafter.gpu")
        await choose(pilot, "drafter.gpu", "rtx-pro-6000")  # one type: both roles'
        assert not app.state.stale and app.state.plan.workload.topology == "colocated"
        assert error(app, "drafter.gpu") == "" and not app.screen.query_one("#banner").display


async def test_the_results_say_which_topology_the_figures_are_and_which_wins():
    from dflash_plan.tui.report import topology_line

    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        # The measured run's 4 GPUs: its split is the best; colocated would be slower.
        shown = text(app, "topology")
        assert " ".join(shown.split()) == topology_line(app.state.projection)  # the CLI's
        # One line of the panel (73 columns at 120).
        assert shown.rstrip("\n") == (
            "topology: disaggregated wins 1.28x: 14.8 Ktok/s at 3+1, colocated 11.6"
        )
        assert "link    ░" in text(app, "side")
        await choose(pilot, "workload.topology", "colocated")
        await choose(pilot, "target.gpu", "b300")
        await put(pilot, "target.count", "8")
        p = app.state.projection
        assert p.topology == "colocated" and p.plan.target.count + p.plan.drafter.count == 8
        shown = " ".join(text(app, "topology").split())
        # The colocated plan loses to the best split of its 8 B300: the line says so.
        assert shown == topology_line(p) and shown.startswith("topology: disaggregated wins")
        assert " colocated " in shown
        target, drafter = (fmt.pct(share) for share in p.time_shares)
        assert "bottleneck time-shared  100 % busy" in text(app, "figures")
        side = text(app, "side")
        assert f"shares  {target} target, {drafter} drafter on each GPU" in side
        assert "link    none: colocated" in side
        assert "+1 colocated GPU  +" in side  # the label never runs into its figure
        rows = memory(p).plain.splitlines()  # one row: every GPU holds both roles
        assert len(rows) == 1 and rows[0].startswith("both    ") and rows[0] in side
        # Two GPU types: no verdict (colocated cannot run them), no line.
        await choose(pilot, "workload.topology", "disaggregated")
        await choose(pilot, "drafter.gpu", "h200")
        assert app.state.projection.topology_verdict is None
        assert not app.screen.query_one("#topology").display


async def test_the_targets_weights_picker_sets_the_precision_and_refuses_it_where_absent():
    """target.precision from the app: NVFP4 on the built-in RTX PRO 6000 (it has FP4 tensor
    cores, hardware.toml fp4_tflops) is the plan's; on an H200, which has none, the model's
    one-line refusal shows under the field and the last good figures stay."""
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        await choose(pilot, "target.precision", "fp4")
        await settle(pilot)
        assert app.state.plan.target.precision == "fp4"
        assert not error(app, "target.precision")
        await choose(pilot, "target.gpu", "h200")
        await settle(pilot)
        assert "no FP4 tensor cores" in error(app, "target.precision")
        assert text(app, "banner").startswith("STALE")
