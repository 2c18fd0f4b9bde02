"""The figure registry (model/core/figures.py) drives every view: each view shows every
figure it claims, a new row shows in every view it names with no view edited, and no view
keeps a list of its own."""

from __future__ import annotations

import ast
import csv
import io
import json
from pathlib import Path

import pytest
from apphelp import planner, settle, steady_cursors  # noqa: F401
from dflash_plan.model.core import figures as F
from dflash_plan.model.core.projection import project
from dflash_plan.model.explore.compare import compare, shown
from dflash_plan.model.inputs.plan import default_plan
from dflash_plan.tui import format as fmt
from dflash_plan.tui import report
from dflash_plan.tui.cli import main
from dflash_plan.tui.config import load_catalog, open_plan
from dflash_plan.tui.dialogs import FIGURES_MARKER, help_markdown, help_page
from dflash_plan.tui.planner.results import figure_rows
from dflash_plan.tui.scenarios import ScenariosScreen, column
from dflash_plan.tui.scenarios import figure_rows as comparison_rows
from dflash_plan.tui.search import SearchScreen
from rich.console import Console
from support import edit
from textual.widgets import DataTable

TUI = Path(__file__).parents[2] / "tui"
# The modules that show figures (the JSON is the model's Projection.to_json).
VIEWS = ("report.py", "planner/results.py", "scenarios.py", "search.py", "cli.py")

# A figure no view knows: a row of the registry that is not composed by hand, shown in
# every view. Its attribute exists on Projection (the link's load), its key nowhere.
NEW = F.Figure(
    "hidden_state_bytes_per_s",
    "link load",
    "link B/s",
    "B/s",
    "count",
    "hidden-state bytes per second over the link",
    F.ALL,
)


@pytest.fixture(params=["registry", "one row more"])
def registry(request, monkeypatch) -> tuple[F.Figure, ...]:
    if request.param == "one row more":
        monkeypatch.setattr(F, "FIGURES", (*F.FIGURES, NEW))
    return F.FIGURES


def _labels(f: F.Figure) -> set[str]:
    return {f.name, f.head, f.narrow, f.narrowest}


def _shows(f: F.Figure, text: str) -> bool:
    return any(" ".join(label.split()) in text for label in _labels(f))


def _flat(text: str) -> str:
    return " ".join(text.split())


def test_each_figure_is_declared_once_with_a_formatter_and_a_source(catalog):
    p = project(default_plan(), catalog)
    c = compare(p, p)
    assert len({f.key for f in F.FIGURES}) == len(F.FIGURES)
    for f in F.FIGURES:
        assert f.format in fmt.FORMATS, f.key
        assert f.views, f.key
        source = {"comparison": c, "acceptance": p.acceptance}.get(f.of, p)
        assert hasattr(source, f.attr or f.key), f.key
        assert f.meaning and f.name and f.head


def test_json_and_the_contract_are_the_registry(catalog, registry):
    p = project(default_plan(), catalog)
    doc = p.to_json()
    for f in F.shown_in(F.View.JSON):
        assert f.key in doc and doc[f.key] == f.read(p)
    versus = compare(p, p).to_json()
    assert {f.key for f in F.shown_in(F.View.JSON, "comparison")} <= set(versus)
    if NEW in registry:
        assert doc[NEW.key] == p.hidden_state_bytes_per_s
        # The JSON's earlier keys keep their order; a new figure follows the last.
        assert list(doc).index(NEW.key) > list(doc).index("fits")


def test_cli_views_show_every_figure_they_claim(tmp_path, capsys, monkeypatch, catalog, registry):
    monkeypatch.setenv("COLUMNS", "300")  # nothing left out for width
    p = project(default_plan(), catalog)
    report.projection(p)
    text = _flat(capsys.readouterr().out)
    for f in F.shown_in(F.View.REPORT):
        assert _shows(f, text), (f.key, text)
    if NEW in registry:
        assert f"link load {fmt.figure(NEW, NEW.read(p), p.cost_unit)}" in text
    # compare: a column per figure (and the plan's ranges), the same for every style.
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    assert main(["new", str(a)]) == 0
    b.write_text(a.read_text().replace('gpu = "rtx-pro-6000"', 'gpu = "b200"'))
    capsys.readouterr()
    assert main(["compare", "--csv", str(a), str(b)]) == 0
    header, *_ = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    assert main(["compare", str(a), str(b)]) == 0
    table = _flat(capsys.readouterr().out)
    for f in (*F.shown_in(F.View.COMPARE), *F.shown_in(F.View.COMPARE, "comparison")):
        assert f.head in header, f.key
        # A table's head may wrap between words: each word of one of its labels shows.
        assert any(
            all(word in table for word in label.replace("-", " ").split()) for label in _labels(f)
        ), f.key
    # search: a column per figure.
    assert main(["search", "--deadline-days", "3", "--max-gpus", "8", "--gpus", "b200"]) == 0
    text = _flat(capsys.readouterr().out)
    for f in F.shown_in(F.View.SEARCH):
        assert _shows(f, text), f.key
    assert (
        main(["search", "--deadline-days", "3", "--max-gpus", "8", "--gpus", "b200", "--json"]) == 0
    )
    front = json.loads(capsys.readouterr().out)["front"]
    if NEW in registry:
        first = front[0]["projection"]
        assert f"{first[NEW.key]:,.0f}" in text


