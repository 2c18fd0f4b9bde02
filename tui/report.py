"""Human output of the headless commands, as Rich tables (rich, never textual)."""

from __future__ import annotations

import io
import json
import os
import sys
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, TextIO, cast

from rich.cells import cell_len
from rich.console import Console
from rich.markup import escape
from rich.measure import Measurement
from rich.table import Table
from rich.text import Text

from ..model.basics.terminal import terminal_safe
from ..model.core import figures as F
from ..model.core.checkpoints import HOURS_PER_MONTH
from ..model.core.labels import split_label
from ..model.core.projection import Projection
from ..model.evidence.evidence import TOPOLOGY_TOLERANCE, Validation
from ..model.explore import compare as comparing
from ..model.explore.compare import Compared, compare
from ..model.explore.objective import HIGHEST_TAU, ObjectiveResult, Outcome
from ..model.explore.search import TIE_RULE, Candidate
from ..model.explore.search import Result as SearchResult
from ..model.inputs.catalog import Catalog
from ..model.inputs.offers import PRICE_MAX_AGE_DAYS
from ..model.inputs.plan import Plan
from ..model.inputs.targets import PRESETS
from ..model.launch import launch_line
from ..model.physics.fitting import efficiency_basis, efficiency_measured
from . import format as fmt

# Every text that comes from a user (plan names, model names from config.json, GPU names
# from hardware files, and the model's sentences that quote them) goes through `escape`:
# Rich would read "[/bold]" in a name as markup and fail.


class _LineEnds(io.TextIOBase):
    """stdout without the spaces that end a line: Rich pads every row of a table to the
    table's width, which in a pipe or a file is clutter (80 columns of it, for `grep`,
    `diff` and `wc -L`). A run of spaces is held until the next text shows whether a line
    break follows it."""

    def __init__(self, out: TextIO) -> None:
        self._out, self._spaces = out, ""

    def write(self, text: str) -> int:
        *lines, last = (self._spaces + text).split("\n")
        kept = last.rstrip(" ")
        self._spaces = last[len(kept) :]
        self._out.write("".join(line.rstrip(" ") + "\n" for line in lines) + kept)
        return len(text)

    def flush(self) -> None:
        self._out.flush()

    def isatty(self) -> bool:
        return self._out.isatty()

    def fileno(self) -> int:
        return self._out.fileno()

    @property
    def encoding(self) -> str:  # type: ignore[override]
        return getattr(self._out, "encoding", None) or "utf-8"


class _Console(Console):
    """Rich's console, with every string it renders (a printed line, a table's cell,
    title or caption) terminal-safe: user text reaches it inside markup and cells, and
    Rich passes ESC and C1 controls through to the terminal."""

    def render_str(self, text: str, **kwargs: Any) -> Text:
        return super().render_str(terminal_safe(text, keep="\n"), **kwargs)

    def on_broken_pipe(self) -> None:
        """The reader went away (`| head`): cli.main ends quietly with exit 0, as Unix
        tools do, where Rich would exit 1."""
        self.quiet = True
        raise BrokenPipeError


def _console(width: int | None = None) -> Console:
    """The console every report prints through (stdout as it is when the report runs)."""
    # A TextIOBase is a text stream at run time; typeshed does not call it an IO[str].
    out = cast(TextIO, _LineEnds(sys.stdout))
    return _Console(highlight=False, width=width, file=out)


def projection(p: Projection, baseline: Projection | None = None) -> None:
    console = _console()
    name = p.plan.name or "plan"
    said = [] if p.target_model.name in name else [p.target_model.name]
    # The built-in family goes unsaid, and so does one the name says (a derived name does).
    if p.plan.workload.drafter != "dflash" and p.drafter_family not in name:
        said.append(f"{p.drafter_family} drafter")
    if p.plan.target.precision != "bf16":
        said.append(f"target in {p.plan.target.precision}")
    model = f"  ({escape(', '.join(said))})" if said else ""
    console.print(f"[bold]{escape(name)}[/bold]{model}")
    summary = Table(show_header=False, box=None, pad_edge=False, padding=(0, 2, 0, 0))
    summary.add_column(style="bold", no_wrap=True)
    summary.add_column()
    # A plan that cannot run (GPU memory, storage, the store's host memory: one rule,
    # Projection.does_not_fit) has no headline figures: it says why first.
    unfit = p.does_not_fit
    if unfit is None:
        samples = (
            ""
            if p.samples_per_s is None
            else f" ({_figure(F.SAMPLES_PER_S, p)} {F.SAMPLES_PER_S.unit})"
        )
        if rates := offline_rates(p):
            # An offline run's own rates lead; the online pipeline's is in its row below.
            summary.add_row(F.TOKENS_PER_S.name, escape(", ".join(rates)))
        else:
            summary.add_row(
                F.TOKENS_PER_S.name,
                f"{_figure(F.TOKENS_PER_S, p)}{samples}, {F.BOTTLENECK.name}: "
                f"[bold]{escape(_figure(F.BOTTLENECK, p))}[/bold]"
                + escape(time_shared(p))
                + _range(p, F.TOKENS_PER_S),
            )
        if p.job.phased:
            # The plan's own job leads (its offline run, regeneration first when on); the
            # online pipeline's figures follow, named.
            for name, value in job_rows(p):
                summary.add_row(name, escape(value))
        else:
            summary.add_row(
                F.DAYS.name,
                f"{_figure(F.DAYS, p)} to {_epochs(p)} "
                f"({_figure(F.TOKENS_PER_EPOCH, p)} per epoch)" + _range(p, F.DAYS),
            )
            summary.add_row(
                F.TOTAL_COST.name,
                escape(_cost_line(p)) + _range(p, F.TOTAL_COST),
            )
            if p.gpu_hours is not None:
                energy = (
                    ""
                    if p.energy_kwh is None
                    else f"; {F.ENERGY_KWH.name} {_figure(F.ENERGY_KWH, p)} "
                    f"{F.ENERGY_KWH.unit} at TDP"
                )
                summary.add_row(F.GPU_HOURS.name, f"{_figure(F.GPU_HOURS, p)}{energy}")
        # The figures no headline composes: a row each, from the registry.
        for f in F.rows(F.View.REPORT):
            summary.add_row(f.name, escape(fmt.figure(f, f.read(p), p.cost_unit)))
        if p.ranges is not None and fmt.spread(p.ranges.days, fmt.duration):
            summary.add_row(
                "range ends",
                escape(f"slow if {p.ranges.slow_scenario}; fast if {p.ranges.fast_scenario}"),
            )
    else:
        summary.add_row(F.TOKENS_PER_S.name, f"[bold red]does not fit[/bold red]: {escape(unfit)}")
    console.print(summary)
    if line := topology_line(p):
        console.print(escape(line))
    # Where the prices behind the cost come from, beside it, as compare and search say it.
    for label, q in (("", p), ("baseline: ", baseline)):
        if q is not None and (text := fmt.plan_prices_not_set(q)):
            console.print(escape(label + text))
    console.print(escape(launch_line(p.plan)))

    roles = Table(box=None, pad_edge=False, padding=(0, 2, 0, 0), header_style="bold")
    for header, right in (
        ("role", False),
        ("GPU", False),
        ("count", True),
        ("capacity", True),
        ("busy", True),
        ("source", False),
        ("memory/GPU", True),
    ):
        roles.add_column(header, justify="right" if right else "left", no_wrap=True)
    for r in (p.target, p.drafter):
        count = f"{r.count:,}" + (f" tp{r.tp}" if r.tp > 1 else "")
        roles.add_row(
            r.role,
            escape(r.gpu_name),
            count,
            fmt.ktok(r.capacity_tokens_per_s),
            fmt.pct(r.utilization),
            r.source,
            f"{r.memory.needed_gb:,.1f}/{r.memory.available_gb:,g} GB"
            + ("" if r.memory.fits else " [bold red]NO FIT[/bold red]"),
        )
    console.print()
    console.print(roles)
    console.print()
    link_load = ""
    if unfit is None and p.hidden_state_bytes_per_s is not None:
        link_load = (
            f", {p.hidden_state_bytes_per_s / 1e9:,.2f} GB/s = "
            f"{fmt.pct(p.link_utilization)} of the link"
        )
    console.print(escape(hidden_state_line(p, link_load)))
    for line in [*offline_lines(p), *store_lines(p), *checkpoint_lines(p), *phase_lines(p)]:
        console.print(escape(line))
    if unfit is None and (more := more_gpus(p)):
        width = max(len(name) for name, _ in more)
        for name, value in more:
            console.print(f"one more {name + ':':<{width + 1}} {value}")
    serving = p.resolved.gpus[p.acceptance.serving_gpu].name
    for line in fmt.acceptance_lines(p.acceptance, p.cost_unit, serving):
        console.print(escape(line))
    for role in (p.target, p.drafter):
        console.print(
            f"[dim]{escape(f'{role.role}: {role.basis}; efficiency')} "
            f"{fmt.pct(role.efficiency)}, {escape(role.limit)}-bound[/dim]"
        )
    for line in p.assumptions:
        console.print(f"[dim]assumes {escape(line)}[/dim]")
    if p.narrowing:
        console.print(f"[bold]to narrow the range:[/bold] {escape(p.narrowing)}")
    if baseline is not None:
        c = compare(p, baseline)
        speed_range, cost_range = (
            f" (range {text})" if (text := fmt.spread(pair, fmt.figure_of(f))) else ""
            for f, pair in ((F.SPEEDUP, c.speedup_range), (F.COST_RATIO, c.cost_ratio_range))
        )
        console.print(
            f"\n[bold]against the baseline[/bold] "
            f"({escape(baseline.plan.name or 'plan')}): "
            f"{F.SPEEDUP.name} {fmt.figure(F.SPEEDUP, c.speedup)}{speed_range}, cost "
            f"{fmt.figure(F.COST_RATIO, c.cost_ratio)}{cost_range}, "
            f"{fmt.figure(F.DAYS_DELTA, c.days_delta)} "
            f"({_job_days(baseline)} -> {_job_days(p)}"
            + (
                f"; each plan's job: {job_name(baseline)} vs {job_name(p)}"
                if p.job.phased or baseline.job.phased
                else ""
            )
            + ")"
        )
        if c.speedup_range_scenarios and c.speedup_range:
            (low, high), (slow, fast) = c.speedup_range, c.speedup_range_scenarios
            console.print(
                "  "
                + escape(
                    f"{F.SPEEDUP.name} {fmt.figure(F.SPEEDUP, low)} if {slow}; "
                    f"{fmt.figure(F.SPEEDUP, high)} "
                    f"if {fast} (both plans under the same scenario)"
                )
            )
        if c.break_even_price_ratio:
            even = fmt.break_even(p, c.break_even_price_ratio)
            ranges = c.break_even_price_ratio_range or {}
            ends = next(iter(ranges.values()), None)
            if text := fmt.spread(ends, fmt.times):
                even += f" (range {text})"
            console.print("  " + escape(even))
        for f in F.rows(F.View.REPORT, "comparison"):
            console.print(f"  {f.name} " + escape(fmt.figure(f, f.read(c), p.cost_unit)))
        for line in c.why:
            console.print(f"  because {escape(line)}")
    for d in p.diagnostics:
        label = "[bold red]error:[/bold red]" if d.level == "error" else "[yellow]warning:[/yellow]"
        console.print(f"{label} {escape(d.message)}")


