"""What every format shares: the resolved context, the node switch, and the capture-server
memory settings with their reasoning. Everything a format writes is escaped by escape.py."""

from __future__ import annotations

import math
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..basics.errors import PlanError
from ..basics.units import cost, duration, ktok, spread
from ..core import stages
from ..core.projection import Projection
from ..core.rates import ENGINE_NAMES
from ..core.resolve import Resolved, resolve
from ..inputs.catalog import Catalog
from ..inputs.formats import row_of
from ..inputs.plan import Plan
from ..inputs.targets import TargetModel
from ..physics import store
from ..physics.families import FAMILIES
from ..physics.flow import FlowControl
from ..physics.memory import RUNTIME_RESERVE_GIB, target_memory

# Re-exported: the formats import them from here.
from ..physics.store import GIB as GIB
from ..physics.store import IN_FLIGHT_HIGH_DEFAULT as IN_FLIGHT_HIGH_DEFAULT
from ..physics.store import IN_FLIGHT_LOW_DEFAULT as IN_FLIGHT_LOW_DEFAULT
from ..physics.store import IN_FLIGHT_PER_SERVER as IN_FLIGHT_PER_SERVER
from . import versions
from .checkpoint_lines import header_lines
from .escape import comment, q
from .layout import Layout, assign_devices
from .paths import launch_path, own_path, path_words, why_not

# SGLang's request validator wants the prompt plus one generated and five internal slots
# (SpecForge specforge/config/schema.py, SGLANG_CAPTURE_CONTEXT_HEADROOM).
CONTEXT_EXTRA_TOKENS = 7
# Upstream examples set mem_fraction_static between 0.4 and 0.85 (SpecForge
# examples/disagg/run_qwen3_8b_dflash_disagg_2node.sh uses 0.85); we stay inside it.
MEM_FRACTION_MAX = 0.85
MEM_FRACTION_MIN = 0.4

# DFlash2's convolution and candidate selector, as both formats train it: z-lab's released
# shape (SpecForge PR #772 configs/qwen3.6-27b-dflash2.json at 5943b2f6, the dflash_config
# SGLang's and vLLM's DFlash2DraftModel load; speculators 0.9.0's DFlash2Args defaults).
# The convolution and selector shape is the family's (physics/families.py); the candidates
# the selector keeps, top 16, the released config's.
DFLASH2_SELECTOR_TOP_K = 16
DFLASH2_CONFIG = {
    "conv_group_size": FAMILIES["dflash2"].conv_group,
    "conv_kernel_size": FAMILIES["dflash2"].conv_kernel,
    "selector_rank": FAMILIES["dflash2"].selector_rank,
    "selector_top_k": DFLASH2_SELECTOR_TOP_K,
}

# Mooncake master ports: the ones SpecForge's managed-local stack and its two-node example
# use (rpc, HTTP metadata, metrics).
MOONCAKE_RPC_PORT = 35551
MOONCAKE_METADATA_PORT = 35880
MOONCAKE_METRICS_PORT = 35903


def devices(devs: tuple[int, ...]) -> str:
    return ",".join(map(str, devs))


def model_path(plan: Plan, model: TargetModel) -> str:
    return plan.launch.target_model_path or model.path or model.hf_id or model.key


def run_id(plan: Plan) -> str:
    """The plan's launch.run_id, else one named after the target model and the drafter
    family (so it follows both: `<model>-dflash`, `<model>-dflash2`, the model key reduced
    to name characters)."""
    if plan.launch.run_id:
        return plan.launch.run_id
    key = re.sub(r"[^A-Za-z0-9._-]+", "-", plan.workload.target_model).strip("-.") or "target"
    return f"{key}-{plan.workload.drafter}"


def name_label(text: str, max_chars: int, *, lower: bool = False) -> str:
    """`text` as a launcher's name (a DNS label's characters): ASCII letters and digits, any
    run of other characters (dashes too) one `-`, a letter first (else `dflash-` goes
    before), at most `max_chars`, a letter or digit last. `lower`: lower case only."""
    allowed = "a-z0-9" if lower else "A-Za-z0-9"
    name = re.sub(f"[^{allowed}]+", "-", text.lower() if lower else text).strip("-")
    if not name[:1].isalpha():
        name = f"dflash-{name}".rstrip("-")
    return name[:max_chars].rstrip("-")


