"""Launch scripts: device assignment, formats, YAML keys against SpecForge's schema tables
(shared reference pipelines.md), and hostile strings that must stay inert."""

from __future__ import annotations

import os
import shlex
import stat
import subprocess
from pathlib import Path

import pytest
import yaml
from support import edit

from dflash_plan.model.errors import PlanError
from dflash_plan.model.launch import FORMATS, assign_devices, generate, mem_fraction_static
from dflash_plan.model.plan import Plan
from dflash_plan.tui.cli import main

# --- SpecForge's schema, from the tables in pipelines.md (extra keys are rejected) --------
SGLANG = "sglang_"
ALLOWED = {
    (): {"model", "data", "training", "tracking", "profiling", "runtime", "deployment",
         "run_id", "output_dir"},
    ("model",): {"target_model_path", "draft_model_config", "draft_num_hidden_layers",
                 "draft_block_size", "target_backend", "trust_remote_code", "torch_dtype",
                 "cache_dir", "mask_token_id"},
    ("data",): {"train_data_path", "prompts_path", "hidden_states_path", "max_length",
                "chat_template", "build_dataset_num_proc", "cache_dir"},
    ("training",): {"strategy", "num_epochs", "max_steps", "total_steps", "batch_size",
                    "accumulation_steps", "learning_rate", "warmup_ratio", "max_grad_norm",
                    "fsdp_sharding", "attention_backend", "tp_size", "sp_ulysses_size",
                    "sp_ring_size", "num_anchors", "loss_decay_gamma", "save_interval",
                    "log_interval", "dist_timeout", "resume_from", "role"},
    ("deployment",): {"mode", "trainer", "disaggregated"},
    ("deployment", "trainer"): {"nnodes", "nproc_per_node", "node_rank", "master_addr",
                                "master_port"},
    ("deployment", "disaggregated"): {
        "control_dir", "backend", "consumer_state_dir", "inbox_server_url", "store_root",
        "store_id", "server_urls", "mooncake_metadata_server", "mooncake_master_server_addr",
        "mooncake_local_hostname", "mooncake_protocol", "mooncake_rdma_devices",
        "producer_segment_size", "idle_timeout_s", "peer_wait_timeout_s", "managed_local"},
    ("deployment", "disaggregated", "managed_local"): {"trainer_cuda_visible_devices",
                                                       "mooncake", "capture_servers"},
    ("capture_server",): {"port", "cuda_visible_devices", "tp_size", "mem_fraction_static",
                          "attention_backend"},
}


def check_specforge_yaml(doc: dict) -> None:
    """Every key one SpecForge accepts, every required key present, its rules kept."""
    def walk(node: dict, path: tuple[str, ...]) -> None:
        for key, value in node.items():
            if path == ("model",) and key.startswith(SGLANG):
                continue
            assert key in ALLOWED[path], f"{'.'.join(path + (key,))} is not a SpecForge key"
            if isinstance(value, dict) and path + (key,) in ALLOWED:
                walk(value, path + (key,))
    walk(doc, ())
    assert doc["model"]["target_model_path"]
    assert sum(k in doc["data"] for k in ("train_data_path", "prompts_path",
                                          "hidden_states_path")) == 1
    assert doc["training"]["strategy"] == "dflash"
    dep = doc["deployment"]
    assert dep["mode"] == "disaggregated"
    dis = dep["disaggregated"]
    assert dis["control_dir"] and dis["backend"] == "mooncake"   # online requires mooncake
    trainer = dep["trainer"]
    if "managed_local" in dis:
        ml = dis["managed_local"]
        assert trainer.get("nnodes", 1) == 1 and "server_urls" not in dis
        assert len(ml["trainer_cuda_visible_devices"]) == trainer["nproc_per_node"]
        devices = list(ml["trainer_cuda_visible_devices"])
        ports = []
        for server in ml["capture_servers"]:
            assert set(server) <= ALLOWED[("capture_server",)]
            assert len(server["cuda_visible_devices"]) == server.get("tp_size", 1)
            assert all(isinstance(d, str) for d in server["cuda_visible_devices"])
            assert 0 < server["mem_fraction_static"] <= 1
            devices += server["cuda_visible_devices"]
            ports.append(server["port"])
        assert len(devices) == len(set(devices)), "a GPU is used twice"
        assert len(ports) == len(set(ports))
    else:
        assert dis["server_urls"] is not None
        if trainer["nnodes"] > 1:
            assert trainer["master_addr"] and dis["consumer_state_dir"]


