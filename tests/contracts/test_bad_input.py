"""Every bad input gets exit code 2 and one line on stderr naming where and what is allowed."""

from __future__ import annotations

import errno
import json
import os
import tempfile

import pytest
from dflash_plan.tui.cli import main

GOOD = """schema_version = 1
[workload]
target_model = "qwen3-8b"
[target]
gpu = "rtx-pro-6000"
count = 3
[drafter]
gpu = "rtx-pro-6000"
count = 1
"""


def fail(capsys, argv):
    code = main(argv)
    out, err = capsys.readouterr()
    assert code == 2, out + err
    lines = err.strip().splitlines()
    assert len(lines) == 1, err
    assert "Traceback" not in err
    return lines[0]


def write(tmp_path, text, name="plan.toml"):
    path = tmp_path / name
    path.write_text(text)
    return str(path)


def test_good_plan_passes_check(tmp_path, capsys):
    assert main(["check", write(tmp_path, GOOD)]) == 0
    assert "ok" in capsys.readouterr().out


@pytest.mark.parametrize(
    "old, new, expected",
    [
        ("count = 3", "cuont = 3", [":6: unknown key 'target.cuont' (did you mean 'count'?)"]),
        (
            "count = 3",
            'count = "three"',
            [":6: target.count = 'three'", "whole number", "from 1 to 100,000 GPUs"],
        ),
        ("count = 3", "count = 0", [":6: target.count = 0", "greater than 0"]),
        ("count = 3", "count = -2", ["target.count = -2", "greater than 0"]),
        ("count = 3", "count = 3\ntp = 2", ["target", "count 3 is not a multiple of tp 2"]),
        (
            'gpu = "rtx-pro-6000"\ncount = 3',
            'gpu = "b20"\ncount = 3',
            ["target.gpu: unknown GPU 'b20' (did you mean 'b200'?)"],
        ),
        (
            '"qwen3-8b"',
            '"qwen3-8"',
            ["workload.target_model = 'qwen3-8'", "did you mean 'qwen3-8b'"],
        ),
        ("[drafter]", "[drafter", ["not valid TOML", "line 7"]),
        (
            "schema_version = 1",
            "schema_version = 2",
            ["schema_version = 2", "reads schema_version 1"],
        ),
        (
            "[workload]",
            "[workload]\navg_sample_tokens = 5000",
            ["avg_sample_tokens (5000) exceeds max_length (3072)"],
        ),
        ("[workload]", "[workloads]", ["unknown key 'workloads' (did you mean 'workload'?)"]),
    ],
)
def test_bad_plan_files(tmp_path, capsys, old, new, expected):
    path = write(tmp_path, GOOD.replace(old, new, 1))
    for command in (["check", path], ["project", path]):
        line = fail(capsys, command)
        assert line.startswith("dflash-plan: ")
        for part in expected:
            assert part in line, line
        if "unknown GPU" not in line and "target_model" not in line:
            assert path in line


def test_missing_file(tmp_path, capsys):
    line = fail(capsys, ["project", str(tmp_path / "nope.toml")])
    assert "nope.toml: no such file" in line


def test_missing_config_json(tmp_path, capsys):
    path = write(tmp_path, GOOD.replace('"qwen3-8b"', '"models/config.json"'))
    line = fail(capsys, ["project", path])
    assert "config.json: no such file" in line


def test_bad_set_value(capsys):
    line = fail(capsys, ["project", "--set", "target.tp=two"])
    assert "--set target.tp = 'two'" in line and "whole number from 1 to 128" in line


def test_bad_hardware_file(tmp_path, capsys):
    hw = write(tmp_path, "[my-gpu]\nname = 'X'\nbf16_tflops = -5\n", "hw.toml")
    line = fail(capsys, ["project", "--hardware", hw])
    assert "hw.toml:3: my-gpu.bf16_tflops = -5" in line and "from 0.1 to 100,000 TFLOPS" in line


def test_hardware_file_unknown_field(tmp_path, capsys):
    hw = write(tmp_path, "[b200]\nprice = 5\n", "hw.toml")
    line = fail(capsys, ["gpus", "--hardware", hw])
    assert "unknown key 'b200.price'" in line


def test_tp_larger_than_a_node(capsys):
    line = fail(capsys, ["project", "--set", "target.count=16", "--set", "target.tp=16"])
    assert "target.tp = 16" in line and "inside one node" in line


