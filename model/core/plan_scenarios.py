"""One plan's figures under any scenario (scenarios.py), and the pipeline inputs of a
resolved plan at given rates: what the projection's stages, compare and search share."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..inputs.hardware import Gpu
from ..physics.colocated import COLOCATION_EFFICIENCY_RANGE, plan_flow
from ..physics.pipeline import Flow, PipelineInputs, pipeline_inputs
from ..physics.work import TargetWork
from .economics import Economics, RolePrices, economics
from .offline import run
from .rates import RateModel
from .resolve import Resolved
from .scenarios import (
    COLOCATION,
    HIGH,
    LINK_SHARE,
    LOW,
    Dim,
    Scenario,
    colocation_efficiency,
    label,
)


@dataclass(frozen=True, slots=True)
class Ranges:
    """Low and high ends of the headline figures, from the low and high per-GPU rates.
    Equal ends mean the figure rests on measurements only."""

    tokens_per_s: tuple[float, float]
    days: tuple[float, float]
    total_cost: tuple[float, float] | None
    total_cost_usd: tuple[float, float] | None
    widest: str | None  # the role whose rate range moves days most
    widest_days: tuple[float, float] | None
    # The range of days of each role whose rate alone moves them (PlanScenarios.role_span),
    # the widest first.
    role_days: Mapping[str, tuple[float, float]] = field(default_factory=dict)
    # The scenarios of the slow end (fewest tokens/s) and of the fast end; named on demand
    # (naming them costs pipeline runs a keystroke need not pay for).
    slow_at: Scenario = field(default_factory=dict)
    fast_at: Scenario = field(default_factory=dict)
    scenarios: PlanScenarios | None = None

    @property
    def slow_scenario(self) -> str:
        return self.scenarios.label(self.slow_at) if self.scenarios else ""

    @property
    def fast_scenario(self) -> str:
        return self.scenarios.label(self.fast_at) if self.scenarios else ""

    def to_json(self) -> dict[str, Any]:
        return {
            "tokens_per_s": list(self.tokens_per_s),
            "days": list(self.days),
            "total_cost": list(self.total_cost) if self.total_cost else None,
            "total_cost_usd": list(self.total_cost_usd) if self.total_cost_usd else None,
            "tokens_per_s_scenarios": [self.slow_scenario, self.fast_scenario],
            "days_scenarios": [self.fast_scenario, self.slow_scenario],
            "total_cost_scenarios": [self.fast_scenario, self.slow_scenario],
        }


@dataclass(frozen=True, slots=True)
class PlanScenarios:
    """One plan's figures under any scenario (scenarios.py): its rates' models, the link
    kinds it uses, and what turns tokens/s into days and cost. Throughput is monotone in
    every factor of every dimension (higher rates and faster links never slow the
    pipeline), so a plan's own extremes are corners: its slowest rates and slowest links."""

    dims: Mapping[str, Dim]
    target: RateModel
    drafter: RateModel
    links: tuple[str, str]  # link dimension keys of the target and drafter GPUs
    resolved: Resolved
    central: PipelineInputs
    target_work: TargetWork
    total_tokens: float
    role_prices: RolePrices
    billed: tuple[int, int]
    # What the offline run under a scenario needs besides (offline.run).
    tokens_per_epoch: float = 0.0
    stored_bytes_per_token: float = 0.0
    in_usd: bool = False
    units: tuple[int, int] = (1, 1)
    # The colocation efficiency's band for this plan (physics/colocated.efficiency_range).
    colocation_range: tuple[float, float] = COLOCATION_EFFICIENCY_RANGE
    memo: dict[tuple[str | None, ...], float] = field(default_factory=dict)
    offline_memo: dict[tuple[str | None, ...], tuple[float, float | None]] = field(
        default_factory=dict
    )
    gpus: dict[tuple[str, float], Gpu] = field(default_factory=dict)  # link-scaled copies

    def inputs(self, s: Scenario, transport: str | None = None) -> PipelineInputs:
        r = self.resolved
        t_share, d_share = (link_share(key, s.get(key)) for key in self.links)
        return plan_inputs(
            r,
            self.target_work,
            self.target.rate(s),
            self.drafter.rate(s),
            self._scaled("target", r.target_gpu, t_share),
            self._scaled("drafter", r.drafter_gpu, d_share),
            transport=transport,
        )

    def offline_capacities(self, s: Scenario) -> tuple[float, float]:
        """The offline run's capture and training capacities under a scenario: the
        targets', and the drafters' reading from storage (no Mooncake fetch wait; storage's
        own read bound is applied in offline.run)."""
        plan = self.resolved.plan
        T, D = plan.target.count, plan.drafter.count
        f = self.flow(s)
        w = plan.workload
        direct = self.inputs(s, "direct")
        disk = f if w.transport == "direct" else plan_flow(direct, w.topology, T, D)
        return float(f.target_tokens_per_s), float(disk.drafter_tokens_per_s)

    def offline_run(self, s: Scenario) -> tuple[float, float | None]:
        """The offline run's days and cost (in the plan's cost unit) under a scenario."""
        key = tuple(s.get(k) for k in self.dims)
        found = self.offline_memo.get(key)
        if found is None:
            plan = self.resolved.plan
            capture, train = self.offline_capacities(s)
            o = run(
                plan,
                self.stored_bytes_per_token,
                self.tokens_per_epoch,
                plan.target.count,
                plan.drafter.count,
                capture,
                train,
                self.resolved.drafter_gpu.gpus_per_node,
                self.role_prices,
                self.in_usd,
                self.billed,
                self.units,
            )
            found = (float(o.days), None if o.cost is None else float(o.cost))
            self.offline_memo[key] = found
        return found

    def run_days(self, s: Scenario) -> float:
        """The days of the plan's own mode under a scenario (the offline run's offline)."""
        if self.resolved.plan.workload.mode == "offline":
            return self.offline_run(s)[0]
        return self.days(s)

    def _scaled(self, role: str, gpu: Gpu, share: float) -> Gpu:
        if (role, share) not in self.gpus:
            self.gpus[(role, share)] = link_scaled(gpu, share)
        return self.gpus[(role, share)]

    def flow(self, s: Scenario) -> Flow:
        plan = self.resolved.plan
        return plan_flow(
            self.inputs(s),
            plan.workload.topology,
            plan.target.count,
            plan.drafter.count,
            colocation_efficiency(s.get(COLOCATION), self.colocation_range),
        )

    def tokens_per_s(self, s: Scenario) -> float:
        key = tuple(s.get(k) for k in self.dims)  # this plan's part of the scenario
        found = self.memo.get(key)
        if found is None:
            found = self.memo[key] = float(self.flow(s).tokens_per_s)
        return found

    def economics(self, s: Scenario) -> Economics:
        plan = self.resolved.plan
        return economics(
            self.tokens_per_s(s),
            self.total_tokens,
            plan.target.count,
            plan.drafter.count,
            self.role_prices,
            *self.billed,
        )

    def days(self, s: Scenario) -> float:
        return self.total_tokens / self.tokens_per_s(s) / 86_400

    def role_span(self, role: str) -> tuple[Scenario, Scenario]:
        """What a role's rate alone moves: its slow and its fast extreme (every dimension of
        its rate at once), every other dimension central. The one range of a role: the
        projection's narrowing note and the tornado's rate bars both read it."""
        model = self.target if role == "target" else self.drafter
        return model.extreme(slow=True), model.extreme(slow=False)

    def extreme(self, slow: bool) -> dict[str, str]:
        """The corner with this plan's fewest (or most) tokens/s: each rate at its own
        extreme, every link at its slow (or fast) end."""
        end = LOW if slow else HIGH
        return {
            **self.target.extreme(slow),
            **self.drafter.extreme(slow),
            **{key: end for key in self.links},
            **{key: end for key in self.dims if key == COLOCATION},
        }

    def binding(self, s: Scenario, value: Any) -> tuple[str, ...]:
        """The dimensions of `s` whose value matters: moving one alone to any other value
        changes `value(scenario)`. Labels name only these."""
        base = value(s)
        keys = []
        for key in s:
            dim = self.dims.get(key)
            if dim is None:
                continue
            if any(
                not _same(value({**s, key: other}), base) for other in dim.values if other != s[key]
            ):
                keys.append(key)
        return tuple(keys)

    def label(self, s: Scenario) -> str:
        keys, held = self.binding(s, self.tokens_per_s), self.floors(s)
        return "; ".join([label(s, self.dims, keys), *held] if keys or not held else held)

    def floors(self, s: Scenario) -> list[str]:
        """The roles held at what they are known to reach (a kept-up bound) in `s`."""
        gpus = (self.resolved.target_gpu, self.resolved.drafter_gpu)
        return [
            f"the {gpu.name} {role} held at the {model.floor:,.0f} tok/s it kept up with"
            for role, model, gpu in (
                ("target", self.target, gpus[0]),
                ("drafter", self.drafter, gpus[1]),
            )
            if model.floor > 0 and model.rate(s) == model.floor
        ]


