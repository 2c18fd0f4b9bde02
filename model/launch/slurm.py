"""An sbatch script running SpecForge unified: one srun step per capture server, the
Mooncake master, the producer, and one trainer step per drafter node, each step on its own
host and GPUs. SpecForge ships no sbatch files; the steps follow its two-node example."""

from __future__ import annotations

import re

from ..resolve import require_same_gpu_type
from . import specforge
from .common import (
    MOONCAKE_METADATA_PORT,
    MOONCAKE_RPC_PORT,
    Context,
    LaunchScript,
    devices,
    script,
)
from .escape import cmd, env, heredoc, q, to_yaml

NAME = "slurm"
TITLE = "Slurm (sbatch) running SpecForge unified"


def render(ctx: Context, template: str | None = None) -> LaunchScript:
    p, layout = ctx.plan, ctx.layout
    require_same_gpu_type(p, "an sbatch script requests one GPU type for every node")
    job = re.sub(r"[^A-Za-z0-9._-]", "_", p.launch.run_id)[:64] or "dflash"
    d_nodes, _ = specforge.trainer_nodes(ctx)
    # Host names are known only inside the allocation: the YAML holds placeholders that
    # the steps override with the allocated hosts.
    doc = specforge.config(ctx, managed_local=False, server_urls=[], head="localhost")
    gpus_per_node = max(layout.gpus_used_on(n) for n in range(layout.nodes))
    whole_nodes = gpus_per_node == layout.gpus_per_node
    billed = layout.nodes * (layout.gpus_per_node if whole_nodes else gpus_per_node)
    notes = ["host names come from the allocation (scontrol show hostnames); node i of the "
             "plan is the i-th host", "output_dir must be on a filesystem all nodes share",
             f"billed: the allocation, {layout.nodes} node(s) x {gpus_per_node} GPU(s) = "
             f"{billed} GPU(s){' (whole nodes, --exclusive)' if whole_nodes else ''}; the "
             f"plan uses {p.target.count + p.drafter.count}",
             *specforge.memory_notes(ctx)]
    directives = ["#!/bin/bash", f"#SBATCH --job-name={job}", f"#SBATCH --nodes={layout.nodes}",
                  "#SBATCH --ntasks-per-node=1", f"#SBATCH --gpus-per-node={gpus_per_node}"]
    if whole_nodes:
        directives.append("#SBATCH --exclusive")
    directives.append(f"#SBATCH --output={job}-%j.log")
    head = f"${{NODES[{d_nodes[0]}]}}"

    def step(node: int, gpus: bool) -> str:
        # GPU steps take the node's whole share of the allocation (so device numbers are the
        # plan's) and pick their devices with CUDA_VISIBLE_DEVICES.
        gres = f" --gpus-per-node={layout.gpus_used_on(node)}" if gpus else ""
        return f'srun --nodes=1 --ntasks=1 --overlap{gres} -w "${{NODES[{node}]}}"'

    def local(node: int) -> str:
        return f'MOONCAKE_LOCAL_HOSTNAME="${{NODES[{node}]}}"'

    lines = [
        "# The SpecForge CLI rejects a partial torch.distributed environment.",
        "unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT",
        'mapfile -t NODES < <(scontrol show hostnames "$SLURM_JOB_NODELIST")',
        f'[ "${{#NODES[@]}}" -ge {layout.nodes} ] || '
        f'{{ echo "need {layout.nodes} nodes" >&2; exit 2; }}',
        f'HEAD="{head}"',
        f'export MOONCAKE_MASTER_SERVER_ADDR="$HEAD:{MOONCAKE_RPC_PORT}"',
        f'export MOONCAKE_METADATA_SERVER="http://$HEAD:{MOONCAKE_METADATA_PORT}/metadata"',
        "export MOONCAKE_PROTOCOL=tcp", "",
        heredoc("run.yaml", yaml_text := to_yaml(doc)), "", "urls=()"]
    lines += [f'urls+=("http://${{NODES[{r.node}]}}:{r.port}")' for r in layout.replicas]
    lines += ['server_urls="[$(printf \'"%s",\' "${urls[@]}" | sed \'s/,$//\')]"',
              'overrides=("deployment.disaggregated.server_urls=$server_urls"',
              '           "deployment.disaggregated.mooncake_master_server_addr='
              '$MOONCAKE_MASTER_SERVER_ADDR"',
              '           "deployment.disaggregated.mooncake_metadata_server='
              '$MOONCAKE_METADATA_SERVER")']
    if len(d_nodes) > 1:
        lines.append('overrides+=("deployment.trainer.master_addr=$HEAD")')
    lines += ["", "# Mooncake master (CPU) on the first trainer node",
              f"{step(d_nodes[0], False)} env CUDA_VISIBLE_DEVICES= {local(d_nodes[0])} "
              f"{cmd(*specforge.mooncake_master(), lead=2)} > mooncake.log 2>&1 &",
              f"until curl -s -o /dev/null \"$MOONCAKE_METADATA_SERVER?key="
              f"{specforge.HEALTH_KEY}\"; do sleep 2; done",
              "", "# capture servers: one step per target replica"]
    for r in layout.replicas:
        lines.append(f"{step(r.node, True)} env {local(r.node)} "
                     f"{env(**specforge.server_env(ctx, r))} "
                     f"{cmd(*specforge.capture_server(ctx, r), lead=3)} "
                     f"> {q(f'capture-{r.node}-{r.port}.log')} 2>&1 &")
    lines += ['for url in "${urls[@]}"; do until curl -sf "$url/health" >/dev/null; do sleep 10; '
              'done; done', "", "# producer (CPU) on the first trainer node",
              f"{step(d_nodes[0], False)} env CUDA_VISIBLE_DEVICES= {local(d_nodes[0])} "
              f'{cmd("specforge", "train", "-c", "run.yaml", "--role", "producer")} '
              f'"${{overrides[@]}}" > producer.log 2>&1 &', "",
              "# trainers: one step per drafter node, on the drafter GPUs",
              "consumers=()"]
    for rank, node in enumerate(d_nodes):
        lines.append(f"{step(node, True)} env {local(node)} "
                     f"{env(CUDA_VISIBLE_DEVICES=devices(layout.drafters[node]))} "
                     + cmd("specforge", "train", "-c", "run.yaml", "--role", "consumer",
                           "--node-rank", rank) + " "
                     f'"${{overrides[@]}}" > {q(f"consumer-{rank}.log")} 2>&1 &')
        lines.append("consumers+=($!)")
    lines += ['wait "${consumers[@]}"',
              "# The training is done: stop the servers, the master and the producer.",
              "kill $(jobs -p) 2>/dev/null || true"]
    text = script(ctx, TITLE, notes, ["\n".join(lines)], shebang="\n".join(directives))
    return LaunchScript(NAME, text, {"run.yaml": yaml_text}, tuple(notes), layout)
