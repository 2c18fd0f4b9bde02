"""Online or offline: the offline run (capture once to storage, then train every epoch from
it), its storage, days and cost, and the epochs from which it beats the online pipeline.

docs/model.md ("Online or offline") derives the break-even in closed form:

    offline(E) = C_cap + s t_cap + E (b + s t_tr)        online(E) = E a
    E* = (C_cap + s t_cap) / (a - b - s t_tr)            (never when a <= b + s t_tr)

with a the online cost per epoch, C_cap the capture's cost, b the training cost per epoch
from storage, s the storage cost per day (counted only when the plan's prices are in USD),
t_cap the capture's days and t_tr the training days per epoch. For days, a, b and C_cap
are the days themselves and s = 0: E*_days = t_cap / (t_on - t_tr).
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..basics.arrays import minimum
from ..basics.units import SECONDS_PER_DAY, SECONDS_PER_HOUR
from ..inputs.plan import Plan
from ..physics.families import FAMILIES
from ..physics.storage import (
    Format,
    nodes_of,
    storage_format,
    storage_tokens_per_s,
    stored_bytes_per_token,
)
from .diagnostics import Diagnostic
from .economics import Number, RolePrices

DAYS_PER_MONTH = 365.25 / 12
BYTES_PER_TB = 1e12


@dataclass(frozen=True, slots=True)
class OfflineRanges:
    """The offline run's days and cost at the fast and the slow end of the same readings
    and links as the online pipeline's ranges (the corners of PlanScenarios), and what
    each role's rate alone moves the days between (its role_span)."""

    days: tuple[float, float]  # fast, slow
    cost: tuple[float, float] | None
    role_days: Mapping[str, tuple[float, float]] = field(default_factory=dict)

    def to_json(self) -> dict[str, Any]:
        return {
            "days": list(self.days),
            "cost": list(self.cost) if self.cost else None,
            "role_days": {k: list(v) for k, v in self.role_days.items()},
        }


@dataclass(frozen=True, slots=True)
class Offline:
    """The offline run of a plan, beside its online pipeline."""

    format: Format
    dtype: str
    bytes_per_token: float
    tb: float  # the data captured, one epoch's tokens
    tb_available: float | None
    drafter_nodes: int
    read_bytes_per_s: float | None  # all drafter nodes together; None: not bounded
    storage_tokens_per_s: float | None
    capture_tokens_per_s: float  # the targets' capacity
    drafter_tokens_per_s: float  # the drafters' capacity
    train_tokens_per_s: float  # the drafters', bounded by storage reads
    bound: str  # what sets the training rate: drafter, storage
    capture_days: float
    train_days_per_epoch: float
    epochs: int
    online_days: float
    billing: str
    capture_billed: tuple[int, int]  # GPUs billed per role during the capture
    train_billed: tuple[int, int]  # and during the training
    cost_unit: str
    capture_cost: float | None  # in the plan's cost unit
    train_cost_per_epoch: float | None
    online_cost_per_epoch: float | None
    storage_usd: float | None  # over the whole offline run; None: not priced
    storage_in_cost: bool  # the storage cost is part of `cost`
    break_even_epochs: float | None  # on cost; None: never (or not priced)
    break_even_epochs_days: float | None  # on days; None: never
    days: float  # capture, then every epoch's training
    cost: float | None  # GPUs by phase, and storage when priced in the same unit
    ranges: OfflineRanges | None = None

    @property
    def storage_usd_per_day(self) -> float:
        return (self.storage_usd or 0.0) / self.days if self.days else 0.0

    @property
    def online_cost(self) -> float | None:
        if self.online_cost_per_epoch is None:
            return None
        return self.online_cost_per_epoch * self.epochs

    @property
    def fits(self) -> bool | None:
        return None if self.tb_available is None else self.tb <= self.tb_available

    def to_json(self, mode: str) -> dict[str, Any]:
        return {
            "mode": mode,
            "format": self.format.name,
            "format_source": self.format.source,
            "dtype": self.dtype,
            "bytes_per_token": self.bytes_per_token,
            "tb": self.tb,
            "tb_available": self.tb_available,
            "fits": self.fits,
            "drafter_nodes": self.drafter_nodes,
            "read_bytes_per_s": self.read_bytes_per_s,
            "storage_tokens_per_s": self.storage_tokens_per_s,
            "capture_tokens_per_s": self.capture_tokens_per_s,
            "train_tokens_per_s": self.train_tokens_per_s,
            "bound": self.bound,
            "capture_days": self.capture_days,
            "train_days_per_epoch": self.train_days_per_epoch,
            "days": self.days,
            "online_days": self.online_days,
            "billing": self.billing,
            "capture_billed_gpus": list(self.capture_billed),
            "train_billed_gpus": list(self.train_billed),
            "cost": self.cost,
            "online_cost": self.online_cost,
            "cost_unit": self.cost_unit,
            "capture_cost": self.capture_cost,
            "train_cost_per_epoch": self.train_cost_per_epoch,
            "online_cost_per_epoch": self.online_cost_per_epoch,
            "storage_usd": self.storage_usd,
            "storage_in_cost": self.storage_in_cost,
            "break_even_epochs": self.break_even_epochs,
            "break_even_epochs_days": self.break_even_epochs_days,
            "ranges": self.ranges.to_json() if self.ranges else None,
        }


