"""What a launch passes its trainer about checkpoints (core/checkpoints.py computes them):
SpecForge's save_interval and max_checkpoints, speculators' --checkpoint-freq, the legacy
trainer's --save-interval and --resume, the resume override a second launch of a SpecForge
run adds when the first left a checkpoint, and the header's line.

A second launch with the same output_dir resumes from the first's newest checkpoint:
SpecForge through training.resume_from = output_dir (its CheckpointManager resolves the
run root to the `<run_id>-latest` link, specforge 0.2.0 training/checkpoint.py), given only
when that link exists (a first launch has none, and resume_from on an empty folder fails);
speculators and the legacy trainer find the newest folder themselves.
"""

from __future__ import annotations

import math
from typing import Any

from ..core.checkpoints import Checkpoints
from .checkpoint_lines import launch_checkpoints
from .common import Context, output_dir, run_id
from .escape import q

# The bash array a SpecForge trainer call appends (empty on a first launch).
RESUME_WORDS = '"${resume[@]}"'


def interval_steps(ck: Checkpoints) -> int:
    """Optimizer steps between saves; a plan that does not fit saves once per epoch's
    worth of the recipe's interval (the trainer's own default then applies)."""
    from ..basics import recipe

    return ck.interval_steps or recipe.SAVE_INTERVAL


def specforge_training(ctx: Context, fmt: str) -> dict[str, Any]:
    """run.yaml's training keys for checkpoints (SpecForge's schema: save_interval in
    optimizer steps, max_checkpoints the rotation)."""
    ck = launch_checkpoints(ctx.plan, ctx.catalog, fmt)
    return {"save_interval": interval_steps(ck), "max_checkpoints": ck.keep}


def speculators_args(ctx: Context, fmt: str) -> list[object]:
    """speculators.train's save cadence: --checkpoint-freq in epochs (below 1, a share of
    an epoch; above, whole epochs: its schema refuses others). It resumes by itself from
    the newest <save_path>/<epoch> folder."""
    ck = launch_checkpoints(ctx.plan, ctx.catalog, fmt)
    epochs = ctx.plan.workload.epochs
    run_hours = ck.run_hours
    if not ck.interval_hours or not run_hours:
        return []
    freq = ck.interval_hours / (run_hours / epochs)
    value: object = max(1, math.floor(freq)) if freq >= 1 else float(f"{freq:.3g}")
    return ["--checkpoint-freq", value]


def legacy_args(ctx: Context, fmt: str) -> list[object]:
    """The legacy trainer's save interval (optimizer steps) and --resume, which reloads the
    newest epoch_E_step_S folder of output_dir when there is one."""
    return [
        "--save-interval",
        interval_steps(launch_checkpoints(ctx.plan, ctx.catalog, fmt)),
        "--resume",
    ]


def resume_line(ctx: Context) -> str:
    """The bash line that sets `resume` to SpecForge's resume override when a launch before
    this one left a complete checkpoint in output_dir (its -latest link), else to nothing."""
    out = output_dir(ctx.plan)
    latest = f"{out}/{run_id(ctx.plan)}-latest"
    return (
        f"resume=(); [ ! -e {q(latest)} ] || resume=({q(f'training.resume_from={out}')})"
        "   # resume from a launch before this one"
    )


def resumed(ctx: Context, call: str) -> list[str]:
    """A SpecForge trainer call that resumes when there is a checkpoint to resume."""
    return [resume_line(ctx), f"{call} {RESUME_WORDS}"]


# The bash array a one-node (managed_local) SpecForge call appends: empty on a first launch.
WARM_WORDS = '"${warm[@]}"'


def warm_lines(ctx: Context, doc: dict[str, Any]) -> list[str]:
    """The bash that sets `warm` to SpecForge's warm-start overrides when a launch before
    this one left a complete checkpoint: managed_local refuses training.resume_from
    (specforge 0.2.0 config/schema.py), so the newest checkpoint's weights are loaded
    (model.draft_checkpoint_path: weights only) and only the run's remaining steps are
    trained (training.max_steps). A warm start counts its steps from 0 and a save at step
    S deletes the run's folders from S on (CheckpointManager._rewind), so it runs as
    `<run_id>-from<N>` (N: the steps before it), with a fresh control_dir (managed_local
    refuses an existing one); the newest checkpoint is the one with the most steps, N + S."""
    out, run = output_dir(ctx.plan), run_id(ctx.plan)
    w = ctx.plan.workload
    t, trainer = doc["training"], doc["deployment"]["trainer"]
    quantum = trainer["nnodes"] * trainer["nproc_per_node"] * t["batch_size"]
    total = max(1, w.samples * t["num_epochs"] // (quantum * t.get("accumulation_steps", 1)))
    lines = [
        "# Warm start from the newest complete checkpoint of a launch before this one"
        " (managed_local\n# refuses training.resume_from): its weights, and the"
        f" remaining steps of {total:,}.",
        "warm=(); steps_done=0; warm_from=''",
        f"for dir in {q(out)}/{q(run + '-step')}* {q(out)}/{q(run + '-from')}*-step*; do",
        '  [ -f "$dir/training_state.pt" ] || continue',
        '  name="${dir##*/}"; rest="${name%-step*}"; steps="${name##*-step}"; from=0',
        f'  [ "$rest" = {q(run)} ] || from=${{rest#{q(run + "-from")}}}',
        "  case \"$from$steps\" in ''|*[!0-9]*) continue ;; esac",
        '  if [ $((from + steps)) -gt "$steps_done" ]; then'
        ' steps_done=$((from + steps)); warm_from="$dir"; fi',
        "done",
        'if [ -n "$warm_from" ]; then',
        f'  if [ "$steps_done" -ge {total} ]; then',
        f'    echo "warm start: $warm_from has all {total} steps of the run" >&2; exit 0',
        "  fi",
        '  warm=("model.draft_checkpoint_path=$warm_from"'
        f' "training.max_steps=$(({total} - steps_done))"',
        f'    {q(f"run_id={run}-from")}"$steps_done"',
        f'    {q(f"deployment.disaggregated.control_dir={out}/control-from")}"$steps_done")',
        "fi",
    ]
    return ["\n".join(lines)]  # one block of the script
