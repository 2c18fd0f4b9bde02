"""Human output of the headless commands, as Rich tables (rich, never textual)."""

from __future__ import annotations

import json
import sys
from collections.abc import Callable
from typing import Any

from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table

from ..model.catalog import Catalog
from ..model.compare import compare
from ..model.evidence import Validation
from ..model.offers import PRICE_MAX_AGE_DAYS
from ..model.projection import Projection
from ..model.search import Result as SearchResult
from ..model.targets import PRESETS
from . import format as fmt

# Every text that comes from a user (plan names, model names from config.json, GPU names
# from hardware files, and the model's sentences that quote them) goes through `escape`:
# Rich would read "[/bold]" in a name as markup and fail.


def _console() -> Console:
    return Console(highlight=False)


def projection(p: Projection, baseline: Projection | None = None) -> None:
    console = _console()
    name = p.plan.name or "plan"
    model = "" if p.target_model.name in name else f"  ({escape(p.target_model.name)})"
    console.print(f"[bold]{escape(name)}[/bold]{model}")
    summary = Table(show_header=False, box=None, pad_edge=False, padding=(0, 2, 0, 0))
    summary.add_column(style="bold", no_wrap=True)
    summary.add_column()
    if p.fits:
        samples = "" if p.samples_per_s is None else f" ({p.samples_per_s:,.2f} samples/s)"
        summary.add_row("throughput", f"{fmt.ktok(p.tokens_per_s)}{samples}, bottleneck: "
                                      f"[bold]{escape(str(p.bottleneck))}[/bold]"
                                      + _range(p, "tokens_per_s", fmt.ktok))
        summary.add_row("time", f"{fmt.duration(p.days)} to {p.epochs} epochs "
                                f"({p.tokens_per_epoch / 1e9:,.3f} G tokens per epoch)"
                                + _range(p, "days", fmt.duration))
        summary.add_row("total cost", escape(_cost_line(p))
                        + _range(p, "total_cost", lambda v: fmt.cost(v, p.cost_unit)))
        if p.gpu_hours is not None:
            energy = "" if p.energy_kwh is None else f"; energy {p.energy_kwh:,.0f} kWh at TDP"
            summary.add_row("GPU-hours", f"{p.gpu_hours:,.0f}{energy}")
    else:
        summary.add_row("throughput", "[bold red]does not fit[/bold red]: a role runs out of "
                                      "GPU memory (below)")
    console.print(summary)

    roles = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0), header_style="bold")
    for header, right in (("role", False), ("GPU", False), ("count", True), ("capacity", True),
                          ("busy", True), ("source", False), ("memory/GPU", True)):
        roles.add_column(header, justify="right" if right else "left", no_wrap=True)
    for r in (p.target, p.drafter):
        count = f"{r.count:,}" + (f" tp{r.tp}" if r.tp > 1 else "")
        roles.add_row(r.role, escape(r.gpu_name), count,
                      fmt.ktok(r.capacity_tokens_per_s), fmt.pct(r.utilization), r.source,
                      f"{r.memory.needed_gb:,.1f}/{r.memory.available_gb:,g} GB"
                      + ("" if r.memory.fits else " [bold red]NO FIT[/bold red]"))
    console.print()
    console.print(roles)
    console.print()
    link_load = ""
    if p.fits and p.hidden_state_bytes_per_s is not None:
        link_load = (f", {p.hidden_state_bytes_per_s / 1e9:,.2f} GB/s = "
                     f"{fmt.pct(p.link_utilization)} of the link")
    console.print(escape(f"hidden states: {p.target_work.hidden_state_bytes_per_token / 1e3:,.1f}"
                         f" KB/token{link_load} ({p.link.description})"))
    if p.fits and p.marginal_target_tokens_per_s is not None \
            and p.marginal_drafter_tokens_per_s is not None:
        console.print(f"one more target {'replica' if p.plan.target.tp > 1 else 'GPU'}: "
                      f"{p.marginal_target_tokens_per_s / 1e3:+,.1f} Ktok/s; one more drafter "
                      f"GPU: {p.marginal_drafter_tokens_per_s / 1e3:+,.1f} Ktok/s")
    for role in (p.target, p.drafter):
        console.print(f"[dim]{escape(f'{role.role}: {role.basis}; efficiency')} "
                      f"{fmt.pct(role.efficiency)}, {escape(role.limit)}-bound[/dim]")
    for line in p.assumptions:
        console.print(f"[dim]assumes {escape(line)}[/dim]")
    if p.narrowing:
        console.print(f"[bold]to narrow the range:[/bold] {escape(p.narrowing)}")
    if baseline is not None:
        c = compare(p, baseline)
        speed_range, cost_range = (
            f" (range {text})" if (text := fmt.spread(pair, fmt.times)) else ""
            for pair in (c.speedup_range, c.cost_ratio_range))
        console.print(f"\n[bold]against the baseline[/bold] "
                      f"({escape(baseline.plan.name or 'plan')}): "
                      f"speed {fmt.times(c.speedup)}{speed_range}, cost "
                      f"{fmt.times(c.cost_ratio)}{cost_range}, "
                      f"{fmt.signed_duration(c.days_delta)} "
                      f"({fmt.duration(baseline.days)} -> {fmt.duration(p.days)})")
        if c.break_even_price_ratio:
            console.print("  " + escape(fmt.break_even(p, c.break_even_price_ratio)))
        for line in c.why:
            console.print(f"  because {escape(line)}")
    for warning in p.warnings:
        console.print(f"[yellow]warning:[/yellow] {escape(warning)}")


