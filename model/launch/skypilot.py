"""A SkyPilot task YAML running SpecForge unified: one task whose nodes each run their part
of the same shell (SKYPILOT_NODE_RANK picks it, SKYPILOT_NODE_IPS gives every node's
address), or, when targets and drafters use different GPU types, a job group of two tasks
(`sky jobs launch`), one per GPU type. Checked against skypilot 0.14.1's task schema
(sky/utils/schemas.py) and job-group rules (sky/utils/dag_utils.py)."""

from __future__ import annotations

import math
import re
from typing import Any

from ..core.projection import project
from ..inputs.hardware import Gpu
from . import preflight, specforge
from .checkpointing import WARM_WORDS, warm_lines
from .common import (
    Context,
    LaunchScript,
    header,
    name_label,
    run_id,
    specforge_stack_setup,
    with_path,
)
from .escape import cmd, env, heredoc, q, to_yaml, to_yaml_documents, yaml_comments
from .paths import launch_path, own_path

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
# The job group's tasks: the trainers are its primary task, so the capture servers are
# stopped when training ends.
TARGETS_TASK = "targets"
TRAINERS_TASK = "trainers"


def accelerator(gpu: Gpu) -> tuple[str, str | None]:
    """SkyPilot's name of a GPU, and a note when the planner has no mapping."""
    if gpu.key in ACCELERATORS:
        return ACCELERATORS[gpu.key], None
    name = re.sub(r"\s+", "", gpu.name) or gpu.key
    return name, (
        f"accelerator {name!r} is the GPU's catalog name ({gpu.key}): check that SkyPilot "
        f"knows it (sky show-gpus)"
    )


def accelerator_request(name: str, count: int) -> str | dict[str, int]:
    """`NAME:count`, or {NAME: count} for a name the string form cannot hold."""
    if re.fullmatch(r"[A-Za-z0-9._-]+", name):
        return f"{name}:{count}"
    return {name: count}


# SkyPilot's names (skypilot 0.14.1): a task's (sky/task.py _VALID_NAME_REGEX: letters and
# digits, no run of three separators, alphanumeric at both ends), a cluster's
# (sky/skylet/constants.py CLUSTER_NAME_VALID_REGEX: a letter first) and a job group's
# (sky/utils/dag_utils.py: letters, digits, `-` and `_`); 63 characters, a DNS label's.
NAME_CHARS = 63


def task_name(ctx: Context) -> str:
    """The run id as a name SkyPilot takes for a task, a cluster and a job group."""
    return name_label(run_id(ctx.plan), NAME_CHARS)


def duration_s(ctx: Context) -> int | None:
    """The projected duration of the launched run, in seconds (None: it does not fit)."""
    path = launch_path(ctx.plan, NAME) or own_path(ctx.plan)
    projection = project(with_path(ctx.plan, path), ctx.catalog)
    return None if projection.days is None else math.ceil(projection.days * 86400)


def group_addresses(group: str, tasks: list[tuple[str, int]]) -> str:
    """Shell printing every node's IP, node 0 first, in a job group: SkyPilot names node i
    of task T `T-i.GROUP` on every node of the group (sky/jobs/job_group_networking.py),
    once the group's network is set up; the name is resolved here, so that Mooncake gets
    an address, not a name."""
    names = " ".join(q(f"{task}-{i}.{group}") for task, n in tasks for i in range(n))
    return (
        f"for host in {names}; do "
        'until getent ahostsv4 "$host" | awk \'NR == 1 {print $1; found = 1} '
        "END {exit !found}'; do sleep 5; done; done"
    )


