"""The pre-flight (model/launch/preflight.py) under stub commands: each injected fault is
reported in exactly one line, a good node passes, `dflash-plan doctor` runs the same block,
and every format's script runs it before the first model-loading command. The Python,
glibc and CUDA it asks for are those of the pinned wheels' own metadata."""

from __future__ import annotations

import os
import stat
import subprocess
import zipfile
from pathlib import Path

import pytest
import yaml
from dflash_plan.model.launch import generate, preflight
from dflash_plan.model.launch.common import context
from dflash_plan.tui.cli import main
from launch_shapes import shapes
from preflight_stubs import PREFLIGHT_STUBS, PYTHON_PROBE, wanted_gpus
from support import edit
from test_upstream import RECORD, node_calls, sky_nodes
from upstream import SPECFORGE, SPECULATORS, wheel, wheel_facts, wheel_requires

# 8 capture servers on node 0, trainers on nodes 1 and 2: node 1 reaches the head's
# Mooncake ports and the servers' ports; node 2 also torchrun's master port on node 1.
SHAPE = "trainers-span-two"
NODE = 2


def good_node(tmp_path: Path, text: str) -> tuple[Path, dict[str, str]]:
    """A bin folder of stubs for a node the pre-flight finds good, and its environment."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir(exist_ok=True)
    stubs = {
        **PREFLIGHT_STUBS,
        "python": "#!/bin/bash\n" + PYTHON_PROBE + "exit 3\n",
        # The plan's host names gpu-a..gpu-c: 10.0.0.1-3; nodeN: 10.0.0.(N+1).
        "getent": '#!/bin/bash\ncase "$2" in gpu-a) n=1 ;; gpu-b) n=2 ;; gpu-c) n=3 ;; '
        'node[0-9]*) n=$((${2#node} + 1)) ;; *) exit 2 ;; esac\nfor u in ${STUB_UNRESOLVED:-}; do [ "$u" = "$2" ] && exit 2; done\n'
        'echo "10.0.0.$n STREAM $2"\n',
    }
    for name, body in stubs.items():
        path = bin_dir / name
        path.write_text(body)
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "HOME": str(tmp_path),
        "DFLASH_FABRIC_IP": "10.0.0.3",
        "STUB_GPU_NAME": wanted_gpus(text),
    }
    return bin_dir, env


def doctor_script(tmp_path: Path, plan_args: list[str], node: int = NODE) -> str:
    """The pre-flight `dflash-plan doctor --script` writes for node `node`."""
    out = tmp_path / f"doctor-{node}.sh"
    assert (
        main(["doctor", *plan_args, "--node-rank", str(node), "--script", str(out), "--force"]) == 0
    )
    assert os.access(out, os.X_OK)
    return out.read_text()


SHAPE_ARGS = [
    "--set",
    "target.gpu=b200",
    "--set",
    "drafter.gpu=b200",
    "--set",
    "target.count=8",
    "--set",
    "drafter.count=16",
    "--set",
    'launch.hosts=["gpu-a", "gpu-b", "gpu-c"]',
]


def run_block(tmp_path: Path, text: str, **faults: str) -> tuple[int, list[str]]:
    _, env = good_node(tmp_path, text)
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    done = subprocess.run(
        ["bash", "-c", text],
        env={**env, **faults},
        cwd=work,
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )
    return done.returncode, done.stderr.splitlines()


@pytest.fixture(scope="module")
def block(tmp_path_factory) -> str:
    return doctor_script(tmp_path_factory.mktemp("doctor"), SHAPE_ARGS)


def test_a_good_node_passes(tmp_path, block):
    code, lines = run_block(tmp_path, block)
    assert (code, lines) == (0, [])


# Each fault: the stubs' setting, and what its one line says. Node 2 (gpu-c) reaches node 1
# (gpu-b, 10.0.0.2: the head, with Mooncake's 35551 and 35880 and torchrun's master port
# 29500) and node 0 (gpu-a, 10.0.0.1: the capture servers from 30000).
FAULTS = {
    "wrong GPU": (
        {"STUB_GPU_NAME": "H100 80GB HBM3"},
        "GPU 0 is NVIDIA H100 80GB HBM3, needs B200 (",
    ),
    "busy GPUs": ({"STUB_GPU_FREE_MIB": "1000"}, "free GPU memory is GPU 0 1000 MiB, GPU 1 1000"),
    "old driver": ({"STUB_DRIVER_CUDA": "12.8"}, "the driver's CUDA is 12.8, needs 13 or newer"),
    "missing package": ({"STUB_MISSING": "sglang"}, "sglang is missing, needs 0.5.14"),
    "wrong version": ({"STUB_VERSIONS": "torch=2.10.0"}, "torch is 2.10.0, needs 2.11.0"),
    "low Python": ({"STUB_PYTHON": "3.10.12"}, "Python is 3.10.12, needs 3.11 or newer"),
    "low glibc": ({"STUB_GLIBC": "2.31"}, "glibc is 2.31, needs 2.34 or newer"),
    "no route to the head node": (
        {"STUB_NO_ROUTE": "10.0.0.2"},
        "the route to node 1 (gpu-b, 10.0.0.2) is none, needs a route",
    ),
    "unresolvable head": ({"STUB_UNRESOLVED": "gpu-b"}, "node 1 (gpu-b) is unresolvable"),
    "closed port": (
        {"STUB_CLOSED_PORTS": "35551"},
        "port 35551 on node 1 (gpu-b) is closed (no answer in 3 s), needs TCP from this node",
    ),
    "fabric address elsewhere": (
        {"STUB_LOCAL_ADDR": "192.0.2.7"},
        "the fabric address 10.0.0.3 is on no local interface",
    ),
    "busy port": ({"STUB_BUSY_PORTS": "29500"}, "port 29500 is in use"),
    "small disk": ({"STUB_DISK_KB": "1000"}, "free disk at ./outputs/qwen3-8b-dflash is 0 GB"),
    "little memory": ({"STUB_MEM_B": str(2**30)}, "available host memory is 1 GiB, needs"),
}


@pytest.mark.parametrize("fault", FAULTS)
def test_each_fault_is_one_line(tmp_path, block, fault):
    settings, said = FAULTS[fault]
    node = 1 if fault == "busy port" else NODE  # node 1 serves torchrun's master port
    text = block if node == NODE else doctor_script(tmp_path, SHAPE_ARGS, node)
    code, lines = run_block(tmp_path, text, **settings)
    found = [line for line in lines if line.startswith("preflight: node")]
    assert code == 1
    assert len(found) == 1, lines
    assert said in found[0], found[0]
    assert found[0].startswith(f"preflight: node{node} (gpu-")
    assert ", needs " in found[0] and found[0].endswith(")")
    assert lines[-1].startswith("preflight failed: fix the lines above")


def test_an_rdma_plan_checks_the_libraries_mooncake_loads(tmp_path):
    # speculators runs Mooncake over RDMA where the plan receives into device memory.
    args = [
        "--set",
        "launch.format=speculators",
        "--set",
        "workload.receive=device",
        "--set",
        "target.count=16",
        "--set",
        "drafter.count=8",
    ]
    text = doctor_script(tmp_path, args, node=0)
    assert run_block(tmp_path, text) == (0, [])
    code, lines = run_block(tmp_path, text, STUB_MISSING="libibverbs.so.1")
    assert code == 1
    (line,) = [line for line in lines if line.startswith("preflight: node")]
    assert line == (
        "preflight: node0: libibverbs.so.1 is missing, needs to load (Mooncake's RDMA "
        "transport links it: apt-get install libibverbs1)"
    )
    # A TCP plan does not ask for them.
    tcp = doctor_script(tmp_path, args[:2] + args[4:], node=0)
    assert "libibverbs" not in tcp.split("local libraries=")[1].split("\n")[0]


def test_doctor_runs_the_block_here_and_exits_1_with_its_lines(tmp_path, monkeypatch, capfd):
    _, env = good_node(tmp_path, "")
    env["STUB_GPU_NAME"] = "B200"
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    assert main(["doctor", *SHAPE_ARGS, "--node-rank", str(NODE)]) == 0
    out, err = capfd.readouterr()
    assert out == "preflight: node2: every check passed\n" and err == ""
    monkeypatch.setenv("STUB_CLOSED_PORTS", "35880")
    assert main(["doctor", *SHAPE_ARGS, "--node-rank", str(NODE)]) == 1
    out, err = capfd.readouterr()
    assert out == ""
    assert err.splitlines()[0].startswith("preflight: node2 (gpu-c): port 35880 on node 1")
    assert main(["doctor", *SHAPE_ARGS, "--node-rank", "3"]) == 2
    assert "--node-rank: 3 is not a node of this plan: choose 0-2" in capfd.readouterr().err


def test_doctor_shows_a_hostile_plan_value_as_escapes(tmp_path, monkeypatch, capfd):
    # The small-disk line names launch.output_dir, which a plan file may fill with ESC.
    _, env = good_node(tmp_path, "")
    env["STUB_GPU_NAME"] = "B200"
    env["STUB_DISK_KB"] = "1"
    for key, value in env.items():
        monkeypatch.setenv(key, value)
    monkeypatch.chdir(tmp_path)
    hostile = ["--set", 'launch.output_dir="out-\x1b[31mred"']
    assert main(["doctor", *SHAPE_ARGS, *hostile, "--node-rank", str(NODE)]) == 1
    out, err = capfd.readouterr()
    assert "\x1b" not in out + err
    (disk,) = [line for line in err.splitlines() if "free disk" in line]
    assert "out-\\x1b[31mred" in disk


# --- what the checks ask for is what the pinned wheels need ----------------------------------


def test_the_python_glibc_and_cuda_asked_for_are_the_wheels(catalog, baseline):
    pins = preflight.pins(context(baseline, catalog), "specforge")
    assert pins is not None
    metadata = zipfile.ZipFile(wheel(SPECFORGE))
    (name,) = [n for n in metadata.namelist() if n.endswith(".dist-info/METADATA")]
    text = metadata.read(name).decode()
    assert f"Requires-Python: >={pins.python}" in text
    requires = dict(p.split("==") for p in pins.packages if "==" in p)
    assert f"Requires-Dist: sglang=={requires['sglang']}" in text
    assert f"Requires-Dist: torch=={requires['torch']}" in text
    # sglang's only Linux wheel for that version is manylinux_<glibc> (PyPI, 2026-12-03).
    assert pins.glibc == "2.34"
    torch = wheel_facts("torch", requires["torch"])
    assert any(
        r.startswith("cuda-toolkit[") and f"=={pins.cuda_major}." in r
        for r in torch["requires_dist"]
    )
    assert torch["file"].split("manylinux_")[1].startswith("2_28")
    speculators = preflight.pins(context(baseline, catalog), "speculators")
    assert speculators is not None and speculators.python == pins.python
    requires_python = [
        line for line in wheel_requires(wheel(SPECULATORS)) if line.startswith("torch")
    ]
    assert requires_python  # speculators' torch is the node's: its CUDA is read there
    assert speculators.cuda_major is None


# --- every format runs it first ----------------------------------------------------------------

# The commands that load a model (or start what does): capture servers (python -m
# sglang.launch_server, launch_vllm.py), trainers and captures.
LOADERS = {"python", "specforge", "torchrun", "speculators"}
FORMATS = {
    "specforge": ("two-nodes-shared", {}),
    "slurm": ("two-nodes-shared", {}),
    "skypilot": ("two-nodes-shared", {}),
    "kubernetes": ("builtin", {}),
    "speculators": ("two-nodes-shared", {}),
    "specforge-legacy": ("builtin", {}),
    "template": ("two-nodes-shared", {"template": "torchrun --node_rank {node_rank} train.py"}),
}


@pytest.mark.parametrize("fmt", FORMATS)
def test_every_format_runs_the_preflight_before_any_model_loads(tmp_path, catalog, baseline, fmt):
    shape, launch = FORMATS[fmt]
    plan = edit(shapes(baseline)[shape], launch=launch) if launch else shapes(baseline)[shape]
    script = generate(plan, catalog, fmt)
    # nvidia-smi records its calls too: the pre-flight's first question.
    smi = (
        "#!/bin/bash\n"
        + RECORD.removeprefix("#!/bin/bash\n")
        + PREFLIGHT_STUBS["nvidia-smi"].removeprefix("#!/bin/bash\n")
    )
    extra = {"nvidia-smi": smi}
    if fmt == "skypilot":
        tasks = [doc for doc in yaml.safe_load_all(script.text) if "run" in doc]
        every = sky_nodes(tmp_path, tasks, "g", extra=extra)
    else:
        every = node_calls(tmp_path, script, extra=extra)
    checked = 0
    for _node, calls in every:
        loads = [c["t_us"] for c in calls if c["cmd"] in LOADERS]
        if not loads:
            continue  # the Mooncake store's pod loads no model
        checks = [c["t_us"] for c in calls if c["cmd"] == "nvidia-smi"]
        assert checks and max(checks) < min(loads)
        checked += 1
    # Every node (Slurm: every step of the allocation) ran its pre-flight.
    nodes = {"specforge-legacy": 1, "kubernetes": len(every) - 1}.get(fmt, len(every))
    assert checked >= nodes
    if fmt == "slurm":
        (calls,) = (c for _, c in every)
        steps = {c["env"]["DFLASH_FABRIC_IP"] for c in calls if c["cmd"] == "nvidia-smi"}
        assert steps == {f"10.0.0.{n}" for n in range(script.layout.nodes)}
