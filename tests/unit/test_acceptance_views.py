"""What the training buys, in the views (issue 33 item 3): the results panel's acceptance
group, the acceptance chart (tau and the serving speedup against epochs, from the one
acceptance model) and the compare table's tau, speedup and break-even columns."""

from __future__ import annotations

import csv
import io
import re

import numpy as np
import pytest
from dflash_plan.model.core import figures as F
from dflash_plan.model.core.projection import project
from dflash_plan.model.explore.sensitivity import acceptance_curve
from dflash_plan.model.physics.acceptance import speedup_at
from dflash_plan.tui.charts import acceptance_note, chart_text, draw_acceptance, plot_area
from dflash_plan.tui.cli import main
from dflash_plan.tui.planner.results import side
from dflash_plan.tui.report import acceptance_rows, serving_words
from support import edit

# The chart's room under its note in an 80x24 and a 120x40 terminal (measured in the app),
# and in the 60x20 terminal the other charts' tests use.
SIZES = ((78, 16), (118, 32), (60, 12))


def test_the_results_group_says_tau_speedup_break_even_with_ranges(catalog, baseline):
    p = project(baseline, catalog)
    a = p.acceptance
    rows = {name: (value, after) for name, value, after in acceptance_rows(p)}
    assert list(rows) == [
        F.TAU.name,
        F.SERVING_SPEEDUP.name,
        F.BREAK_EVEN_HOURS.name,
        "+1 epoch",
        "serving",
    ]
    low, high = a.tau_range
    assert rows[F.TAU.name] == (f"{a.tau:.2f}", f"range {low:.2f} - {high:.2f}")
    low, high = a.speedup_range
    assert rows[F.SERVING_SPEEDUP.name] == (f"{a.speedup:.2f}x", f"range {low:.2f}-{high:.2f}x")
    assert a.break_even_hours is not None and a.break_even_range is not None
    days = [h / 24 for h in (a.break_even_hours, *a.break_even_range)]
    assert rows[F.BREAK_EVEN_HOURS.name] == (
        f"{days[0]:.1f} days",
        f"range {days[1]:.1f}-{days[2]:.1f} days",
    )
    # One more epoch: what the same plan with one more epoch gains in tau, at its cost.
    more = project(edit(baseline, workload={"epochs": baseline.workload.epochs + 1}), catalog)
    gain = more.acceptance.tau - a.tau
    assert gain == pytest.approx(a.one_more_epoch_tau, rel=1e-9) and gain > 0
    assert rows["+1 epoch"] == (
        f"+{gain:.2f} {F.TAU.name}",
        f"for {p.cost_per_epoch:,.0f} RTX PRO 6000-h",
    )
    assert rows["serving"] == ("sglang, low-batch", "on 1 RTX PRO 6000")


@pytest.mark.parametrize("width", [0, 80, 36])
def test_the_results_group_puts_each_range_under_its_value_when_narrow(catalog, baseline, width):
    p = project(baseline, catalog)
    panel = side(p, width).plain.splitlines()
    at = panel.index("what the training buys")
    group = panel[at + 1 :]
    tau = f"{F.TAU.name:<13}{p.acceptance.tau:.2f}"
    if width == 36:  # the side column of an 80x24 terminal: a range wraps no more
        assert group[0] == tau and group[1].startswith(" " * 13 + "range ")
        assert all(len(line) <= width for line in group), group
    else:
        assert group[0].startswith(f"{tau}  range ")
        assert len(group) == 5


def test_a_plan_that_does_not_fit_has_no_acceptance_group(catalog, baseline):
    unfit = edit(
        baseline, workload={"target_model": "llama-3.3-70b-instruct"}, target={"gpu": "rtx-4090"}
    )
    p = project(unfit, catalog)
    assert p.does_not_fit is not None
    assert acceptance_rows(p) == [] and "what the training buys" not in side(p).plain


def test_the_curve_is_the_projections_model(catalog, baseline):
    # One model: the chart's curve passes through the projection's own tau and its range
    # at the plan's epochs, and through the tau one more epoch gives.
    p = project(baseline, catalog)
    a, curve = p.acceptance, acceptance_curve(p)
    at = curve.epochs.index(float(p.epochs))
    assert curve.tau[at] == pytest.approx(a.tau, rel=1e-12)
    assert (curve.tau_low[at], curve.tau_high[at]) == pytest.approx(a.tau_range, rel=1e-12)
    after = curve.epochs.index(float(p.epochs + 1))
    assert curve.tau[after] - curve.tau[at] == pytest.approx(a.one_more_epoch_tau, rel=1e-9)
    assert curve.epochs[0] == 0 and curve.epochs[-1] == 2 * p.epochs  # twice the budget
    assert all(b > x for x, b in zip(curve.tau, curve.tau[1:], strict=False))  # monotone
    # The right axis: the serving speedup of the same engine at each tau.
    s = speedup_at(np.array(curve.speedup_taus), a.engine, a.regime)[0]
    assert curve.speedups == pytest.approx(tuple(s))
    note = acceptance_note(curve, serving_words(p))
    assert "141 RTX PRO 6000-hours each" in note and "on sglang, low-batch" in note


def y_labels(lines: list[str], side: str) -> list[str]:
    """The labels of the left (before ┤) or right (after ├) axis, top to bottom."""
    if side == "left":
        return [line.split("┤")[0].strip() for line in lines if "┤" in line]
    return [line.split("├")[-1].strip() for line in lines if "├" in line]


