"""vLLM speculators: `scripts/launch_vllm.py` serves the target and extracts hidden states,
`speculators prepare-data` renders the data through it, `torchrun -m speculators.train`
trains (vllm-project/speculators; flags checked against the speculators 0.9.0 and
hs-connectors 0.9.0 wheels and scripts/launch_vllm.py at c05b95b3)."""

from __future__ import annotations

from ..basics import recipe
from . import preflight
from .checkpointing import speculators_args
from .common import (
    DFLASH2_CONFIG,
    FABRIC_IP_FUNCTION,
    MOONCAKE_RPC_PORT,
    RUN_ALIVE_KEY,
    Context,
    LaunchScript,
    capture_done,
    devices,
    export_fabric_ip,
    flow_control,
    hidden_states_dir,
    node_case,
    offline_storage,
    output_dir,
    script,
    until_run_ends,
)
from .escape import cmd, env, q

NAME = "speculators"
TITLE = "vLLM speculators (launch_vllm.py, prepare-data, speculators.train)"
VLLM_PORT = 8000
VLLM_DP_RPC_PORT = 13345
# The first trainer node's liveness server (Python's http.server on an empty folder), up
# while that node's script runs: nodes running only vLLM watch it to stop with the run.
RUN_ALIVE_PORT = 35890
HIDDEN_STATES_DIR = "/tmp/hidden_states"
# torchrun's static rendezvous waits 600 s for the other trainer nodes by default
# (torch/distributed/elastic/rendezvous/static_tcp_rendezvous.py); the first trainer node
# joins only after vLLM is up and the data is prepared.
RENDEZVOUS_TIMEOUT_S = 3 * 3600


def data_dir(ctx: Context) -> str:
    return f"{output_dir(ctx.plan)}/data"


def prepare_data(ctx: Context, base_url: str) -> str:
    """speculators' data preparation through the running vLLM server at base_url."""
    return cmd(
        "speculators",
        "prepare-data",
        "--model",
        ctx.path,
        "--data",
        ctx.plan.launch.train_data_path,
        "--render-endpoint",
        base_url,
        "--output",
        data_dir(ctx),
        "--seq-length",
        ctx.plan.workload.max_length,
        "--trust-remote-code",
        lead=2,
    )


# vLLM's load_chat_template (vllm/entrypoints/chat_utils.py) opens --chat-template as a
# file, and takes a value holding one of these (JINJA_CHARS) as the template itself.
JINJA_CHARS = "{}\n"


def chat_template(ctx: Context) -> list[object]:
    """vLLM's `--chat-template` for launch.chat_template. prepare-data takes no template:
    vLLM renders each conversation (speculators 0.9.0 data_generation/preprocessing.py:
    "the chat template is applied server-side"); unset, with the model's own template."""
    template = ctx.plan.launch.chat_template
    return [] if template is None else ["--chat-template", template]


def template_notes(ctx: Context) -> list[str]:
    template = ctx.plan.launch.chat_template
    if template is None:
        return ["vLLM renders the conversations with the model's own chat template"]
    note = (
        f"vLLM renders the conversations with launch.chat_template {template!r} (its "
        f"--chat-template: a Jinja file, a relative path from the folder this script runs "
        f"in, or the template itself)"
    )
    if not any(c in template for c in JINJA_CHARS + "/."):
        note += (
            f"; warning: vLLM reads {template!r} as a file name, and a template name "
            f"such as SpecForge's 'qwen' is not one: give a .jinja file or remove the key"
        )
    return [note]


def vllm_segment_gib(ctx: Context) -> int:
    """Mooncake segment of one vLLM engine: each data-parallel engine registers a segment
    of --mooncake-global-segment-gib of its own, so the batches every trainer rank's loader
    workers may have in flight are spread over the engines (physics/flow.py)."""
    return flow_control(ctx, "speculators").segment_gib


