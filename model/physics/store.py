"""The Mooncake store in host memory: the segment each capture server registers and the
local buffers, sized from the samples in flight at the LONGEST sample (a segment must hold
max-length samples, not average ones). The projection shows these sizes against each
node's host RAM; the sizes are physics/flow.py's, which the launch scripts write."""

from __future__ import annotations

import math
from dataclasses import dataclass
from typing import Any

from ..basics.arrays import Count, Number, any_of, maximum, minimum
from ..basics.units import BF16_BYTES
from . import flow
from .flow import GIB as GIB
from .flow import IN_FLIGHT_HIGH_DEFAULT as IN_FLIGHT_HIGH_DEFAULT
from .flow import IN_FLIGHT_LOW_DEFAULT as IN_FLIGHT_LOW_DEFAULT
from .flow import IN_FLIGHT_PER_SERVER as IN_FLIGHT_PER_SERVER
from .flow import segment_gib as segment_gib
from .flow import segment_gib_of as segment_gib_of
from .flow import specforge_segment_samples_of as specforge_segment_samples_of

# A trainer rank holds two batches of fetched features: the one training and the next.
BATCHES_PER_RANK = 2


def sample_feature_bytes(hidden: int, captured_layers: int, max_length: int) -> int:
    """Hidden states of one max-length sample as a capture server stores them: the
    captured layers plus the final hidden state, bf16."""
    return BF16_BYTES * max_length * (captured_layers + 1) * hidden


# The functions ending in _of take numbers or numpy arrays over splits alike (the search
# sizes every split at once; basics/arrays); the projection and the launches call them on
# one split (physics/flow.py's FlowControl), so both compute the same figures bit for bit,
# and one projection never loads numpy.


def segment_samples_of(
    fmt: str,
    batch_size: int,
    drafters: Count,
    servers: Count,
    cross_node: Any,
    ranks_per_node: Count,
) -> Number:
    """Samples one capture server's segment holds, as the launch of `fmt` sizes it
    (physics/flow.py): SpecForge's hold the producer's high watermark spread over the
    capture servers; speculators' every trainer rank's loader workers' batches."""
    if fmt == "speculators":
        workers = flow.speculators_workers_of(ranks_per_node, cross_node)
        return flow.speculators_segment_samples(workers, batch_size, drafters, servers) * 1.0
    high, _ = flow.watermarks_of(drafters, batch_size, servers, cross_node)
    return specforge_segment_samples_of(high, servers)


@dataclass(frozen=True, slots=True)
class StoreMemory:
    """The store's host memory per node of the plan's split."""

    format: str  # "specforge" or "speculators": whose sizing
    sample_bytes: int  # one max-length sample's features
    segment_gib: int  # per capture server
    local_buffer_gib: float  # per capture server's Mooncake client
    rank_gib: float  # per trainer rank: its client buffer and two batches
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


@dataclass(frozen=True, slots=True)
class StoreLoads:
    """The store's host memory of splits (arrays over splits): what each node holds."""

    segment_gib: Count  # per capture server
    local_buffer_gib: float  # per capture server's Mooncake client
    rank_gib: float  # per trainer rank: its client buffer and two batches
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
    cross = flow.cross_node_of(targets, drafters, gpus_per_node[0], same_gpu_type)
    ranks_per_node = minimum(drafters, gpus_per_node[0] if same_gpu_type else gpus_per_node[1])
    samples = segment_samples_of(fmt, batch_size, drafters, servers, cross, ranks_per_node)
    segment = segment_gib_of(sample_bytes, samples)
    buffer = flow.server_buffer_bytes(fmt, sample_bytes) / GIB
    trainer_buffer = flow.trainer_buffer_bytes(fmt, sample_bytes, batch_size) / GIB
    rank = trainer_buffer + BATCHES_PER_RANK * batch_size * sample_bytes / GIB
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
