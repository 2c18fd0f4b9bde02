"""Flow control of the Mooncake data plane, from upstream's measurements: the producer's
in-flight watermarks, the master's read lease, the TCP bind address, the trainer's loader
workers (and so its Mooncake clients), and the segment and buffer sizes those imply. The
projection's store memory (physics/store.py) and every launch script read these same
functions, so what the plan shows is what the scripts write.

The rules and their sources (nothing here is fetched at run time; docs/launch.md repeats
them with the measurements):
- SpecForge's DFlash2 recipe, docs/recipes/qwen3.8-27b-dflash2-disaggregated.md (PR #869,
  merged; text at 2f1961cda3cfb37709071a603fd033a3abd01778, measured September 2026 on
  8 and 2 x 8 B300/H200 nodes), "Flow control and Mooncake settings".
- speculators' Mooncake smoke test, tests/e2e/hs_connectors/test_mooncake_online_training.py
  (PR #1001, 2026-08-18), and the review of PR #1046 (2026-08-26) that counted the clients.

The functions ending in _of take numbers or numpy arrays over splits alike (the search
sizes every split at once; basics/arrays)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from ..basics.arrays import Count, Number, ceil_int, maximum, minimum, where

GIB = 1 << 30
RECIPE = "SpecForge DFlash2 recipe (docs/recipes/qwen3.8-27b-dflash2-disaggregated.md, PR #869)"

# --- the recipe's measured configuration ----------------------------------------------------
# Trainer batch 2 x accumulation 4 per rank: an optimizer step (the consumer's quantum) takes
# 32 samples on the one-node DP4 recipe and 64 on the two-node DP8 one.
RECIPE_BATCH = 2
RECIPE_ACCUMULATION = 4
RECIPE_ONE_NODE_QUANTUM = 4 * RECIPE_BATCH * RECIPE_ACCUMULATION  # DP4
RECIPE_CROSS_NODE_QUANTUM = 8 * RECIPE_BATCH * RECIPE_ACCUMULATION  # DP8 on 8 + 8
# One node (B300 4 + 4): 96/48 (3 x the quantum) left the producer paused 64 % of the time,
# 7.6 samples/s; 192/96 (6 x) made 11.6; 12 x added only backlog latency.
RECIPE_ONE_NODE_WATERMARKS = (192, 96)
# Two nodes (8 servers + DP8): 192/96 made 14.0 samples/s, 512/256 made 18.0.
RECIPE_CROSS_NODE_WATERMARKS = (512, 256)
# The read lease: the 500 ms schema default (managed_local.mooncake.default_kv_lease_ttl_ms
# in SpecForge after 0.2.0) expired under eight-rank cross-node reads (-707 LEASE_EXPIRED);
# 3 s still expired, 10 s produced no retries in 150-step runs.
RECIPE_LEASE_MS = 10_000
# One max-length recipe sample: six BF16 tensors of 8192 tokens x 5120 ("500 MB").
RECIPE_SAMPLE_BYTES = 2 * 8192 * 6 * 5120
# MOONCAKE_LOCAL_BUFFER_SIZE 4 GiB per capture server for those samples, and the trainer's
# client_buffer_size 2 GiB for batches of 2 of them.
RECIPE_SERVER_BUFFER_BYTES = 4 * GIB
RECIPE_CLIENT_BUFFER_BYTES = 2 * GIB
# data.dataloader_num_workers 8: SpecForge's DFlash provider default, which the recipe kept.
SPECFORGE_LOADER_WORKERS = 8

# --- upstream defaults the rules fall back to -----------------------------------------------
# SpecForge's producer keeps up to runtime.producer_lease = 8 requests in flight per capture
# server (specforge/config/schema.py RuntimeConfig, 0.2.0).
IN_FLIGHT_PER_SERVER = 8
IN_FLIGHT_HIGH_DEFAULT = 256
IN_FLIGHT_LOW_DEFAULT = 192
# The trainer's client buffer when unset (DisaggregatedDeploymentConfig.client_buffer_size).
SPECFORGE_CLIENT_BUFFER_DEFAULT_BYTES = 256 << 20
# The local buffer SpecForge's launch gives each Mooncake client (MOONCAKE_LOCAL_BUFFER_SIZE).
SPECFORGE_SERVER_BUFFER_DEFAULT_BYTES = GIB
# speculators' --mooncake-local-buffer-gib default (launch_vllm.py and the trainer alike).
SPECULATORS_LOCAL_BUFFER_BYTES = 2 * GIB
# speculators' TrainConfig num_workers default (speculators/train/config/schema.py).
SPECULATORS_LOADER_WORKERS = 12
# Each speculators DataLoader worker opens its own Mooncake transfer-engine client (a dozen
# or more OS threads); 12 workers x 4 ranks = 48 clients on one node exhausted threads (PR
# #1046's review), and the smoke test runs with 2 workers per rank.
SPECULATORS_TESTED_WORKERS = 2
EXHAUSTING_CLIENTS_PER_NODE = SPECULATORS_LOADER_WORKERS * 4
# A segment holds its samples with a quarter to spare (allocator fragmentation).
SEGMENT_SPARE = 1.25

SOURCES = {
    "watermarks": (
        f"{RECIPE}: one node 6 x the optimizer-step quantum high, 3 x low (192/96 at 32: "
        f"11.6 samples/s against 7.6 at 96/48, paused 64 %; 12 x gained nothing); across "
        f"nodes 8 x and 4 x (512/256 at 64: 18.0 against 14.0 at 192/96); at least every "
        f"capture server's producer lease (8 requests)"
    ),
    "lease_cross_node": (
        f"{RECIPE}: mooncake_master --default_kv_lease_ttl 10000 ms; 500 ms returned -707 "
        f"LEASE_EXPIRED under cross-node reads, 3 s still expired, 10 s did not"
    ),
    "lease_one_node": (
        "one node: upstream's default (no cross-node read measured expiring; SpecForge's "
        "managed_local starts its own master)"
    ),
    "tcp_bind": (
        f"{RECIPE}: without MC_TCP_BIND_ADDRESS Mooncake advertises the first active "
        f"interface and remote reads fail with -800 TRANSFER_FAIL"
    ),
    "loader_specforge": (
        f"{RECIPE}: data.dataloader_num_workers 8 (SpecForge's default), one Mooncake client "
        f"per trainer rank"
    ),
    "loader_speculators_mooncake": (
        "speculators: each DataLoader worker opens a Mooncake client; 12 workers x 4 ranks = "
        "48 clients exhausted threads (PR #1046 review); 2 per rank is the tested value "
        "(tests/e2e/hs_connectors/test_mooncake_online_training.py)"
    ),
    "loader_speculators_file": (
        "speculators on one node: the file backend, no Mooncake client; its default 12 workers"
    ),
    "segment": (
        "the samples in flight (SpecForge: the high watermark spread over the capture "
        "servers, at least a producer lease each; speculators: every rank's loader workers' "
        "batches spread over the engines) at the longest sample, a quarter to spare"
    ),
    "buffers_specforge": (
        f"{RECIPE}: 4 GiB per capture server and client_buffer_size 2 GiB per trainer rank "
        f"at 500 MB samples and batch 2, scaled to this plan's max-length sample and batch"
    ),
    "buffers_speculators": "speculators' --mooncake-local-buffer-gib default, 2 GiB",
}


def cross_node_of(
    targets: Count, drafters: Count, target_per_node: int, same_gpu_type: bool
) -> Any:
    """Whether trainer ranks read features from capture servers on other nodes: the split
    spans more than one node (packed as pipeline.placement packs it), or the roles run on
    different GPU types, which never share a node."""
    if not same_gpu_type:
        return targets + drafters > 0
    return targets + drafters > target_per_node


def loader_leases_of(drafters: Count, batch_size: int) -> Count:
    """Samples SpecForge's loaders hold leased: every rank's data-loader workers prefetch one
    batch each (the loader of PR #797, for which the recipe sized its watermarks)."""
    return drafters * SPECFORGE_LOADER_WORKERS * batch_size


def watermarks_of(
    drafters: Count,
    batch_size: int,
    servers: Count,
    cross_node: Any,
    prefetching_loader: bool = False,
) -> tuple[Count, Count]:
    """The producer's (high, low) in-flight watermarks by the recipe's measured multiples:
    6 x the optimizer-step quantum high and 3 x low on one node, 8 x and 4 x across nodes.
    The recipe reads them as the loaders' leased samples plus one quantum, which starved
    the producer at exactly that many (96 = 64 + 32 on one node, 192 = 128 + 64 across
    nodes), and measured best 2 x it (192/96) and 8/3 x it (512/256); with the prefetching
    loader of PR #797 (after 0.2.0: `prefetching_loader`), whose leases grow with its
    workers, the multiples apply to that window (at the recipe's batch 2 x accumulation 4
    and 8 workers both give its numbers). At least every capture server's lease of
    requests, so none idles at the pause; both above the quantum, as SpecForge requires
    (_online_flow_window)."""
    quantum = drafters * batch_size
    one_high, one_low = RECIPE_ONE_NODE_WATERMARKS
    cross_high, cross_low = RECIPE_CROSS_NODE_WATERMARKS
    if prefetching_loader:
        window = loader_leases_of(drafters, batch_size) + quantum
        one_unit = loader_leases_of(4, RECIPE_BATCH) + RECIPE_ONE_NODE_QUANTUM  # 96
        cross_unit = loader_leases_of(8, RECIPE_BATCH) + RECIPE_CROSS_NODE_QUANTUM  # 192
    else:
        window, one_unit, cross_unit = quantum, RECIPE_ONE_NODE_QUANTUM, RECIPE_CROSS_NODE_QUANTUM
    # Integer arithmetic, rounding up: exact wherever the recipe's multiples are whole.
    high = where(
        cross_node, -(-window * cross_high // cross_unit), -(-window * one_high // one_unit)
    )
    high = maximum(high, servers * IN_FLIGHT_PER_SERVER)
    low = where(cross_node, -(-high * cross_low // cross_high), -(-high * one_low // one_high))
    return high, low


def speculators_workers_of(ranks_per_node: Count, cross_node: Any) -> Count:
    """speculators' --num-workers per trainer rank: with Mooncake (across nodes) the tested
    2, fewer if a node's ranks would reach the client count that exhausted threads; on one
    node (the file backend) its default."""
    budget = maximum(1, (EXHAUSTING_CLIENTS_PER_NODE - 1) // maximum(1, ranks_per_node))
    return where(
        cross_node, minimum(SPECULATORS_TESTED_WORKERS, budget), SPECULATORS_LOADER_WORKERS
    )


def segment_gib_of(sample_bytes: int, samples: Number) -> Count:
    """A Mooncake global segment that holds `samples` max-length samples with a quarter
    to spare, in whole GiB (at least 1)."""
    return maximum(1, ceil_int(samples * sample_bytes * SEGMENT_SPARE / GIB))


def segment_gib(sample_bytes: int, samples: float) -> int:
    return int(segment_gib_of(sample_bytes, samples))


def specforge_segment_samples_of(high: Count, servers: Count) -> Count:
    """Samples one SpecForge capture server's segment holds: the producer keeps at most
    the high watermark unacknowledged, spread over the servers, and a lease per server."""
    return maximum(IN_FLIGHT_PER_SERVER, -(-high // servers))


def speculators_segment_samples(workers: Any, batch_size: int, drafters: Any, engines: Any) -> Any:
    """Samples one vLLM engine's segment holds: each trainer rank's loader workers wait on
    one batch each, spread over the data-parallel engines (numbers, or arrays)."""
    return workers * batch_size * drafters / engines


def whole_gib(nbytes: float) -> int:
    return -(-int(nbytes) // GIB) * GIB


def server_buffer_bytes(fmt: str, sample_bytes: int) -> int:
    """The local buffer of one capture server's Mooncake client (MOONCAKE_LOCAL_BUFFER_SIZE
    / managed_local.mooncake.local_buffer_size_bytes): the recipe's 4 GiB per 500 MB
    sample scaled to this sample, whole GiB, at least the launch's 1 GiB."""
    if fmt == "speculators":
        return SPECULATORS_LOCAL_BUFFER_BYTES
    scaled = RECIPE_SERVER_BUFFER_BYTES * sample_bytes / RECIPE_SAMPLE_BYTES
    return max(SPECFORGE_SERVER_BUFFER_DEFAULT_BYTES, whole_gib(scaled))


def trainer_buffer_bytes(fmt: str, sample_bytes: int, batch_size: int) -> int:
    """The client buffer of one trainer rank (SpecForge's client_buffer_size): the recipe's
    2 GiB for batches of two 500 MB samples scaled to this batch, whole GiB, at least the
    schema's 256 MiB default."""
    if fmt == "speculators":
        return SPECULATORS_LOCAL_BUFFER_BYTES
    scaled = (
        RECIPE_CLIENT_BUFFER_BYTES
        * batch_size
        * sample_bytes
        / (RECIPE_BATCH * RECIPE_SAMPLE_BYTES)
    )
    return max(SPECFORGE_CLIENT_BUFFER_DEFAULT_BYTES, whole_gib(scaled))


@dataclass(frozen=True, slots=True)
class FlowControl:
    """The data plane's flow control of one plan, each value by a measured rule
    (`sources` names each rule's measurement)."""

    format: str  # "specforge" or "speculators": whose settings
    quantum_samples: int  # one optimizer step's samples (the consumer's window)
    cross_node: bool  # trainer ranks read from capture servers on other nodes
    high_watermark: int  # SpecForge's producer pauses at this many unacknowledged samples
    low_watermark: int  # and resumes at this many
    lease_ms: int | None  # mooncake_master --default_kv_lease_ttl; None: upstream's default
    tcp_bind_address: bool  # MC_TCP_BIND_ADDRESS exported with the node's fabric address
    loader_workers_per_rank: int
    trainer_clients_per_node: int  # Mooncake clients of the trainer ranks on one node
    segment_samples: float  # per capture server's segment
    segment_gib: int  # per capture server
    server_buffer_bytes: int  # per capture server's Mooncake client
    trainer_buffer_bytes: int  # per trainer rank's Mooncake client
    sources: tuple[tuple[str, str], ...]  # (setting, its rule's source)

    @property
    def producer(self) -> bool:
        """A producer pauses at the watermarks (SpecForge); speculators' trainer asks vLLM
        for each batch itself and has none."""
        return self.format != "speculators"

    def to_json(self) -> dict[str, Any]:
        producer = self.producer
        return {
            "format": self.format,
            "quantum_samples": self.quantum_samples,
            "cross_node": self.cross_node,
            "in_flight_high_watermark": self.high_watermark if producer else None,
            "in_flight_low_watermark": self.low_watermark if producer else None,
            "lease_ms": self.lease_ms,
            "tcp_bind_address": self.tcp_bind_address,
            "loader_workers_per_rank": self.loader_workers_per_rank,
            "trainer_mooncake_clients_per_node": self.trainer_clients_per_node,
            "segment_samples_per_server": self.segment_samples,
            "segment_gib_per_server": self.segment_gib,
            "server_buffer_bytes": self.server_buffer_bytes,
            "trainer_buffer_bytes": self.trainer_buffer_bytes,
            "sources": dict(self.sources),
        }


def flow_control(
    fmt: str,
    sample_bytes: int,
    batch_size: int,
    split: tuple[int, int, int],
    gpus_per_node: tuple[int, int],
    same_gpu_type: bool,
    prefetching_loader: bool = False,
) -> FlowControl:
    """The flow control of one split (targets, drafters, tp) for the launch `fmt`, on
    nodes of gpus_per_node (target, drafter). `prefetching_loader`: SpecForge's loader of
    PR #797 (newer than the pinned 0.2.0; see watermarks_of)."""
    targets, drafters, tp = split
    servers = targets // tp
    cross = bool(cross_node_of(targets, drafters, gpus_per_node[0], same_gpu_type))
    quantum = drafters * batch_size
    high, low = (
        int(v) for v in watermarks_of(drafters, batch_size, servers, cross, prefetching_loader)
    )
    ranks_per_node = min(drafters, gpus_per_node[0] if same_gpu_type else gpus_per_node[1])
    if fmt == "speculators":
        workers = int(speculators_workers_of(ranks_per_node, cross))
        clients = ranks_per_node * workers if cross else 0
        samples = float(speculators_segment_samples(workers, batch_size, drafters, servers))
        loader = "loader_speculators_mooncake" if cross else "loader_speculators_file"
        buffers = "buffers_speculators"
    else:
        workers, clients = SPECFORGE_LOADER_WORKERS, ranks_per_node
        samples = float(specforge_segment_samples_of(high, servers))
        loader, buffers = "loader_specforge", "buffers_specforge"
    return FlowControl(
        fmt,
        quantum,
        cross,
        high,
        low,
        RECIPE_LEASE_MS if cross else None,
        cross,
        workers,
        clients,
        samples,
        segment_gib(sample_bytes, samples),
        server_buffer_bytes(fmt, sample_bytes),
        trainer_buffer_bytes(fmt, sample_bytes, batch_size),
        (
            ("watermarks", SOURCES["watermarks"]),
            ("lease", SOURCES["lease_cross_node" if cross else "lease_one_node"]),
            ("tcp_bind_address", SOURCES["tcp_bind"]),
            ("loader_workers", SOURCES[loader]),
            ("segment", SOURCES["segment"]),
            ("buffers", SOURCES[buffers]),
        ),
    )
