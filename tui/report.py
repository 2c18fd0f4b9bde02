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
    title = p.plan.name or "plan"
    table = Table(title=f"{title}  ({p.target_model.name})", show_header=False, box=None,
                  title_justify="left", pad_edge=False)
    table.add_column("figure", style="bold")
    table.add_column("value")
    table.add_column("note", style="dim")
    if p.fits:
        table.add_row("throughput", fmt.ktok(p.tokens_per_s),
                      f"{p.samples_per_s:,.2f} samples/s; bottleneck: {p.bottleneck}")
        table.add_row(f"time to {p.epochs} epochs", fmt.days(p.days),
                      f"{p.tokens_per_epoch / 1e9:.3f} G tokens per epoch")
        table.add_row("total cost", fmt.cost(p.total_cost, p.cost_unit),
                      f"{fmt.cost(p.cost_per_epoch, p.cost_unit)} per epoch; "
                      f"{p.gpu_hours:,.0f} GPU-hours"
                      + (f"; ~${p.total_cost_usd:,.0f} at catalog prices"
                         if p.cost_unit != "USD" and p.total_cost_usd else ""))
        table.add_row("energy", f"{p.energy_kwh:,.0f} kWh", "all GPUs at TDP")
    else:
        table.add_row("throughput", "does not fit", "a role runs out of GPU memory (below)")
    console.print(table)

    roles = Table(show_lines=False, title_justify="left")
    for header in ("role", "GPU", "count", "capacity", "busy", "efficiency", "source",
                   "memory (needed / usable)"):
        roles.add_column(header, justify="right" if header in ("count", "capacity", "busy",
                                                                "efficiency") else "left")
    for r in (p.target, p.drafter):
        count = f"{r.count}" + (f" (tp {r.tp})" if r.tp > 1 else "")
        roles.add_row(r.role, r.gpu_name, count, fmt.ktok(r.capacity_tokens_per_s),
                      fmt.pct(r.utilization), fmt.pct(r.efficiency), r.source,
                      f"{fmt.gb(r.memory.needed_gb)} / {r.memory.available_gb:g} GB"
                      + ("" if r.memory.fits else "  DOES NOT FIT"))
    console.print(roles)
    console.print(f"hidden-state link: {p.link.description}; "
                  f"{p.target_work.hidden_state_bytes_per_token / 1e3:.1f} KB/token"
                  + (f", {p.hidden_state_bytes_per_s / 1e9:.2f} GB/s "
                     f"({fmt.pct(p.link_utilization)} of {fmt.ktok(p.link.tokens_per_s)})"
                     if p.fits else ""))
    if p.fits:
        console.print(f"one more target {'replica' if p.plan.target.tp > 1 else 'GPU'}: "
                      f"{p.marginal_target_tokens_per_s / 1e3:+,.1f} Ktok/s; one more drafter "
                      f"GPU: {p.marginal_drafter_tokens_per_s / 1e3:+,.1f} Ktok/s")
    for role in (p.target, p.drafter):
        console.print(f"[dim]{role.role}: {role.basis}[/dim]")
    for line in p.assumptions:
        console.print(f"[dim]assumes {line}[/dim]")
    if baseline is not None:
        c = compare(p, baseline)
        console.print(f"\n[bold]against the baseline[/bold] ({baseline.plan.name or 'plan'}): "
                      f"speed {fmt.times(c.speedup)}, cost {fmt.times(c.cost_ratio)}, "
                      f"days {fmt.signed_days(c.days_delta)} "
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
