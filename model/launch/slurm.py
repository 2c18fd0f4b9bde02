"""An sbatch script running SpecForge unified: one srun step per capture server, the
Mooncake master, the producer, and one trainer step per drafter node, each step on its own
host and GPUs. SpecForge ships no sbatch files; the steps follow its two-node example."""

from __future__ import annotations

import math
import re

from ..core.resolve import require_same_gpu_type
from ..inputs.plan import Plan
from . import preflight, specforge
from .checkpointing import RESUME_WORDS, resume_line
from .common import (
    FABRIC_IP_FUNCTION,
    GIB,
    MOONCAKE_METADATA_PORT,
    MOONCAKE_RPC_PORT,
    Context,
    LaunchScript,
    colocated_nodes,
    devices,
    offline_storage,
    require_derived_layers,
    run_id,
    sample_feature_bytes,
    script,
    specforge_pr_notes,
)
from .escape import cmd, env, heredoc, q, terminator, to_json, to_yaml

NAME = "slurm"
TITLE = "Slurm (sbatch) running SpecForge unified"


# SpecForge's producer tokenizes the data with data.build_dataset_num_proc = 8 processes
# (specforge/config/schema.py default); an SGLang server runs one scheduler per TP rank plus
# its tokenizer manager and detokenizer.
PRODUCER_PROCESSES = 1 + 8
SERVER_EXTRA_PROCESSES = 2


def on_node_definition() -> str:
    """`on_node`: a bash program a step runs its command through (`bash -c "$on_node"
    on_node HEAD command...`): it exports the node's fabric address for Mooncake, found on
    that node, then runs the command."""
    program = (
        FABRIC_IP_FUNCTION + '\nfabric_addr="$(fabric_ip "$1")"; shift\n'
        'export MOONCAKE_LOCAL_HOSTNAME="$fabric_addr" MC_TCP_BIND_ADDRESS="$fabric_addr"'
        '\nexec "$@"'
    )
    end = terminator(program, "DFLASH_ON_NODE_EOF")
    return f"on_node=\"$(cat <<'{end}'\n{program}\n{end}\n)\""


def sbatch_directives(
    job: str, nodes: int, gpus_per_node: int, needs: tuple[int, int, str] | None, notes: list[str]
) -> list[str]:
    """The #SBATCH header: whole nodes (needs None: every CPU and, --mem=0, all of each
    node's memory) or the memory and CPUs the run needs (their reason joins the notes)."""
    directives = [
        "#!/bin/bash",
        f"#SBATCH --job-name={job}",
        f"#SBATCH --nodes={nodes}",
        "#SBATCH --ntasks-per-node=1",
        f"#SBATCH --gpus-per-node={gpus_per_node}",
    ]
    if needs is None:
        directives += ["#SBATCH --exclusive", "#SBATCH --mem=0"]
    else:
        mem_gib, cpus, why = needs
        directives += [f"#SBATCH --mem={mem_gib}G", f"#SBATCH --cpus-per-task={cpus}"]
        notes.append(why)
    directives.append(f"#SBATCH --output={job}-%j.log")
    return directives


def allocation(ctx: Context) -> tuple[int, bool, int]:
    """(--gpus-per-node, whole nodes, GPUs billed): every node asks for the GPUs of the
    busiest one, and a job that fills its nodes takes them whole (--exclusive)."""
    layout = ctx.layout
    gpus_per_node = max(layout.gpus_used_on(n) for n in range(layout.nodes))
    whole_nodes = gpus_per_node == layout.gpus_per_node
    return (
        gpus_per_node,
        whole_nodes,
        layout.nodes * (layout.gpus_per_node if whole_nodes else gpus_per_node),
    )


def rented(ctx: Context) -> tuple[int, int]:
    """The GPUs the allocation bills per role (one GPU type: the idle ones count with the
    targets, as the projection counts them)."""
    drafters = ctx.plan.drafter.count
    return allocation(ctx)[2] - drafters, drafters