def break_even_epochs(fixed: float, per_epoch: float, online_per_epoch: float) -> float | None:
    """E* of the closed form: the epochs at which fixed + E per_epoch = E online_per_epoch;
    None when offline never catches up (each epoch costs online no more than offline)."""
    gain = online_per_epoch - per_epoch
    if gain <= 0:
        return None
    return fixed / gain


@dataclass(frozen=True, slots=True)
class Run:
    """The offline run's figures at given capacities: floats for one plan, numpy arrays for
    many splits at once (search). `offline()` and search both compute them here, so a
    split's figures in search are the projection's own, bit for bit."""

    capture_s: Number
    train_s: Number  # per epoch
    storage_tokens_per_s: Number | None
    train_tokens_per_s: Number
    capture_billed: tuple[Number, Number]
    train_billed: tuple[Number, Number]
    capture_cost: Number | None
    train_cost_per_epoch: Number | None
    storage_usd: Number | None
    storage_in_cost: bool
    days: Number
    cost: Number | None


def stored(plan: Plan, hidden: int, captured_layers: int) -> tuple[Format, float]:
    """The storage format of the plan and the bytes it stores per token."""
    fmt = storage_format(plan.storage.format, plan.launch.format)
    final_state = FAMILIES[plan.workload.drafter].final_state
    dtype = plan.workload.storage_dtype
    return fmt, stored_bytes_per_token(hidden, captured_layers, dtype, fmt, final_state)


def fits_storage(plan: Plan, bytes_per_token: float, tokens_per_epoch: float) -> bool:
    """Whether the captured data fits `storage.tb` (unset: not checked)."""
    tb = plan.storage.tb
    return tb is None or bytes_per_token * tokens_per_epoch / BYTES_PER_TB <= tb


