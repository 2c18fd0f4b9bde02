"""The user's own command with {placeholders}, from launch.template in the plan or
`template` in the user config's launch.toml."""

from __future__ import annotations

import string

from ..basics import recipe
from ..basics.errors import PlanError
from . import preflight
from .common import Context, LaunchScript, devices, node_case, output_dir, run_id, script
from .escape import TemplateShell

NAME = "template"

TEMPLATE_PLACEHOLDERS = (
    "target_devices",
    "drafter_devices",
    "target_model",
    "target_gpu",
    "drafter_gpu",
    "target_count",
    "drafter_count",
    "tp",
    "replicas",
    "epochs",
    "num_anchors",
    "block_size",
    "draft_layers",
    "max_length",
    "batch_size",
    "samples",
    "layer_ids",
    "nnodes",
    "node_rank",
    "host",
    "master_addr",
    "master_port",
    "run_id",
    "output_dir",
    "train_data_path",
    "chat_template",
    "learning_rate",
)
PER_NODE = ("target_devices", "drafter_devices", "node_rank", "host")


def template_values(ctx: Context, node: int) -> dict[str, object]:
    p, w, layout = ctx.plan, ctx.plan.workload, ctx.layout
    values: dict[str, object] = {
        "target_devices": devices(layout.target_devices_on(node)),
        "drafter_devices": devices(layout.drafters.get(node, ())),
        "target_model": ctx.path,
        "target_gpu": p.target.gpu,
        "drafter_gpu": p.drafter.gpu,
        "target_count": p.target.count,
        "drafter_count": p.drafter.count,
        "tp": p.target.tp,
        "replicas": len(layout.replicas),
        "epochs": w.epochs,
        "num_anchors": w.num_anchors,
        "block_size": ctx.block,
        "draft_layers": w.draft_layers,
        "max_length": w.max_length,
        "batch_size": p.drafter.batch_size,
        "samples": w.samples,
        "layer_ids": ",".join(map(str, ctx.layer_ids)),
        # Node ranks count the plan's nodes, so rank 0's host is the rendezvous address
        # (torchrun --nnodes {nnodes} --node_rank {node_rank} --master_addr {master_addr}).
        "nnodes": layout.nodes,
        "node_rank": node,
        "host": layout.hosts[node],
        "master_addr": layout.hosts[0],
        "master_port": p.launch.master_port,
        "run_id": run_id(p),
        "output_dir": output_dir(p),
        "train_data_path": p.launch.train_data_path,
        "chat_template": ctx.chat_template,
        "learning_rate": recipe.LEARNING_RATE,
    }
    assert tuple(values) == TEMPLATE_PLACEHOLDERS
    return values


def render_template(template: str, values: dict[str, object], where: str) -> str:
    """Fill {name} placeholders with shell-quoted values; {{ and }} are literal braces. A
    value that needs quoting is refused where the template's own quotes would undo it."""
    out, shell = [], TemplateShell()
    try:
        parsed = list(string.Formatter().parse(template))
    except ValueError as err:
        raise PlanError.at(
            where,
            f"bad template: {err} (use {{{{ and }}}} for literal braces)",
            key="launch.template",
        ) from None
    for literal, name, spec, conversion in parsed:
        out.append(literal)
        shell.read(literal)
        if name is None:
            continue
        if name not in values:
            raise PlanError.at(
                where,
                f"unknown placeholder {{{name}}}; known: "
                f"{', '.join('{' + k + '}' for k in TEMPLATE_PLACEHOLDERS)}",
                key="launch.template",
            )
        if spec or conversion:
            raise PlanError.at(
                where,
                f"placeholder {{{name}}} takes no format or conversion",
                key="launch.template",
            )
        out.append(shell.fill(values[name], name, where))
    return "".join(out)


def render(ctx: Context, template: str | None = None) -> LaunchScript:
    plan = ctx.plan
    where = "launch.template" if plan.launch.template else "launch.toml template"
    text = plan.launch.template or template
    if not text:
        raise PlanError.said(
            "launch.template is not set: put a command with {placeholders} in the "
            "plan's [launch] table or in the user config's launch.toml",
            "launch.template",
        )
    layout = ctx.layout
    per_node = any("{" + k + "}" in text for k in PER_NODE)
    if layout.nodes == 1 or not per_node:
        body = render_template(text, template_values(ctx, 0), where)
    else:
        body = node_case(
            {
                n: [render_template(text, template_values(ctx, n), where)]
                for n in range(layout.nodes)
            },
            layout.nodes,
        )
    text = script(
        ctx,
        "custom template",
        [],
        [body],
        fmt=NAME,
        ports=False,
        preflight=preflight.script_block(ctx, NAME),
    )
    return LaunchScript(NAME, text, {}, (), layout)
