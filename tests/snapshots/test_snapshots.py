"""Headless SVG snapshots of the planner at 80x24 and 120x40, one test per scene and size
(pytest-textual-snapshot's `snap_compare`: a fresh app each, and on a failure its HTML
report shows the old and the new picture side by side), plus the built-in plan at 200x50
(the projection in two columns, the widest layout) and in the light theme.

Review changes as pictures: the report pytest prints the path of, or
../shared/tools/render-snapshots OUT_DIR, then open the PNGs. Accept them with
`pytest tests/snapshots --snapshot-update`.
"""

from __future__ import annotations

import pytest
from apphelp import choose, put, snap, steady_cursors  # noqa: F401
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


async def acceptance(pilot):
    # Issue 33: what the training buys, in the results' side column (its acceptance
    # group, the side column's last), scrolled to the panel's bottom edge.
    planner = pilot.app.planner
    results, side = planner.query_one("#results"), planner.query_one("#side")
    # The side column's last line at the panel's bottom edge (screen rows to scroll rows).
    bottom = side.region.bottom - results.content_region.y + results.scroll_y
    results.scroll_to(y=bottom - results.content_region.height, animate=False)
    await pilot.pause()


async def colocated(pilot):
    # SpecForge's DFlash2 recipe topology (issue 32): 8 B300s, each running both roles;
    # the results say which topology wins on them.
    await choose(pilot, "workload.topology", "colocated")
    await choose(pilot, "target.gpu", "b300")  # colocated: both roles' GPU type
    await put(pilot, "target.count", "8")  # the plan's GPUs, not the targets'


async def dflash2(pilot):
    await choose(pilot, "workload.drafter", "dflash2")


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
    "acceptance": acceptance,
    "colocated": colocated,
    "dflash2": dflash2,
    "help": help_screen,
    "save_dialog": save_dialog,
    "launch_panel": launch_panel,
}


@pytest.mark.parametrize("size", SIZES)
@pytest.mark.parametrize("scene", SCENES)
def test_screen(snap_compare, scene, size):
    assert snap(snap_compare, SCENES[scene], SIZES[size], unfocused=True)


def test_wide(snap_compare):
    """200x50: the inputs beside the projection's two columns."""
    assert snap(snap_compare, default, (200, 50), unfocused=True)


async def light(pilot):
    await pilot.press("ctrl+t")  # the app's Light/dark key
    await default(pilot)


def test_light_theme(snap_compare):
    """The light theme (ctrl+t), at 120x40."""
    assert snap(snap_compare, light, (120, 40), unfocused=True)
