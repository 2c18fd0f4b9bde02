"""The probe: a short benchmark of the plan's workload on one node of a GPU type, made
with the same launch code as the full run (SpecForge), and the reading of its output
into calibration points.

`probe_script` writes a self-contained bash script. On the rented node it writes samples
at the plan's length (or takes the user's dataset), runs SpecForge for the time budget
with one target replica and the rest of the node as drafters (so that the targets bind
and the pipeline rate is theirs), samples GPU utilisation and power, steps the drafter
batch up until it no longer fits, and writes `manifest.toml` next to the logs.
`read_probe_dir` turns that folder into calibration points (via runlogs), and writes the
probe result file `probe.toml` there.
"""

from __future__ import annotations

import csv
import datetime as dt
import statistics
from dataclasses import dataclass, replace
from pathlib import Path
from typing import TYPE_CHECKING, Any

from ..basics.errors import PlanError
from ..basics.tomlfile import read_toml, write_atomic
from ..core.cost import CEILING_BATCHES, prices, probe_gpu_hours, probe_gpus
from ..core.resolve import resolve
from ..inputs.catalog import Catalog
from ..inputs.plan import Plan

if TYPE_CHECKING:
    from ..inputs.runlogs import LogReading, Point

ROLES = ("target", "drafter", "both")
# GPUs count as busy when their median utilisation and power are this close to the top.
BUSY_UTILIZATION = 0.9
BUSY_POWER_SHARE = 0.9
CEILING_STEPS = 3  # optimizer steps of each ceiling run
SYNTHETIC_SAMPLES = 2_000  # the epochs repeat them; about 20 MB at 2,344 tokens
# Characters per token of the synthetic text (English-like words; docs/own-numbers.md).
CHARS_PER_TOKEN = 4


@dataclass(frozen=True, slots=True)
class ProbeScript:
    text: str
    gpu: str
    gpus: int  # GPUs the probe rents (one node, or the part it uses)
    minutes: float
    gpu_hours: float
    cost_usd: float | None


def probe_plan(plan: Plan, catalog: Catalog, gpu: str, role: str) -> Plan:
    """The plan on one node of `gpu`: one target replica; for a target or whole-pipeline
    probe the rest of the node as drafters (the targets then bind, and the pipeline rate
    is theirs), for a drafter probe one drafter (its compute time is logged on its own)."""
    if role not in ROLES:
        raise PlanError.flag(
            "--role", repr(role), f"choose one of {', '.join(ROLES)}", "probe.role"
        )
    spec = catalog.gpu(gpu, "--gpu")
    tp, drafters = probe_gpus(plan, spec, role)
    probe = plan.model_copy(
        update={
            "name": f"probe: {spec.name}, {role}",
            "target": plan.target.model_copy(update={"gpu": gpu, "count": tp, "tp": tp}),
            "drafter": plan.drafter.model_copy(update={"gpu": gpu, "count": drafters}),
            "launch": plan.launch.model_copy(
                update={
                    "format": "specforge",
                    "hosts": (),
                    "run_id": f"probe-{gpu}",
                    "train_data_path": "./train.jsonl",
                    "output_dir": "./outputs",
                }
            ),
        }
    )
    resolve(probe, catalog)
    return probe


def _synthetic(plan: Plan) -> str:
    """Python that writes chat samples whose lengths spread around the plan's average."""
    from .escape import feed

    w = plan.workload
    return feed(
        "python3 -",
        f"""import json, random
random.seed(0)
words = ("the of and to in is that for it as with was on be at by this had not are but from "
         "or have an they which one you were all we her she there would their will when who "
         "him been has more if no out so said what up its about into than them can only").split()
mean, cap = {int(w.avg_sample_tokens)}, {int(w.max_length)}
with open("train.jsonl", "w") as out:
    for _ in range({SYNTHETIC_SAMPLES}):
        tokens = max(16, min(cap - 8, int(random.lognormvariate(0, 0.5) * mean / 1.133)))
        text = " ".join(random.choice(words) for _ in range(tokens * {CHARS_PER_TOKEN} // 5))
        half = len(text) // 4
        turns = [{{"role": "user", "content": text[:half]}},
                 {{"role": "assistant", "content": text[half:]}}]
        out.write(json.dumps({{"conversations": turns}}) + "\\n")
""",
        "DFLASH_PROBE_PY",
    )


