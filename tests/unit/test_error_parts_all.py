"""Every PlanError the bad-input cases raise carries its parts: where and reason always,
and a message made of them, so that the field the app marks shows the reason and no
reader parses the message (issue 31). The cases are test_bad_input's own, run again here
with every PlanError recorded as it is made."""

from __future__ import annotations

import inspect
import itertools

import pytest
import test_bad_input
from dflash_plan.model.basics.errors import PlanError
from dflash_plan.tui.config import load_catalog
from dflash_plan.tui.state import Planner, plain, reason_of


def _cases() -> list[object]:
    """(test name, its parameters) for every case of test_bad_input's tests."""
    cases: list[object] = []
    for name, func in inspect.getmembers(test_bad_input, inspect.isfunction):
        if not name.startswith("test_") or func.__module__ != test_bad_input.__name__:
            continue
        marks = [m for m in getattr(func, "pytestmark", []) if m.name == "parametrize"]
        grids = []
        for mark in marks:
            names = [n.strip() for n in mark.args[0].split(",")]
            rows = [row if len(names) > 1 else (row,) for row in mark.args[1]]
            grids.append([dict(zip(names, row, strict=True)) for row in rows])
        for i, combo in enumerate(itertools.product(*grids)):
            params = {k: v for part in combo for k, v in part.items()}
            cases.append(pytest.param(name, params, id=f"{name}-{i}"))
    return cases


@pytest.fixture
def made(monkeypatch) -> list[PlanError]:
    """Every PlanError (SaveError too) made while the test runs."""
    errors: list[PlanError] = []
    init = PlanError.__init__

    def recording(self: PlanError, *args: object, **kwargs: object) -> None:
        init(self, *args, **kwargs)  # type: ignore[arg-type]
        errors.append(self)

    monkeypatch.setattr(PlanError, "__init__", recording)
    return errors


def check_parts(err: PlanError) -> None:
    """One error's parts against its message."""
    message = str(err)
    assert err.where and err.reason, message
    # The message ends with the reason: the field shows what the line says last.
    assert message.endswith(err.reason), (message, err.reason)
    # The detail is the message without its leading place (`file: `, `--flag `), when it
    # leads with one.
    assert message in (err.detail, f"{err.where}: {err.detail}", f"{err.where} {err.detail}")
    assert err.value is None or err.value in message, (message, err.value)
    assert reason_of(err) == plain(err.reason)


@pytest.mark.parametrize("name, params", _cases())
def test_every_bad_input_error_carries_its_parts(request, made, name, params):
    func = getattr(test_bad_input, name)
    wanted = inspect.signature(func).parameters
    fixtures = {k: request.getfixturevalue(k) for k in wanted if k not in params}
    func(**params, **fixtures)
    for err in made:
        check_parts(err)


def test_the_walk_sees_the_errors(request, made):
    # The walk above is not empty: the bad plan files' cases each make errors.
    capsys, tmp_path = request.getfixturevalue("capsys"), request.getfixturevalue("tmp_path")
    test_bad_input.test_missing_file(tmp_path, capsys)
    assert made and made[0].where == str(tmp_path / "nope.toml")


BAD_VALUES = [  # the key, the value typed into its field, the same given to --set
    ("target.count", -2, "target.count=-2"),
    ("target.count", "three", 'target.count="three"'),
    ("target.gpu", "b20", 'target.gpu="b20"'),
    ("workload.target_model", "qwen3-8", 'workload.target_model="qwen3-8"'),
    ("workload.avg_sample_tokens", 5000, "workload.avg_sample_tokens=5000"),
    ("target.tp", 2, "target.tp=2"),
    ("target.tp", 16, "target.tp=16"),
    ("cost.ratio", {"b200": -1.0}, "cost.ratio={b200=-1.0}"),
    ("regenerate.gpu", "nope", 'regenerate.gpu="nope"'),
]


@pytest.mark.parametrize("key, value, cli", BAD_VALUES)
def test_the_field_the_app_marks_shows_the_reason(capsys, made, key, value, cli):
    # A bad value typed into the app: its field shows the reason of the error the
    # projection raised, and the same value given to the CLI ends its one line with it.
    state = Planner(load_catalog())
    if key == "regenerate.gpu":
        state.edit("workload.regenerate", True)
    state.edit(key, value)
    state.recompute()
    assert state.stale and made
    err = made[-1]
    check_parts(err)
    assert list(state.errors.values()) == [plain(err.reason)]
    made.clear()
    sets = ["--set", "workload.regenerate=true"] if key == "regenerate.gpu" else []
    line = test_bad_input.fail(capsys, ["project", *sets, "--set", cli])
    assert line.endswith(made[-1].reason or "-") and made[-1].reason == err.reason
