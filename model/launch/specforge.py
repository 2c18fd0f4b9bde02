"""SpecForge's unified trainer: `specforge train -c run.yaml` (sgl-project/SpecForge,
checked against the specforge 0.2.0 wheel: specforge/config/schema.py, launch_plan.py,
cli.py, and examples/disagg/run_qwen3_8b_dflash_disagg_2node.sh)."""

from __future__ import annotations

import math
from typing import Any

from ..basics import recipe
from ..basics.errors import PlanError
from ..basics.units import BF16_BYTES, BYTES_PER_GIB
from ..physics.families import FAMILIES
from . import preflight, versions
from .checkpointing import WARM_WORDS, resumed, specforge_training, warm_lines
from .common import (
    CONTEXT_EXTRA_TOKENS,
    DFLASH2_CONFIG,
    FABRIC_IP_FUNCTION,
    GIB,
    IN_FLIGHT_HIGH_DEFAULT,
    IN_FLIGHT_LOW_DEFAULT,
    IN_FLIGHT_PER_SERVER,
    MOONCAKE_METADATA_PORT,
    MOONCAKE_METRICS_PORT,
    MOONCAKE_RPC_PORT,
    RUN_ALIVE_KEY,
    Context,
    LaunchScript,
    capture_done,
    colocated_nodes,
    devices,
    export_fabric_ip,
    flow_control,
    hidden_states_dir,
    node_case,
    offline_storage,
    output_dir,
    read_node_rank,
    require_derived_layers,
    run_id,
    sample_feature_bytes,
    script,
    specforge_pr_notes,
    until_run_ends,
)
from .escape import cmd, env, feed, heredoc, q, to_json, to_yaml
from .layout import Replica

NAME = "specforge"
TITLE = "SpecForge unified (specforge train -c run.yaml)"
HEALTH_KEY = "dflash-plan-health-check"
# torchrun's static rendezvous (the one --master_addr selects) waits 600 s for the other
# trainer nodes by default (torch/distributed/elastic/rendezvous/static_tcp_rendezvous.py);
# the first trainer node starts only once every capture server has loaded the target, which
# for a 70B model downloaded on first use can take longer. torchrun reads --rdzv-conf from
# PET_RDZV_CONF (its arguments' environment fallback), which SpecForge's torchrun inherits.
RENDEZVOUS_TIMEOUT_S = 3 * 3600


def consumer_state_dir(ctx: Context) -> str:
    """Node-local: the consumer's SQLite/WAL must not sit on a shared filesystem (SpecForge
    docs; the two-node example uses /tmp/specforge/<id>/consumer-state)."""
    return f"/tmp/specforge/{run_id(ctx.plan)}/consumer-state"


def consumer_quantum(ctx: Context) -> int:
    """Samples of one global optimizer step: nnodes x nproc_per_node x batch_size x
    accumulation_steps (1); the consumer takes them as one window
    (_online_flow_window in specforge/training/disaggregated.py)."""
    nodes, per_node = trainer_nodes(ctx)
    return len(nodes) * per_node * ctx.plan.drafter.batch_size


def in_flight(ctx: Context) -> tuple[int, int]:
    """The producer's (high, low) in-flight watermarks (physics/flow.py: the recipe's
    measured multiples of the consumer quantum). SpecForge refuses to start when either is
    below the quantum (_online_flow_window) and wants low <= high (RuntimeConfig)."""
    flow = flow_control(ctx)
    return flow.high_watermark, flow.low_watermark


def server_segment_gib(ctx: Context) -> int:
    """Mooncake segment of one capture server (physics/flow.py: what the projection's
    store_memory shows)."""
    return flow_control(ctx).segment_gib


def host_memory_gib(ctx: Context) -> tuple[float, float, float]:
    """Host memory, GiB, of one capture server (its Mooncake segment and local buffer;
    the target weights it loads through host memory) and of one trainer rank (its Mooncake
    client buffer and two batches of fetched features): (segment, weights, rank)."""
    flow = flow_control(ctx)
    segment = flow.segment_gib + flow.server_buffer_bytes / GIB
    weights = ctx.memory.weights_gib * ctx.plan.target.tp
    batch = 2 * ctx.plan.drafter.batch_size * sample_feature_bytes(ctx.resolved) / GIB
    return segment, weights, flow.trainer_buffer_bytes / GIB + batch


def trainer_nodes(ctx: Context) -> tuple[tuple[int, ...], int]:
    """The drafter nodes and the drafters on each: torchrun needs the same number on
    every node."""
    nodes = ctx.layout.drafter_nodes
    counts = {len(ctx.layout.drafters[n]) for n in nodes}
    if len(counts) > 1:
        spread = " + ".join(str(len(ctx.layout.drafters[n])) for n in nodes)
        raise PlanError.field(
            "drafter.count",
            str(ctx.plan.drafter.count),
            f"the drafters land {spread} on {len(nodes)} nodes, and torchrun needs the same "
            f"number on each; change the split so the drafters fill whole nodes",
        )
    return nodes, counts.pop()


# --- the drafter family: SpecForge's strategy and draft config ------------------------------

# The draft config file DFlash2 is built from (SpecForge derives a DFlash one from the
# target, and no other: application/planning.py _validate_draft_options).
DRAFT_CONFIG = "draft-config.json"