def host_needs(ctx: Context) -> tuple[int, int, str]:
    """(--mem in GiB, --cpus-per-task, the reasoning) of the busiest node, for a job that
    does not take whole nodes: the host memory the plan puts there (each capture server's
    Mooncake segment and local buffer and the target weights it loads through host memory;
    each trainer rank's Mooncake local buffer and two batches of fetched features) and one
    CPU per process."""
    p, layout = ctx.plan, ctx.layout
    segment, weights, rank = specforge.host_memory_gib(ctx)
    head = specforge.trainer_nodes(ctx)[0][0]
    best = (0.0, 0)
    for node in range(layout.nodes):
        servers, ranks = len(layout.targets_on(node)), len(layout.drafters.get(node, ()))
        mem = servers * (segment + weights) + ranks * rank
        cpus = (
            servers * (p.target.tp + SERVER_EXTRA_PROCESSES)
            + ranks
            + (PRODUCER_PROCESSES + 1 if node == head else 0)
        )
        best = max(best, (mem, cpus))
    mem_gib = math.ceil(best[0])
    return (
        mem_gib,
        best[1],
        (
            f"--mem={mem_gib}G: per capture server its Mooncake segment and buffer "
            f"{segment:.0f} GiB and the target weights it loads through host memory "
            f"{weights:.1f} GiB; per trainer rank its buffer and two fetched batches "
            f"{rank:.1f} GiB; --cpus-per-task={best[1]}: one per process (each server's TP "
            f"schedulers, tokenizer manager and detokenizer; each trainer rank; the producer "
            f"and its {PRODUCER_PROCESSES - 1} tokenizing workers; the Mooncake master); the "
            f"processes' own runtime comes on top: raise --mem by your cluster's usual "
            f"allowance per process"
        ),
    )


def job_name(plan: Plan) -> str:
    """The sbatch --job-name from run_id. Slurm takes any name of at most 1,024 characters
    (slurmctld's _test_strlen(job_desc->name, "name", 1024), SchedMD/slurm job_mgr.c at
    284c3b95, 2026-08-20), but sbatch splits an #SBATCH line at whitespace, quotes and
    backslashes (get_argument in src/sbatch/opt.c): the name keeps letters, digits, `.`,
    `_` and `-` (the rest become `_`), cut at 64 characters to stay readable in squeue.
    Not common.name_label: that is SkyPilot's and Kubernetes' DNS-label rule, which would
    rename `.` and `_` and prefix a leading digit where Slurm needs neither."""
    return re.sub(r"[^A-Za-z0-9._-]", "_", run_id(plan))[:64] or "dflash"


