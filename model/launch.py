"""Launch commands for the planned run: SpecForge (unified and legacy), vLLM speculators,
Slurm, and a user's own template.

Every value placed into a shell line goes through shlex.quote; YAML comes from a YAML
library. Device assignment is explicit and checked before anything is rendered.
"""

from __future__ import annotations

import math
import re
import shlex
import string
from dataclasses import dataclass

import yaml

from .errors import PlanError
from .plan import Plan
from .projection import Catalog
from .targets import TargetModel
from .units import BF16_BYTES, BYTES_PER_GB

FORMATS = ("specforge", "speculators", "specforge-legacy", "slurm", "template")

# The DFlash recipe (dflash.md), set explicitly because the tools' defaults differ.
LEARNING_RATE = 6e-4
WARMUP_RATIO = 0.04
MAX_GRAD_NORM = 1.0
LOSS_DECAY_GAMMA_B16 = 7.0
SAVE_INTERVAL = 1000
DIST_TIMEOUT_MIN = 30
# SGLang's context must hold the sequence plus the drafter's extra tokens (managed-local
# passes max_length + 7).
CONTEXT_EXTRA_TOKENS = 7
# SpecForge's producer keeps up to 8 requests in flight per worker (runtime.producer_lease):
# the capture server's KV pool is sized for that many max-length sequences.
IN_FLIGHT_SEQUENCES = 8
VLLM_PORT = 8000
MOONCAKE_RPC_PORT = 50051
VLLM_DP_RPC_PORT = 13345
HEREDOC = "DFLASH_PLAN_EOF"


@dataclass(frozen=True, slots=True)
class Replica:
    """One target replica: a TP group of devices on one node, serving on one port."""

    node: int
    devices: tuple[int, ...]
    port: int


@dataclass(frozen=True, slots=True)
class Layout:
    hosts: tuple[str, ...]
    gpus_per_node: int
    replicas: tuple[Replica, ...]
    drafters: dict[int, tuple[int, ...]]     # node -> drafter devices on it

    @property
    def nodes(self) -> int:
        return len(self.hosts)

    @property
    def target_nodes(self) -> tuple[int, ...]:
        return tuple(dict.fromkeys(r.node for r in self.replicas))

    @property
    def drafter_nodes(self) -> tuple[int, ...]:
        return tuple(self.drafters)

    def targets_on(self, node: int) -> tuple[Replica, ...]:
        return tuple(r for r in self.replicas if r.node == node)


def assign_devices(plan: Plan, catalog: Catalog) -> Layout:
    """Targets fill nodes from node 0, a TP group never straddling two nodes; drafters
    follow on the same nodes (same GPU type) or on machines of their own."""
    t_gpu, d_gpu = catalog.gpus[plan.target.gpu], catalog.gpus[plan.drafter.gpu]
    per_node, tp = t_gpu.gpus_per_node, plan.target.tp
    if tp > per_node:
        raise PlanError(f"target.tp = {tp}: a TP group must sit inside one node "
                        f"({t_gpu.name}: {per_node} GPUs per node)")
    replicas: list[Replica] = []
    node, slot = 0, 0
    for index in range(plan.target.replicas):
        if slot + tp > per_node:
            node, slot = node + 1, 0
        replicas.append(Replica(node, tuple(range(slot, slot + tp)), plan.launch.base_port + index))
        slot += tp
    drafters: dict[int, list[int]] = {}
    if plan.drafter.gpu == plan.target.gpu:
        d_per_node = per_node
    else:
        node, slot, d_per_node = node + 1, 0, d_gpu.gpus_per_node
    for _ in range(plan.drafter.count):
        if slot >= d_per_node:
            node, slot = node + 1, 0
        drafters.setdefault(node, []).append(slot)
        slot += 1
    nodes = node + 1
    hosts = plan.launch.hosts or tuple(f"node{i}" for i in range(nodes))
    if len(hosts) < nodes:
        raise PlanError(f"launch.hosts names {len(hosts)} host(s); this plan needs {nodes} "
                        f"nodes ({plan.target.count} + {plan.drafter.count} GPUs)")
    layout = Layout(hosts=tuple(hosts[:nodes]), gpus_per_node=per_node,
                    replicas=tuple(replicas),
                    drafters={n: tuple(devs) for n, devs in drafters.items()})
    check_layout(layout, plan, catalog)
    return layout