def hidden_state_line(p: Projection, link_load: str) -> str:
    """The hidden states' line: their bytes and the link they cross (colocated: none)."""
    per_token = f"hidden states: {p.target_work.hidden_state_bytes_per_token / 1e3:,.1f} KB/token"
    if p.topology == "colocated":
        return f"{per_token}, captured and trained on the same GPU (colocated: no link)"
    return f"{per_token}{link_load} ({p.link.description})"


def time_shared(p: Projection) -> str:
    """What a colocated plan's GPUs spend their time on, after its bound ("time-shared");
    empty for a disaggregated plan or one that does not fit."""
    shares = p.time_shares
    if shares is None or p.bottleneck is None:
        return ""
    return (
        f" (target forward {fmt.pct(shares[0])}, drafter step {fmt.pct(shares[1])} "
        f"of each GPU's time)"
    )


def topology_cell(p: Projection) -> str:
    """A plan's topology, and which wins on its GPUs where it can run both ways."""
    v = p.topology_verdict
    if v is None:
        return p.topology
    gain = fmt.figure(F.SPEEDUP, v.speedup)
    return f"{p.topology} ({v.winner} wins on these {v.gpus} GPUs, {gain})"


def topology_line(p: Projection) -> str | None:
    """Which topology wins on the plan's GPUs, by how much, and both figures: colocated on
    the plan's GPUs against the best disaggregated split of the same GPUs, that split said
    with its figure; None when the plan cannot run both ways. One line of the results
    panel at 120 columns (73 characters) where colocated fits."""
    v = p.topology_verdict
    if v is None:
        return None
    split = f"{v.disaggregated_split[0]}+{v.disaggregated_split[1]}"
    # The winner's figure with its unit, the other's as a bare number beside it.
    disaggregated, colocated = (
        fmt.ktok(v.disaggregated_tokens_per_s),
        fmt.ktok(v.colocated_tokens_per_s),
    )
    if v.winner == "colocated":
        bare = disaggregated.removesuffix(" Ktok/s")
        said = f"{colocated}, disaggregated {bare} at {split}"
    else:
        said = f"{disaggregated} at {split}, colocated {colocated.removesuffix(' Ktok/s')}"
    gain = fmt.figure(F.SPEEDUP, v.speedup)  # the winner over the other
    unfit = "" if v.colocated_fits else ", but colocated does not fit GPU memory"
    return f"topology: {v.winner} wins {gain}: {said}{unfit}"


def _job_days(p: Projection) -> str:
    """The job's days, a dash for a plan that does not fit (it has no job to run)."""
    return fmt.figure(F.JOB_DAYS, None if p.does_not_fit is not None else p.job_days)


def job_name(p: Projection) -> str:
    """What the job is, in words: 'whole job' with a regeneration, else 'offline run'."""
    return p.job.label


def more_gpus(p: Projection) -> list[tuple[str, str]]:
    """What one more target replica (or GPU) and one more drafter GPU do to the job's rate
    and days: [('target GPU', '+0.0 Ktok/s, -0.4 days'), ...]; [] when it does not fit."""
    j = p.job
    if None in (
        j.more_target_tokens_per_s,
        j.more_drafter_tokens_per_s,
        j.more_target_days,
        j.more_drafter_days,
    ):
        return []
    assert j.more_target_tokens_per_s is not None and j.more_target_days is not None
    assert j.more_drafter_tokens_per_s is not None and j.more_drafter_days is not None
    replica = "replica" if p.plan.target.tp > 1 else "GPU"
    if p.topology == "colocated":  # one more GPU runs both roles: one row
        return [(f"colocated {replica}", fmt.more(j.more_target_tokens_per_s, j.more_target_days))]
    return [
        (
            f"target {replica}",
            fmt.more(j.more_target_tokens_per_s, j.more_target_days),
        ),
        ("drafter GPU", fmt.more(j.more_drafter_tokens_per_s, j.more_drafter_days)),
    ]


