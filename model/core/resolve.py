"""A plan resolved against the catalog: every name looked up and every rule that couples
plan values checked, once. Everything downstream (rates, pipeline, launch) takes the
resolved plan and checks nothing again."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..basics.errors import PlanError
from ..inputs.catalog import Catalog
from ..inputs.formats import row_of
from ..inputs.hardware import Gpu
from ..inputs.plan import GPU_FIELDS, GPU_TABLES, Plan, Workload
from ..inputs.targets import TargetModel
from ..physics.families import FAMILIES, default_block_size, drafter_shape, eagle3_layer_ids
from ..physics.work import DrafterShape


@dataclass(frozen=True, slots=True)
class Resolved:
    plan: Plan
    target_gpu: Gpu
    drafter_gpu: Gpu
    model: TargetModel
    layer_ids: tuple[int, ...]  # captured target layers
    block_size: int
    shape: DrafterShape
    gpus: dict[str, Gpu]  # every GPU the plan names (roles, prices, calibration)

    @property
    def same_gpu_type(self) -> bool:
        return self.target_gpu.key == self.drafter_gpu.key

    @property
    def captured_tensors(self) -> int:
        """Hidden-state tensors the capture holds per token: the captured layers, and the
        final hidden state where the family captures it (DFlash2's sixth tensor)."""
        return len(self.layer_ids) + int(self.shape.final_state)

    @property
    def transferred_layers(self) -> int:
        """Hidden states sent per token: the captured layers, plus the final hidden state
        where the family captures it (DFlash2) or the launch format appends it (the final
        layer speculators' launch_vllm.py adds and its trainer reads as the target's
        output). Both are the same tensor: counted once."""
        extra = row_of(self.plan.launch.format).extra_layers
        return len(self.layer_ids) + max(extra, int(self.shape.final_state))


def require_same_gpu_type(plan: Plan, why: str) -> None:
    """Moving GPUs between roles (balance, the split keys, a colocated launch) needs one
    GPU type for both."""
    if plan.target.gpu != plan.drafter.gpu:
        reason = (
            f"{why}, so both roles must use the same GPU type (target "
            f"{plan.target.gpu}, drafter {plan.drafter.gpu})"
        )
        raise PlanError.said(reason, "drafter.gpu")


def check_tp(tp: int, gpu: Gpu) -> None:
    """The one TP rule, for the projection and every launch format: a target replica's TP
    group sits inside one node and replicas pack nodes without gaps, so tp divides the
    GPUs per node. Every launcher we generate starts one capture server per TP group on
    one host (SpecForge managed-local and external servers, vLLM, Slurm steps); none
    spans nodes, and an NVL72 rack is still 4-GPU trays to them."""
    if tp > gpu.gpus_per_node or gpu.gpus_per_node % tp:
        allowed = [n for n in range(1, gpu.gpus_per_node + 1) if gpu.gpus_per_node % n == 0]
        raise PlanError.field(
            "target.tp",
            str(tp),
            f"a TP group sits inside one node and tp "
            f"must divide its {gpu.gpus_per_node} {gpu.name} GPUs; allowed: "
            f"{', '.join(map(str, allowed))}",
        )


def check_colocated(plan: Plan) -> None:
    """A colocated plan runs a target shard and a drafter rank on every one of its GPUs:
    one GPU type, an online run (offline already captures first and trains after), and
    whole target replicas over all of them."""
    why = "workload.topology colocated runs the target and the drafter on the same GPUs"
    require_same_gpu_type(plan, why)
    if plan.workload.mode != "online":
        reason = "an offline plan captures first and trains after: colocated is online only"
        raise PlanError.field("workload.topology", "colocated", reason)
    gpus = plan.target.count + plan.drafter.count
    if gpus % plan.target.tp:
        raise PlanError.field(
            "drafter.count",
            str(plan.drafter.count),
            f"colocated, the plan's {gpus} GPUs (target.count + drafter.count) hold whole "
            f"target replicas: a multiple of target.tp {plan.target.tp}",
        )


def check_precision(plan: Plan, gpu: Gpu, catalog: Catalog) -> None:
    """An fp8 or fp4 target needs tensor cores of that precision on its GPU."""
    precision = plan.target.precision
    if gpu.supports(precision):
        return
    having = sorted(k for k, g in catalog.gpus.items() if g.supports(precision))
    raise PlanError.field(
        "target.precision",
        precision,
        f"{gpu.name} has no {precision.upper()} tensor cores; GPUs with them: {', '.join(having)}",
    )


def named_gpus(plan: Plan) -> list[tuple[str, str]]:
    """(plan key, GPU named there) for every GPU the plan names that must be in the
    catalog: the roles, the prices, the measurements, the regeneration's."""
    named = [("target.gpu", plan.target.gpu), ("drafter.gpu", plan.drafter.gpu)]
    if plan.cost.reference_gpu is not None:
        named.append(("cost.reference_gpu", plan.cost.reference_gpu))
    named += [(f"cost.ratio.{k}", k) for k in plan.cost.ratio]
    named += [(f"cost.usd_per_gpu_hour.{k}", k) for k in plan.cost.usd_per_gpu_hour]
    named += [(f"calibration.target.{k}", k) for k in plan.calibration.target]
    named += [(f"calibration.drafter.{k}", k) for k in plan.calibration.drafter]
    if plan.workload.regenerate and plan.regenerate.gpu is not None:
        named.append(("regenerate.gpu", plan.regenerate.gpu))
    if plan.serving.gpu is not None:
        named.append(("serving.gpu", plan.serving.gpu))
    return named


def with_gpu_keys(plan: Plan, catalog: Catalog) -> Plan:
    """The plan with every GPU it names written as the catalog's key ('B200' is b200,
    catalog.find): prices, measurements and the catalog go by key. A name the catalog
    does not know stays as written (resolve says so, naming its key); a table naming one
    GPU twice ('B300' and 'b300') is an error."""
    find = catalog.find
    sections: dict[str, Any] = {}
    for section, name in GPU_FIELDS:
        part = sections.get(section, getattr(plan, section))
        value = getattr(part, name)
        if value is not None and (key := find(value)) not in (None, value):
            sections[section] = part.model_copy(update={name: key})
    for section, name in GPU_TABLES:
        part = sections.get(section, getattr(plan, section))
        entries: dict[str, Any] = getattr(part, name)
        if all(find(gpu) in (None, gpu) for gpu in entries):
            continue
        keyed: dict[str, Any] = {}
        said: dict[str, str] = {}
        for gpu, value in entries.items():
            key = find(gpu) or gpu
            if key in keyed:
                where = f"{section}.{name}.{gpu}"
                reason = f"names the GPU {key}, as {section}.{name}.{said[key]} does: keep one"
                raise PlanError.at(where, reason, key=where)
            keyed[key], said[key] = value, gpu
        sections[section] = part.model_copy(update={name: keyed})
    return plan.model_copy(update=sections) if sections else plan


def resolve(plan: Plan, catalog: Catalog) -> Resolved:
    """Look up every name the plan uses and check the rules between its values."""
    plan = with_gpu_keys(plan, catalog)
    gpus = {key: catalog.gpu(key, plan_key) for plan_key, key in named_gpus(plan)}
    w = plan.workload
    model = catalog.model(w.target_model)
    target_gpu = gpus[plan.target.gpu]
    check_tp(plan.target.tp, target_gpu)
    check_precision(plan, target_gpu, catalog)
    if w.topology == "colocated":
        check_colocated(plan)
    layer_ids, block, shape = workload_drafter(w, model)
    return Resolved(
        plan=plan,
        target_gpu=target_gpu,
        drafter_gpu=gpus[plan.drafter.gpu],
        model=model,
        layer_ids=layer_ids,
        block_size=block,
        shape=shape,
        gpus=gpus,
    )


def workload_drafter(w: Workload, model: TargetModel) -> tuple[tuple[int, ...], int, DrafterShape]:
    """A workload's captured layers, block size and drafter shape on its target model, the
    rules between them checked: a plan's workload, or the one a measurement was taken on."""
    # A family that fixes its layer count (EAGLE-3: one) takes no workload.draft_layers.
    family = FAMILIES[w.drafter]
    if w.draft_layers > model.n_layers:
        raise PlanError.field(
            "workload.draft_layers",
            str(w.draft_layers),
            f"more than the {model.n_layers} layers of {model.name}",
        )
    default_ids = (
        eagle3_layer_ids(model)
        if w.drafter == "eagle3"
        else model.default_layer_ids(w.draft_layers)
    )
    layer_ids = w.target_layer_ids or default_ids
    if family.captured_layers is not None and len(layer_ids) != family.captured_layers:
        raise PlanError.field(
            "workload.target_layer_ids",
            str(list(layer_ids)),
            f"{family.name} fuses exactly {family.captured_layers} captured layers",
        )
    if max(layer_ids) >= model.n_layers:
        raise PlanError.field(
            "workload.target_layer_ids",
            str(list(layer_ids)),
            f"{model.name} has layers 0-{model.n_layers - 1}",
        )
    block = w.block_size or default_block_size(w.drafter, model)
    shape = drafter_shape(model, w.draft_layers, block, len(layer_ids), w.drafter)
    return tuple(layer_ids), block, shape