def _same(a: float, b: float) -> bool:
    return abs(a - b) <= 1e-9 * max(abs(a), abs(b))


def link_share(key: str, value: str | None) -> float:
    """A link dimension's share of the catalog figure under a scenario's value."""
    low, high, _ = LINK_SHARE[key.split(":", 1)[1]]
    return low if value == LOW else high if value == HIGH else 1.0


def link_scaled(gpu: Gpu, share: float) -> Gpu:
    """The GPU with its link at `share` of the catalog figure (itself at 1)."""
    if share == 1.0:
        return gpu
    return gpu.model_copy(
        update={"link": gpu.link.model_copy(update={"gb_per_s": gpu.link.gb_per_s * share})}
    )


def plan_inputs(
    r: Resolved,
    tw: TargetWork,
    target_rate: float,
    drafter_rate: float,
    target_gpu: Gpu | None = None,
    drafter_gpu: Gpu | None = None,
    tp: int | None = None,
    transport: str | None = None,
) -> PipelineInputs:
    """The pipeline's inputs of a resolved plan at these per-GPU rates (and GPUs, TP and
    hidden-state path, when not the plan's own): the one assembly, for the projection, its
    scenarios, the offline run and search."""
    p = r.plan
    return pipeline_inputs(
        target_gpu or r.target_gpu,
        drafter_gpu or r.drafter_gpu,
        p.target.tp if tp is None else tp,
        target_rate,
        drafter_rate,
        hidden=r.model.hidden,
        layers_run=tw.layers_run,
        trainable_params=r.shape.trainable_params,
        batch_size=p.drafter.batch_size,
        sample_tokens=float(p.workload.avg_sample_tokens),
        hidden_state_bytes_per_token=tw.hidden_state_bytes_per_token,
        transport=transport or p.workload.transport,
        receive=p.workload.receive,
    )
