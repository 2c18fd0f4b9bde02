"""Plan files: TOML round trip, atomic saves, and --set edits."""

from __future__ import annotations

import os
import tomllib

import pytest
from dflash_plan.model.basics.errors import PlanError
from dflash_plan.model.basics.tomlfile import SaveError
from dflash_plan.model.inputs.plan import (
    Plan,
    default_plan_text,
    load_plan,
    plan_to_toml,
    save_plan,
)
from pydantic import ValidationError
from support import edit


def test_toml_round_trip(tmp_path, baseline):
    plan = edit(
        baseline,
        target={"gpu": "b200", "count": 6, "tp": 2},
        workload={"target_layer_ids": (1, 5, 9)},
        cost={"usd_per_gpu_hour": {"b200": 6.1}},
    )
    path = tmp_path / "plan.toml"
    save_plan(plan, path)
    assert load_plan(path) == plan
    assert tomllib.loads(path.read_text())["schema_version"] == 1


def test_the_default_plan_file_round_trips(tmp_path, baseline):
    path = tmp_path / "p.toml"
    save_plan(baseline, path)
    assert load_plan(path) == baseline


def test_save_is_atomic_and_keeps_the_old_file_on_failure(tmp_path, baseline, monkeypatch):
    path = tmp_path / "plan.toml"
    save_plan(baseline, path)
    before = path.read_text()
    changed = edit(baseline, target={"count": 5})

    def broken_replace(src, dst):
        raise OSError("disk full")

    monkeypatch.setattr(os, "replace", broken_replace)
    with pytest.raises(OSError):
        save_plan(changed, path)
    assert path.read_text() == before
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.toml"]  # no temp file left


def test_save_keeps_the_file_mode(tmp_path, baseline):
    path = tmp_path / "plan.toml"
    save_plan(baseline, path)
    path.chmod(0o600)
    save_plan(baseline, path)
    assert path.stat().st_mode & 0o777 == 0o600


def test_set_edits_dotted_keys():
    plan = load_plan(
        None,
        [
            "target.count=7",
            "target.gpu=b200",
            "cost.ratio.b200=3.4",
            "calibration.drafter.rtx-pro-6000=40000",
            "name=my plan",
        ],
    )
    assert plan.target.count == 7 and plan.target.gpu == "b200"
    assert plan.cost.ratio["b200"] == 3.4
    assert plan.calibration.drafter["rtx-pro-6000"] == 40000
    assert plan.name == "my plan"


@pytest.mark.parametrize(
    "sets, message",
    [
        (
            ["target.count=0"],
            "--set target.count = 0: must be greater than 0 (a whole number "
            "from 1 to 100,000 GPUs)",
        ),
        (["target.cuont=3"], "unknown key 'target.cuont' (did you mean 'count'?)"),
        (["target.count"], "expected KEY=VALUE"),
        (["target.count.x=1"], "'target.count' is a value, not a table"),
    ],
)
def test_set_errors(sets, message):
    with pytest.raises(PlanError) as err:
        load_plan(None, sets)
    assert message in str(err.value)


def test_plan_models_are_frozen(baseline):
    with pytest.raises(ValidationError):
        baseline.target.count = 9  # type: ignore[misc]
    assert isinstance(baseline, Plan)


def test_new_plan_toml_text_is_readable(baseline):
    assert tomllib.loads(plan_to_toml(baseline))["target"]["count"] == 3


# -- issue 10: saving ---------------------------------------------------------------------


def test_save_through_a_symlink_keeps_the_link(tmp_path, baseline):
    (tmp_path / "real").mkdir()
    real = tmp_path / "real" / "plan.toml"
    save_plan(baseline, real)
    link = tmp_path / "plan.toml"
    link.symlink_to(real)
    save_plan(edit(baseline, target={"count": 5}), link)
    assert link.is_symlink() and link.resolve() == real.resolve()
    assert load_plan(real).target.count == 5
    # The temporary file was made beside the target, not beside the link.
    assert sorted(p.name for p in tmp_path.iterdir()) == ["plan.toml", "real"]


def test_stray_temporary_files_are_recognisable_and_cleaned(tmp_path, baseline):
    path = tmp_path / "plan.toml"
    # What a save killed between writing and renaming leaves (pid 2**22 + 1 is never alive).
    stray = tmp_path / f".plan.toml.dflash-plan-{2**22 + 1}-abc123.tmp"
    stray.write_text("half")
    other = tmp_path / ".other.toml.dflash-plan-4194305-x.tmp"  # another file's: kept
    other.write_text("x")
    save_plan(baseline, path)
    assert sorted(p.name for p in tmp_path.iterdir()) == [other.name, "plan.toml"]


def test_temporary_file_name_while_saving(tmp_path, baseline, monkeypatch):
    seen = []
    real_replace = os.replace

    def spy(src, dst):
        seen.append(os.path.basename(src))
        real_replace(src, dst)

    monkeypatch.setattr(os, "replace", spy)
    save_plan(baseline, tmp_path / "plan.toml")
    assert seen[0].startswith(f".plan.toml.dflash-plan-{os.getpid()}-")
    assert seen[0].endswith(".tmp")


