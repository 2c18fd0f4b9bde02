"""The README's set-up commands are the ones CI runs, and its screenshot is a snapshot."""

from __future__ import annotations

from pathlib import Path

ROOT = Path(__file__).resolve().parents[2]


INSTALL = "python3 -m venv .venv && .venv/bin/pip install -q -e . && .venv/bin/dflash-plan"
TESTS = "python3 -m venv .venv && .venv/bin/pip install -q -e '.[test]' && .venv/bin/python scripts/fetch_upstream.py && .venv/bin/pytest"


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
    snap = (
        ROOT
        / "tests"
        / "snapshots"
        / "__snapshots__"
        / "test_snapshots"
        / "test_screen[b200_vs_baseline-120x40].svg"
    )
    assert shot == snap.read_text()


def test_readme_search_screenshot_is_a_current_snapshot():
    shot = (ROOT / "docs" / "search.svg").read_text()
    snap = (
        ROOT
        / "tests"
        / "snapshots"
        / "__snapshots__"
        / "test_snapshots_search"
        / "test_search_screen[search_pareto-120x40].svg"
    )
    assert shot == snap.read_text()


# The README's answer table: each row's plan, as `--set` edits of the built-in plan.
ANSWER_ROWS = {
    "7 + 1 RTX PRO 6000": ["target.count=7"],
    "6 + 2 RTX PRO 6000 (what balance picks)": ["target.count=6", "drafter.count=2"],
    "7 + 1, drafter measured at 40 Ktok/s": [
        "target.count=7",
        "calibration.drafter.rtx-pro-6000=40000",
    ],
    "4x B200 (3 + 1) at 3.4x the price": ["target.gpu=b200", "drafter.gpu=b200"],
    "4x B200 (2 + 2) at 3.4x the price": [
        "target.gpu=b200",
        "drafter.gpu=b200",
        "target.count=2",
        "drafter.count=2",
    ],
    "4x B300 (3 + 1) at 3.4x the price": [
        "target.gpu=b300",
        "drafter.gpu=b300",
        "cost.ratio.b300=3.4",
    ],
    # The path SpecForge's launch runs: its store, received in host memory (specforge 0.2.0).
    "4x B200 through SpecForge's Mooncake store": [
        "target.gpu=b200",
        "drafter.gpu=b200",
        "workload.transport=mooncake",
        "workload.receive=host",
    ],
    "4x B300 through SpecForge's Mooncake store": [
        "target.gpu=b300",
        "drafter.gpu=b300",
        "cost.ratio.b300=3.4",
        "workload.transport=mooncake",
        "workload.receive=host",
    ],
    # SpecForge's main since 2026-09-08 (PRs #840, #841, #858): pinned receive buffers.
    "4x B200 through the store, pinned receive": [
        "target.gpu=b200",
        "drafter.gpu=b200",
        "workload.transport=mooncake",
        "workload.receive=pinned",
    ],
    "4x B200 at the recipe's 512 anchors": [
        "target.gpu=b200",
        "drafter.gpu=b200",
        "workload.num_anchors=512",
    ],
}


def _numbers(cell: str) -> list[tuple[float, int]]:
    """The numbers in a cell with the decimals they are written with."""
    import re

    return [
        (float(n.replace(",", "")), len(n.split(".")[1]) if "." in n else 0)
        for n in re.findall(r"\d[\d,]*(?:\.\d+)?", cell)
    ]


def _agrees(cell: str, central: float, pair: tuple[float, float] | None) -> bool:
    """The cell's figure (and its range, when it shows one) as the model rounds them."""
    got = _numbers(cell)
    wanted = [central, *(pair or ())][: len(got)]
    return len(got) in (1, 3) and all(
        abs(v - w) <= 0.5 * 10**-d + 1e-9 for (v, d), w in zip(got, wanted, strict=False)
    )


def test_the_answer_table_is_what_the_model_prints():
    import json

    from dflash_plan.tui.cli import main

    lines = (ROOT / "README.md").read_text().splitlines()
    rows = {
        cells[1].strip("* "): [c.strip() for c in cells[2:-1]]
        for line in lines
        if line.startswith("| ")
        for cells in [line.split("|")]
    }
    import contextlib
    import io

    for label, sets in ANSWER_ROWS.items():
        assert label in rows, f"README has no row {label!r}"
        ktok, days, cost, versus, _ = rows[label]
        out = io.StringIO()
        with contextlib.redirect_stdout(out):
            assert (
                main(
                    [
                        "project",
                        "--json",
                        "--baseline",
                        *[arg for s in sets for arg in ("--set", s)],
                    ]
                )
                == 0
            )
        doc = json.loads(out.getvalue())
        r, v = doc["ranges"] or {}, doc["versus_baseline"]
        checks = {
            "Ktok/s": (ktok, doc["ktok_per_s"], r and tuple(x / 1e3 for x in r["tokens_per_s"])),
            "days": (days, doc["days"], r and tuple(r["days"])),
            "cost": (cost, doc["total_cost"], r and tuple(r["total_cost"])),
            "speed": (versus.split("/")[0], v["speedup"], v["speedup_range"]),
            "cost ratio": (versus.split("/")[1], v["cost_ratio"], v["cost_ratio_range"]),
        }
        for what, (cell, central, pair) in checks.items():
            assert _agrees(cell.replace("x", " "), central, pair), (
                f"README row {label!r}, {what}: {cell!r}; the model prints {central:,.3f} ({pair})"
            )


def test_readme_architecture_names_every_module():
    text = (ROOT / "README.md").read_text()
    section = text[
        text.index("## Architecture\n") : text.index("\n## ", text.index("## Architecture\n") + 1)
    ]
    modules = [
        p.relative_to(ROOT).as_posix()
        for folder in ("model", "tui")
        for p in sorted((ROOT / folder).rglob("*.py"))
        if p.name != "__init__.py"
    ]
    assert len(modules) > 60
    missing = [m for m in modules if f"`{m}`" not in section]
    assert missing == []
    packages = [
        p.parent.relative_to(ROOT).as_posix()
        for folder in ("model", "tui")
        for p in (ROOT / folder).rglob("__init__.py")
    ]
    assert [p for p in packages if f"`{p}/" not in section] == []