def check_layout(layout: Layout, plan: Plan, catalog: Catalog) -> None:
    """No GPU used twice, counts as planned, TP groups contiguous inside one node."""
    used: set[tuple[int, int]] = set()
    t_per = catalog.gpus[plan.target.gpu].gpus_per_node
    d_per = catalog.gpus[plan.drafter.gpu].gpus_per_node
    for replica in layout.replicas:
        devs = replica.devices
        if len(devs) != plan.target.tp or list(devs) != list(range(devs[0], devs[0] + len(devs))):
            raise PlanError(f"internal: TP group {devs} on node {replica.node} is not contiguous")
        if devs[-1] >= t_per:
            raise PlanError(f"internal: TP group {devs} leaves node {replica.node}")
        for dev in devs:
            if (replica.node, dev) in used:
                raise PlanError(f"internal: GPU {dev} of node {replica.node} used twice")
            used.add((replica.node, dev))
    for node, devs in layout.drafters.items():
        for dev in devs:
            if (node, dev) in used or dev >= d_per:
                raise PlanError(f"internal: drafter GPU {dev} of node {node} is taken or absent")
            used.add((node, dev))
    if len(layout.replicas) * plan.target.tp != plan.target.count:
        raise PlanError("internal: target GPU count differs from the plan")
    if sum(map(len, layout.drafters.values())) != plan.drafter.count:
        raise PlanError("internal: drafter GPU count differs from the plan")
    if len({r.port for r in layout.replicas}) != len(layout.replicas):
        raise PlanError("internal: two capture servers share a port")


@dataclass(frozen=True, slots=True)
class LaunchScript:
    format: str
    text: str                                # the whole script, ready to save and run
    files: dict[str, str]                    # files the script writes (name -> content)
    notes: tuple[str, ...]
    layout: Layout


# --- shared pieces -------------------------------------------------------------------

def _q(value: object) -> str:
    return shlex.quote(str(value))


WRAP_AT = 100


def _cmd(*parts: object, lead: int = 1) -> str:
    """A shell command line with every part quoted; a long one breaks before each option
    after its first `lead` words."""
    words = [_q(p) for p in parts]
    if sum(len(w) + 1 for w in words) <= WRAP_AT:
        return " ".join(words)
    lines: list[str] = [" ".join(words[:lead])]
    for word in words[lead:]:
        if not word.startswith("--"):
            lines[-1] += " " + word
        else:
            lines.append(word)
    return " \\\n      ".join(lines)


def _env(**variables: object) -> str:
    return " ".join(f"{name}={_q(value)}" for name, value in variables.items())


def _devices(devs: tuple[int, ...]) -> str:
    return ",".join(map(str, devs))


def model_path(plan: Plan, model: TargetModel) -> str:
    return plan.launch.target_model_path or model.path or model.hf_id or model.key


def output_dir(plan: Plan) -> str:
    return plan.launch.output_dir or f"./outputs/{plan.launch.run_id}"


def mem_fraction_static(plan: Plan, catalog: Catalog, model: TargetModel) -> float:
    """Share of a target GPU's memory SGLang reserves: the weight shard plus a KV pool for
    the producer's in-flight max-length sequences, rounded up to 0.05."""
    tp, length = plan.target.tp, plan.workload.max_length
    need = (BF16_BYTES * model.total_params / tp
            + IN_FLIGHT_SEQUENCES * BF16_BYTES * 2 * model.kv_dim * model.n_layers * length / tp)
    share = need / BYTES_PER_GB / catalog.gpus[plan.target.gpu].memory_gb
    return min(0.95, max(0.1, math.ceil(share * 20 - 1e-9) / 20))


@dataclass(frozen=True, slots=True)
class _Context:
    plan: Plan
    catalog: Catalog
    model: TargetModel
    layer_ids: tuple[int, ...]
    block: int
    layout: Layout

    @property
    def path(self) -> str:
        return model_path(self.plan, self.model)

    @property
    def chat_template(self) -> str:
        return self.plan.launch.chat_template or self.model.chat_template