def loader_flags(ctx: Context) -> list[object]:
    """--num-workers when the trainer reads through Mooncake (physics/flow.py: each loader
    worker opens a Mooncake client); the file backend keeps speculators' default."""
    flow = flow_control(ctx, "speculators")
    return ["--num-workers", flow.loader_workers_per_rank] if flow.cross_node else []


def lease_flags(ctx: Context) -> list[object]:
    """The master's read lease across nodes (physics/flow.py)."""
    lease = flow_control(ctx, "speculators").lease_ms
    return [] if lease is None else [f"--default_kv_lease_ttl={lease}"]


def train_words(ctx: Context, hidden: list[object]) -> list[object]:
    """`-m speculators.train` and its flags; `hidden`: where the hidden states come from."""
    p, w = ctx.plan, ctx.plan.workload
    family = w.drafter  # speculators' --speculator-type names the families as the plan does
    shape = ctx.resolved.shape
    block: list[object] = []
    if family != "eagle3":  # the DFlash family's block and anchors (DFlashArgs, DataArgs)
        block = ["--block-size", ctx.block, "--max-anchors", w.num_anchors]
    train: list[object] = [
        "-m",
        "speculators.train",
        "--verifier-name-or-path",
        ctx.path,
        "--speculator-type",
        family,
        "--data-path",
        data_dir(ctx),
        *hidden,
        *block,
        "--num-layers",
        shape.layers,
        "--target-layer-ids",
        *ctx.layer_ids,
        "--epochs",
        w.epochs,
        "--lr",
        recipe.LEARNING_RATE,
        "--optimizer",
        "adamw",
        "--scheduler-type",
        "cosine",
        "--scheduler-warmup-ratio",
        recipe.WARMUP_RATIO,
        "--total-seq-len",
        w.max_length * p.drafter.batch_size,
        "--save-path",
        f"{output_dir(p)}/checkpoints",
        *loader_flags(ctx),
        *speculators_args(ctx, NAME),
    ]
    if ctx.block == 16 and family != "eagle3":
        # The decay gamma acts only under fixed-exp-decay weighting; the default is dpace.
        train += [
            "--per-position-loss-weight",
            "fixed-exp-decay",
            "--dflash-decay-gamma",
            recipe.LOSS_DECAY_GAMMA_B16,
        ]
    if shape.frozen_vocab is not None:
        # EAGLE-3's own LM head over a reduced vocabulary, mapped from the token
        # frequencies prepare-data writes (<data-path>/token_freq.pt).
        train += ["--draft-vocab-size", shape.vocab]
    if family == "dflash2":
        # The shape SpecForge's DFlash2 draft config and z-lab's checkpoints carry.
        for key, value in DFLASH2_CONFIG.items():
            train += [f"--{key.replace('_', '-')}", value]
    return train


def trainer_launcher(ctx: Context, rank: int) -> list[object]:
    """torchrun on drafter node `rank` of the trainer nodes."""
    p, d_nodes = ctx.plan, ctx.layout.drafter_nodes
    devs = ctx.layout.drafters[d_nodes[rank]]
    if len(d_nodes) == 1:
        launcher: list[object] = ["torchrun", "--standalone", "--nproc_per_node", len(devs)]
    else:
        launcher = [
            "torchrun",
            "--nnodes",
            len(d_nodes),
            "--node_rank",
            rank,
            "--master_addr",
            ctx.layout.hosts[d_nodes[0]],
            "--master_port",
            p.launch.master_port,
            "--rdzv_conf",
            f"timeout={RENDEZVOUS_TIMEOUT_S}",
            "--nproc_per_node",
            len(devs),
        ]
    return launcher


