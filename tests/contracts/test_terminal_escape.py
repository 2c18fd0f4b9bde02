"""Nothing hostile reaches the terminal: every text that comes from a file or a flag (a
plan's names and paths, a price catalog's cells and name, --source, --provider, --gpu,
--set) is shown with its control characters written as escapes (model/basics/terminal.py).
An escape sequence in a price catalog's instance name must not recolour the terminal,
retitle it, plant an OSC 8 hyperlink or write the clipboard (OSC 52); a C1 control is the
same in one character (U+009B is CSI, U+009D is OSC). Rich and Textual pass them through.

The headless commands run in-process over generated hostile values; the app is opened on
a plan whose name and paths hold them. No ESC, C1 control, BEL or line separator from the
values may reach stdout, stderr or the screen."""

from __future__ import annotations

import contextlib
import csv
import io
import os
import re
import tempfile
from pathlib import Path

import pytest
import tomli_w
from apphelp import planner, steady_cursors  # noqa: F401
from dflash_plan.model.basics.terminal import CONTROL_CHARS, terminal_safe
from dflash_plan.model.launch.escape import comment_text
from dflash_plan.tui.cli import main
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

VERDA = Path(__file__).parents[1] / "data" / "catalogs" / "verda" / "vms.csv"

# What a terminal acts on: ESC, the C1 controls (CSI, OSC, ST, NEL ...), BEL, and the line
# and paragraph separators. (CR is left out: `compare --csv` ends its rows with CRLF.)
ACTED_ON = re.compile("[\x1b\x80-\x9f\x07\u2028\u2029]")

PIECES = [
    "\x1b[31m",  # red
    "\x1b[2J\x1b[H",  # clear the screen, cursor home
    "\x1b]0;owned\x07",  # the window title
    "\x1b]8;;https://evil.example/\x1b\\link\x1b]8;;\x1b\\",  # OSC 8 hyperlink
    "\x1b]52;c;ZWNobyBvd25lZA==\x07",  # OSC 52: write the clipboard
    "\x9b31m",  # C1 CSI
    "\x9d52;c;ZWNobyBvd25lZA==\x9c",  # C1 OSC ... ST
    "\x90q\x9c",  # DCS
    "\x85",  # NEL
    "\x07",
    "\r",
    "\b",
    "\t",
    "\n",
    "\x0b",
    "\x0c",
    "\x7f",
    "\u2028",
    "\u2029",
    "[bold]",
    "[/]",
    "\\",
    "'",
    '"',
    ",",
    "é",
    "日本",
]
CHARS = st.characters(exclude_categories=("Cs",), exclude_characters="\0")
TEXT = (
    st.lists(st.one_of(st.sampled_from(PIECES), st.text(CHARS, max_size=3)), min_size=1, max_size=4)
    .map("".join)
    .filter(bool)
)
# Names are one line without C0 controls by the plan's rules (C1 controls and U+2028 pass).
LINE = TEXT.map(lambda s: "".join(c for c in s if ord(c) >= 32 and ord(c) != 127)).filter(
    lambda s: bool(s.strip())
)


def acted_on(text: str) -> list[str]:
    return sorted(set(ACTED_ON.findall(text)))


def run(argv: list[str]) -> str:
    """stdout and stderr of one command, run as `dflash-plan` runs it."""
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        main(argv)
    return out.getvalue() + err.getvalue()


def _catalog(folder: Path, name: str, cells: list[str]) -> Path:
    """Verda's SkyPilot catalog with hostile instance and region names on every row and a
    hostile GPU name (a GPU the catalog does not hold: named in the summary) on one."""
    with VERDA.open(newline="") as f:
        rows = list(csv.reader(f))
    head = rows[0]
    for i, row in enumerate(rows[1:]):
        row[head.index("InstanceType")] += cells[i % len(cells)]
        row[head.index("Region")] = cells[(i + 1) % len(cells)]
    rows[2][head.index("AcceleratorName")] = "X" + cells[0]
    path = folder / "verda" / name
    path.parent.mkdir()
    with path.open("w", newline="") as f:
        csv.writer(f).writerows(rows)
    return path


def _file_name(text: str) -> str:
    """A file name holding text's characters (no '/', no NUL, at most 255 bytes)."""
    name = text.replace("/", "_")
    while len(name.encode()) > 200:
        name = name[:-1]
    return f"{name}.csv"