def draft_config(ctx: Context) -> dict[str, Any] | None:
    """The draft config of a DFlash2 drafter over the target (the fields SpecForge's
    configs/qwen3.6-27b-dflash2.json sets: the family's fixed attention shape, window,
    convolution and selector, physics/families.py; the target's width, FFN and vocabulary;
    what it leaves out takes transformers' Qwen3Config defaults); None: a DFlash drafter,
    which SpecForge derives from the target."""
    w, m = ctx.plan.workload, ctx.model
    if w.drafter != "dflash2":
        return None
    family, layers = FAMILIES["dflash2"], ctx.resolved.shape.layers
    return {
        "architectures": ["DFlash2DraftModel"],
        "model_type": "qwen3",
        "dtype": "bfloat16",
        "hidden_act": "silu",
        "hidden_size": m.hidden,
        "intermediate_size": m.intermediate,
        "num_attention_heads": family.n_heads or m.n_heads,
        "num_key_value_heads": family.n_kv_heads or m.n_kv_heads,
        "head_dim": family.head_dim or m.head_dim,
        "vocab_size": m.vocab,
        "num_hidden_layers": layers,
        "num_target_layers": m.n_layers,
        "max_window_layers": layers,
        "tie_word_embeddings": False,
        "use_cache": True,
        # Non-causal within a block, every layer a sliding window.
        "is_causal": False,
        "layer_types": ["sliding_attention"] * layers,
        "sliding_window": family.sliding_window,
        "use_sliding_window": True,
        "dflash_config": {
            "block_size": ctx.block,
            **DFLASH2_CONFIG,
            "target_layer_ids": list(ctx.layer_ids),
        },
    }


def draft_files(ctx: Context) -> dict[str, str]:
    """The draft config file a run writes beside run.yaml (none for DFlash)."""
    doc = draft_config(ctx)
    return {} if doc is None else {DRAFT_CONFIG: to_json(doc)}


def write_draft_config(ctx: Context, nodes: int) -> list[str]:
    """Shell writing the draft config: at once on one node; on several, each node writes
    its own copy and renames it into place, so that a node sharing the working directory
    never reads a half-written file."""
    files = draft_files(ctx)
    if not files:
        return []
    if nodes == 1:
        return [heredoc(DRAFT_CONFIG, files[DRAFT_CONFIG])]
    tmp = f'"{DRAFT_CONFIG}.$node_rank"'
    return [feed(f"cat > {tmp}", files[DRAFT_CONFIG]) + f"\nmv -f -- {tmp} {DRAFT_CONFIG}"]


def model_section(ctx: Context, fraction: float) -> dict[str, Any]:
    """run.yaml's model keys: the drafter (the derived DFlash's layers and block, or the
    draft config file) and the target's SGLang memory and context."""
    p, w = ctx.plan, ctx.plan.workload
    model: dict[str, Any] = {"target_model_path": ctx.path, "trust_remote_code": True}
    if draft_config(ctx) is None:
        require_derived_layers(ctx, "SpecForge")
        model |= {"draft_num_hidden_layers": w.draft_layers, "draft_block_size": ctx.block}
    else:
        model["draft_model_config"] = DRAFT_CONFIG
    return model | {
        "sglang_mem_fraction_static": fraction,
        "sglang_context_length": p.workload.max_length + CONTEXT_EXTRA_TOKENS,
    }


def data_section(ctx: Context) -> dict[str, Any]:
    """The run's data, the same for every deployment mode."""
    p = ctx.plan
    return {
        "train_data_path": p.launch.train_data_path,
        "max_length": p.workload.max_length,
        "chat_template": ctx.chat_template,
    }


def training_section(ctx: Context) -> dict[str, Any]:
    p, w = ctx.plan, ctx.plan.workload
    training: dict[str, Any] = {
        # DFlash2 too: its architecture rides the draft config (PR #772's examples).
        "strategy": "dflash",
        "num_epochs": w.epochs,
        "batch_size": p.drafter.batch_size,
        "learning_rate": recipe.LEARNING_RATE,
        "warmup_ratio": recipe.WARMUP_RATIO,
        "max_grad_norm": recipe.MAX_GRAD_NORM,
        "num_anchors": w.num_anchors,
        **specforge_training(ctx, NAME),
        "dist_timeout": recipe.DIST_TIMEOUT_MIN,
    }
    if ctx.block == 16:
        training["loss_decay_gamma"] = recipe.LOSS_DECAY_GAMMA_B16
    return training


