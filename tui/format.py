"""Formatting of model figures for people: the only place numbers get units and rounding
(with the rules in model/basics/units.py that the launch headers share)."""

from __future__ import annotations

from collections.abc import Callable
from typing import TYPE_CHECKING, Any

from ..model.basics import units

# One rule each for the views and the launch headers (model/launch/common.py).
from ..model.basics.units import amount as amount
from ..model.basics.units import fine as fine
from ..model.basics.units import spread as spread
from ..model.core import figures as F

if TYPE_CHECKING:
    from ..model.core.acceptance import Acceptance
    from ..model.core.cost import Price, Prices
    from ..model.core.figures import Figure
    from ..model.core.phases import Regeneration
    from ..model.core.projection import Projection
    from ..model.evidence.evidence import Validation
    from ..model.explore.search import Result as SearchResult
    from ..model.inputs.acceptancelogs import AcceptanceReading

DASH = "—"


def ktok(tokens_per_s: float | None) -> str:
    return DASH if tokens_per_s is None else units.ktok(tokens_per_s)


def days(value: float | None) -> str:
    return DASH if value is None else f"{value:,.1f} days"


def cost(
    value: float | None,
    unit: str,
    compact: bool = False,
    number: Callable[[float], str] | None = None,
) -> str:
    """model.basics.units.cost (the launch headers' rule, USD as $ here), or a dash."""
    return DASH if value is None else units.cost(value, unit, compact, number or amount)


def cost_figure(value: float | None, unit: str) -> str:
    """A cost under a header or title that names its unit: '$449' or '449'."""
    if value is None:
        return DASH
    return f"${amount(value)}" if unit == "USD" else amount(value)


def price_source(price: Price, view: Prices, names: dict[str, str]) -> str:
    """A price the plan does not set, with where it comes from: 'B300 at 3.51x the RTX PRO
    6000 price (catalog default ratio)', 'B300 $5.50/GPU-h (catalog)', 'H100 $2.99/GPU-h
    (lambda on-demand offer, 2025-06-01)'."""
    name = names.get(price.gpu, price.gpu)
    usd = DASH if price.usd_per_gpu_hour is None else f"${price.usd_per_gpu_hour:,.2f}/GPU-h"
    # In USD the plan's ratios multiply the reference's price.
    scaled = "; the plan's ratios scale it" if price.gpu == view.reference_gpu else ""
    if price.offer is not None and price.source == "offer":
        o = price.offer
        # An imported offer names its catalog: which snapshot the price is from.
        source = f", from the {o.source}" if o.imported else ""
        return f"{name} {usd} ({o.provider} {o.kind} offer, {o.date or 'undated'}{source}{scaled})"
    if view.in_usd:
        return f"{name} {usd} (catalog{scaled})"
    ref = names.get(view.reference_gpu, view.reference_gpu)
    ratio = DASH if price.ratio is None else f"{price.ratio:.2f}x"
    return f"{name} at {ratio} the {ref} price (catalog default ratio)"


def pct(value: float | None) -> str:
    """Whole percent; one decimal below 10 % so that a nearly idle link does not read 0 %."""
    if value is None:
        return DASH
    return f"{value * 100:.1f} %" if value < 0.1 else f"{value * 100:.0f} %"


def gb(value: float) -> str:
    return f"{value:,.1f} GB"


def times(value: float | None) -> str:
    return DASH if value is None else f"{value:.2f}x"


def tau(value: float) -> str:
    """An acceptance length, tokens per verification step, to two decimals ('3.80'): the
    one tau formatter of every view (project, the app, compare, search, calibrate). Two,
    not one: one more epoch of the built-in plan adds 0.08 and its range spans 0.4, which
    one decimal would round away or to a single step."""
    return f"{value:.2f}"


def tau_spread(value: float, low: float, high: float) -> str:
    """An acceptance length and its range: '3.92 (3.81-4.05)'."""
    return f"{tau(value)} ({units.span(low, high, tau)})"


