"""Every bad input gets exit code 2 and one line on stderr naming where and what is allowed."""

from __future__ import annotations

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


@pytest.mark.parametrize("old, new, expected", [
    ("count = 3", "cuont = 3", [":6: unknown key 'target.cuont' (did you mean 'count'?)"]),
    ("count = 3", 'count = "three"', [":6: target.count = 'three'", "integer"]),
    ("count = 3", "count = 0", [":6: target.count = 0", "greater than 0"]),
    ("count = 3", "count = -2", ["target.count = -2", "greater than 0"]),
    ("count = 3", "count = 3\ntp = 2", ["target", "count 3 is not a multiple of tp 2"]),
    ('gpu = "rtx-pro-6000"\ncount = 3', 'gpu = "b20"\ncount = 3',
     ["target.gpu: unknown GPU 'b20' (did you mean 'b200'?)"]),
    ('"qwen3-8b"', '"qwen3-8"', ["workload.target_model = 'qwen3-8'", "did you mean 'qwen3-8b'"]),
    ("[drafter]", "[drafter", ["not valid TOML", "line 7"]),
    ("schema_version = 1", "schema_version = 2", ["schema_version = 2", "reads schema_version 1"]),
    ("[workload]", "[workload]\navg_sample_tokens = 5000",
     ["avg_sample_tokens (5000) exceeds max_length (3072)"]),
    ("[workload]", "[workloads]", ["unknown key 'workloads' (did you mean 'workload'?)"]),
])
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
    assert "--set target.tp = 'two'" in line and "integer" in line


def test_bad_hardware_file(tmp_path, capsys):
    hw = write(tmp_path, "[my-gpu]\nname = 'X'\nbf16_tflops = -5\n", "hw.toml")
    line = fail(capsys, ["project", "--hardware", hw])
    assert "hw.toml:3: my-gpu.bf16_tflops = -5" in line and "greater than 0" in line


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