def _range(p: Projection, field: str, one: Callable[[float | None], str]) -> str:
    """'; range a-b' after an estimated figure; nothing for a measured one."""
    if p.ranges is None or getattr(p.ranges, field) is None:
        return ""
    text = fmt.spread(getattr(p.ranges, field), one)
    return f"; range {escape(text)}" if text else ""


def validation(result: Validation) -> None:
    """The validation table and its summary per tier and half."""
    table = Table(title="the model against public measurements (dflash-plan validate)",
                  header_style="bold")
    for header, right in (("case", False), ("GPU", False), ("quantity", False),
                          ("measured", True), ("predicted", True), ("error", True),
                          ("half", False), ("tier", False)):
        table.add_column(header, justify="right" if right else "left",
                         no_wrap=header in ("case", "quantity"))
    for r in result.rows:
        error = f"{r.error * 100:+,.1f} %"
        table.add_row(escape(r.id), r.gpu, r.quantity, f"{r.measured:,.4g}",
                      f"{r.predicted:,.4g}", error if r.covered else f"[yellow]{error}[/yellow]",
                      r.half, r.tier)
    _print_table(table)
    summary = Table(title="summary: |error| (predicted / measured - 1)", header_style="bold")
    for header in ("cases", "n", "median", "worst", "in range", "median width"):
        summary.add_column(header, justify="left" if header == "cases" else "right")
    for key, s in result.summary.items():
        summary.add_row(key, str(s.cases), fmt.percent(s.median_abs_error),
                        fmt.percent(s.worst_abs_error), fmt.percent(s.range_coverage),
                        fmt.percent(s.median_range_width))
    _print_table(summary)


def _cost_line(p: Projection) -> str:
    """Total cost, per epoch, and the USD estimate beside reference-GPU-hours; a dash
    for what has no price (a GPU without one in the catalog or the plan)."""
    if p.total_cost is None:
        return f"{fmt.DASH} (no price for a GPU of this plan: see the warnings)"
    per_epoch = (fmt.cost(p.cost_per_epoch, p.cost_unit) if p.cost_unit == "USD"
                 else fmt.DASH if p.cost_per_epoch is None else f"{p.cost_per_epoch:,.0f}")
    extra = (f"; ~${p.total_cost_usd:,.0f} at catalog prices"
             if p.cost_unit != "USD" and p.total_cost_usd else "")
    return f"{fmt.cost(p.total_cost, p.cost_unit)} ({per_epoch} per epoch{extra})"


def _print_table(table: Table) -> None:
    """Print a listing whole: at a terminal's width, and when piped at the width the
    table needs (a pipe is not a screen; nothing is cut or wrapped)."""
    console = _console()
    if not console.is_terminal:
        wide = console.options.update_width(10_000)
        needed = Measurement.get(console, wide, table).maximum
        console = Console(highlight=False, width=max(console.width, needed))
    console.print(table)