def speedup(value: float, low: float, high: float) -> str:
    """A serving speedup and its range: '2.61x (2.40-2.80x)'."""
    return f"{value:.2f}x ({units.span(low, high, lambda x: f'{x:.2f}')}x)"


def signed_days(value: float | None) -> str:
    return DASH if value is None else f"{value:+,.1f} days"


def regeneration(regen: Regeneration, compact: bool = False) -> str:
    """The decode figures behind the regeneration phase and its serving engine, with the
    range its evidence leaves (the decode efficiency's fitted range, the GPU's compute band
    and the engine's maturity on the GPU)."""
    d = regen.decode
    slow, fast = regen.tokens_per_s_per_gpu_range
    quick, long = regen.seconds_range
    limit = "" if compact else f" ({d.batch_limit.replace('_', ' ')})"
    return (
        f"regenerate: {d.tokens_per_s_per_gpu:,.0f} output tok/s per GPU on "
        f"{regen.engine_name} (range {slow:,.0f}-{fast:,.0f}: {duration(quick / 86_400, compact)}-"
        f"{duration(long / 86_400, compact)}), {d.batch} sequences in flight{limit}, "
        f"{d.step_limit}-bound steps; {regen.output_tokens:,} answer + "
        f"{regen.prompt_tokens:,} prompt tokens per sample"
    )


def duration(value_days: float | None, compact: bool = False) -> str:
    """model.basics.units.duration (the launch headers' too), or a dash."""
    return DASH if value_days is None else units.duration(value_days, compact)


def signed_duration(value_days: float | None) -> str:
    """A change in time ('+3.2 days', '-5.0 hours'); zero once rounded reads '+0.0 days',
    never '-0.0'."""
    if value_days is None:
        return DASH
    hours = value_days * 24
    text = f"{hours:+,.1f} hours" if abs(hours) < 24 else f"{value_days:+,.1f} days"
    if text[1:].replace("0", "").replace(".", "").replace(",", "").split(" ")[0] == "":
        return "+0.0 days"
    return text


def per_gpu(tokens_per_s: float) -> str:
    """A measured rate per GPU in whole tokens ('4,933 tok/s'): a reading, not a figure of
    the projection."""
    return f"{tokens_per_s:,.0f} tok/s"


def gpu_hours(value: float | None) -> str:
    """GPU-hours in a note ('845 GPU-h')."""
    return f"{figure(F.GPU_HOURS, value)} {F.GPU_HOURS.narrow}"


def probe_time(gpu_hours: float, gpus: int, cost_usd: float | None) -> str:
    """A probe's length and price: '12 minutes, 0.80 GPU-hours, about $2.39' (a probe is
    minutes long: its GPU-hours to two decimals, its cost to the cent)."""
    cost = f", about ${cost_usd:,.2f}" if cost_usd else ""
    return f"{gpu_hours * 60 / gpus:.0f} minutes, {gpu_hours:.2f} GPU-hours{cost}"


def more(tokens_per_s: float, days: float) -> str:
    """What one more GPU does to the job: its rate and its run's days ('+6.6 Ktok/s,
    -1.9 days')."""
    return f"{tokens_per_s / 1e3:+,.1f} Ktok/s, {signed_duration(days)}"


def tau_gain(gain: float | None) -> str:
    """What one more epoch adds to the drafter's acceptance length ('+0.08 tau')."""
    return DASH if gain is None else f"{'+' if gain >= 0 else '-'}{tau(abs(gain))} {F.TAU.name}"


def percent(value: float | None) -> str:
    """Like pct, with thousands grouped (a link at 1,250 % of its capacity); a dash for
    none, or for NaN (a summary over no cases)."""
    if value is None or value != value:
        return DASH
    return f"{value * 100:,.1f} %" if value < 0.1 else f"{value * 100:,.0f} %"