def run(
    plan: Plan,
    bytes_per_token: float,
    tokens_per_epoch: float,
    targets: Number,
    drafters: Number,
    capture_tokens_per_s: Number,
    drafter_tokens_per_s: Number,
    drafter_gpus_per_node: int,
    prices: RolePrices,
    in_usd: bool,
    online_billed: tuple[Number, Number],
    units: tuple[int, int],
) -> Run:
    """One epoch's tokens captured at the targets' capacity, then every epoch trained at
    the drafters' capacity, no faster than storage reads them; the days, the GPU cost by
    phase (`storage.billing`) and the storage's cost. Plain arithmetic on scalars or
    arrays of counts (as `pipeline.flow`)."""
    w, s = plan.workload, plan.storage
    storage_rate = storage_tokens_per_s(
        s.read_gb_per_s_per_node, nodes_of(drafters, drafter_gpus_per_node), bytes_per_token
    )
    train_rate = (
        drafter_tokens_per_s
        if storage_rate is None
        else minimum(drafter_tokens_per_s, storage_rate)
    )
    capture_s = tokens_per_epoch / capture_tokens_per_s
    train_s = tokens_per_epoch / train_rate
    if s.billing == "whole-run":
        capture_billed = train_billed = online_billed
    else:
        capture_billed = (-(-targets // units[0]) * units[0], 0 * targets)
        train_billed = (0 * drafters, -(-drafters // units[1]) * units[1])

    days = capture_s / SECONDS_PER_DAY + w.epochs * (train_s / SECONDS_PER_DAY)
    tb = bytes_per_token * tokens_per_epoch / BYTES_PER_TB
    storage_usd = (
        tb * s.usd_per_tb_month * days / DAYS_PER_MONTH if s.usd_per_tb_month is not None else None
    )
    storage_in_cost = in_usd and storage_usd is not None
    c_cap, b = _cost(capture_billed, capture_s, prices), _cost(train_billed, train_s, prices)
    total = (
        None
        if c_cap is None or b is None
        else c_cap + w.epochs * b + (storage_usd if storage_in_cost else 0.0)
    )
    return Run(
        capture_s,
        train_s,
        storage_rate,
        train_rate,
        capture_billed,
        train_billed,
        c_cap,
        b,
        storage_usd,
        storage_in_cost,
        days,
        total,
    )


def offline(
    plan: Plan,
    hidden: int,
    captured_layers: int,
    tokens_per_epoch: float,
    target_tokens_per_s: float,
    drafter_tokens_per_s: float,
    online_tokens_per_s: float,
    drafter_gpus_per_node: int,
    prices: RolePrices,
    cost_unit: str,
    in_usd: bool,
    online_billed: tuple[int, int],
    units: tuple[int, int],
) -> Offline:
    """The offline run of the plan's split (`run`), beside its online pipeline."""
    w, s = plan.workload, plan.storage
    fmt, per_token = stored(plan, hidden, captured_layers)
    T, D = plan.target.count, plan.drafter.count
    nodes = int(nodes_of(D, drafter_gpus_per_node))
    o = run(
        plan,
        per_token,
        tokens_per_epoch,
        T,
        D,
        target_tokens_per_s,
        drafter_tokens_per_s,
        drafter_gpus_per_node,
        prices,
        in_usd,
        online_billed,
        units,
    )
    storage_rate = None if o.storage_tokens_per_s is None else float(o.storage_tokens_per_s)
    train_rate = float(o.train_tokens_per_s)
    bound = (
        "storage" if storage_rate is not None and storage_rate < drafter_tokens_per_s else "drafter"
    )
    capture_s, train_s = float(o.capture_s), float(o.train_s)
    online_s = tokens_per_epoch / online_tokens_per_s
    c_cap = None if o.capture_cost is None else float(o.capture_cost)
    b = None if o.train_cost_per_epoch is None else float(o.train_cost_per_epoch)
    a = _cost(online_billed, online_s, prices)
    s_day = (
        per_token * tokens_per_epoch / BYTES_PER_TB * s.usd_per_tb_month / DAYS_PER_MONTH
        if o.storage_in_cost and s.usd_per_tb_month is not None
        else 0.0
    )
    t_cap, t_tr = capture_s / SECONDS_PER_DAY, train_s / SECONDS_PER_DAY
    even_cost = (
        break_even_epochs(c_cap + s_day * t_cap, b + s_day * t_tr, a)
        if c_cap is not None and b is not None and a is not None
        else None
    )
    return Offline(
        format=fmt,
        dtype=w.storage_dtype,
        bytes_per_token=per_token,
        tb=per_token * tokens_per_epoch / BYTES_PER_TB,
        tb_available=s.tb,
        drafter_nodes=nodes,
        read_bytes_per_s=(
            None if s.read_gb_per_s_per_node is None else s.read_gb_per_s_per_node * 1e9 * nodes
        ),
        storage_tokens_per_s=storage_rate,
        capture_tokens_per_s=target_tokens_per_s,
        drafter_tokens_per_s=drafter_tokens_per_s,
        train_tokens_per_s=train_rate,
        bound=bound,
        capture_days=t_cap,
        train_days_per_epoch=t_tr,
        epochs=w.epochs,
        online_days=w.epochs * online_s / SECONDS_PER_DAY,
        billing=s.billing,
        capture_billed=(int(o.capture_billed[0]), int(o.capture_billed[1])),
        train_billed=(int(o.train_billed[0]), int(o.train_billed[1])),
        cost_unit=cost_unit,
        capture_cost=c_cap,
        train_cost_per_epoch=b,
        online_cost_per_epoch=a,
        storage_usd=None if o.storage_usd is None else float(o.storage_usd),
        storage_in_cost=o.storage_in_cost,
        break_even_epochs=even_cost,
        break_even_epochs_days=break_even_epochs(t_cap, t_tr, online_s / SECONDS_PER_DAY),
        days=float(o.days),
        cost=None if o.cost is None else float(o.cost),
    )


def _cost(billed: tuple[Number, Number], seconds: Number, prices: RolePrices) -> Number | None:
    """The GPUs billed per role x their prices x the time, in the plan's cost unit."""
    t_price, d_price = prices.target_per_hour, prices.drafter_per_hour
    if t_price is None or d_price is None:
        return None
    return (billed[0] * t_price + billed[1] * d_price) * seconds / SECONDS_PER_HOUR


def offline_checks(o: Offline, mode: str) -> list[Diagnostic]:
    """The data not fitting the storage (an error in offline mode), and storage reads
    binding the trainers."""
    out: list[Diagnostic] = []
    if mode != "offline":
        return out
    if o.fits is False:
        out.append(
            Diagnostic(
                "storage-full",
                "storage.tb",
                f"offline hidden states need {o.tb:,.1f} TB ({o.bytes_per_token / 1e3:,.1f} KB "
                f"per token, {o.format.name} format, {o.dtype}) but storage.tb is "
                f"{o.tb_available:,.1f} TB: add storage, store fp8 (workload.storage_dtype), "
                f"capture fewer layers or train online",
                {"tb": o.tb, "tb_available": o.tb_available},
                level="error",
            )
        )
    if (
        o.bound == "storage"
        and o.storage_tokens_per_s is not None
        and o.read_bytes_per_s is not None
    ):
        out.append(
            Diagnostic(
                "storage-read-bound",
                "storage.read_gb_per_s_per_node",
                f"storage reads bind the drafters: {o.drafter_nodes} node(s) x "
                f"{o.read_bytes_per_s / o.drafter_nodes / 1e9:g} GB/s feed "
                f"{o.storage_tokens_per_s:,.0f} tok/s at {o.bytes_per_token / 1e3:,.1f} KB per "
                f"token, below the drafters' {o.drafter_tokens_per_s:,.0f} tok/s",
                {
                    "storage_tokens_per_s": o.storage_tokens_per_s,
                    "drafter_tokens_per_s": o.drafter_tokens_per_s,
                },
            )
        )
    return out