def render(ctx: Context, template: str | None = None) -> LaunchScript:
    p, w, layout = ctx.plan, ctx.plan.workload, ctx.layout
    multi = layout.nodes > 1
    head = layout.hosts[layout.target_nodes[0]]
    base_url = f"http://{head if multi else 'localhost'}:{VLLM_PORT}"
    notes = [
        "launch_vllm.py comes from a speculators checkout matching the installed "
        "version; run this script from its top folder",
        f"prepare-data renders {p.launch.train_data_path} through the vLLM server into "
        f"{data_dir(ctx)} (skipped when that folder already holds the dataset)",
        *template_notes(ctx),
    ]
    if multi:
        segment = vllm_segment_gib(ctx)
        engines = max(len(layout.targets_on(n)) for n in layout.target_nodes)
        notes += [
            "multi-node: run this script on every node with NODE_RANK set; output_dir "
            "must be on a filesystem all nodes share",
            f"hidden states travel through Mooncake (master on node "
            f"{layout.target_nodes[0]}, {head}); each vLLM data-parallel engine "
            f"registers a segment of {segment} GiB of host memory (up to {engines} "
            f"engine(s) = {engines * segment} GiB on a node): "
            f"{flow_control(ctx, 'speculators').loader_workers_per_rank} batches in flight "
            f"per trainer rank (--num-workers: each loader worker opens a Mooncake "
            f"client, and 12 per rank exhausted a node's threads, speculators PR #1046), "
            f"spread over the "
            f"{len(layout.replicas)} engines",
            f"a node running only vLLM exits, stopping it, once the first trainer node's "
            f"liveness server (port {RUN_ALIVE_PORT}, up while that node's script runs) is gone",
        ]
        common: list[object] = [
            "--hidden-states-backend",
            "mooncake",
            "--mooncake-master",
            f"{head}:{MOONCAKE_RPC_PORT}",
        ]
        launch_backend = [*common, "--mooncake-global-segment-gib", segment]
    else:
        notes.append(f"hidden states travel through files under {HIDDEN_STATES_DIR} (one host)")
        common = ["--hidden-states-backend", "file", "--hidden-states-path", HIDDEN_STATES_DIR]
        launch_backend = common
    replicas_total = len(layout.replicas)
    sections: dict[int, list[str]] = {}
    if multi:
        for node in range(layout.nodes):
            # vLLM and the trainer register with Mooncake under the node's reachable name.
            sections[node] = export_fabric_ip(head).split("\n")
    start_rank = 0
    for index, node in enumerate(layout.target_nodes):
        local = layout.targets_on(node)
        # launch_vllm.py appends the final layer itself; the client asks for one token, so
        # the context holds max_length + 1.
        # launch_vllm.py's --trust-remote-code acts only on its own config lookup; vLLM
        # takes it after `--` (scripts/launch_vllm.py at c05b95b3), as SpecForge's YAML
        # sets model.trust_remote_code.
        serve: list[object] = [
            "--trust-remote-code",
            *chat_template(ctx),
            "--data-parallel-size",
            replicas_total,
            "--tensor-parallel-size",
            p.target.tp,
            "--port",
            VLLM_PORT,
            "--max-model-len",
            w.max_length + 1,
        ]
        if multi:
            serve += [
                "--data-parallel-size-local",
                len(local),
                "--data-parallel-address",
                head,
                "--data-parallel-rpc-port",
                VLLM_DP_RPC_PORT,
            ]
            if index > 0:
                serve += ["--headless", "--data-parallel-start-rank", start_rank]
        start_rank += len(local)
        lines = sections.setdefault(node, [])
        if multi and index == 0:
            lines.append(
                f"{cmd('mooncake_master', f'--rpc_port={MOONCAKE_RPC_PORT}', *lease_flags(ctx))}"
                " > mooncake.log 2>&1 &"
            )
        lines.append(
            f"{env(CUDA_VISIBLE_DEVICES=devices(layout.target_devices_on(node)))} "
            + cmd(
                "python",
                "scripts/launch_vllm.py",
                ctx.path,
                *launch_backend,
                "--target-layer-ids",
                *ctx.layer_ids,
                "--trust-remote-code",
                "--",
                *serve,
                lead=3,
            )
            + f" > {q(f'vllm-{node}.log')} 2>&1 &"
        )
    train = train_words(ctx, ["--vllm-endpoint", f"{base_url}/v1", *common])
    prepare = prepare_data(ctx, base_url)
    ready = q(f"{data_dir(ctx)}/dataset_info.json")
    d_nodes = layout.drafter_nodes
    alive = f"http://{layout.hosts[d_nodes[0]]}:{RUN_ALIVE_PORT}/"
    for rank, node in enumerate(d_nodes):
        devs = layout.drafters[node]
        launcher = trainer_launcher(ctx, rank)
        lines = sections.setdefault(node, [])
        if rank == 0 and multi:
            # Serves an empty folder until this script ends (its trap stops it).
            lines.append('alive_dir="$(mktemp -d)"')
            lines.append(
                f'python -m http.server --bind 0.0.0.0 --directory "$alive_dir" {RUN_ALIVE_PORT} '
                "> /dev/null 2>&1 &   # up while this node trains: vLLM-only nodes watch it"
            )
        if rank == 0:
            lines.append(f"until curl -sf {q(base_url + '/health')} >/dev/null; do sleep 5; done")
            lines.append(prepare)
        else:
            lines.append(f"until [ -e {ready} ]; do sleep 10; done   # rank 0 prepares the data")
        lines.append(
            f"{env(CUDA_VISIBLE_DEVICES=devices(devs))} "
            f"{cmd(*launcher, *train, lead=len(launcher) + 2)}"
        )
    for node in layout.target_nodes:
        if node not in d_nodes:
            # vLLM serves until stopped: this node exits (its trap stops vLLM) once the
            # first trainer node's liveness server, having come up, is gone.
            sections[node].append(
                f"until curl -s -o /dev/null {q(alive)}; do sleep 10; done   # the trainers start"
            )
            sections[node].append(until_run_ends(q(f"{alive}?key={RUN_ALIVE_KEY}")))
    trap = (
        "# Background services stop with this script.\n"
        "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT"
    )
    body = [
        trap,
        *(
            [FABRIC_IP_FUNCTION, node_case(sections, layout.nodes)]
            if multi
            else ["\n".join(sections[0])]
        ),
    ]
    text = script(
        ctx, TITLE, notes, body, fmt=NAME, ports=False, preflight=preflight.script_block(ctx, NAME)
    )
    return LaunchScript(NAME, text, {}, tuple(notes), layout)


