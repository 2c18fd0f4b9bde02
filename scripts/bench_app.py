"""Benchmark the interactive planner, headless: launch to first full frame, and keystroke to
updated numbers, with `python -c "import textual"` timed the same way as the baseline.

Run from an installed checkout:  python scripts/bench_app.py [--runs 15]
"""

from __future__ import annotations

import argparse
import asyncio
import statistics
import subprocess
import sys
import time

FIRST_FRAME = """
import asyncio
from dflash_plan.tui.app import PlannerApp

async def main():
    app = PlannerApp()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.pause()          # the first frame has been composed and painted
        print("frame", flush=True)

asyncio.run(main())
"""


HELLO_FRAME = """
import asyncio
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
        print("frame", flush=True)

asyncio.run(main())
"""


def wall_ms(code: str, marker: str | None) -> float:
    """Milliseconds from starting a fresh interpreter to the marker line (or to its exit)."""
    start = time.perf_counter()
    proc = subprocess.Popen([sys.executable, "-c", code], stdout=subprocess.PIPE, text=True)
    if marker:
        for line in proc.stdout:
            if line.strip() == marker:
                elapsed = time.perf_counter() - start
                break
        proc.wait()
    else:
        proc.wait()
        elapsed = time.perf_counter() - start
    if proc.returncode:
        raise SystemExit(f"benchmark child failed ({proc.returncode})")
    return elapsed * 1e3


async def keystrokes(runs: int) -> tuple[list[float], list[float]]:
    from textual.widgets import Input

    from dflash_plan.tui.app import PlannerApp

    app = PlannerApp()
    to_numbers, recompute = [], []
    async with app.run_test(size=(120, 40)) as pilot:
        field = app.query_one("#target-count", Input)
        field.focus()
        await pilot.pause()
        for i in range(runs):
            field.select_all()
            before, shown = app.recompute_count, str(app.query_one("#ktok-per-s").render())
            start = time.perf_counter()
            await pilot.press(str(1 + i % 4))           # 1..4 targets: the figure changes
            while app.recompute_count == before:
                await asyncio.sleep(0.001)
            await pilot.pause()                           # let the new text render
            to_numbers.append((time.perf_counter() - start) * 1e3)
            assert str(app.query_one("#ktok-per-s").render()) != shown
        for _ in range(runs):
            start = time.perf_counter()
            app.recompute()
            recompute.append((time.perf_counter() - start) * 1e3)
    return to_numbers, recompute


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--runs", type=int, default=15)
    args = parser.parse_args()
    textual_ms = [wall_ms("import textual", None) for _ in range(args.runs)]
    hello_ms = [wall_ms(HELLO_FRAME, "frame") for _ in range(args.runs)]
    frame_ms = [wall_ms(FIRST_FRAME, "frame") for _ in range(args.runs)]
    typed, recompute = asyncio.run(keystrokes(args.runs))
    from dflash_plan.tui.app import DEBOUNCE_S

    rows = [
        ('baseline: python -c "import textual" (start to exit)', textual_ms),
        ("baseline: a Header/Static/Footer textual app, first frame", hello_ms),
        ("dflash-plan: launch to first full frame (120x40, headless)", frame_ms),
        (f"keystroke to updated numbers (debounce {DEBOUNCE_S * 1e3:.0f} ms included)", typed),
        ("one recompute: validate + project + push to widgets", recompute),
    ]
    width = max(len(name) for name, _ in rows)
    print(f"{'measurement':<{width}}  {'median ms':>9}  {'min':>7}  {'max':>7}  runs")
    for name, values in rows:
        print(f"{name:<{width}}  {statistics.median(values):9.1f}  {min(values):7.1f}  "
              f"{max(values):7.1f}  {len(values)}")


if __name__ == "__main__":
    main()
