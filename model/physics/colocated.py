"""The colocated topology: every GPU holds a target shard (a TP island of `tp` GPUs per
replica) and a drafter rank, and time-shares them in one process (SpecForge's
`deployment.mode: local_colocated`, in-process capture, PRs #783/#784, the drafter sharded
HYBRID_SHARD across the target-TP islands; TorchSpec's colocate mode, PR #92, under CUDA
MPS). The target's prefill of a sample and the drafter's step on it run one after the
other on the same GPU, so a token costs each GPU 1/target + 1/drafter seconds; no hidden
states cross a link. `colocation_efficiency` is what interference costs (both in memory,
kernels contending, the capture's synchronisation), fitted on public colocated runs
(fitting.COLOCATION_EFFICIENCY).

Counts may be ints or numpy integer arrays, as `pipeline.flow`'s.
"""

from __future__ import annotations

import functools
import math
from dataclasses import dataclass

from ..basics.arrays import Count, Number
from ..inputs.targets import TargetModel
from . import fitting
from .pipeline import Flow, PipelineInputs, drafter_capacity, flow

# What colocated GPUs reach of the time-shared rate: fitted on SpecForge's DFlash2 recipe
# (PR #869: 8 x H200 8.61, 8 x B300 18.9, 16 x H200 16.04 samples/s colocated, against the
# per-GPU rates the same table's disaggregated splits bound), fitting.py.
COLOCATION_EFFICIENCY: float = fitting.value("COLOCATION_EFFICIENCY")
COLOCATION_EFFICIENCY_RANGE: tuple[float, float] = fitting.value_range("COLOCATION_EFFICIENCY")

# No interference: colocated GPUs cannot beat the time-shared rate (the physical bound).
NO_INTERFERENCE = 1.0
# How far a plan's target size and sample length may sit from the fitted runs' and still
# share their interference: within this factor both ways (the target's memory, which sets
# the drafter's headroom, and the time shares move with them).
CONDITION_FACTOR = 2.0


@dataclass(frozen=True, slots=True)
class Conditions:
    """What the runs COLOCATION_EFFICIENCY is fitted on share: GPU kernel families, target
    TP, target parameters and mean sample tokens (each a span over the runs)."""

    archs: frozenset[str]
    tps: frozenset[int]
    moe: frozenset[bool]  # whether the targets are mixtures of experts
    target_params: tuple[float, float]
    sample_tokens: tuple[float, float]

    def hold(
        self, arch: str, tp: int, moe: bool, target_params: float, sample_tokens: float
    ) -> bool:
        def near(value: float, span: tuple[float, float]) -> bool:
            return span[0] / CONDITION_FACTOR <= value <= span[1] * CONDITION_FACTOR

        return (
            arch in self.archs
            and tp in self.tps
            and moe in self.moe
            and near(target_params, self.target_params)
            and near(sample_tokens, self.sample_tokens)
        )


@functools.cache
def fitted_conditions() -> Conditions:
    """The conditions of the colocated runs the efficiency is fitted on (fitting.py's
    COLOCATED_SPLITS: SpecForge's in-process capture, TP1 servers, Qwen3.8-27B at 4.5k
    tokens on H200 and B300)."""
    cases = fitting.cases_by_id(fitting.COLOCATED_SPLITS).values()
    models = [fitting.case_model(c) for c in cases]
    params = [float(m.total_params) for m in models]
    tokens = [float(c["sample_tokens"]) for c in cases]
    return Conditions(
        frozenset(fitting.gpu_arch(str(c["gpu"])) for c in cases),
        frozenset(int(c.get("tp", 1)) for c in cases),
        frozenset(m.is_moe for m in models),
        (min(params), max(params)),
        (min(tokens), max(tokens)),
    )


def efficiency_range(
    arch: str, tp: int, target: TargetModel, sample_tokens: float
) -> tuple[float, float]:
    """The colocation efficiency's band for a plan: the fitted range where its runs'
    conditions hold; elsewhere (another GPU family such as sm120, another TP, an MoE target,
    a target size or sample length far from theirs) no run says which way interference
    moves, so the band reaches the physical bound above and as far below the central value
    in ratio."""
    held = fitted_conditions().hold(
        arch, tp, target.is_moe, float(target.total_params), sample_tokens
    )
    if held:
        return COLOCATION_EFFICIENCY_RANGE
    low = min(COLOCATION_EFFICIENCY_RANGE[0], COLOCATION_EFFICIENCY**2 / NO_INTERFERENCE)
    return low, NO_INTERFERENCE


def colocated_flow(inputs: PipelineInputs, gpus: Count, efficiency: float | None = None) -> Flow:
    """The rate of `gpus` GPUs each time-sharing a target forward (its TP replica's share,
    TP communication included) and a drafter step (data-parallel over all of them, its
    gradient all-reduce over `gpus` ranks as the disaggregated drafters'). The flow's
    target and drafter capacities are what each role would make with every GPU's whole
    time; the rate is `efficiency` (the fitted one unless given) x gpus / (1/target +
    1/drafter) per GPU."""
    if efficiency is None:
        efficiency = COLOCATION_EFFICIENCY  # read at the call: validation swaps it
    # Every GPU is both roles: the plan's nodes are its GPUs over a node's (one GPU type).
    nodes = -(-gpus // inputs.drafter_gpus_per_node)
    target_per_gpu = inputs.replica_tokens_per_s / inputs.tp
    # No hidden-state fetch: the drafter reads the states its own process captured.
    drafter_cap, scaling = drafter_capacity(inputs, gpus, nodes, 0.0)
    target_cap = gpus * target_per_gpu
    s_per_token = 1.0 / target_cap + 1.0 / drafter_cap  # the whole set's, per token
    tokens = efficiency / s_per_token
    share = (1.0 / target_cap) / s_per_token
    inf = math.inf + 0.0 * tokens
    return Flow(
        tokens,
        target_cap,
        drafter_cap,
        inf,
        scaling,
        0.0 * tokens,
        nodes,
        nodes > 1,
        target_share=share,
    )


def time_shares(f: Flow) -> tuple[Number, Number] | None:
    """Each GPU's time on the target forward and on the drafter step (shares summing to
    one) of a colocated flow; None for a disaggregated one."""
    if f.target_share is None:
        return None
    return f.target_share, 1.0 - f.target_share


def plan_flow(
    inputs: PipelineInputs,
    topology: str,
    targets: Count,
    drafters: Count,
    efficiency: float | None = None,
) -> Flow:
    """The flow of a plan's counts in its topology: the disaggregated pipeline of
    `targets` feeding `drafters`, or colocated, `targets + drafters` GPUs each running
    both (the one dispatch every caller shares)."""
    if topology == "colocated":
        return colocated_flow(inputs, targets + drafters, efficiency)
    return flow(inputs, targets, drafters)