def probe_script(
    plan: Plan, catalog: Catalog, gpu: str, role: str = "both", minutes: float = 10.0
) -> ProbeScript:
    """The probe for `gpu`, and what it costs at the plan's price."""
    from ..basics.tomlfile import to_toml
    from . import generate
    from .escape import comment, heredoc, q

    if not 1 <= minutes <= 24 * 60:
        raise PlanError.flag("--minutes", f"{minutes:g}", "between 1 and 1440", "probe.minutes")
    gpu = catalog.key(gpu, "--gpu")  # as people write it: 'B200' is b200
    probe = probe_plan(plan, catalog, gpu, role)
    script = generate(probe, catalog, "specforge")
    if "run.yaml" not in script.files:
        raise PlanError.at(gpu, "the probe needs one node's SpecForge config", key="probe.gpu")
    gpus = probe.target.count + probe.drafter.count
    gpu_hours = probe_gpu_hours(plan, catalog.gpus[gpu], role, minutes)
    ceiling_minutes = gpu_hours * 60 / gpus - minutes
    view = prices(plan, dict(catalog.gpus), (gpu,), catalog.offers)
    usd = view.by_gpu[gpu].usd_per_gpu_hour
    cost = gpu_hours * usd if usd else None
    w = plan.workload
    name = catalog.gpus[gpu].name
    # Written by the TOML serializer into a quoted heredoc (the model path may hold
    # anything); only the two values known at run time are appended, by printf.
    manifest = to_toml(
        {
            "probe_format": 1,
            "gpu": gpu,
            "role": role,
            "minutes": minutes,
            "target_gpus": probe.target.count,
            "drafter_gpus": probe.drafter.count,
            "tp": probe.target.tp,
            "batch_size": plan.drafter.batch_size,
            "target_model": w.target_model,
            "avg_sample_tokens": w.avg_sample_tokens,
            "max_length": w.max_length,
            "num_anchors": w.num_anchors,
        }
    )
    steps = [
        "#!/usr/bin/env bash",
        comment(
            f"dflash-plan probe: {name}, {role}, about {minutes + ceiling_minutes:g} "
            f"minutes on one node ({minutes:g} of the workload"
            + (f", {ceiling_minutes:g} of memory-ceiling runs" if ceiling_minutes else "")
            + f"; {probe.target.count} target + {probe.drafter.count} drafter GPUs)"
        ),
        comment(
            f"plan: {plan.name or 'unnamed'}; {w.target_model}, {w.avg_sample_tokens} "
            f"tokens per sample, {w.num_anchors} anchors, batch {plan.drafter.batch_size}"
        ),
        comment(
            f"cost: {gpus} GPUs for about {minutes + ceiling_minutes:g} minutes = "
            f"{gpu_hours:.2f} GPU-hours" + (f", about ${cost:,.2f}" if cost else "")
        ),
        comment(
            "needs: SpecForge with its SGLang capture patch and mooncake_master on PATH "
            "(the same stack as the full run), nvidia-smi"
        ),
        "set -euo pipefail",
        'out="${PROBE_OUT:-}"',
        f'[ -n "$out" ] || out={q(f"probe-{gpu}")}',
        'mkdir -p "$out" && cd "$out"',
        comment(
            "1. samples: your dataset (PROBE_DATASET), else synthetic ones at the plan's length"
        ),
        'if [ -n "${PROBE_DATASET:-}" ]; then head -n '
        + str(SYNTHETIC_SAMPLES)
        + ' "$PROBE_DATASET" > train.jsonl; else',
        _synthetic(plan),
        "fi",
        comment("2. the run config: what `dflash-plan launch` writes, on this node"),
        heredoc("run.yaml", script.files["run.yaml"]),
        comment("3. utilisation and power while it runs (are the GPUs busy?)"),
        "nvidia-smi --query-gpu=index,utilization.gpu,power.draw,power.limit "
        "--format=csv,noheader,nounits -l 5 > gpu.csv & smi=$!",
        comment("4. the workload for the time budget; a fresh control dir per run"),
        f"timeout --signal=INT {q(f'{minutes:g}m')} specforge train -c run.yaml "
        "training.log_interval=1 deployment.disaggregated.control_dir=./control-main "
        "> train.log 2>&1 || true",
        'kill "$smi" 2>/dev/null || true',
        "max_batch=0",
    ]
    if role != "target":
        steps += [
            comment("5. the memory ceiling: the drafter batch up until it no longer fits"),
            f"for b in {' '.join(map(str, CEILING_BATCHES))}; do",
            f'  if timeout 5m specforge train -c run.yaml training.batch_size="$b" '
            f"training.max_steps={CEILING_STEPS} "
            'deployment.disaggregated.control_dir="./control-b$b" > "mem-b$b.log" 2>&1; '
            "then max_batch=$b; else break; fi",
            "done",
        ]
    steps += [
        comment("6. what dflash-plan calibrate reads"),
        heredoc("manifest.toml", manifest),
        """printf 'date = "%s"\\nmax_batch_size = %d\\n' "$(date -u +%F)" "$max_batch" """
        ">> manifest.toml",
        'echo "probe done: copy $(pwd) back and run: dflash-plan calibrate $(pwd) '
        '--plan PLAN.toml --write"',
    ]
    return ProbeScript("\n".join(steps) + "\n", gpu, gpus, minutes, gpu_hours, cost)