@settings(
    # each example runs 13 commands (about 0.6 s); DFLASH_PLAN_EXAMPLES_SCALE asks for more
    max_examples=max(1, int(5 * float(os.environ.get("DFLASH_PLAN_EXAMPLES_SCALE", "1")))),
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.function_scoped_fixture],
)
@given(
    name=LINE,
    line=LINE,
    paths=st.lists(TEXT, min_size=4, max_size=4),
    cells=st.lists(TEXT, min_size=3, max_size=3),
    flag=TEXT,
)
def test_no_escape_from_a_file_or_a_flag_reaches_the_terminal(
    name, line, paths, cells, flag, monkeypatch
):
    with tempfile.TemporaryDirectory() as tmp, monkeypatch.context() as env:
        folder = Path(tmp)
        env.setenv("DFLASH_PLAN_CONFIG_DIR", str(folder / "config"))
        env.setenv("COLUMNS", "160")
        plan = folder / "plan.toml"
        plan.write_text(
            tomli_w.dumps(
                {
                    "name": name,
                    "cost": {"provider": line.lower()},
                    "calibration": {
                        "drafter": {"rtx-pro-6000": {"tokens_per_s": 14799.9, "source": paths[0]}}
                    },
                    "launch": {
                        "run_id": line,
                        "train_data_path": paths[1],
                        "output_dir": paths[2],
                        "chat_template": paths[3],
                    },
                }
            )
        )
        catalog = _catalog(folder, _file_name(flag), cells)
        imports = ["prices", "--import", str(catalog), "--date", "2026-11-30"]
        verda = ["--set", "cost.provider=verda", "--set", "target.gpu=b200"]
        commands = [
            [*imports, "--source", flag],  # refused when it holds a C0 control
            [*imports, "--source", line[:200]],
            [*imports, "--provider", flag],
            ["prices", "--gpu", "b200"],  # the imported offers' instances and regions
            ["prices", "--gpu", flag],
            ["project", str(plan), *verda],  # the plan's text, and an offer's source
            ["check", str(plan)],  # the plan's own provider: no offers of that name
            ["compare", str(plan), str(plan)],
            ["compare", str(plan), str(plan), "--markdown"],
            ["compare", str(plan), str(plan), "--csv"],
            ["search", str(plan), "--gpus", "b200", "--max-gpus", "8", *verda],
            ["project", "--set", f"workload.target_model={flag}"],
            ["project", "--set", f"launch.output_dir={flag}", "--set", f"name={flag}"],
        ]
        for argv in commands:
            shown = run(argv)
            assert acted_on(shown) == [], (argv, shown)


def test_terminal_safe_escapes_every_control_character_and_nothing_else():
    control = re.compile(f"[{CONTROL_CHARS}]")
    # the Basic Multilingual Plane (no surrogates) and a few characters beyond it
    every = [chr(c) for c in range(0x10000) if not 0xD800 <= c < 0xE000]
    every += ["\U0001f600", "\U000e0001", "\U0010ffff"]
    plain = "".join(c for c in every if not control.match(c))
    assert len(plain) == len(every) - 0x20 - 0x21 - 2  # C0, DEL and C1, U+2028 and U+2029
    for keep in ("", "\n", "\n\t"):
        assert terminal_safe(plain, keep) == plain
        for c in every:
            if control.match(c):
                shown = terminal_safe(c, keep)
                assert shown == c if c in keep else shown == repr(c)[1:-1] and shown.isprintable()
    assert terminal_safe("a\x1b[31m\x9b\u2028\tb", "\n") == "a\\x1b[31m\\x9b\\u2028\\tb"


def test_launch_comments_drop_the_same_characters():
    """One definition: a launch script's comment drops what the terminal acts on."""
    every = "".join(chr(c) for c in range(0x100)) + "\u2028\u2029"
    assert re.findall(f"[{CONTROL_CHARS}]", comment_text(every)) == []


async def test_the_app_draws_a_hostile_plan_name_and_paths_as_escapes(tmp_path):
    """A plan's name may hold C1 controls and line separators (the plan's rules refuse C0
    ones only; a recovery file's, anything), its paths anything but NUL: the title bar, the
    name field, the comparison and the Launch tab's script drew them raw."""
    from dflash_plan.model.inputs.plan import plan_to_dict

    name = "N\x9b2J\x9d52;c;ZWNobw==\x9cB\u2028E\x85"
    path = "\x1b[31mR\x1b]8;;https://evil.example/\x07L\x9b2J\x07\u2028Z"
    plan = tmp_path / "plan.toml"
    plan.write_text(
        tomli_w.dumps(
            {"name": name, "launch": {"format": "specforge-legacy", "train_data_path": path}}
        )
    )
    app = planner(plan)
    async with app.run_test(size=(160, 50)) as pilot:
        await pilot.pause()
        shot = app.export_screenshot()
        assert "N\\x9b2J" in shot and acted_on(shot) == []
        await pilot.press("f4")  # the Launch tab: the script's shell words hold the path
        await pilot.pause()
        await pilot.pause()
        # The trainer's command comes after the pre-flight: scroll to its data path.
        area = app.query_one("#launch-command")
        row = next(i for i, x in enumerate(area.text.splitlines()) if "--train-data-path" in x)
        area.scroll_to(y=row, animate=False)
        await pilot.pause()
        shot = app.export_screenshot()
        assert "\\x1b[31mR" in shot and acted_on(shot) == []
        # the plan recovered from a crash, opened over this one, with its own name: kept
        # without its control characters (a plan's name may not hold C0 ones)
        doc = {**plan_to_dict(app.state.plan), "name": "R\x9d0;title\x9c\u2029"}
        app.state.restore(doc, None)
        app.planner.publish()
        await pilot.press("f3")
        await pilot.pause()
        shot = app.export_screenshot()
        assert "R0;title" in shot and acted_on(shot) == []


HOSTILE_NAME = "\x1b[31mR\x1b]52;c;ZWNobw==\x07\x9b2J\u2028"


@pytest.mark.parametrize(
    ("data", "argv"),
    [
        ("runlogs/specforge_train.log", ["calibrate"]),
        ("runlogs/torchspec_train.log", ["calibrate"]),
        ("runlogs/own.csv", ["calibrate"]),
        ("runconfig/speculators_dflash.sh", ["project", "--from-config"]),
        ("dataset/mixed.jsonl", ["project", "--from-dataset"]),
    ],
)
def test_a_hostile_file_name_read_by_a_command_is_shown_as_escapes(tmp_path, data, argv):
    """calibrate, --from-config and --from-dataset name the file each figure came from."""
    source = Path(__file__).parents[1] / "data" / data
    path = tmp_path / f"{HOSTILE_NAME}{source.name}"
    path.write_bytes(source.read_bytes())
    shown = run([*argv, str(path)])
    assert "\\x1b[31mR" in shown and acted_on(shown) == []
