"""Launch scripts: device assignment, formats, YAML keys against SpecForge's schema tables
(docs/launch.md), and hostile strings that must stay inert."""

from __future__ import annotations

import contextlib
import json
import os
import re
import shlex
import stat
import subprocess
import sys
from pathlib import Path

import pytest
import yaml
from dflash_plan.model.basics import units
from dflash_plan.model.basics.errors import PlanError
from dflash_plan.model.core.resolve import resolve
from dflash_plan.model.inputs.catalog import Catalog
from dflash_plan.model.inputs.plan import LAUNCH_RECEIVE, SPECFORGE_RECEIVE, Plan
from dflash_plan.model.launch import FORMATS, generate, mem_fraction_static
from dflash_plan.model.launch.common import context
from dflash_plan.model.launch.layout import assign_devices as _assign
from dflash_plan.tui.cli import main
from k8s_schema import manifest
from k8s_schema import validate as validate_manifest
from preflight_stubs import GETENT_ANY, PREFLIGHT_STUBS, PYTHON_PROBE, wanted_gpus
from support import edit

# Formats that write a manifest for a cluster's API instead of a script run with bash.
MANIFEST_FORMATS = ("kubernetes",)

# --- SpecForge's schema, as docs/launch.md lists it (extra keys are rejected) --------
SGLANG = "sglang_"
ALLOWED = {
    (): {
        "model",
        "data",
        "training",
        "tracking",
        "profiling",
        "runtime",
        "deployment",
        "run_id",
        "output_dir",
    },
    ("model",): {
        "target_model_path",
        "draft_model_config",
        "draft_num_hidden_layers",
        "draft_block_size",
        "target_backend",
        "trust_remote_code",
        "torch_dtype",
        "cache_dir",
        "mask_token_id",
    },
    ("data",): {
        "train_data_path",
        "prompts_path",
        "hidden_states_path",
        "max_length",
        "chat_template",
        "build_dataset_num_proc",
        "cache_dir",
    },
    ("training",): {
        "strategy",
        "num_epochs",
        "max_steps",
        "total_steps",
        "batch_size",
        "accumulation_steps",
        "learning_rate",
        "warmup_ratio",
        "max_grad_norm",
        "fsdp_sharding",
        "attention_backend",
        "tp_size",
        "sp_ulysses_size",
        "sp_ring_size",
        "num_anchors",
        "loss_decay_gamma",
        "save_interval",
        # the rotation: keep the newest N (specforge 0.2.0 config/schema.py)
        "max_checkpoints",
        "log_interval",
        "dist_timeout",
        "resume_from",
        "role",
    },
    ("deployment",): {"mode", "trainer", "disaggregated"},
    ("deployment", "trainer"): {
        "nnodes",
        "nproc_per_node",
        "node_rank",
        "master_addr",
        "master_port",
    },
    ("deployment", "disaggregated"): {
        "control_dir",
        "backend",
        "consumer_state_dir",
        "inbox_server_url",
        "store_root",
        "store_id",
        "server_urls",
        "mooncake_metadata_server",
        "mooncake_master_server_addr",
        "mooncake_local_hostname",
        "mooncake_protocol",
        "mooncake_rdma_devices",
        "producer_segment_size",
        "client_buffer_size",
        "idle_timeout_s",
        "peer_wait_timeout_s",
        "managed_local",
    },
    ("deployment", "disaggregated", "managed_local"): {
        "trainer_cuda_visible_devices",
        "mooncake",
        "capture_servers",
    },
    ("capture_server",): {
        "port",
        "cuda_visible_devices",
        "tp_size",
        "mem_fraction_static",
        "attention_backend",
    },
}


def check_specforge_yaml(doc: dict) -> None:
    """Every key one SpecForge accepts, every required key present, its rules kept."""

    def walk(node: dict, path: tuple[str, ...]) -> None:
        for key, value in node.items():
            if path == ("model",) and key.startswith(SGLANG):
                continue
            assert key in ALLOWED[path], f"{'.'.join((*path, key))} is not a SpecForge key"
            if isinstance(value, dict) and (*path, key) in ALLOWED:
                walk(value, (*path, key))

    walk(doc, ())
    assert doc["model"]["target_model_path"]
    assert (
        sum(k in doc["data"] for k in ("train_data_path", "prompts_path", "hidden_states_path"))
        == 1
    )
    assert doc["training"]["strategy"] == "dflash"
    dep = doc["deployment"]
    assert dep["mode"] == "disaggregated"
    dis = dep["disaggregated"]
    assert dis["control_dir"] and dis["backend"] == "mooncake"  # online requires mooncake
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


def assign_devices(plan: Plan, catalog):
    return _assign(resolve(plan, catalog))


def yaml_in(text: str) -> dict:
    """The run.yaml a script writes with its heredoc."""
    start = text.index("<<'DFLASH_PLAN_EOF'\n") + len("<<'DFLASH_PLAN_EOF'\n")
    return yaml.safe_load(text[start : text.index("\nDFLASH_PLAN_EOF", start)])


def bash_syntax_ok(text: str) -> None:
    subprocess.run(["bash", "-n"], input=text, text=True, check=True)


@pytest.fixture
def b200_6_2(baseline) -> Plan:
    return edit(
        baseline, target={"gpu": "b200", "count": 6, "tp": 2}, drafter={"gpu": "b200", "count": 2}
    )


# The cluster network addresses the sandbox's SkyPilot gives its nodes.
SKY_IPS = tuple(f"10.9.0.{i}" for i in range(256))


def shell_of(text: str) -> str:
    """What bash runs on a node: the script, or the `run` shell of a SkyPilot task YAML (a
    YAML document, not a script) with what SkyPilot sets for it: the node's rank (here
    NODE_RANK's, as the other formats read it) and every node's address."""
    if text.startswith("#!"):
        return text
    task = yaml.safe_load(text)
    bash_syntax_ok(task["setup"])
    ips = "\n".join(SKY_IPS[: task["num_nodes"]])
    return (
        f'export SKYPILOT_NODE_RANK="${{NODE_RANK:-0}}" SKYPILOT_NUM_NODES={task["num_nodes"]} '
        f"SKYPILOT_NODE_IPS={shlex.quote(ips)}\n{task['run']}"
    )


@pytest.mark.parametrize("fmt", [f for f in FORMATS if f != "template"])
def test_default_plan_in_every_format(catalog, baseline, fmt):
    script = generate(baseline, catalog, fmt)
    if fmt in MANIFEST_FORMATS:  # a manifest, with its pods' shells (test_kubernetes.py)
        assert validate_manifest(manifest(script.text)) == []
        assert "Qwen/Qwen3-8B" in script.text
        check_specforge_yaml(yaml.safe_load(script.files["run.yaml"]))
        return
    bash_syntax_ok(shell_of(script.text))
    assert script.text.startswith("#!" if fmt != "skypilot" else "# dflash-plan launch")
    assert "Qwen/Qwen3-8B" in script.text
    if fmt in ("specforge", "slurm", "skypilot"):
        doc = yaml_in(shell_of(script.text))
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
    # Qwen3-8B on 96 GiB: 8 in-flight sequences of 3079 tokens = 24,632 tokens. Outside the
    # static pool: one layer's activations 86,016 elements x 24,632 x 2 B = 3.95 GiB,
    # captured states 5 x 4096 x 24,632 x 2 B = 0.94 GiB, 5 GiB runtime: 1 - 9.89 / 96 =
    # 0.90, capped at the 0.85 upstream examples use. The pool (15.3 GiB weights + 3.4 GiB
    # KV) fits in it.
    assert mem_fraction_static(baseline, catalog, catalog.models["qwen3-8b"]) == 0.85
    memory = context(baseline, catalog).memory
    assert memory.activations_gib == pytest.approx(3.95, abs=0.01)
    assert memory.capture_gib == pytest.approx(0.94, abs=0.01)
    assert memory.weights_gib == pytest.approx(15.26, abs=0.01) and memory.fits
    text = generate(baseline, catalog, "specforge").text
    assert "# note: mem_fraction_static 0.85 of 96 GiB" in text