def test_new_refuses_to_overwrite(tmp_path, capsys):
    path = write(tmp_path, "keep me")
    line = fail(capsys, ["new", path])
    assert "already exists" in line
    assert (tmp_path / "plan.toml").read_text() == "keep me"


# -- issue 10: crashes and hangs on hostile input -----------------------------------------

DEEP = "[" * 5000
HUGE_INT = "1" * 4301
HW = """[my-gpu]
name = "My GPU"
bf16_tflops = 500
memory_gb = 80
mem_bw_tb_s = 2.0
link = { kind = "pcie", gb_per_s = 50 }
gpus_per_node = 8
network_gbps_per_gpu = 25
tdp_w = 400
usd_per_gpu_hour = 2.0
prefill_efficiency = 0.45
training_efficiency = 0.375
"""


@pytest.mark.parametrize(
    "text, expected",
    [
        (f"x = {DEEP}", "nested too deeply"),
        (DEEP, "not valid TOML"),
        (f"x = {HUGE_INT}", "more than 4,300 digits"),
    ],
)
def test_toml_that_python_cannot_parse(tmp_path, capsys, text, expected):
    plan = write(tmp_path, text)
    assert expected in fail(capsys, ["check", plan])
    hw = write(tmp_path, text, "hw.toml")
    assert expected in fail(capsys, ["gpus", "--hardware", hw])


@pytest.mark.parametrize("value", [DEEP, HUGE_INT, "1e400", "inf", "nan", "-inf"])
def test_set_values_python_cannot_parse(capsys, value):
    line = fail(capsys, ["project", "--set", f"target.count={value}"])
    assert line.startswith("dflash-plan: --set target.count = ")
    assert "from 1 to 100,000 GPUs" in line


@pytest.mark.parametrize(
    "key, value, expected",
    [
        ("workload.epochs", "1" + "0" * 400, "from 1 to 1,000 epochs"),
        ("target.count", str(10**19), "from 1 to 100,000 GPUs"),
        ("target.count", str(3 * 10**7), "from 1 to 100,000 GPUs"),
        ("drafter.count", str(10**6), "from 1 to 100,000 GPUs"),
        ("workload.samples", str(10**11), "from 1 to 10,000,000,000 samples"),
        ("workload.max_length", str(10**7), "from 1 to 1,048,576 tokens"),
        ("workload.num_anchors", "0", "greater than 0"),
        ("workload.block_size", "1000", "from 1 to 256 tokens"),
        ("workload.draft_layers", "300", "from 1 to 256 layers"),
        ("workload.target_layer_ids", "[1, 100000]", "from 0 to 9,999"),
        ("drafter.batch_size", "100000", "from 1 to 4,096 samples"),
        ("target.tp", "true", "whole number"),
        ("calibration.target.rtx-pro-6000", "5e-324", "from 1 to 100,000,000 tokens/s per GPU"),
        ("calibration.target.rtx-pro-6000", "inf", "finite number"),
        ("calibration.drafter.rtx-pro-6000", "1e308", "from 1 to 100,000,000 tokens/s per GPU"),
        ("calibration.drafter.rtx-pro-6000", "nan", "finite number"),
        ("cost.usd_per_gpu_hour.rtx-pro-6000", "inf", "from 0.001 to 1,000 USD per GPU-hour"),
        ("cost.usd_per_gpu_hour.rtx-pro-6000", "1e-300", "from 0.001 to 1,000 USD per GPU-hour"),
        ("cost.ratio.b200", "1e308", "from 0.001 to 1,000"),
        ("name", '"a\\nb"', "one line"),
    ],
)
def test_every_number_has_a_documented_bound(capsys, key, value, expected):
    line = fail(capsys, ["project", "--set", f"{key}={value}"])
    assert f"--set {key}" in line and expected in line, line


