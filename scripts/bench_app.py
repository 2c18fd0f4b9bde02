"""Benchmark the interactive planner: launch to first full frame (headless, and the real
`dflash-plan` command in a terminal), and keystroke to updated numbers, with a minimal
Textual app (Header, Static, Footer) timed the same way in the same run as the baseline.

Run from an installed checkout:  python scripts/bench_app.py [--runs 15]
"""

from __future__ import annotations

import argparse
import asyncio
import fcntl
import os
import select
import signal
import statistics
import struct
import subprocess
import sys
import termios
import time
from pathlib import Path

FIRST_FRAME = """
import asyncio
import time

from dflash_plan.tui.cli import import_app

PlannerApp = import_app()             # as `dflash-plan` imports it

async def main():
    app = PlannerApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()          # the first frame has been composed and painted
        print("frame", time.process_time(), flush=True)

asyncio.run(main())
"""


HELLO_FRAME = """
import asyncio
import time
from textual.app import App
from textual.widgets import Footer, Header, Static

class Hello(App):
    def compose(self):
        yield Header()
        yield Static("hello")
        yield Footer()

async def main():
    async with Hello().run_test(size=(120, 40)) as pilot:
        await pilot.pause()
        print("frame", time.process_time(), flush=True)

asyncio.run(main())
"""


HELLO_RUN = HELLO_FRAME.split("async def main")[0] + "Hello().run()\n"
TERMINAL = (120, 40)


def terminal_paint_ms(argv: list[str], marker: bytes) -> float:
    """Milliseconds from starting `argv` in a pseudo-terminal of TERMINAL's size to the
    first output holding `marker` (the frame that shows it has been painted); the program
    is then stopped."""
    master, slave = os.openpty()
    columns, rows = TERMINAL
    fcntl.ioctl(slave, termios.TIOCSWINSZ, struct.pack("HHHH", rows, columns, 0, 0))
    start = time.perf_counter()
    proc = subprocess.Popen(
        argv,
        stdin=slave,
        stdout=slave,
        stderr=slave,
        start_new_session=True,
        env={**os.environ, "TERM": "xterm-256color"},
    )
    os.close(slave)
    seen, found = b"", None
    try:
        while found is None and time.perf_counter() - start < 30:
            if select.select([master], [], [], 0.5)[0]:
                try:
                    chunk = os.read(master, 65536)
                except OSError:
                    break
                seen = seen[-len(marker) :] + chunk
                if marker in seen:
                    found = (time.perf_counter() - start) * 1e3
    finally:
        os.killpg(proc.pid, signal.SIGKILL)
        proc.wait()
        os.close(master)
    if found is None:
        raise SystemExit(f"{' '.join(argv)} never showed {marker!r}")
    return found