def acceptance_rows(p: Projection) -> list[tuple[str, str, str]]:
    """What the training buys, as (name, value, what follows it): tau, the serving speedup
    and the serving time that pays the training back, each with its range; what one more
    epoch adds and costs; the serving they are for ([('tau', '4.10', 'range 4.05 -
    4.16'), ...]); [] when the plan does not fit."""
    if p.does_not_fit is not None:
        return []
    a = p.acceptance
    rows = []
    for f in (F.TAU, F.SERVING_SPEEDUP, F.BREAK_EVEN_HOURS):
        spread = fmt.spread(f.read_range(p), fmt.figure_of(f, p.cost_unit))
        rows.append(
            (f.name, fmt.figure(f, f.read(p), p.cost_unit), f"range {spread}" * bool(spread))
        )
    cost = a.one_more_epoch_cost
    rows.append(
        (
            "+1 epoch",
            fmt.tau_gain(a.one_more_epoch_tau),
            "" if cost is None else f"for {fmt.figure(F.TOTAL_COST, cost, p.cost_unit, True)}",
        )
    )
    engine, gpus = serving_words(p)
    rows.append(("serving", engine, f"on {gpus}"))
    return rows


def serving_words(p: Projection) -> tuple[str, str]:
    """The serving the speedup and break-even are for: ('sglang, low-batch', '1 RTX PRO
    6000')."""
    a = p.acceptance
    gpus = p.resolved.gpus
    name = gpus[a.serving_gpu].name if a.serving_gpu in gpus else a.serving_gpu
    return f"{a.engine}, {a.regime}", f"{a.serving_gpus:,} {name}"


def job_parts(p: Projection) -> list[str]:
    """The job's phases and their days: ['regenerate 23.7 h', 'capture 1.5 d', ...]."""
    return [f"{ph.name} {fmt.figure(F.DAYS, ph.days, compact=True)}" for ph in p.phases]


def offline_rates(p: Projection) -> list[str]:
    """An offline plan's rates: the capture's (the targets') and the training's from
    storage, with what bounds it; [] for an online plan (its rate is the pipeline's)."""
    j = p.job
    if j.capture_tokens_per_s is None:
        return []
    return [
        f"capture {fmt.figure(F.TOKENS_PER_S, j.capture_tokens_per_s)}",
        f"then training {fmt.figure(F.TOKENS_PER_S, j.tokens_per_s)} ({j.bound}-bound)",
    ]


def job_rows(p: Projection) -> list[tuple[str, str]]:
    """The headline of a plan whose job is more than the online pipeline (it runs offline
    or regenerates first): the job's days with its phases, its cost, its GPU-hours, then
    the online pipeline's (offline: the decision; online: the training's per epoch)."""
    t = p.total
    if t is None:
        return []
    unit = p.cost_unit
    days_range = fmt.spread(p.job_days_range, fmt.figure_of(F.JOB_DAYS))
    cost_range = fmt.spread(p.job_cost_range, fmt.figure_of(F.JOB_COST, unit))
    usd = (
        f" (~{fmt.figure(F.TOTAL_COST_USD, t.cost_usd)} {F.TOTAL_COST_USD.name})"
        if unit != "USD" and t.cost_usd
        else ""
    )
    online = f"{_figure(F.DAYS, p)} to {_epochs(p)}, {_cost_line(p)}"
    whole = fmt.figure(F.JOB_DAYS, t.days)
    return [
        (F.JOB_DAYS.name, f"{whole} {job_name(p)}: {' + '.join(job_parts(p))}"),
        (
            "",
            f"{_epochs(p)} of {_figure(F.TOKENS_PER_EPOCH, p)}"
            + (f"; range {days_range}" if days_range else ""),
        ),
        (
            F.JOB_COST.name,
            f"{fmt.figure(F.JOB_COST, t.cost, unit)}{usd}"
            + (f"; range {cost_range}" if cost_range else ""),
        ),
        (F.GPU_HOURS.name, fmt.figure(F.GPU_HOURS, t.gpu_hours)),
        (
            "online",
            f"{_figure(F.DAYS, p)} to {_epochs(p)} at {_figure(F.TOKENS_PER_S, p)} "
            f"({F.BOTTLENECK.name}: {_figure(F.BOTTLENECK, p)}), {_cost_line(p)}: the online "
            "pipeline, for the decision below",
        )
        if p.job.stored is not None
        else ("training", online),
    ]


def store_lines(p: Projection) -> list[str]:
    """The Mooncake store's host memory at the longest sample."""
    m = p.store_memory
    if m is None:
        return []
    host = (
        ""
        if m.host_memory_gb is None
        else f" of {m.host_memory_gb:,.0f} GB" + ("" if m.fits else " (DOES NOT FIT)")
    )
    return [
        f"Mooncake store ({m.format}): {m.segment_gib} GiB segment + "
        f"{m.local_buffer_gib:g} GiB buffer per capture server, {m.rank_gib:,.1f} GiB per "
        f"trainer rank, at {p.plan.workload.max_length:,}-token samples; busiest node "
        f"{m.node_gib:,.0f} GiB of host memory{host}"
    ]


def checkpoint_lines(p: Projection) -> list[str]:
    """The run's checkpoints: size, rotation, interval, lost work, resume; a spot plan's
    expected reclaims."""
    ck = p.checkpoints
    every = f"every {fmt.duration(ck.interval_hours / 24)}" if ck.interval_hours else "at the end"
    line = (
        f"checkpoints ({ck.trainer}): {ck.size_gb:,.1f} GB each, keep {ck.keep} = "
        f"{ck.total_tb:,.2f} TB at the peak; {every}; an interruption loses "
        f"{fmt.duration(ck.expected_lost_hours / 24)}; resume: {ck.resume}"
    )
    if ck.spot and ck.preemptions_per_hour:
        month = HOURS_PER_MONTH
        low, high = (rate * month for rate in ck.preemptions_per_hour_range)
        line += (
            f"; spot: {ck.preemptions_per_hour * month:.2f} reclaims a month "
            f"({low:.2f}-{high:.2f}), in the job's days and cost"
        )
    return [line]


def phase_lines(p: Projection) -> list[str]:
    """The whole job by phase when it has more than training's (workload.regenerate): each
    phase's days, GPUs and cost, and their total."""
    t, regen = p.total, p.regeneration
    if t is None or regen is None:
        return []
    unit = p.cost_unit
    usd = (
        ""
        if unit == "USD" or t.cost_usd is None
        else f" (~{fmt.figure(F.TOTAL_COST_USD, t.cost_usd)})"
    )
    lines = [
        f"whole job: {fmt.figure(F.JOB_DAYS, t.days)}, {fmt.figure(F.JOB_COST, t.cost, unit)}"
        f"{usd}, {fmt.figure(F.GPU_HOURS, t.gpu_hours)} {F.GPU_HOURS.name}, by phase:"
    ]
    width = max(len(ph.name) for ph in p.phases)
    for ph in p.phases:
        lines.append(
            f"  {ph.name:<{width}}  {fmt.figure(F.DAYS, ph.days, compact=True):>7}  "
            f"{fmt.figure(F.TOTAL_COST, ph.cost, unit)}  on {ph.what}"
        )
    lines.append("  " + fmt.regeneration(regen))
    return lines


