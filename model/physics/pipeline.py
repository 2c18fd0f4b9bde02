"""The pipeline: throughput of a target/drafter split from per-GPU rates.

`flow(inputs, targets, drafters)` is the one function projection, ranges, balance and
search call. Counts may be ints or numpy integer arrays (any broadcastable shapes): every
step is closed-form arithmetic, so a search evaluates millions of splits in one call.
Everything that does not depend on the counts is in `PipelineInputs`, computed once per
(GPU types, workload) by `pipeline_inputs`.

The data path (docs/model.md):
- a target replica (tp GPUs) produces `replica_tokens_per_s`;
- its hidden states are staged through host memory (device -> host copy, the transfer
  engine, host -> device copy on the drafter), with a per-sample cost on each side, and
  cross the network when the drafter sits on another node;
- each drafter GPU trains at `drafter_tokens_per_s` per step of compute, plus the
  gradient all-reduce that the backward pass does not hide.
Throughput is the smallest of the three capacities.
"""

from __future__ import annotations

import math
from dataclasses import dataclass, replace
from typing import Any

from ..basics.arrays import Count, Number, maximum, minimum, where
from ..basics.units import BF16_BYTES
from ..inputs.hardware import Gpu
from . import fitting

# The gradient all-reduce runs bucketed under the backward pass (PyTorch DDP and FSDP
# both overlap communication with backward: Li et al., "PyTorch Distributed", VLDB 2020).
# Backward is about two thirds of a training step's FLOPs (2 of 3 passes), so up to that
# share of the step hides communication.
BACKWARD_SHARE_OF_STEP = 2 / 3

# Closed forms over a number or an array of splits alike (basics/arrays).
_minimum, _maximum, _where = minimum, maximum, where