def first_frame_ms(code: str) -> tuple[float, float]:
    """Milliseconds from starting a fresh interpreter to its "frame" line: wall time, and
    the CPU time the child had used by then (which other load on the machine disturbs
    less)."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    assert proc.stdout is not None
    found = None
    for line in proc.stdout:
        if line.startswith("frame "):
            found = (time.perf_counter() - start) * 1e3, float(line.split()[1]) * 1e3
            break
    proc.wait()
    if proc.returncode or found is None:
        raise SystemExit(f"benchmark child failed ({proc.returncode})")
    return found


async def keystrokes(runs: int) -> dict[str, list[float]]:
    """Type a digit into the target count (the real debounce) and time until the new
    throughput is on screen: through Pilot.press (which also waits for every widget to go
    idle, a cost of the test harness), and from the key event to the first screen update
    after the recompute (what a user waits for), for two sequences: 1-4 targets, which
    crosses the measured plan (3 targets) at every step, so figures appear and go and the
    screen is laid out again; and 4-7 targets, estimated plans whose layout stays. Then
    time one recompute on its own."""
    from dflash_plan.tui.app import PlannerApp
    from textual import events
    from textual.widgets import Input, Static

    app = PlannerApp()
    times: dict[str, list[float]] = {"pilot": [], "1-4": [], "4-7": [], "recompute": []}
    async with app.run_test(size=(120, 40)) as pilot:
        screen = app.planner
        field = app.query_one("#target-count", Input)
        field.focus()
        await pilot.pause()
        figures = app.query_one("#figures", Static)
        for i in range(runs):
            field.select_all()
            before, shown = screen.recompute_count, str(figures.render())
            start = time.perf_counter()
            await pilot.press(str(1 + i % 4))  # 1..4 targets: the figure changes
            while screen.recompute_count == before:
                await asyncio.sleep(0.001)
            await pilot.pause()  # let the new text render
            times["pilot"].append((time.perf_counter() - start) * 1e3)
            assert str(figures.render()) != shown
        displayed: list[float] = []
        display = app._display

        def timed_display(*args: object) -> None:
            display(*args)  # type: ignore[arg-type]
            displayed.append(time.perf_counter())

        app._display = timed_display  # type: ignore[method-assign]
        for name, first in (("1-4", 1), ("4-7", 4)):
            for i in range(runs + 1):
                field.select_all()
                await pilot.pause(0.05)  # a quiet spell, as between keys
                before = screen.recompute_count
                start = time.perf_counter()
                digit = str(first + (i + 1) % 4)
                app.post_message(events.Key(digit, digit))  # as the terminal driver does
                while screen.recompute_count == before:
                    await asyncio.sleep(0.001)
                done = time.perf_counter()
                while not displayed or displayed[-1] < done:
                    await asyncio.sleep(0.001)
                if i:  # the first moves into the range
                    times[name].append((displayed[-1] - start) * 1e3)
        for _ in range(runs):
            start = time.perf_counter()
            screen.recompute()
            await pilot.pause()
            times["recompute"].append((time.perf_counter() - start) * 1e3)
    return times


def main() -> None:
    parser = argparse.ArgumentParser(description=(__doc__ or "").splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    import compileall

    import dflash_plan.model
    import dflash_plan.tui

    # Byte-compiled first, as a wheel install is (PYTHONDONTWRITEBYTECODE, set on some
    # machines, would otherwise compile every module of the app at every start).
    for package in (dflash_plan.model, dflash_plan.tui):
        compileall.compile_dir(Path(str(package.__file__)).parent, quiet=1)
    hello_ms, frame_ms, hello_cpu, frame_cpu = [], [], [], []
    for _ in range(args.runs):  # interleaved: both see the same machine load
        for code, walls, cpus in (
            (HELLO_FRAME, hello_ms, hello_cpu),
            (FIRST_FRAME, frame_ms, frame_cpu),
        ):
            wall, cpu = first_frame_ms(code)
            walls.append(wall)
            cpus.append(cpu)
    hello_tty, planner_tty = [], []
    for _ in range(args.runs):
        hello_tty.append(terminal_paint_ms([sys.executable, "-c", HELLO_RUN], b"hello"))
        planner_tty.append(
            terminal_paint_ms([sys.executable, "-m", "dflash_plan.tui.cli"], b"Ktok/s")
        )
    times = asyncio.run(keystrokes(args.runs))
    from dflash_plan.tui.app import DEBOUNCE_S

    rows = [
        ("baseline: a Header/Static/Footer textual app, first frame", hello_ms),
        ("dflash-plan: launch to first full frame (120x40, headless)", frame_ms),
        ("  the same, CPU time of the process: minimal app", hello_cpu),
        ("  the same, CPU time of the process: dflash-plan", frame_cpu),
        ("in a terminal (pty 120x40): the minimal app, launch to first paint", hello_tty),
        ("in a terminal: `dflash-plan`, launch to the figures painted", planner_tty),
        (f"keystroke to numbers, Pilot.press (debounce {DEBOUNCE_S * 1e3:.0f} ms)", times["pilot"]),
        ("key event to numbers on screen, 1-4 targets (layout changes)", times["1-4"]),
        ("key event to numbers on screen, 4-7 targets (layout stays)", times["4-7"]),
        ("one recompute: validate + project + show", times["recompute"]),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{'measurement':<{width}}  {'median ms':>9}  {'min':>7}  {'max':>7}  runs")
    for name, values in rows:
        print(
            f"{name:<{width}}  {statistics.median(values):9.1f}  {min(values):7.1f}  "
            f"{max(values):7.1f}  {len(values)}"
        )
    ratio = statistics.median(frame_ms) / statistics.median(hello_ms)
    cpu_ratio = statistics.median(frame_cpu) / statistics.median(hello_cpu)
    tty_ratio = statistics.median(planner_tty) / statistics.median(hello_tty)
    print(
        f"first frame: {ratio:.2f}x the minimal app in wall time, {cpu_ratio:.2f}x in CPU "
        f"time, {tty_ratio:.2f}x in a terminal (target: within 2x); key event to "
        f"numbers on screen: {statistics.median(times['1-4']):.0f} ms with a new layout, "
        f"{statistics.median(times['4-7']):.0f} ms without (target: under 50 ms)"
    )


if __name__ == "__main__":
    main()