def test_save_errors_are_one_line_plan_errors(tmp_path, baseline, monkeypatch):
    def broken(src, dst):
        raise OSError(28, "No space left on device")

    monkeypatch.setattr(os, "replace", broken)
    with pytest.raises(SaveError) as err:
        save_plan(baseline, tmp_path / "plan.toml")
    assert isinstance(err.value, PlanError) and isinstance(err.value, OSError)
    assert str(err.value) == f"{tmp_path / 'plan.toml'}: cannot write: no space left on device"


def test_a_byte_order_mark_is_accepted(tmp_path, baseline):
    path = tmp_path / "plan.toml"
    path.write_bytes(b"\xef\xbb\xbf" + default_plan_text().encode())
    assert load_plan(path) == baseline


@pytest.mark.parametrize("value", ["true", "1.0", '"1"', "2"])
def test_schema_version_must_be_the_integer_1(tmp_path, value):
    path = tmp_path / "plan.toml"
    path.write_text(default_plan_text().replace("schema_version = 1", f"schema_version = {value}"))
    with pytest.raises(PlanError, match=r"schema_version = .*reads schema_version 1") as err:
        load_plan(path)
    assert err.value.key == "schema_version"


# -- issue 7: saving keeps the user's comments and key order ------------------------------

USER_PLAN = """# my cluster plan
schema_version = 1
name = "mine"

[drafter]           # drafters first: I care about them
count = 2
gpu = "b200"        # the fast one

[target]
count = 6
gpu = "b200"
# tp stays at 1 for now

[workload]
samples = 1_000_000   # after dedup
num_anchors = 128

[calibration.target]
b200 = 20_000.0   # measured 2026-10-01
"""


def test_saving_keeps_comments_order_and_spelling(tmp_path):
    path = tmp_path / "plan.toml"
    path.write_text(USER_PLAN)
    plan = load_plan(path)
    changed = edit(
        plan,
        target={"count": 7},
        workload={"epochs": 3},
        calibration={"target": {}, "drafter": {"b200": 30_000.0}},
    )
    save_plan(changed, path)
    text = path.read_text()
    assert load_plan(path) == changed
    for kept in (
        "# my cluster plan",
        "# drafters first: I care about them",
        "# the fast one",
        "# tp stays at 1 for now",
        "samples = 1_000_000   # after dedup",
    ):
        assert kept in text
    assert text.index("[drafter]") < text.index("[target]") < text.index("[workload]")
    assert "count = 7" in text and "epochs = 3" in text
    assert "20_000" not in text and "b200 = 30000.0" in text
    # Keys left at their defaults stay out of the file.
    assert "max_length" not in text and "[launch]" not in text


def test_save_as_edits_the_text_the_plan_came_from(tmp_path):
    source = tmp_path / "a.toml"
    source.write_text(USER_PLAN)
    plan = edit(load_plan(source), name="copy")
    save_plan(plan, tmp_path / "b.toml", base_text=USER_PLAN)
    text = (tmp_path / "b.toml").read_text()
    assert "# my cluster plan" in text and 'name = "copy"' in text
    assert load_plan(tmp_path / "b.toml") == plan


def test_a_fresh_document_when_asked_or_when_the_old_file_is_not_a_plan(tmp_path, baseline):
    path = tmp_path / "plan.toml"
    path.write_text("not [ a plan")
    save_plan(baseline, path)
    assert load_plan(path) == baseline
    save_plan(baseline, path, base_text="")
    assert "#" not in path.read_text()


@pytest.mark.parametrize(
    "sets, message",
    [
        (
            ["workload.avg_sample_tokens=5000"],
            "--set workload: avg_sample_tokens (5000) exceeds max_length (3072)",
        ),
        (["target.tp=2"], "--set target: count 3 is not a multiple of tp 2"),
        (
            ["calibration.target.b200={tokens_per_s=-3}"],
            "--set calibration.target.b200.tokens_per_s = -3: must be a number from 1 to "
            "100,000,000 tokens/s per GPU",
        ),
        (
            ["workload.target_layer_ids=[1, 10000]"],
            "--set workload.target_layer_ids[1] = 10000: must be a whole number from 0 to 9,999",
        ),
        (["launch.format=x"], "--set launch.format = 'x': choose one of specforge, "),
        (["name=true"], "--set name = true: must be text (in quotes)"),
    ],
)
def test_set_errors_name_the_key_and_the_range(sets, message):
    with pytest.raises(PlanError) as err:
        load_plan(None, sets)
    assert message in str(err.value)
    assert err.value.key is not None and sets[0].startswith(err.value.key.split(".")[0])


# --- GPUs named as people write them ---------------------------------------------------