def config(
    ctx: Context, *, managed_local: bool, server_urls: list[str], head: str
) -> dict[str, Any]:
    """The `specforge train -c` YAML document (keys from SpecForge's schema)."""
    p = ctx.plan
    nodes, per_node = trainer_nodes(ctx)
    fraction = ctx.memory.fraction
    model = model_section(ctx, fraction)
    training = training_section(ctx)
    out = output_dir(p)
    flow = flow_control(ctx)
    disaggregated: dict[str, Any] = {
        "control_dir": f"{out}/control",
        "backend": "mooncake",
        "client_buffer_size": flow.trainer_buffer_bytes,
    }
    trainer: dict[str, Any] = {"nnodes": len(nodes), "nproc_per_node": per_node}
    if managed_local:
        disaggregated["managed_local"] = {
            "trainer_cuda_visible_devices": [str(d) for d in ctx.layout.drafters[nodes[0]]],
            "mooncake": {
                "global_segment_size_bytes": flow.segment_gib * GIB,
                "local_buffer_size_bytes": flow.server_buffer_bytes,
            },
            "capture_servers": [
                {
                    "port": r.port,
                    "cuda_visible_devices": [str(d) for d in r.devices],
                    "tp_size": p.target.tp,
                    "mem_fraction_static": fraction,
                }
                for r in ctx.layout.replicas
            ],
        }
    else:
        disaggregated.update(
            {
                "consumer_state_dir": consumer_state_dir(ctx),
                "server_urls": server_urls,
                "mooncake_metadata_server": f"http://{head}:{MOONCAKE_METADATA_PORT}/metadata",
                "mooncake_master_server_addr": f"{head}:{MOONCAKE_RPC_PORT}",
                "mooncake_protocol": "tcp",
            }
        )
        if len(nodes) > 1:
            trainer["master_addr"] = head
            trainer["master_port"] = p.launch.master_port
    if versions.RECEIVE_BUFFERS_KEY in versions.effective_line(p, ctx.line).features:
        # The line's schema has the key (PRs #840/#858): run.yaml says how to receive.
        disaggregated["receive_buffers"] = RECEIVE_BUFFERS[p.workload.receive]
    doc: dict[str, Any] = {
        "model": model,
        "data": data_section(ctx),
        "training": training,
        "run_id": run_id(p),
        "output_dir": out,
        "deployment": {"mode": "disaggregated", "trainer": trainer, "disaggregated": disaggregated},
    }
    high, low = flow.high_watermark, flow.low_watermark
    if (high, low) != (IN_FLIGHT_HIGH_DEFAULT, IN_FLIGHT_LOW_DEFAULT):
        doc["runtime"] = {"in_flight_high_watermark": high, "in_flight_low_watermark": low}
    return doc


def capture_server(ctx: Context, replica: Replica) -> list[object]:
    """A patched SGLang capture server, the flags managed-local would pass
    (launch_plan._managed_local_services), listening on every interface."""
    p = ctx.plan
    return [
        "python",
        "-m",
        "sglang.launch_server",
        "--model-path",
        ctx.path,
        "--dtype",
        "bfloat16",
        "--trust-remote-code",
        "--skip-tokenizer-init",
        "--tp-size",
        p.target.tp,
        "--chunked-prefill-size",
        -1,
        "--enable-spec-capture",
        "--spec-capture-method",
        "dflash",
        "--spec-capture-aux-layer-ids",
        *ctx.layer_ids,
        "--host",
        "0.0.0.0",
        "--port",
        replica.port,
        "--attention-backend",
        "flashinfer",
        "--mem-fraction-static",
        ctx.memory.fraction,
        "--disable-radix-cache",
        "--ep-size",
        1,
        "--context-length",
        p.workload.max_length + CONTEXT_EXTRA_TOKENS,
    ]


def lease_flags(ctx: Context) -> list[object]:
    """The master's read lease when trainers read across nodes (physics/flow.py); on one
    node, upstream's default."""
    lease = flow_control(ctx).lease_ms
    return [] if lease is None else [f"--default_kv_lease_ttl={lease}"]


def mooncake_master(ctx: Context) -> list[object]:
    """The master with its HTTP metadata server open to the other nodes (the two-node
    example's flags), and the read lease of the plan's flow control."""
    return [
        "mooncake_master",
        "--enable_http_metadata_server=true",
        "--http_metadata_server_host=0.0.0.0",
        f"--rpc_port={MOONCAKE_RPC_PORT}",
        f"--http_metadata_server_port={MOONCAKE_METADATA_PORT}",
        f"--metrics_port={MOONCAKE_METRICS_PORT}",
        *lease_flags(ctx),
    ]


def mooncake_env(head: str) -> dict[str, str]:
    """What producer, consumer and capture servers read to reach the master (the servers
    read only the environment: SpecForge's spec_capture_sink patch defaults to localhost)."""
    return {
        "MOONCAKE_MASTER_SERVER_ADDR": f"{head}:{MOONCAKE_RPC_PORT}",
        "MOONCAKE_METADATA_SERVER": f"http://{head}:{MOONCAKE_METADATA_PORT}/metadata",
        "MOONCAKE_PROTOCOL": "tcp",
    }


def server_env(ctx: Context, replica: Replica) -> dict[str, object]:
    return {
        "CUDA_VISIBLE_DEVICES": devices(replica.devices),
        "MOONCAKE_GLOBAL_SEGMENT_SIZE": server_segment_gib(ctx) * GIB,
        "MOONCAKE_LOCAL_BUFFER_SIZE": flow_control(ctx).server_buffer_bytes,
        "FLASHINFER_DISABLE_VERSION_CHECK": 1,
    }


def node_config(node: int) -> str:
    """The run file a node's specforge calls read (written per node by the script)."""
    return f"run-node{node}.yaml"


# SpecForge's trainer receive buffers by workload.receive (sgl-project/SpecForge
# specforge/config/schema.py DisaggregatedDeploymentConfig.receive_buffers, PRs #840 and
# #858, September 2026), as the launcher passes them to every trainer process: the
# environment variable, which overrides the config key. specforge 0.2.0's schema forbids
# unknown keys and has no receive_buffers, so the run.yaml cannot carry it; 0.2.0 ignores
# the variable and receives pageable (its row in inputs/formats.py).
RECEIVE_BUFFERS = {"host": "pageable", "pinned": "pinned", "device": "cuda"}


def receive_env(ctx: Context) -> dict[str, object]:
    """What tells the trainer how to receive: every trainer process inherits it (torchrun's
    workers, and managed-local's supervisor spawns them from its own environment)."""
    return {"DISAGG_RECEIVE_BUFFERS": RECEIVE_BUFFERS[ctx.plan.workload.receive]}