@pytest.mark.parametrize(
    "field, value, expected",
    [
        ("bf16_tflops", "1e-310", "from 0.1 to 100,000 TFLOPS"),
        ("bf16_tflops", "5e-324", "from 0.1 to 100,000 TFLOPS"),
        ("bf16_tflops", "inf", "finite number"),
        ("memory_gb", "5e-324", "from 1 to 100,000 GB"),
        ("mem_bw_tb_s", "nan", "finite number"),
        ("gpus_per_node", "100000", "from 1 to 1,024 GPUs"),
        ("tdp_w", "1e400", "finite number"),
        ("prefill_efficiency", "1e-300", "from 0.001 to 1"),
        ("usd_per_gpu_hour", "inf", "finite number"),
        ("name", '"[/bold]\\u0007"', "one line"),
    ],
)
def test_hardware_figures_are_finite_and_in_range(tmp_path, capsys, field, value, expected):
    text = "\n".join(
        f"{field} = {value}" if line.startswith(f"{field} =") else line for line in HW.splitlines()
    )
    hw = write(tmp_path, text, "hw.toml")
    line = fail(capsys, ["project", "--hardware", hw, "--set", "target.gpu=my-gpu"])
    assert f"my-gpu.{field} = " in line and expected in line, line


def test_a_sane_hardware_file_is_accepted(tmp_path, capsys):
    hw = write(tmp_path, HW, "hw.toml")
    assert main(["project", "--hardware", hw, "--set", "target.gpu=my-gpu"]) == 0


def test_hardware_table_with_a_key_field(tmp_path, capsys):
    hw = write(tmp_path, HW + 'key = "other"\n', "hw.toml")
    line = fail(capsys, ["gpus", "--hardware", hw])
    assert "hw.toml:13: my-gpu.key: not a GPU field" in line


@pytest.mark.parametrize("key", ["My-GPU", "gpu;rm -rf", "-gpu", "a b", "gpu$(x)", "é"])
def test_catalog_keys_are_restricted(tmp_path, capsys, key):
    hw = write(tmp_path, HW.replace("[my-gpu]", f'["{key}"]'), "hw.toml")
    line = fail(capsys, ["gpus", "--hardware", hw])
    assert "hw.toml:1: GPU key" in line and "lower-case letters, digits, '.' and '-'" in line


@pytest.mark.parametrize("text", ["[/bold]", "[red]x", "[link=file:///etc]a[/link]", "\\[x]"])
def test_markup_in_user_text_is_printed_as_text(tmp_path, capsys, text):
    hw = write(tmp_path, HW.replace('"My GPU"', json.dumps(text)), "hw.toml")
    argv = [
        "project",
        "--hardware",
        hw,
        "--set",
        "target.gpu=my-gpu",
        "--set",
        f"name={json.dumps(text)}",
    ]
    assert main(argv) == 0, capsys.readouterr().err
    out = capsys.readouterr().out
    assert out.splitlines()[0].startswith(text)
    assert main([*argv, "--baseline"]) == 0
    assert main(["gpus", "--hardware", hw]) == 0
    assert text in capsys.readouterr().out


def test_project_text_for_a_gpu_without_a_price(capsys):
    # mi355x has no catalog price: the cost is a dash and a warning says what to set.
    assert main(["project", "--set", "target.gpu=mi355x"]) == 0
    out = capsys.readouterr().out
    assert "total cost  —" in out and "no price for MI355X" in out


def _raise(code):
    def broken(*args, **kwargs):
        raise OSError(code, os.strerror(code))

    return broken


@pytest.mark.parametrize(
    "code, reason",
    [
        (errno.EROFS, "read-only file system"),
        (errno.ENOSPC, "no space left on device"),
        (errno.EACCES, "permission denied"),
    ],
)
@pytest.mark.parametrize("where", ["mkstemp", "fsync", "replace"])
def test_new_and_launch_cannot_write(tmp_path, capsys, monkeypatch, code, reason, where):
    target = {"mkstemp": (tempfile, "mkstemp"), "fsync": (os, "fsync"), "replace": (os, "replace")}[
        where
    ]
    monkeypatch.setattr(*target, _raise(code))
    for argv in (["new", str(tmp_path / "plan.toml")], ["launch", "-o", str(tmp_path / "run.sh")]):
        line = fail(capsys, argv)
        assert f"cannot write: {reason}" in line
    assert list(tmp_path.iterdir()) == []  # nothing half-written, no temp file


@pytest.mark.parametrize(
    "make, expected",
    [
        (lambda p: p / "no" / "such" / "plan.toml", "does not exist"),
        (lambda p: (p / "folder").mkdir() or p / "folder", "is a folder"),
    ],
)
def test_new_and_launch_bad_targets(tmp_path, capsys, make, expected):
    path = str(make(tmp_path))
    assert expected in fail(capsys, ["new", path])
    assert expected in fail(capsys, ["launch", "-o", path])
    assert expected in fail(capsys, ["new", "--force", path])