def span(
    low: float | None, high: float | None, one: Callable[[float | None], str], sep: str = "-"
) -> str:
    """model.basics.units.span (the launch headers' too), or a dash."""
    return DASH if low is None or high is None else units.span(low, high, one, sep)


def break_even(p: Projection, ratios: dict[str, float]) -> str:
    """Which price per GPU-hour, as a ratio to the reference GPU, makes the plan cost what
    the baseline costs ('B200 at 5.55x the RTX PRO 6000 price')."""
    gpus = p.resolved.gpus
    ref = p.prices.reference_gpu
    ref_name = gpus[ref].name if ref in gpus else ref
    by_gpu = {p.plan.target.gpu: ratios.get("target"), p.plan.drafter.gpu: ratios.get("drafter")}
    parts = [
        f"{gpus[k].name} at {v:.2f}x the {ref_name} price"
        for k, v in by_gpu.items()
        if v is not None and k != ref
    ]
    together = " (both scaled together)" if len(parts) > 1 else ""
    return f"break-even: {' and '.join(parts)}{together}"


def prices_not_set(sources: str) -> str:
    """The line every view says where the prices a plan does not set come from ('prices
    not set in the plan: B300 at 3.51x the RTX PRO 6000 price (catalog default ratio)'),
    from `price_source` texts; '' when the plan sets them all."""
    return f"prices not set in the plan: {sources}" if sources else ""


def plan_prices_not_set(p: Projection) -> str:
    """`prices_not_set` for the GPUs one plan uses."""
    names = {k: g.name for k, g in p.resolved.gpus.items()}
    used = p.prices.borrowed(p.plan.gpus_in_use())
    return prices_not_set(", ".join(price_source(x, p.prices, names) for x in used))


# Prices not set in the plan are named one by one up to this many GPU types.
BORROWED_NAMED = 4


def borrowed_prices(result: SearchResult, names: dict[str, str]) -> str:
    """The searched GPU types priced by the catalog or an offer rather than the plan: the
    ones in the results by name, the others counted (--json lists all); '' for none."""
    if not result.borrowed_prices or result.prices is None:
        return ""
    shown = {c.plan.target.gpu for c in result.front} | {c.plan.drafter.gpu for c in result.front}
    shown.add(result.prices.reference_gpu)  # listed only when the plan's ratios scale it
    named = [p for p in result.borrowed_prices if p.gpu in shown]
    others = [p for p in result.borrowed_prices if p.gpu not in shown]
    if len(others) <= BORROWED_NAMED:  # a few: each by name
        named, others = named + others, []
    text = ", ".join(price_source(p, result.prices, names) for p in named)
    if others:
        text += (
            ("; and " if text else "")
            + f"{len(others)} "
            + ("more " if text else "")
            + "searched GPU type(s) not on the front "
            "(--json lists them)"
        )
    return text


def cost_fine(value: float | None, unit: str, compact: bool = False) -> str:
    """A small cost (per token, per sample) to three significant digits, in `cost`'s
    words: '$0.0449', '0.0449 RTX PRO 6000-h'."""
    return cost(value, unit, compact, fine)


def _bare(value: Any, text: Callable[[Any], str]) -> str:
    return DASH if value is None else text(value)