def consumer_env(ctx: Context, node: int, rank: int) -> dict[str, object]:
    """The consumer's environment. SpecForge does not assign GPUs to external servers and
    picks devices by local rank: the trainer gets its own devices explicitly. torchrun's
    workers inherit NODE_RANK, and SpecForge's node-rank check (_resolved_node_rank in
    specforge/launch_plan.py) reads it in every worker, where --node-rank is not passed:
    it must be the trainer rank, not the node's index in the plan."""
    out: dict[str, object] = {
        **receive_env(ctx),
        "NODE_RANK": rank,
        "CUDA_VISIBLE_DEVICES": devices(ctx.layout.drafters[node]),
    }
    if len(ctx.layout.drafter_nodes) > 1:
        out["PET_RDZV_CONF"] = f"timeout={RENDEZVOUS_TIMEOUT_S}"
    return out


def wait_for_metadata(url: str) -> str:
    # Any HTTP answer (a missing key is a 4xx) means the metadata server is up.
    return f"until curl -s -o /dev/null {q(url + '?key=' + HEALTH_KEY)}; do sleep 2; done"


def wait_healthy(urls: list[str]) -> str:
    if len(urls) <= 4:
        return "\n".join(
            f"until curl -sf {q(u + '/health')} >/dev/null; do sleep 5; done" for u in urls
        )
    # One line: a script's node sections indent only an entry's first line.
    return (
        f"for url in {' '.join(q(u) for u in urls)}; do "
        f'until curl -sf "$url/health" >/dev/null; do sleep 5; done; done'
    )


def memory_notes(ctx: Context) -> list[str]:
    segment = server_segment_gib(ctx)
    high, low = in_flight(ctx)
    notes = [
        *ctx.memory.reasoning(),
        f"Mooncake segment {segment} GiB of host memory per capture server: captured "
        f"features wait there until the trainer acknowledges them (up to {high} "
        f"samples in flight, spread over the servers)",
    ]
    flow = flow_control(ctx)
    multiple = "8 x / 4 x across nodes" if flow.cross_node else "6 x / 3 x on one node"
    notes.append(
        f"in-flight watermarks {high}/{low}, SpecForge's DFlash2 recipe's measured flow "
        f"control (PR #869; docs/launch.md, flow control): {multiple} the "
        f"{consumer_quantum(ctx)} samples of one optimizer step, at least "
        f"{IN_FLIGHT_PER_SERVER} per capture server"
    )
    if flow.lease_ms is not None:
        notes.append(
            f"Mooncake read lease {flow.lease_ms / 1000:g} s (mooncake_master "
            f"--default_kv_lease_ttl): shorter leases expired under cross-node reads "
            f"(-707 LEASE_EXPIRED, PR #869)"
        )
    return notes


def node_shell(ctx: Context, addresses: str, rank: str, fmt: str = "skypilot") -> tuple[str, str]:
    """The shell every node of an online SpecForge run executes (several nodes, one script),
    for launchers that start it on each node and tell it, when it starts, its rank and every
    node's address (SkyPilot, Kubernetes). `addresses`: a shell command printing the plan's
    nodes' fabric IPs one per line, node 0 first; `rank`: a shell word giving this node's
    index in the plan. Addresses are IPs, never host names (a name can resolve to a loopback
    or a management NIC). Start-up order: the Mooncake master on the first trainer node, then
    the capture servers once its metadata server answers, then the producer and the trainers
    once every capture server answers /health. Teardown: the first trainer node stops its
    services when its trainer ends; a node running only capture servers stops them once the
    master no longer answers. Returns (the shell, the run.yaml it writes)."""
    layout, nodes = ctx.layout, ctx.layout.nodes
    d_nodes, _ = trainer_nodes(ctx)
    # Addresses are known only at run time: the YAML holds placeholders that every
    # specforge call overrides (as the Slurm script does).
    doc = config(ctx, managed_local=False, server_urls=[], head="localhost")
    yaml_text = to_yaml(doc)
    metadata = '"$MOONCAKE_METADATA_SERVER?key='
    lines = [
        "# The SpecForge CLI rejects a partial torch.distributed environment.",
        "unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT",
        "# Background services stop with this script.",
        "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT",
        f"mapfile -t NODES < <({addresses})",
        f'[ "${{#NODES[@]}}" -ge {nodes} ] || '
        f'{{ echo "need {nodes} node addresses, got ${{#NODES[@]}}" >&2; exit 2; }}',
        f'node_rank="{rank}"',
        'case "$node_rank" in',
        f"  ''|*[!0-9]*) echo \"node rank must be 0-{nodes - 1}, got '$node_rank'\" >&2; exit 2 ;;",
        "esac",
        f'HEAD="${{NODES[{d_nodes[0]}]}}"',
        f'export MOONCAKE_MASTER_SERVER_ADDR="$HEAD:{MOONCAKE_RPC_PORT}"',
        f'export MOONCAKE_METADATA_SERVER="http://$HEAD:{MOONCAKE_METADATA_PORT}/metadata"',
        "export MOONCAKE_PROTOCOL=tcp",
        "# This node's address on the cluster network (DFLASH_FABRIC_IP overrides it).",
        'fabric_addr="${DFLASH_FABRIC_IP:-${NODES[$node_rank]}}"',
        'export MOONCAKE_LOCAL_HOSTNAME="$fabric_addr" MC_TCP_BIND_ADDRESS="$fabric_addr"',
        preflight.block(ctx, fmt, '"$node_rank"', '"${NODES[@]}"'),
        # One file per node: nodes sharing a working directory keep their own.
        feed('cat > "run-node$node_rank.yaml"', yaml_text),
        "urls=()",
        *(f'urls+=("http://${{NODES[{r.node}]}}:{r.port}")' for r in layout.replicas),
        'server_urls="[$(printf \'"%s",\' "${urls[@]}" | sed \'s/,$//\')]"',
        'overrides=("deployment.disaggregated.server_urls=$server_urls"',
        '           "deployment.disaggregated.mooncake_master_server_addr='
        '$MOONCAKE_MASTER_SERVER_ADDR"',
        '           "deployment.disaggregated.mooncake_metadata_server=$MOONCAKE_METADATA_SERVER")',
    ]
    if len(d_nodes) > 1:
        lines.append('overrides+=("deployment.trainer.master_addr=$HEAD")')
    run_file = '"run-node$node_rank.yaml"'
    sections: dict[int, list[str]] = {n: [] for n in range(nodes)}
    sections[d_nodes[0]].append(f"{cmd(*mooncake_master(ctx), lead=2)} > mooncake.log 2>&1 &")
    for node in layout.target_nodes:
        sections[node].append(
            f'until curl -s -o /dev/null {metadata}{HEALTH_KEY}"; do sleep 2; done'
        )
        for r in layout.targets_on(node):
            sections[node].append(
                f"{env(**server_env(ctx, r))} "
                f"{cmd(*capture_server(ctx, r), lead=3)}"
                f" > {q(f'capture-{r.port}.log')} 2>&1 &"
            )
    for rank_, node in enumerate(d_nodes):
        part = sections[node]
        part.append(
            'for url in "${urls[@]}"; do until curl -sf "$url/health" >/dev/null; '
            "do sleep 10; done; done"
        )
        if rank_ == 0:
            part.append(
                f"{env(CUDA_VISIBLE_DEVICES='')} specforge train -c {run_file} --role producer "
                '"${overrides[@]}" > producer.log 2>&1 &'
            )
        part.extend(
            resumed(
                ctx,
                f"{env(**consumer_env(ctx, node, rank_))} specforge train -c {run_file} "
                f'--role consumer --node-rank {rank_} "${{overrides[@]}}"',
            )
        )
    for node in layout.target_nodes:
        if node not in d_nodes:
            sections[node].append(until_run_ends(f'{metadata}{RUN_ALIVE_KEY}"'))
    body = "\n".join(lines) + "\n" + node_case(sections, nodes, read_rank=False)
    return body, yaml_text