def _json(capsys, argv):
    import json

    from dflash_plan.tui.cli import main

    assert main(argv) == 0, capsys.readouterr().err
    return json.loads(capsys.readouterr().out)


@pytest.mark.parametrize("name", ["B200", " B200 ", "b200"])
def test_set_gpu_as_sold_is_the_catalog_key(capsys, name):
    """`--set target.gpu=B200` is the b200 (it was "unknown GPU 'B200' (did you mean
    'h200'?)"): the same projection as the key itself."""
    doc = _json(capsys, ["project", "--json", "--set", f"target.gpu={name}"])
    key = _json(capsys, ["project", "--json", "--set", "target.gpu=b200"])
    assert doc["target"]["gpu"] == "b200"
    assert doc["tokens_per_s"] == key["tokens_per_s"] and doc["total_cost"] == key["total_cost"]


def test_plan_files_name_gpus_by_display_name(tmp_path, capsys):
    """A plan file, a --baseline and compare take the catalog's display names, in any
    case; `new` writes the keys."""
    from dflash_plan.tui.cli import main

    text = default_plan_text().replace('gpu = "rtx-pro-6000"', 'gpu = "RTX PRO 6000"', 1)
    text = text.replace("[cost.usd_per_gpu_hour]\n", '[cost.usd_per_gpu_hour]\n"H200 SXM" = 4.0\n')
    assert 'gpu = "RTX PRO 6000"' in text and '"H200 SXM" = 4.0' in text
    path = tmp_path / "named.toml"
    path.write_text(text)
    assert main(["check", str(path)]) == 0
    assert capsys.readouterr().out.startswith(f"{path}: ok")
    doc = _json(capsys, ["project", "--json", str(path), "--baseline", str(path)])
    assert doc["target"]["gpu"] == "rtx-pro-6000"
    assert doc["versus_baseline"]["speedup"] == 1
    other = tmp_path / "h200.toml"
    other.write_text(text.replace('gpu = "RTX PRO 6000"', 'gpu = "h200 sxm"', 1))
    rows = _json(capsys, ["compare", "--json", str(path), str(other)])
    h200 = rows[1]["projection"]
    assert h200["target"]["gpu"] == "h200"
    assert h200["prices"]["h200"]["usd_per_gpu_hour"] == 4.0
    assert h200["prices"]["h200"]["source"] == "plan usd"
    out = tmp_path / "new.toml"
    assert main(["new", str(out), "--set", "target.gpu=B300", "--set", "cost.ratio.B300=3.6"]) == 0
    written = tomllib.loads(out.read_text())
    assert written["target"]["gpu"] == "b300" and written["cost"]["ratio"]["b300"] == 3.6


def test_set_a_price_of_a_gpu_as_sold_sets_the_plans_own(capsys):
    """The built-in plan prices b200 at 3.4x: `--set cost.ratio.B200=3` changes that
    ratio, not a second one beside it."""
    argv = ["project", "--json", "--set", "target.gpu=b200", "--set", "cost.ratio.B200=3"]
    assert _json(capsys, argv)["prices"]["b200"]["ratio"] == 3


def test_a_table_naming_one_gpu_twice_is_an_error(tmp_path, capsys):
    from dflash_plan.tui.cli import main

    path = tmp_path / "twice.toml"
    text = default_plan_text().replace(
        "[cost.usd_per_gpu_hour]\n", "[cost.usd_per_gpu_hour]\nB300 = 6.0\nb300 = 5.0\n"
    )
    path.write_text(text)
    assert main(["check", str(path)]) == 2
    err = capsys.readouterr().err.strip()
    assert err == (
        "dflash-plan: cost.usd_per_gpu_hour.b300: names the GPU b300, as "
        "cost.usd_per_gpu_hour.B300 does: keep one"
    )


@pytest.mark.parametrize(
    "name, hint",
    [("B20", "'b200'"), ("H100", "'h100-sxm' or 'h100-pcie'"), ("RTX PRO 600", "'rtx-pro-6000'")],
)
def test_did_you_mean_suggests_the_key(capsys, name, hint):
    from dflash_plan.tui.cli import main

    assert main(["project", "--set", f"target.gpu={name}"]) == 2
    err = capsys.readouterr().err
    assert f"unknown GPU '{name}' (did you mean {hint}?)" in err, err


def test_gpu_flags_take_gpus_as_sold(capsys):
    """search --gpus, probe --gpu and prices --gpu look GPUs up as plans do."""
    from dflash_plan.tui.cli import main

    doc = _json(capsys, ["search", "--json", "--gpus", "B200,H200 SXM", "--max-gpus", "8"])
    used = {c["plan"]["target"]["gpu"] for c in doc["front"]}
    assert used and used <= {"b200", "h200"}
    assert main(["probe", "--gpu", "B200"]) == 0
    assert "probe b200" in capsys.readouterr().err
    offers = _json(capsys, ["prices", "--json", "--gpu", "B200"])
    assert offers and {o["gpu"] for o in offers} == {"b200"}