def output_dir(plan: Plan) -> str:
    return plan.launch.output_dir or f"./outputs/{run_id(plan)}"


def read_node_rank(nodes: int) -> str:
    """node_rank from NODE_RANK, checked to be a node index of this plan."""
    return (
        f'node_rank="${{NODE_RANK:?set NODE_RANK to the index of this node, 0-{nodes - 1}}}"'
        f'\ncase "$node_rank" in\n  \'\'|*[!0-9]*) echo "NODE_RANK must be 0-{nodes - 1}" '
        f">&2; exit 2 ;;\nesac"
    )


def node_case(sections: dict[int, list[str]], nodes: int, read_rank: bool = True) -> str:
    """One script for every node: NODE_RANK picks this node's part (`read_rank`: read it
    here; else the script read it before with read_node_rank)."""
    out = [read_node_rank(nodes)] if read_rank else []
    out.append('case "$node_rank" in')
    for node in range(nodes):
        body = sections.get(node) or ["echo 'nothing to run on this node'"]
        out.append(f"  {node})")
        out += ["    " + line for line in body]  # inner newlines may sit inside quotes
        out.append("    ;;")
    out += [f'  *) echo "NODE_RANK must be 0-{nodes - 1}" >&2; exit 2 ;;', "esac"]
    return "\n".join(out)


# --- the node's own address ----------------------------------------------------------------

# A shell function printing this node's address on the network that reaches the head node:
# DFLASH_FABRIC_IP when set, else the source address of the route to the head, else the
# first address of `hostname -I`, never a loopback one. Mooncake publishes this address to
# the other nodes (MOONCAKE_LOCAL_HOSTNAME) and binds its TCP transport to it
# (MC_TCP_BIND_ADDRESS); a host name can resolve to a loopback or a management NIC, and a
# container's name to nothing the other nodes reach.
FABRIC_IP_FUNCTION = r"""fabric_ip() {   # $1: the head node
  if [ -n "${DFLASH_FABRIC_IP:-}" ]; then echo "$DFLASH_FABRIC_IP"; return; fi
  local addr="" head=""
  if command -v ip >/dev/null 2>&1; then
    head="$(getent ahostsv4 "$1" 2>/dev/null | awk 'NR == 1 {print $1}')" || true
    addr="$(ip -o route get "${head:-$1}" 2>/dev/null |
      sed -n 's/.* src \([0-9.]*\).*/\1/p')" || true
  fi
  case "$addr" in ''|127.*) addr="$(hostname -I 2>/dev/null | awk '{print $1}')" || true ;; esac
  [ -n "$addr" ] || {
    echo "cannot find this node's fabric address: set DFLASH_FABRIC_IP" >&2; return 1; }
  echo "$addr"
}"""


def export_fabric_ip(head: str) -> str:
    """Export this node's fabric address for Mooncake (see FABRIC_IP_FUNCTION)."""
    return (
        f'fabric_addr="$(fabric_ip {q(head)})"\n'
        'export MOONCAKE_LOCAL_HOSTNAME="$fabric_addr" MC_TCP_BIND_ADDRESS="$fabric_addr"'
    )


# A key no server the watch asks holds (the Mooncake metadata server, the trainer's
# liveness server): any HTTP answer means it is up.
RUN_ALIVE_KEY = "dflash-plan-run-alive"


def until_run_ends(url: str) -> str:
    """Shell that returns once the run is over, for a node running only target servers
    (its script then exits and its trap stops them). The run ends with the trainers: `url`
    (a shell word, with RUN_ALIVE_KEY in it) is served by the first trainer node until its
    script ends (SpecForge: its Mooncake master's metadata server; speculators: a liveness
    server); three failed tries a minute apart mean it is gone, not slow."""
    return (
        "while curl -s -o /dev/null --retry 3 --retry-connrefused --retry-delay 60 "
        f"{url}; do sleep 60; done   # the trainers run"
    )