def _context(plan: Plan, catalog: Catalog) -> _Context:
    try:
        model = catalog.models[plan.workload.target_model]
    except KeyError:
        raise PlanError(f"workload.target_model = {plan.workload.target_model!r}: not loaded") from None
    layer_ids = plan.workload.target_layer_ids or model.default_layer_ids(5)
    block = plan.workload.block_size or model.default_block_size
    return _Context(plan, catalog, model, tuple(layer_ids), block, assign_devices(plan, catalog))


def _heredoc(name: str, content: str) -> str:
    if any(line == HEREDOC for line in content.splitlines()):
        raise PlanError(f"{name}: content holds the line {HEREDOC}; rename a value")
    return f"cat > {_q(name)} <<'{HEREDOC}'\n{content.rstrip()}\n{HEREDOC}"


def _header(ctx: _Context, title: str, notes: list[str]) -> str:
    p = ctx.plan
    lines = [f"# dflash-plan launch: {title}",
             f"# plan: {p.name or 'unnamed'}".replace("\n", " "),
             f"# {p.target.count} target GPU(s) ({p.target.gpu}, tp {p.target.tp}) + "
             f"{p.drafter.count} drafter GPU(s) ({p.drafter.gpu}) on {ctx.layout.nodes} node(s)"]
    for i, host in enumerate(ctx.layout.hosts):
        targets = [f"{_devices(r.devices)}:{r.port}" for r in ctx.layout.targets_on(i)]
        drafters = _devices(ctx.layout.drafters.get(i, ()))
        lines.append(f"#   node {i} ({host}): targets [{' '.join(targets) or '-'}], "
                     f"drafters [{drafters or '-'}]".replace("\n", " "))
    lines += [f"# note: {n}".replace("\n", " ") for n in notes]
    return "\n".join(lines)


def _wait_healthy(urls: list[str]) -> str:
    return "\n".join(f"until curl -sf {_q(url + '/health')} >/dev/null; do sleep 5; done"
                     for url in urls)


def _node_case(sections: dict[int, list[str]], nodes: int) -> str:
    """One script for every node: NODE_RANK picks this node's part."""
    out = [f'node_rank="${{NODE_RANK:?set NODE_RANK to the index of this node, 0-{nodes - 1}}}"',
           'case "$node_rank" in']
    for node in range(nodes):
        body = sections.get(node) or ["echo 'nothing to run on this node'"]
        out.append(f"  {node})")
        out += ["    " + line for line in body]   # inner newlines may sit inside quotes
        out.append("    ;;")
    out += ["  *) echo \"NODE_RANK must be 0-" + str(nodes - 1) + "\" >&2; exit 2 ;;", "esac"]
    return "\n".join(out)


# --- SpecForge unified -------------------------------------------------------------------

def _sglang_server(ctx: _Context, replica: Replica, host: str) -> list[object]:
    p = ctx.plan
    return ["python", "-m", "sglang.launch_server", "--model-path", ctx.path,
            "--dtype", "bfloat16", "--trust-remote-code", "--skip-tokenizer-init",
            "--tp-size", p.target.tp, "--chunked-prefill-size", -1, "--enable-spec-capture",
            "--spec-capture-method", "dflash", "--spec-capture-aux-layer-ids", *ctx.layer_ids,
            "--host", host, "--port", replica.port, "--attention-backend", "flashinfer",
            "--mem-fraction-static", mem_fraction_static(p, ctx.catalog, ctx.model),
            "--disable-radix-cache", "--ep-size", 1,
            "--context-length", p.workload.max_length + CONTEXT_EXTRA_TOKENS]


