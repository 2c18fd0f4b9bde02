"""The README's set-up commands are the ones CI runs, and its screenshot is a snapshot."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parent.parent


def test_ci_runs_the_readme_commands():
    readme = ROOT / "README.md"
    first_screen = "\n".join(readme.read_text().splitlines()[:20])
    ci = (ROOT / ".ci" / "run").read_text().splitlines()
    commands = [ci[i + 1].strip() for i, line in enumerate(ci) if line.startswith("# README:")]
    assert commands == ["pip install -e '.[test]'", "pytest"]
    assert "pip install -e '.[test]' && pytest" in first_screen
    assert "pip install -e . && dflash-plan" in first_screen


def test_readme_screenshot_is_a_current_snapshot():
    shot = (ROOT / "docs" / "screenshot.svg").read_text()
    snap = ROOT / "tests" / "__snapshots__" / "test_snapshots" / "test_screen[b200_vs_baseline-120x40].svg"
    assert shot == snap.read_text()