# --- capture-server memory ---------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CaptureMemory:
    """One target GPU running a capture server, in GiB (as memory.py counts), and the
    mem_fraction_static that follows: SGLang's static pool holds the weights and the KV
    cache; the rest of the GPU must hold the prefill activations, the captured hidden
    states and the runtime reserve (memory.RUNTIME_RESERVE_GIB)."""

    gpu_gib: float
    weights_gib: float
    kv_gib: float  # KV of every in-flight sequence
    activations_gib: float  # one layer's activations for the whole prefill batch
    capture_gib: float  # captured hidden states of the prefill batch
    runtime_gib: float
    fraction: float

    @property
    def fits(self) -> bool:
        static = self.weights_gib + self.kv_gib
        return static <= self.fraction * self.gpu_gib and (
            static + self.activations_gib + self.capture_gib + self.runtime_gib <= self.gpu_gib
        )

    def reasoning(self) -> list[str]:
        tokens = "8 in-flight max-length sequences"
        lines = [
            f"mem_fraction_static {self.fraction:.2f} of {self.gpu_gib:g} GiB per target GPU: "
            f"the static pool needs weights {self.weights_gib:.1f} GiB + KV for {tokens} "
            f"{self.kv_gib:.1f} GiB; outside it stay prefill activations "
            f"{self.activations_gib:.1f} GiB, captured states {self.capture_gib:.1f} GiB and "
            f"{self.runtime_gib:g} GiB runtime (CUDA context, NCCL, allocator); the pool "
            f"takes the rest, within the 0.4-0.85 upstream examples use"
        ]
        if not self.fits:
            lines.append(
                "warning: this does not fit; the capture server may run out of "
                "memory (fewer in-flight requests or a larger tp)"
            )
        return lines


def capture_memory(
    plan: Plan, gpu_memory_gib: float, model: TargetModel, captured_layers: int
) -> CaptureMemory:
    tp, length = plan.target.tp, plan.workload.max_length
    tokens = IN_FLIGHT_PER_SERVER * (length + CONTEXT_EXTRA_TOKENS)
    # The projection's target memory, for the whole in-flight batch instead of one sample:
    # chunked prefill is off (--chunked-prefill-size -1), so one forward may hold it all.
    memory = target_memory(
        model, tp, tokens, captured_layers, gpu_memory_gib, plan.target.precision
    )
    items = dict(memory.items_gb)
    weights, kv = items["weights"], items["KV cache"]
    activations, capture = items["activations"], items["captured states"]
    headroom = activations + capture + RUNTIME_RESERVE_GIB
    fraction = math.floor((1 - headroom / gpu_memory_gib) * 20 + 1e-9) / 20
    fraction = max(MEM_FRACTION_MIN, min(MEM_FRACTION_MAX, fraction))
    static_share = (weights + kv) / gpu_memory_gib
    if fraction < static_share:
        fraction = min(0.95, math.ceil(static_share * 20 - 1e-9) / 20)
    return CaptureMemory(
        gpu_memory_gib, weights, kv, activations, capture, RUNTIME_RESERVE_GIB, fraction
    )


def mem_fraction_static(plan: Plan, catalog: Catalog, model: TargetModel) -> float:
    """Share of a target GPU's memory SGLang reserves (see CaptureMemory)."""
    resolved = resolve(plan, catalog)
    return capture_memory(
        plan, resolved.target_gpu.memory_gb, model, len(resolved.layer_ids)
    ).fraction


def sample_feature_bytes(resolved: Resolved) -> int:
    """store.sample_feature_bytes of the resolved plan (the projection's store_memory
    reads the same function)."""
    return store.sample_feature_bytes(
        resolved.model.hidden, len(resolved.layer_ids), resolved.plan.workload.max_length
    )


def segment_gib(resolved: Resolved, samples: float) -> int:
    """store.segment_gib for `samples` of the resolved plan's max-length samples."""
    return store.segment_gib(sample_feature_bytes(resolved), samples)


# --- the context every format renders from ------------------------------------------------