def render(ctx: Context, template: str | None = None) -> LaunchScript:
    if ctx.plan.workload.topology == "colocated":
        return render_colocated(ctx)
    layout, notes = ctx.layout, specforge_pr_notes(ctx.plan, ctx.line)
    if layout.nodes == 1:
        doc = config(ctx, managed_local=True, server_urls=[], head="127.0.0.1")
        notes.append(
            "managed-local: SpecForge starts the capture servers, Mooncake and the "
            "trainer; needs mooncake_master on PATH and SGLang with the spec-capture "
            "patch; control_dir must not exist yet"
        )
        notes += memory_notes(ctx)
        text = to_yaml(doc)
        # The SpecForge CLI rejects a partial torch.distributed environment, and it and
        # the trainer's workers take NODE_RANK as the trainer's node rank: one node is 0.
        body = [
            "unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT NODE_RANK",
            *write_draft_config(ctx, 1),
            heredoc("run.yaml", text),
            *warm_lines(ctx, doc),
            f"{env(**receive_env(ctx))} {cmd('specforge', 'train', '-c', 'run.yaml')} "
            + WARM_WORDS,
        ]
        return LaunchScript(
            NAME,
            script(ctx, TITLE, notes, body, fmt=NAME, preflight=preflight.script_block(ctx, NAME)),
            {"run.yaml": text, **draft_files(ctx)},
            tuple(notes),
            layout,
        )
    d_nodes, _ = trainer_nodes(ctx)
    head = layout.hosts[d_nodes[0]]
    urls = [f"http://{layout.hosts[r.node]}:{r.port}" for r in layout.replicas]
    doc = config(ctx, managed_local=False, server_urls=urls, head=head)
    notes += [
        "multi-node: run this script on every node with NODE_RANK set; output_dir "
        "must be on a filesystem all nodes share, control_dir must not exist yet",
        f"node {d_nodes[0]} ({head}) runs the Mooncake master, the producer and trainer "
        f"rank 0; the host names must be reachable from every node",
        *memory_notes(ctx),
    ]
    metadata_url = f"http://{head}:{MOONCAKE_METADATA_PORT}/metadata"
    sections: dict[int, list[str]] = {}
    for node in range(layout.nodes):
        lines = sections.setdefault(node, [])
        # Each node's processes register with Mooncake under its own fabric address.
        lines += export_fabric_ip(head).split("\n")
        if node == d_nodes[0]:
            lines.append(f"{cmd(*mooncake_master(ctx), lead=2)} > mooncake.log 2>&1 &")
        replicas = layout.targets_on(node)
        if replicas:
            lines.append(wait_for_metadata(metadata_url))
        for r in replicas:
            lines.append(
                f"{env(**server_env(ctx, r))} {cmd(*capture_server(ctx, r), lead=3)}"
                f" > {q(f'capture-{r.port}.log')} 2>&1 &"
            )
    for rank, node in enumerate(d_nodes):
        lines = sections[node]
        config_file = node_config(node)
        # Every trainer node starts once the capture servers are up, so that torchrun's
        # rendezvous does not wait out the target's download on the first trainer node.
        lines.append(wait_healthy(urls))
        if rank == 0:
            lines.append(
                f"{env(CUDA_VISIBLE_DEVICES='')} "
                f"{cmd('specforge', 'train', '-c', config_file, '--role', 'producer')}"
                f" > producer.log 2>&1 &"
            )
        lines.extend(
            resumed(
                ctx,
                f"{env(**consumer_env(ctx, node, rank))} "
                + cmd(
                    "specforge",
                    "train",
                    "-c",
                    config_file,
                    "--role",
                    "consumer",
                    "--node-rank",
                    rank,
                ),
            )
        )
    for node in layout.target_nodes:
        if node not in d_nodes:
            sections[node].append(until_run_ends(q(f"{metadata_url}?key={RUN_ALIVE_KEY}")))
    yaml_text = to_yaml(doc)
    body = [
        "# The SpecForge CLI rejects a partial torch.distributed environment.\n"
        "unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT\n"
        "# Background services stop with this script.\n"
        "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT\n"
        + "\n".join(f"export {env(**{k: v})}" for k, v in mooncake_env(head).items()),
        FABRIC_IP_FUNCTION,
        read_node_rank(layout.nodes),
        # One file per node: nodes sharing a working directory do not rewrite each
        # other's (the YAML is the same on every node).
        feed('cat > "run-node$node_rank.yaml"', yaml_text),
        *write_draft_config(ctx, layout.nodes),
        node_case(sections, layout.nodes, read_rank=False),
    ]
    return LaunchScript(
        NAME,
        script(ctx, TITLE, notes, body, fmt=NAME, preflight=preflight.script_block(ctx, NAME)),
        {"run.yaml": yaml_text, **draft_files(ctx)},
        tuple(notes),
        layout,
    )