def _busy(path: Path) -> bool | None:
    """Median utilisation and power share of the sampled GPUs near the top, or None."""
    if not path.is_file():
        return None
    util, power = [], []
    with path.open(newline="", encoding="utf-8", errors="replace") as handle:
        for row in csv.reader(handle):
            try:
                util.append(float(row[1]) / 100)
                power.append(float(row[2]) / float(row[3]))
            except (IndexError, ValueError, ZeroDivisionError):
                continue
    if not util:
        return None
    return (
        statistics.median(util) >= BUSY_UTILIZATION and statistics.median(power) >= BUSY_POWER_SHARE
    )


def read_probe_dir(folder: Path) -> LogReading:
    """A probe's output folder: its manifest and training log as calibration points; also
    writes the result file probe.toml into the folder."""
    folder = Path(folder)
    manifest_path = folder / "manifest.toml"
    from ..inputs.runlogs import RunContext

    doc, _ = read_toml(manifest_path)
    try:
        gpu = str(doc["gpu"])
        ctx = RunContext(
            avg_sample_tokens=float(doc["avg_sample_tokens"]),
            target_gpu=gpu,
            drafter_gpu=gpu,
            target_gpus=int(doc["target_gpus"]),
            drafter_gpus=int(doc["drafter_gpus"]),
            batch_size=int(doc["batch_size"]),
            num_anchors=int(doc["num_anchors"]),
            target_model=str(doc["target_model"]),
        )
    except (KeyError, TypeError, ValueError) as err:
        raise PlanError.at(
            str(manifest_path),
            f"missing or bad {err}: is this a probe folder written by dflash-plan probe?",
        ) from None
    if doc.get("probe_format") != 1:
        raise PlanError.at(
            str(manifest_path),
            f"probe_format = {doc.get('probe_format')!r}: this dflash-plan reads probe_format 1",
        )
    from ..inputs.runlogs import read_training_log

    reading = read_training_log(folder / "train.log", ctx)
    busy = _busy(folder / "gpu.csv")
    points = tuple(
        replace(
            p,
            measurement=p.measurement.model_copy(
                update={
                    "gpu_busy": busy if p.role == "target" else p.measurement.gpu_busy,
                    "source": f"probe {folder.name}: {p.measurement.source}".strip(": "),
                    "date": str(doc.get("date") or p.measurement.date or ""),
                }
            ),
            workload={
                **p.workload,
                "max_batch_size": doc.get("max_batch_size"),
                "max_length": doc.get("max_length"),
                "tp": doc.get("tp"),
            },
        )
        for p in reading.points
    )
    _write_result(folder / "probe.toml", gpu, doc, points)
    return replace(reading, points=points, format="probe folder")


def _write_result(path: Path, gpu: str, doc: dict[str, Any], points: tuple[Point, ...]) -> None:
    """The probe result file (docs/own-numbers.md): one table per role measured."""
    from ..basics.tomlfile import to_toml

    result: dict[str, Any] = {
        "probe_format": 1,
        "tool_version": "dflash-plan",
        "date": str(doc.get("date") or dt.date.today().isoformat()),
        "gpu": gpu,
    }
    for p in points:
        m = p.measurement
        table: dict[str, Any] = {
            "tokens_per_s": m.tokens_per_s,
            "seconds": float(doc.get("minutes", 0)) * 60,
            "target_model": m.target_model or doc.get("target_model"),
            "avg_sample_tokens": m.avg_sample_tokens or doc.get("avg_sample_tokens"),
            "max_length": doc.get("max_length"),
        }
        if p.role == "target":
            table |= {"tp": doc.get("tp"), "gpu_busy": m.gpu_busy}
            if m.bound != "exact":
                table["bound"] = m.bound
        else:
            table |= {
                "num_anchors": m.num_anchors or doc.get("num_anchors"),
                "batch_size": m.batch_size or doc.get("batch_size"),
                "max_batch_size": doc.get("max_batch_size"),
            }
        result[p.role] = {k: v for k, v in table.items() if v is not None}
    write_atomic(path, to_toml(result))