def offline_lines(p: Projection) -> list[str]:
    """The online/offline decision: the storage offline needs, its days and cost beside the
    online pipeline's, and the break-even epochs."""
    o = p.offline
    if o is None:
        return []
    available = (
        ""
        if o.tb_available is None
        else (f" of {o.tb_available:,.1f} TB" + ("" if o.fits else " (DOES NOT FIT)"))
    )
    read = (
        "storage reads not bounded"
        if o.storage_tokens_per_s is None
        else f"storage feeds {fmt.ktok(o.storage_tokens_per_s)}"
    )
    lines = [
        f"{'offline (this plan)' if p.job.stored is o else 'offline instead'}: "
        f"{o.tb:,.1f} TB{available} ({o.bytes_per_token / 1e3:,.1f} KB/token, "
        f"{o.format.name} format, {o.dtype}); capture {fmt.duration(o.capture_days)} "
        f"at {fmt.ktok(o.capture_tokens_per_s)}, then "
        f"{fmt.duration(o.train_days_per_epoch)} per epoch at "
        f"{fmt.ktok(o.train_tokens_per_s)} ({o.bound}-bound; {read})"
    ]
    spent = (
        ""
        if o.cost is None or o.online_cost is None
        else (
            f"; cost {fmt.figure(F.TOTAL_COST, o.cost, o.cost_unit)} offline vs "
            f"{fmt.figure(F.TOTAL_COST, o.online_cost, o.cost_unit)} online ({o.billing} billing)"
        )
    )
    storage = ""
    if o.storage_usd is not None:
        storage = f"; storage {fmt.figure(F.TOTAL_COST_USD, o.storage_usd)}" + (
            "" if o.storage_in_cost else " (not in the GPU cost unit)"
        )
    even = [
        f"{name} from {e:,.2f} epochs" if e is not None else f"{name} never"
        for name, e in (("cheaper", o.break_even_epochs), ("faster", o.break_even_epochs_days))
        if not (name == "cheaper" and o.cost is None)
    ]
    lines.append(
        f"  {_epochs(p)}: {fmt.figure(F.DAYS, o.days)} offline vs "
        f"{fmt.figure(F.DAYS, o.online_days)} online{spent}{storage}; offline is " + ", ".join(even)
    )
    return lines


def _range(p: Projection, f: F.Figure) -> str:
    """'; range a-b' after an estimated figure; nothing for a measured one."""
    pair = getattr(p.ranges, f.key) if p.ranges is not None else None
    text = fmt.spread(pair, fmt.figure_of(f, p.cost_unit))
    return f"; range {escape(text)}" if text else ""


def _figure(f: F.Figure, p: Projection, compact: bool = False) -> str:
    """A figure of the projection as the registry writes it."""
    return fmt.figure(f, f.read(p), p.cost_unit, compact)


def _epochs(p: Projection) -> str:
    """'6 epochs'."""
    return f"{_figure(F.EPOCHS, p)} {F.EPOCHS.name}"


def validation(result: Validation) -> None:
    """The cross-validated headline, the fitted constants, the validation table, and the
    in-sample summary per tier and half."""
    headline = Table(
        title="cross-validated: each source group left out, its cases predicted "
        "by constants fitted without it",
        header_style="bold",
    )
    for header in ("cases", "n", "median", "worst", "in range", "not cross-validatable"):
        headline.add_column(header, justify="left" if header == "cases" else "right")
    for key, tier in result.cross_validated.items():
        s = tier.summary
        headline.add_row(
            key,
            str(s.cases),
            fmt.percent(s.median_abs_error),
            fmt.percent(s.worst_abs_error),
            fmt.percent(s.range_coverage),
            str(len(tier.not_cross_validatable)),
        )
    _print_table(headline)
    if result.topology:
        _topology_checks(result)
    constants = Table(
        title="fitted constants (model/physics/fitting.py): computed from the cases they are "
        "fitted on",
        header_style="bold",
    )
    for header, right in (
        ("constant", False),
        ("value", True),
        ("range", True),
        ("unit", False),
        ("fitted on", False),
        ("groups", False),
        ("cross-validatable", False),
    ):
        constants.add_column(header, justify="right" if right else "left", no_wrap=True)
    for c in result.constants:
        constants.add_row(
            c.name,
            f"{c.value:,.4g}",
            f"{c.low:,.4g}-{c.high:,.4g}",
            escape(c.unit),
            escape("\n".join(c.fitted_on)),
            escape(", ".join(c.groups)),
            "yes" if c.cross_validatable else "no: one group (prior range kept)",
        )
    _print_table(constants)
    console = _console()
    for c in result.constants:
        console.print(f"  {c.name} applies when: {escape(c.applies_when)}")
    table = Table(
        title="the model against public measurements (dflash-plan validate)", header_style="bold"
    )
    for header, right in (
        ("case", False),
        ("GPU", False),
        ("quantity", False),
        ("measured", True),
        ("predicted", True),
        ("error", True),
        ("half", False),
        ("tier", False),
        ("error, own group left out", True),
    ):
        table.add_column(
            header, justify="right" if right else "left", no_wrap=header in ("case", "quantity")
        )
    for r in result.rows:
        error = f"{r.error * 100:+,.1f} %"
        own = result.needs_own_group.get(r.id)
        cv = result.cv_rows.get(r.id)
        cv_error = f"{cv.error * 100:+,.1f} %" if cv else ""
        table.add_row(
            escape(r.id),
            r.gpu,
            r.quantity,
            f"{r.measured:,.4g}",
            f"{r.predicted:,.4g}",
            error if r.covered else f"[yellow]{error}[/yellow]",
            r.half,
            r.tier,
            f"no: {escape(', '.join(own))}"
            if own
            else cv_error
            if cv and cv.covered
            else f"[yellow]{cv_error}[/yellow]",
        )
    _print_table(table)
    summary = Table(
        title="in sample: |error| (predicted / measured - 1) with every constant "
        "fitted on all its cases",
        header_style="bold",
    )
    for header in ("cases", "n", "median", "worst", "in range", "median width"):
        summary.add_column(header, justify="left" if header == "cases" else "right")
    for key, s in result.summary.items():
        summary.add_row(
            key,
            str(s.cases),
            fmt.percent(s.median_abs_error),
            fmt.percent(s.worst_abs_error),
            fmt.percent(s.range_coverage),
            fmt.percent(s.median_range_width),
        )
    _print_table(summary)
    if result.waiting:
        waiting = Table(
            title="recorded, waiting for a capability the planner lacks (not predicted)",
            header_style="bold",
        )
        waiting.add_column("case", no_wrap=True)
        waiting.add_column("waits for")
        for case_id, capability in result.waiting.items():
            waiting.add_row(escape(case_id), escape(capability))
        _print_table(waiting)
    for line in fmt.acceptance_tier_lines(result):
        console.print(escape(line))


def _topology_checks(result: Validation) -> None:
    """Each topology table's runs per GPU type and count, predicted with their source
    group left out, and whether the predicted winner is the measured one."""
    table = Table(
        title="topology tables, each source group left out: colocated against the best "
        f"disaggregated split (issue 32: winner right, each figure within "
        f"{TOPOLOGY_TOLERANCE * 100:.0f} %)",
        header_style="bold",
    )
    for header, right in (
        ("GPUs", False),
        ("run", False),
        ("measured", True),
        ("predicted", True),
        ("error", True),
        ("cross-validated", False),
    ):
        table.add_column(header, justify="right" if right else "left", no_wrap=True)
    console = _console()
    verdicts: list[str] = []
    for check in result.topology:
        where = f"{check.gpus} x {check.gpu}"
        for r in check.rows:
            error = f"{r.error * 100:+,.1f} %"
            table.add_row(
                where,
                r.split,
                f"{r.measured:,.4g}",
                f"{r.predicted:,.4g}",
                error if abs(r.error) <= TOPOLOGY_TOLERANCE else f"[yellow]{error}[/yellow]",
                "yes" if r.cross_validated else f"no: {escape(', '.join(r.needs))}",
            )
        right = check.measured_winner == check.predicted_winner
        verdicts.append(
            f"  {where} ({escape(check.group)}): measured {check.measured_winner}, predicted "
            f"{check.predicted_winner}: {'right' if right else '[yellow]wrong[/yellow]'}; worst "
            f"error {fmt.percent(check.worst_abs_error)}; criterion "
            f"{'met' if check.meets else '[yellow]not met[/yellow]'}"
        )
    _print_table(table)
    for line in verdicts:
        console.print(line)


def _cost_line(p: Projection) -> str:
    """Total cost, per epoch, and the USD estimate beside reference-GPU-hours; a dash
    for what has no price (a GPU without one in the catalog or the plan)."""
    if p.total_cost is None:
        return f"{fmt.DASH} (no price for a GPU of this plan: see the warnings)"
    # Per epoch in the total's unit, which it follows: the figure alone.
    per_epoch = fmt.cell(F.COST_PER_EPOCH, p.cost_per_epoch, p.cost_unit)
    extra = (
        f"; ~{_figure(F.TOTAL_COST_USD, p)} {F.TOTAL_COST_USD.name}"
        if p.cost_unit != "USD" and p.total_cost_usd
        else ""
    )
    return f"{_figure(F.TOTAL_COST, p)} ({per_epoch} {F.COST_PER_EPOCH.name}{extra})"