@dataclass(frozen=True, slots=True)
class Context:
    resolved: Resolved
    catalog: Catalog
    layout: Layout
    memory: CaptureMemory  # one capture server's GPU memory and mem_fraction_static
    # The upstream line the launch installs (launch --upstream; versions.py).
    line: versions.UpstreamLine = versions.PINNED

    @property
    def plan(self) -> Plan:
        return self.resolved.plan

    @property
    def model(self) -> TargetModel:
        return self.resolved.model

    @property
    def layer_ids(self) -> tuple[int, ...]:
        return self.resolved.layer_ids

    @property
    def block(self) -> int:
        return self.resolved.block_size

    @property
    def path(self) -> str:
        return model_path(self.plan, self.model)

    @property
    def chat_template(self) -> str:
        return self.plan.launch.chat_template or self.model.chat_template


def flow_control(ctx: Context, sizing: str = "specforge") -> FlowControl:
    """The run's flow control (physics/flow.py) as the projection computes it: every
    format writes these values, and the store memory is sized from them. `sizing`: the
    rendered format's data plane ("specforge" or "speculators")."""
    return stages.flow_control(ctx.resolved, sizing)


def context(plan: Plan, catalog: Catalog, line: versions.UpstreamLine = versions.PINNED) -> Context:
    """Resolve first, exactly as the projection does; then lay out the devices."""
    resolved = resolve(plan, catalog)
    memory = capture_memory(
        plan, resolved.target_gpu.memory_gb, resolved.model, len(resolved.layer_ids)
    )
    return Context(resolved, catalog, assign_devices(resolved), memory, line)


def require_derived_layers(ctx: Context, fmt: str) -> None:
    """SpecForge (unified and legacy) derives the captured layers from the drafter's layer
    count and accepts no other set (build_target_layer_ids in
    specforge/modeling/draft/dflash.py)."""
    derived = ctx.model.default_layer_ids(ctx.plan.workload.draft_layers)
    if ctx.layer_ids != derived:
        raise PlanError.field(
            "workload.target_layer_ids",
            str(list(ctx.layer_ids)),
            f"{fmt} derives the captured layers from draft_layers ({list(derived)} for "
            f"{ctx.plan.workload.draft_layers} layers) and accepts no other set; "
            f"remove the key or use the speculators or template format",
        )


def figures(projection: Projection) -> str:
    """Throughput, days and cost of a projection, each with its range, as `project`
    computes them."""
    p, r = projection, projection.ranges
    if (unfit := p.does_not_fit) is not None:
        return f"does not fit: {unfit}"
    if not p.fits or p.tokens_per_s is None or p.days is None:
        return "does not fit: a role runs out of GPU memory"

    def spent(value: float) -> str:
        return cost(value, p.cost_unit, dollar=False)

    def within(pair: tuple[float, float] | None, one: Callable[[float], str]) -> str:
        return f" (range {text})" if (text := spread(pair, one)) else ""  # never zero wide

    text = (
        ktok(p.tokens_per_s)
        + within(r.tokens_per_s if r else None, ktok)
        + f", {duration(p.days)} to {p.plan.workload.epochs} epochs"
        + within(r.days if r else None, duration)
    )
    if p.total_cost is not None:
        text += f", cost {spent(p.total_cost)}" + within(r.total_cost if r else None, spent)
        if p.billed_gpus > p.plan.target.count + p.plan.drafter.count:
            text += f" for {p.billed_gpus} GPUs billed"
    return text


def offline_figures(projection: Projection) -> str:
    """The offline run's storage, days and cost, as `project` computes them."""
    o = projection.offline
    if (unfit := projection.does_not_fit) is not None:
        return f"projection of this offline run: does not fit: {unfit}"
    if o is None:
        return "projection of this offline run: does not fit: a role runs out of GPU memory"

    text = (
        f"projection of this offline run: {o.tb:,.1f} TB of hidden states, capture "
        f"{duration(o.capture_days)} then {o.epochs} epochs x "
        f"{duration(o.train_days_per_epoch)} = {duration(o.days)}"
    )
    if o.cost is not None:
        text += f", cost {cost(o.cost, o.cost_unit, dollar=False)}"
    return text


