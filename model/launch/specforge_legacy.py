"""SpecForge's legacy colocated trainer, scripts/train_dflash.py: every rank holds a target
shard and a drafter replica. The script was removed upstream in d5883d5b, and no released
specforge carries the modules it imports (the 0.2.0 wheel is the unified runtime), so the
launch pins the last commit that has it, 40d8feff, and runs from a checkout of it."""

from __future__ import annotations

import math

from ..basics import recipe
from ..basics.errors import PlanError
from ..basics.units import BF16_BYTES, BYTES_PER_GIB
from ..core.resolve import require_same_gpu_type
from . import preflight
from .checkpointing import legacy_args
from .common import Context, LaunchScript, node_case, output_dir, require_derived_layers, script
from .escape import cmd
from .versions import upstream_line

NAME = "specforge-legacy"
TITLE = "SpecForge legacy (scripts/train_dflash.py, colocated)"
# The last sgl-project/SpecForge commit with scripts/train_dflash.py (versions.py's
# `specforge_legacy`).
PINNED_COMMIT = upstream_line().pin("specforge_legacy").version
CHECKOUT = (
    "git clone https://github.com/sgl-project/SpecForge && cd SpecForge && "
    f"git checkout {PINNED_COMMIT[:8]} && pip install -e ."
)


def target_share(ctx: Context) -> float:
    """The target's share of a colocated GPU: its weight shard and the KV of one batch of
    max-length sequences, rounded up to 0.05; the drafter's training takes the rest."""
    p, model = ctx.plan, ctx.model
    tokens = p.drafter.batch_size * p.workload.max_length
    need = (
        BF16_BYTES * model.total_params + BF16_BYTES * 2 * model.kv_dim * model.n_layers * tokens
    ) / p.target.tp
    share = need / BYTES_PER_GIB / ctx.resolved.target_gpu.memory_gb
    return min(0.95, max(0.1, math.ceil(share * 20 - 1e-9) / 20))


def render(ctx: Context, template: str | None = None) -> LaunchScript:
    p, w, layout = ctx.plan, ctx.plan.workload, ctx.layout
    require_same_gpu_type(p, "specforge-legacy runs target and drafter on the same GPUs")
    require_derived_layers(ctx, "specforge-legacy")
    total = p.target.count + p.drafter.count
    if total % p.target.tp:
        raise PlanError.said(
            f"specforge-legacy shards the target over tp {p.target.tp} inside "
            f"every group of ranks: {total} GPUs is not a multiple of it",
            "target.tp",
        )
    per_node = layout.gpus_per_node
    nodes = math.ceil(total / per_node)
    share = target_share(ctx)
    notes = [
        f"pinned to sgl-project/SpecForge {PINNED_COMMIT[:8]}, the last commit with "
        f"scripts/train_dflash.py (removed in d5883d5b; no released specforge has the "
        f"modules it imports): run this script from that checkout, with its specforge "
        f"installed, on every node: {CHECKOUT}",
        f"colocated: every one of the {total} ranks holds a target shard (tp "
        f"{p.target.tp}) and a drafter replica, so the target/drafter split does not "
        f"apply and the projection's split figures do not describe this run",
        f"--sglang-mem-fraction-static {share:.2f}: the target's weight shard and the KV "
        f"of {p.drafter.batch_size} max-length sequence(s); the drafter trains in the rest",
    ]
    args: list[object] = [
        "scripts/train_dflash.py",
        "--target-model-path",
        ctx.path,
        "--target-model-backend",
        "sglang",
        "--block-size",
        ctx.block,
        "--num-draft-layers",
        w.draft_layers,
        "--num-anchors",
        w.num_anchors,
        "--train-data-path",
        p.launch.train_data_path,
        "--chat-template",
        ctx.chat_template,
        "--num-epochs",
        w.epochs,
        "--batch-size",
        p.drafter.batch_size,
        "--learning-rate",
        recipe.LEARNING_RATE,
        "--max-length",
        w.max_length,
        "--warmup-ratio",
        recipe.WARMUP_RATIO,
        "--max-grad-norm",
        recipe.MAX_GRAD_NORM,
        "--output-dir",
        output_dir(p),
        *legacy_args(ctx, NAME),
        "--tp-size",
        p.target.tp,
        "--dist-timeout",
        recipe.DIST_TIMEOUT_MIN,
        "--sglang-mem-fraction-static",
        share,
        "--trust-remote-code",
    ]
    if ctx.block == 16:
        args += ["--loss-decay-gamma", recipe.LOSS_DECAY_GAMMA_B16]
    check = (
        '[ -f scripts/train_dflash.py ] || { echo "scripts/train_dflash.py not found: '
        f'run this from a SpecForge checkout at {PINNED_COMMIT[:8]} ({CHECKOUT})" >&2; '
        "exit 2; }"
    )
    if nodes == 1:
        body = cmd("torchrun", "--standalone", "--nproc_per_node", total, *args, lead=5)
    else:
        if total % per_node:
            raise PlanError.said(
                f"specforge-legacy across nodes needs whole nodes: {total} GPUs "
                f"is not a multiple of {per_node} per node",
                "drafter.count",
            )
        hosts = layout.hosts
        sections = {
            n: [
                cmd(
                    "torchrun",
                    "--nnodes",
                    nodes,
                    "--node_rank",
                    n,
                    "--master_addr",
                    hosts[0],
                    "--master_port",
                    p.launch.master_port,
                    "--nproc_per_node",
                    per_node,
                    *args,
                    lead=12,
                )
            ]
            for n in range(nodes)
        }
        body = node_case(sections, nodes)
    # The pre-flight after the checkout check (which loads nothing), before the trainer.
    steps = [check, preflight.script_block(ctx, NAME), body]
    text = script(ctx, TITLE, notes, steps, fmt=NAME, ports=False)
    return LaunchScript(NAME, text, {}, tuple(notes), layout)