@pytest.mark.parametrize("size", SIZES)
def test_the_chart_marks_the_plan_and_reads_tau_left_and_speedup_right(catalog, baseline, size):
    p = project(baseline, catalog)
    curve = acceptance_curve(p)
    lines = chart_text(lambda plt: draw_acceptance(plt, curve), *size).plain.splitlines()
    assert len(lines) == size[1] and all(len(line) <= size[0] for line in lines), lines
    cols, rows = plot_area("\n".join(lines))
    assert cols >= 40 and rows >= 3
    bottom = max(i for i, line in enumerate(lines) if "└" in line)
    plot = "\n".join(lines[:bottom])
    assert "◆" in plot and "●" in plot  # the plan's point and one more epoch's
    legend = " ".join(lines[bottom + 1 :])
    assert f"◆ plan: {p.epochs} epochs, {p.acceptance.tau:.2f}" in legend
    assert f"● +1 epoch: {p.acceptance.tau + p.acceptance.one_more_epoch_tau:.2f}" in legend
    left = [float(x) for x in y_labels(lines, "left")]
    right = [float(x.removesuffix("x")) for x in y_labels(lines, "right")]
    assert len(left) >= 2 and left == sorted(left, reverse=True)
    assert len(right) == len(left) and right == sorted(right, reverse=True)
    # Each right label is the speedup at the tau beside it (the model's, to the cent).
    for tau, speed in zip(left, right, strict=True):
        expected = speedup_at(tau, p.acceptance.engine, p.acceptance.regime)[0]
        assert speed == pytest.approx(float(expected), abs=0.006)
    assert "epochs of the plan's samples" in "\n".join(lines)


def compare_rows(tmp_path, capsys, baseline, *flags: str) -> str:
    base, more = tmp_path / "base.toml", tmp_path / "more.toml"
    base.write_text(baseline.to_toml())
    more.write_text(edit(baseline, workload={"epochs": 2 * baseline.workload.epochs}).to_toml())
    assert main(["compare", str(base), str(more), *flags]) == 0
    return capsys.readouterr().out


def test_compare_has_tau_speedup_and_break_even_columns(
    tmp_path, capsys, monkeypatch, catalog, baseline
):
    monkeypatch.setenv("COLUMNS", "300")
    out = compare_rows(tmp_path, capsys, baseline, "--csv")
    rows = list(csv.DictReader(io.StringIO(out)))
    doubled = edit(baseline, workload={"epochs": 2 * baseline.workload.epochs})
    for row, plan in zip(rows, (baseline, doubled), strict=True):
        a = project(plan, catalog).acceptance
        low, high = a.tau_range
        assert row[F.TAU.head] == f"{a.tau:.2f} ({low:.2f} - {high:.2f})"
        low, high = a.speedup_range
        assert row[F.SERVING_SPEEDUP.head] == f"{a.speedup:.2f}x ({low:.2f}-{high:.2f}x)"
        assert row[F.BREAK_EVEN_HOURS.head].endswith(" d)")
    # Doubling the epochs buys tau (and costs more serving hours to pay back).
    taus = [float(row[F.TAU.head].split()[0]) for row in rows]
    assert taus[1] > taus[0]


@pytest.mark.parametrize("columns", ["300", "100"])
def test_a_narrow_compare_table_gives_up_the_serving_columns_first(
    tmp_path, capsys, monkeypatch, baseline, columns
):
    monkeypatch.setenv("COLUMNS", columns)
    out = compare_rows(tmp_path, capsys, baseline)
    flat = " ".join(out.split())
    heads = out.split("┃")
    if columns == "300":
        for f in (F.TAU, F.SERVING_SPEEDUP, F.BREAK_EVEN_HOURS, F.SERVING_GPUS_SAVED):
            assert any(f.head.replace("-", " ") in h for h in heads), f.head
        return
    # The GPUs saved, the serving speedup, the payback and tau give way first, in that
    # order: the columns a narrow table kept before they came keep their place.
    left = re.search(r"column\(s\) left out at 100 columns: (.*?) \(wider terminal", flat)
    assert left is not None, flat
    order = (F.SERVING_GPUS_SAVED, F.SERVING_SPEEDUP, F.BREAK_EVEN_HOURS, F.TAU)
    heads = [f.head.replace("-", " ") for f in order]
    assert left.group(1).split(", ")[:4] == heads, left.group(1)


def test_tau_shows_with_the_same_decimals_in_every_view(tmp_path, capsys, catalog, baseline):
    # One tau formatter (tui/format.py tau, two decimals): project's line, the app's
    # results group and comparison cells, compare's table and search's objective columns.
    from dflash_plan.tui import format as fmt

    p = project(baseline, catalog)
    a = p.acceptance
    shown, low, high = fmt.tau(a.tau), fmt.tau(a.tau_range[0]), fmt.tau(a.tau_range[1])
    assert shown == f"{a.tau:.2f}" and len(shown.split(".")[1]) == 2
    assert main(["project"]) == 0
    said = " ".join(capsys.readouterr().out.split())
    assert f"acceptance: tau {shown} ({low} - {high}) after" in said
    rows = {name: (value, after) for name, value, after in acceptance_rows(p)}
    assert rows[F.TAU.name] == (shown, f"range {low} - {high}")
    assert fmt.narrow(F.TAU, a.tau) == shown
    assert fmt.narrow_range(F.TAU, a.tau_range, a.tau) == f"{low}-{high}"
    assert fmt.tau_spread(a.tau, *a.tau_range) == f"{shown} ({low} - {high})"
    out = compare_rows(tmp_path, capsys, baseline, "--csv")
    first = next(csv.DictReader(io.StringIO(out)))
    assert first[F.TAU.head] == f"{shown} ({low} - {high})"
