"""No crash loses work: an unhandled error, SIGTERM or SIGHUP writes the plan being edited,
unsaved edits included, to a recovery file, ends the app with a non-zero status and says
where; the next start offers to open it (as this plan's unsaved edits) or discard it."""

from __future__ import annotations

import fcntl
import json
import os
import select
import signal
import struct
import subprocess
import sys
import termios
import time
import tomllib
from pathlib import Path

import pytest
import tomli_w
from apphelp import planner, put, steady_cursors, text  # noqa: F401
from dflash_plan.model.basics.errors import PlanError
from dflash_plan.model.basics.terminal import without_controls
from dflash_plan.model.basics.tomlfile import SaveError
from dflash_plan.model.core.projection import project
from dflash_plan.model.inputs.plan import (
    default_plan,
    load_plan,
    plan_from_dict,
    plan_to_dict,
    save_plan,
)
from dflash_plan.tui import recovery
from dflash_plan.tui.cli import main
from dflash_plan.tui.config import load_catalog
from dflash_plan.tui.dialogs import ConfirmDialog
from dflash_plan.tui.planner.screen import PlannerScreen
from dflash_plan.tui.state import Planner
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from test_properties import plan_docs
from textual.widgets._toast import Toast

SIZE = (120, 40)


@pytest.fixture
def plan_file(tmp_path) -> Path:
    path = tmp_path / "plan.toml"
    save_plan(default_plan(), path, base_text="")
    return path


def recovered(path: Path) -> dict:
    return tomllib.loads(path.read_text(encoding="utf-8"))


async def test_an_error_in_a_handler_writes_the_unsaved_plan_and_exits_non_zero(
    plan_file, monkeypatch
):
    original = PlannerScreen.on_field_edited

    def failing(self, message):
        original(self, message)  # the edit reaches the plan, then
        if message.key == "drafter.count":
            raise RuntimeError("injected")  # a bug in a handler

    monkeypatch.setattr(PlannerScreen, "on_field_edited", failing)
    app = planner(plan_file)
    with pytest.raises(RuntimeError, match="injected"):
        async with app.run_test(size=SIZE) as pilot:
            await put(pilot, "target.count", "7")
            await put(pilot, "drafter.count", "2")
    beside = plan_file.parent / ".plan.toml.recovered"
    doc = recovered(beside)
    assert (doc["target"]["count"], doc["drafter"]["count"]) == (7, 2)
    assert app.return_code == 1
    assert app.recovery_note == (
        f"dflash-plan: stopped by an error (RuntimeError); the unsaved plan was written to "
        f"{beside} (the next dflash-plan {plan_file} offers to open it)"
    )
    assert load_plan(plan_file).target.count == 3  # the plan file untouched


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
async def test_a_signal_writes_the_unsaved_plan_and_exits_non_zero(sig):
    app = planner()  # the built-in plan: the state folder
    async with app.run_test(size=SIZE) as pilot:
        await put(pilot, "target.count", "7")
        os.kill(os.getpid(), sig)
        await pilot.pause()
    path = recovery.in_state_dir(None)
    assert recovered(path)["target"]["count"] == 7
    assert app.return_code == 128 + sig
    assert f"stopped by {sig.name}; the unsaved plan was written to {path}" in app.recovery_note


async def test_nothing_unsaved_writes_nothing_and_a_failed_write_prints_the_plan(
    plan_file, monkeypatch
):
    app = planner(plan_file)
    async with app.run_test(size=SIZE):
        os.kill(os.getpid(), signal.SIGTERM)
    assert app.return_code == 143
    assert app.recovery_note == "dflash-plan: stopped by SIGTERM; the plan had no unsaved changes"
    assert recovery.find_recoveries(plan_file) == []

    # Neither the plan's folder nor the state folder can be written (a full disk): the
    # plan goes to stderr after the reason.
    def full(paths, text):
        raise SaveError.at(str(paths[0]), "cannot write: No space left on device")

    monkeypatch.setattr(recovery, "write_new", full)
    app = planner(plan_file)
    async with app.run_test(size=SIZE) as pilot:
        await put(pilot, "target.count", "7")
        os.kill(os.getpid(), signal.SIGTERM)
    head, plan = app.recovery_note.split("\n", 1)
    assert "No space left on device" in head
    assert head.startswith("dflash-plan: stopped by SIGTERM; could not write a recovery file")
    assert head.endswith("the unsaved plan follows:")
    assert tomllib.loads(plan)["target"]["count"] == 7


