"""The Mooncake store in host memory: the segment each capture server registers and the
local buffers, sized from the samples in flight at the LONGEST sample (a segment must hold
max-length samples, not average ones). The projection shows these sizes against each
node's host RAM, and the launch scripts write them (model/launch reads these functions)."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..basics.arrays import Count, Number, any_of, ceil_int, maximum, minimum, where
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


# The functions ending in _of take numbers or numpy arrays over splits alike (the search
# sizes every split at once; basics/arrays); their scalar forms below, which the
# projection and the launches call, are them on one split, so both compute the same
# figures bit for bit, and one projection never loads numpy.


def segment_gib_of(sample_bytes: int, samples: Number) -> Count:
    """segment_gib of each split's `samples`."""
    return maximum(1, ceil_int(samples * sample_bytes * SEGMENT_SPARE / GIB))


def segment_gib(sample_bytes: int, samples: float) -> int:
    """A Mooncake global segment that holds `samples` max-length samples with a quarter
    to spare, in whole GiB."""
    return int(segment_gib_of(sample_bytes, samples))


def in_flight_watermarks_of(quantum: Count) -> tuple[Count, Count]:
    """in_flight_watermarks of each split's quantum."""
    above = quantum > IN_FLIGHT_LOW_DEFAULT
    return (
        where(above, 2 * quantum, IN_FLIGHT_HIGH_DEFAULT),
        where(above, quantum, IN_FLIGHT_LOW_DEFAULT),
    )


def in_flight_watermarks(quantum: int) -> tuple[int, int]:
    """SpecForge's producer (high, low) in-flight watermarks for a consumer quantum (the
    samples of one global step). SpecForge refuses to start when either is below the
    quantum and wants low <= high. Above the defaults: resume at one window (low = quantum)
    and pause at two (high = 2 x quantum), so one window is captured while the trainer
    takes the other."""
    high, low = in_flight_watermarks_of(quantum)
    return int(high), int(low)