def test_mem_fraction_on_a_small_gpu_leaves_the_headroom(catalog, baseline):
    small = min(catalog.gpus.values(), key=lambda g: g.memory_gb)
    plan = edit(
        baseline,
        target={"gpu": small.key, "count": 1},
        drafter={"gpu": small.key, "count": 1},
        workload={"target_model": "qwen3-4b", "max_length": 2048, "avg_sample_tokens": 1024},
    )
    memory = context(plan, catalog).memory
    headroom = memory.activations_gib + memory.capture_gib + memory.runtime_gib
    assert memory.fraction <= 1 - headroom / memory.gpu_gib + 1e-9 or not memory.fits
    assert 0.4 <= memory.fraction <= 0.95


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


def section(text: str, node: int) -> str:
    """The part of a NODE_RANK script that runs on `node`."""
    return text.split(f"\n  {node})\n")[1].split("\n    ;;")[0]


def test_two_nodes_capture_on_one_trainers_on_the_other(catalog, baseline):
    plan = edit(
        baseline,
        target={"gpu": "b200", "count": 8},
        drafter={"gpu": "b200", "count": 8},
        launch={"hosts": ["gpu-a", "gpu-b"]},
    )
    script = generate(plan, catalog, "specforge")
    bash_syntax_ok(script.text)
    doc = yaml_in(script.text)
    check_specforge_yaml(doc)
    dis = doc["deployment"]["disaggregated"]
    assert dis["server_urls"] == [f"http://gpu-a:{30000 + i}" for i in range(8)]
    assert doc["deployment"]["trainer"] == {"nnodes": 1, "nproc_per_node": 8}
    # The metadata server and master the producer and consumer refuse to start without.
    assert dis["mooncake_master_server_addr"] == "gpu-b:35551"
    assert dis["mooncake_metadata_server"] == "http://gpu-b:35880/metadata"
    # Node-local, not under the shared output dir.
    state = dis["consumer_state_dir"]
    assert state.startswith("/tmp/") and "outputs" not in state
    node0, node1 = section(script.text, 0), section(script.text, 1)
    assert node0.count("sglang.launch_server") == 8 and "--role consumer" not in node0
    # Every node publishes its own fabric address, found on the node (the route to the head).
    fabric = (
        'fabric_addr="$(fabric_ip gpu-b)"\n    export MOONCAKE_LOCAL_HOSTNAME="$fabric_addr" '
        'MC_TCP_BIND_ADDRESS="$fabric_addr"'
    )
    assert fabric in node0 and fabric in node1
    assert "MOONCAKE_GLOBAL_SEGMENT_SIZE=" in node0
    assert "--enable_http_metadata_server=true" in node1
    assert "--http_metadata_server_host=0.0.0.0" in node1
    # The consumer's workers inherit NODE_RANK: it is the trainer rank, as --node-rank.
    assert (
        "NODE_RANK=0 CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7 specforge train -c run-node1.yaml "
        "--role consumer --node-rank 0"
    ) in node1
    assert "CUDA_VISIBLE_DEVICES='' specforge train -c run-node1.yaml --role producer" in node1
    assert "sglang.launch_server" not in node1
    assert "export MOONCAKE_METADATA_SERVER=http://gpu-b:35880/metadata" in script.text


def test_two_nodes_mixed_split(catalog, baseline):
    plan = edit(baseline, target={"gpu": "b200", "count": 10}, drafter={"gpu": "b200", "count": 6})
    layout = assign_devices(plan, catalog)
    assert [(r.node, r.devices) for r in layout.replicas][-2:] == [(1, (0,)), (1, (1,))]
    assert layout.drafters == {1: (2, 3, 4, 5, 6, 7)}
    text = generate(plan, catalog, "specforge").text
    node1 = section(text, 1)
    assert "CUDA_VISIBLE_DEVICES=0 " in node1 and "CUDA_VISIBLE_DEVICES=1 " in node1
    # The trainer does not land on the capture servers' GPUs.
    assert "CUDA_VISIBLE_DEVICES=2,3,4,5,6,7 specforge train" in node1
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
    assert "#SBATCH --exclusive" in slurm and "billed: the allocation, 3 node(s) x 8" in slurm
    assert "--role consumer --node-rank 1" in slurm
    assert "unset RANK WORLD_SIZE" in slurm


def test_slurm_requests_the_gpus_the_plan_uses(catalog, baseline):
    text = generate(baseline, catalog, "slurm").text
    assert "#SBATCH --gpus-per-node=4" in text and "--exclusive" not in text
    assert "billed: the allocation, 1 node(s) x 4 GPU(s) = 4 GPU(s); the plan uses 4" in text
    # Every step that runs a GPU program names its GPUs.
    for line in text.splitlines():
        if line.startswith("srun") and ("sglang" in line or "--role consumer" in line):
            assert "--gpus-per-node=4" in line and "CUDA_VISIBLE_DEVICES=" in line


def test_uneven_drafters_are_refused(catalog, baseline):
    plan = edit(baseline, target={"gpu": "b200", "count": 4}, drafter={"gpu": "b200", "count": 12})
    with pytest.raises(PlanError, match="same number on each") as err:
        generate(plan, catalog, "specforge")
    assert err.value.key == "drafter.count"


def test_roles_on_different_gpu_types_use_separate_machines(catalog, baseline):
    plan = edit(
        baseline, target={"gpu": "b200", "count": 4}, drafter={"gpu": "h100-sxm", "count": 2}
    )
    layout = assign_devices(plan, catalog)
    assert layout.nodes == 2 and layout.drafters == {1: (0, 1)}
    with pytest.raises(PlanError, match="same GPUs"):
        generate(plan, catalog, "specforge-legacy")
    bash_syntax_ok(generate(plan, catalog, "specforge").text)


def test_too_few_hosts(catalog, baseline):
    plan = edit(
        baseline,
        target={"gpu": "b200", "count": 8},
        drafter={"gpu": "b200", "count": 8},
        launch={"hosts": ["only-one"]},
    )
    with pytest.raises(PlanError, match=r"launch\.hosts names 1 host") as err:
        generate(plan, catalog)
    assert err.value.key == "launch.hosts"


# --- validation as the projection does it, layers, size --------------------------------------


@pytest.mark.parametrize("fmt", FORMATS)
def test_launch_validates_like_the_projection(catalog, baseline, fmt):
    plan = edit(baseline, target={"gpu": "nope"}, launch={"template": "go"})
    with pytest.raises(PlanError) as err:
        generate(plan, catalog, fmt)
    assert err.value.key == "target.gpu"
    plan = edit(baseline, workload={"target_layer_ids": [1, 99]}, launch={"template": "go"})
    with pytest.raises(PlanError) as err:
        generate(plan, catalog, fmt)
    assert err.value.key == "workload.target_layer_ids"