def write_edit(path: Path | None, count: int) -> Path:
    """A recovery file as a crash would write it, of the plan at path with count targets."""
    state = Planner(load_catalog(), path)
    state.edit("target.count", count)
    text = state.recovery_text()
    assert text is not None
    return recovery.write_recovery(text, path)


async def test_the_next_start_offers_the_recovered_plan_open_saves_to_the_plan(plan_file):
    written = write_edit(plan_file, 7)
    app = planner(plan_file)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        assert app.screen.question.startswith("A plan was recovered from ")
        assert "saved since" not in app.screen.question
        await pilot.click("#answer-open")
        await pilot.pause()
        assert isinstance(app.screen, PlannerScreen)
        assert app.state.plan.target.count == 7 and text(app, "target-count") == "7"
        assert "7 targets + 1 drafter" in app.planner.view.name
        assert app.planner.view.title == "plan.toml ●"  # unsaved
        seven = project(
            default_plan().model_copy(
                update={"target": default_plan().target.model_copy(update={"count": 7})}
            ),
            app.state.catalog,
        )
        assert f"{seven.tokens_per_s / 1e3:.1f} Ktok/s" in text(app, "figures")
        assert app.state.projection.days == pytest.approx(seven.days)
        await pilot.press("ctrl+s")  # saves the plan's file
        await pilot.pause()
    assert load_plan(plan_file).target.count == 7 and not written.exists()


async def test_discard_deletes_the_recovery_file_and_an_older_one_says_so(plan_file):
    written = write_edit(None, 7)  # the built-in plan's
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.click("#answer-discard")
        await pilot.pause()
        assert app.state.plan.target.count == 3 and not app.state.dirty
    assert not written.exists()
    written = write_edit(plan_file, 7)
    os.utime(written, (1, 1))  # the plan file was saved after it
    assert "saved since" in recovery.find_recoveries(plan_file)[0].question(plan_file)


@pytest.mark.parametrize("key", ["f7", "f5", "f6"])
async def test_a_planner_key_at_the_offer_keeps_the_recovery_and_acts(key):
    # In tmux an app ended by closing its window (SIGHUP) leaves a recovery file; the
    # next start's offer took every key, so f7 opened no charts (issue 33). A key of the
    # planner now leaves the offer unanswered (the file kept, as escape) and acts.
    from dflash_plan.tui.charts import ChartsScreen
    from dflash_plan.tui.scenarios import ScenariosScreen
    from dflash_plan.tui.search import SearchScreen

    written = write_edit(None, 7)
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        assert isinstance(app.screen, ConfirmDialog)
        await pilot.press(key)
        opened = {"f7": ChartsScreen, "f5": SearchScreen, "f6": ScenariosScreen}[key]
        for _ in range(50):  # the offer's worker and the opened screen, on a loaded machine
            await pilot.pause()
            if isinstance(app.screen, opened):
                break
        assert isinstance(app.screen, opened), app.screen
        # Unanswered, as escape: no offer left on the stack, the file kept.
        assert not any(isinstance(s, ConfirmDialog) for s in app.screen_stack)
        assert app.state.plan.target.count == 3  # not opened
    assert written.exists()


async def test_the_offers_own_keys_still_answer_it():
    write_edit(None, 7)
    app = planner()
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.press("enter")  # the first answer, focused: open it
        await pilot.pause()
        assert isinstance(app.screen, PlannerScreen)
        assert app.state.plan.target.count == 7 and app.state.dirty


def edited_text(path: Path | None, count: int) -> str:
    state = Planner(load_catalog(), path)
    state.edit("target.count", count)
    text = state.recovery_text()
    assert text is not None
    return text


@pytest.mark.parametrize("planted", ["a file", "nothing"])
def test_a_link_planted_at_the_recovery_name_is_never_followed(plan_file, tmp_path, planted):
    victim = tmp_path / "victim.txt"
    if planted == "a file":
        victim.write_text("precious\n")
    first = recovery.beside(plan_file)
    first.symlink_to(victim)  # planted by another user of a shared folder
    note = recovery.rescue(edited_text(plan_file, 7), plan_file, "stopped by SIGTERM")
    # The link and what it points at are as they were; the plan has a name of its own.
    assert first.is_symlink() and os.readlink(first) == str(victim)
    assert victim.read_text() == "precious\n" if planted == "a file" else not victim.exists()
    written = plan_file.parent / ".plan.toml.recovered-2"
    assert recovered(written)["target"]["count"] == 7
    assert f"the unsaved plan was written to {written} " in note
    assert written.stat().st_mode & 0o777 == 0o600  # the writer's only
    # Only what dflash-plan wrote is offered: not the link.
    assert [found.path for found in recovery.find_recoveries(plan_file)] == [written]