def _print_table(table: Table) -> None:
    """Print a listing whole: at a terminal's width, and when piped at the width the
    table needs (a pipe is not a screen; nothing is cut or wrapped)."""
    console = _console()
    if not console.is_terminal:
        wide = console.options.update_width(10_000)
        needed = Measurement.get(console, wide, table).maximum
        console = _console(max(console.width, needed))
    console.print(table)


def gpus(catalog: Catalog, as_json: bool) -> int:
    if as_json:
        json.dump(
            {k: g.model_dump(mode="json", exclude={"key"}) for k, g in catalog.gpus.items()},
            sys.stdout,
            indent=2,
        )
        print()
        return 0
    table = Table(title="GPU catalog (dense, per GPU)")
    # The key is what --set and plans take: never cut or wrapped.
    table.add_column("key", no_wrap=True, min_width=max(map(len, catalog.gpus), default=3))
    for header in ("name", "bf16 TF", "mem GB", "TB/s", "link", "per node", "net Gb/s", "$/GPU-h"):
        table.add_column(header)
    table.add_column("prefill/train eff.", no_wrap=True)
    unmeasured = False
    for key, g in catalog.gpus.items():
        marks = []
        for field in ("prefill_efficiency", "training_efficiency"):
            pooled = not efficiency_measured(g.arch, field) and efficiency_basis(
                g, field
            ).startswith("no ")
            unmeasured |= pooled
            marks.append(f"{getattr(g, field) * 100:.0f}{'~' if pooled else ''}")
        table.add_row(
            key,
            escape(g.name),
            f"{g.bf16_tflops:,g}",
            f"{g.memory_gb:,g}",
            f"{g.mem_bw_tb_s:g}",
            f"{g.link.kind} {g.link.gb_per_s:,g} GB/s",
            f"{g.gpus_per_node}",
            f"{g.network_gbps_per_gpu:,g}",
            fmt.DASH if g.usd_per_gpu_hour is None else f"{g.usd_per_gpu_hour:.2f}",
            " / ".join(marks) + " %",
        )
    _print_table(table)
    if unmeasured:
        _console().print(
            "[dim]eff.: the share of the dense peak the capture servers and the drafter reach, "
            "fitted per kernel family on public measurements (dflash-plan validate); ~ no "
            "measurement of the family: the measured families' share, with a widened "
            "band[/dim]"
        )
    return 0


def models(as_json: bool) -> int:
    if as_json:
        json.dump(
            {
                k: m.model_dump(exclude={"key"}) | {"total_params": m.total_params}
                for k, m in PRESETS.items()
            },
            sys.stdout,
            indent=2,
        )
        print()
        return 0
    table = Table(title="target model presets (or give the path of a config.json)")
    table.add_column("key", no_wrap=True, min_width=max(map(len, PRESETS)))
    table.add_column("name", no_wrap=True)
    for header in ("params", "layers", "hidden", "heads/kv", "vocab", "MoE"):
        table.add_column(header)
    for key, m in PRESETS.items():
        table.add_row(
            key,
            m.name,
            f"{m.total_params / 1e9:.1f} B",
            str(m.n_layers),
            str(m.hidden),
            f"{m.n_heads}/{m.n_kv_heads}",
            f"{m.vocab:,}",
            f"{m.n_experts} experts, top {m.experts_per_token}" if m.is_moe else "",
        )
    _print_table(table)
    return 0


def _plan_cell(plan: Plan, names: dict[str, str]) -> str:
    return split_label(plan, names, " + ")  # a table cell: spaced, to wrap at "+"


@dataclass(frozen=True, slots=True)
class _Column:
    """A column of a table fitted to the terminal's width."""

    header: str
    right: bool = False
    drop: int = 0  # at a narrow width the highest is dropped first; 0: never
    fold: bool = False  # a name that may be cut across lines when nothing else fits


def _widths(header: str, cells: Sequence[str]) -> tuple[int, int, int]:
    """A column's widths, markup removed (as the console shows it): its longest word
    (narrower cuts a word), its widest cell with the header's longest word (narrower wraps
    a cell), and its widest cell or header (narrower wraps the header)."""
    texts = [Text.from_markup(terminal_safe(cell, keep="\n")).plain for cell in (header, *cells)]

    def longest(parts: Sequence[str]) -> int:
        return max((cell_len(part) for part in parts), default=1)

    words = longest([word for text in texts for word in text.split()])
    body = longest([line for text in texts[1:] for line in text.splitlines()])
    return words, max(body, longest(header.split())), max(body, cell_len(texts[0]))


def _fill(lows: Sequence[int], highs: Sequence[int], room: int) -> list[int]:
    """Widths between lows and highs within room: the widest columns give way first."""
    level = max(highs, default=1)
    while (
        level > 1
        and sum(max(lo, min(hi, level)) for lo, hi in zip(lows, highs, strict=True)) > room
    ):
        level -= 1
    return [max(lo, min(hi, level)) for lo, hi in zip(lows, highs, strict=True)]


def fitting(
    widths: Sequence[int], drops: Sequence[int], room: int, gap: int
) -> tuple[list[int], list[int]]:
    """The columns (indexes) of a table that fit in `room` cells, each `gap` wider than its
    content, and those left out, in the order they were: while the table is too wide, the
    column with the highest drop goes (the first of equals); a drop of 0 always stays."""
    keep = list(range(len(widths)))
    left: list[int] = []
    while sum(widths[i] + gap for i in keep) > room:
        droppable = [i for i in keep if drops[i]]
        if not droppable:
            break
        worst = max(droppable, key=lambda i: drops[i])
        keep.remove(worst)
        left.append(worst)
    return keep, left


def _print_fitted(title: str, columns: Sequence[_Column], rows: Sequence[Sequence[str]]) -> None:
    """Print a table within the terminal's width (or COLUMNS when set) without cutting a
    number: headers wrap first, then cells between words, and when even that is too wide,
    the columns that matter least are dropped and a line says which. In a pipe without
    COLUMNS the table prints whole at the width it needs, one line per row."""
    console = _console()
    if not console.is_terminal and "COLUMNS" not in os.environ:
        table = Table(title=title, header_style="bold")
        for c in columns:
            table.add_column(c.header, justify="right" if c.right else "left", no_wrap=True)
        for row in rows:
            table.add_row(*row)
        _print_table(table)
        return
    every = [_widths(c.header, [row[i] for row in rows]) for i, c in enumerate(columns)]
    # A name (a plan file's path) may fold across lines rather than push numbers out.
    narrowest = [
        min(low, 12) if c.fold else low for c, (low, _, _) in zip(columns, every, strict=True)
    ]
    # Rich's default box: a rule either side of each column and one space of padding.
    keep, left = fitting(narrowest, [c.drop for c in columns], console.width - 1, 3)
    dropped = [columns[i].header for i in left]
    spans = [every[i] for i in keep]
    lows = [narrowest[i] for i in keep]
    room = console.width - (3 * len(keep) + 1)
    mids = [max(lo, mid) for lo, (_, mid, _) in zip(lows, spans, strict=True)]
    highs = [high for _, _, high in spans]
    widths = _fill(mids, highs, room) if sum(mids) <= room else _fill(lows, mids, room)
    table = Table(title=title, header_style="bold")
    for i, width in zip(keep, widths, strict=True):
        c = columns[i]
        table.add_column(
            c.header,
            justify="right" if c.right else "left",
            width=width,
            overflow="fold" if c.fold else "ellipsis",
        )
    for row in rows:
        table.add_row(*(row[i] for i in keep))
    console.print(table)
    if dropped:
        console.print(
            f"[dim]{len(dropped)} column(s) left out at {console.width} columns: "
            f"{escape(', '.join(dropped))} (wider terminal or --json for all)[/dim]"
        )


