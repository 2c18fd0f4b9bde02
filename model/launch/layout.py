"""The one device layout every launch format shares: which node and which GPUs each target
replica and each drafter gets. Assigned once, checked before anything is rendered."""

from __future__ import annotations

import math
from dataclasses import dataclass

from ..basics.errors import PlanError
from ..core.resolve import Resolved

# Largest cluster a script is generated for. Scripts hold one section per node, so this
# bounds their size (about 10 KB per node) and the time to write them (well under a
# second); docs/launch.md says why and what to do beyond it.
MAX_NODES = 256


@dataclass(frozen=True, slots=True)
class Replica:
    """One target replica: a TP group of devices on one node, serving on one port."""

    node: int
    devices: tuple[int, ...]
    port: int


@dataclass(frozen=True, slots=True)
class Layout:
    hosts: tuple[str, ...]
    gpus_per_node: int  # of the target GPU type
    replicas: tuple[Replica, ...]
    drafters: dict[int, tuple[int, ...]]  # node -> drafter devices on it

    @property
    def nodes(self) -> int:
        return len(self.hosts)

    @property
    def target_nodes(self) -> tuple[int, ...]:
        return tuple(dict.fromkeys(r.node for r in self.replicas))

    @property
    def drafter_nodes(self) -> tuple[int, ...]:
        return tuple(self.drafters)

    def targets_on(self, node: int) -> tuple[Replica, ...]:
        return tuple(r for r in self.replicas if r.node == node)

    def target_devices_on(self, node: int) -> tuple[int, ...]:
        return tuple(d for r in self.targets_on(node) for d in r.devices)

    def gpus_used_on(self, node: int) -> int:
        return len(self.target_devices_on(node)) + len(self.drafters.get(node, ()))


def nodes_needed(resolved: Resolved) -> int:
    """Node count of the layout, computed without building it (huge plans are refused
    before any per-GPU work)."""
    plan = resolved.plan
    per_node, tp = resolved.target_gpu.gpus_per_node, plan.target.tp
    replicas_per_node = per_node // tp
    target_nodes = math.ceil(plan.target.replicas / replicas_per_node)
    if not resolved.same_gpu_type:
        return target_nodes + math.ceil(plan.drafter.count / resolved.drafter_gpu.gpus_per_node)
    free_on_last = per_node - (plan.target.count - (target_nodes - 1) * replicas_per_node * tp)
    spill = max(0, plan.drafter.count - free_on_last)
    return target_nodes + math.ceil(spill / per_node)


def assign_devices(resolved: Resolved) -> Layout:
    """Targets fill nodes from node 0, a TP group never straddling two nodes; drafters
    follow on the same nodes (same GPU type) or on machines of their own."""
    plan = resolved.plan
    nodes = nodes_needed(resolved)
    if nodes > MAX_NODES:
        raise PlanError.field(
            "target.count",
            f"{plan.target.count} + {plan.drafter.count}",
            f"{nodes} nodes; launch scripts are written for up to {MAX_NODES} nodes (see "
            f"docs/launch.md)",
            shown="target.count + drafter.count",
        )
    hosts = plan.launch.hosts or tuple(f"node{i}" for i in range(nodes))
    if len(hosts) < nodes:
        raise PlanError.said(
            f"launch.hosts names {len(hosts)} host(s); this plan needs {nodes} "
            f"nodes ({plan.target.count} + {plan.drafter.count} GPUs)",
            "launch.hosts",
        )
    per_node, tp = resolved.target_gpu.gpus_per_node, plan.target.tp
    if plan.launch.base_port + per_node // tp - 1 > 65535:
        raise PlanError.field(
            "launch.base_port",
            str(plan.launch.base_port),
            f"the capture servers of one node need ports up to "
            f"{plan.launch.base_port + per_node // tp - 1}",
        )
    replicas: list[Replica] = []
    node, slot = 0, 0
    for _ in range(plan.target.replicas):
        if slot + tp > per_node:
            node, slot = node + 1, 0
        # Ports count per node: servers on different hosts may share one.
        replicas.append(
            Replica(node, tuple(range(slot, slot + tp)), plan.launch.base_port + slot // tp)
        )
        slot += tp
    drafters: dict[int, list[int]] = {}
    if resolved.same_gpu_type:
        d_per_node = per_node
    else:
        node, slot, d_per_node = node + 1, 0, resolved.drafter_gpu.gpus_per_node
    for _ in range(plan.drafter.count):
        if slot >= d_per_node:
            node, slot = node + 1, 0
        drafters.setdefault(node, []).append(slot)
        slot += 1
    layout = Layout(
        hosts=tuple(hosts[:nodes]),
        gpus_per_node=per_node,
        replicas=tuple(replicas),
        drafters={n: tuple(devs) for n, devs in drafters.items()},
    )
    check_layout(layout, resolved)
    return layout


def check_layout(layout: Layout, resolved: Resolved) -> None:
    """No GPU used twice, counts as planned, TP groups contiguous inside one node."""
    plan = resolved.plan
    used: set[tuple[int, int]] = set()
    t_per, d_per = resolved.target_gpu.gpus_per_node, resolved.drafter_gpu.gpus_per_node
    for replica in layout.replicas:
        devs = replica.devices
        if len(devs) != plan.target.tp or list(devs) != list(range(devs[0], devs[0] + len(devs))):
            raise PlanError.at(
                "internal", f"TP group {devs} on node {replica.node} is not contiguous"
            )
        if devs[-1] >= t_per:
            raise PlanError.at("internal", f"TP group {devs} leaves node {replica.node}")
        for dev in devs:
            if (replica.node, dev) in used:
                raise PlanError.at("internal", f"GPU {dev} of node {replica.node} used twice")
            used.add((replica.node, dev))
    for node, devs in layout.drafters.items():
        for dev in devs:
            if (node, dev) in used or dev >= d_per:
                raise PlanError.at(
                    "internal", f"drafter GPU {dev} of node {node} is taken or absent"
                )
            used.add((node, dev))
    if len(layout.replicas) * plan.target.tp != plan.target.count:
        raise PlanError.at("internal", "target GPU count differs from the plan")
    if sum(map(len, layout.drafters.values())) != plan.drafter.count:
        raise PlanError.at("internal", "drafter GPU count differs from the plan")
    if len({(r.node, r.port) for r in layout.replicas}) != len(layout.replicas):
        raise PlanError.at("internal", "two capture servers of one node share a port")