def test_a_second_recovery_gets_its_own_name_and_the_first_stays(plan_file, monkeypatch):
    first, second = write_edit(plan_file, 7), write_edit(plan_file, 9)
    assert (first.name, second.name) == (".plan.toml.recovered", ".plan.toml.recovered-2")
    assert recovered(first)["target"]["count"] == 7
    # Neither place can be written: where the plan's folder holds 100, the state folder
    # takes the next.
    for n in range(3, recovery.MAX_RECOVERIES + 1):
        recovery.numbered(first, n).write_text("")
    third = write_edit(plan_file, 11)
    assert third.parent == recovery.user_state_dir()
    assert third.name == recovery.in_state_dir(plan_file).name
    # No temporary file is left behind, in either folder.
    assert not [p for p in plan_file.parent.iterdir() if p.name.endswith(".tmp")]
    assert [p.name for p in recovery.user_state_dir().iterdir()] == [third.name]


def test_without_hard_links_the_file_is_still_created_exclusively(plan_file, monkeypatch):
    import errno

    from dflash_plan.model.basics import tomlfile

    def no_links(src, dst):
        raise OSError(errno.EPERM, "Operation not permitted")  # FAT, some FUSE mounts

    monkeypatch.setattr(tomlfile.os, "link", no_links)
    first = recovery.beside(plan_file)
    first.symlink_to(plan_file)  # O_NOFOLLOW | O_EXCL: never written through
    written = write_edit(plan_file, 7)
    assert written.name == ".plan.toml.recovered-2" and recovered(written)["target"]["count"] == 7
    assert load_plan(plan_file).target.count == 3


def staggered(*paths: Path) -> None:
    """Give recovery files distinct times, the first the oldest, all after the plan's."""
    start = time.time() + 60
    for i, path in enumerate(paths):
        os.utime(path, (start + 60 * i, start + 60 * i))


async def test_the_offer_lists_every_recovery_and_a_stop_never_replaces_one(plan_file):
    older, newer = write_edit(plan_file, 7), write_edit(plan_file, 9)
    staggered(older, newer)
    app = planner(plan_file)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        question = app.screen.question
        assert question.startswith("2 plans were recovered (edits to plan.toml that were not")
        lines = question.splitlines()
        assert lines[1].startswith("▸ ") and lines[1].endswith(str(newer))
        assert lines[2].startswith("  ") and lines[2].endswith(str(older))
        await pilot.click("#answer-keep")  # the newest: kept, the next one is offered
        await pilot.pause()
        lines = app.screen.question.splitlines()
        assert lines[1].startswith("  ") and lines[2].startswith("▸ ") and str(older) in lines[2]
        await pilot.click("#answer-open")
        await pilot.pause()
        assert isinstance(app.screen, PlannerScreen) and app.state.plan.target.count == 7
        notices = [n.message for n in app._notifications]
        assert f"Kept {newer}: the next start offers it again" in notices
        await put(pilot, "drafter.count", "2")
        os.kill(os.getpid(), signal.SIGTERM)  # a stop writes a third file
        await pilot.pause()
    third = plan_file.parent / ".plan.toml.recovered-3"
    assert f"written to {third} " in app.recovery_note
    assert (recovered(third)["target"]["count"], recovered(third)["drafter"]["count"]) == (7, 2)
    assert recovered(older)["target"]["count"] == 7  # the opened one as it was
    assert recovered(newer)["target"]["count"] == 9  # the kept one as it was


