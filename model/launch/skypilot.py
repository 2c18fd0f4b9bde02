"""A SkyPilot task YAML running SpecForge unified: one task whose nodes each run their part
of the same shell (SKYPILOT_NODE_RANK picks it, SKYPILOT_NODE_IPS gives every node's
address). Checked against skypilot 0.14.1's task schema (sky/utils/schemas.py)."""

from __future__ import annotations

import math
import re
from typing import Any

from ..core.projection import project
from ..core.resolve import require_same_gpu_type
from . import specforge
from .common import (
    Context,
    LaunchScript,
    header,
    run_id,
    specforge_node_shell,
    specforge_stack_setup,
    with_transport,
)
from .escape import cmd, heredoc, to_yaml, yaml_comments
from .paths import launch_transport

NAME = "skypilot"
TITLE = "SkyPilot task running SpecForge unified (sky launch / sky jobs launch)"

# SkyPilot's accelerator names for the built-in GPUs (`sky show-gpus`); another GPU goes
# by its catalog name without spaces, which the header says to check.
ACCELERATORS = {
    "rtx-pro-6000": "RTXPRO6000",
    "b200": "B200",
    "b300": "B300",
    "gb200": "GB200",
    "h100-sxm": "H100",
    "h100-pcie": "H100",
    "h200": "H200",
    "a100-80g": "A100-80GB",
    "l40s": "L40S",
    "rtx-5090": "RTX5090",
    "rtx-4090": "RTX4090",
    "mi300x": "MI300X",
    "mi325x": "MI325X",
    "mi355x": "MI355X",
}
# SkyPilot's optimizer takes a task's duration only from Python (Task.set_time_estimator);
# a task without one counts one hour.
OPTIMIZER_DEFAULT_S = 3600


def accelerator(ctx: Context) -> tuple[str, str | None]:
    """SkyPilot's name of the plan's GPU, and a note when the planner has no mapping."""
    gpu = ctx.resolved.target_gpu
    if gpu.key in ACCELERATORS:
        return ACCELERATORS[gpu.key], None
    name = re.sub(r"\s+", "", gpu.name) or gpu.key
    return name, (
        f"accelerator {name!r} is the GPU's catalog name ({gpu.key}): check that SkyPilot "
        f"knows it (sky show-gpus)"
    )


def task_name(ctx: Context) -> str:
    """The run id in the characters SkyPilot takes in any name (job groups, clusters)."""
    return re.sub(r"[^A-Za-z0-9-]+", "-", run_id(ctx.plan)).strip("-")[:63] or "dflash"


def duration_s(ctx: Context) -> int | None:
    """The projected duration of the launched run, in seconds (None: it does not fit)."""
    transport = launch_transport(ctx.plan, NAME) or ctx.plan.workload.transport
    projection = project(with_transport(ctx.plan, transport), ctx.catalog)
    return None if projection.days is None else math.ceil(projection.days * 86400)


def render(ctx: Context, template: str | None = None) -> LaunchScript:
    p, layout = ctx.plan, ctx.layout
    require_same_gpu_type(
        p,
        "a SkyPilot task requests one GPU type for every node (SkyPilot's job groups, one "
        "task per GPU type, are not written yet)",
    )
    gpus_per_node = max(layout.gpus_used_on(n) for n in range(layout.nodes))
    name, unknown = accelerator(ctx)
    billed = layout.nodes * gpus_per_node
    notes = [
        f"sky launch -c {task_name(ctx)} THIS.yaml (or sky jobs launch THIS.yaml); "
        f"{layout.nodes} node(s) x {name}:{gpus_per_node} = {billed} GPU(s), the plan uses "
        f"{p.target.count + p.drafter.count}",
        "no ports are opened to the internet: the nodes reach each other on the cluster "
        "network, at the addresses SkyPilot gives them (SKYPILOT_NODE_IPS)",
    ]
    seconds = duration_s(ctx)
    if seconds is not None:
        notes.append(
            f"projected duration {seconds:,} s ({seconds / 86400:,.1f} days); SkyPilot's "
            f"optimizer counts {OPTIMIZER_DEFAULT_S} s unless told, which only its Python "
            f"API does (its task YAML has no field for it): "
            f"task.set_time_estimator(lambda resources: {seconds})"
        )
    if unknown:
        notes.append(unknown)
    files: dict[str, str] = {}
    if layout.nodes == 1:
        doc_yaml = to_yaml(specforge.config(ctx, managed_local=True, server_urls=[], head=""))
        notes += [
            "managed-local: SpecForge starts the Mooncake master, the capture servers and "
            "the trainer; the run ends with the trainer",
            *specforge.memory_notes(ctx),
        ]
        run = "\n".join(
            [
                "set -euo pipefail",
                "# The SpecForge CLI rejects a partial torch.distributed environment, and"
                " it\n# reads NODE_RANK as the trainer's node rank: one node is 0.",
                "unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT "
                "NODE_RANK",
                heredoc("run.yaml", doc_yaml),
                cmd("specforge", "train", "-c", "run.yaml"),
            ]
        )
        files["run.yaml"] = doc_yaml
    else:
        d_nodes, _ = specforge.trainer_nodes(ctx)
        notes += [
            f"node {d_nodes[0]} runs the Mooncake master, the producer and trainer rank 0; "
            f"a node running only capture servers stops them once that master is gone",
            "output_dir must be on storage every node shares (a file_mounts bucket or a volume)",
            *specforge.memory_notes(ctx),
        ]
        shell, doc_yaml = specforge_node_shell(
            ctx, 'printf "%s\\n" "$SKYPILOT_NODE_IPS"', "${SKYPILOT_NODE_RANK:-}"
        )
        run = "set -euo pipefail\n" + shell
        files["run.yaml"] = doc_yaml
    task: dict[str, Any] = {
        "name": task_name(ctx),
        "num_nodes": layout.nodes,
        "resources": {"accelerators": accelerator_request(name, gpus_per_node)},
        "setup": specforge_stack_setup(),
        "run": run,
    }
    text = yaml_comments(header(ctx, TITLE, notes, ports=True, fmt=NAME))
    text += "\n" + to_yaml(task, blocks=True)
    return LaunchScript(NAME, text, files, tuple(notes), layout)


def accelerator_request(name: str, count: int) -> str | dict[str, int]:
    """`NAME:count`, or {NAME: count} for a name the string form cannot hold."""
    if re.fullmatch(r"[A-Za-z0-9._-]+", name):
        return f"{name}:{count}"
    return {name: count}