def test_app_results_show_every_figure_they_claim(catalog, registry):
    p = project(default_plan(), catalog)
    text = _flat(" ".join(" ".join(row) for row in figure_rows(p)))
    for f in F.shown_in(F.View.RESULTS):
        assert _shows(f, text), (f.key, text)
    names = [name for name, _, _ in figure_rows(p)]
    assert (NEW.name in names) == (NEW in registry)


def test_help_lists_the_results_figures_from_the_registry(registry):
    """The help's figures are the registry's: each one the results show, by its name and
    meaning (a new row included), and help.md describes none of them by hand."""
    console = Console(width=100, record=True, file=io.StringIO())
    console.print(help_markdown(help_page(), "red"))
    shown = _flat(console.export_text())
    for f in F.shown_in(F.View.RESULTS):
        assert f"{f.name}: " in shown and _flat(f.meaning) in shown, (f.key, shown)
    assert (NEW.meaning in shown) == (NEW in registry)
    by_hand = _flat((TUI / "help.md").read_text(encoding="utf-8"))
    assert by_hand.count(FIGURES_MARKER) == 1
    for f in F.FIGURES:
        assert _flat(f.meaning) not in by_hand, f.key
    for f in F.shown_in(F.View.RESULTS):
        assert f"**{f.name}**" not in by_hand, f.key


def test_a_search_tables_own_figure_columns_may_be_left_out_when_narrow():
    # The CLI's and the app's search tables leave out the highest drop first when they
    # do not fit the terminal; a column that never gives way could push the table past it.
    for f in F.rows(F.View.SEARCH):
        assert f.drop > 0, f.key
    assert F.BOTTLENECK.drop and F.BOTTLENECK.drop < F.JOB_COST_PER_MILLION_TOKENS.drop


async def test_app_search_and_comparison_show_every_figure_they_claim(registry):
    app = planner()
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.press("f5")
        screen = app.screen
        assert isinstance(screen, SearchScreen)
        screen.query_one("#search-deadline").value = "3"
        screen.query_one("#search-gpus").value = "b200"
        await settle(pilot)
        table = screen.query_one("#search-table", DataTable)
        heads = " ".join(str(c.label) for c in table.columns.values())
        for f in F.shown_in(F.View.SEARCH):
            assert _shows(f, heads), (f.key, heads)
        assert table.row_count and len(table.get_row_at(0)) == len(table.columns)
        await pilot.press("escape")
        await pilot.pause()
        await pilot.press("f6")
        await pilot.pause()
        assert isinstance(app.screen, ScenariosScreen)
        table = app.screen.query_one("#scenarios-table", DataTable)
        rows = [str(v) for v in table.get_column_at(0)]
        for f in (*F.shown_in(F.View.COMPARE), *F.shown_in(F.View.COMPARE, "comparison")):
            assert f.narrow in rows, (f.key, rows)
        assert (NEW.narrow in rows) == (NEW in registry)