def with_path(plan: Plan, path: tuple[str, str]) -> Plan:
    """The plan on another hidden-state path (workload.transport, workload.receive)."""
    transport, receive = path
    return plan.model_copy(
        update={
            "workload": plan.workload.model_copy(
                update={"transport": transport, "receive": receive}
            )
        }
    )


def launched_path(ctx: Context, fmt: str) -> tuple[str, str] | None:
    """The hidden-state path the launch runs: the format's row (launch_path), except that
    a line whose SpecForge reads receive_buffers receives as the plan says where the row's
    0.2.0 trainer receives pageable."""
    path = launch_path(ctx.plan, fmt)
    reads = versions.reads_receive_buffers(fmt, ctx.line, ctx.plan)
    if path is not None and path[0] == "mooncake" and reads:
        return path[0], ctx.plan.workload.receive
    return path


def projection_notes(ctx: Context, fmt: str, rented: tuple[int, int] | None = None) -> list[str]:
    """The projection of the run this script launches (workload.transport and
    workload.receive set to the format's hidden-state path; `rented`: the GPUs its
    allocation bills per role, see project), and the plan's own figures when its path
    differs."""
    from ..core.projection import project

    plan, row = ctx.plan, row_of(fmt)
    if plan.workload.mode == "offline" and not row.own_command:
        return [offline_figures(project(plan, ctx.catalog, rented))]
    if plan.workload.topology == "colocated":
        # Every GPU runs the target and the drafter: no hidden-state path to choose.
        figures_ = figures(project(plan, ctx.catalog, rented))
        return [f"projection of this run (colocated, no hidden-state transport): {figures_}"]
    path = launched_path(ctx, fmt)
    if path is None:
        return [f"projection: none for this run: {row.transport_why}"]
    launched = project(with_path(plan, path), ctx.catalog, rented)
    name, keys = path_words(path)
    lines = [f"projection of this run ({name}, {keys}): {figures(launched)}"]
    own = own_path(plan)
    if path != own:
        name, keys = path_words(own)
        lines.append(
            f"the plan's own figures are for {name} ({keys}): "
            f"{figures(project(plan, ctx.catalog))}; this launch does not run that path: "
            f"{why_not(plan, fmt, path)}"
        )
    return lines


def header(
    ctx: Context,
    title: str,
    notes: list[str],
    ports: bool = True,
    fmt: str = "template",
    rented: tuple[int, int] | None = None,
) -> str:
    """The comment block: plan, the projection of the launched run (billing `rented`, the
    GPUs the launch's allocation takes per role, when it says them), GPUs per node (with
    capture-server ports where the format starts one server per replica), notes."""
    p, layout = ctx.plan, ctx.layout
    lines = [
        comment(f"dflash-plan launch: {title}"),
        comment(f"plan: {p.name or 'unnamed'}"),
        comment(versions.header_line(fmt, ctx.line, p)),
        *(comment(line) for line in projection_notes(ctx, fmt, rented)),
        *(comment(line) for line in header_lines(p, ctx.catalog, fmt)),
    ]
    if p.workload.topology == "colocated" and not row_of(fmt).own_command:
        lines += [comment(line) for line in colocated_lines(ctx)]
    else:
        lines += split_lines(ctx, ports)
    if layout.nodes > 1 and not p.launch.hosts and not row_of(fmt).names_nodes:
        lines.append(
            comment(
                f"note: host names {layout.hosts[0]}-{layout.hosts[-1]} are "
                f"placeholders: set the plan's launch.hosts (node 0 first), e.g. "
                f'--set \'launch.hosts=["gpu-a", "gpu-b"]\'; every node must '
                f"reach the others by these names"
            )
        )
    quantized = precision_note(ctx, fmt)
    lines += [comment(f"note: {n}") for n in (*notes, *([quantized] if quantized else []))]
    return "\n".join(lines)


# The checkpoint a quantized target needs. SGLang and vLLM read a pre-quantized
# checkpoint's method from its config (ModelOpt's hf_quant_config.json, a
# quantization_config) and want no --quantization flag with it: "If you use a pre-quantized
# model, do not add --quantization" (docs.sglang.io, advanced_features/quantization).
CHECKPOINT_KIND = {"fp8": "an FP8", "fp4": "an NVFP4"}


