"""Which topology wins on a plan's GPUs: colocated (every GPU runs the target forward and
the drafter step, physics/colocated.py) against the best disaggregated split of the same
GPUs (what balance and search pick: pipeline.best_split), at the central rates."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any, Literal

from ..physics.colocated import colocated_flow
from ..physics.memory import colocated_memory
from ..physics.pipeline import PipelineInputs, best_split
from .rates import Rates
from .resolve import Resolved
from .stages import role_memory

Topology = Literal["disaggregated", "colocated"]


@dataclass(frozen=True, slots=True)
class TopologyVerdict:
    """The plan's GPUs run both ways: colocated, and the best disaggregated split."""

    topology: str  # the plan's
    gpus: int  # the same GPUs for both: target.count + drafter.count
    colocated_tokens_per_s: float
    disaggregated_tokens_per_s: float  # the best split of the same GPUs
    disaggregated_split: tuple[int, int]  # (targets, drafters)
    winner: Topology
    speedup: float  # the winner over the other, >= 1
    # Whether every GPU holds the target shard and the drafter rank colocated (the verdict
    # is by rate: a colocated winner that does not fit is said so beside it).
    colocated_fits: bool = True

    @property
    def other(self) -> Topology:
        return "disaggregated" if self.winner == "colocated" else "colocated"

    def tokens_per_s(self, topology: str) -> float:
        if topology == "colocated":
            return self.colocated_tokens_per_s
        return self.disaggregated_tokens_per_s

    def to_json(self) -> dict[str, Any]:
        """The `"topology"` block of `project --json` (docs/cli.md)."""
        return {
            "topology": self.topology,
            "gpus": self.gpus,
            "colocated_tokens_per_s": self.colocated_tokens_per_s,
            "disaggregated_tokens_per_s": self.disaggregated_tokens_per_s,
            "disaggregated_split": list(self.disaggregated_split),
            "winner": self.winner,
            "speedup": self.speedup,
            "colocated_fits": self.colocated_fits,
        }


def verdict(
    inputs: PipelineInputs,
    topology: str,
    gpus: int,
    tp: int,
    efficiency: float | None = None,
    colocated_fits: bool = True,
) -> TopologyVerdict | None:
    """The verdict on `gpus` GPUs of one type at these pipeline inputs; None when they
    cannot run both ways (not whole target replicas, or no room for a split)."""
    best = best_split(inputs, gpus, tp)
    if best is None or gpus % tp:
        return None
    targets, disaggregated = best
    colocated = float(colocated_flow(inputs, gpus, efficiency).tokens_per_s)
    # A tie is the disaggregated topology's: it needs no colocated launch.
    winner: Topology = "colocated" if colocated > disaggregated else "disaggregated"
    high, low = max(colocated, disaggregated), min(colocated, disaggregated)
    return TopologyVerdict(
        topology,
        gpus,
        colocated,
        disaggregated,
        (targets, gpus - targets),
        winner,
        high / low if low > 0 else float("inf"),
        colocated_fits,
    )


def topology_stage(r: Resolved, rt: Rates, inputs: PipelineInputs) -> TopologyVerdict | None:
    """The plan's verdict: None when it cannot run both ways (two GPU types, offline)."""
    plan, w = r.plan, r.plan.workload
    if not r.same_gpu_type or w.mode != "online":
        return None
    gpus = plan.target.count + plan.drafter.count
    both = colocated_memory(*role_memory(r, rt, gpus))
    return verdict(inputs, w.topology, gpus, plan.target.tp, colocated_fits=both.fits)