def test_custom_layers_only_where_the_format_can_express_them(catalog, baseline):
    plan = edit(baseline, workload={"target_layer_ids": [2, 10, 18, 26, 34]})
    for fmt in ("specforge", "specforge-legacy", "slurm", "kubernetes"):
        with pytest.raises(PlanError, match="derives the captured layers") as err:
            generate(plan, catalog, fmt)
        assert err.value.key == "workload.target_layer_ids"
    spec = generate(plan, catalog, "speculators").text
    assert spec.count("--target-layer-ids 2 10 18 26 34") == 2
    # The derived set itself is accepted when spelled out.
    same = edit(baseline, workload={"target_layer_ids": [1, 9, 17, 25, 33]})
    assert "--spec-capture-aux-layer-ids" not in generate(same, catalog, "specforge").text


def test_captured_layers_follow_the_drafter_layer_count(catalog, baseline):
    plan = edit(
        baseline,
        workload={"draft_layers": 3},
        target={"gpu": "b200", "count": 8},
        drafter={"gpu": "b200", "count": 8},
    )
    text = generate(plan, catalog, "specforge").text
    assert "--spec-capture-aux-layer-ids 1 17 33" in text
    assert yaml_in(text)["model"]["draft_num_hidden_layers"] == 3


def python_calls(fn) -> int:
    """The Python function calls fn() makes: its work, counted the same on a loaded
    machine as on an idle one (speed itself: scripts/bench_launch.py)."""
    calls = 0

    def count(frame, event, arg):
        nonlocal calls
        calls += event == "call"

    sys.setprofile(count)
    try:
        fn()
    finally:
        sys.setprofile(None)
    return calls


def test_huge_plans_are_refused_at_once(catalog, baseline):
    plan = edit(
        baseline,
        target={"gpu": "b200", "count": 100_000},
        drafter={"gpu": "b200", "count": 100_000},
    )

    def refused():
        with pytest.raises(PlanError, match="launch scripts are written for up to 256 nodes"):
            generate(plan, catalog, "speculators")

    def one_node():
        generate(baseline, catalog, "speculators")

    refused(), one_node()  # caches filled: both counted warm
    # Refused before any per-GPU or per-node work: less than writing a one-node script.
    assert python_calls(refused) < python_calls(one_node)