def specforge_config(ctx: _Context, managed_local: bool, server_urls: list[str],
                     master_addr: str | None) -> dict:
    """The `specforge train -c` YAML document (keys from SpecForge's schema)."""
    p, w = ctx.plan, ctx.plan.workload
    drafter_nodes = ctx.layout.drafter_nodes
    per_node = {len(ctx.layout.drafters[n]) for n in drafter_nodes}
    if len(per_node) > 1:
        spread = " + ".join(str(len(ctx.layout.drafters[n])) for n in drafter_nodes)
        raise PlanError(f"drafter.count = {p.drafter.count}: the drafters land {spread} on "
                        f"{len(drafter_nodes)} nodes, and torchrun needs the same number on "
                        f"each; change the split so the drafters fill whole nodes")
    training = {
        "strategy": "dflash", "num_epochs": w.epochs, "batch_size": p.drafter.batch_size,
        "learning_rate": LEARNING_RATE, "warmup_ratio": WARMUP_RATIO,
        "max_grad_norm": MAX_GRAD_NORM, "num_anchors": w.num_anchors,
        "save_interval": SAVE_INTERVAL, "dist_timeout": DIST_TIMEOUT_MIN,
    }
    if ctx.block == 16:
        training["loss_decay_gamma"] = LOSS_DECAY_GAMMA_B16
    out = output_dir(p)
    disaggregated: dict = {"control_dir": f"{out}/control", "backend": "mooncake"}
    trainer: dict = {"nnodes": len(drafter_nodes), "nproc_per_node": per_node.pop()}
    if managed_local:
        disaggregated["managed_local"] = {
            "trainer_cuda_visible_devices": [str(d) for d in ctx.layout.drafters[drafter_nodes[0]]],
            "capture_servers": [
                {"port": r.port, "cuda_visible_devices": [str(d) for d in r.devices],
                 "tp_size": p.target.tp,
                 "mem_fraction_static": mem_fraction_static(p, ctx.catalog, ctx.model)}
                for r in ctx.layout.replicas],
        }
    else:
        disaggregated["server_urls"] = server_urls
        disaggregated["mooncake_protocol"] = "tcp"
        if master_addr is not None:
            disaggregated["mooncake_master_server_addr"] = f"{master_addr}:{MOONCAKE_RPC_PORT}"
        if len(drafter_nodes) > 1:
            disaggregated["consumer_state_dir"] = f"{out}/consumer_state"
            trainer["master_addr"] = master_addr
            trainer["master_port"] = p.launch.master_port
    return {
        "model": {"target_model_path": ctx.path, "trust_remote_code": True,
                  "draft_num_hidden_layers": w.draft_layers, "draft_block_size": ctx.block,
                  "sglang_context_length": w.max_length + CONTEXT_EXTRA_TOKENS},
        "data": {"train_data_path": p.launch.train_data_path, "max_length": w.max_length,
                 "chat_template": ctx.chat_template},
        "training": training,
        "run_id": p.launch.run_id,
        "output_dir": out,
        "deployment": {"mode": "disaggregated", "trainer": trainer,
                       "disaggregated": disaggregated},
    }


def _yaml(doc: dict) -> str:
    return yaml.safe_dump(doc, sort_keys=False, default_flow_style=False, allow_unicode=True)


def _specforge(ctx: _Context) -> LaunchScript:
    layout, notes = ctx.layout, []
    if layout.nodes == 1:
        config = specforge_config(ctx, managed_local=True, server_urls=[], master_addr=None)
        notes.append("managed-local: SpecForge starts the capture servers, Mooncake and the "
                     "trainer; needs mooncake_master on PATH and SGLang with the spec-capture "
                     "patch; control_dir must not exist yet")
        body = [_heredoc("run.yaml", _yaml(config)), _cmd("specforge", "train", "-c", "run.yaml")]
    else:
        head = layout.hosts[layout.drafter_nodes[0]]
        urls = [f"http://{layout.hosts[r.node]}:{r.port}" for r in layout.replicas]
        config = specforge_config(ctx, managed_local=False, server_urls=urls, master_addr=head)
        notes.append("multi-node: run this script on every node with NODE_RANK set; "
                     "output_dir must be on a filesystem all nodes share")
        sections: dict[int, list[str]] = {}
        for node in layout.target_nodes:
            sections[node] = [
                f"{_env(CUDA_VISIBLE_DEVICES=_devices(r.devices))} "
                f"{_cmd(*_sglang_server(ctx, r, '0.0.0.0'), lead=3)} > {_q(f'capture-{r.port}.log')} 2>&1 &"
                for r in layout.targets_on(node)]
        for rank, node in enumerate(layout.drafter_nodes):
            lines = sections.setdefault(node, [])
            if rank == 0:
                lines.append(f"{_cmd('mooncake_master', '--rpc_port', MOONCAKE_RPC_PORT)} "
                             f"> mooncake.log 2>&1 &")
                lines.append(_wait_healthy(urls))
                lines.append(f"{_cmd('specforge', 'train', '-c', 'run.yaml', '--role', 'producer')}"
                             f" > producer.log 2>&1 &")
            lines.append(_cmd("specforge", "train", "-c", "run.yaml", "--role", "consumer",
                              "--node-rank", rank))
            if node in layout.target_nodes or rank == 0:
                lines.append("wait")
        for node in layout.target_nodes:
            if node not in layout.drafter_nodes:
                sections[node].append("wait")
        body = [_heredoc("run.yaml", _yaml(config)), _node_case(sections, layout.nodes)]
    text = "\n\n".join(["#!/usr/bin/env bash",
                        _header(ctx, "SpecForge unified (specforge train -c run.yaml)", notes),
                        "set -euo pipefail", *body]) + "\n"
    return LaunchScript("specforge", text, {"run.yaml": _yaml(config)}, tuple(notes), layout)