# --- colocated: every GPU runs a target shard and a drafter rank -----------------------------

COLOCATED_TITLE = (
    "SpecForge colocated (specforge train -c run.yaml, deployment.mode local_colocated)"
)


def colocated_fraction(ctx: Context) -> float:
    """model.sglang_mem_fraction_static of a colocated GPU: SGLang's static pool holds the
    target's weight shard and the KV of its island's capture batch (training.tp_size x
    batch_size max-length sequences over tp GPUs: one batch per GPU), rounded up to 0.05;
    the draft, its optimizer and activations share the rest (docs/basic_usage/
    colocated_training.md: the fraction is SGLang's static budget, not a partition)."""
    p, m = ctx.plan, ctx.model
    tokens = p.drafter.batch_size * (p.workload.max_length + CONTEXT_EXTRA_TOKENS)
    need = (
        BF16_BYTES * m.total_params / p.target.tp + BF16_BYTES * 2 * m.kv_dim * m.n_layers * tokens
    )
    share = need / BYTES_PER_GIB / ctx.resolved.target_gpu.memory_gb
    return min(0.95, max(0.1, math.ceil(share * 20 - 1e-9) / 20))


def colocated_config(ctx: Context, head: str) -> dict[str, Any]:
    """The `specforge train -c` YAML of a colocated online run (SpecForge at
    SPECFORGE_PR_COMMIT: examples/configs/online/colocated/*.yaml): every trainer rank
    loads a target shard; training.tp_size is the target-TP island width, and with several
    islands the draft shards HYBRID_SHARD inside each island and replicates across them
    (its schema: tp_size > 1, more than one island, tp_size dividing nproc_per_node)."""
    p = ctx.plan
    nodes, per_node = colocated_nodes(ctx)
    training = training_section(ctx) | {"tp_size": p.target.tp}
    if p.target.tp > 1 and nodes * per_node > p.target.tp:
        training["fsdp_sharding"] = "HYBRID_SHARD"
    trainer: dict[str, Any] = {"nnodes": nodes, "nproc_per_node": per_node}
    if nodes > 1:
        trainer |= {"master_addr": head, "master_port": p.launch.master_port}
    return {
        "model": model_section(ctx, colocated_fraction(ctx)),
        "data": data_section(ctx),
        "training": training,
        "run_id": run_id(p),
        "output_dir": output_dir(p),
        "deployment": {"mode": "local_colocated", "trainer": trainer},
    }