# Linux file systems (ext4, xfs, btrfs, tmpfs) allow at most 255 bytes in one name
# (NAME_MAX); a name of 300 is refused with ENAMETOOLONG before anything is written.
LONG_NAME = "a" * 300


@pytest.mark.parametrize(
    "argv",
    [
        ["new", "{long}.toml"],
        ["new", "--force", "{long}.toml"],
        ["launch", "-o", "{long}.sh"],
        ["probe", "--gpu", "b200", "-o", "{long}.sh"],
        ["search", "--gpus", "b200", "--max-gpus", "4", "-o", "{long}"],
        ["search", "--gpus", "b200", "--max-gpus", "4", "-o", "{long}/winners"],
    ],
)
def test_a_file_name_over_255_bytes_is_one_line(tmp_path, capsys, argv):
    argv = [a.format(long=tmp_path / LONG_NAME) for a in argv]
    name = next(part for a in argv for part in a.split("/") if LONG_NAME in part)
    line = fail(capsys, argv)
    assert f"name too long ({len(name)} bytes in one name; at most 255)" in line
    assert list(tmp_path.iterdir()) == []


def test_a_search_winner_that_cannot_be_written_is_named_once(tmp_path, capsys):
    (tmp_path / "cheapest_within_deadline.toml").mkdir()
    argv = ["search", "--gpus", "b200", "--max-gpus", "4", "--deadline-days", "100"]
    line = fail(capsys, [*argv, "-o", str(tmp_path)])
    assert line == (
        f"dflash-plan: {tmp_path / 'cheapest_within_deadline.toml'}: is a folder, not a file"
    )


def test_a_name_of_255_bytes_is_written_whole(tmp_path, capsys):
    """The temporary file beside it has a longer name: it is cut, the file is not."""
    path = tmp_path / ("b" * 250 + ".toml")
    assert main(["new", str(path)]) == 0
    assert path.is_file() and [p.name for p in tmp_path.iterdir()] == [path.name]


def test_a_config_folder_that_cannot_be_created_is_one_line(tmp_path, capsys, monkeypatch):
    from pathlib import Path

    (tmp_path / "file").write_text("")
    monkeypatch.setenv("DFLASH_PLAN_CONFIG_DIR", str(tmp_path / "file" / "config"))
    verda = Path(__file__).parents[1] / "data" / "catalogs" / "verda" / "vms.csv"
    line = fail(capsys, ["prices", "--import", str(verda), "--date", "2026-11-30"])
    assert line == (
        f"dflash-plan: {tmp_path / 'file' / 'config'}: cannot create the folder: "
        f"{tmp_path / 'file'} is a file"
    )


@pytest.mark.parametrize(
    "argv", [["project"], ["launch"], ["gpus"], ["offers"], ["prices"], ["check", "PLAN"]]
)
def test_a_config_folder_that_cannot_be_read_is_one_line(tmp_path, capsys, monkeypatch, argv):
    """Every command reads the user config: a folder with a name over 255 bytes was a
    traceback in each. One line names the variable, its value cut short and the reason."""
    plan = tmp_path / "plan.toml"
    assert main(["new", str(plan)]) == 0
    argv = [str(plan) if a == "PLAN" else a for a in argv]
    folder = tmp_path / ("c" * 300) / "config"
    monkeypatch.setenv("DFLASH_PLAN_CONFIG_DIR", str(folder))
    line = fail(capsys, argv)
    assert line == (
        f"dflash-plan: DFLASH_PLAN_CONFIG_DIR={cut(str(folder))}: cannot read hardware.toml "
        "there: name too long (300 bytes in one name; at most 255)"
    )


def cut(value: str) -> str:
    """A value as errors quote it: its repr, past 60 characters cut and counted."""
    text = repr(value)
    return text if len(text) <= 60 else f"{text[:60]}... ({len(text):,} characters)"


@pytest.mark.parametrize(
    "make, reason",
    [
        # A file where the folder should be was read as no config at all.
        (lambda d: d.write_text(""), "a part of the path is a file, not a folder"),
        (lambda d: (d / "hardware.toml").mkdir(parents=True), "not a regular file"),
    ],
)
def test_a_config_folder_that_is_not_one_is_said(tmp_path, capsys, monkeypatch, make, reason):
    folder = tmp_path / "config"
    make(folder)
    monkeypatch.setenv("DFLASH_PLAN_CONFIG_DIR", str(folder))
    line = fail(capsys, ["project"])
    assert line == (
        f"dflash-plan: DFLASH_PLAN_CONFIG_DIR={cut(str(folder))}: cannot read hardware.toml "
        f"there: {reason}"
    )


