"""Where the roles sit, and the links between them: hidden states from targets to
drafters, and the drafters' gradient all-reduce."""

from __future__ import annotations

from dataclasses import dataclass

from .hardware import Gpu


@dataclass(frozen=True, slots=True)
class Placement:
    """Targets fill nodes first, drafters follow (on the same nodes when the GPU type is the
    same, else on machines of their own)."""

    target_nodes: tuple[int, ...]     # target GPUs on each node holding targets
    drafter_nodes: tuple[int, ...]    # drafter GPUs on each node holding drafters
    shared_nodes: int                 # nodes holding both roles
    crossing_share: float             # share of hidden-state traffic that leaves its node
    drafters_span_nodes: bool

    @property
    def nodes(self) -> int:
        return len(self.target_nodes) + len(self.drafter_nodes) - self.shared_nodes


def _fill(start: int, count: int, per_node: int) -> dict[int, int]:
    nodes: dict[int, int] = {}
    for slot in range(start, start + count):
        nodes[slot // per_node] = nodes.get(slot // per_node, 0) + 1
    return nodes


def place(target_gpu: Gpu, targets: int, drafter_gpu: Gpu, drafters: int) -> Placement:
    same_type = target_gpu.key == drafter_gpu.key
    domain = target_gpu.fast_domain_gpus
    t_nodes = _fill(0, targets, target_gpu.gpus_per_node)
    if same_type:
        d_nodes = _fill(targets, drafters, drafter_gpu.gpus_per_node)
        # Traffic stays on the GPU link inside one node, or one NVLink domain (NVL72).
        t_dom, d_dom = _fill(0, targets, domain), _fill(targets, drafters, domain)
        local = sum(t_dom[k] * d_dom.get(k, 0) for k in t_dom) / (targets * drafters)
        shared = len(set(t_nodes) & set(d_nodes))
    else:
        d_nodes = _fill(0, drafters, drafter_gpu.gpus_per_node)
        local, shared = 0.0, 0
    return Placement(target_nodes=tuple(t_nodes.values()), drafter_nodes=tuple(d_nodes.values()),
                     shared_nodes=shared, crossing_share=1.0 - local,
                     drafters_span_nodes=len(d_nodes) > 1)


@dataclass(frozen=True, slots=True)
class LinkCapacity:
    tokens_per_s: float
    local_bytes_per_s: float
    network_bytes_per_s: float | None
    crossing_share: float
    description: str


def hidden_state_link(placement: Placement, target_gpu: Gpu, replicas: int, drafter_gpu: Gpu,
                      drafters: int, bytes_per_token: float) -> LinkCapacity:
    """Tokens/s of hidden states the links can carry. Each target replica sends once over
    its GPU link and each drafter receives over its own; the share that leaves its node also
    crosses both sides' network cards."""
    local = min(replicas * target_gpu.link_bytes_per_s, drafters * drafter_gpu.link_bytes_per_s)
    limit = local
    network = None
    if placement.crossing_share > 0:
        network = min(sum(placement.target_nodes) * target_gpu.network_bytes_per_s,
                      sum(placement.drafter_nodes) * drafter_gpu.network_bytes_per_s)
        limit = min(limit, network / placement.crossing_share)
    kind = {"pcie": "PCIe", "nvlink": "NVLink", "infinity-fabric": "Infinity Fabric"}
    if placement.crossing_share == 0:
        description = f"{kind[target_gpu.link.kind]} inside one node"
    else:
        gbps = min(target_gpu.network_gbps_per_gpu, drafter_gpu.network_gbps_per_gpu)
        description = (f"network {gbps:g} Gb/s per GPU, {placement.crossing_share:.0%} of "
                       f"traffic across {placement.nodes} nodes")
    return LinkCapacity(tokens_per_s=limit / bytes_per_token, local_bytes_per_s=local,
                        network_bytes_per_s=network, crossing_share=placement.crossing_share,
                        description=description)


def allreduce_seconds(gpu: Gpu, ranks: int, payload_bytes: float, across_nodes: bool) -> float:
    """Ring all-reduce: each rank sends and receives 2 (n - 1) / n of the payload."""
    if ranks <= 1:
        return 0.0
    bandwidth = gpu.network_bytes_per_s if across_nodes else gpu.link_bytes_per_s
    return 2 * (ranks - 1) / ranks * payload_bytes / bandwidth