def render_colocated(ctx: Context) -> LaunchScript:
    """One `specforge train` per node, role all: SpecForge starts torchrun over the node's
    GPUs (--nnodes/--node_rank/--master_addr across nodes, as for its offline run), each
    rank capturing from its own SGLang target shard and training its drafter shard; no
    capture server, producer or Mooncake."""
    p, layout = ctx.plan, ctx.layout
    nodes, per_node = colocated_nodes(ctx)
    doc = colocated_config(ctx, layout.hosts[0])
    yaml_text = to_yaml(doc)
    islands = nodes * per_node // p.target.tp
    notes = [
        *specforge_pr_notes(p, ctx.line),
        f"colocated: {islands} target replica(s) of tp {p.target.tp}, each GPU a target shard "
        f"and a drafter rank ({doc['training'].get('fsdp_sharding', 'SHARD_GRAD_OP')}); "
        f"sglang_mem_fraction_static {doc['model']['sglang_mem_fraction_static']:.2f}: the "
        f"target's weight shard and the KV of {p.drafter.batch_size} max-length sequence(s) "
        f"per GPU, the drafter trains in the rest",
    ]
    gpus = devices(tuple(range(per_node)))
    unset = "unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT"
    if nodes == 1:
        body = [
            "# The SpecForge CLI rejects a partial torch.distributed environment.\n"
            + unset
            + " NODE_RANK",
            *write_draft_config(ctx, 1),
            heredoc("run.yaml", yaml_text),
            *resumed(
                ctx,
                f"{env(CUDA_VISIBLE_DEVICES=gpus)} {cmd('specforge', 'train', '-c', 'run.yaml')}",
            ),
        ]
    else:
        notes.append(
            "multi-node: run this script on every node with NODE_RANK set; output_dir must "
            f"be on a filesystem all nodes share; node 0 ({layout.hosts[0]}) is torchrun's "
            "master"
        )
        rendezvous = f"timeout={RENDEZVOUS_TIMEOUT_S}"
        sections = {
            node: resumed(
                ctx,
                f"{env(NODE_RANK=node, CUDA_VISIBLE_DEVICES=gpus, PET_RDZV_CONF=rendezvous)} "
                + cmd("specforge", "train", "-c", node_config(node), "--node-rank", node),
            )
            for node in range(nodes)
        }
        body = [
            "# The SpecForge CLI rejects a partial torch.distributed environment.\n" + unset,
            read_node_rank(nodes),
            feed('cat > "run-node$node_rank.yaml"', yaml_text),
            *write_draft_config(ctx, nodes),
            node_case(sections, nodes, read_rank=False),
        ]
    return LaunchScript(
        NAME,
        script(
            ctx,
            COLOCATED_TITLE,
            notes,
            body,
            fmt=NAME,
            ports=False,
            preflight=preflight.script_block(ctx, NAME),
        ),
        {"run.yaml": yaml_text, **draft_files(ctx)},
        tuple(notes),
        layout,
    )


# --- offline: scripts/prepare_hidden_states.py, then specforge train on the files ----------

OFFLINE_TITLE = (
    "SpecForge offline (scripts/prepare_hidden_states.py, then specforge train -c run.yaml)"
)
# What the capture reads of the draft config (sgl-project/SpecForge a6b6b023
# scripts/prepare_hidden_states.py): the layers to capture, from dflash_config
# (resolve_dflash_capture_layers), and the vocabulary size (_resolve_draft_vocab_size: a
# local JSON file is required). The trainer derives the drafter from the target as online.
CAPTURE_CONFIG = "dflash-capture.json"


def capture_config(ctx: Context) -> dict[str, Any]:
    """The draft config prepare_hidden_states.py resolves the captured layers from: a
    DFlash drafter of draft_layers layers over the target (the fields SpecForge's
    auto-generated DFlash config sets, populate_dflash_generated_config)."""
    w, m = ctx.plan.workload, ctx.model
    return {
        "architectures": ["DFlashDraftModel"],
        "model_type": "qwen3",
        "hidden_size": m.hidden,
        "vocab_size": m.vocab,
        "num_hidden_layers": w.draft_layers,
        "num_target_layers": m.n_layers,
        "block_size": ctx.block,
        "layer_types": ["full_attention"] * w.draft_layers,
        "sliding_window": None,
        "use_sliding_window": False,
        "dflash_config": {"target_layer_ids": list(ctx.layer_ids)},
    }


def capture_nodes(ctx: Context) -> tuple[tuple[int, ...], int]:
    """The target nodes and the GPUs each captures on: one torchrun spans them, with the
    same number on every node."""
    nodes = ctx.layout.target_nodes
    counts = {len(ctx.layout.target_devices_on(n)) for n in nodes}
    if len(counts) > 1:
        spread = " + ".join(str(len(ctx.layout.target_devices_on(n))) for n in nodes)
        raise PlanError.field(
            "target.count",
            str(ctx.plan.target.count),
            f"the targets land {spread} on {len(nodes)} nodes, and the capture's torchrun "
            f"needs the same number on each; change the split so the targets fill whole nodes",
        )
    return nodes, counts.pop()


def capture_config_file(ctx: Context, node: int) -> str:
    """One file per node: nodes sharing a working directory do not rewrite each other's."""
    return CAPTURE_CONFIG if ctx.layout.nodes == 1 else f"dflash-capture-node{node}.json"


def capture_command(ctx: Context, node: int, config_file: str | None = None) -> list[object]:
    """torchrun over the target GPUs running SpecForge's offline capture: data parallel
    over target.count / tp replicas, each of tp GPUs (its --tp-size), the files indexed
    across the nodes by data-parallel rank."""
    p, w = ctx.plan, ctx.plan.workload
    nodes, per_node = capture_nodes(ctx)
    if len(nodes) == 1:
        launcher: list[object] = ["torchrun", "--standalone", "--nproc_per_node", per_node]
    else:
        launcher = [
            "torchrun",
            "--nnodes",
            len(nodes),
            "--node_rank",
            nodes.index(node),
            "--master_addr",
            ctx.layout.hosts[nodes[0]],
            "--master_port",
            p.launch.master_port,
            "--rdzv_conf",
            f"timeout={RENDEZVOUS_TIMEOUT_S}",
            "--nproc_per_node",
            per_node,
        ]
    return [
        *launcher,
        "scripts/prepare_hidden_states.py",
        "--target-model-path",
        ctx.path,
        "--trust-remote-code",
        "--strategy",
        "dflash",
        "--draft-model-config",
        config_file or capture_config_file(ctx, node),
        "--data-path",
        p.launch.train_data_path,
        "--max-length",
        w.max_length,
        "--chat-template",
        ctx.chat_template,
        "--tp-size",
        p.target.tp,
        # SGLang's running requests per replica (max_running_requests): the in-flight
        # sequences mem_fraction_static is sized for.
        "--batch-size",
        IN_FLIGHT_PER_SERVER,
        "--output-path",
        hidden_states_dir(p),
        "--sglang-mem-fraction-static",
        ctx.memory.fraction,
        "--sglang-context-length",
        w.max_length + CONTEXT_EXTRA_TOKENS,
    ]