def render(ctx: Context, template: str | None = None) -> LaunchScript:
    p, layout = ctx.plan, ctx.layout
    require_same_gpu_type(p, "an sbatch script requests one GPU type for every node")
    if p.workload.topology == "colocated":
        return render_colocated(ctx)
    job = job_name(p)
    d_nodes, _ = specforge.trainer_nodes(ctx)
    # Host names are known only inside the allocation: the YAML holds placeholders that
    # the steps override with the allocated hosts.
    doc = specforge.config(ctx, managed_local=False, server_urls=[], head="localhost")
    gpus_per_node, whole_nodes, billed = allocation(ctx)
    notes = [
        "host names come from the allocation (scontrol show hostnames); node i of the "
        "plan is the i-th host",
        "output_dir must be on a filesystem all nodes share",
        f"billed: the allocation, {layout.nodes} node(s) x {gpus_per_node} GPU(s) = "
        f"{billed} GPU(s){' (whole nodes, --exclusive)' if whole_nodes else ''}; the "
        f"plan uses {p.target.count + p.drafter.count}",
        *specforge_pr_notes(p, ctx.line),
        *specforge.memory_notes(ctx),
    ]
    directives = sbatch_directives(
        job, layout.nodes, gpus_per_node, None if whole_nodes else host_needs(ctx), notes
    )
    head = f"${{NODES[{d_nodes[0]}]}}"

    def step(node: int, gpus: bool) -> str:
        # GPU steps take the node's whole share of the allocation (so device numbers are the
        # plan's) and pick their devices with CUDA_VISIBLE_DEVICES.
        gres = f" --gpus-per-node={layout.gpus_used_on(node)}" if gpus else ""
        return f'srun --nodes=1 --ntasks=1 --overlap{gres} -w "${{NODES[{node}]}}"'

    def local(node: int) -> str:
        # Each step finds its node's fabric address on that node (see FABRIC_IP_FUNCTION).
        return 'bash -c "$on_node" on_node "$HEAD" env'

    lines = [
        "# The SpecForge CLI rejects a partial torch.distributed environment.",
        "unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT",
        'mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
        f'[ "${{#NODES[@]}}" -ge {layout.nodes} ] || '
        f'{{ echo "need {layout.nodes} nodes" >&2; exit 2; }}',
        f'HEAD="{head}"',
        on_node_definition(),
        f'export MOONCAKE_MASTER_SERVER_ADDR="$HEAD:{MOONCAKE_RPC_PORT}"',
        f'export MOONCAKE_METADATA_SERVER="http://$HEAD:{MOONCAKE_METADATA_PORT}/metadata"',
        "export MOONCAKE_PROTOCOL=tcp",
        "",
        *specforge.write_draft_config(ctx, 1),
        heredoc("run.yaml", yaml_text := to_yaml(doc)),
        "",
        "urls=()",
    ]
    lines += [f'urls+=("http://${{NODES[{r.node}]}}:{r.port}")' for r in layout.replicas]
    lines += [
        'server_urls="[$(printf \'"%s",\' "${urls[@]}" | sed \'s/,$//\')]"',
        'overrides=("deployment.disaggregated.server_urls=$server_urls"',
        '           "deployment.disaggregated.mooncake_master_server_addr='
        '$MOONCAKE_MASTER_SERVER_ADDR"',
        '           "deployment.disaggregated.mooncake_metadata_server=$MOONCAKE_METADATA_SERVER")',
    ]
    if len(d_nodes) > 1:
        lines.append('overrides+=("deployment.trainer.master_addr=$HEAD")')
    lines += [
        "",
        "# Mooncake master (CPU) on the first trainer node",
        f"{step(d_nodes[0], False)} {local(d_nodes[0])} CUDA_VISIBLE_DEVICES= "
        f"{cmd(*specforge.mooncake_master(ctx), lead=2)} > mooncake.log 2>&1 &",
        f'until curl -s -o /dev/null "$MOONCAKE_METADATA_SERVER?key='
        f'{specforge.HEALTH_KEY}"; do sleep 2; done',
        "",
        "# capture servers: one step per target replica",
    ]
    for r in layout.replicas:
        lines.append(
            f"{step(r.node, True)} {local(r.node)} "
            f"{env(**specforge.server_env(ctx, r))} "
            f"{cmd(*specforge.capture_server(ctx, r), lead=3)} "
            f"> {q(f'capture-{r.node}-{r.port}.log')} 2>&1 &"
        )
    lines += [
        'for url in "${urls[@]}"; do until curl -sf "$url/health" >/dev/null; do sleep 10; '
        "done; done",
        "",
        "# producer (CPU) on the first trainer node",
        f"{step(d_nodes[0], False)} {local(d_nodes[0])} CUDA_VISIBLE_DEVICES= "
        f"{cmd('specforge', 'train', '-c', 'run.yaml', '--role', 'producer')} "
        f'"${{overrides[@]}}" > producer.log 2>&1 &',
        "",
        "# trainers: one step per drafter node, on the drafter GPUs",
        resume_line(ctx),
        "consumers=()",
    ]
    for rank, node in enumerate(d_nodes):
        lines.append(
            f"{step(node, True)} {local(node)} "
            f"{env(**specforge.consumer_env(ctx, node, rank))} "
            + cmd("specforge", "train", "-c", "run.yaml", "--role", "consumer", "--node-rank", rank)
            + " "
            f'"${{overrides[@]}}" {RESUME_WORDS} > {q(f"consumer-{rank}.log")} 2>&1 &'
        )
        lines.append("consumers+=($!)")
    lines += [
        'wait "${consumers[@]}"',
        "# The training is done: stop the servers, the master and the producer.",
        "kill $(jobs -p) 2>/dev/null || true",
    ]
    text = script(
        ctx,
        TITLE,
        notes,
        ["\n".join(lines)],
        fmt=NAME,
        shebang="\n".join(directives),
        preflight=preflight.script_block(ctx, NAME, steps=True),
        rented=rented(ctx),
    )
    files = {"run.yaml": yaml_text, **specforge.draft_files(ctx)}
    return LaunchScript(NAME, text, files, tuple(notes), layout)


# --- colocated: one trainer step per node, every GPU a target shard and a drafter rank -----

COLOCATED_TITLE = "Slurm (sbatch) running SpecForge colocated (deployment.mode local_colocated)"


