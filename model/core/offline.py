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

from dataclasses import dataclass
from typing import Any

from ..basics.units import SECONDS_PER_DAY, SECONDS_PER_HOUR
from ..inputs.plan import Plan
from ..physics.storage import (
    Format,
    nodes_of,
    storage_format,
    storage_tokens_per_s,
    stored_bytes_per_token,
)
from .diagnostics import Diagnostic
from .economics import RolePrices

DAYS_PER_MONTH = 365.25 / 12
BYTES_PER_TB = 1e12


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

    @property
    def days(self) -> float:
        return self.capture_days + self.epochs * self.train_days_per_epoch

    @property
    def storage_usd_per_day(self) -> float:
        return (self.storage_usd or 0.0) / self.days if self.days else 0.0

    @property
    def cost(self) -> float | None:
        if self.capture_cost is None or self.train_cost_per_epoch is None:
            return None
        storage = self.storage_usd if self.storage_in_cost and self.storage_usd else 0.0
        return self.capture_cost + self.epochs * self.train_cost_per_epoch + storage

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
        }


def break_even_epochs(fixed: float, per_epoch: float, online_per_epoch: float) -> float | None:
    """E* of the closed form: the epochs at which fixed + E per_epoch = E online_per_epoch;
    None when offline never catches up (each epoch costs online no more than offline)."""
    gain = online_per_epoch - per_epoch
    if gain <= 0:
        return None
    return fixed / gain


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
    """The offline run: one epoch's tokens captured at the targets' capacity, then every
    epoch trained at the drafters' capacity, no faster than storage reads them."""
    w, s = plan.workload, plan.storage
    fmt = storage_format(s.format, plan.launch.format)
    per_token = stored_bytes_per_token(hidden, captured_layers, w.storage_dtype, fmt)
    nodes = nodes_of(plan.drafter.count, drafter_gpus_per_node)
    storage_rate = storage_tokens_per_s(s.read_gb_per_s_per_node, nodes, per_token)
    train_rate = (
        drafter_tokens_per_s if storage_rate is None else min(drafter_tokens_per_s, storage_rate)
    )
    bound = (
        "storage" if storage_rate is not None and storage_rate < drafter_tokens_per_s else "drafter"
    )
    capture_s = tokens_per_epoch / target_tokens_per_s
    train_s = tokens_per_epoch / train_rate
    online_s = tokens_per_epoch / online_tokens_per_s
    T, D = plan.target.count, plan.drafter.count
    if s.billing == "whole-run":
        capture_billed = train_billed = online_billed
    else:
        capture_billed = (-(-T // units[0]) * units[0], 0)
        train_billed = (0, -(-D // units[1]) * units[1])

    def cost(billed: tuple[int, int], seconds: float, usd: bool = False) -> float | None:
        t_price = prices.target_usd_per_hour if usd else prices.target_per_hour
        d_price = prices.drafter_usd_per_hour if usd else prices.drafter_per_hour
        if t_price is None or d_price is None:
            return None
        return (billed[0] * t_price + billed[1] * d_price) * seconds / SECONDS_PER_HOUR

    days = (capture_s + w.epochs * train_s) / SECONDS_PER_DAY
    tb = per_token * tokens_per_epoch / BYTES_PER_TB
    storage_usd = (
        tb * s.usd_per_tb_month * days / DAYS_PER_MONTH if s.usd_per_tb_month is not None else None
    )
    storage_in_cost = in_usd and storage_usd is not None
    c_cap, b = cost(capture_billed, capture_s), cost(train_billed, train_s)
    a = cost(online_billed, online_s)
    s_day = (
        tb * s.usd_per_tb_month / DAYS_PER_MONTH
        if storage_in_cost and s.usd_per_tb_month is not None
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
        tb=tb,
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
        capture_billed=capture_billed,
        train_billed=train_billed,
        cost_unit=cost_unit,
        capture_cost=c_cap,
        train_cost_per_epoch=b,
        online_cost_per_epoch=a,
        storage_usd=storage_usd,
        storage_in_cost=storage_in_cost,
        break_even_epochs=even_cost,
        break_even_epochs_days=break_even_epochs(t_cap, t_tr, online_s / SECONDS_PER_DAY),
    )


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