async def test_a_recovery_naming_what_is_gone_opens_the_rest_and_says_what_not(plan_file, tmp_path):
    """A GPU of a --hardware file not given now and a config.json deleted since: the
    plan's own values take their place, one notice names them; nothing crashes, so no
    stop writes the recovery again."""
    from test_bad_input import HW
    from test_config_json import QWEN3_8B_CONFIG

    hardware = tmp_path / "hw.toml"
    hardware.write_text(HW)
    (tmp_path / "m").mkdir()
    (tmp_path / "m" / "config.json").write_text(json.dumps(QWEN3_8B_CONFIG))
    state = Planner(load_catalog([hardware]), plan_file)
    for key, value in (
        ("target.gpu", "my-gpu"),
        ("drafter.gpu", "my-gpu"),
        ("workload.target_model", "m/config.json"),
        ("target.count", 5),
    ):
        state.edit(key, value)
    state.recompute()
    assert state.problem is None and state.plan.target.gpu == "my-gpu"
    written = recovery.write_recovery(state.recovery_text(), plan_file)
    (tmp_path / "m" / "config.json").unlink()
    before = written.read_text()
    app = planner(plan_file)  # without --hardware
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.click("#answer-open")
        await pilot.pause()
        assert isinstance(app.screen, PlannerScreen)
        plan = app.state.plan
        assert (plan.target.count, plan.target.gpu, plan.drafter.gpu) == (
            5,
            "rtx-pro-6000",
            "rtx-pro-6000",
        )
        assert plan.workload.target_model == "qwen3-8b" and not app.state.stale
        assert text(app, "target-count") == "5"
        (notice,) = [n for n in app._notifications if n.severity == "warning"]
        assert "\n" not in notice.message
        assert notice.message.startswith(f"Opened the plan recovered from {written} (not saved")
        assert "(not saved yet); could not restore " in notice.message
        for key, value, why in (
            ("target.gpu", "my-gpu", "unknown GPU 'my-gpu'"),
            ("drafter.gpu", "my-gpu", "unknown GPU 'my-gpu'"),
            ("workload.target_model", "m/config.json", f"{tmp_path / 'm/config.json'}: no such"),
        ):
            assert f"{key} = '{value}' ({why}" in notice.message
        assert notice.message.endswith("; plan.toml's values are kept for those")
    assert app.return_code in (0, None) and app.recovery_note is None
    assert written.read_text() == before


async def test_a_recovery_without_optional_tables_opens_with_their_defaults(tmp_path):
    """Read by the loader plans are read by: a table left out has its defaults. The
    notice names the file as it is, brackets and all."""
    folder = tmp_path / "[storage]"
    folder.mkdir()
    plan_file = folder / "plan.toml"
    save_plan(default_plan(), plan_file, base_text="")
    doc = tomllib.loads(edited_text(plan_file, 7))
    del doc["storage"], doc["regenerate"]
    written = recovery.beside(plan_file)
    written.write_text(tomli_w.dumps(doc))
    app = planner(plan_file)
    async with app.run_test(size=SIZE, notifications=True) as pilot:
        await pilot.pause()
        await pilot.click("#answer-open")
        await pilot.pause()
        as_a_plan_file = plan_from_dict(doc, "the same document as a plan file")
        assert app.state.plan.model_copy(update={"name": ""}) == as_a_plan_file
        assert app.state.plan.target.count == 7 and app.state.dirty
        (notice,) = app._notifications
        assert notice.message == f"Opened the plan recovered from {written} (not saved yet)"
        await pilot.pause()  # the toast is mounted on the next refresh
        toast = app.screen.query_one(Toast)
        assert f"{folder.name}/.plan.toml.recovered" in toast.render().plain.replace("\n", "")


async def test_a_recovered_plan_name_is_shown_without_control_characters_or_markup(plan_file):
    doc = tomllib.loads(edited_text(plan_file, 7))
    doc["name"] = "\x1b]0;owned\x07[b]bold[/b] \x9b2Jplan\x7f"
    written = recovery.beside(plan_file)
    written.write_text(tomli_w.dumps(doc))
    app = planner(plan_file)
    async with app.run_test(size=SIZE) as pilot:
        await pilot.pause()
        await pilot.click("#answer-open")
        await pilot.pause()
        assert app.state.name == "]0;owned[b]bold[/b] 2Jplan"
        assert "◆ ]0;owned[b]bold[/b] 2Jplan — plan.toml ●" in text(app, "title-bar")
        await pilot.press("f5")
        await pilot.pause()
        title = app.screen.query_one("#search-title").render().plain
        assert title == "Search from ]0;owned[b]bold[/b] 2Jplan"


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(doc=plan_docs(), dropped=st.sets(st.sampled_from(["storage", "regenerate", "cost"])))
def test_opening_any_recovery_opens_a_plan_the_app_can_show_or_says_why(doc, dropped):
    """Whatever a recovery file holds (hostile values, tables left out), opening it either
    is refused in one PlanError or leaves a plan every picker can show: its GPUs and model
    are the catalog's, and the view is drawn."""
    state = Planner(load_catalog())
    doc = {k: v for k, v in {**plan_to_dict(default_plan()), **doc}.items() if k not in dropped}
    try:
        lost = state.restore(doc)
    except PlanError as err:
        assert "\n" not in str(err)
        return
    assert all(isinstance(line, str) for line in lost)
    assert {state.doc["target"]["gpu"], state.doc["drafter"]["gpu"]} <= set(state.catalog.gpus)
    assert state.doc["workload"]["target_model"] in state.catalog.models
    view = state.view()
    assert view.name == without_controls(view.name)


