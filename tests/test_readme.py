"""The README's set-up commands are the ones CI runs, and its screenshot is a snapshot."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


INSTALL = "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/dflash-plan"
TESTS = ("python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && "
         ".venv/bin/pytest")


def test_ci_runs_the_readme_commands():
    lines = (ROOT / "README.md").read_text().splitlines()
    first_screen = lines[:24]
    # Each set-up command is one line of its own on the first screen.
    assert INSTALL in first_screen and TESTS in first_screen
    # CI runs the README's test line itself (the first line holding its install).
    ci = (ROOT / ".ci" / "run").read_text()
    assert "grep -m1 -F \".venv/bin/pip install -q -e '.[test]'\" README.md" in ci
    assert 'eval "$test_line"' in ci
    assert next(line for line in lines if ".venv/bin/pip install -q -e '.[test]'" in line) == TESTS


def test_readme_screenshot_is_a_current_snapshot():
    shot = (ROOT / "docs" / "screenshot.svg").read_text()
    snap = ROOT / "tests" / "__snapshots__" / "test_snapshots" / "test_screen[b200_vs_baseline-120x40].svg"
    assert shot == snap.read_text()


def test_readme_search_screenshot_is_a_current_snapshot():
    shot = (ROOT / "docs" / "search.svg").read_text()
    snap = (ROOT / "tests" / "__snapshots__" / "test_snapshots_search"
            / "test_search_screen[search_pareto-120x40].svg")
    assert shot == snap.read_text()