def render_colocated(ctx: Context) -> LaunchScript:
    """SpecForge's colocated run under sbatch: one step per node runs `specforge train`
    (role all), which starts torchrun over the node's GPUs; the allocation takes whole
    nodes."""
    p, layout = ctx.plan, ctx.layout
    nodes, per_node = colocated_nodes(ctx)
    job = job_name(p)
    billed = nodes * layout.gpus_per_node
    notes = [
        "host names come from the allocation (scontrol show hostnames); node i of the "
        "plan is the i-th host",
        "output_dir must be on a filesystem all nodes share",
        f"billed: the allocation, {nodes} node(s) x {layout.gpus_per_node} GPU(s) = "
        f"{billed} GPU(s) (whole nodes, --exclusive); the plan uses {nodes * per_node}",
        *specforge_pr_notes(p, ctx.line),
    ]
    directives = sbatch_directives(job, nodes, layout.gpus_per_node, None, notes)
    yaml_text = to_yaml(specforge.colocated_config(ctx, "localhost"))
    gpus = devices(tuple(range(per_node)))
    lines = [
        "# The SpecForge CLI rejects a partial torch.distributed environment.",
        "unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT",
        'mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
        f'[ "${{#NODES[@]}}" -ge {nodes} ] || {{ echo "need {nodes} nodes" >&2; exit 2; }}',
        'HEAD="${NODES[0]}"',
        "",
        *specforge.write_draft_config(ctx, 1),
        heredoc("run.yaml", yaml_text),
        "overrides=()",
    ]
    if nodes > 1:
        lines.append('overrides+=("deployment.trainer.master_addr=$HEAD")')
    lines += [
        "",
        "# one step per node: SpecForge starts torchrun over its GPUs",
        resume_line(ctx),
        "steps=()",
    ]
    for node in range(nodes):
        train: list[object] = ["specforge", "train", "-c", "run.yaml"]
        environ: dict[str, object] = {"NODE_RANK": node, "CUDA_VISIBLE_DEVICES": gpus}
        if nodes > 1:
            train += ["--node-rank", node]
            environ["PET_RDZV_CONF"] = f"timeout={specforge.RENDEZVOUS_TIMEOUT_S}"
        lines += [
            f"srun --nodes=1 --ntasks=1 --overlap --gpus-per-node={layout.gpus_per_node} "
            f'-w "${{NODES[{node}]}}" env {env(**environ)} '
            f'{cmd(*train)} "${{overrides[@]}}" {RESUME_WORDS} > {q(f"train-{node}.log")} 2>&1 &',
            "steps+=($!)",
        ]
    lines.append('for pid in "${steps[@]}"; do wait "$pid"; done')
    text = script(
        ctx,
        COLOCATED_TITLE,
        notes,
        ["\n".join(lines)],
        fmt=NAME,
        shebang="\n".join(directives),
        preflight=preflight.script_block(ctx, NAME, steps=True),
        ports=False,
        rented=(billed - p.drafter.count, p.drafter.count),
    )
    files = {"run.yaml": yaml_text, **specforge.draft_files(ctx)}
    return LaunchScript(NAME, text, files, tuple(notes), layout)


# --- offline: the capture steps, then the trainer steps ------------------------------------

OFFLINE_TITLE = "Slurm (sbatch) running SpecForge offline (prepare_hidden_states.py, then train)"
# Loader processes besides each rank: prepare_hidden_states.py's --num-workers default (4,
# SpecForge a6b6b023) per capture rank; SpecForge's DFlash trainer's default dataloader
# workers (8, default_dataloader_num_workers in specforge/algorithms/dflash/providers.py).
CAPTURE_LOADERS = 4
TRAINER_LOADERS = 8


def offline_host_needs(ctx: Context) -> tuple[int, int, str]:
    """(--mem in GiB, --cpus-per-task, the reasoning) of the busiest node of the offline
    run: each capture replica loads the target weights through host memory, each trainer
    rank holds two batches of max-length samples read from disk; one CPU per process."""
    p, layout = ctx.plan, ctx.layout
    weights = ctx.memory.weights_gib * p.target.tp
    batch = 2 * p.drafter.batch_size * sample_feature_bytes(ctx.resolved) / GIB
    best = (0.0, 0)
    for node in range(layout.nodes):
        servers, ranks = len(layout.targets_on(node)), len(layout.drafters.get(node, ()))
        mem = servers * weights + ranks * batch
        cpus = servers * p.target.tp * (1 + CAPTURE_LOADERS) + ranks * (1 + TRAINER_LOADERS)
        best = max(best, (mem, cpus))
    mem_gib = math.ceil(best[0])
    return (
        mem_gib,
        best[1],
        (
            f"--mem={mem_gib}G: per capture replica the target weights it loads through "
            f"host memory {weights:.1f} GiB; per trainer rank two batches read from disk "
            f"{batch:.1f} GiB; --cpus-per-task={best[1]}: one per process (each capture "
            f"rank and its {CAPTURE_LOADERS} loaders, each trainer rank and its "
            f"{TRAINER_LOADERS} loaders); the processes' own runtime comes on top: raise "
            f"--mem by your cluster's usual allowance per process"
        ),
    )


