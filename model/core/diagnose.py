"""The diagnostics stage: what a user should know about a projected plan, in one pass
over the frozen results of the stages before it (stages.py, job.py). The checks
themselves, one rule each, are in diagnostics.py, offline.py and here."""

from __future__ import annotations

from typing import Any

from ..basics import recipe
from ..inputs import formats
from ..inputs.catalog import Catalog
from ..inputs.plan import Plan, launch_receive
from ..physics.decode import maturity
from ..physics.pipeline import RECEIVE_NAMES, splits
from ..physics.roofline import MOE_EFFICIENCY_FACTOR, default_efficiency
from .diagnostics import (
    Diagnostic,
    anchors_check,
    colocated_memory_check,
    decode_maturity_checks,
    idle_check,
    link_check,
    maturity_checks,
    measurement_checks,
    memory_checks,
    range_note,
)
from .offline import offline_checks
from .phases import Regeneration
from .rates import Rates, engine, measured_implied
from .resolve import Resolved
from .stages import Money, Pipeline, Run


def diagnose(
    r: Resolved,
    catalog: Catalog,
    rt: Rates,
    pipe: Pipeline,
    money: Money,
    run: Run | None,
    regen: Regeneration | None,
) -> tuple[Diagnostic, ...]:
    """Every diagnostic of the plan, errors first where one stops it running."""
    plan = r.plan
    out: list[Diagnostic] = []
    for role_name in ("target", "drafter"):
        measured = measured_implied(role_name, r, catalog)
        moe = role_name == "target" and r.model.is_moe
        defaults = {k: default_efficiency(role_name, r.gpus[k], moe) for k in measured}
        out += measurement_checks(role_name, dict(measured), r.gpus, defaults)
    if plan.workload.topology == "colocated":
        # One GPU holds both roles; no hidden states leave it (no store, no transport).
        out += colocated_memory_check(r.target_gpu, pipe.target_memory)
        out += anchors_check(plan.workload.num_anchors, recipe.NUM_ANCHORS)
    else:
        out += memory_checks(
            (r.target_gpu, pipe.target_memory), (r.drafter_gpu, pipe.drafter_memory)
        )
        out += anchors_check(plan.workload.num_anchors, recipe.NUM_ANCHORS)
        out += _store_check(pipe, plan.workload.max_length)
        out += _transport_check(plan)
        out += _receive_check(plan)
    out += _mode_check(plan)
    if run is not None:
        out += _run_checks(r, rt, pipe, money, run)
    out += _maturity_checks(r, rt, catalog, regen)
    out += _price_checks(r, catalog, money)
    out += _moe_check(r)
    return tuple(out)


def _store_check(pipe: Pipeline, max_length: int) -> list[Diagnostic]:
    m = pipe.store_memory
    if m.fits is not False:
        return []
    return [
        Diagnostic(
            "store-memory",
            "workload.max_length",
            f"the Mooncake store needs {m.node_gib:,.0f} GiB of host memory on its "
            f"busiest node ({m.node_servers} capture server(s) x "
            f"{m.segment_gib} GiB segment + {m.local_buffer_gib:g} GiB buffer, "
            f"{m.node_ranks} trainer rank(s) x {m.rank_gib:,.1f} GiB, at "
            f"{max_length:,}-token samples of {m.sample_bytes / 2**30:,.2f} GiB) "
            f"but the node has {m.host_memory_gb:,.0f} GB: shorten max_length, "
            f"spread the targets over more nodes or use nodes with more RAM",
            {"node_gib": m.node_gib, "host_memory_gb": m.host_memory_gb},
            level="error",
        )
    ]


def _transport_check(plan: Plan) -> list[Diagnostic]:
    w = plan.workload
    launched = formats.row_of(plan.launch.format).transport  # None: the plan's own, or none
    if launched is None or w.transport == launched:
        return []
    return [
        Diagnostic(
            "transport-differs-from-launch",
            "workload.transport",
            f"the projection assumes hidden states go device to device (your own pipeline), "
            f"but the {plan.launch.format} launch stages them through a Mooncake store, "
            f'whose measured ceilings are lower: set workload.transport = "{launched}" to '
            f"project the launched run",
            {"transport": w.transport, "launch_format": plan.launch.format},
        )
    ]


def _receive_check(plan: Plan) -> list[Diagnostic]:
    """The plan projects a receive mode its launch format does not run (its row's receive):
    e.g. pinned receive, SpecForge's default since September 2026, under a launch that
    installs specforge 0.2.0, which receives into pageable host memory."""
    w, fmt = plan.workload, plan.launch.format
    launched = launch_receive(plan)
    if w.transport != "mooncake" or w.mode != "online" or launched in (None, w.receive):
        return []
    return [
        Diagnostic(
            "receive-differs-from-launch",
            "workload.receive",
            f"the projection assumes {RECEIVE_NAMES[w.receive]} (workload.receive = "
            f"{w.receive}), but the {fmt} launch runs {RECEIVE_NAMES[launched]}: "
            f"{formats.row_of(fmt).receive_why}; set workload.receive = "
            f'"{launched}" to project the launched run',
            {"receive": w.receive, "launch_receive": launched, "launch_format": fmt},
        )
    ]


def _either(names: tuple[str, ...]) -> str:
    """The names as a sentence lists them: a, b or c."""
    return " or ".join(filter(None, (", ".join(names[:-1]), names[-1])))


