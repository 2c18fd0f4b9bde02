"""The launch-format registry (model/inputs/formats.py): each format declared once, and
everything that tests a format name reading it."""

from __future__ import annotations

import ast
import sys
import types
from pathlib import Path

import pytest
from dflash_plan.model.basics.errors import PlanError
from dflash_plan.model.core.projection import project
from dflash_plan.model.inputs import formats
from dflash_plan.model.inputs.plan import Plan
from dflash_plan.tui.cli import build_parser, main
from support import edit

ROOT = Path(__file__).resolve().parents[2]

# The transport each format's launch runs, as docs/launch.md says it (None: the legacy
# trainer's colocated run, or the template's own command: never a differing transport).
LAUNCHED_TRANSPORT = {
    "specforge": "mooncake",
    "speculators": "mooncake",
    "specforge-legacy": None,
    "slurm": "mooncake",
    "kubernetes": "mooncake",
    "skypilot": "mooncake",
    "template": None,
}


def test_every_format_has_its_expected_transport():
    assert set(LAUNCHED_TRANSPORT) == set(formats.names())
    for name, transport in LAUNCHED_TRANSPORT.items():
        assert formats.row_of(name).transport == transport, name


@pytest.mark.parametrize("transport", ["mooncake", "direct"])
@pytest.mark.parametrize("fmt", list(LAUNCHED_TRANSPORT))
def test_the_transport_diagnostic_fires_exactly_when_the_transports_differ(
    baseline, catalog, fmt, transport
):
    plan = edit(baseline, launch={"format": fmt}, workload={"transport": transport})
    codes = [d.code for d in project(plan, catalog).diagnostics]
    launched = LAUNCHED_TRANSPORT[fmt]
    differs = launched is not None and launched != transport
    assert codes.count("transport-differs-from-launch") == (1 if differs else 0)


@pytest.mark.parametrize("fmt", ["kubernetes", "skypilot"])
def test_kubernetes_and_skypilot_warn_that_they_stage_through_mooncake(baseline, catalog, fmt):
    plan = edit(baseline, launch={"format": fmt}, workload={"transport": "direct"})
    (diagnostic,) = [
        d for d in project(plan, catalog).diagnostics if d.code == "transport-differs-from-launch"
    ]
    assert f"the {fmt} launch stages them through a Mooncake store" in diagnostic.message
    assert 'set workload.transport = "mooncake"' in diagnostic.message
    assert diagnostic.values == {"transport": "direct", "launch_format": fmt}


def test_the_offline_advice_names_the_formats_that_write_the_offline_run(baseline, catalog):
    plan = edit(baseline, launch={"format": "kubernetes"}, workload={"mode": "offline"})
    (diagnostic,) = [
        d for d in project(plan, catalog).diagnostics if d.code == "mode-differs-from-launch"
    ]
    assert "launch it with --format specforge, speculators or slurm " in diagnostic.message


# --- no view tests a format name -------------------------------------------------------


def _format_tests(path: Path) -> list[tuple[int, str]]:
    return _format_tests_in(path.read_text(encoding="utf-8"))


def _format_tests_in(source: str) -> list[tuple[int, str]]:
    """(line, name) of each comparison or match case in source that names a format."""
    names = set(formats.names())
    found = []
    for node in ast.walk(ast.parse(source)):
        if isinstance(node, (ast.Compare, ast.MatchValue)):
            found += [
                (node.lineno, c.value)
                for c in ast.walk(node)
                if isinstance(c, ast.Constant) and c.value in names
            ]
    return found


def test_the_format_test_finder_finds_comparisons_not_labels():
    source = (
        'Label("template")\n'
        'template.display = view.launch_format == "template"\n'
        'if fmt not in ("slurm", "kubernetes"):\n'
        "    pass\n"
        "match fmt:\n"
        '    case "skypilot":\n'
        "        pass\n"
    )
    assert _format_tests_in(source) == [
        (2, "template"),
        (3, "slurm"),
        (3, "kubernetes"),
        (6, "skypilot"),
    ]


@pytest.mark.parametrize("folder", ["tui", "tui/planner"])
def test_no_view_module_tests_a_format_name(folder):
    found = {
        f"{path.relative_to(ROOT)}:{line}: {name}"
        for path in sorted((ROOT / folder).glob("*.py"))
        for line, name in _format_tests(path)
    }
    assert found == set()