# --- vLLM speculators ----------------------------------------------------------------------

def _speculators(ctx: _Context) -> LaunchScript:
    p, w, layout = ctx.plan, ctx.plan.workload, ctx.layout
    multi = layout.nodes > 1
    head = layout.hosts[layout.target_nodes[0]]
    notes = ["hidden states travel through Mooncake across nodes" if multi else
             "hidden states travel through files under /tmp/hidden_states (one host)"]
    backend = (["--hidden-states-backend", "mooncake", "--mooncake-master",
                f"{head}:{MOONCAKE_RPC_PORT}"] if multi else
               ["--hidden-states-backend", "file", "--hidden-states-path", "/tmp/hidden_states"])
    replicas_total = len(layout.replicas)
    sections: dict[int, list[str]] = {}
    start_rank = 0
    for index, node in enumerate(layout.target_nodes):
        local = layout.targets_on(node)
        devices = tuple(d for r in local for d in r.devices)
        serve = ["--data-parallel-size", replicas_total, "--tensor-parallel-size", p.target.tp,
                 "--port", VLLM_PORT, "--max-model-len", w.max_length]
        if multi:
            serve += ["--data-parallel-size-local", len(local), "--data-parallel-address", head,
                      "--data-parallel-rpc-port", VLLM_DP_RPC_PORT]
            if index > 0:
                serve += ["--headless", "--data-parallel-start-rank", start_rank]
        start_rank += len(local)
        lines = sections.setdefault(node, [])
        if multi and index == 0:
            lines.append(f"{_cmd('mooncake_master', '--rpc_port', MOONCAKE_RPC_PORT)} "
                         f"> mooncake.log 2>&1 &")
        lines.append(
            f"{_env(CUDA_VISIBLE_DEVICES=_devices(devices))} "
            f"{_cmd('python', 'scripts/launch_vllm.py', ctx.path, *backend, '--target-layer-ids', *ctx.layer_ids, '--no-include-last-layer', '--trust-remote-code', '--', *serve, lead=3)}"
            f" > vllm-{node}.log 2>&1 &")
    endpoint = f"http://{head if multi else 'localhost'}:{VLLM_PORT}"
    train = ["scripts/train.py", "--verifier-name-or-path", ctx.path,
             "--speculator-type", "dflash", "--data-path", p.launch.train_data_path,
             "--vllm-endpoint", f"{endpoint}/v1", *backend,
             "--block-size", ctx.block, "--max-anchors", w.num_anchors,
             "--num-layers", w.draft_layers, "--target-layer-ids", *ctx.layer_ids,
             "--epochs", w.epochs, "--lr", LEARNING_RATE, "--optimizer", "adamw",
             "--scheduler-type", "cosine",
             "--total-seq-len", w.max_length * p.drafter.batch_size,
             "--save-path", f"{output_dir(p)}/checkpoints"]
    if ctx.block == 16:
        train += ["--dflash-decay-gamma", LOSS_DECAY_GAMMA_B16]
    d_nodes = layout.drafter_nodes
    master = layout.hosts[d_nodes[0]]
    for rank, node in enumerate(d_nodes):
        devs = layout.drafters[node]
        if len(d_nodes) == 1:
            launcher = ["torchrun", "--standalone", "--nproc_per_node", len(devs)]
        else:
            launcher = ["torchrun", "--nnodes", len(d_nodes), "--node_rank", rank,
                        "--master_addr", master, "--master_port", p.launch.master_port,
                        "--nproc_per_node", len(devs)]
        lines = sections.setdefault(node, [])
        lines.append(_wait_healthy([endpoint]))
        lines.append(f"{_env(CUDA_VISIBLE_DEVICES=_devices(devs))} "
                     f"{_cmd(*launcher, *train, lead=len(launcher) + 1)}")
    for node in layout.target_nodes:
        if node not in d_nodes:
            sections[node].append("wait")
    if multi:
        body = _node_case(sections, layout.nodes)
        notes.append("multi-node: run this script on every node with NODE_RANK set")
    else:
        body = "\n".join(sections[0])
    text = "\n\n".join(["#!/usr/bin/env bash",
                        _header(ctx, "vLLM speculators (launch_vllm.py + scripts/train.py)", notes),
                        "set -euo pipefail", body]) + "\n"
    return LaunchScript("speculators", text, {}, tuple(notes), layout)