def yaml_in(text: str) -> dict:
    """The run.yaml a script writes with its heredoc."""
    start = text.index("<<'DFLASH_PLAN_EOF'\n") + len("<<'DFLASH_PLAN_EOF'\n")
    return yaml.safe_load(text[start:text.index("\nDFLASH_PLAN_EOF", start)])


def bash_syntax_ok(text: str) -> None:
    subprocess.run(["bash", "-n"], input=text, text=True, check=True)


@pytest.fixture
def b200_6_2(baseline) -> Plan:
    return edit(baseline, target={"gpu": "b200", "count": 6, "tp": 2},
                drafter={"gpu": "b200", "count": 2})


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "template"])
def test_default_plan_in_every_format(catalog, baseline, fmt):
    script = generate(baseline, catalog, fmt)
    bash_syntax_ok(script.text)
    assert script.text.startswith("#!")
    assert "Qwen/Qwen3-8B" in script.text
    if fmt in ("specforge", "slurm"):
        doc = yaml_in(script.text)
        assert doc == yaml.safe_load(script.files["run.yaml"])
        check_specforge_yaml(doc)
        assert doc["training"]["num_epochs"] == 6 and doc["training"]["num_anchors"] == 128
        assert doc["training"]["learning_rate"] == 6e-4 and doc["training"]["warmup_ratio"] == 0.04
        assert doc["training"]["max_grad_norm"] == 1.0 and doc["data"]["max_length"] == 3072
        assert doc["model"]["draft_block_size"] == 16


def test_default_plan_specforge_managed_local(catalog, baseline):
    doc = yaml_in(generate(baseline, catalog, "specforge").text)
    ml = doc["deployment"]["disaggregated"]["managed_local"]
    assert ml["trainer_cuda_visible_devices"] == ["3"]
    assert [s["cuda_visible_devices"] for s in ml["capture_servers"]] == [["0"], ["1"], ["2"]]
    assert [s["port"] for s in ml["capture_servers"]] == [30000, 30001, 30002]
    assert doc["deployment"]["trainer"] == {"nnodes": 1, "nproc_per_node": 1}


def test_mem_fraction_comes_from_the_memory_model(catalog, baseline):
    # Qwen3-8B: 16.38 GB of bf16 weights + 8 in-flight 3072-token sequences of KV
    # (2 x 1024 x 36 layers x 2 bytes x 3072 = 0.453 GB each) = 20.0 GB of 96 GB -> 0.25.
    assert mem_fraction_static(baseline, catalog, catalog.models["qwen3-8b"]) == 0.25


def test_eight_b200_six_plus_two_with_tp2(catalog, b200_6_2):
    layout = assign_devices(b200_6_2, catalog)
    assert [r.devices for r in layout.replicas] == [(0, 1), (2, 3), (4, 5)]
    assert layout.drafters == {0: (6, 7)}
    doc = yaml_in(generate(b200_6_2, catalog, "specforge").text)
    check_specforge_yaml(doc)
    servers = doc["deployment"]["disaggregated"]["managed_local"]["capture_servers"]
    assert [s["tp_size"] for s in servers] == [2, 2, 2]
    assert doc["deployment"]["trainer"]["nproc_per_node"] == 2
    spec = generate(b200_6_2, catalog, "speculators").text
    words = shlex.split(spec.replace("\\\n", " "), comments=True)
    assert "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5" in words and "CUDA_VISIBLE_DEVICES=6,7" in words
    i = words.index("--data-parallel-size")
    assert words[i + 1] == "3" and words[words.index("--tensor-parallel-size") + 1] == "2"
    assert words[words.index("--nproc_per_node") + 1] == "2"
    legacy = generate(b200_6_2, catalog, "specforge-legacy").text
    assert "--nproc_per_node 8" in legacy and "--tp-size 2" in legacy
    assert "split does not apply" in legacy


