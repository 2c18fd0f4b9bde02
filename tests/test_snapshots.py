"""Headless SVG snapshots of the planner at 80x24 and 120x40.

Review changes as pictures: ../shared/tools/render-snapshots OUT_DIR, then open the PNGs.
Accept them with `pytest --snapshot-update`.
"""

from __future__ import annotations

import pytest
from apphelp import choose, type_into

from dflash_plan.tui.app import PlannerApp

SIZES = {"80x24": (80, 24), "120x40": (120, 40)}


async def b200_plan(pilot):
    await choose(pilot, "target-gpu", "b200")
    await choose(pilot, "drafter-gpu", "b200")
    pilot.app.set_focus(None)


async def drafter_bound(pilot):
    await type_into(pilot, "target-count", "7")
    pilot.app.set_focus(None)


async def does_not_fit(pilot):
    await choose(pilot, "workload-target_model", "llama-3.3-70b-instruct")
    await choose(pilot, "target-gpu", "rtx-4090")
    pilot.app.set_focus(None)


async def invalid_input(pilot):
    await type_into(pilot, "target-count", "3x")


async def help_screen(pilot):
    await pilot.press("f1")
    await pilot.pause()


async def save_dialog(pilot):
    pilot.app.set_focus(None)
    await pilot.press("f2")
    await pilot.pause()


async def launch_panel(pilot):
    pilot.app.query_one("#tabs").active = "tab-launch"
    await pilot.pause()
    pilot.app.set_focus(None)


async def default(pilot):
    pilot.app.set_focus(None)


SCENES = {"default": default, "b200_vs_baseline": b200_plan, "drafter_bound": drafter_bound,
          "does_not_fit": does_not_fit, "invalid_input": invalid_input,
          "help": help_screen, "save_dialog": save_dialog, "launch_panel": launch_panel}


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("scene", SCENES)
def test_screen(snap_compare, scene, size):
    assert snap_compare(PlannerApp(), terminal_size=SIZES[size], run_before=SCENES[scene])