def precision_note(ctx: Context, fmt: str) -> str | None:
    """For an fp8 or fp4 target: the capture servers need the quantized checkpoint."""
    p = ctx.plan
    precision = p.target.precision
    kind = CHECKPOINT_KIND.get(precision)
    if kind is None:
        return None
    engine = ENGINE_NAMES.get(row_of(fmt).engine, row_of(fmt).engine)
    note = (
        f"target.precision = {precision}: the capture servers load target_model_path as it "
        f"is, so it must be {kind} export of {ctx.model.name} (e.g. NVIDIA ModelOpt's, with "
        f"its hf_quant_config.json); {engine} reads the quantization from the checkpoint, "
        f"no --quantization flag"
    )
    if p.launch.target_model_path is None:
        note += (
            f"; launch.target_model_path is unset, so this script loads the preset's "
            f"{ctx.path}: set it to the export"
        )
    return note


def colocated_lines(ctx: Context) -> list[str]:
    """The header's GPUs of a colocated plan: every one a target shard and a drafter rank."""
    p = ctx.plan
    nodes, per_node = colocated_nodes(ctx)
    total = nodes * per_node
    out = [
        f"{total} GPU(s) ({p.target.gpu}), colocated: each holds a target shard (tp "
        f"{p.target.tp}, {total // p.target.tp} target replica(s)) and a drafter rank, on "
        f"{nodes} node(s)"
    ]
    out += [
        f"  node {i} ({ctx.layout.hosts[i]}): GPUs [{devices(tuple(range(per_node)))}]"
        for i in range(nodes)
    ]
    return out


def split_lines(ctx: Context, ports: bool) -> list[str]:
    """The header's GPUs of a disaggregated plan: the target and drafter GPUs per node."""
    p, layout = ctx.plan, ctx.layout
    lines = [
        comment(
            f"{p.target.count} target GPU(s) ({p.target.gpu}, tp {p.target.tp}) + "
            f"{p.drafter.count} drafter GPU(s) ({p.drafter.gpu}) on "
            f"{layout.nodes} node(s)"
        ),
    ]
    for i, host in enumerate(layout.hosts):
        targets = [
            devices(r.devices) + (f":{r.port}" if ports else "") for r in layout.targets_on(i)
        ]
        drafters = devices(layout.drafters.get(i, ()))
        lines.append(
            comment(
                f"  node {i} ({host}): targets [{' '.join(targets) or '-'}], "
                f"drafters [{drafters or '-'}]"
            )
        )
    return lines


def colocated_nodes(ctx: Context) -> tuple[int, int]:
    """(nodes, GPUs on each) of a colocated plan: its target.count + drafter.count GPUs
    fill nodes from node 0, the same number on every node (torchrun's nproc_per_node) and
    whole target-TP islands on each (SpecForge's islands are contiguous ranks; HYBRID_SHARD
    keeps them inside one node: schema.py at SPECFORGE_PR_COMMIT)."""
    p = ctx.plan
    total, tp = p.target.count + p.drafter.count, p.target.tp
    nodes = ctx.layout.nodes
    if total % nodes:
        raise PlanError.field(
            "drafter.count",
            str(p.drafter.count),
            f"colocated, the {total} GPUs land on {nodes} nodes unevenly, and torchrun "
            f"needs the same number on each; choose a total that fills whole nodes",
        )
    per_node = total // nodes
    if per_node % tp:
        raise PlanError.field(
            "target.tp",
            str(tp),
            f"colocated, each of the {nodes} nodes holds {per_node} GPUs, which must be "
            f"whole target-TP islands of {tp}",
        )
    return nodes, per_node


def script(
    ctx: Context,
    title: str,
    notes: list[str],
    body: list[str],
    *,
    fmt: str,
    shebang: str = "#!/usr/bin/env bash",
    ports: bool = True,
    rented: tuple[int, int] | None = None,
    preflight: str = "",
) -> str:
    """The script: shebang, header, strict mode, then `preflight` (the renderer's
    preflight.script_block: each node checks itself before anything loads a model), then
    the body."""
    return (
        "\n\n".join(
            [
                shebang,
                header(ctx, title, notes, ports, fmt, rented),
                "set -euo pipefail",
                *([preflight] if preflight else []),
                *body,
            ]
        )
        + "\n"
    )


