"""The Mooncake store in host memory: the segment each capture server registers and the
local buffers, sized from the samples in flight at the LONGEST sample (a segment must hold
max-length samples, not average ones). The projection shows these sizes against each
node's host RAM, and the launch scripts write them (model/launch reads these functions)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..basics.units import BF16_BYTES

GIB = 1 << 30
# SpecForge's producer keeps up to runtime.producer_lease = 8 requests in flight per
# capture server; it pauses at runtime.in_flight_high_watermark = 256 unacknowledged
# samples and resumes at in_flight_low_watermark = 192 (specforge/config/schema.py,
# RuntimeConfig defaults).
IN_FLIGHT_PER_SERVER = 8
IN_FLIGHT_HIGH_DEFAULT = 256
IN_FLIGHT_LOW_DEFAULT = 192
# The local buffer SpecForge's launch gives each Mooncake client (MOONCAKE_LOCAL_BUFFER_SIZE).
MOONCAKE_LOCAL_BUFFER_BYTES = GIB
# speculators' launch_vllm.py --mooncake-local-buffer-gib default (pipelines.md 3.1); the
# launch leaves it at its default.
SPECULATORS_LOCAL_BUFFER_BYTES = 2 * GIB
# Batches of hidden states one trainer rank may have requested and not yet loaded: each of
# its num_workers = 12 data-loader workers waits on one generation at a time (TrainConfig
# defaults, speculators/train/config/schema.py).
BATCHES_IN_FLIGHT_PER_RANK = 12
# A segment holds its samples with a quarter to spare (allocator fragmentation).
SEGMENT_SPARE = 1.25
# A trainer rank holds two batches of fetched features: the one training and the next.
BATCHES_PER_RANK = 2


def sample_feature_bytes(hidden: int, captured_layers: int, max_length: int) -> int:
    """Hidden states of one max-length sample as a capture server stores them: the
    captured layers plus the final hidden state, bf16."""
    return BF16_BYTES * max_length * (captured_layers + 1) * hidden


def segment_gib(sample_bytes: int, samples: float) -> int:
    """A Mooncake global segment that holds `samples` max-length samples with a quarter
    to spare, in whole GiB."""
    return max(1, math.ceil(samples * sample_bytes * SEGMENT_SPARE / GIB))


def in_flight_watermarks(quantum: int) -> tuple[int, int]:
    """SpecForge's producer (high, low) in-flight watermarks for a consumer quantum (the
    samples of one global step). SpecForge refuses to start when either is below the
    quantum and wants low <= high. Above the defaults: resume at one window (low = quantum)
    and pause at two (high = 2 x quantum), so one window is captured while the trainer
    takes the other."""
    if quantum <= IN_FLIGHT_LOW_DEFAULT:
        return IN_FLIGHT_HIGH_DEFAULT, IN_FLIGHT_LOW_DEFAULT
    return 2 * quantum, quantum


def specforge_segment_samples(high: int, servers: int) -> int:
    """Samples one SpecForge capture server's segment holds: the producer keeps at most
    the high watermark unacknowledged, spread over the servers, and a lease per server."""
    return max(IN_FLIGHT_PER_SERVER, -(-high // servers))


def speculators_segment_samples(batch_size: int, drafters: int, engines: int) -> float:
    """Samples one vLLM engine's segment holds: what every trainer rank may have in flight,
    spread over the data-parallel engines."""
    return BATCHES_IN_FLIGHT_PER_RANK * batch_size * drafters / engines


@dataclass(frozen=True, slots=True)
class StoreMemory:
    """The store's host memory per node of the plan's split."""

    format: str  # "specforge" or "speculators": whose sizing
    sample_bytes: int  # one max-length sample's features
    segment_gib: int  # per capture server
    local_buffer_gib: float  # per Mooncake client (server or trainer rank)
    rank_gib: float  # per trainer rank: its buffer and two batches
    node_gib: float  # the busiest node
    node_servers: int
    node_ranks: int
    host_memory_gb: float | None  # of that node's type; None: unknown
    fits: bool | None  # every node within its host RAM; None: unknown

    def to_json(self) -> dict[str, Any]:
        return {
            "format": self.format,
            "sample_bytes": self.sample_bytes,
            "segment_gib_per_server": self.segment_gib,
            "local_buffer_gib": self.local_buffer_gib,
            "rank_gib": self.rank_gib,
            "busiest_node_gib": self.node_gib,
            "busiest_node_servers": self.node_servers,
            "busiest_node_ranks": self.node_ranks,
            "host_memory_gb": self.host_memory_gb,
            "fits": self.fits,
        }


def nodes_of_split(
    targets: int,
    drafters: int,
    tp: int,
    target_per_node: int,
    drafter_per_node: int,
    same_gpu_type: bool,
) -> list[tuple[int, int, str]]:
    """(capture servers, trainer ranks, role of the node's GPU type) of the nodes whose
    load can be the largest, packed as pipeline.placement packs them: targets fill nodes
    from the first and, with one GPU type, drafters follow on the same nodes."""
    if not same_gpu_type:
        return [
            (min(targets, target_per_node) // tp, 0, "target"),
            (0, min(drafters, drafter_per_node), "drafter"),
        ]
    per, total = target_per_node, targets + drafters
    out = []
    for node in sorted({0, min(targets // per, (total - 1) // per), (total - 1) // per}):
        lo, hi = node * per, min((node + 1) * per, total)
        on_node_targets = max(0, min(hi, targets) - lo)
        out.append((on_node_targets // tp, max(0, hi - max(lo, targets)), "target"))
    return out


def store_memory(
    fmt: str,
    sample_bytes: int,
    segment: int,
    batch_size: int,
    nodes: list[tuple[int, int, str]],
    host_memory_gb: dict[str, float | None],
) -> StoreMemory:
    """The busiest node's store memory, and whether every node's fits its host RAM."""
    buffer = (
        SPECULATORS_LOCAL_BUFFER_BYTES if fmt == "speculators" else MOONCAKE_LOCAL_BUFFER_BYTES
    ) / GIB
    rank = buffer + BATCHES_PER_RANK * batch_size * sample_bytes / GIB
    loads = [
        (servers * (segment + buffer) + ranks * rank, servers, ranks, role)
        for servers, ranks, role in nodes
    ]
    over = [
        load
        for load in loads
        if (host := host_memory_gb[load[3]]) is not None and load[0] * GIB / 1e9 > host
    ]
    known = any(host_memory_gb[load[3]] is not None for load in loads)
    # The node shown: the busiest of those over their RAM, else the busiest.
    gib, servers, ranks, role = max(over or loads)
    return StoreMemory(
        fmt,
        sample_bytes,
        segment,
        buffer,
        rank,
        gib,
        servers,
        ranks,
        host_memory_gb[role],
        not over if known else None,
    )