# A figure's value for people, by the figure registry's formatter key (model/core/
# figures.py): (value, the plan's cost unit, compact) -> text with its unit.
FORMATS: dict[str, Callable[[Any, str, bool], str]] = {
    "ktok": lambda v, unit, compact: ktok(v),
    "number": lambda v, unit, compact: _bare(v, lambda x: f"{x:,.2f}"),
    "tau": lambda v, unit, compact: _bare(v, tau),
    "gpus_fraction": lambda v, unit, compact: _bare(v, gpus_fraction),
    "count": lambda v, unit, compact: _bare(v, lambda x: f"{x:,.0f}"),
    "duration": lambda v, unit, compact: duration(v, compact),
    "cost": cost,
    "cost_fine": cost_fine,
    "usd": lambda v, unit, compact: cost(v, "USD"),
    "times": lambda v, unit, compact: times(v),
    "text": lambda v, unit, compact: _bare(v, str),
    # Per role ({role: ratio}): each distinct ratio once; a dash for none.
    "gtokens": lambda v, unit, compact: _bare(v, lambda x: f"{x / 1e9:,.3f} G tokens"),
    "signed_duration": lambda v, unit, compact: signed_duration(v),
    # Serving hours (an acceptance figure): as a duration, hours below a day.
    "hours": lambda v, unit, compact: duration(None if v is None else v / 24, compact),
    "ratios": lambda v, unit, compact: (
        ", ".join(f"{x:.2f}x" for x in dict.fromkeys(v.values())) if v else DASH
    ),
}

# The same under a table head that names the unit (the cost unit in the title).
CELLS: dict[str, Callable[[Any, str], str]] = {
    "ktok": lambda v, unit: _bare(v, lambda x: f"{x / 1e3:,.1f}"),
    "cost": cost_figure,
    "cost_fine": lambda v, unit: _bare(v, lambda x: f"${fine(x)}" if unit == "USD" else fine(x)),
    "duration": lambda v, unit: duration(v, compact=True),
}


def figure(f: Figure, value: Any, unit: str = "", compact: bool = False) -> str:
    """A registry figure's value with its unit, by its formatter key (`unit`: the plan's
    cost unit, which only the cost formats read)."""
    return FORMATS[f.format](value, unit, compact)


def figure_of(f: Figure, unit: str = "", compact: bool = False) -> Callable[[Any], str]:
    """`figure` for one figure, as a range's one-value formatter (`spread`'s `one`)."""
    return lambda value: figure(f, value, unit, compact)


def cell(f: Figure, value: Any, unit: str) -> str:
    """A registry figure's value in a table cell under its head."""
    bare = CELLS.get(f.format)
    return bare(value, unit) if bare else figure(f, value, unit, compact=True)


def column(f: Figure, value: Any, unit: str, unit_in_title: bool, end: bool = False) -> str:
    """A registry figure in a wide table's column under its head (the CLI's compare): the
    throughput bare under 'Ktok/s', days and ratios in words, a cost bare when the title
    names the table's one unit, else with its unit, compact. `end`: one end of a range,
    where the throughput says its unit."""
    if f.format == "ktok" and not end:
        return cell(f, value, unit)
    if f.format in ("cost", "cost_fine") and unit_in_title:
        return cell(f, value, unit)
    if f.format in ("ktok", "duration", "times", "text"):
        return figure(f, value, unit)
    return figure(f, value, unit, compact=True)


# The narrowest cells (the app's Comparison view, a column per plan): bare numbers, their
# unit in the row's name or the title (the cost unit). Days to 2 decimals below 10.
def narrow_number(value: float | None, digits: int = 1) -> str:
    return DASH if value is None else f"{value:,.{digits}f}"


def _narrow_days(value: float | None) -> str:
    return narrow_number(value, 2 if value is not None and value < 10 else 1)


def _narrow_span(
    r: tuple[float, float] | None, digits: int = 1, one: Callable[[float], str] | None = None
) -> str:
    if r is None:
        return ""
    a, b = (
        (one(r[0]), one(r[1]))
        if one
        else (narrow_number(r[0], digits), narrow_number(r[1], digits))
    )
    return a if a == b else f"{a}-{b}"


def _narrow_break_even(even: dict[str, float] | None) -> str:
    """One ratio when the roles agree ('5.55x'), else each by its role's initial."""
    if even is None:
        return DASH
    if not even:
        return "none"
    ratios = {f"{v:.2f}x" for v in even.values()}
    return (
        ratios.pop()
        if len(ratios) == 1
        else " ".join(f"{role[0]}{v:.2f}x" for role, v in even.items())
    )