# --- offline: vLLM writes the hidden states to files, generate-offline-data keeps them, the
# trainer reads them (examples/train/eagle3_llama3_8b_ultrachat_offline_5k.sh, c05b95b3) ---

OFFLINE_TITLE = (
    "vLLM speculators offline (launch_vllm.py, prepare-data, generate-offline-data, "
    "speculators.train)"
)
# hs-connectors' file backends (hs_connectors/transfer.py, 0.9.0): bf16 safetensors, or
# float8_e4m3fn with a float32 scale per token (fp8_hidden_states_connector.py).
OFFLINE_BACKENDS = {"bf16": "file", "fp8": "fp8"}


def capture_marker(ctx: Context, index: int) -> str:
    """Written by target node `index` once its share of the hidden states is on disk."""
    return f"{capture_done(ctx.plan)}.{index}"


def render_offline(ctx: Context, template: str | None = None) -> LaunchScript:
    p, w, layout = ctx.plan, ctx.plan.workload, ctx.layout
    storage = offline_storage(
        ctx,
        NAME,
        tuple(OFFLINE_BACKENDS),
        "hs-connectors 0.9.0 writes bf16 or fp8",
    )
    backend = OFFLINE_BACKENDS[w.storage_dtype]
    hs_dir = hidden_states_dir(p)
    t_nodes, d_nodes = layout.target_nodes, layout.drafter_nodes
    base_url = f"http://localhost:{VLLM_PORT}"
    notes = [
        storage,
        "launch_vllm.py comes from a speculators checkout matching the installed "
        "version; run this script from its top folder",
        f"prepare-data renders {p.launch.train_data_path} through the vLLM server into "
        f"{data_dir(ctx)}; each target node's vLLM writes its hidden states under "
        f"{HIDDEN_STATES_DIR} and generate-offline-data moves them to {hs_dir}",
        *template_notes(ctx),
        f"the capture resumes: it skips samples already in {hs_dir}; delete that "
        f"folder and {capture_done(p)}.* before capturing other data",
    ]
    if layout.nodes > 1:
        notes.append(
            "multi-node: run this script on every node with NODE_RANK set; output_dir "
            f"must be on a filesystem all nodes share; each target node runs its own vLLM "
            f"and captures its share of the samples (--world-size {len(t_nodes)}), the "
            f"trainers start once every share is on disk"
        )
    sections: dict[int, list[str]] = {}
    ready = q(f"{data_dir(ctx)}/dataset_info.json")
    for index, node in enumerate(t_nodes):
        local = layout.targets_on(node)
        lines = sections.setdefault(node, [])
        lines.append(
            f"{env(CUDA_VISIBLE_DEVICES=devices(layout.target_devices_on(node)))} "
            + cmd(
                "python",
                "scripts/launch_vllm.py",
                ctx.path,
                "--hidden-states-backend",
                backend,
                "--hidden-states-path",
                HIDDEN_STATES_DIR,
                "--target-layer-ids",
                *ctx.layer_ids,
                "--trust-remote-code",
                "--",
                "--trust-remote-code",
                *chat_template(ctx),
                "--data-parallel-size",
                len(local),
                "--tensor-parallel-size",
                p.target.tp,
                "--port",
                VLLM_PORT,
                "--max-model-len",
                w.max_length + 1,
                lead=3,
            )
            + f" > {q(f'vllm-{node}.log')} 2>&1 &"
        )
        lines.append("vllm_pid=$!")
        lines.append(f"until curl -sf {q(base_url + '/health')} >/dev/null; do sleep 5; done")
        if index == 0:
            lines.append(prepare_data(ctx, base_url))
        else:
            lines.append(f"until [ -e {ready} ]; do sleep 10; done   # node {t_nodes[0]} prepares")
        lines.append(
            cmd(
                "speculators",
                "generate-offline-data",
                "--model",
                ctx.path,
                "--endpoint",
                f"{base_url}/v1",
                "--preprocessed-data",
                data_dir(ctx),
                "--output",
                hs_dir,
                "--world-size",
                len(t_nodes),
                "--rank",
                index,
                lead=2,
            )
        )
        # The GPUs and host memory go back before training.
        lines.append('kill "$vllm_pid" 2>/dev/null || true')
        lines.append(f"mkdir -p -- {q(output_dir(p))} && touch -- {q(capture_marker(ctx, index))}")
    train = train_words(
        ctx,
        [
            "--hidden-states-backend",
            backend,
            "--hidden-states-path",
            hs_dir,
            "--on-missing",
            "raise",
        ],
    )
    markers = " ".join(q(capture_marker(ctx, i)) for i in range(len(t_nodes)))
    for rank, node in enumerate(d_nodes):
        lines = sections.setdefault(node, [])
        lines.append(
            f'for f in {markers}; do until [ -e "$f" ]; do sleep 30; done; done   # the capture'
        )
        launcher = trainer_launcher(ctx, rank)
        lines.append(
            f"{env(CUDA_VISIBLE_DEVICES=devices(layout.drafters[node]))} "
            f"{cmd(*launcher, *train, lead=len(launcher) + 2)}"
        )
    trap = (
        "# Background services stop with this script.\n"
        "trap 'kill $(jobs -p) 2>/dev/null || true' EXIT"
    )
    body = [
        trap,
        node_case(sections, layout.nodes) if layout.nodes > 1 else "\n".join(sections[0]),
    ]
    text = script(
        ctx,
        OFFLINE_TITLE,
        notes,
        body,
        fmt=NAME,
        ports=False,
        preflight=preflight.script_block(ctx, NAME),
    )
    return LaunchScript(NAME, text, {}, tuple(notes), layout)
