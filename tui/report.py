"""Human output of the headless commands, as Rich tables (rich, never textual)."""

from __future__ import annotations

import json
import sys

from rich.console import Console
from rich.table import Table

from ..model.compare import compare
from ..model.projection import Catalog, Projection
from ..model.targets import PRESETS
from . import format as fmt


def _console() -> Console:
    return Console(highlight=False)


def projection(p: Projection, baseline: Projection | None = None) -> None:
    console = _console()
    console.print(f"[bold]{p.plan.name or 'plan'}[/bold]  ({p.target_model.name})")
    summary = Table(show_header=False, box=None, pad_edge=False, padding=(0, 2, 0, 0))
    summary.add_column(style="bold", no_wrap=True)
    summary.add_column()
    if p.fits:
        summary.add_row("throughput", f"{fmt.ktok(p.tokens_per_s)} ({p.samples_per_s:,.2f} "
                                      f"samples/s), bottleneck: [bold]{p.bottleneck}[/bold]")
        summary.add_row("time", f"{fmt.days(p.days)} to {p.epochs} epochs "
                                f"({p.tokens_per_epoch / 1e9:.3f} G tokens per epoch)")
        extra = (f"; ~${p.total_cost_usd:,.0f} at catalog prices"
                 if p.cost_unit != "USD" and p.total_cost_usd else "")
        per_epoch = (fmt.cost(p.cost_per_epoch, p.cost_unit) if p.cost_unit == "USD"
                      else f"{p.cost_per_epoch:,.0f}")
        summary.add_row("total cost", f"{fmt.cost(p.total_cost, p.cost_unit)} "
                                      f"({per_epoch} per epoch{extra})")
        summary.add_row("GPU-hours", f"{p.gpu_hours:,.0f}; energy {p.energy_kwh:,.0f} kWh at TDP")
    else:
        summary.add_row("throughput", "[bold red]does not fit[/bold red]: a role runs out of "
                                      "GPU memory (below)")
    console.print(summary)

    roles = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0), header_style="bold")
    for header, right in (("role", False), ("GPU", False), ("count", True), ("capacity", True),
                          ("busy", True), ("source", False), ("memory/GPU", True)):
        roles.add_column(header, justify="right" if right else "left", no_wrap=True)
    for r in (p.target, p.drafter):
        roles.add_row(r.role, r.gpu_name, f"{r.count}" + (f" tp{r.tp}" if r.tp > 1 else ""),
                      fmt.ktok(r.capacity_tokens_per_s), fmt.pct(r.utilization), r.source,
                      f"{r.memory.needed_gb:,.1f}/{r.memory.available_gb:g} GB"
                      + ("" if r.memory.fits else " [bold red]NO FIT[/bold red]"))
    console.print()
    console.print(roles)
    console.print()
    console.print(f"hidden states: {p.target_work.hidden_state_bytes_per_token / 1e3:.1f} KB/token"
                  + (f", {p.hidden_state_bytes_per_s / 1e9:.2f} GB/s = {fmt.pct(p.link_utilization)} "
                     f"of the link" if p.fits else "") + f" ({p.link.description})")
    if p.fits:
        console.print(f"one more target {'replica' if p.plan.target.tp > 1 else 'GPU'}: "
                      f"{p.marginal_target_tokens_per_s / 1e3:+,.1f} Ktok/s; one more drafter "
                      f"GPU: {p.marginal_drafter_tokens_per_s / 1e3:+,.1f} Ktok/s")
    for role in (p.target, p.drafter):
        console.print(f"[dim]{role.role}: {role.basis}; efficiency {fmt.pct(role.efficiency)}, "
                      f"{role.limit}-bound[/dim]")
    for line in p.assumptions:
        console.print(f"[dim]assumes {line}[/dim]")
    if baseline is not None:
        c = compare(p, baseline)
        console.print(f"\n[bold]against the baseline[/bold] ({baseline.plan.name or 'plan'}): "
                      f"speed {fmt.times(c.speedup)}, cost {fmt.times(c.cost_ratio)}, "
                      f"{fmt.signed_days(c.days_delta)} "
                      f"({fmt.days(baseline.days)} -> {fmt.days(p.days)})")
        for line in c.why:
            console.print(f"  because {line}")
    for warning in p.warnings:
        console.print(f"[yellow]warning:[/yellow] {warning}")


def gpus(catalog: Catalog, as_json: bool) -> int:
    if as_json:
        json.dump({k: g.model_dump(exclude={"key"}) for k, g in catalog.gpus.items()},
                  sys.stdout, indent=2)
        print()
        return 0
    table = Table(title="GPU catalog (dense, per GPU)")
    for header in ("key", "name", "bf16 TF", "mem GB", "TB/s", "link", "per node",
                   "net Gb/s", "$/GPU-h"):
        table.add_column(header)
    for key, g in catalog.gpus.items():
        table.add_row(key, g.name, f"{g.bf16_tflops:,g}", f"{g.memory_gb:g}",
                      f"{g.mem_bw_tb_s:g}", f"{g.link.kind} {g.link.gb_per_s:g} GB/s",
                      f"{g.gpus_per_node}", f"{g.network_gbps_per_gpu:g}",
                      "—" if g.usd_per_gpu_hour is None else f"{g.usd_per_gpu_hour:.2f}")
    _console().print(table)
    return 0


def models(as_json: bool) -> int:
    if as_json:
        json.dump({k: m.model_dump(exclude={"key"}) | {"total_params": m.total_params}
                   for k, m in PRESETS.items()}, sys.stdout, indent=2)
        print()
        return 0
    table = Table(title="target model presets (or give the path of a config.json)")
    for header in ("key", "name", "params", "layers", "hidden", "heads/kv", "vocab", "MoE"):
        table.add_column(header)
    for key, m in PRESETS.items():
        table.add_row(key, m.name, f"{m.total_params / 1e9:.1f} B", str(m.n_layers),
                      str(m.hidden), f"{m.n_heads}/{m.n_kv_heads}", f"{m.vocab:,}",
                      f"{m.n_experts} experts, top {m.experts_per_token}" if m.is_moe else "")
    _console().print(table)
    return 0