@dataclass(frozen=True, slots=True)
class LaunchScript:
    format: str
    text: str  # the whole script, ready to save and run
    files: dict[str, str]  # files the script writes (name -> content)
    notes: tuple[str, ...]
    layout: Layout


# --- launchers that start every node themselves (the shell each node runs: specforge.node_shell)

# The software every node of a SpecForge run needs, as its pins (versions.py, the line
# `pinned`; docs/launch.md): specforge 0.2.0 (which pins sglang 0.5.14 and torch),
# Mooncake's transfer engine built for torch's CUDA (mooncake_master and the store client)
# and SpecForge's spec-capture patch to the installed SGLang, applied by the script of a
# SpecForge checkout (the wheel carries neither patch nor script).
_PINNED = versions.upstream_line()
SPECFORGE_VERSION = _PINNED.pin("specforge").version
MOONCAKE_PACKAGE = _PINNED.pin("mooncake").package
MOONCAKE_VERSION = _PINNED.pin("mooncake").version
SPECFORGE_REPO = versions.SPECFORGE_REPO
SPECFORGE_PATCH_COMMIT = _PINNED.pin("capture_patch").version[:8]
# SpecForge's colocated-training commit (versions.py's `specforge_pr`: why that one).
SPECFORGE_PR_COMMIT = _PINNED.pin("specforge_pr").version
needs_specforge_pr = versions.needs_specforge_pr


def specforge_requirement(plan: Plan, line: versions.UpstreamLine = versions.PINNED) -> str:
    """The pip requirement of the SpecForge a launch of plan runs on `line`."""
    # The SpecForge stack's first pin is SpecForge itself (versions.FORMAT_ROLES).
    return versions.pins_for("specforge", line, plan)[0].requirement


def specforge_pr_notes(plan: Plan, line: versions.UpstreamLine = versions.PINNED) -> list[str]:
    """The header note of a run whose SpecForge is a git commit rather than the 0.2.0
    release: which commit, why, how to install it (none for a run the release runs)."""
    if needs_specforge_pr(plan, line):
        why = "colocated online training" if plan.workload.topology == "colocated" else "DFlash2"
        return [
            f"runs SpecForge {SPECFORGE_PR_COMMIT[:8]} of its colocated-training pull "
            f"requests #783/#784 ({why} is in no release; specforge {SPECFORGE_VERSION} "
            f"refuses it): on every node, pip install {q(specforge_requirement(plan, line))} "
            f"and apply that checkout's SGLang capture patch "
            f"(scripts/apply_sglang_spec_capture_patch.sh)"
        ]
    used = versions.effective_line(plan, line)
    pin = used.pin("specforge")
    if pin.is_wheel:
        return []
    return [
        f"runs SpecForge {pin.version[:8]} (upstream line {used.name}; no release carries "
        f"it): on every node, {stack_install(used)}, then apply that checkout's SGLang "
        f"capture patch (scripts/apply_sglang_spec_capture_patch.sh --target "
        f"{used.patch_target})"
    ]


def stack_install(line: versions.UpstreamLine) -> str:
    """The pip line installing the SpecForge stack of `line`: SpecForge, the SGLang its
    capture patch targets (a git SpecForge pins none itself: the 0.2.0 wheel pins
    sglang==0.5.14) and the Mooncake build for its torch's CUDA."""
    pins = [line.pin("specforge")]
    if not pins[0].is_wheel:
        pins.append(line.pin("sglang"))
    pins.append(line.pin("mooncake"))
    return "pip install " + " ".join(q(p.requirement) for p in pins)