# --- SpecForge legacy (colocated) ------------------------------------------------------------

def _legacy(ctx: _Context) -> LaunchScript:
    p, w, layout = ctx.plan, ctx.plan.workload, ctx.layout
    total = p.target.count + p.drafter.count
    if p.target.gpu != p.drafter.gpu:
        raise PlanError("specforge-legacy runs target and drafter on the same GPUs: both roles "
                        f"must use one GPU type (target {p.target.gpu}, drafter {p.drafter.gpu})")
    if total % p.target.tp:
        raise PlanError(f"specforge-legacy shards the target over tp {p.target.tp} inside "
                        f"every group of ranks: {total} GPUs is not a multiple of it")
    per_node = layout.gpus_per_node
    nodes = math.ceil(total / per_node)
    notes = [f"colocated: every one of the {total} ranks holds a target shard (tp "
             f"{p.target.tp}) and a drafter replica, so the target/drafter split does not "
             f"apply and the projection's split figures do not describe this run"]
    args = ["scripts/train_dflash.py", "--target-model-path", ctx.path,
            "--target-model-backend", "sglang", "--block-size", ctx.block,
            "--num-draft-layers", w.draft_layers, "--num-anchors", w.num_anchors,
            "--train-data-path", p.launch.train_data_path, "--chat-template", ctx.chat_template,
            "--num-epochs", w.epochs, "--batch-size", p.drafter.batch_size,
            "--learning-rate", LEARNING_RATE, "--max-length", w.max_length,
            "--warmup-ratio", WARMUP_RATIO, "--max-grad-norm", MAX_GRAD_NORM,
            "--output-dir", output_dir(p), "--save-interval", SAVE_INTERVAL,
            "--tp-size", p.target.tp, "--dist-timeout", DIST_TIMEOUT_MIN,
            "--sglang-mem-fraction-static", mem_fraction_static(p, ctx.catalog, ctx.model),
            "--trust-remote-code"]
    if ctx.block == 16:
        args += ["--loss-decay-gamma", LOSS_DECAY_GAMMA_B16]
    if nodes == 1:
        body = _cmd("torchrun", "--standalone", "--nproc_per_node", total, *args, lead=5)
    else:
        if total % per_node:
            raise PlanError(f"specforge-legacy across nodes needs whole nodes: {total} GPUs "
                            f"is not a multiple of {per_node} per node")
        hosts = p.launch.hosts or tuple(f"node{i}" for i in range(nodes))
        sections = {n: [_cmd("torchrun", "--nnodes", nodes, "--node_rank", n, "--master_addr",
                             hosts[0], "--master_port", p.launch.master_port,
                             "--nproc_per_node", per_node, *args, lead=12)] for n in range(nodes)}
        body = _node_case(sections, nodes)
    text = "\n\n".join(["#!/usr/bin/env bash",
                        _header(ctx, "SpecForge legacy (scripts/train_dflash.py, colocated)", notes),
                        "set -euo pipefail", body]) + "\n"
    return LaunchScript("specforge-legacy", text, {}, tuple(notes), layout)


# --- Slurm ---------------------------------------------------------------------------------