# A narrow cell and its range by the registry's formatter key; other formats: `cell`.
NARROW: dict[str, Callable[[Any], str]] = {
    "ktok": lambda v: narrow_number(v / 1e3 if v else None),
    "duration": _narrow_days,
    "cost": lambda v: narrow_number(v, 0),
    "text": lambda v: v or DASH,
    "times": times,
    "ratios": _narrow_break_even,
    "hours": lambda v: _narrow_days(None if v is None else v / 24),  # in days: its row says
}
NARROW_RANGES: dict[str, Callable[[tuple[float, float] | None, Any], str]] = {
    "ktok": lambda r, v: _narrow_span((r[0] / 1e3, r[1] / 1e3) if r else None),
    "duration": lambda r, v: _narrow_span(r, 2 if (v or 99) < 10 else 1),
    "cost": lambda r, v: _narrow_span(r, 0),
    "times": lambda r, v: _narrow_span(r, 2),
    "number": lambda r, v: _narrow_span(r, 2),
    "tau": lambda r, v: _narrow_span(r, one=tau),
    "gpus_fraction": lambda r, v: _narrow_span(r, one=gpus_fraction),
    "hours": lambda r, v: _narrow_span(
        None if r is None else (r[0] / 24, r[1] / 24), 2 if (v or 999) < 240 else 1
    ),
}


def narrow(f: Figure, value: Any, unit: str = "") -> str:
    """A registry figure in the narrowest cell."""
    bare = NARROW.get(f.format)
    return bare(value) if bare else cell(f, value, unit)


def narrow_range(f: Figure, pair: tuple[float, float] | None, value: Any, unit: str = "") -> str:
    """The range of a figure beside its narrow cell (its digits follow the value's)."""
    bare = NARROW_RANGES.get(f.format)
    return bare(pair, value) if bare else spread(pair, lambda v: cell(f, v, unit))


def sample_passes(value: float | None) -> str:
    """Samples x epochs seen, whole ('96,000'), or a dash when unknown."""
    return DASH if value is None else f"{value:,.0f}"


def logged_tau(reading: AcceptanceReading) -> str:
    """A log's acceptance figure: 'tau 2.58 (quartiles 2.57-2.60) at step 900, 28,800
    sample passes'."""
    scatter = (
        f" (quartiles {units.span(reading.tau_low, reading.tau_high, tau)})"
        if reading.tau_high > reading.tau_low
        else ""
    )
    return (
        f"tau {tau(reading.tau)}{scatter} at step {reading.step:,}, "
        f"{sample_passes(reading.sample_passes)} sample passes"
    )


def tau_points(reading: AcceptanceReading, most: int = 10) -> str:
    """The series the figure came from, as 'step: tau' pairs in run order: the last
    `most` of them, and how many earlier ones are left out."""
    used = reading.used
    shown = ", ".join(f"{p.step:,}: {tau(p.tau)}" for p in used[-most:])
    return shown + (f" (and {len(used) - most:,} earlier)" if len(used) > most else "")


# The serving engines as their projects spell them.
ENGINE_NAMES = {"sglang": "SGLang", "vllm": "vLLM", "transformers": "Transformers"}