def gpus(catalog: Catalog, as_json: bool) -> int:
    if as_json:
        json.dump({k: g.model_dump(exclude={"key"}) for k, g in catalog.gpus.items()},
                  sys.stdout, indent=2)
        print()
        return 0
    table = Table(title="GPU catalog (dense, per GPU)")
    # The key is what --set and plans take: never cut or wrapped.
    table.add_column("key", no_wrap=True, min_width=max(map(len, catalog.gpus), default=3))
    for header in ("name", "bf16 TF", "mem GB", "TB/s", "link", "per node", "net Gb/s",
                   "$/GPU-h"):
        table.add_column(header)
    for key, g in catalog.gpus.items():
        table.add_row(key, escape(g.name), f"{g.bf16_tflops:,g}", f"{g.memory_gb:,g}",
                      f"{g.mem_bw_tb_s:g}", f"{g.link.kind} {g.link.gb_per_s:,g} GB/s",
                      f"{g.gpus_per_node}", f"{g.network_gbps_per_gpu:,g}",
                      fmt.DASH if g.usd_per_gpu_hour is None else f"{g.usd_per_gpu_hour:.2f}")
    _print_table(table)
    return 0


def models(as_json: bool) -> int:
    if as_json:
        json.dump({k: m.model_dump(exclude={"key"}) | {"total_params": m.total_params}
                   for k, m in PRESETS.items()}, sys.stdout, indent=2)
        print()
        return 0
    table = Table(title="target model presets (or give the path of a config.json)")
    table.add_column("key", no_wrap=True, min_width=max(map(len, PRESETS)))
    table.add_column("name", no_wrap=True)
    for header in ("params", "layers", "hidden", "heads/kv", "vocab", "MoE"):
        table.add_column(header)
    for key, m in PRESETS.items():
        table.add_row(key, m.name, f"{m.total_params / 1e9:.1f} B", str(m.n_layers),
                      str(m.hidden), f"{m.n_heads}/{m.n_kv_heads}", f"{m.vocab:,}",
                      f"{m.n_experts} experts, top {m.experts_per_token}" if m.is_moe else "")
    _print_table(table)
    return 0


def _plan_cell(plan: Any, names: dict[str, str]) -> str:
    t, d = plan.target, plan.drafter
    tp = f" tp{t.tp}" if t.tp > 1 else ""
    if t.gpu == d.gpu:
        return f"{t.count} + {d.count} {names.get(t.gpu, t.gpu)}{tp}"
    return f"{t.count} {names.get(t.gpu, t.gpu)}{tp} + {d.count} {names.get(d.gpu, d.gpu)}"


def search(result: SearchResult, deadline_days: float | None, budget: float | None) -> None:
    """The Pareto front and the winners of a search."""
    console = _console()
    console.print(f"searched {result.evaluated:,} configurations; {result.feasible:,} fit and "
                  f"meet the constraints")
    if result.why_none:
        console.print(f"[bold red]no plan[/bold red]: {escape(result.why_none)}")
        return
    names = {c.plan.target.gpu: c.projection.target.gpu_name for c in result.front}
    names |= {c.plan.drafter.gpu: c.projection.drafter.gpu_name for c in result.front}
    table = Table(title=f"the (days, cost) front, fastest first (cost in {result.cost_unit})",
                  header_style="bold")
    for header, right in (("targets + drafters", False), ("Ktok/s", True), ("days", True),
                          ("pessimistic", True), ("cost", True), ("bottleneck", False)):
        table.add_column(header, justify="right" if right else "left", no_wrap=True)
    for candidate in result.front:
        p = candidate.projection
        table.add_row(escape(_plan_cell(candidate.plan, names)), f"{(p.ktok_per_s or 0):,.1f}",
                      fmt.duration(p.days), fmt.duration(candidate.pessimistic_days),
                      fmt.cost(p.total_cost, p.cost_unit, compact=True), str(p.bottleneck))
    _print_table(table)
    for label, c, why in (
            ("cheapest within the deadline", result.cheapest_within_deadline,
             f"{fmt.duration(deadline_days)}" if deadline_days else ""),
            ("fastest within the budget", result.fastest_within_budget,
             fmt.cost(budget, result.cost_unit) if budget else ""),
            ("most tokens per unit of cost", result.most_tokens_per_cost, "")):
        if c is None:
            continue
        p = c.projection
        names |= {c.plan.target.gpu: p.target.gpu_name, c.plan.drafter.gpu: p.drafter.gpu_name}
        verdict = ""
        if c.meets_deadline_pessimistic is not None:
            verdict = ("; meets the deadline even at the pessimistic end"
                       if c.meets_deadline_pessimistic else
                       f"; at the pessimistic end {fmt.duration(c.pessimistic_days)}: "
                       f"[yellow]misses the deadline[/yellow]")
        console.print(f"[bold]{label}[/bold]{' (' + escape(why) + ')' if why else ''}: "
                      f"{escape(_plan_cell(c.plan, names))}, {fmt.ktok(p.tokens_per_s)}, "
                      f"{fmt.duration(p.days)}, "
                      f"{escape(fmt.cost(p.total_cost, p.cost_unit))}{verdict}")