def precision_left_out(precision: str, keys: tuple[str, ...], names: Mapping[str, str]) -> str:
    """The one line saying which target GPU types a search left out for the precision."""
    return (
        f"left out as targets, without {precision} tensor cores (target.precision = "
        f"{precision}): {', '.join(names.get(k, k) for k in keys)}"
    )


def search(result: SearchResult, catalog: Catalog, found: ObjectiveResult | None = None) -> None:
    """The Pareto front and the winners of a search, the rule that picked them and the
    prices the plan did not set; with an objective (`found`), what its epochs buy."""
    console = _console()
    k = result.constraints
    limits = [
        f"deadline {fmt.duration(k.deadline_days)}" if k.deadline_days else "",
        f"budget {fmt.cost(k.budget, result.cost_unit)}" if k.budget else "",
    ]
    judged = f" {k.describe()} ({', '.join(x for x in limits if x)})" if any(limits) else ""
    dominated = result.covered - result.evaluated_splits
    console.print(
        f"searched {result.covered:,} configurations: {result.evaluated_splits:,} "
        f"evaluated, {dominated:,} proved dominated (on no front); "
        f"{result.feasible:,} of the evaluated fit and meet the "
        f"constraints{escape(judged)}"
    )
    names = {key: g.name for key, g in catalog.gpus.items()}
    if lacking := result.targets_lacking_precision:
        console.print(escape(precision_left_out(result.precision, lacking, names)))
    if found is not None:
        console.print(escape(_objective_line(found)))
    if result.why_none:
        console.print(f"[bold red]no plan[/bold red]: {escape(result.why_none)}")
        _borrowed_prices(console, result, names)
        return
    unit = result.cost_unit
    cost_head = "$" if unit == "USD" else F.TOTAL_COST.head
    extra = F.rows(F.View.SEARCH)
    outcome = found.outcome if found is not None else None
    # A mode column when the search evaluated offline runs: their days and cost are the
    # offline run's (capture, then training), their Ktok/s the training rate.
    by_mode = result.modes != ("online",)
    # A topology column when both were searched; the winner on each GPU type marked.
    by_topology = len(result.topologies) > 1
    won = {w.gpu: w.winner for w in result.topology_wins}
    marked: set[str] = set()
    columns = [
        _Column("targets + drafters"),
        *([_Column("mode")] if by_mode else []),
        *([_Column("topology")] if by_topology else []),
        _Column(F.TOKENS_PER_S.head, True),
        _Column(F.DAYS.head, True),
        _Column("at worst", True, drop=2),
        _Column(cost_head, True),
        _Column(f"{cost_head} at worst", True, drop=3),
        _Column(F.BOTTLENECK.head, drop=F.BOTTLENECK.drop),
        # The registry's other search figures give way as the registry says.
        *(_Column(f.head, True, drop=f.drop) for f in extra),
        # An objective's epochs (the same for every row) and the tau they buy.
        *([_Column(F.EPOCHS.head, True), _Column("tau (range)", True)] if outcome else []),
    ]
    rows = []
    outcome_cells = (
        [fmt.figure(F.EPOCHS, outcome.epochs), fmt.tau_spread(outcome.tau, *outcome.tau_range)]
        if outcome
        else []
    )
    for candidate in result.front:
        p = candidate.projection
        rate = p.job.tokens_per_s
        rows.append(
            [
                escape(_plan_cell(candidate.plan, names)),
                *([p.job.mode] if by_mode else []),
                *([_topology_cell(candidate, won, marked)] if by_topology else []),
                fmt.cell(F.TOKENS_PER_S, rate or 0, unit),
                fmt.figure(F.DAYS, candidate.days),
                fmt.figure(F.DAYS, candidate.pessimistic_days),
                fmt.cell(F.TOTAL_COST, candidate.cost, unit),
                fmt.cell(F.TOTAL_COST, candidate.pessimistic_cost, unit),
                fmt.figure(F.BOTTLENECK, p.job.bound),
                *(escape(fmt.cell(f, f.read(p), unit)) for f in extra),
                *outcome_cells,
            ]
        )
    unit_words = "" if unit == "USD" else f" (cost in {unit})"
    whole = any(c.projection.regeneration is not None for c in result.front)
    job = "; days and cost of the whole job, regeneration included" if whole else ""
    _print_fitted(
        f"the (days, cost) front, fastest first{unit_words}; at worst: at the "
        f"pessimistic end of the rates{job}",
        columns,
        rows,
    )
    for label, c, why in (
        (
            "cheapest within the deadline",
            result.cheapest_within_deadline,
            fmt.duration(k.deadline_days) if k.deadline_days else "",
        ),
        (
            "fastest within the budget",
            result.fastest_within_budget,
            fmt.cost(k.budget, unit) if k.budget else "",
        ),
        ("most tokens per unit of cost", result.most_tokens_per_cost, ""),
    ):
        if c is None:
            continue
        p = c.projection
        how = (
            f"offline ({p.job.stored.tb:,.1f} TB)"
            if p.job.stored is not None
            else _figure(F.TOKENS_PER_S, p)
        )
        console.print(
            f"[bold]{label}[/bold]{' (' + escape(why) + ')' if why else ''}: "
            f"{escape(_plan_cell(c.plan, names))}, {how}, "
            f"{fmt.figure(F.DAYS, c.days)}, "
            f"{escape(fmt.figure(F.TOTAL_COST, c.cost, unit))}{_verdict(c, unit)}"
        )
    if found is not None:
        for label, c in _objective_winners(found):
            bought = (
                f"{_epochs_words(outcome)}, tau {fmt.tau_spread(outcome.tau, *outcome.tau_range)}, "
                if outcome
                else ""
            )
            console.print(
                f"[bold]{escape(label)}[/bold]: {escape(_plan_cell(c.plan, names))}, {bought}"
                f"{fmt.figure(F.DAYS, c.days)}, "
                f"{escape(fmt.figure(F.TOTAL_COST, c.cost, unit))} "
                f"({fmt.figure(F.DAYS, c.pessimistic_days)}, "
                f"{escape(fmt.figure(F.TOTAL_COST, c.pessimistic_cost, unit))} at worst)"
            )
        if found.tried:
            console.print(escape(_tried_line(found, unit)))
    for line in topology_win_lines(result, names):
        console.print(escape(line))
    if "offline" in result.modes:
        console.print(escape(_offline_note(result)))
    if stopped := result.rejected.get("store memory", 0):
        console.print(
            f"{stopped:,} evaluated splits do not fit: their Mooncake store needs more host "
            f"memory than a node has (`check` one for its figures)"
        )
    console.print(
        f"[dim]the front and the winners are the plans that meet the constraints "
        f"{k.describe()} (--at); ties: {escape(TIE_RULE)}[/dim]"
    )
    _borrowed_prices(console, result, names)


def _objective_line(found: ObjectiveResult) -> str:
    """What the objective chose: the epochs, the sample passes and what they buy."""
    g, o, at = found.goal, found.outcome, found.result.constraints.at
    end = "at the low end of its range" if at == "pessimistic" else "at the central estimate"
    if o is None:
        return f"--objective {g.objective}: no epochs count from 1 to {g.max_epochs:,} qualifies"
    buys = (
        f"{_epochs_words(o)} of {_samples(o)} samples "
        f"({o.sample_passes / 1e6:,.2f} M sample passes): "
        f"tau {fmt.tau_spread(o.tau, *o.tau_range)}, "
        f"serving speedup {fmt.speedup(o.speedup, *o.speedup_range)}"
    )
    if g.objective == "time-to-tau":
        return f"tau >= {g.min_tau:g} {end} needs {buys}"
    if g.objective == HIGHEST_TAU:
        return f"the highest tau within the constraints (tau {end}): {buys}"
    target = f" from tau >= {g.min_tau:g} {end}" if g.min_tau is not None else ""
    return f"the most speedup gained per unit of training cost{target}: {buys}"