def _slurm(ctx: _Context) -> LaunchScript:
    """An sbatch script: SpecForge unified with capture servers as srun steps, host names
    from the allocation, passed to specforge as overrides."""
    p, layout = ctx.plan, ctx.layout
    job = re.sub(r"[^A-Za-z0-9._-]", "_", p.launch.run_id)[:64] or "dflash"
    # Host names are known only inside the allocation: the YAML holds placeholders that the
    # srun lines override with the allocated hosts.
    config = specforge_config(ctx, managed_local=False, server_urls=[], master_addr="localhost")
    notes = ["host names come from the allocation (scontrol show hostnames); node i of the "
             "plan is the i-th host", "output_dir must be on a filesystem all nodes share"]
    lines = ["#!/bin/bash", f"#SBATCH --job-name={job}", f"#SBATCH --nodes={layout.nodes}",
             "#SBATCH --ntasks-per-node=1", f"#SBATCH --gpus-per-node={layout.gpus_per_node}",
             "#SBATCH --exclusive", f"#SBATCH --output={job}-%j.log", "",
             _header(ctx, "Slurm (sbatch) running SpecForge unified", notes), "",
             "set -euo pipefail",
             "# The SpecForge CLI rejects a partial torch.distributed environment.",
             "unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT",
             'mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
             f'[ "${{#NODES[@]}}" -ge {layout.nodes} ] || '
             f'{{ echo "need {layout.nodes} nodes" >&2; exit 2; }}',
             f'HEAD="${{NODES[{layout.drafter_nodes[0]}]}}"', "",
             _heredoc("run.yaml", _yaml(config)), "", "urls=()"]
    for r in layout.replicas:
        lines.append(f'urls+=("http://${{NODES[{r.node}]}}:{r.port}")')
    lines += ['server_urls="[$(printf \'"%s",\' "${urls[@]}" | sed \'s/,$//\')]"',
              'overrides=("deployment.disaggregated.server_urls=$server_urls"',
              f'           "deployment.disaggregated.mooncake_master_server_addr=$HEAD:{MOONCAKE_RPC_PORT}")']
    if len(layout.drafter_nodes) > 1:
        lines.append('overrides+=("deployment.trainer.master_addr=$HEAD")')
    lines += ["", "# capture servers: one srun step per target replica"]
    for r in layout.replicas:
        lines.append(f'srun --nodes=1 --ntasks=1 --overlap -w "${{NODES[{r.node}]}}" '
                     f'env CUDA_VISIBLE_DEVICES={_q(_devices(r.devices))} '
                     f"{_cmd(*_sglang_server(ctx, r, '0.0.0.0'), lead=3)} > {_q(f'capture-{r.port}.log')} 2>&1 &")
    lines += ["", "# Mooncake master and the producer (CPU) on the first drafter node",
              f'srun --nodes=1 --ntasks=1 --overlap -w "$HEAD" '
              f"{_cmd('mooncake_master', '--rpc_port', MOONCAKE_RPC_PORT)} > mooncake.log 2>&1 &",
              'for url in "${urls[@]}"; do until curl -sf "$url/health" >/dev/null; do sleep 10; '
              'done; done',
              f'srun --nodes=1 --ntasks=1 --overlap -w "$HEAD" '
              f'{_cmd("specforge", "train", "-c", "run.yaml", "--role", "producer")} '
              f'"${{overrides[@]}}" > producer.log 2>&1 &', "",
              "# trainers: one srun step over the drafter nodes, one task per node"]
    d_hosts = ",".join(f"${{NODES[{n}]}}" for n in layout.drafter_nodes)
    lines.append(f'srun --nodes={len(layout.drafter_nodes)} --ntasks-per-node=1 --overlap '
                 f'-w "{d_hosts}" bash -c '
                 + _q('exec specforge train -c run.yaml --role consumer --node-rank '
                      '"$SLURM_PROCID" "$@"')
                 + ' _ "${overrides[@]}"')
    text = "\n".join(lines) + "\n"
    return LaunchScript("slurm", text, {"run.yaml": _yaml(config)}, tuple(notes), layout)


# --- custom template -----------------------------------------------------------------------