def specforge_segment_samples_of(high: Count, servers: Count) -> Count:
    """specforge_segment_samples of each split."""
    return maximum(IN_FLIGHT_PER_SERVER, -(-high // servers))


def specforge_segment_samples(high: int, servers: int) -> int:
    """Samples one SpecForge capture server's segment holds: the producer keeps at most
    the high watermark unacknowledged, spread over the servers, and a lease per server."""
    return int(specforge_segment_samples_of(high, servers))


def speculators_segment_samples(batch_size: int, drafters: Any, engines: Any) -> Any:
    """Samples one vLLM engine's segment holds: what every trainer rank may have in flight,
    spread over the data-parallel engines (numbers, or arrays over splits)."""
    return BATCHES_IN_FLIGHT_PER_RANK * batch_size * drafters / engines


def segment_samples_of(fmt: str, batch_size: int, drafters: Count, servers: Count) -> Number:
    """Samples one capture server's segment holds, as the launch of `fmt` sizes it:
    SpecForge's hold the producer's high watermark spread over the capture servers;
    speculators' every trainer rank's batches in flight."""
    if fmt == "speculators":
        return speculators_segment_samples(batch_size, drafters, servers) * 1.0
    high, _ = in_flight_watermarks_of(drafters * batch_size)
    return specforge_segment_samples_of(high, servers)


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


def nodes_of_split_of(
    targets: Count,
    drafters: Count,
    tp: int,
    target_per_node: int,
    drafter_per_node: int,
    same_gpu_type: bool,
) -> list[tuple[Count, Count, str]]:
    """(capture servers, trainer ranks, role of the node's GPU type) of the nodes whose
    load can be the largest, each an array over splits, packed as pipeline.placement packs
    them: targets fill nodes from the first and, with one GPU type, drafters follow on the
    same nodes (the first node, the one where the drafters start, the one after it, the
    last; a node may appear twice). Every node between the first and the drafters' start
    is full of targets as the first is, and every node between the one after the start and
    the last is full of drafters as that one is: 4 targets + 21 drafters on 8-GPU nodes
    put 8 trainer ranks on nodes 1 and 2, more than the start's 4 or the last's 1."""
    if not same_gpu_type:
        return [
            (minimum(targets, target_per_node) // tp, 0 * drafters, "target"),
            (0 * targets, minimum(drafters, drafter_per_node), "drafter"),
        ]
    per, total = target_per_node, targets + drafters
    last = (total - 1) // per
    out = []
    start = minimum(targets // per, last)
    for node in (0 * total, start, minimum(start + 1, last), last):
        lo, hi = node * per, minimum((node + 1) * per, total)
        on_node_targets = maximum(0, minimum(hi, targets) - lo)
        ranks = maximum(0, hi - maximum(lo, targets))
        out.append((on_node_targets // tp, ranks, "target"))
    return out


def local_buffer_gib(fmt: str) -> float:
    """The local buffer of one Mooncake client (capture server or trainer rank), GiB."""
    return (
        SPECULATORS_LOCAL_BUFFER_BYTES if fmt == "speculators" else MOONCAKE_LOCAL_BUFFER_BYTES
    ) / GIB


@dataclass(frozen=True, slots=True)
class StoreLoads:
    """The store's host memory of splits (arrays over splits): what each node holds."""

    segment_gib: Count  # per capture server
    local_buffer_gib: float  # per Mooncake client
    rank_gib: float  # per trainer rank: its buffer and two batches
    nodes: list[tuple[Number, Count, Count, str]]  # (GiB, servers, ranks, role)

    def node_over(self, host_memory_gb: dict[str, float | None]) -> list[Any]:
        """By node: the splits where it is over its host RAM (never, of unknown RAM)."""
        return [
            gib < -math.inf if (host := host_memory_gb[role]) is None else gib * GIB / 1e9 > host
            for gib, _, _, role in self.nodes
        ]

    def over(self, host_memory_gb: dict[str, float | None]) -> Any:
        """Splits with a node over its host RAM: the store does not fit (the projection's
        store-memory error)."""
        return any_of(self.node_over(host_memory_gb))


def store_loads_of(
    fmt: str,
    sample_bytes: int,
    batch_size: int,
    targets: Count,
    drafters: Count,
    tp: int,
    gpus_per_node: tuple[int, int],
    same_gpu_type: bool,
) -> StoreLoads:
    """The store's host memory of each split (targets, drafters) of the launch `fmt`:
    every capture server's segment and buffer, every trainer rank's buffer and batches,
    on the nodes whose load can be the largest."""
    servers = targets // tp
    segment = segment_gib_of(sample_bytes, segment_samples_of(fmt, batch_size, drafters, servers))
    buffer = local_buffer_gib(fmt)
    rank = buffer + BATCHES_PER_RANK * batch_size * sample_bytes / GIB
    nodes = [
        (on_servers * (segment + buffer) + on_ranks * rank, on_servers, on_ranks, role)
        for on_servers, on_ranks, role in nodes_of_split_of(
            targets, drafters, tp, *gpus_per_node, same_gpu_type
        )
    ]
    return StoreLoads(segment, buffer, rank, nodes)


def store_memory(
    fmt: str,
    sample_bytes: int,
    batch_size: int,
    split: tuple[int, int, int],
    gpus_per_node: tuple[int, int],
    same_gpu_type: bool,
    host_memory_gb: dict[str, float | None],
) -> StoreMemory:
    """The busiest node's store memory of one split (targets, drafters, tp), and whether
    every node's fits its host RAM (store_loads_of on that split)."""
    targets, drafters, tp = split
    loads = store_loads_of(
        fmt,
        sample_bytes,
        batch_size,
        targets,
        drafters,
        tp,
        gpus_per_node,
        same_gpu_type,
    )
    rows = [
        (float(gib), int(servers), int(ranks), role) for gib, servers, ranks, role in loads.nodes
    ]
    over = [row for row, out in zip(rows, loads.node_over(host_memory_gb), strict=True) if out]
    known = any(host_memory_gb[row[3]] is not None for row in rows)
    # The node shown: the busiest of those over their RAM, else the busiest.
    gib, servers, ranks, role = max(over or rows)
    return StoreMemory(
        fmt,
        sample_bytes,
        int(loads.segment_gib),
        loads.local_buffer_gib,
        loads.rank_gib,
        gib,
        servers,
        ranks,
        host_memory_gb[role],
        not over if known else None,
    )
