"""Headless SVG snapshots of the Search view, the Comparison view and the charts at 80x24
and 120x40, and the charts at 60x20: one `snap_compare` test per scene and size, as in
test_snapshots.py.

Review changes as pictures: the report pytest prints the path of, or
../shared/tools/render-snapshots OUT_DIR, then open the PNGs. Accept them with
`pytest tests/snapshots --snapshot-update`. The Search view with its Pareto chart at
120x40 (search_pareto-120x40) is the README's picture of a search.
"""

from __future__ import annotations

import pytest
from apphelp import settle, snap, steady_cursors  # noqa: F401

SIZES = {"80x24": (80, 24), "120x40": (120, 40)}
USERS = "b200,b300,h200,rtx-pro-6000"


async def search_table(pilot):
    # The user's question: 3 days, four GPU types, at most the measured run's cost.
    await pilot.press("f5")
    for widget, value in (("deadline", "3"), ("budget", "845"), ("gpus", USERS)):
        pilot.app.screen.query_one(f"#search-{widget}").value = value
    await settle(pilot)


async def search_objective(pilot):
    # Issue 33: the cheapest plan to reach tau >= 3.8 (at worst), the user's GPU types
    # within 845 RTX PRO 6000-hours: the epochs chosen and the tau they buy in the table.
    await pilot.press("f5")
    for widget, value in (
        ("budget", "845"),
        ("gpus", USERS),
        ("objective", "time-to-tau"),
        ("min-tau", "3.8"),
    ):
        pilot.app.screen.query_one(f"#search-{widget}").value = value
    await settle(pilot)


async def search_pareto(pilot):
    await search_table(pilot)
    await pilot.press("f4")


def _counts(pilot, gpu: str, targets: int, drafters: int) -> None:
    state = pilot.app.state
    for key in ("target.gpu", "drafter.gpu"):
        state.edit(key, gpu)
    state.set_counts(targets, drafters)


async def split_chart(pilot):
    _counts(pilot, "b200", 12, 5)
    pilot.app.planner.publish()
    await pilot.press("f7")


async def tornado_chart(pilot):
    await split_chart(pilot)
    await pilot.press("f4")


async def acceptance_chart(pilot):
    # Issue 33: the built-in plan's tau against epochs, its range, the plan's point and
    # one more epoch's; the serving speedup on the right axis.
    await pilot.press("f7")
    await pilot.press("f5")


async def compare_view(pilot):
    _counts(pilot, "rtx-pro-6000", 6, 2)
    pilot.app.state.pin()
    _counts(pilot, "b200", 3, 1)
    pilot.app.planner.publish()
    await pilot.press("f6")


SCENES = {
    "search_table": search_table,
    "search_pareto": search_pareto,
    "search_objective": search_objective,
    "split_chart": split_chart,
    "tornado_chart": tornado_chart,
    "compare": compare_view,
    "acceptance_chart": acceptance_chart,
}


async def tornado_offline(pilot):
    # Issue 29 item 18d: four inputs on nine rows, each with its days and cost bars. Three
    # drafters (test_charts says why): with two, the fitted B200 drafter binds and its
    # efficiency makes a fifth input, too wide for 60 columns.
    state = pilot.app.state
    state.edit("workload.mode", "offline")
    _counts(pilot, "b200", 3, 3)
    pilot.app.planner.publish()
    await pilot.press("f7")
    await pilot.press("f4")


# The charts at 60x20 (issue 29 item 18): the Pareto chart, too short for its plot, in
# one line saying so; the split curve with its legend under the plot and its note on the
# clipped drafter capacity; an offline tornado with every days bar.
SMALL = {"60x20": (60, 20)}
SMALL_SCENES = {
    "search_table": search_table,
    "search_pareto": search_pareto,
    "split_chart": split_chart,
    "tornado_offline": tornado_offline,
    "acceptance_chart": acceptance_chart,
}
CASES = [(scene, SCENES[scene], size) for size in SIZES for scene in SCENES] + [
    (scene, SMALL_SCENES[scene], size) for size in SMALL for scene in SMALL_SCENES
]


@pytest.mark.parametrize(
    ("scene", "size"),
    [(run, size) for _, run, size in CASES],
    ids=[f"{name}-{size}" for name, _, size in CASES],
)
def test_search_screen(snap_compare, scene, size):
    assert snap(snap_compare, scene, {**SIZES, **SMALL}[size])