def render_offline(ctx: Context, template: str | None = None) -> LaunchScript:
    p, layout = ctx.plan, ctx.layout
    require_same_gpu_type(p, "an sbatch script requests one GPU type for every node")
    specforge.require_offline_family(ctx, NAME)
    require_derived_layers(ctx, "SpecForge")
    storage = offline_storage(
        ctx,
        "specforge",
        ("bf16",),
        "SpecForge's prepare_hidden_states.py (a6b6b023) stores the target's own dtype",
        NAME,
    )
    job = job_name(p)
    c_nodes, _ = specforge.capture_nodes(ctx)
    d_nodes, _ = specforge.trainer_nodes(ctx)
    gpus_per_node, whole_nodes, billed = allocation(ctx)
    notes = [
        storage,
        "run sbatch from the top folder of a SpecForge checkout (it has "
        "scripts/prepare_hidden_states.py) on a filesystem all nodes share, as output_dir",
        "host names come from the allocation (scontrol show hostnames); node i of the "
        "plan is the i-th host",
        f"billed: the allocation, {layout.nodes} node(s) x {gpus_per_node} GPU(s) = "
        f"{billed} GPU(s){' (whole nodes, --exclusive)' if whole_nodes else ''} for both "
        f"phases (storage.billing = whole-run prices this); the plan uses "
        f"{p.target.count + p.drafter.count}",
        *ctx.memory.reasoning(),
    ]
    directives = sbatch_directives(
        job, layout.nodes, gpus_per_node, None if whole_nodes else offline_host_needs(ctx), notes
    )

    def step(node: int) -> str:
        return (
            f"srun --nodes=1 --ntasks=1 --overlap --gpus-per-node={layout.gpus_used_on(node)} "
            f'-w "${{NODES[{node}]}}" env'
        )

    yaml_text = to_yaml(specforge.offline_config(ctx, head="localhost"))
    json_text = to_json(specforge.capture_config(ctx))
    lines = [
        "# The SpecForge CLI rejects a partial torch.distributed environment.",
        "unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT",
        'mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
        f'[ "${{#NODES[@]}}" -ge {layout.nodes} ] || '
        f'{{ echo "need {layout.nodes} nodes" >&2; exit 2; }}',
        f'CAPTURE_HEAD="${{NODES[{c_nodes[0]}]}}"',
        f'HEAD="${{NODES[{d_nodes[0]}]}}"',
        "",
        heredoc(specforge.CAPTURE_CONFIG, json_text),
        "",
        heredoc("run.yaml", yaml_text),
        "overrides=()",
    ]
    if len(d_nodes) > 1:
        lines.append('overrides+=("deployment.trainer.master_addr=$HEAD")')
    lines += ["", "# capture: one step per target node, all finished before training", "steps=()"]
    for node in c_nodes:
        words = specforge.capture_command(ctx, node, specforge.CAPTURE_CONFIG)
        if "--master_addr" in words:
            # The allocation's host, expanded by the shell.
            at = words.index("--master_addr")
            words[at + 1] = "${CAPTURE_HEAD}"
        text = cmd(*words, lead=words.index("scripts/prepare_hidden_states.py") + 1)
        text = text.replace(q("${CAPTURE_HEAD}"), '"$CAPTURE_HEAD"')
        lines += [
            f"{step(node)} {env(CUDA_VISIBLE_DEVICES=devices(layout.target_devices_on(node)))} "
            f"{text} > {q(f'capture-{node}.log')} 2>&1 &",
            "steps+=($!)",
        ]
    lines += [
        'for pid in "${steps[@]}"; do wait "$pid"; done',
        "",
        "# training: one step per drafter node, on the drafter GPUs",
        resume_line(ctx),
        "steps=()",
    ]
    for rank, node in enumerate(d_nodes):
        train: list[object] = ["specforge", "train", "-c", "run.yaml"]
        if len(d_nodes) > 1:
            train += ["--node-rank", rank]
        lines += [
            f"{step(node)} "
            f"{env(NODE_RANK=rank, CUDA_VISIBLE_DEVICES=devices(layout.drafters[node]))} "
            f'{cmd(*train)} "${{overrides[@]}}" {RESUME_WORDS} > {q(f"train-{rank}.log")} 2>&1 &',
            "steps+=($!)",
        ]
    lines.append('for pid in "${steps[@]}"; do wait "$pid"; done')
    text = script(
        ctx,
        OFFLINE_TITLE,
        notes,
        ["\n".join(lines)],
        fmt=NAME,
        shebang="\n".join(directives),
        preflight=preflight.script_block(ctx, NAME, steps=True),
        ports=False,
        rented=rented(ctx),
    )
    return LaunchScript(
        NAME,
        text,
        {"run.yaml": yaml_text, specforge.CAPTURE_CONFIG: json_text},
        tuple(notes),
        layout,
    )