def _with_range(value: str, pair: tuple[float, float] | None,
                one: Callable[[float | None], str]) -> str:
    """'1.50x (1.20-1.90x)'; the value alone when the range is none or zero wide."""
    text = fmt.spread(pair, one)
    return f"{value} ({text})" if text else value


def comparison(rows: list[tuple[Any, Projection, Any]], style: str) -> None:
    """Scenarios side by side: the first is the baseline."""
    headers = ["plan", "Ktok/s", "range", "days", "cost", "cost/epoch", "bottleneck",
               "speed", "cost ratio", "break-even"]
    body = []
    for path, p, c in rows:
        r = p.ranges
        be = c.break_even_price_ratio
        body.append([
            str(path), f"{(p.ktok_per_s or 0):,.1f}",
            fmt.spread(r.tokens_per_s if r else None, fmt.ktok) or fmt.DASH,
            fmt.duration(p.days), fmt.cost(p.total_cost, p.cost_unit, compact=True),
            fmt.cost(p.cost_per_epoch, p.cost_unit, compact=True), str(p.bottleneck),
            _with_range(fmt.times(c.speedup), c.speedup_range, fmt.times),
            _with_range(fmt.times(c.cost_ratio), c.cost_ratio_range, fmt.times),
            ", ".join(f"{v:.2f}x" for v in dict.fromkeys(be.values())) if be else fmt.DASH])
    if style == "csv":
        import csv

        writer = csv.writer(sys.stdout)
        writer.writerow(headers)
        writer.writerows(body)
        return
    if style == "markdown":
        print("| " + " | ".join(headers) + " |")
        print("|" + "---|" * len(headers))
        for row in body:
            print("| " + " | ".join(cell.replace("|", "\\|") for cell in row) + " |")
        return
    table = Table(title="scenarios (the first is the baseline)", header_style="bold")
    for header in headers:
        table.add_column(header, no_wrap=header == "plan")
    for row in body:
        table.add_row(*(escape(cell) for cell in row))
    _print_table(table)


def offers(catalog: Catalog, gpu: str | None, provider: str | None, as_json: bool) -> int:
    """The rental offers, cheapest first per GPU, with their unit and age."""
    rows = [o for o in catalog.offers if (gpu is None or o.gpu == gpu)
            and (provider is None or o.provider == provider)]
    if gpu is not None and gpu not in catalog.gpus:
        catalog.gpu(gpu, "--gpu")
    if as_json:
        json.dump([{**o.model_dump(),
                    "age_days": o.age_days(catalog.today) if catalog.today else None,
                    "old": o.stale(catalog.today) if catalog.today else None}
                   for o in rows], sys.stdout, indent=2)
        print()
        return 0
    table = Table(title="rental offers (set cost.provider and cost.kind in a plan to use them)",
                  header_style="bold")
    for header, right in (("gpu", False), ("provider", False), ("kind", False),
                          ("$/GPU-h", True), ("rented by", True), ("date", False),
                          ("instance", False)):
        table.add_column(header, justify="right" if right else "left",
                         no_wrap=header in ("gpu", "provider"))
    for o in sorted(rows, key=lambda o: (o.gpu, o.kind, o.usd_per_gpu_hour)):
        age = o.age_days(catalog.today) if catalog.today else None
        stale = catalog.today is not None and o.stale(catalog.today)
        # "old" is said in words as well as in colour: a pipe or a screen reader keeps it.
        date = o.date + (f" ({age} d)" if age is not None else "") + (" old" if stale else "")
        table.add_row(o.gpu, escape(o.provider), o.kind, f"{o.usd_per_gpu_hour:,.2f}",
                      f"{o.unit_gpus} GPU" + ("s" if o.unit_gpus > 1 else ""),
                      f"[yellow]{date}[/yellow]" if stale else date, escape(o.instance))
    table.caption = (f"old: undated, or seen more than {PRICE_MAX_AGE_DAYS} days ago; check "
                     f"the provider's price before you rely on it")
    _print_table(table)
    return 0