def specforge_stack_setup(line: versions.UpstreamLine = versions.PINNED) -> str:
    """Shell installing the SpecForge stack of `line` on a fresh node (run again, it
    changes nothing)."""
    checkout = "$HOME/SpecForge"
    patch = line.pin("capture_patch").version
    # The pinned line's script targets v0.5.14 by default (a6b6b023); a newer one is told.
    target = "" if line is versions.PINNED else f" --target {q(line.patch_target)}"
    return "\n".join(
        [
            "set -euo pipefail",
            stack_install(line),
            f'[ -d "{checkout}" ] || git clone {q(SPECFORGE_REPO)} "{checkout}"',
            f'git -C "{checkout}" checkout --quiet {q(patch if target else patch[:8])}',
            f'bash "{checkout}/scripts/apply_sglang_spec_capture_patch.sh"{target}',
        ]
    )


# --- offline mode: capture to storage, then train ------------------------------------------

# Which formats write the offline run, and why the others cannot: their row's
# offline_refusal (inputs/formats.py).


# The formats whose online launch runs Mooncake over TCP (their row's mooncake_tcp):
# MOONCAKE_PROTOCOL=tcp and mooncake_protocol "tcp" across nodes; managed-local on one node
# takes the protocol's default, tcp (specforge 0.2.0 ManagedLocalMooncakeConfig.protocol).
# SpecForge's schema and trainer refuse receive_buffers "cuda" (workload.receive = device)
# without RDMA (PR #840).
def require_receive(plan: Plan, fmt: str) -> None:
    """Refuse a receive mode the launch's Mooncake protocol cannot run."""
    if plan.workload.receive == "device" and row_of(fmt).mooncake_tcp:
        raise PlanError.field(
            "workload.receive",
            "device",
            f"the {fmt} launch runs Mooncake over tcp (MOONCAKE_PROTOCOL=tcp) and device "
            f'receive (SpecForge\'s receive_buffers "cuda") needs RDMA; set '
            f'workload.receive = "pinned" or "host"',
        )


def hidden_states_dir(plan: Plan) -> str:
    """Where the capture writes and the trainer reads: under output_dir, which every node
    must share."""
    return f"{output_dir(plan)}/hidden_states"


def capture_done(plan: Plan) -> str:
    """The file the first capture node writes once every capture process has finished:
    trainer nodes wait for it (upstream writes no completion marker)."""
    return f"{output_dir(plan)}/hidden_states.done"


def offline_storage(
    ctx: Context, fmt: str, dtypes: tuple[str, ...], why: str, launch: str | None = None
) -> str:
    """The on-disk format this launch writes, checked against the plan's storage keys (so
    that the projection's storage.tb is what the capture writes); one note line with its
    bytes per token (physics/storage.py)."""
    from ..core.offline import stored
    from ..physics.storage import FORMATS, storage_format

    p, w = ctx.plan, ctx.plan.workload
    written, launch = FORMATS[fmt], launch or fmt
    if p.storage.format is not None and p.storage.format != written.name:
        raise PlanError.field(
            "storage.format",
            p.storage.format,
            f"the {launch} launch writes the {fmt} format; set storage.format = {fmt} or "
            f"remove the key",
        )
    if storage_format(p.storage.format, p.launch.format) is not written:
        raise PlanError.field(
            "storage.format",
            p.launch.format,
            f"the projection sizes the {storage_format(None, p.launch.format).name} format "
            f"but the {launch} launch writes the {fmt} format; set storage.format = {fmt}",
            shown="launch.format",
        )
    if w.storage_dtype not in dtypes:
        raise PlanError.field(
            "workload.storage_dtype",
            w.storage_dtype,
            f"the {launch} launch cannot store it: {why}; use {' or '.join(dtypes)}",
        )
    # The projection's own figure (core/offline.py stored: the family's final hidden
    # state, DFlash2's sixth tensor, included), for the format just checked to be this one.
    per_token = stored(p, ctx.model.hidden, len(ctx.layer_ids))[1]
    final_state = ctx.resolved.captured_tensors - len(ctx.layer_ids)
    return (
        f"offline: the capture writes {per_token:,.0f} bytes per token "
        f"({len(ctx.layer_ids)} captured + {max(written.extra_layers, final_state)} more "
        f"layer(s) x "
        f"{ctx.model.hidden:,} x {w.storage_dtype}, plus ids and masks: {written.source}) "
        f"to {hidden_states_dir(p)}, read by every epoch of the training"
    )