def test_only_the_store_sizing_kinds_are_tested_by_name_in_the_model():
    """physics/store.py and physics/flow.py compare the sizing kind (a row's store_sizing:
    whose segment, buffer and loader rules the store follows), not a launch format."""
    found = {
        str(path.relative_to(ROOT))
        for path in sorted((ROOT / "model").rglob("*.py"))
        if _format_tests(path)
    }
    assert found == {"model/physics/store.py", "model/physics/flow.py"}
    sizings = {row.store_sizing for row in formats.FORMATS.values()}
    for module in found:
        assert {name for _, name in _format_tests(ROOT / module)} <= sizings


# --- a new format is one module plus one registry row ----------------------------------

THROWAWAY = "throwaway"
THROWAWAY_COMMAND = "echo a throwaway launch"


def _throwaway_module() -> types.ModuleType:
    """model/launch/throwaway.py as a new format would write it: NAME and render()."""
    from dflash_plan.model.launch.common import LaunchScript, script

    module = types.ModuleType(f"dflash_plan.model.launch.{THROWAWAY}")

    def render(ctx, template=None):
        text = script(ctx, "a throwaway format", [], [THROWAWAY_COMMAND], fmt=THROWAWAY)
        return LaunchScript(THROWAWAY, text, {}, (), ctx.layout)

    module.NAME = THROWAWAY  # type: ignore[attr-defined]
    module.render = render  # type: ignore[attr-defined]
    return module


@pytest.fixture
def throwaway(monkeypatch):
    """The throwaway format registered (one row) with its module importable."""
    monkeypatch.setitem(sys.modules, f"dflash_plan.model.launch.{THROWAWAY}", _throwaway_module())
    formats.register(
        formats.FormatRow(
            THROWAWAY,
            THROWAWAY,
            "mooncake",
            "the throwaway launch stages hidden states through a Mooncake store",
            "host",
            "the throwaway trainer receives into host memory",
            offline_refusal="the throwaway launch writes no offline run",
        )
    )
    yield formats.row_of(THROWAWAY)
    del formats.FORMATS[THROWAWAY]


def test_a_registered_format_is_one_the_plan_accepts(throwaway, baseline):
    plan = edit(baseline, launch={"format": THROWAWAY})
    assert plan.launch.format == THROWAWAY
    doc = baseline.model_dump()
    doc["launch"]["format"] = "nope"
    with pytest.raises(ValueError, match=f"choose one of .*template, {THROWAWAY}"):
        Plan.model_validate(doc)


def test_a_registered_format_is_a_cli_choice_and_launch_writes_it(throwaway, tmp_path, capsys):
    args = build_parser("launch").parse_args(["launch", "--format", THROWAWAY])
    assert args.format == THROWAWAY
    out = tmp_path / "launch.sh"
    assert main(["launch", "--format", THROWAWAY, "-o", str(out)]) == 0
    text = out.read_text()
    assert text.startswith("#!/usr/bin/env bash\n\n# dflash-plan launch: a throwaway format\n")
    assert text.endswith(f"\n{THROWAWAY_COMMAND}\n")
    assert out.stat().st_mode & 0o111  # a script (the row's executable)
    assert f"wrote {out} ({THROWAWAY})" in capsys.readouterr().err


def test_a_registered_format_reads_its_row(throwaway, baseline, catalog):
    from dflash_plan.model.launch import file_name, generate

    assert file_name(THROWAWAY) == "launch-throwaway.sh"
    plan = edit(baseline, launch={"format": THROWAWAY}, workload={"transport": "direct"})
    codes = [d.code for d in project(plan, catalog).diagnostics]
    assert "transport-differs-from-launch" in codes
    offline = edit(baseline, launch={"format": THROWAWAY}, workload={"mode": "offline"})
    with pytest.raises(PlanError, match="the throwaway launch writes no offline run"):
        generate(offline, catalog)


async def test_a_registered_format_is_in_the_app_picker_and_its_tab_writes_it(throwaway):
    from apphelp import choose, planner, settle, text
    from dflash_plan.tui.picker import Picker

    app = planner()
    async with app.run_test(size=(120, 40)) as pilot:
        await pilot.press("f4")
        await settle(pilot)
        picker = app.screen.query_one("#launch-format", Picker)
        assert [value for _, value in picker.options][-1] == THROWAWAY
        await choose(pilot, "launch-format", THROWAWAY)
        await settle(pilot)
        assert THROWAWAY_COMMAND in text(app, "launch-command")
