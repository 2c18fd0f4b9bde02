"""No crash loses work: an unhandled error, SIGTERM or SIGHUP writes the plan being edited,
unsaved edits included, to a recovery file, ends the app with a non-zero status and says
where; the next start offers to open it (as this plan's unsaved edits) or discard it."""

from __future__ import annotations

import fcntl
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
from apphelp import planner, put, steady_cursors, text  # noqa: F401
from dflash_plan.model.basics.tomlfile import SaveError
from dflash_plan.model.core.projection import project
from dflash_plan.model.inputs.plan import default_plan, load_plan, save_plan
from dflash_plan.tui import recovery
from dflash_plan.tui.cli import main
from dflash_plan.tui.config import load_catalog
from dflash_plan.tui.dialogs import ConfirmDialog
from dflash_plan.tui.planner.screen import PlannerScreen
from dflash_plan.tui.state import Planner

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
    assert recovery.find_recovery(plan_file) is None

    # Neither the plan's folder nor the state folder can be written (a full disk): the
    # plan goes to stderr after the reason.
    def full(path, text):
        raise SaveError(f"{path}: cannot write: No space left on device")

    monkeypatch.setattr(recovery, "write_atomic", full)
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
    assert "saved since" in recovery.find_recovery(plan_file).question(plan_file)


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