def render(ctx: Context, template: str | None = None) -> LaunchScript:
    p, layout, resolved = ctx.plan, ctx.layout, ctx.resolved
    group = task_name(ctx)
    seconds = duration_s(ctx)
    notes = [
        "no ports are opened to the internet: the nodes reach each other on the cluster "
        "network, at the addresses SkyPilot gives them"
    ]
    if seconds is not None:
        notes.append(
            f"projected duration {seconds:,} s ({seconds / 86400:,.1f} days); SkyPilot's "
            f"optimizer counts {OPTIMIZER_DEFAULT_S} s unless told, which only its Python "
            f"API does (its task YAML has no field for it): "
            f"task.set_time_estimator(lambda resources: {seconds})"
        )
    names = {}
    for gpu in (resolved.target_gpu, resolved.drafter_gpu):
        names[gpu.key], unknown = accelerator(gpu)
        if unknown and unknown not in notes:
            notes.append(unknown)
    used = p.target.count + p.drafter.count
    setup = specforge_stack_setup(ctx.line)
    if layout.nodes == 1:
        doc = specforge.config(ctx, managed_local=True, server_urls=[], head="")
        doc_yaml = to_yaml(doc)
        per_node = layout.gpus_used_on(0)
        notes[:0] = [
            f"sky launch -c {group} THIS.yaml (or sky jobs launch THIS.yaml); 1 node x "
            f"{names[resolved.target_gpu.key]}:{per_node} = {per_node} GPU(s), the plan "
            f"uses {used}",
        ]
        notes += [
            "managed-local: SpecForge starts the Mooncake master, the capture servers and "
            "the trainer; the run ends with the trainer",
            *specforge.memory_notes(ctx),
        ]
        run = "\n".join(
            [
                "set -euo pipefail",
                preflight.block(ctx, NAME, "0"),
                "# The SpecForge CLI rejects a partial torch.distributed environment, and"
                " it\n# reads NODE_RANK as the trainer's node rank: one node is 0.",
                "unset RANK WORLD_SIZE LOCAL_RANK LOCAL_WORLD_SIZE MASTER_ADDR MASTER_PORT "
                "NODE_RANK",
                heredoc("run.yaml", doc_yaml),
                *warm_lines(ctx, doc),
                f"{env(**specforge.receive_env(ctx))} "
                + cmd("specforge", "train", "-c", "run.yaml")
                + f" {WARM_WORDS}",
            ]
        )
        docs = [task(group, 1, names[resolved.target_gpu.key], per_node, setup, run)]
        return finish(ctx, notes, docs, doc_yaml, (per_node - p.drafter.count, p.drafter.count))
    d_nodes, _ = specforge.trainer_nodes(ctx)
    notes += [
        f"node {d_nodes[0]} runs the Mooncake master, the producer and trainer rank 0; "
        f"a node running only capture servers stops them once that master is gone",
        "output_dir must be on storage every node shares (a file_mounts bucket or a volume)",
        *specforge.memory_notes(ctx),
    ]
    if resolved.same_gpu_type:
        per_node = max(layout.gpus_used_on(n) for n in range(layout.nodes))
        shell, doc_yaml = specforge.node_shell(
            ctx, 'printf "%s\\n" "$SKYPILOT_NODE_IPS"', "${SKYPILOT_NODE_RANK:-}"
        )
        name = names[resolved.target_gpu.key]
        notes.insert(
            0,
            f"sky launch -c {group} THIS.yaml (or sky jobs launch THIS.yaml); "
            f"{layout.nodes} nodes x {name}:{per_node} = {layout.nodes * per_node} GPU(s), "
            f"the plan uses {used}",
        )
        docs = [task(group, layout.nodes, name, per_node, setup, "set -euo pipefail\n" + shell)]
        rented = (layout.nodes * per_node - p.drafter.count, p.drafter.count)
        return finish(ctx, notes, docs, doc_yaml, rented)
    # Two GPU types: a job group, one task per type (targets on their nodes, then the
    # trainers on theirs, as the layout numbers the nodes).
    t_nodes = len(layout.target_nodes)
    t_per = max(layout.gpus_used_on(n) for n in layout.target_nodes)
    d_per = max(layout.gpus_used_on(n) for n in d_nodes)
    addresses = group_addresses(group, [(TARGETS_TASK, t_nodes), (TRAINERS_TASK, len(d_nodes))])
    t_name, d_name = names[resolved.target_gpu.key], names[resolved.drafter_gpu.key]
    notes.insert(
        0,
        f"sky jobs launch THIS.yaml: a job group of two tasks, {TARGETS_TASK} on {t_nodes} "
        f"node(s) x {t_name}:{t_per} and {TRAINERS_TASK} on {len(d_nodes)} node(s) x "
        f"{d_name}:{d_per} = {t_nodes * t_per + len(d_nodes) * d_per} GPU(s), the plan uses "
        f"{used}; the {TARGETS_TASK} stop when the {TRAINERS_TASK} (the primary task) end",
    )
    target_shell, doc_yaml = specforge.node_shell(ctx, addresses, "${SKYPILOT_NODE_RANK:-}")
    trainer_shell, _ = specforge.node_shell(ctx, addresses, f"$(({t_nodes} + SKYPILOT_NODE_RANK))")
    docs = [
        {"name": group, "execution": "parallel", "primary_tasks": [TRAINERS_TASK]},
        task(TARGETS_TASK, t_nodes, t_name, t_per, setup, "set -euo pipefail\n" + target_shell),
        task(
            TRAINERS_TASK,
            len(d_nodes),
            d_name,
            d_per,
            setup,
            "set -euo pipefail\n" + trainer_shell,
        ),
    ]
    return finish(ctx, notes, docs, doc_yaml, (t_nodes * t_per, len(d_nodes) * d_per))


def task(name: str, nodes: int, gpu: str, per_node: int, setup: str, run: str) -> dict[str, Any]:
    return {
        "name": name,
        "num_nodes": nodes,
        "resources": {"accelerators": accelerator_request(gpu, per_node)},
        "setup": setup,
        "run": run,
    }


def finish(
    ctx: Context,
    notes: list[str],
    docs: list[dict[str, Any]],
    doc_yaml: str,
    rented: tuple[int, int],
) -> LaunchScript:
    """`rented`: the GPUs the tasks ask for per role (targets, drafters), which the header's
    cost counts (one GPU type: the idle ones with the targets, as the projection does)."""
    text = yaml_comments(header(ctx, TITLE, notes, ports=True, fmt=NAME, rented=rented))
    text += "\n" + to_yaml_documents(docs, blocks=True)
    return LaunchScript(NAME, text, {"run.yaml": doc_yaml}, tuple(notes), ctx.layout)