def template_values(ctx: _Context, node: int) -> dict[str, object]:
    p, w, layout = ctx.plan, ctx.plan.workload, ctx.layout
    target_devs = tuple(d for r in layout.targets_on(node) for d in r.devices)
    return {
        "target_devices": _devices(target_devs),
        "drafter_devices": _devices(layout.drafters.get(node, ())),
        "target_model": ctx.path, "target_gpu": p.target.gpu, "drafter_gpu": p.drafter.gpu,
        "target_count": p.target.count, "drafter_count": p.drafter.count,
        "tp": p.target.tp, "replicas": len(layout.replicas),
        "epochs": w.epochs, "num_anchors": w.num_anchors, "block_size": ctx.block,
        "draft_layers": w.draft_layers, "max_length": w.max_length,
        "batch_size": p.drafter.batch_size, "samples": w.samples,
        "layer_ids": ",".join(map(str, ctx.layer_ids)),
        "nnodes": layout.nodes, "node_rank": node, "host": layout.hosts[node],
        "master_addr": layout.hosts[layout.drafter_nodes[0]], "master_port": p.launch.master_port,
        "run_id": p.launch.run_id, "output_dir": output_dir(p),
        "train_data_path": p.launch.train_data_path, "chat_template": ctx.chat_template,
        "learning_rate": LEARNING_RATE,
    }


TEMPLATE_PLACEHOLDERS = ("target_devices", "drafter_devices", "target_model", "target_gpu",
                         "drafter_gpu", "target_count", "drafter_count", "tp", "replicas",
                         "epochs", "num_anchors", "block_size", "draft_layers", "max_length",
                         "batch_size", "samples", "layer_ids", "nnodes", "node_rank", "host",
                         "master_addr", "master_port", "run_id", "output_dir",
                         "train_data_path", "chat_template", "learning_rate")


def render_template(template: str, values: dict[str, object], where: str) -> str:
    """Fill {name} placeholders with shell-quoted values; {{ and }} are literal braces."""
    out = []
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as err:
        raise PlanError(f"{where}: bad template: {err} (use {{{{ and }}}} for literal braces)") from None
    for literal, name, spec, conversion in parsed:
        out.append(literal)
        if name is None:
            continue
        if name not in values:
            raise PlanError(f"{where}: unknown placeholder {{{name}}}; known: "
                            f"{', '.join('{' + k + '}' for k in TEMPLATE_PLACEHOLDERS)}")
        if spec or conversion:
            raise PlanError(f"{where}: placeholder {{{name}}} takes no format or conversion")
        out.append(_q(values[name]))
    return "".join(out)


def _template(ctx: _Context, template: str | None, where: str) -> LaunchScript:
    if not template:
        raise PlanError("launch.template is not set: put a command with {placeholders} in the "
                        "plan's [launch] table or in the user config's launch.toml")
    layout = ctx.layout
    per_node = any(k in template for k in ("{target_devices}", "{drafter_devices}",
                                           "{node_rank}", "{host}"))
    if layout.nodes == 1 or not per_node:
        body = render_template(template, template_values(ctx, 0), where)
    else:
        body = _node_case({n: [render_template(template, template_values(ctx, n), where)]
                           for n in range(layout.nodes)}, layout.nodes)
    text = "\n\n".join(["#!/usr/bin/env bash", _header(ctx, "custom template", []),
                        "set -euo pipefail", body]) + "\n"
    return LaunchScript("template", text, {}, (), layout)


def generate(plan: Plan, catalog: Catalog, fmt: str | None = None,
             template: str | None = None) -> LaunchScript:
    """The launch script of plan in format fmt (default: the plan's launch.format).
    `template` is the user config's template, used when the plan has none."""
    fmt = fmt or plan.launch.format
    if fmt not in FORMATS:
        raise PlanError(f"launch format {fmt!r}: choose one of {', '.join(FORMATS)}")
    ctx = _context(plan, catalog)
    if fmt == "specforge":
        return _specforge(ctx)
    if fmt == "speculators":
        return _speculators(ctx)
    if fmt == "specforge-legacy":
        return _legacy(ctx)
    if fmt == "slurm":
        return _slurm(ctx)
    where = "launch.template" if plan.launch.template else "launch.toml template"
    return _template(ctx, plan.launch.template or template, where)