def _epochs_words(o: Outcome) -> str:
    """'5 epochs', '1 epoch' (the registry writes the count)."""
    count = fmt.figure(F.EPOCHS, o.epochs)
    return f"{count} epoch" if o.epochs == 1 else f"{count} {F.EPOCHS.name}"


def _samples(o: Outcome) -> str:
    """The samples per epoch the sample passes are made of (workload.samples)."""
    samples = round(o.sample_passes / o.epochs)
    return f"{samples:,}"


def _objective_winners(found: ObjectiveResult) -> list[tuple[str, Candidate]]:
    """The objective's winner lines: time-to-tau says the fastest and the cheapest."""
    g, front = found.goal, found.result.front
    if not front or found.winner is None:
        return []
    if g.objective == "time-to-tau":
        reach = f"reaching tau >= {g.min_tau:g}"
        return [(f"fastest {reach}", front[0]), (f"cheapest {reach}", front[-1])]
    if g.objective == HIGHEST_TAU:
        return [("highest tau, the cheapest of its plans", found.winner)]
    return [("most speedup per cost", found.winner)]


def _tried_line(found: ObjectiveResult, unit: str) -> str:
    """speedup-per-cost: the value of each epochs count tried, at its cheapest plan."""
    per = 1000.0
    cells = ", ".join(
        f"{fmt.figure(F.EPOCHS, t.outcome.epochs)}: {t.value * per:.2f}" for t in found.tried
    )
    return f"speedup gained per {per:,.0f} {unit} of training, by epochs: {cells}"


def _topology_cell(candidate: Candidate, won: dict[str, str], marked: set[str]) -> str:
    """A front row's topology; '(wins)' on the fastest row of the winning topology of its
    GPU type (the front is fastest first)."""
    plan, topology = candidate.plan, candidate.topology
    gpu = plan.target.gpu
    if plan.drafter.gpu != gpu or won.get(gpu) != topology or gpu in marked:
        return topology
    marked.add(gpu)
    return f"{topology} (wins)"


def topology_win_lines(result: SearchResult, names: dict[str, str]) -> list[str]:
    """Both topologies searched: which wins on each GPU type, by its fastest feasible plan
    in each."""
    lines = []
    for w in result.topology_wins:
        parts = []
        for topology in ("disaggregated", "colocated"):
            f = w.fastest.get(topology)
            if f is None:
                parts.append(f"{topology}: no plan that fits and meets the constraints")
                continue
            gpus = (
                f"{f.targets + f.drafters} GPUs"
                if topology == "colocated"
                else f"{f.targets} + {f.drafters}"
            )
            tp = f" tp{f.tp}" if f.tp > 1 else ""
            parts.append(f"{topology} {gpus}{tp} in {fmt.figure(F.DAYS, f.days)}")
        gpu = names.get(w.gpu, w.gpu)
        lines.append(f"{gpu}: {w.winner} wins (fastest plans: {'; '.join(parts)})")
    return lines


def _offline_note(result: SearchResult) -> str:
    """What an offline row's figures include, and the offline plans storage stopped."""
    stopped = result.rejected.get("storage", 0)
    unit_usd = result.cost_unit == "USD"
    return (
        "offline rows: capture once, then every epoch from storage; "
        + (
            "the cost includes the storage (storage.usd_per_tb_month)"
            if unit_usd
            else f"the cost counts GPUs only (storage is priced in USD, the cost in "
            f"{fmt.figure(F.COST_UNIT, result.cost_unit)})"
        )
        + (f"; {stopped:,} offline splits do not fit storage.tb" if stopped else "")
    )


def _verdict(c: Any, unit: str) -> str:
    """What the pessimistic end says of a winner's deadline and budget."""
    checks = [
        (what, ok)
        for what, ok in (
            ("the deadline", c.meets_deadline_pessimistic),
            ("the budget", c.within_budget_pessimistic),
        )
        if ok is not None
    ]
    if not checks:
        return ""
    worst = (
        f"{fmt.figure(F.DAYS, c.pessimistic_days)}, "
        f"{escape(fmt.figure(F.TOTAL_COST, c.pessimistic_cost, unit))}"
    )
    missed = [what for what, ok in checks if not ok]
    if not missed:
        return (
            f"; meets {' and '.join(what for what, _ in checks)} even at the "
            f"pessimistic end ({worst})"
        )
    return f"; at the pessimistic end ({worst}) [yellow]misses {' and '.join(missed)}[/yellow]"


def _borrowed_prices(console: Console, result: SearchResult, names: dict[str, str]) -> None:
    """The searched GPU types priced by the catalog or an offer rather than the plan."""
    if text := fmt.prices_not_set(fmt.borrowed_prices(result, names)):
        console.print(escape(text))


def _with_range(
    value: str, pair: tuple[float, float] | None, one: Callable[[float | None], str], sep: str = "-"
) -> str:
    """'1.50x (1.20-1.90x)'; the value alone when the range is none or zero wide."""
    text = fmt.spread(pair, one, sep)
    return f"{value} ({text})" if text else value


# The CLI's compare columns that give way on a narrow terminal, highest first (a range
# column is keyed by its figure with True); the other ranges and the registry's other
# figures give way with the cost per epoch; the plan, throughput, days, cost and ratios
# never.
_COMPARE_DROPS = {
    (F.TOKENS_PER_S.key, True): 3,
    (F.COST_PER_EPOCH.key, False): 4,
    (F.BOTTLENECK.key, False): 5,
    (F.BREAK_EVEN.key, False): 2,
}