def test_two_nodes_capture_on_one_trainers_on_the_other(catalog, baseline):
    plan = edit(baseline, target={"gpu": "b200", "count": 8}, drafter={"gpu": "b200", "count": 8},
                launch={"hosts": ["gpu-a", "gpu-b"]})
    script = generate(plan, catalog, "specforge")
    bash_syntax_ok(script.text)
    doc = yaml_in(script.text)
    check_specforge_yaml(doc)
    dis = doc["deployment"]["disaggregated"]
    assert dis["server_urls"] == [f"http://gpu-a:{30000 + i}" for i in range(8)]
    assert doc["deployment"]["trainer"] == {"nnodes": 1, "nproc_per_node": 8}
    assert dis["mooncake_master_server_addr"] == "gpu-b:50051"
    node0, node1 = script.text.split("\n  0)\n")[1].split("\n  1)\n")
    assert node0.count("sglang.launch_server") == 8 and "--role consumer" not in node0
    assert "--role consumer --node-rank 0" in node1 and "--role producer" in node1
    assert "sglang.launch_server" not in node1


def test_two_nodes_mixed_split(catalog, baseline):
    plan = edit(baseline, target={"gpu": "b200", "count": 10}, drafter={"gpu": "b200", "count": 6})
    layout = assign_devices(plan, catalog)
    assert [(r.node, r.devices) for r in layout.replicas][-2:] == [(1, (0,)), (1, (1,))]
    assert layout.drafters == {1: (2, 3, 4, 5, 6, 7)}
    text = generate(plan, catalog, "specforge").text
    node1 = text.split("\n  1)\n")[1]
    assert "CUDA_VISIBLE_DEVICES=0 " in node1 and "CUDA_VISIBLE_DEVICES=1 " in node1
    for fmt in ("speculators", "slurm"):
        bash_syntax_ok(generate(plan, catalog, fmt).text)
    spec = generate(plan, catalog, "speculators").text
    assert "--headless" in spec and "--data-parallel-start-rank 8" in spec


def test_drafters_on_two_nodes(catalog, baseline):
    plan = edit(baseline, target={"gpu": "b200", "count": 8}, drafter={"gpu": "b200", "count": 16})
    doc = yaml_in(generate(plan, catalog, "specforge").text)
    check_specforge_yaml(doc)
    assert doc["deployment"]["trainer"]["nnodes"] == 2
    assert doc["deployment"]["trainer"]["master_addr"] == "node1"
    slurm = generate(plan, catalog, "slurm").text
    bash_syntax_ok(slurm)
    assert "#SBATCH --nodes=3" in slurm and "#SBATCH --gpus-per-node=8" in slurm
    assert 'srun --nodes=2 --ntasks-per-node=1' in slurm
    assert "unset RANK WORLD_SIZE" in slurm


def test_uneven_drafters_are_refused(catalog, baseline):
    plan = edit(baseline, target={"gpu": "b200", "count": 4}, drafter={"gpu": "b200", "count": 12})
    with pytest.raises(PlanError, match="same number on each"):
        generate(plan, catalog, "specforge")


def test_roles_on_different_gpu_types_use_separate_machines(catalog, baseline):
    plan = edit(baseline, target={"gpu": "b200", "count": 4}, drafter={"gpu": "h100-sxm", "count": 2})
    layout = assign_devices(plan, catalog)
    assert layout.nodes == 2 and layout.drafters == {1: (0, 1)}
    with pytest.raises(PlanError, match="same GPUs"):
        generate(plan, catalog, "specforge-legacy")


def test_too_few_hosts(catalog, baseline):
    plan = edit(baseline, target={"gpu": "b200", "count": 8}, drafter={"gpu": "b200", "count": 8},
                launch={"hosts": ["only-one"]})
    with pytest.raises(PlanError, match="launch.hosts names 1 host"):
        generate(plan, catalog)


# --- hostile strings ------------------------------------------------------------------------

