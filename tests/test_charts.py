"""The charts, drawn without an app: each shows the model's data (the search's front, the
split curve, the tornado) with the marks the reader needs, at both terminal sizes."""

from __future__ import annotations

import pytest
from dflash_plan.model.projection import project
from dflash_plan.model.search import Constraints, default_space, search
from dflash_plan.model.sensitivity import split_curve, tornado
from dflash_plan.tui.charts import draw_pareto, draw_split, draw_tornado, linear_ticks, log_ticks
from support import edit
from textual_plotext.plot import Plot

SIZES = ((78, 17), (118, 31))          # the chart's room in an 80x24 and a 120x40 terminal


def drawn(draw, size) -> list[str]:
    plt = Plot()
    plt.plotsize(*size)
    plt._set_size(*size)                 # as textual-plotext's widget sizes it
    draw(plt)
    return plt.uncolorize(plt.build()).splitlines()


def test_ticks_are_round():
    assert log_ticks(0.083, 8.8) == [0.1, 0.2, 0.5, 1, 2, 5]
    assert linear_ticks(0, 887) == [0, 200, 400, 600, 800]
    assert linear_ticks(-50, 280) == [0, 100, 200]


@pytest.mark.parametrize("size", SIZES)
def test_pareto_marks_front_current_baseline_and_limits(catalog, baseline, size):
    space = default_space(baseline, catalog, ("b200", "rtx-pro-6000"), max_gpus=16)
    result = search(baseline, catalog, space, Constraints(deadline_days=3))
    current = project(edit(baseline, target={"count": 6}, drafter={"count": 2}), catalog)
    lines = drawn(lambda plt: draw_pareto(plt, result.front, current,
                                          project(baseline, catalog), result.cost_unit, 3),
                  size)
    text = "\n".join(lines)
    assert f"front ({len(result.front)} plans)" in text
    assert "◆ current" in text and "■ baseline" in text
    assert text.count("●") >= min(len(result.front), 3)     # points may share a cell
    assert "days (log scale)" in text and len(lines) == size[1]
    assert all(len(line) <= size[0] for line in lines)


@pytest.mark.parametrize("size", SIZES)
def test_split_curve_marks_the_switch(catalog, baseline, size):
    curve = split_curve(project(edit(baseline, target={"count": 7}), catalog))
    notes = []
    text = "\n".join(drawn(lambda plt: notes.append(draw_split(plt, curve)), size))
    # The measured targets add 4,933 tok/s each until the one drafter binds at 7 + 1.
    assert "drafters bind from 7 target GPUs" in notes[0] and "current: 7" in text
    for name in ("target capacity", "drafter capacity", "throughput"):
        assert name in text


@pytest.mark.parametrize("size", SIZES)
def test_tornado_lists_the_inputs_largest_first(catalog, baseline, size):
    p = project(edit(baseline, target={"gpu": "b200"}, drafter={"gpu": "b200"}), catalog)
    bars = tornado(p, catalog)
    lines = drawn(lambda plt: draw_tornado(plt, bars, p), size)
    order = [next(i for i, line in enumerate(lines) if b.name.split(" (")[0] in line)
             for b in bars]
    assert order == sorted(order)                    # top to bottom: largest first
    assert "% change from the central plan" in "\n".join(lines)