def nodes_plan(baseline, catalog, nodes: int) -> Plan:
    per_node = catalog.gpus["b200"].gpus_per_node
    return edit(
        baseline,
        target={"gpu": "b200", "count": nodes // 2 * per_node},
        drafter={"gpu": "b200", "count": nodes // 2 * per_node},
        launch={"template": "go {node_rank} {target_devices}", "volume_claim": "work"},
    )


@pytest.mark.parametrize("fmt", FORMATS)
def test_the_largest_plan_takes_work_in_step_with_what_it_writes(catalog, baseline, fmt):
    assert generate(nodes_plan(baseline, catalog, 256), catalog, fmt).layout.nodes == 256
    # A guard against a layout quadratic in nodes, counted rather than timed: from 64 to
    # 128 nodes the work grows no faster than the files written. (They grow more than
    # twofold for specforge: every node's section waits for every capture server.)
    plans = {n: nodes_plan(baseline, catalog, n) for n in (64, 128)}
    scripts = {n: generate(p, catalog, fmt) for n, p in plans.items()}
    size = {n: len(s.text) + sum(map(len, s.files.values())) for n, s in scripts.items()}
    work = {n: python_calls(lambda p=p: generate(p, catalog, fmt)) for n, p in plans.items()}
    # Work linear in the nodes is in step too: a JobSet's manifest grows less than its
    # nodes (its pods are replicas), while the projections its header and its pods'
    # pre-flight read grow with them; a quadratic layout would still quadruple.
    growth = max(size[128] / size[64], 128 / 64)
    assert work[128] / work[64] < 1.25 * growth, (work, size)


# --- speculators ------------------------------------------------------------------------------


def test_speculators_flags_follow_upstream(catalog, baseline):
    text = generate(baseline, catalog, "speculators").text
    words = shlex.split(text.replace("\\\n", " "), comments=True)
    assert "--no-include-last-layer" not in words
    assert words[words.index("--max-model-len") + 1] == "3073"
    prepare = words.index("prepare-data")
    data = words[words.index("--output", prepare) + 1]
    assert words[words.index("--data-path") + 1] == data
    assert words.index("prepare-data") < words.index("speculators.train")
    gamma = words.index("--dflash-decay-gamma")
    assert words[words.index("--per-position-loss-weight") + 1] == "fixed-exp-decay"
    assert words[gamma + 1] == "7.0"
    block10 = edit(baseline, workload={"block_size": 10})
    assert "--dflash-decay-gamma" not in generate(block10, catalog, "speculators").text


def test_speculators_across_nodes_names_each_node(catalog, baseline):
    plan = edit(
        baseline,
        target={"gpu": "b200", "count": 8},
        drafter={"gpu": "b200", "count": 8},
        launch={"hosts": ["gpu-a", "gpu-b"]},
    )
    text = generate(plan, catalog, "speculators").text
    bash_syntax_ok(text)
    for node in (0, 1):
        assert 'fabric_addr="$(fabric_ip gpu-a)"' in section(text, node)
    assert "--mooncake-global-segment-gib" in section(text, 0)
    assert "--mooncake-master gpu-a:35551" in section(text, 1)


# --- template ---------------------------------------------------------------------------------


def test_template_master_addr_is_node_rank_0(catalog, baseline):
    plan = edit(
        baseline,
        target={"gpu": "b200", "count": 8},
        drafter={"gpu": "b200", "count": 8},
        launch={
            "hosts": ["gpu-a", "gpu-b"],
            "template": "torchrun --nnodes {nnodes} --node_rank {node_rank} "
            "--master_addr {master_addr} train.py",
        },
    )
    text = generate(plan, catalog, "template").text
    assert "torchrun --nnodes 2 --node_rank 0 --master_addr gpu-a" in text
    assert "torchrun --nnodes 2 --node_rank 1 --master_addr gpu-a" in text


# --- hostile strings ------------------------------------------------------------------------

HOSTILE = 'x\'; touch PWNED; echo "$(touch PWNED2)" `touch PWNED3` $HOME\nrm -rf ~ ; y'
# Names (run_id, hosts, GPU keys in a plan) are one line by the plan's rules.
HOSTILE_LINE = 'x\'; touch PWNED; echo "$(touch PWNED2)" `touch PWNED3` $HOME ; y'


# curl finds every service up, except the Mooncake master a node running only capture
# servers watches to know when the run is over (a SkyPilot node stops them then).
STOPPED_MASTER = 'case "$*" in *dflash-plan-run-alive*) exit 7 ;; esac\n'


def stub_bin(tmp_path: Path, names: list[str]) -> Path:
    """Commands that only record their arguments, one per line, then succeed."""
    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name in names:
        path = bin_dir / name
        # One file per call: background calls must not interleave their records.
        path.write_text(
            '#!/bin/bash\ntrap "" TERM\nprintf "%s\\0" "$@" '
            f'> "$STUB_LOG/{name}.${{EPOCHREALTIME/./}}.$$.args"\n'
            + (STOPPED_MASTER if name == "curl" else "")
        )
        path.chmod(path.stat().st_mode | stat.S_IEXEC)
    scontrol = bin_dir / "scontrol"
    scontrol.write_text("#!/bin/bash\nprintf 'h0\\nh1\\nh2\\n'\n")
    scontrol.chmod(0o755)
    good_node(bin_dir)
    return bin_dir


def good_node(bin_dir: Path) -> None:
    """A node the pre-flight finds good (tests/preflight_stubs.py): its tools, and the
    node's python answering the pre-flight's question before any record (it loads
    nothing); nvidia-smi names the GPUs in STUB_GPU_NAME."""
    for name, body in {**PREFLIGHT_STUBS, "getent": GETENT_ANY}.items():
        if not (bin_dir / name).exists():
            (bin_dir / name).write_text(body)
            (bin_dir / name).chmod(0o755)
    python = bin_dir / "python"
    if python.exists():
        python.write_text(
            "#!/bin/bash\n" + PYTHON_PROBE + python.read_text().removeprefix("#!/bin/bash\n")
        )


def run_script(
    tmp_path: Path, text: str, node_rank: int | None = None
) -> dict[str, list[list[str]]]:
    work = tmp_path / "work"
    work.mkdir(exist_ok=True)
    log = tmp_path / "log"
    log.mkdir(exist_ok=True)
    bin_dir = tmp_path / "bin"
    if not bin_dir.exists():
        stub_bin(
            tmp_path,
            [
                "python",
                "specforge",
                "torchrun",
                "mooncake_master",
                "curl",
                "srun",
                "speculators",
                "go",
            ],
        )
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "STUB_LOG": str(log),
        "HOME": str(tmp_path),
        "SLURM_JOB_NODELIST": "h[0-2]",
        "STUB_GPU_NAME": wanted_gpus(text),
    }
    # The legacy format runs from a SpecForge checkout that has its trainer.
    (work / "scripts").mkdir(exist_ok=True)
    (work / "scripts" / "train_dflash.py").touch()
    if node_rank is not None:
        env["NODE_RANK"] = str(node_rank)
    # The scripts stop their background services with `kill` on exit; here `kill` waits
    # for them instead, so that every stub finishes its record.
    subprocess.run(
        ["bash", "-c", "kill() { wait; }\n" + text + "\nwait\n"],
        cwd=work,
        env=env,
        check=True,
        timeout=60,
        capture_output=True,
    )
    for mark in ("PWNED", "PWNED2", "PWNED3"):
        assert not (work / mark).exists(), "a hostile value ran as a command"
    calls: dict[str, list[list[str]]] = {}
    for path in sorted(log.glob("*.args")):
        calls.setdefault(path.name.split(".")[0], []).append(path.read_text().split("\0")[:-1])
    for path in log.glob("*.args"):
        path.unlink()
    return calls


def _node_0_status(tmp_path, bin_dir, text: str) -> int | None:
    """Node 0's script run under the stub tools in bin_dir (their calls logged in
    tmp_path/log): its exit status, None when it still runs after 20 s (then killed)."""
    import signal

    (tmp_path / "log").mkdir()
    good_node(bin_dir)
    env = {
        "PATH": f"{bin_dir}:/usr/bin:/bin",
        "STUB_LOG": str(tmp_path / "log"),
        "HOME": str(tmp_path),
        "NODE_RANK": "0",
        "DFLASH_FABRIC_IP": "10.0.0.0",
        "STUB_GPU_NAME": wanted_gpus(text),
    }
    node = subprocess.Popen(
        ["bash", "-c", text],
        cwd=tmp_path,
        env=env,
        start_new_session=True,
        stdout=subprocess.DEVNULL,
        stderr=subprocess.DEVNULL,
    )
    try:
        return node.wait(timeout=20)
    except subprocess.TimeoutExpired:
        return None
    finally:
        with contextlib.suppress(ProcessLookupError):
            os.killpg(node.pid, signal.SIGKILL)


def test_a_capture_only_node_stops_when_training_ends(tmp_path, catalog, baseline):
    # 8 + 16 B200: node 0 runs only the 8 capture servers, the trainers nodes 1 and 2. The
    # servers run until stopped; the node watches the first trainer node's Mooncake master,
    # which stops with its trainer (here: gone at once), and exits, stopping them.
    plan = edit(baseline, target={"gpu": "b200", "count": 8}, drafter={"gpu": "b200", "count": 16})
    script = generate(plan, catalog, "specforge")
    assert script.layout.drafter_nodes == (1, 2) and script.layout.targets_on(0)
    bin_dir = stub_bin(tmp_path, ["curl", "mooncake_master", "specforge"])
    (bin_dir / "python").write_text("#!/bin/bash\nexec sleep 300\n")
    (bin_dir / "python").chmod(0o755)
    status = _node_0_status(tmp_path, bin_dir, script.text)
    assert status == 0, "the node still runs its capture servers after training ended"
    watched = [
        path.read_text().split("\0")
        for path in (tmp_path / "log").glob("curl.*.args")
        if "dflash-plan-run-alive" in path.read_text()
    ]
    assert watched


def test_a_vllm_only_node_stops_when_training_ends(tmp_path, catalog, baseline):
    # speculators, 8 + 16 B200: node 0 runs only vLLM (and the Mooncake master), the
    # trainers nodes 1 and 2. vLLM serves until stopped (it waited for it: forever); the
    # node watches the first trainer node's liveness server, which stops with its script
    # (here: gone at once), and exits, stopping vLLM.
    plan = edit(baseline, target={"gpu": "b200", "count": 8}, drafter={"gpu": "b200", "count": 16})
    script = generate(plan, catalog, "speculators")
    assert script.layout.drafter_nodes == (1, 2) and script.layout.targets_on(0)
    bin_dir = stub_bin(tmp_path, ["curl", "mooncake_master"])
    (bin_dir / "python").write_text("#!/bin/bash\nexec sleep 300\n")  # vLLM
    (bin_dir / "python").chmod(0o755)
    status = _node_0_status(tmp_path, bin_dir, script.text)
    assert status == 0, "the node still runs vLLM after training ended"
    watched = sorted(
        path.read_text().split("\0")[-2] for path in (tmp_path / "log").glob("curl.*.args")
    )
    # Up first (the trainer node started), then gone: the first trainer node's server.
    assert watched == ["http://node1:35890/", "http://node1:35890/?key=dflash-plan-run-alive"]
    # The first trainer node serves it from the start of its script, nothing else does.
    servers = [line for line in script.text.splitlines() if "http.server" in line]
    assert len(servers) == 1 and '--directory "$alive_dir" 35890 ' in servers[0]
    first_trainer = script.text.split("\n  1)\n", 1)[1].split("\n  2)\n", 1)[0]
    assert "http.server" in first_trainer.split("prepare-data", 1)[0]


def hostile_plan(plan: Plan, **sections) -> Plan:
    return edit(
        plan,
        name=HOSTILE_LINE,
        launch={
            "run_id": HOSTILE_LINE,
            "target_model_path": HOSTILE,
            "train_data_path": HOSTILE,
            "hosts": [HOSTILE_LINE, "b; reboot"],
        },
        **sections,
    )


@pytest.mark.parametrize("fmt", ["specforge", "speculators", "specforge-legacy"])
def test_hostile_strings_stay_inert_on_one_node(tmp_path, catalog, baseline, fmt):
    plan = hostile_plan(baseline)
    script = generate(plan, catalog, fmt)
    calls = run_script(tmp_path, script.text)
    if fmt == "specforge":
        doc = yaml.safe_load((tmp_path / "work" / "run.yaml").read_text())
        assert doc["run_id"] == HOSTILE_LINE and doc["model"]["target_model_path"] == HOSTILE
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
        assert trainer[trainer.index("--output-dir") + 1] == f"./outputs/{HOSTILE_LINE}"


def test_hostile_strings_stay_inert_across_nodes(tmp_path, catalog, baseline):
    plan = hostile_plan(
        baseline, target={"gpu": "b200", "count": 8}, drafter={"gpu": "b200", "count": 8}
    )
    text = generate(plan, catalog, "specforge").text
    calls = run_script(tmp_path, text, node_rank=0)
    assert len(calls["python"]) == 8
    assert calls["python"][0][calls["python"][0].index("--model-path") + 1] == HOSTILE
    calls = run_script(tmp_path, text, node_rank=1)
    doc = yaml.safe_load((tmp_path / "work" / "run-node1.yaml").read_text())
    assert doc["deployment"]["disaggregated"]["server_urls"][0] == f"http://{HOSTILE_LINE}:30000"
    consumer = ["train", "-c", "run-node1.yaml", "--role", "consumer", "--node-rank", "0"]
    assert consumer in calls["specforge"]


def test_hostile_strings_stay_inert_in_slurm(tmp_path, catalog, baseline):
    plan = hostile_plan(
        baseline, target={"gpu": "b200", "count": 8}, drafter={"gpu": "b200", "count": 8}
    )
    text = generate(plan, catalog, "slurm").text
    assert "\n#SBATCH --job-name=x___touch_PWNED" in text  # directives cannot be quoted
    calls = run_script(tmp_path, text)
    steps = calls["srun"]
    servers = [s for s in steps if "sglang.launch_server" in s]
    assert len(servers) == 8 and servers[0][servers[0].index("--model-path") + 1] == HOSTILE
    assert servers[0][servers[0].index("-w") + 1] == "h0"
    consumers = [s for s in steps if "consumer" in s]
    assert len(consumers) == 1 and consumers[0][consumers[0].index("-w") + 1] == "h1"
    consumer = consumers[0]
    assert "CUDA_VISIBLE_DEVICES=0,1,2,3,4,5,6,7" in consumer
    assert 'deployment.disaggregated.server_urls=["http://h0:30000"' in " ".join(consumer)


def hostile_catalog(catalog, key: str):
    """The catalog with b200 renamed to a hostile key, as a user's hardware file could."""
    gpu = catalog.gpus["b200"].model_copy(update={"key": key, "name": HOSTILE})
    return Catalog(gpus={**catalog.gpus, key: gpu}, models=catalog.models)


@pytest.mark.parametrize("fmt", FORMATS)
def test_hostile_gpu_keys_and_names_stay_inert(tmp_path, catalog, baseline, fmt):
    # Loading a hardware file refuses such a key; a catalog built in code still must not
    # turn it into a command.
    key = "b200;touch PWNED;$(touch PWNED2)"
    plan = edit(
        baseline,
        name=HOSTILE_LINE,
        target={"gpu": key, "count": 8},
        drafter={"gpu": key, "count": 8},
        launch={"template": "go {target_gpu} {drafter_gpu} {host}"},
    )
    text = generate(plan, hostile_catalog(catalog, key), fmt).text
    if fmt in MANIFEST_FORMATS:
        # The key and name reach the header's comments and, quoted, the pods' pre-flight
        # (the GPU name it matches; test_escaping.py runs the pods' shells with hostile
        # values).
        assert validate_manifest(manifest(text)) == []
        assert all(
            line.startswith("#") or "'" in line for line in text.splitlines() if "PWNED" in line
        )
        return
    shell = shell_of(text)
    bash_syntax_ok(shell)
    for line in shell.splitlines():
        assert "touch PWNED" not in line or line.lstrip().startswith("#") or "'" in line
    for rank in (0, 1):
        run_script(tmp_path, shell, node_rank=rank)


# --- templates --------------------------------------------------------------------------------


def test_template_fills_quoted_placeholders(catalog, baseline):
    template = (
        "my-launcher --targets {target_devices} --drafters {drafter_devices} "
        "--model {target_model} --epochs {epochs} --anchors {num_anchors} "
        "--nodes {nnodes} --run {run_id}"
    )
    plan = edit(baseline, launch={"template": template, "run_id": HOSTILE_LINE})
    text = generate(plan, catalog, "template").text
    bash_syntax_ok(text)
    # The command after the pre-flight's call.
    words = shlex.split(text.split("runs the same checks)' >&2; exit 1; }\n\n")[1])
    assert words[:9] == [
        "my-launcher",
        "--targets",
        "0,1,2",
        "--drafters",
        "3",
        "--model",
        "Qwen/Qwen3-8B",
        "--epochs",
        "6",
    ]
    assert words[-1] == HOSTILE_LINE


def test_template_per_node(catalog, baseline):
    plan = edit(
        baseline,
        target={"gpu": "b200", "count": 10},
        drafter={"gpu": "b200", "count": 6},
        launch={"template": "run --node {node_rank} --t {target_devices} --d {drafter_devices}"},
    )
    text = generate(plan, catalog, "template").text
    assert "run --node 0 --t 0,1,2,3,4,5,6,7 --d ''" in text
    assert "run --node 1 --t 0,1 --d 2,3,4,5,6,7" in text


def test_unknown_placeholder_is_a_clear_error(catalog, baseline):
    plan = edit(baseline, launch={"template": "go {target_devicez}"})
    with pytest.raises(
        PlanError,
        match=r"unknown placeholder \{target_devicez\}; known: "
        r"\{target_devices\}",
    ):
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


def test_the_registry_is_the_one_list_of_formats():
    from dflash_plan.model.inputs.plan import Launch
    from dflash_plan.model.launch import format_module

    assert all(fmt == format_module(fmt).NAME for fmt in FORMATS)
    # The plan file's launch.format accepts exactly the registered formats.
    for fmt in FORMATS:
        assert Launch(format=fmt).format == fmt
    with pytest.raises(ValueError, match="choose one of specforge"):
        Launch(format="torchtitan")
    with pytest.raises(PlanError, match="launch format 'docker'") as err:
        generate(Plan(), None, "docker")
    assert err.value.key == "launch.format"


def test_importing_the_formats_list_loads_no_format():
    code = (
        "import sys; from dflash_plan.model.launch import FORMATS; "
        "assert 'yaml' not in sys.modules and "
        "'dflash_plan.model.launch.specforge' not in sys.modules, sorted(sys.modules)"
    )
    subprocess.run([sys.executable, "-c", code], check=True)


# --- the projection of the launched run -------------------------------------------------------

FOUR_B200 = ["--set", "target.gpu=b200", "--set", "drafter.gpu=b200"]


def projected(capsys, sets: list[str]) -> str:
    """What `project --json` prints for the plan, as a launch header writes it."""
    import json

    assert main(["project", "--json", *sets]) == 0
    doc = json.loads(capsys.readouterr().out)
    ranges = doc["ranges"]

    def cost(v):
        return f"{units.amount(v)} {doc['cost_unit']}"

    def within(pair, one):
        text = units.spread(pair, one)
        return f" (range {text})" if text else ""

    return (
        units.ktok(doc["tokens_per_s"])
        + within(ranges["tokens_per_s"], units.ktok)
        + f", {units.duration(doc['days'])} to {doc['epochs']} epochs"
        + within(ranges["days"], units.duration)
        + f", cost {cost(doc['total_cost'])}"
        + within(ranges["total_cost"], cost)
    )


# The launched path of SpecForge's formats and speculators: the Mooncake store with host
# receive (specforge 0.2.0 and speculators receive into pageable host memory).
LAUNCHED = ["--set", "workload.transport=mooncake", "--set", "workload.receive=host"]
LAUNCHED_KEYS = "workload.transport = mooncake, workload.receive = host"


@pytest.mark.parametrize("fmt", ["specforge", "slurm", "speculators", "template"])
def test_every_header_states_the_projection_of_the_run_it_launches(capsys, fmt):
    # 4 x B200, 3 + 1: the plan's own figures are device to device (the built-in plan's
    # transport); SpecForge, its Slurm script and speculators stage hidden states in host
    # memory and receive them there, which `project --set workload.transport=mooncake
    # --set workload.receive=host` projects.
    sets = [*FOUR_B200, "--set", "launch.template=go {tp}"]
    assert main(["launch", "--format", fmt, *sets]) == 0
    text = capsys.readouterr().out
    own = projected(capsys, sets)
    if fmt == "template":
        # A template runs the plan's own path.
        assert (
            f"# projection of this run (hidden states device to device, "
            f"workload.transport = direct): {own}\n"
        ) in text
        return
    launched = projected(capsys, [*sets, *LAUNCHED])
    assert launched != own
    assert (
        f"# projection of this run (hidden states host-staged through a Mooncake store, "
        f"host receive, {LAUNCHED_KEYS}): {launched}\n"
    ) in text
    assert (
        f"# the plan's own figures are for hidden states device to device "
        f"(workload.transport = direct): {own}; this launch does not run that path: "
    ) in text
    # Through the store with pinned receive (the plan's default), the path still differs.
    pinned_sets = [*sets, "--set", "workload.transport=mooncake"]
    pinned = projected(capsys, pinned_sets)
    assert pinned != launched
    assert main(["launch", "--format", fmt, *pinned_sets]) == 0
    text = capsys.readouterr().out
    assert f"{LAUNCHED_KEYS}): {launched}\n" in text
    assert (
        f"# the plan's own figures are for hidden states host-staged through a Mooncake "
        f"store, pinned receive (workload.transport = mooncake, workload.receive = pinned): "
        f"{pinned}; this launch does not run that path: {LAUNCH_RECEIVE[fmt][1]}\n"
    ) in text
    # With the launched path in the plan, the header gives one projection.
    assert main(["launch", "--format", fmt, *sets, *LAUNCHED]) == 0
    text = capsys.readouterr().out
    assert f"{LAUNCHED_KEYS}): {launched}\n" in text
    assert "the plan's own figures" not in text


@pytest.mark.parametrize("fmt", ["skypilot", "slurm"])
def test_a_header_costs_the_gpus_its_launch_rents(capsys, fmt):
    # 10 + 2 B200 land 8 + 4 on two 8-GPU nodes; SkyPilot asks B200:8 on each node and
    # Slurm takes both whole (--exclusive): 16 GPUs rented, as when the projection bills
    # B200 in whole units of 8 (ceil(12 / 8) x 8 = 16).
    sets = [*FOUR_B200, "--set", "target.count=10", "--set", "drafter.count=2", *LAUNCHED]
    assert main(["launch", "--format", fmt, *sets]) == 0
    text = capsys.readouterr().out
    assert "2 nodes x B200:8 = 16 GPU(s)" in text or "2 node(s) x 8 GPU(s) = 16 GPU(s)" in text
    rented = projected(capsys, [*sets, "--set", "cost.unit_gpus.b200=8"])
    assert rented != projected(capsys, sets)
    assert f"{LAUNCHED_KEYS}): {rented} for 16 GPUs billed\n" in text


def test_an_offline_header_says_a_short_epoch_in_minutes(catalog, baseline):
    # 32 + 128 B200 offline (20 nodes) on a quarter of the built-in samples: 200,000 x
    # 2,344 = 469 M tokens per epoch over 128 drafters at ~54 K tok/s each (B200's fitted
    # training efficiency, ~23 %) trains in about a minute, which read "6 epochs x 0.0 h"
    # (anything under 0.05 h does).
    from dflash_plan.model.core.projection import project

    plan = edit(
        baseline,
        target={"gpu": "b200", "count": 32},
        drafter={"gpu": "b200", "count": 128},
        workload={"mode": "offline", "samples": 200_000},
    )
    o = project(plan, catalog).offline
    assert o is not None and o.train_days_per_epoch * 24 < 0.05
    minutes = o.train_days_per_epoch * 24 * 60
    text = generate(plan, catalog, "specforge").text
    assert f"then {o.epochs} epochs x {minutes:,.0f} min = " in text
    assert " 0.0 h" not in text


def test_a_small_plans_header_writes_its_figures_as_project_does(capsys):
    # The built-in plan (measured: no range) for 1,000 samples read "0.0 days to 6 epochs,
    # cost 1 RTX PRO 6000-hours". Its 800,000 samples cost 844.69 RTX PRO 6000-hours:
    # 1,000 cost 844.69 / 800 = 1.06, on 4 GPUs 1.06 / 4 h = 15.8 min.
    sets = ["--set", "workload.samples=1000", "--set", "launch.template=go {tp}"]
    assert main(["launch", "--format", "template", *sets]) == 0
    assert (
        "workload.transport = direct): 14.8 Ktok/s, 16 min to 6 epochs, "
        "cost 1.06 RTX PRO 6000-hours\n"
    ) in capsys.readouterr().out


def test_a_headers_ranges_carry_their_units(capsys):
    # 4 B200 (estimated: the figures have ranges) for 20,000 samples: a run of hours,
    # whose range reads in hours as `project` gives it, not "(range 0.1-0.2)" days.
    sets = [*FOUR_B200, "--set", "workload.samples=20000", *LAUNCHED]
    assert main(["launch", "--format", "specforge", *sets]) == 0
    header = capsys.readouterr().out
    assert re.search(
        r"Ktok/s \(range [\d.]+-[\d.]+ Ktok/s\), [\d.]+ hours to 6 epochs "
        r"\(range [\d.]+-[\d.]+ hours\), cost [\d.]+ RTX PRO 6000-hours "
        r"\(range [\d.]+-[\d.]+ RTX PRO 6000-hours\)",
        header,
    ), header
    assert f"{LAUNCHED_KEYS}): {projected(capsys, sets)}\n" in header


def test_a_header_never_prints_a_zero_wide_range(capsys):
    # 16 H100 targets (TP 8) of Llama-3.3-70B feeding 8 H100 drafters through Mooncake:
    # the fetch binds at every scenario, so the throughput has no spread to show.
    import re

    sets = [
        "--set",
        "workload.target_model=llama-3.3-70b-instruct",
        "--set",
        "target.gpu=h100-sxm",
        "--set",
        "target.tp=8",
        "--set",
        "target.count=16",
        "--set",
        "drafter.gpu=h100-sxm",
        "--set",
        "drafter.count=8",
    ]
    assert main(["launch", "--format", "specforge", *sets]) == 0
    header = "".join(
        line
        for line in capsys.readouterr().out.splitlines()
        if line.startswith("# projection of this run")
    )
    assert header and " Ktok/s" in header
    for low, high in re.findall(r"\(range ([\d,.]+)-([\d,.]+)[ )]", header):
        assert low != high, header


def test_the_legacy_header_says_no_projection_describes_it(catalog, baseline):
    text = generate(baseline, catalog, "specforge-legacy").text
    assert (
        "# projection: none for this run: the legacy trainer runs target and drafter "
        "colocated" in text
    )


def test_project_says_which_launch_its_figures_describe(capsys):
    assert main(["project", *FOUR_B200]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (
        "launch: these figures are for hidden states device to device (workload.transport "
        "= direct), which the specforge launch does not run: SpecForge stages hidden "
        "states through its Mooncake store; --set workload.transport=mooncake --set "
        "workload.receive=host projects the launched run"
    ) in out
    # Through the store with pinned receive (the plan key's default): the receive differs.
    assert main(["project", *FOUR_B200, "--set", "workload.transport=mooncake"]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (
        "launch: these figures are for hidden states host-staged through a Mooncake store, "
        "pinned receive (workload.transport = mooncake, workload.receive = pinned), which "
        f"the specforge launch does not run: {SPECFORGE_RECEIVE}; --set "
        "workload.transport=mooncake --set workload.receive=host projects the launched run"
    ) in out
    assert main(["project", *FOUR_B200, *LAUNCHED]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert (
        "launch: these figures describe the specforge launch (hidden states host-staged "
        f"through a Mooncake store, host receive, {LAUNCHED_KEYS})"
    ) in out


def test_the_launch_tab_shows_the_same_header(catalog, baseline):
    from dflash_plan.tui.planner.screen import write_launch

    plan = edit(baseline, target={"gpu": "b200"}, drafter={"gpu": "b200"})
    tab = write_launch(plan, catalog, "specforge", None)
    header = [
        line
        for line in generate(plan, catalog, "specforge").text.splitlines()
        if line.startswith("# projection of this run")
    ]
    assert len(header) == 1 and header[0] in tab.splitlines()


# --- issue 21: smaller items ----------------------------------------------------------------


def test_run_id_follows_the_model(catalog, baseline):
    doc = yaml_in(generate(baseline, catalog, "specforge").text)
    assert doc["run_id"] == "qwen3-8b-dflash"
    llama = edit(
        baseline,
        workload={"target_model": "llama-3.1-8b-instruct"},
        target={"gpu": "b200"},
        drafter={"gpu": "b200"},
    )
    doc = yaml_in(generate(llama, catalog, "specforge").text)
    assert doc["run_id"] == "llama-3.1-8b-instruct-dflash"
    assert doc["output_dir"] == "./outputs/llama-3.1-8b-instruct-dflash"
    # A run_id the plan names stays.
    named = edit(llama, launch={"run_id": "mine"})
    assert yaml_in(generate(named, catalog, "specforge").text)["run_id"] == "mine"


def test_placeholder_hosts_are_said_to_be_placeholders(catalog, baseline):
    plan = edit(baseline, target={"gpu": "b200", "count": 8}, drafter={"gpu": "b200", "count": 8})
    for fmt in ("specforge", "speculators", "specforge-legacy"):
        text = generate(plan, catalog, fmt).text
        assert (
            "# note: host names node0-node1 are placeholders: set the plan's launch.hosts" in text
        ), fmt
        named = edit(plan, launch={"hosts": ["gpu-a", "gpu-b"]})
        assert "placeholders" not in generate(named, catalog, fmt).text
    # Slurm takes the allocation's hosts.
    assert "placeholders" not in generate(plan, catalog, "slurm").text


def test_node_sections_are_indented(catalog, baseline):
    # Eight capture servers: the trainer node waits for them in a loop.
    plan = edit(baseline, target={"gpu": "b200", "count": 8}, drafter={"gpu": "b200", "count": 16})
    for fmt in ("specforge", "speculators"):
        text = generate(plan, catalog, fmt).text
        block = text[text.rindex('case "$node_rank" in\n') :].splitlines()[1:-1]
        assert "for url in" in text or fmt == "speculators"
        assert all(line.startswith("  ") for line in block), fmt


def test_trainer_nodes_wait_for_the_servers_and_the_rendezvous_waits_long(catalog, baseline):
    plan = edit(baseline, target={"gpu": "b200", "count": 8}, drafter={"gpu": "b200", "count": 16})
    text = generate(plan, catalog, "specforge").text
    for node in (1, 2):
        part = section(text, node)
        assert 'until curl -sf "$url/health"' in part
        assert part.index("/health") < part.index("--role consumer")
        # torchrun's static rendezvous gives up after 600 s unless told otherwise.
        assert f"PET_RDZV_CONF=timeout=10800 specforge train -c run-node{node}.yaml" in part
    spec = generate(plan, catalog, "speculators").text
    assert spec.count("--rdzv_conf timeout=10800") == 2
    # One trainer node: no rendezvous to wait for.
    assert "RDZV" not in generate(edit(plan, drafter={"count": 8}), catalog, "specforge").text


def test_vllm_trusts_remote_code_and_segments_are_per_engine(catalog, baseline):
    plan = edit(baseline, target={"gpu": "b200", "count": 8}, drafter={"gpu": "b200", "count": 8})
    text = generate(plan, catalog, "speculators").text
    words = shlex.split(section(text, 0).replace("\\\n", " "), comments=True)
    serve = words[words.index("--") + 1 :]
    assert "--trust-remote-code" in serve[: serve.index(">")]
    # Across nodes each trainer rank loads with speculators' tested 2 workers (each a
    # Mooncake client; 12 exhausted a node's threads, PR #1046), each waiting on a batch of
    # 2: 8 ranks x 4 = 32 max-length samples spread over the 8 engines, each registering
    # its own segment (a quarter to spare, whole GiB).
    assert "--num-workers 2" in text
    sample = context(plan, catalog).resolved
    from dflash_plan.model.launch.common import sample_feature_bytes

    per_engine = 2 * 2 * 8 / 8 * sample_feature_bytes(sample) * 1.25
    segment = int(words[words.index("--mooncake-global-segment-gib") + 1])
    assert segment == max(1, -(-int(per_engine) // 2**30))
    assert (
        f"registers a segment of {segment} GiB of host memory (up to 8 engine(s) = "
        f"{8 * segment} GiB on a node)" in text
    )


def test_slurm_asks_memory_and_cpus(catalog, baseline):
    text = generate(baseline, catalog, "slurm").text
    # Part of a node: 3 capture servers (TP 1: scheduler, tokenizer manager, detokenizer),
    # 1 trainer rank, the producer with 8 tokenizing workers and the master = 20 CPUs.
    assert "#SBATCH --cpus-per-task=20" in text
    mem = int(text.split("#SBATCH --mem=")[1].split("G")[0])
    ctx = context(baseline, catalog)
    from dflash_plan.model.launch.specforge import server_segment_gib

    assert mem >= 3 * (server_segment_gib(ctx) + ctx.memory.weights_gib)
    whole = edit(baseline, target={"gpu": "b200", "count": 4}, drafter={"gpu": "b200", "count": 4})
    text = generate(whole, catalog, "slurm").text
    assert "#SBATCH --exclusive\n#SBATCH --mem=0\n" in text and "--cpus-per-task" not in text


def test_the_fabric_address_is_found_on_the_node(tmp_path):
    from dflash_plan.model.launch.common import FABRIC_IP_FUNCTION

    bin_dir = tmp_path / "bin"
    bin_dir.mkdir()
    for name, body in {
        "ip": 'echo "10.1.2.3 via 192.168.0.1 dev ib0 src $SRC uid 0"',
        "getent": 'echo "10.1.2.3   STREAM head"',
        "hostname": 'echo "192.168.7.7 10.1.2.9"',
    }.items():
        (bin_dir / name).write_text(f"#!/bin/bash\n{body}\n")
        (bin_dir / name).chmod(0o755)

    def found(**env: str) -> str:
        result = subprocess.run(
            ["bash", "-c", FABRIC_IP_FUNCTION + "\nfabric_ip head"],
            env={"PATH": f"{bin_dir}:/usr/bin:/bin", **env},
            capture_output=True,
            text=True,
            check=True,
        )
        return result.stdout.strip()

    # The source address of the route to the head, not the host name's address.
    assert found(SRC="10.1.2.4") == "10.1.2.4"
    # A loopback route (the head is this node, named on 127.0.1.1): the first address.
    assert found(SRC="127.0.0.1") == "192.168.7.7"
    assert found(SRC="10.1.2.4", DFLASH_FABRIC_IP="172.16.0.5") == "172.16.0.5"


def test_nodes_sharing_a_folder_write_their_own_run_file(tmp_path, catalog, baseline):
    plan = edit(baseline, target={"gpu": "b200", "count": 8}, drafter={"gpu": "b200", "count": 8})
    text = generate(plan, catalog, "specforge").text
    calls = {node: run_script(tmp_path, text, node_rank=node) for node in (0, 1)}
    files = sorted(p.name for p in (tmp_path / "work").glob("run*.yaml"))
    assert files == ["run-node0.yaml", "run-node1.yaml"]
    assert all(argv[argv.index("-c") + 1] == "run-node1.yaml" for argv in calls[1]["specforge"])


def test_legacy_is_pinned_to_the_last_commit_with_its_trainer(tmp_path, catalog, baseline):
    from dflash_plan.model.launch.specforge_legacy import PINNED_COMMIT

    assert PINNED_COMMIT.startswith("40d8feff")
    text = generate(baseline, catalog, "specforge-legacy").text
    assert (
        "# note: pinned to sgl-project/SpecForge 40d8feff, the last commit with "
        "scripts/train_dflash.py (removed in d5883d5b"
    ) in text
    assert (
        "git clone https://github.com/sgl-project/SpecForge && cd SpecForge && git checkout "
        "40d8feff && pip install -e ." in text
    )
    # Run anywhere else, it stops at once with one line saying where to run it.
    result = subprocess.run(
        ["bash", "-c", text],
        cwd=tmp_path,
        capture_output=True,
        text=True,
        env={"PATH": "/usr/bin:/bin"},
    )
    assert result.returncode == 2
    assert result.stderr.count("\n") == 1 and "SpecForge checkout at 40d8feff" in result.stderr


def test_the_apps_launch_follows_the_plan_as_edited():
    # The header names the plan as it is now, and the run id follows the model.
    from dflash_plan.tui.config import load_catalog
    from dflash_plan.tui.planner.screen import write_launch
    from dflash_plan.tui.state import Planner

    state = Planner(load_catalog())
    for key, value in (
        ("target.gpu", "b200"),
        ("drafter.gpu", "b200"),
        ("workload.target_model", "qwen3-4b"),
    ):
        assert state.edit(key, value)
    state.recompute()
    text = write_launch(*state.launch_input())
    assert "# plan: 3 targets + 1 drafter, B200, Qwen3-4B\n" in text
    assert yaml_in(text)["run_id"] == "qwen3-4b-dflash"


def test_the_skypilot_task_is_written_as_a_document(tmp_path):
    out = tmp_path / "task.yaml"
    assert main(["launch", "--format", "skypilot", "-o", str(out)]) == 0
    task = yaml.safe_load(out.read_text())
    assert task["resources"] == {"accelerators": "RTXPRO6000:4"}
    assert not os.access(out, os.X_OK)  # a task YAML for `sky launch`, not a script


@pytest.mark.parametrize("fmt", ["specforge", "slurm"])
def test_hostile_strings_stay_inert_in_a_colocated_dflash2_launch(tmp_path, catalog, baseline, fmt):
    # Two nodes of 8 B200s, every GPU a target shard and a drafter rank, DFlash2's draft
    # config written beside the run: every user string still one inert word or value.
    plan = hostile_plan(
        baseline,
        target={"gpu": "b200", "count": 8, "tp": 2},
        drafter={"gpu": "b200", "count": 8},
        workload={"topology": "colocated", "drafter": "dflash2"},
    )
    script = generate(plan, catalog, fmt)
    trainers = []
    for node in (0, 1) if fmt == "specforge" else (None,):
        calls = run_script(tmp_path, script.text, node_rank=node)
        assert set(calls) <= {"specforge", "srun"}  # no capture server, producer, Mooncake
        # Slurm's steps: the trainers, after one pre-flight step per node.
        steps = [c for c in calls.get("srun", []) if "preflight" not in c]
        trainers += calls["specforge"] if fmt == "specforge" else steps
    work = tmp_path / "work"
    doc = yaml.safe_load(
        (work / ("run-node1.yaml" if fmt == "specforge" else "run.yaml")).read_text()
    )
    assert doc["run_id"] == HOSTILE_LINE and doc["model"]["target_model_path"] == HOSTILE
    assert doc["data"]["train_data_path"] == HOSTILE
    assert doc["deployment"]["mode"] == "local_colocated"
    assert json.loads((work / "draft-config.json").read_text())["architectures"] == [
        "DFlash2DraftModel"
    ]
    assert len(trainers) == 2
    if fmt == "specforge":
        assert doc["deployment"]["trainer"]["master_addr"] == HOSTILE_LINE
        assert ["train", "-c", "run-node1.yaml", "--node-rank", "1"] in trainers
    assert not list(tmp_path.rglob("PWNED*"))


@pytest.mark.parametrize(
    ("fmt", "workload"),
    [("speculators", "topology=colocated"), ("specforge-legacy", "drafter=dspark")],
)
def test_a_format_refuses_what_it_cannot_run_in_one_line(capsys, fmt, workload):
    assert main(["launch", "--format", fmt, "--set", f"workload.{workload}"]) == 2
    err = capsys.readouterr().err.strip().splitlines()
    key, value = workload.split("=")
    assert len(err) == 1
    assert f"launch.format {fmt} cannot run workload.{key} {value}: " in err[0]


def test_every_refusal_names_a_family_and_reaches_generate(catalog, baseline):
    # A row's refusals name the plan's own values, and generate says exactly the row's.
    from dflash_plan.model.inputs import formats
    from dflash_plan.model.inputs.plan import DRAFTERS

    b200 = {"gpu": "b200", "count": 4}
    for name, row in formats.FORMATS.items():
        families = [family for family, _ in row.drafter_refusals]
        assert len(set(families)) == len(families) and set(families) <= set(DRAFTERS)
        for family, why in row.drafter_refusals:
            workload = {"drafter": family, "block_size": None}
            if family == "eagle3":
                workload["draft_layers"] = 1
            plan = edit(baseline, target=b200, drafter=b200, workload=workload)
            with pytest.raises(PlanError, match=re.escape(why)):
                generate(plan, catalog, name)
    # The formats a colocated plan can be launched with write it.
    plan = edit(baseline, target=b200, drafter=b200, workload={"topology": "colocated"})
    for name in formats.names():
        if formats.FORMATS[name].colocated_refusal is None:
            assert generate(plan, catalog, name, template="run {nnodes}").text


def test_an_offline_header_states_the_projections_bytes_per_token(catalog, baseline):
    # DFlash2 offline through speculators: 5 captured layers and the final hidden state
    # (DFlash2's sixth tensor, which speculators' last layer already is: stored once) x
    # 4,096 x 2 bytes = 49,152, plus 9 bytes of ids and mask = 49,161: the projection's
    # own figure, not a second count.
    from dflash_plan.model.core.projection import project

    plan = edit(
        baseline,
        workload={"mode": "offline", "drafter": "dflash2"},
        launch={"format": "speculators"},
    )
    o = project(plan, catalog).offline
    assert o is not None and o.bytes_per_token == 6 * 4096 * 2 + 9
    text = generate(plan, catalog, "speculators").text
    assert "offline: the capture writes 49,161 bytes per token (5 captured + 1 more " in text


def test_a_colocated_plans_launch_line_names_no_transport(capsys):
    # The template runs the user's command: on a colocated plan nothing is sent either.
    sets = ["--set", "workload.topology=colocated", "--set", "launch.format=template"]
    assert main(["project", *sets]) == 0
    out = " ".join(capsys.readouterr().out.split())
    assert "launch: these figures describe the template launch (colocated, no hidden-state " in out
    assert "device to device" not in out.split("launch:")[1].split(".")[0]