def test_cli_and_app_compare_show_the_same_rows(tmp_path, capsys, catalog):
    """One computation (model/explore/compare.py `compared`): the CLI's compare table and
    the app's Comparison view show the same figures in the same order, the same ranges,
    and the same values (each view rounds its own way)."""
    a, b = tmp_path / "a.toml", tmp_path / "b.toml"
    assert main(["new", str(a)]) == 0
    b.write_text(a.read_text().replace('gpu = "rtx-pro-6000"', 'gpu = "b200"'))
    capsys.readouterr()
    assert main(["compare", "--csv", str(a), str(b)]) == 0
    header, *body = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    base, new = (project(*open_plan(path, None, load_catalog())) for path in (a, b))
    app_rows = comparison_rows()
    by_head = {label: f for f in shown() for label in (f.head, f.narrow)}

    def layout(labels: list[str], ranged_inline: list[str]) -> list[tuple[str, bool]]:
        """(figure key, shows a range) in the order shown."""
        out: list[tuple[str, bool]] = []
        for label in labels:
            if label.strip() == "range":  # the range of the figure above (beside it)
                out[-1] = (out[-1][0], True)
            elif label.endswith(" range"):  # a range after the figures: "days range"
                key = by_head[label.removesuffix(" range")].key
                out = [(k, True) if k == key else (k, r) for k, r in out]
            elif label in by_head:
                out.append((by_head[label].key, label in ranged_inline))
        return out

    inline = [h for h in header if any("(" in row[header.index(h)] for row in body)]
    assert layout(header[1:], inline) == layout(list(app_rows), [])
    for row, p in zip(body, (base, new), strict=True):
        app = [str(v) for v in column(p, base)]
        cli = dict(zip(header, row, strict=True))  # a figure's value under its head
        for label, value in zip(app_rows, app, strict=True):
            f = by_head.get(label)
            if f is None or value in ("", fmt.DASH) or f.format in ("text", "ratios"):
                continue
            number = float(cli[f.head].split()[0].strip("$x").replace(",", ""))
            scale = 24 if cli[f.head].endswith("hours") else 1  # the CLI says hours below a day
            assert number / scale == pytest.approx(
                float(value.strip("x").replace(",", "")), rel=0.03
            )


@pytest.mark.parametrize("prices", [{}, {"usd_per_gpu_hour": {"rtx-pro-6000": 1.97}}])
def test_cost_per_million_tokens_is_the_total_cost_over_the_tokens_trained(catalog, capsys, prices):
    p = project(edit(default_plan(), cost=prices), catalog)
    assert p.cost_unit == ("USD" if prices else "RTX PRO 6000-hours")
    tokens = p.tokens_per_epoch * p.epochs
    assert p.total_cost is not None and tokens > 1e9
    expected = p.total_cost / tokens * 1e6  # cost units per 1e6 tokens
    assert p.cost_per_million_tokens == pytest.approx(expected, rel=1e-12)
    assert p.to_json()["cost_per_million_tokens"] == pytest.approx(expected, rel=1e-12)
    # Shown as total cost is: dollars, or reference-GPU-hours.
    value = f"${fmt.fine(expected)}" if prices else f"{fmt.fine(expected)} RTX PRO 6000-h"
    report.projection(p)
    assert f"cost/Mtok {value.removesuffix('-h')}" in _flat(capsys.readouterr().out)
    assert ("cost/Mtok", value, "") in figure_rows(p)


def test_compare_csv_writes_cost_per_million_tokens_with_its_unit_as_the_cost(tmp_path, capsys):
    # A csv or markdown cell has no title to name the unit: the costs said it in each
    # cell, the cost per million tokens did not ("0.0751" beside "845 RTX PRO 6000-h").
    a = tmp_path / "a.toml"
    assert main(["new", str(a)]) == 0
    capsys.readouterr()
    assert main(["compare", "--csv", str(a), str(a)]) == 0
    header, row, _ = list(csv.reader(io.StringIO(capsys.readouterr().out)))
    cells = dict(zip(header, row, strict=True))
    p = project(*open_plan(a, None, load_catalog()))
    unit = " RTX PRO 6000-h"
    assert cells[F.TOTAL_COST.head].endswith(unit)
    assert cells[F.COST_PER_MILLION_TOKENS.head] == fmt.fine(p.cost_per_million_tokens) + unit


def _strings(path: Path) -> list[tuple[int, str]]:
    tree = ast.parse(path.read_text())
    return [
        (node.lineno, node.value)
        for node in ast.walk(tree)
        if isinstance(node, ast.Constant) and isinstance(node.value, str)
    ]


def test_no_view_keeps_its_own_list_of_figures():
    """The view modules name no figure by a literal key, name or head: they read the
    registry (formatter keys are the registry's vocabulary for formats, not figures); and
    they write no figure's value by hand (`hand_formatted`, below)."""
    shown = [f for f in F.FIGURES if f.views - {F.View.JSON}]
    words = {x for f in shown for x in (f.key, *_labels(f))} - set(fmt.FORMATS)
    found = [
        f"tui/{name}:{line}: {text!r}"
        for name in VIEWS
        for line, text in _strings(TUI / name)
        if text in words
    ]
    assert not found, found
    # Nor does one write a figure's value by hand: f-strings and raw formatters included.
    by_hand = [
        f"tui/{name}:{line}: {field}"
        for name in VIEWS
        for line, field in hand_formatted((TUI / name).read_text())
    ]
    assert not by_hand, by_hand


# The attributes that carry a figure's value: every registry key, and the fields of the
# job's Total and its Phases that carry the same figures.
FIGURE_FIELDS = frozenset({f.key for f in F.FIGURES} | {"gpu_hours", "days", "cost"})