def _ceil_div(a: Count, b: int) -> Count:
    return -(-a // b)


@dataclass(frozen=True, slots=True)
class HiddenStatePath:
    """How captured hidden states reach the drafters, per byte and per sample."""

    bytes_per_token: float
    sample_tokens: float
    sender_bytes_per_s: float  # per target replica
    receiver_bytes_per_s: float  # per drafter GPU
    sender_s_per_sample: float  # fixed cost per sample on the producing side
    receiver_s_per_sample: float  # fixed cost per sample on the consuming side
    receive_blocks_training: bool  # the drafter waits for its fetch (not overlapped)
    target_network_bytes_per_s: float  # per target GPU, across nodes
    drafter_network_bytes_per_s: float  # per drafter GPU, across nodes
    description: str

    def receive_s_per_token(self) -> float:
        return (
            self.bytes_per_token / self.receiver_bytes_per_s
            + self.receiver_s_per_sample / self.sample_tokens
        )


@dataclass(frozen=True, slots=True)
class PipelineInputs:
    """What the pipeline needs that does not depend on the counts."""

    tp: int
    replica_tokens_per_s: float  # one target replica, TP communication included
    drafter_tokens_per_s: float  # one drafter GPU, compute only
    drafter_step_tokens: float  # dataset tokens per drafter GPU per step
    grad_bytes: float  # gradient all-reduce payload per step
    drafter_link_bytes_per_s: float  # all-reduce bandwidth inside a fast domain, per link
    drafter_mesh_links: int  # links one all-reduce can drive (1 unless a mesh)
    drafter_node_network_bytes_per_s: float  # one node's network bandwidth
    drafter_domain_gpus: int  # GPUs reachable over the GPU link (node or NVL rack)
    target_gpus_per_node: int
    drafter_gpus_per_node: int
    same_gpu_type: bool  # one pool of nodes, drafters after the targets
    hidden: HiddenStatePath

    def with_rates(
        self, replica_tokens_per_s: float, drafter_tokens_per_s: float
    ) -> PipelineInputs:
        return replace(
            self,
            replica_tokens_per_s=replica_tokens_per_s,
            drafter_tokens_per_s=drafter_tokens_per_s,
        )


@dataclass(frozen=True, slots=True)
class Flow:
    """Throughput of one split (or of arrays of splits), and what sets it."""

    tokens_per_s: Number
    target_tokens_per_s: Number  # target capacity
    drafter_tokens_per_s: Number  # drafter capacity, all-reduce included
    link_tokens_per_s: Number  # hidden-state path capacity
    drafter_scaling: Number  # data-parallel efficiency of the drafters
    crossing_share: Number  # share of hidden-state traffic leaving its node
    nodes: Count
    drafters_span_nodes: Any
    # Colocated (physics/colocated.py): the share of each GPU's time the target forward
    # takes (the drafter step the rest); None for a disaggregated split.
    target_share: Any = None


def placement(
    inputs: PipelineInputs, targets: Count, drafters: Count
) -> tuple[Number, Count, Count, Any]:
    """Targets fill nodes from the first; drafters follow on the same nodes when both roles
    use one GPU type, else on nodes of their own. TP groups never straddle a node (tp
    divides the node, resolve.check_tp), so GPU slots pack without gaps.
    Returns (crossing share, nodes, drafter nodes, drafters span nodes)."""
    pt, pd = inputs.target_gpus_per_node, inputs.drafter_gpus_per_node
    if inputs.same_gpu_type:
        first = targets % pt  # targets on the shared node
        shared_drafters = _where(first > 0, _minimum(drafters, pt - first), 0)
        local = first * shared_drafters / (targets * drafters)
        nodes = _ceil_div(targets + drafters, pt)
        d_first, d_last = targets // pt, (targets + drafters - 1) // pt
        drafter_nodes = d_last - d_first + 1
    else:
        local = 0.0 * targets
        nodes = _ceil_div(targets, pt) + _ceil_div(drafters, pd)
        drafter_nodes = _ceil_div(drafters, pd)
    return 1.0 - local, nodes, drafter_nodes, drafter_nodes > 1


def mesh_links(gpu: Gpu, ranks: Count) -> Count:
    """Links an all-reduce over `ranks` GPUs of one node drives at once: one on a switched
    fabric (NVLink switch, PCIe), n - 1 on a point-to-point mesh (AMD Infinity Fabric)."""
    if gpu.link.kind != "infinity-fabric":
        return 1
    return _maximum(1, _minimum(ranks, gpu.gpus_per_node) - 1)


def allreduce_seconds(ranks: Count, payload_bytes: float, bytes_per_s: Number) -> Number:
    """Ring all-reduce: each rank sends and receives 2 (n - 1) / n of the payload."""
    return 2 * (ranks - 1) / ranks * payload_bytes / bytes_per_s


def splits(inputs: PipelineInputs, total: int, tp: int) -> tuple[Any, Flow] | None:
    """Every split of `total` GPUs of one type into whole TP replicas of targets and at
    least one drafter, in one vectorised call: (the target counts, their flow); None when
    no split has room for a replica and a drafter. Balance, the split curve and the
    billed-idle note all sweep with this."""
    import numpy as np  # the sweeps need it; a single projection does not

    targets = np.arange(tp, total, tp)
    if targets.size == 0:
        return None
    return targets, flow(inputs, targets, total - targets)


def drafter_capacity(
    inputs: PipelineInputs, drafters: Count, drafter_nodes: Count, serial_s_per_token: float
) -> tuple[Number, Number]:
    """The drafters' capacity and their data-parallel scaling: compute per step (plus a
    fetch they wait for, `serial_s_per_token`), and the all-reduce time the backward pass
    cannot hide. Inside one fast domain the ring runs over the GPU link; across nodes the
    reduction is hierarchical and the inter-node ring runs over each node's network."""
    drafter_rate = 1.0 / (1.0 / inputs.drafter_tokens_per_s + serial_s_per_token)
    step_s = inputs.drafter_step_tokens / drafter_rate
    inside = allreduce_seconds(
        drafters,
        inputs.grad_bytes,
        inputs.drafter_link_bytes_per_s
        * _minimum(_maximum(drafters - 1, 1), inputs.drafter_mesh_links),
    )
    across = allreduce_seconds(
        drafter_nodes, inputs.grad_bytes, inputs.drafter_node_network_bytes_per_s
    )
    spans_domain = drafter_nodes * inputs.drafter_gpus_per_node > inputs.drafter_domain_gpus
    comm_s = inside + _where(spans_domain, across, 0.0)
    exposed_s = _maximum(0.0, comm_s - BACKWARD_SHARE_OF_STEP * step_s)
    scaling = step_s / (step_s + exposed_s)
    return drafters * drafter_rate * scaling, scaling


def best_split(inputs: PipelineInputs, total: int, tp: int) -> tuple[int, float] | None:
    """The split of `total` GPUs of one type with the highest throughput (the fewest
    drafters on a tie): (its targets, its tokens/s); None when no split has room for a
    replica and a drafter. Balance and the topology verdict pick with this: one split at
    a time (a projection's verdict loads no numpy; a plan has at most a few hundred)."""
    rates = {t: float(flow(inputs, t, total - t).tokens_per_s) for t in range(tp, total, tp)}
    if not rates:
        return None
    best = max(rates.values())
    targets = max(t for t, rate in rates.items() if rate >= best * (1 - 1e-9))
    return targets, rates[targets]


def flow(inputs: PipelineInputs, targets: Count, drafters: Count) -> Flow:
    """Throughput of `targets` target GPUs and `drafters` drafter GPUs."""
    crossing, nodes, drafter_nodes, span = placement(inputs, targets, drafters)
    replicas = targets // inputs.tp
    target_cap = replicas * inputs.replica_tokens_per_s

    # A fetch the drafter waits for adds to its time per token (SpecForge's trainer waited
    # about 40 ms per two-sample step for its Mooncake get, docs/model.md).
    h = inputs.hidden
    serial_s_per_token = h.receive_s_per_token() if h.receive_blocks_training else 0.0
    drafter_cap, scaling = drafter_capacity(inputs, drafters, drafter_nodes, serial_s_per_token)

    send = replicas / (
        h.bytes_per_token / h.sender_bytes_per_s + h.sender_s_per_sample / h.sample_tokens
    )
    # A blocking fetch is already in the drafters' capacity; otherwise it is its own limit.
    receive = math.inf if h.receive_blocks_training else drafters / h.receive_s_per_token()
    network = _minimum(
        targets * h.target_network_bytes_per_s, drafters * h.drafter_network_bytes_per_s
    )
    crossing_cap = _where(
        crossing > 0, network / _maximum(crossing, 1e-12) / h.bytes_per_token, math.inf
    )
    link_cap = _minimum(_minimum(send, receive), crossing_cap)
    tokens = _minimum(_minimum(target_cap, drafter_cap), link_cap)
    return Flow(tokens, target_cap, drafter_cap, link_cap, scaling, crossing, nodes, span)


# A tie within float rounding (3 x 4,933.3 against a drafter held at its measured
# 14,799.9) is a tie: the roles' order decides it, not the last bit of a product.
TIE_RELATIVE = 1e-12


def below(a: Number, b: Number) -> Any:
    """Whether a is below b by more than float rounding (numbers or arrays alike)."""
    return a * (1 + TIE_RELATIVE) < b


# A colocated flow's bound: each GPU's time, shared between the target forward and the
# drafter step (Flow.target_share).
TIME_SHARED = "time-shared"


def bottleneck(f: Flow) -> str:
    """The role whose capacity sets a scalar flow's throughput (first on a tie);
    "time-shared" for a colocated flow (every GPU runs both roles: none waits on another)."""
    if f.target_share is not None:
        return TIME_SHARED
    caps = (
        ("target", f.target_tokens_per_s),
        ("drafter", f.drafter_tokens_per_s),
        ("link", f.link_tokens_per_s),
    )
    least = min(float(c) for _, c in caps)
    return next(role for role, c in caps if not below(least, float(c)))


# --- building the inputs ------------------------------------------------------------------

# Mooncake transport (SpecForge disaggregated; speculators' Mooncake connector works the
# same way): the capture server copies the states to host memory and one writer thread
# puts them into the store; the trainer gets them into host memory and copies them to its
# device. SpecForge's benchmark of this path (docs/benchmarks/domino-disaggregated-
# performance.md, 8 x H200, Qwen3-8B, 22.5 MB of states per 550-token sample):
# - the capture sink sustained 44-57 samples/s per server: 1.0-1.3 GB/s (fitted: the
#   midpoint);
CAPTURE_SINK_BYTES_PER_S: float = fitting.value("CAPTURE_SINK_BYTES_PER_S")
# - a trainer's get took about 20 ms per 2-sample batch and 90 ms per 8-sample batch
#   (45 MB and 180 MB: 2.0-2.25 GB/s; fitted by least squares), and the trainer waited on
#   it (14 % data wait).
TRAINER_FETCH_BYTES_PER_S: float = fitting.value("TRAINER_FETCH_BYTES_PER_S")
# Cross-node transfers reach this share of the NIC rate (fitted on Mooncake's vLLM
# benchmark: 142 of about 200 GB/s on 8 RoCE NICs).
NETWORK_EFFICIENCY: float = fitting.value("NETWORK_EFFICIENCY")

# How a trainer receives its states from the Mooncake store (workload.receive; SpecForge's
# deployment.disaggregated.receive_buffers, sgl-project/SpecForge specforge/config/schema.py,
# pooled receive buffers from PR #840, pinned the default since #858, September 2026):
# - host: each tensor lands in a fresh pageable host tensor and is copied to the device on
#   the training stream, so the trainer waits for it (SpecForge 0.2.0 and main a6b6b023,
#   2026-08-08; speculators' Mooncake backend gets tensors into host memory too). The rate
#   is the fitted TRAINER_FETCH_BYTES_PER_S (upstream's recipe, PR #869, measured host
#   receive capping a B300 trainer rank at about 1.5 GB/s);
# - pinned ("pinned"): a pooled pinned host buffer, copied to the device on a side stream,
#   overlapped with training: no wait, at most the drafter's host link;
# - device ("cuda", Mooncake over RDMA only): the transfer engine writes into GPU memory,
#   overlapped, no host hop: at most the drafter's NIC. Over RDMA the capture server
#   publishes from its GPU too (#841; capture_servers[].gpu_put, auto when RDMA), so the
#   host-staged capture sink gives way to the target's NIC.
# A GPU-direct Mooncake store (SpecForge #775) is still in review (December 2026): not a
# mode yet. The modes are the plan's (inputs/plan.py Receive); their names as shown:
RECEIVE_NAMES: dict[str, str] = {
    "host": "host receive",
    "pinned": "pinned receive",
    "device": "device receive",
}
# How the states reach the store in each mode: staged through host memory, or over RDMA
# from the capture server's GPU (device).
_STAGING: dict[str, str] = {"host": "host-staged", "pinned": "host-staged", "device": "RDMA"}


def path_name(transport: str, receive: str, short: bool = False) -> str:
    """How a plan's hidden states travel, as the report, the app and the launch scripts say
    it (`short`: the link line's form)."""
    if transport == "direct":
        return "device to device"
    staging, name = _STAGING[receive], RECEIVE_NAMES[receive]
    if short:
        return f"Mooncake store ({staging}), {name}"
    if receive == "device":
        return f"through a Mooncake store over RDMA, {name}"
    return f"{staging} through a Mooncake store, {name}"


def hidden_state_path(
    target_gpu: Gpu,
    drafter_gpu: Gpu,
    bytes_per_token: float,
    sample_tokens: float,
    transport: str,
    receive: str = "host",
) -> HiddenStatePath:
    """The path of one plan's hidden states. `direct`: device to device (an in-process
    pipeline on one node uses PCIe or NVLink peer copies; across nodes the network), no
    store. `mooncake`: host-staged through the store, with SpecForge's measured ceilings,
    received as `receive` says (RECEIVE_NAMES; only the Mooncake path has one)."""
    net_t = target_gpu.network_bytes_per_s * NETWORK_EFFICIENCY
    net_d = drafter_gpu.network_bytes_per_s * NETWORK_EFFICIENCY
    if transport == "direct":
        return HiddenStatePath(
            bytes_per_token=bytes_per_token,
            sample_tokens=sample_tokens,
            sender_bytes_per_s=target_gpu.link_bytes_per_s
            * mesh_links(target_gpu, target_gpu.gpus_per_node),
            receiver_bytes_per_s=drafter_gpu.link_bytes_per_s
            * mesh_links(drafter_gpu, drafter_gpu.gpus_per_node),
            sender_s_per_sample=0.0,
            receiver_s_per_sample=0.0,
            receive_blocks_training=False,
            target_network_bytes_per_s=net_t,
            drafter_network_bytes_per_s=net_d,
            description=path_name(transport, receive),
        )
    receiver = {
        "host": min(drafter_gpu.host_link_bytes_per_s, TRAINER_FETCH_BYTES_PER_S),
        "pinned": drafter_gpu.host_link_bytes_per_s,
        "device": net_d,
    }[receive]
    sink = min(target_gpu.host_link_bytes_per_s, CAPTURE_SINK_BYTES_PER_S)
    return HiddenStatePath(
        bytes_per_token=bytes_per_token,
        sample_tokens=sample_tokens,
        sender_bytes_per_s=net_t if receive == "device" else sink,
        receiver_bytes_per_s=receiver,
        sender_s_per_sample=0.0,
        receiver_s_per_sample=0.0,
        receive_blocks_training=receive == "host",
        target_network_bytes_per_s=net_t,
        drafter_network_bytes_per_s=net_d,
        description=path_name(transport, receive),
    )


def tp_efficiency(
    gpu: Gpu, tp: int, hidden: int, layers_run: int, gpu_tokens_per_s: float
) -> float:
    """Share of a TP group's time spent computing: two all-reduces of the hidden state per
    layer per token over the GPU link (Megatron-style TP), not overlapped."""
    comm_s = (
        allreduce_seconds(tp, BF16_BYTES * hidden, gpu.link_bytes_per_s * mesh_links(gpu, tp))
        * 2
        * layers_run
    )
    compute_s = 1 / (gpu_tokens_per_s * tp)
    return float(compute_s / (compute_s + comm_s))


def pipeline_inputs(
    target_gpu: Gpu,
    drafter_gpu: Gpu,
    tp: int,
    target_tokens_per_s: float,
    drafter_tokens_per_s: float,
    *,
    hidden: int,
    layers_run: int,
    trainable_params: int,
    batch_size: int,
    sample_tokens: float,
    hidden_state_bytes_per_token: float,
    transport: str = "mooncake",
    receive: str = "host",
) -> PipelineInputs:
    """The pipeline's inputs from per-GPU rates (one GPU of each role). `receive`: the
    Mooncake path's receive mode; "host" unless told, as the public runs the evidence
    holds received (the June benchmark, the specforge 0.2.0 wheel)."""
    tp_eff = tp_efficiency(target_gpu, tp, hidden, layers_run, target_tokens_per_s)
    return PipelineInputs(
        tp=tp,
        replica_tokens_per_s=target_tokens_per_s * tp * tp_eff,
        drafter_tokens_per_s=drafter_tokens_per_s,
        drafter_step_tokens=batch_size * sample_tokens,
        grad_bytes=BF16_BYTES * trainable_params,
        drafter_link_bytes_per_s=drafter_gpu.link_bytes_per_s,
        drafter_mesh_links=mesh_links(drafter_gpu, drafter_gpu.gpus_per_node),
        drafter_node_network_bytes_per_s=(
            drafter_gpu.network_bytes_per_s * drafter_gpu.gpus_per_node
        ),
        drafter_domain_gpus=drafter_gpu.fast_domain_gpus,
        target_gpus_per_node=target_gpu.gpus_per_node,
        drafter_gpus_per_node=drafter_gpu.gpus_per_node,
        same_gpu_type=target_gpu.key == drafter_gpu.key,
        hidden=hidden_state_path(
            target_gpu,
            drafter_gpu,
            hidden_state_bytes_per_token,
            sample_tokens,
            transport,
            receive,
        ),
    )
