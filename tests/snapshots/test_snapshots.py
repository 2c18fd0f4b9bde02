"""Headless SVG snapshots of the planner at 80x24 and 120x40: every scene of one size is
taken from one running app (each scene starts again from the built-in plan), which keeps
the suite fast.

Review changes as pictures: ../shared/tools/render-snapshots OUT_DIR, then open the PNGs.
Accept them with `pytest --snapshot-update`.
"""

from __future__ import annotations

import pytest
from apphelp import choose, put, snap_scenes, steady_cursors  # noqa: F401
from dflash_plan.tui.tabs import TabbedView
from support import edit

SIZES = {"80x24": (80, 24), "120x40": (120, 40)}


async def default(pilot):
    pilot.app.screen.query_one("#target-count").focus()  # the first focus, visible


async def b200_vs_baseline(pilot):
    await choose(pilot, "target.gpu", "b200")
    await choose(pilot, "drafter.gpu", "b200")


async def drafter_bound(pilot):
    await put(pilot, "target.count", "7")


async def does_not_fit(pilot):
    await choose(pilot, "workload.target_model", "llama-3.3-70b-instruct")
    await choose(pilot, "target.gpu", "rtx-4090")


async def invalid_input(pilot):
    pilot.app.screen.query_one("#target-count").focus()
    await put(pilot, "target.count", "3x")


async def offline(pilot):
    # Offline on 50 TB: the storage lines in the results, and the data not fitting.
    await choose(pilot, "workload.mode", "offline")
    await put(pilot, "storage.tb", "50")


async def regenerate(pilot):
    # Regeneration before an offline run: the phase timeline in the results.
    planner = pilot.app.planner
    planner.state.adopt(edit(planner.state.plan, workload={"regenerate": True, "mode": "offline"}))
    planner.publish()
    await pilot.pause()
    planner.query_one("#phases").scroll_visible(animate=False, top=True)
    await pilot.pause()


async def help_screen(pilot):
    await pilot.press("f1")


async def save_dialog(pilot):
    await pilot.press("f2")


async def launch_panel(pilot):
    await pilot.press("f4")
    for worker in list(pilot.app.workers):
        if worker.group == "launch":
            await worker.wait()


SCENES = {
    "default": default,
    "b200_vs_baseline": b200_vs_baseline,
    "drafter_bound": drafter_bound,
    "does_not_fit": does_not_fit,
    "invalid_input": invalid_input,
    "offline": offline,
    "regenerate": regenerate,
    "help": help_screen,
    "save_dialog": save_dialog,
    "launch_panel": launch_panel,
}


async def _fresh(pilot) -> None:
    """Back to the built-in plan, the projection tab, nothing focused or open."""
    app = pilot.app
    while len(app.screen_stack) > 1:
        await pilot.press("escape")  # answers a dialog's worker
    await pilot.pause()
    planner_screen = app.planner
    planner_screen.query_one(TabbedView).active = "results"
    planner_screen._load(app.state.read(None))
    app.clear_notifications()
    planner_screen.set_focus(None)
    for scrolled in planner_screen.query("#inputs, #results"):
        scrolled.scroll_home(animate=False)
    await pilot.pause()


@pytest.mark.parametrize("size", SIZES)
async def test_screen(snapshot, size):
    changed = await snap_scenes(snapshot, "test_screen", size, SIZES[size], SCENES, _fresh)
    assert not changed, f"changed at {size}: {', '.join(changed)} (look at the pictures)"