def test_recovery_files_are_unique_per_plan_path(tmp_path, monkeypatch):
    a, b = tmp_path / "a" / "plan.toml", tmp_path / "b" / "plan.toml"
    assert recovery.beside(a) != recovery.beside(b)
    assert recovery.in_state_dir(a) != recovery.in_state_dir(b)
    assert recovery.in_state_dir(a).name.startswith("plan.toml-")
    assert recovery.in_state_dir(None) != recovery.in_state_dir(a)
    monkeypatch.delenv(recovery.STATE_DIR_ENV)
    monkeypatch.setenv("XDG_STATE_HOME", str(tmp_path / "xdg"))
    if sys.platform.startswith("linux"):
        assert recovery.user_state_dir() == tmp_path / "xdg" / "dflash-plan"


def test_the_command_exits_non_zero_with_the_note_on_stderr(plan_file, monkeypatch, capsys):
    class Crashed:
        def __init__(self, path, hardware):
            self.recovery_note, self.return_code = "dflash-plan: stopped by SIGHUP; ...", 129

        def run(self):
            pass

    monkeypatch.setattr("dflash_plan.tui.cli.import_app", lambda: Crashed)
    assert main([str(plan_file)]) == 129
    assert capsys.readouterr().err == "dflash-plan: stopped by SIGHUP; ...\n"


def run_in_terminal(
    argv: list[str], env: dict[str, str], keys: bytes, until: bytes, sig: signal.Signals
) -> tuple[int, bytes]:
    """Start argv in a pseudo-terminal (as scripts/bench_app.py does), wait for `until`
    on screen, type keys, wait for the screen to change, send sig; the exit status and
    everything shown."""
    master, slave = os.openpty()
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", 24, 80, 0, 0))
    proc = subprocess.Popen(
        argv, stdin=slave, stdout=slave, stderr=slave, start_new_session=True, env=env
    )
    os.close(slave)
    seen = b""

    def read_until(marker: bytes, after: int) -> None:
        nonlocal seen
        deadline = time.monotonic() + 20
        while marker not in seen[after:] and time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    return

    try:
        read_until(until, 0)
        assert until in seen, seen[-2000:]
        mark = len(seen)
        os.write(master, keys)
        read_until("●".encode(), mark)  # the title marks the plan changed
        proc.send_signal(sig)
        deadline = time.monotonic() + 20
        while proc.poll() is None and time.monotonic() < deadline:
            if select.select([master], [], [], 0.2)[0]:
                try:
                    seen += os.read(master, 65536)
                except OSError:
                    break
        code = proc.wait(timeout=20)
        while select.select([master], [], [], 0.1)[0]:
            try:
                chunk = os.read(master, 65536)
            except OSError:
                break
            if not chunk:
                break
            seen += chunk
    finally:
        if proc.poll() is None:
            os.killpg(proc.pid, signal.SIGKILL)
            proc.wait()
        os.close(master)
    return code, seen


@pytest.mark.parametrize("sig", [signal.SIGTERM, signal.SIGHUP])
def test_the_real_command_in_a_terminal_writes_the_edit_on_a_signal(plan_file, sig):
    command = Path(sys.executable).parent / "dflash-plan"
    env = {**os.environ, "TERM": "xterm-256color"}
    # The target count has the focus at start, its text selected: "7" makes 7 targets.
    code, shown = run_in_terminal([str(command), str(plan_file)], env, b"7", b"plan.toml", sig)
    beside = plan_file.parent / ".plan.toml.recovered"
    assert code == 128 + sig, shown[-2000:]
    assert recovered(beside)["target"]["count"] == 7
    assert f"the unsaved plan was written to {beside}".encode() in shown.replace(b"\r\n", b"")
