"""One reader for typed numbers (model/basics/numbers.py): the app's fields and --set accept and
refuse the same text with the same words."""

from __future__ import annotations

import json
import subprocess
import sys

import pytest
from dflash_plan.model.basics.numbers import NumberError, comma_message, parse_number, parse_whole
from dflash_plan.tui.fields import FIELDS, FieldError, parse
from hypothesis import given
from hypothesis import strategies as st

CLI = [sys.executable, "-m", "dflash_plan.tui.cli"]


@pytest.mark.parametrize(
    ("typed", "value"),
    [
        ("7", 7),
        (" 800_000 ", 800_000),
        ("1e6", 1_000_000),
        ("1.5e3", 1500),
        ("7.0", 7),
        ("2.5", 2.5),
        ("-3", -3),
        (".5", 0.5),
        ("1E-3", 0.001),
        ("3.", 3),
    ],
)
def test_numbers_read_exactly(typed, value):
    got = parse_number(typed)
    assert got == value and type(got) is type(value)


def test_whole_is_decided_in_decimal_not_binary():
    # 1.0000000000000001e6 rounds to 1e6 as a binary float; it is not a whole number.
    assert isinstance(parse_number("1.0000000000000001e6"), float)
    with pytest.raises(NumberError, match="not a whole number"):
        parse_whole("1.0000000000000001e6")


@pytest.mark.parametrize("typed", ["3,4", "1,000", "1,000,000", "2,5e3"])
def test_a_comma_is_refused_with_its_reason(typed):
    with pytest.raises(NumberError) as err:
        parse_number(typed)
    assert str(err.value) == comma_message(typed) and "use a dot" in str(err.value)


@pytest.mark.parametrize("typed", ["abc", "1e", "--1", "1_", "nan", "inf", "0x10", "1e999"])
def test_not_numbers(typed):
    with pytest.raises(NumberError):
        parse_number(typed)


@given(st.integers(min_value=1, max_value=10**12))
def test_whole_numbers_round_trip_in_every_spelling(n):
    assert parse_whole(str(n)) == n
    assert parse_whole(f"{n:_}") == n
    digits = str(n).rstrip("0")
    assert parse_whole(f"{digits[0]}.{digits[1:] or '0'}e{len(str(n)) - 1}") == n


def test_the_app_and_the_command_line_say_the_same():
    with pytest.raises(FieldError) as field_err:
        parse(FIELDS["price.target.ratio"], "3,4")
    cli = subprocess.run(
        [*CLI, "project", "--set", "cost.ratio.b200=3,4"], capture_output=True, text=True
    )
    assert cli.returncode == 2 and str(field_err.value) in cli.stderr
    assert len(cli.stderr.strip().splitlines()) == 1
    # Scientific notation for a whole number: the app's field and --set.
    assert parse(FIELDS["workload.samples"], "1e6") == 1_000_000
    out = subprocess.run(
        [*CLI, "project", "--json", "--set", "workload.samples=1e6"],
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    doc = json.loads(out)
    # 1e6 samples x 2,344 tokens = 2.344 G tokens per epoch.
    assert doc["tokens_per_epoch"] == 1_000_000 * 2344


def test_a_number_in_quotes_in_a_plan_file_stays_an_error(tmp_path):
    plan = tmp_path / "p.toml"
    subprocess.run([*CLI, "new", str(plan)], check=True, capture_output=True)
    plan.write_text(plan.read_text().replace("samples = 800_000", 'samples = "800000"'))
    cli = subprocess.run([*CLI, "check", str(plan)], capture_output=True, text=True)
    assert cli.returncode == 2 and "workload.samples" in cli.stderr


def test_a_percent_over_no_cases_is_a_dash_not_nan():
    # validate's acceptance/serving tier has no cross-validatable case: its median is NaN.
    from dflash_plan.tui import format as fmt

    assert fmt.percent(float("nan")) == fmt.DASH
    assert fmt.percent(0.166) == "17 %"
    assert fmt.percent(0.021) == "2.1 %"
