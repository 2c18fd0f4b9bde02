"""The dated version matrix (model/launch/versions.py): every line's check still holds
today, a line goes stale the day after its stale-after date with a message naming what to
re-check, and an unknown line is refused in one line."""

from __future__ import annotations

from datetime import date, timedelta
from pathlib import Path

import pytest
from dflash_plan.model.basics.errors import PlanError
from dflash_plan.model.inputs import formats
from dflash_plan.model.launch import versions
from dflash_plan.model.launch.versions import (
    FORMAT_ROLES,
    LINES,
    PINNED,
    STALE_AFTER_DAYS,
    staleness,
    upstream_line,
)


def test_no_upstream_line_is_stale_today():
    # Upstream moves monthly: past a line's stale-after date its pins are no longer known
    # to be what upstream runs. The message says what to re-check, where, and what to edit.
    stale = [m for line in LINES.values() if (m := staleness(line, date.today())) is not None]
    if stale:
        pytest.fail("\n".join(stale), pytrace=False)


@pytest.mark.parametrize("name", list(LINES))
def test_a_line_goes_stale_the_day_after_its_stale_after_date(name):
    line = LINES[name]
    assert line.stale_after == line.checked + timedelta(days=STALE_AFTER_DAYS)
    assert staleness(line, line.checked) is None
    assert staleness(line, line.stale_after) is None
    message = staleness(line, line.stale_after + timedelta(days=1))
    assert message is not None and "\n" not in message
    assert f"went stale {line.stale_after.isoformat()}" in message
    for pin in line.pins:
        assert pin.short in message
        where = f"pip index versions {pin.package}" if pin.is_wheel else pin.source
        assert where in message
    for what in ("model/launch/versions.py", "tests/upstream.py", "docs/launch.md"):
        assert what in message


def test_an_unknown_line_is_refused_in_one_line_naming_the_known_ones():
    with pytest.raises(PlanError) as err:
        upstream_line("0.3.0")
    assert str(err.value) == (
        "--upstream = 0.3.0: not an upstream line; the known ones are pinned, main-d23761c5"
    )
    assert upstream_line() is PINNED


def test_every_format_declares_the_pins_its_scripts_install():
    assert set(FORMAT_ROLES) == set(formats.names())
    for line in LINES.values():
        assert len(line.roles) == len(line.pins) == len(set(line.roles))
        for fmt in formats.names():
            # The legacy trainer's commit is the same on every line, with its own stack.
            used = PINNED if fmt in versions.FIXED_FORMATS else line
            assert versions.pins_for(fmt, line) == tuple(used.pin(r) for r in FORMAT_ROLES[fmt])


def test_a_pin_says_how_pip_installs_it():
    assert PINNED.pin("specforge").requirement == "specforge==0.2.0"
    assert PINNED.pin("vllm").requirement == "vllm>=0.22.0"
    main = LINES["main-d23761c5"].pin("specforge")
    assert main.requirement == f"specforge @ git+{versions.SPECFORGE_REPO}@{main.version}"
    assert len(main.version) == 40


def test_the_docs_matrix_is_the_table():
    docs = (Path(__file__).parents[2] / "docs" / "launch.md").read_text().splitlines()
    start = docs.index("| package | version | line | used by | checked | stale after | source |")
    rows = []
    for line in docs[start + 2 :]:
        if not line.startswith("|"):
            break
        rows.append(tuple(c.strip().strip("`") for c in line.strip("|").split("|")))
    assert rows == versions.matrix_rows()