def _format_functions() -> tuple[set[str], set[str]]:
    """tui/format.py's functions: all of them, and the raw formatters its tables by
    formatter key (FORMATS, CELLS, NARROW) are built from: a view that calls one of those
    on a figure passes the registry by."""
    tree = ast.parse((TUI / "format.py").read_text())
    functions = {n.name for n in tree.body if isinstance(n, ast.FunctionDef)} | {
        alias.asname or alias.name  # the rules it shares with the launch headers
        for n in tree.body
        if isinstance(n, ast.ImportFrom) and n.module and n.module.endswith("units")
        for alias in n.names
    }
    tables = [
        n.value
        for n in tree.body
        if isinstance(n, ast.AnnAssign)
        and isinstance(n.target, ast.Name)
        and n.target.id in ("FORMATS", "CELLS", "NARROW")
        and n.value is not None
    ]
    assert len(tables) == 3
    used = {n.id for t in tables for n in ast.walk(t) if isinstance(n, ast.Name)} & functions
    return functions, used - {"figure", "cell"}


def _fields(node: ast.AST, formatters: set[str]) -> list[str]:
    """The figure fields an expression reads outside a call of tui/format.py."""
    if isinstance(node, ast.Call):
        func = node.func
        if (
            isinstance(func, ast.Attribute)
            and isinstance(func.value, ast.Name)
            and func.value.id == "fmt"
            and func.attr in formatters
        ):
            return []
        inner = [*node.args, *(k.value for k in node.keywords)]
        if isinstance(func, ast.Attribute):
            inner.append(func.value)  # a method's object, not its name
        return [x for n in inner for x in _fields(n, formatters)]
    here = []
    if isinstance(node, ast.Attribute) and node.attr in FIGURE_FIELDS:
        here.append(node.attr)
    if isinstance(node, ast.Name) and node.id in FIGURE_FIELDS:
        here.append(node.id)
    return here + [x for n in ast.iter_child_nodes(node) for x in _fields(n, formatters)]


def hand_formatted(source: str) -> list[tuple[int, str]]:
    """(line, field) where a view writes a figure by hand: an f-string's value that reads
    a figure field outside tui/format.py (`f"{t.gpu_hours:,.0f}"`, `f"{p.bottleneck}"`),
    or a raw formatter that FORMATS is built from called on a figure field
    (`fmt.duration(p.days)`): the registry's `fmt.figure(F.DAYS, ...)` writes it."""
    functions, raw = _format_functions()
    tree = ast.parse(source)
    found = [
        (node.lineno, field)
        for node in ast.walk(tree)
        if isinstance(node, ast.FormattedValue)
        for field in _fields(node.value, functions)
    ]
    for node in ast.walk(tree):
        if (
            isinstance(node, ast.Call)
            and isinstance(node.func, ast.Attribute)
            and isinstance(node.func.value, ast.Name)
            and node.func.value.id == "fmt"
            and node.func.attr in raw
        ):
            for arg in node.args[:1]:
                found += [(node.lineno, x) for x in _fields(arg, set())]
    return sorted(set(found))


@pytest.mark.parametrize(
    "source",
    [
        'f"{t.gpu_hours:,.0f} GPU-h"',
        'f"bottleneck: {escape(str(p.bottleneck))}"',
        'f"{p.tokens_per_epoch / 1e9:,.3f} G tokens"',
        'f"{days}"',
        "fmt.duration(p.days)",
        'f"{fmt.cost(t.cost, p.cost_unit)}"',
        "fmt.cost_figure(p.cost_per_epoch, p.cost_unit)",
        "fmt.narrow_number(o.days)",
        'f"{fmt.fine(p.cost_per_million_tokens)}"',
    ],
)
def test_the_guard_catches_a_hand_formatted_figure(source):
    assert hand_formatted(source), source


def test_the_guard_catches_a_figure_written_by_hand_in_a_view():
    source = (TUI / "report.py").read_text()
    injected = source + '\n\ndef _by_hand(t):\n    return f"{t.gpu_hours:,.0f} GPU-hours"\n'
    assert hand_formatted(injected) == [(len(injected.splitlines()), "gpu_hours")]


@pytest.mark.parametrize(
    "source",
    [
        'f"{fmt.figure(F.GPU_HOURS, t.gpu_hours)} GPU-h"',
        'f"{escape(fmt.figure(F.BOTTLENECK, p.bottleneck))}"',
        'f"{r.count:,} GPUs"',
        "fmt.duration(o.capture_days)",
    ],
)
def test_the_guard_lets_the_registry_write_a_figure(source):
    assert not hand_formatted(source), source