def acceptance_lines(a: Acceptance, unit: str, gpu_name: str) -> list[str]:
    """What the training buys, in two lines: tau after the plan's sample passes, the
    serving speedup and break-even; then what one more epoch adds and costs."""

    def times(value: float) -> str:
        return f"{value:.1f}x"

    def hours(value: float) -> str:
        return f"{value:,.0f}"

    def around(pair: tuple[float, float] | None, one: Callable[[float], str]) -> str:
        said = spread(pair, one)
        return f" ({said})" if said else ""

    regime = a.regime.replace("-", " ")
    first = (
        f"acceptance: tau {tau(a.tau)}{around(a.tau_range, tau)} after "
        f"{a.sample_passes / 1e6:,.1f} M sample passes; serving {times(a.speedup)}"
        f"{around(a.speedup_range, times)} on {ENGINE_NAMES.get(a.engine, a.engine)} at {regime}"
    )
    count = f"{a.serving_gpus:,} {gpu_name}" + ("" if a.serving_gpus == 1 else "s")
    gpus = f"of {count}" if a.fleet is None else f"at {fleet_words(a, gpu_name)}"
    if a.break_even_hours is None:
        first += "; no break-even (the drafter does not speed serving up or the job does not run)"
        if a.fleet is not None:
            first += f" {gpus}"
    else:
        first += (
            f"; break-even after {hours(a.break_even_hours)}"
            f"{around(a.break_even_range, hours)} serving hours {gpus}"
        )
    if a.widened_by:
        # The conditions no public series measured for the drafter family (docs/model.md).
        first += f"; tau's range widened: no public series measured its {', '.join(a.widened_by)}"
    calibrated = " (calibrated on your measured tau)" if a.calibrated else ""
    more = f"one more epoch: {tau_gain(a.one_more_epoch_tau)}{calibrated}" + (
        "" if a.one_more_epoch_cost is None else f" for {cost(a.one_more_epoch_cost, unit)}"
    )
    return [first, more]


def requests(value: float) -> str:
    """A request rate: '2 requests/s', '0.5 requests/s', '1 request/s'."""
    return f"{value:,g} request{'' if value == 1 else 's'}/s"


def gpus_fraction(value: float) -> str:
    """A fleet's mean GPU count (not whole replicas): '21.6', '0.61'."""
    return f"{value:,.1f}" if value >= 10 else f"{value:,.2f}"


def fleet_words(a: Acceptance, gpu_name: str) -> str:
    """The serving fleet at a request rate: '1 request/s (2,048 output tokens each): 21.6
    RTX PRO 6000 without the drafter, 8.44 with it, 13.2 (8.68-24.0) saved'."""
    f = a.fleet
    assert f is not None
    saved = units.span(*a.serving_gpus_saved_range, gpus_fraction)
    return (
        f"{requests(f.requests_per_s)} ({f.output_tokens:,} output tokens each): "
        f"{gpus_fraction(f.gpus_without)} {gpu_name} without the drafter, "
        f"{gpus_fraction(f.gpus_with(a.speedup))} with it, "
        f"{gpus_fraction(a.serving_gpus_saved)} ({saved}) saved"
    )


def projected_tau(a: Acceptance) -> str:
    """The projection's tau for calibrate's before/after: 'tau 4.11 (3.93-4.31) after
    4,800,000 sample passes'."""
    said = spread(a.tau_range, tau)
    return (
        f"tau {tau(a.tau)}{f' ({said})' if said else ''} after "
        f"{sample_passes(a.sample_passes)} sample passes"
        + (" (calibrated)" if a.calibrated else "")
    )


def acceptance_tier_lines(result: Validation) -> list[str]:
    """validate's closing note: the acceptance tiers' errors, each source group left out
    (and in sample, where no other group can refit the curve or the engine factor)."""
    lines = []
    for key, words in (
        ("acceptance", "acceptance tier (tau against sample passes)"),
        ("acceptance/serving", "serving tier (speedup against tau)"),
    ):
        cv, own = result.cross_validated.get(key), result.summary.get(key)
        if cv is None or own is None or not own.cases:
            continue
        s = cv.summary
        left_out = (
            f"{s.cases} cross-validated by source group: median {percent(s.median_abs_error)}, "
            f"worst {percent(s.worst_abs_error)}"
            if s.cases
            else "none cross-validatable"
        )
        apart = len(cv.not_cross_validatable)
        lines.append(
            f"{words}: {left_out}; {apart} need their own group (the only one that "
            f"measured them); in sample {own.cases} cases, median "
            f"{percent(own.median_abs_error)}, worst {percent(own.worst_abs_error)}"
        )
    return lines