def offline_config(ctx: Context, head: str | None = None) -> dict[str, Any]:
    """The `specforge train -c` YAML of the offline training: the online document's model
    and training keys, data.hidden_states_path in place of the raw data, and a colocated
    trainer (SpecForge runs offline data as local_colocated, role all)."""
    doc = config(ctx, managed_local=False, server_urls=[], head="")
    nodes, per_node = trainer_nodes(ctx)
    model = {
        k: v for k, v in doc["model"].items() if not k.startswith("sglang_")
    }  # no capture server in this run
    trainer: dict[str, Any] = {"nnodes": len(nodes), "nproc_per_node": per_node}
    if len(nodes) > 1:
        trainer["master_addr"] = head or ctx.layout.hosts[nodes[0]]
        trainer["master_port"] = ctx.plan.launch.master_port
    return {
        "model": model,
        "data": {
            "hidden_states_path": hidden_states_dir(ctx.plan),
            "max_length": ctx.plan.workload.max_length,
            "chat_template": ctx.chat_template,
        },
        "training": doc["training"],
        "run_id": doc["run_id"],
        "output_dir": doc["output_dir"],
        "deployment": {"mode": "local_colocated", "trainer": trainer},
    }


def require_offline_family(ctx: Context, fmt: str) -> None:
    """SpecForge's offline capture (prepare_hidden_states.py --strategy dflash) captures for
    the derived DFlash drafter only; the planner writes no offline DFlash2."""
    family = ctx.plan.workload.drafter
    if draft_config(ctx) is not None:
        raise PlanError.said(
            f"launch.format {fmt} cannot run workload.drafter {family} offline: its offline "
            f"run captures for the derived DFlash drafter (prepare_hidden_states.py "
            f"--strategy dflash); train {family} online",
            "workload.drafter",
        )


def render_offline(ctx: Context, template: str | None = None) -> LaunchScript:
    require_offline_family(ctx, NAME)
    require_derived_layers(ctx, "SpecForge")
    layout, p = ctx.layout, ctx.plan
    storage = offline_storage(
        ctx,
        NAME,
        ("bf16",),
        "SpecForge's prepare_hidden_states.py (a6b6b023) stores the target's own dtype",
    )
    c_nodes, _ = capture_nodes(ctx)
    d_nodes, _ = trainer_nodes(ctx)
    done = capture_done(p)
    notes = [
        storage,
        "run this script from the top folder of a SpecForge checkout (it has "
        "scripts/prepare_hidden_states.py); SGLang must be installed",
        f"the capture resumes: it skips samples already in {hidden_states_dir(p)}; "
        f"delete that folder and {done} before capturing other data",
        *ctx.memory.reasoning(),
    ]
    if layout.nodes > 1:
        notes.append(
            "multi-node: run this script on every node with NODE_RANK set; output_dir "
            f"must be on a filesystem all nodes share; the trainers start once node "
            f"{c_nodes[0]} has written {done}"
        )
    yaml_text = to_yaml(offline_config(ctx))
    json_text = to_json(capture_config(ctx))
    sections: dict[int, list[str]] = {}
    for node in c_nodes:
        lines = sections.setdefault(node, [])
        words = capture_command(ctx, node)
        lines.append(
            f"{env(CUDA_VISIBLE_DEVICES=devices(layout.target_devices_on(node)))} "
            + cmd(*words, lead=words.index("scripts/prepare_hidden_states.py") + 1)
        )
        if node == c_nodes[0]:
            # torchrun returns once every capture process has finished (they end with a
            # barrier), on every node.
            lines.append(f"mkdir -p -- {q(output_dir(p))} && touch -- {q(done)}")
    for rank, node in enumerate(d_nodes):
        lines = sections.setdefault(node, [])
        if node != c_nodes[0]:
            lines.append(f"until [ -e {q(done)} ]; do sleep 30; done   # the capture")
        config_file = node_config(node) if layout.nodes > 1 else "run.yaml"
        train: list[object] = ["specforge", "train", "-c", config_file]
        if len(d_nodes) > 1:
            train += ["--node-rank", rank]
        lines.extend(
            resumed(
                ctx,
                f"{env(NODE_RANK=rank, CUDA_VISIBLE_DEVICES=devices(layout.drafters[node]))} "
                + cmd(*train),
            )
        )
    body = [
        "# The SpecForge CLI rejects a partial torch.distributed environment.\n"
        "unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT",
    ]
    if layout.nodes > 1:
        body += [
            read_node_rank(layout.nodes),
            feed('cat > "dflash-capture-node$node_rank.json"', json_text),
            feed('cat > "run-node$node_rank.yaml"', yaml_text),
            node_case(sections, layout.nodes, read_rank=False),
        ]
    else:
        body += [
            heredoc(CAPTURE_CONFIG, json_text),
            heredoc("run.yaml", yaml_text),
            "\n".join(sections[0]),
        ]
    return LaunchScript(
        NAME,
        script(
            ctx,
            OFFLINE_TITLE,
            notes,
            body,
            fmt=NAME,
            ports=False,
            preflight=preflight.script_block(ctx, NAME),
        ),
        {"run.yaml": yaml_text, CAPTURE_CONFIG: json_text},
        tuple(notes),
        layout,
    )