def comparison(rows: list[tuple[Any, Compared]], style: str) -> None:
    """Scenarios side by side: the first is the baseline. A row per plan, a column per
    comparison figure (model/explore/compare.py), the plan's ranges in a column after
    their figure and the ratios' ranges in their cell."""
    units = {x.projection.cost_unit for _, x in rows}
    one_unit = units.pop() if len(units) == 1 else None

    table = style == "table"
    # One unit for every row: said once in the title, not in each cell.
    titled = bool(one_unit) and table
    # A table's ranges may break around their dash; csv and markdown keep one token.
    sep = " - " if table else "-"

    def one(f: F.Figure, unit: str) -> Callable[[float | None], str]:
        return lambda v: fmt.column(f, v, unit, titled, end=True)

    # A column per figure; a ratio's range in its cell, the plan's own ranges in columns
    # after the figures ("days range"), but the throughput's beside it ("range", where
    # scripts reading the csv by position have always found it).
    figures = comparing.shown()
    ranged = [f for f in figures if f.ranged and f.of == "projection"]
    beside = ranged[:1] if ranged and ranged[0].key == F.TOKENS_PER_S.key else []
    columns: list[tuple[str, bool, int]] = []  # (figure key, a range, drop)
    headers = ["plan"]
    for f in figures:
        # An acceptance figure's column gives way by its registry drop (first: the serving
        # speedup, the payback, then tau: before every other column, which keep their place).
        default = f.drop if f.of == "acceptance" else 0 if f.composed else 4
        columns.append((f.key, False, _COMPARE_DROPS.get((f.key, False), default)))
        headers.append(f.head)
        if f in beside:
            columns.append((f.key, True, _COMPARE_DROPS.get((f.key, True), 4)))
            headers.append("range")
    for f in ranged:
        if f not in beside:
            columns.append((f.key, True, 4))
            headers.append(f"{f.head} range")
    body = []
    for path, x in rows:
        unit = x.projection.cost_unit
        cells: dict[tuple[str, bool], str] = {}
        for c in x.cells:
            f = c.figure
            text = fmt.column(f, c.value, unit, titled)
            if f.ranged and f.of == "projection":
                cells[f.key, False] = text
                cells[f.key, True] = fmt.spread(c.range, one(f, unit), sep) or fmt.DASH
            else:
                cells[f.key, False] = (
                    _with_range(text, c.range, one(f, unit), sep) if f.ranged else text
                )
        body.append([str(path), *(cells[key, is_range] for key, is_range, _ in columns)])
    # Each plan's topology and which would win on its GPUs (a column only when some plan
    # is colocated, so all-disaggregated comparisons read as before).
    if any(x.projection.topology == "colocated" for _, x in rows):
        headers.append("topology")
        columns.append(("topology", False, 0))
        for row, (_, x) in zip(body, rows, strict=True):
            row.append(topology_cell(x.projection))
    # Offline plans: their storage, days and cost beside the online figures (a column only
    # when some plan runs offline, so all-online comparisons read as before).
    if any(x.projection.job.stored is not None for _, x in rows):
        headers.append("offline")
        columns.append(("offline", False, 0))
        for row, (_, x) in zip(body, rows, strict=True):
            p = x.projection
            o = p.job.stored
            even = (
                "never"
                if o is None or o.break_even_epochs is None
                else f"{o.break_even_epochs:.2f} epochs"
            )
            row.append(
                fmt.DASH
                if o is None or p.does_not_fit is not None
                else f"{o.tb:,.1f} TB, {fmt.figure(F.DAYS, o.days)}, "
                f"{fmt.column(F.TOTAL_COST, o.cost, o.cost_unit, titled)}, cheaper from {even}"
            )
    # Plans that regenerate: the whole job (every phase) beside the training figures (a
    # column only when some plan regenerates).
    if any(x.projection.regeneration is not None for _, x in rows):
        headers.append("whole job")
        columns.append(("whole job", False, 0))
        for row, (_, x) in zip(body, rows, strict=True):
            p = x.projection
            t = p.total
            row.append(
                fmt.DASH
                if t is None or p.does_not_fit is not None
                else f"{fmt.figure(F.JOB_DAYS, t.days)}, "
                f"{fmt.column(F.JOB_COST, t.cost, p.cost_unit, titled)} ("
                + " + ".join(f"{ph.name} {fmt.figure(F.DAYS, ph.days)}" for ph in p.phases)
                + ")"
            )
    if style in ("csv", "markdown"):  # printed as they are: cells and notes made safe here
        body = [[terminal_safe(cell) for cell in row] for row in body]
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
        notes = _unfit_notes(rows) + _job_notes(rows) + _range_notes(rows) + _borrowed_notes(rows)
        if notes:
            print()
            print("\n".join(f"- {terminal_safe(line)}" for line in notes))
        return
    # The table's headers break between words ("cost/epoch" would hold its column at 10).
    shown = {F.COST_PER_EPOCH.head: F.COST_PER_EPOCH.narrow}
    # Words, not numbers: left-aligned; the offline and whole-job columns may fold.
    texts = {f.key for f in comparing.shown() if f.format == "text"} | {"offline", "whole job"}
    fitted = [
        _Column("plan", fold=True),
        *(
            _Column(
                shown.get(h, h.replace("-", " ")),
                key not in texts,
                drop=drop,
                fold=key in ("offline", "whole job"),
            )
            for h, (key, _, drop) in zip(headers[1:], columns, strict=True)
        ),
    ]
    unit_words = "" if one_unit in (None, "USD") else f"; cost in {one_unit}"
    _print_fitted(
        f"scenarios (the first is the baseline{unit_words}{_JOB_WORDS if _jobs(rows) else ''})",
        fitted,
        [[escape(cell) for cell in row] for row in body],
    )
    console = _console()
    for line in _unfit_notes(rows):
        console.print(f"[bold red]{escape(line)}[/bold red]")
    for line in _range_notes(rows) + _borrowed_notes(rows):
        console.print(escape(line))


# What the comparison compares when a plan's job is more than the online pipeline.
_JOB_WORDS = "; days, cost, speed and cost ratio: each plan's whole job"


def _jobs(rows: list[tuple[Any, Compared]]) -> bool:
    return any(x.projection.job.phased for _, x in rows)


def _job_notes(rows: list[tuple[Any, Compared]]) -> list[str]:
    """Which days and cost the comparison compares, when a plan runs offline or
    regenerates: each plan's whole job (regeneration, then the run of its own mode)."""
    if not _jobs(rows):
        return []
    return [
        f"{_JOB_WORDS.removeprefix('; ')} (regeneration when on, then the run of its own "
        "mode: online, or offline capture and training)"
    ]


def _unfit_notes(rows: list[tuple[Any, Compared]]) -> list[str]:
    """Per plan that does not fit, why (its row has no figures), as `check` says it."""
    return [
        f"{path}: does not fit: {reason}"
        for path, x in rows
        if (reason := x.projection.does_not_fit) is not None
    ]


def _range_notes(rows: list[tuple[Any, Compared]]) -> list[str]:
    """Per plan, the scenario of each end of its speed range (both plans under the same
    scenario)."""
    notes = []
    for path, x in rows:
        c = x.comparison
        if c.speedup_range and c.speedup_range_scenarios:
            (low, high), (slow, fast) = c.speedup_range, c.speedup_range_scenarios
            notes.append(
                f"{path}: {F.SPEEDUP.name} {fmt.figure(F.SPEEDUP, low)} if {slow}; "
                f"{fmt.figure(F.SPEEDUP, high)} if {fast}"
            )
    return notes


def _borrowed_notes(rows: list[tuple[Any, Compared]]) -> list[str]:
    """Per plan, the prices of its GPUs that it does not set (catalog, offer)."""
    return [
        f"{path}: {text}" for path, x in rows if (text := fmt.plan_prices_not_set(x.projection))
    ]


def offers(catalog: Catalog, gpu: str | None, provider: str | None, as_json: bool) -> int:
    """The rental offers, cheapest first per GPU, with their unit and age."""
    if gpu is not None:
        gpu = catalog.key(gpu, "--gpu")  # as people write it: 'B200' is b200
    rows = [
        o
        for o in catalog.offers
        if (gpu is None or o.gpu == gpu) and (provider is None or o.provider == provider)
    ]
    if as_json:
        json.dump(
            [
                {
                    **o.model_dump(),
                    "age_days": o.age_days(catalog.today) if catalog.today else None,
                    "old": o.stale(catalog.today) if catalog.today else None,
                }
                for o in rows
            ],
            sys.stdout,
            indent=2,
        )
        print()
        return 0
    table = Table(
        title="rental offers (set cost.provider and cost.kind in a plan to use them)",
        header_style="bold",
    )
    for header, right in (
        ("gpu", False),
        ("provider", False),
        ("kind", False),
        ("$/GPU-h", True),
        ("rented by", True),
        ("date", False),
        ("instance", False),
    ):
        table.add_column(
            header, justify="right" if right else "left", no_wrap=header in ("gpu", "provider")
        )
    for o in sorted(rows, key=lambda o: (o.gpu, o.kind, o.usd_per_gpu_hour)):
        age = o.age_days(catalog.today) if catalog.today else None
        stale = catalog.today is not None and o.stale(catalog.today)
        # "old" is said in words as well as in colour: a pipe or a screen reader keeps it.
        future = catalog.today is not None and o.future(catalog.today)
        when = f" ({age} d)" if age is not None else " (after today)" if future else ""
        date = o.date + when + (" old" if stale else "")
        table.add_row(
            o.gpu,
            escape(o.provider),
            o.kind,
            f"{o.usd_per_gpu_hour:,.2f}",
            f"{o.unit_gpus} GPU" + ("s" if o.unit_gpus > 1 else ""),
            f"[yellow]{date}[/yellow]" if stale else date,
            escape(", ".join(x for x in (o.instance, o.region) if x)),
        )
    table.caption = (
        f"old: undated, or seen more than {PRICE_MAX_AGE_DAYS} days ago; check "
        f"the provider's price before you rely on it"
    )
    _print_table(table)
    return 0