def test_a_link_to_a_device_or_pipe_is_not_replaced(tmp_path, capsys):
    fifo = tmp_path / "pipe"
    os.mkfifo(fifo)
    link = tmp_path / "plan.toml"
    link.symlink_to(fifo)
    for argv in (["new", "--force", str(link)], ["new", "--force", str(fifo)]):
        assert "not a regular file" in fail(capsys, argv)
    assert link.is_symlink() and not fifo.is_file()


def test_limits_doc_lists_every_bound():
    """docs/limits.md states every range the code enforces, in the code's own words."""
    from pathlib import Path

    from dflash_plan.model.basics import validation

    text = (Path(__file__).parents[2] / "docs" / "limits.md").read_text()
    for name, bound in validation.ALL_BOUNDS.items():
        assert bound.describe() in text, (name, bound.describe())


@pytest.mark.parametrize(
    "sets", [["target=0", "target.count=\r"], ["name=a\nb"], ["na\nme=x"], ["target.count\r\n"]]
)
def test_user_text_with_line_breaks_stays_one_line(capsys, sets):
    """Found by scripts/fuzz.py: a carriage return in --set made a second stderr line."""
    argv = ["project"]
    for item in sets:
        argv += ["--set", item]
    fail(capsys, argv)


def test_a_schema_error_carries_its_parts(tmp_path):
    from dflash_plan.model.basics.errors import PlanError
    from dflash_plan.model.inputs.plan import load_plan

    path = tmp_path / "plan.toml"
    path.write_text("[target]\ncount = -3\n")
    with pytest.raises(PlanError) as caught:
        load_plan(path)
    err = caught.value
    assert (err.key, err.where, err.value) == ("target.count", f"{path}:2", "-3")
    assert err.reason and str(err) == f"{path}:2: target.count = -3: {err.reason}"
    with pytest.raises(PlanError) as caught:
        load_plan(path, ["target.count=-4"])
    assert str(caught.value) == f"--set target.count = -4: {caught.value.reason}"


def test_a_rule_error_carries_its_parts(catalog, baseline):
    from dflash_plan.model.basics.errors import PlanError
    from dflash_plan.model.core.resolve import resolve
    from support import edit

    with pytest.raises(PlanError) as caught:
        resolve(edit(baseline, target={"tp": 3, "count": 3}), catalog)
    err = caught.value
    assert (err.key, err.value) == ("target.tp", "3")
    assert err.reason is not None and err.reason.startswith("a TP group sits inside one node")
    assert str(err) == f"target.tp = 3: {err.reason}"


@pytest.mark.parametrize("value", ['"yes"', '"off"', '"0"', "1", "0", '"true"'])
def test_plan_booleans_are_toml_true_or_false(tmp_path, capsys, value):
    """A true/false key takes TOML's true or false only, as its message says (pydantic
    alone took "yes", "off", "0" and 1)."""
    path = write(tmp_path, GOOD.replace("[workload]", f"[workload]\nregenerate = {value}"))
    line = fail(capsys, ["check", path])
    assert f":3: workload.regenerate = {value.replace(chr(34), chr(39))}" in line, line
    assert line.endswith("must be true or false"), line
    calibration = f"\n[calibration.target.rtx-pro-6000]\ntokens_per_s = 5000\ngpu_busy = {value}\n"
    line = fail(capsys, ["check", write(tmp_path, GOOD + calibration)])
    assert "gpu_busy" in line and line.endswith("must be true or false"), line


@pytest.mark.parametrize("value", ["yes", "off", "0", "1", "True", '"true"'])
def test_set_booleans_are_true_or_false(capsys, value):
    line = fail(capsys, ["project", "--json", "--set", f"workload.regenerate={value}"])
    assert line.startswith("dflash-plan: --set workload.regenerate = "), line
    assert line.endswith("must be true or false"), line


def test_set_booleans_true_and_false_are_read(capsys):
    for value in ("true", "false"):
        assert main(["project", "--json", "--set", f"workload.regenerate={value}"]) == 0
        doc = json.loads(capsys.readouterr().out)
        assert (doc["regeneration"] is not None) is (value == "true")