def _mode_check(plan: Plan) -> list[Diagnostic]:
    # Say so rather than let a launch script of the online pipeline pass for the offline
    # run (the launch itself refuses, model/launch/__init__.py).
    w = plan.workload
    if w.mode != "offline" or plan.launch.format in formats.offline_names():
        return []
    return [
        Diagnostic(
            "mode-differs-from-launch",
            "workload.mode",
            f"workload.mode is offline, but the {plan.launch.format} launch cannot write "
            f"the offline run: launch it with --format {_either(formats.offline_writers())} "
            f"(docs/launch.md, 'Offline mode')",
            {"mode": w.mode, "launch_format": plan.launch.format},
        )
    ]


def _run_checks(r: Resolved, rt: Rates, pipe: Pipeline, money: Money, run: Run) -> list[Diagnostic]:
    """The checks of a plan that fits: its link, idle GPUs, billed-but-unused GPUs, how
    wide its rates' ranges are, and its offline run's storage."""
    plan, f, throughput = r.plan, pipe.flow, pipe.tokens_per_s
    out = link_check(throughput, float(f.link_tokens_per_s), pipe.central.hidden.description)
    capacities = (float(f.target_tokens_per_s), float(f.drafter_tokens_per_s))
    roles = (("target", plan.target.count, plan.target.tp), ("drafter", plan.drafter.count, 1))
    # Colocated, no role waits on the other: each GPU's time is shared (no idle check).
    colocated = plan.workload.topology == "colocated"
    for (role, count, tp), capacity in zip(roles, capacities, strict=True):
        if colocated:
            break
        out += idle_check(
            role, count, tp, throughput / capacity, throughput, capacity, run.bottleneck
        )
    idle = sum(money.billed) - (plan.target.count + plan.drafter.count)
    if idle > 0:
        out.append(_idle_billed(r, pipe, money, idle))
    for rate in (rt.target, rt.drafter):
        out += range_note(rate)
    out += offline_checks(run.offline, plan.workload.mode)
    return out


def _idle_billed(r: Resolved, pipe: Pipeline, money: Money, idle: int) -> Diagnostic:
    """GPUs paid for but unused; with one GPU type, the split of all of them that runs
    fastest (one vectorised pipeline call)."""
    plan = r.plan
    total = sum(money.billed)
    units = {plan.target.gpu: money.units[0], plan.drafter.gpu: money.units[1]}
    rented = ", ".join(f"{r.gpus[k].name} in units of {u}" for k, u in units.items() if u > 1)
    rented = rented or "the launch's nodes"  # no unit bills more: a launch's allocation
    message = (
        f"{idle} GPU(s) billed but unused ({rented}): the cost counts "
        f"{total} GPUs for the {plan.target.count + plan.drafter.count} used"
    )
    values: dict[str, Any] = {"billed_gpus": total, "idle_gpus": idle}
    if r.same_gpu_type:
        import numpy as np  # a sweep of every split: one projection loads no numpy otherwise

        sweep = splits(pipe.central, total, plan.target.tp)
        if sweep is not None:
            targets, f = sweep
            tokens = np.asarray(f.tokens_per_s, float)
            best = int(targets[int(np.argmax(tokens))])
            gain = float(tokens.max()) / pipe.tokens_per_s
            message += (
                f"; using all {total}: {best} targets + {total - best} drafters, "
                f"{gain:.2f}x the throughput for the same bill"
            )
            values.update(best_targets=best, best_drafters=total - best, speedup=gain)
    return Diagnostic("billed-idle", "target.count", message, values)


def _maturity_checks(
    r: Resolved, rt: Rates, catalog: Catalog, regen: Regeneration | None
) -> list[Diagnostic]:
    out: list[Diagnostic] = []
    for rate in (rt.target, rt.drafter):
        entry = rate.gpu.maturity_of(rate.role, engine(rate.role, r.plan.launch.format))
        out += maturity_checks(rate, entry, catalog.today)
    if regen is not None:
        regen_gpu = r.gpus[regen.gpu]
        out += decode_maturity_checks(regen_gpu, maturity(regen_gpu, regen.engine), catalog.today)
    return out


def _price_checks(r: Resolved, catalog: Catalog, money: Money) -> list[Diagnostic]:
    """GPUs with no price, and offers older than the catalog's freshness rule."""
    view, in_use = money.prices, r.plan.gpus_in_use()
    out = [
        Diagnostic(
            "no-price",
            f"cost.ratio.{key}",
            f"no price for {r.gpus[key].name}: set cost.usd_per_gpu_hour.{key} or cost.ratio.{key}",
            {"gpu": key},
        )
        for key in in_use
        if view.per_hour(key) is None
    ]
    for key in in_use:
        offer = view.by_gpu[key].offer
        if offer is None or catalog.today is None or not offer.stale(catalog.today):
            continue
        age = offer.age_days(catalog.today)
        when = (
            f"{age} days old ({offer.date})"
            if age is not None
            else f"dated after today ({offer.date})"
            if offer.future(catalog.today)
            else "undated"
        )
        out.append(
            Diagnostic(
                "price-stale",
                "cost.provider",
                f"the {offer.provider} {offer.kind} price for {r.gpus[key].name} "
                f"(${offer.usd_per_gpu_hour:.2f}/GPU-h) is {when}: check the current rate "
                f"card or set cost.usd_per_gpu_hour.{key}",
                {"gpu": key, "provider": offer.provider, "date": offer.date},
            )
        )
    return out


def _moe_check(r: Resolved) -> list[Diagnostic]:
    if not r.model.is_moe or r.plan.calibration.target:
        return []
    return [
        Diagnostic(
            "moe-prefill",
            "calibration.target",
            f"{r.model.name} is a MoE model: its prefill is estimated at "
            f"{MOE_EFFICIENCY_FACTOR:.2f}x the dense default efficiency (fitted on MoE "
            f"training; MoE prefill at short prompts has been reported as low as 15-20 % of "
            f"peak); measure the target rate",
            {"model": r.model.key},
        )
    ]