HOSTILE = "x'; touch PWNED; echo \"$(touch PWNED2)\" `touch PWNED3` $HOME\nrm -rf ~ ; y"


def stub_bin(tmp_path: Path, names: list[str]) -> Path:
    """Commands that only record their arguments, one per line, then succeed."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in names:
        path = bin_dir / name
        # One file per call: background calls must not interleave their records.
        path.write_text('#!/bin/bash\nprintf "%s\\0" "$@" '
                        f'> "$STUB_LOG/{name}.$(date +%s%N).$$.args"\n')
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    scontrol = bin_dir / "scontrol"
    scontrol.write_text("#!/bin/bash\nprintf 'h0\\nh1\\nh2\\n'\n")
    scontrol.chmod(0o755)
    return bin_dir


def run_script(tmp_path: Path, text: str, node_rank: int | None = None) -> dict[str, list[list[str]]]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    log = tmp_path / "log"
    log.mkdir(exist_ok=True)
    bin_dir = tmp_path / "bin"
    if not bin_dir.exists():
        stub_bin(tmp_path, ["python", "specforge", "torchrun", "mooncake_master", "curl", "srun"])
    env = {"PATH": f"{bin_dir}:/usr/bin:/bin", "STUB_LOG": str(log), "HOME": str(tmp_path),
           "SLURM_JOB_NODELIST": "h[0-2]"}
    if node_rank is not None:
        env["NODE_RANK"] = str(node_rank)
    subprocess.run(["bash", "-c", text + "\nwait\n"], cwd=work, env=env, check=True,
                   timeout=60, capture_output=True)
    for mark in ("PWNED", "PWNED2", "PWNED3"):
        assert not (work / mark).exists(), "a hostile value ran as a command"
    calls: dict[str, list[list[str]]] = {}
    for path in sorted(log.glob("*.args")):
        calls.setdefault(path.name.split(".")[0], []).append(path.read_text().split("\0")[:-1])
    for path in log.glob("*.args"):
        path.unlink()
    return calls


def hostile_plan(plan: Plan, **sections) -> Plan:
    return edit(plan, launch={"run_id": HOSTILE, "target_model_path": HOSTILE,
                              "train_data_path": HOSTILE, "hosts": [HOSTILE, "b; reboot"]},
                **sections)


@pytest.mark.parametrize("fmt", ["specforge", "speculators", "specforge-legacy"])
def test_hostile_strings_stay_inert_on_one_node(tmp_path, catalog, baseline, fmt):
    plan = hostile_plan(baseline)
    script = generate(plan, catalog, fmt)
    calls = run_script(tmp_path, script.text)
    if fmt == "specforge":
        doc = yaml.safe_load((tmp_path / "work" / "run.yaml").read_text())
        assert doc["run_id"] == HOSTILE and doc["model"]["target_model_path"] == HOSTILE
        assert doc["data"]["train_data_path"] == HOSTILE
        assert calls["specforge"] == [["train", "-c", "run.yaml"]]
    elif fmt == "speculators":
        vllm = calls["python"][0]
        assert vllm[:2] == ["scripts/launch_vllm.py", HOSTILE]
        trainer = calls["torchrun"][0]
        assert trainer[trainer.index("--verifier-name-or-path") + 1] == HOSTILE
    else:
        trainer = calls["torchrun"][0]
        assert trainer[trainer.index("--target-model-path") + 1] == HOSTILE
        assert trainer[trainer.index("--output-dir") + 1] == f"./outputs/{HOSTILE}"


def test_hostile_strings_stay_inert_across_nodes(tmp_path, catalog, baseline):
    plan = hostile_plan(baseline, target={"gpu": "b200", "count": 8},
                        drafter={"gpu": "b200", "count": 8})
    text = generate(plan, catalog, "specforge").text
    calls = run_script(tmp_path, text, node_rank=0)
    assert len(calls["python"]) == 8
    assert calls["python"][0][calls["python"][0].index("--model-path") + 1] == HOSTILE
    calls = run_script(tmp_path, text, node_rank=1)
    doc = yaml.safe_load((tmp_path / "work" / "run.yaml").read_text())
    assert doc["deployment"]["disaggregated"]["server_urls"][0] == f"http://{HOSTILE}:30000"
    assert ["train", "-c", "run.yaml", "--role", "consumer", "--node-rank", "0"] in calls["specforge"]


def test_hostile_strings_stay_inert_in_slurm(tmp_path, catalog, baseline):
    plan = hostile_plan(baseline, target={"gpu": "b200", "count": 8},
                        drafter={"gpu": "b200", "count": 8})
    text = generate(plan, catalog, "slurm").text
    assert "\n#SBATCH --job-name=x___touch_PWNED" in text     # directives cannot be quoted
    calls = run_script(tmp_path, text)
    steps = calls["srun"]
    servers = [s for s in steps if "sglang.launch_server" in s]
    assert len(servers) == 8 and servers[0][servers[0].index("--model-path") + 1] == HOSTILE
    assert servers[0][servers[0].index("-w") + 1] == "h0"
    consumer = next(s for s in steps if "bash" in s)
    assert 'deployment.disaggregated.server_urls=["http://h0:30000"' in " ".join(consumer)


# --- templates --------------------------------------------------------------------------------

def test_template_fills_quoted_placeholders(catalog, baseline):
    template = ("my-launcher --targets {target_devices} --drafters {drafter_devices} "
                "--model {target_model} --epochs {epochs} --anchors {num_anchors} "
                "--nodes {nnodes} --run {run_id}")
    plan = edit(baseline, launch={"template": template, "run_id": HOSTILE})
    text = generate(plan, catalog, "template").text
    bash_syntax_ok(text)
    words = shlex.split(text.split("set -euo pipefail\n\n")[1])
    assert words[:9] == ["my-launcher", "--targets", "0,1,2", "--drafters", "3", "--model",
                         "Qwen/Qwen3-8B", "--epochs", "6"]
    assert words[-1] == HOSTILE


def test_template_per_node(catalog, baseline):
    plan = edit(baseline, target={"gpu": "b200", "count": 10}, drafter={"gpu": "b200", "count": 6},
                launch={"template": "run --node {node_rank} --t {target_devices} --d {drafter_devices}"})
    text = generate(plan, catalog, "template").text
    assert "run --node 0 --t 0,1,2,3,4,5,6,7 --d ''" in text
    assert "run --node 1 --t 0,1 --d 2,3,4,5,6,7" in text


def test_unknown_placeholder_is_a_clear_error(catalog, baseline):
    plan = edit(baseline, launch={"template": "go {target_devicez}"})
    with pytest.raises(PlanError, match=r"unknown placeholder \{target_devicez\}; known: "
                                        r"\{target_devices\}"):
        generate(plan, catalog, "template")


def test_template_from_the_user_config(tmp_path, monkeypatch, capsys):
    monkeypatch.setenv("DFLASH_PLAN_CONFIG_DIR", str(tmp_path))
    (tmp_path / "launch.toml").write_text('template = "go {tp} {target_gpu}"\n')
    assert main(["launch", "--format", "template"]) == 0
    assert "go 1 rtx-pro-6000" in capsys.readouterr().out


def test_missing_template(capsys):
    assert main(["launch", "--format", "template"]) == 2
    assert "launch.template is not set" in capsys.readouterr().err


# --- the command ------------------------------------------------------------------------------

def test_launch_output_file_is_atomic_and_not_overwritten(tmp_path, capsys):
    out = tmp_path / "go.sh"
    assert main(["launch", "--format", "speculators", "-o", str(out)]) == 0
    assert "launch_vllm.py" in out.read_text() and os.access(out, os.X_OK)
    out.write_text("mine")
    assert main(["launch", "-o", str(out)]) == 2
    assert "already exists" in capsys.readouterr().err and out.read_text() == "mine"
    assert main(["launch", "-o", str(out), "--force"]) == 0
    assert "specforge train" in out.read_text()


def test_bad_format_is_one_line(capsys):
    assert main(["launch", "--format", "docker"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and "invalid choice: 'docker'" in err[0]
