"""The result figures, each declared once: its JSON key (also the attribute it is read
from), the words the views show, its unit, the formatter that writes it (tui/format.py,
keyed by `format`) and the views that show it. The JSON, the CLI report, the app's
results, the comparison views, the search tables and the tests' contract read this
table; a new figure is one row here (and its attribute on Projection or Comparison).

`composed` figures are laid out inside a view's headline ("14.8 Ktok/s (6.31
samples/s), bottleneck: target"), each still written by its formatter here and labelled
by its words here (the view lays out only the sentence); every other figure gets a row
(or a column) of its own in each view it names, from this table alone. No view writes a
figure's value itself (tests/test_figures.py reads the views' f-strings for that)."""

from __future__ import annotations

from dataclasses import dataclass
from enum import StrEnum
from typing import Any, Literal


class View(StrEnum):
    JSON = "json"  # `project --json` (and the projections inside compare/search --json)
    REPORT = "report"  # the CLI's text report of one plan
    RESULTS = "results"  # the app's results panel
    COMPARE = "compare"  # the CLI's compare table and the app's comparison view
    SEARCH = "search"  # the CLI's and the app's search tables


ALL = frozenset(View)


@dataclass(frozen=True, slots=True)
class Figure:
    key: str  # the JSON key, and the attribute of `of` it is read from
    name: str  # the words of a report or results row
    head: str  # a wide table's column head (the CLI's compare and search)
    unit: str  # "cost": the plan's cost unit (USD or reference-GPU-hours)
    format: str  # the formatter key (tui/format.py FORMATS)
    meaning: str  # one line, for people
    views: frozenset[View]
    # "acceptance": a figure of the projection's acceptance (Projection.acceptance: the
    # drafter's tau, its serving speedup and break-even), read from there by `attr`.
    of: Literal["projection", "comparison", "acceptance"] = "projection"
    short: str = ""  # a narrow table's head (the app's tables and results); head when empty
    tiny: str = ""  # the app's search table's head, the narrowest; short when empty
    ranged: bool = False  # Ranges (or the Comparison) has a (low, high) pair for it
    # A search table's column (the CLI's and the app's) too wide for the terminal: the
    # highest is left out first, and the table says so; 0: never left out.
    drop: int = 0
    composed: bool = False  # laid out inside the views' headlines, written by `format`
    # The attribute the value is read from, and its (low, high) range's, when they are not
    # the key and the key + "_range" (an acceptance figure's: the key says what it is).
    attr: str = ""
    range_attr: str = ""

    @property
    def narrow(self) -> str:
        return self.short or self.head

    @property
    def narrowest(self) -> str:
        return self.tiny or self.narrow

    def read(self, source: Any) -> Any:
        """The figure's value in a Projection (or a Comparison, for `of="comparison"`)."""
        if self.of == "acceptance":
            return getattr(source.acceptance, self.attr or self.key)
        return getattr(source, self.attr or self.key)

    def read_range(self, source: Any) -> tuple[float, float] | None:
        """An acceptance figure's (low, high) in a Projection (None for the others: their
        ranges are the projection's Ranges and the Comparison's own)."""
        if self.of != "acceptance" or not self.ranged:
            return None
        pair: tuple[float, float] | None = getattr(
            source.acceptance, self.range_attr or f"{self.attr or self.key}_range"
        )
        return pair


def _views(*views: View) -> frozenset[View]:
    return frozenset(views)


# Every figure, in declaration order: the JSON's key order (per source), the comparison
# views' row order. A new figure is one `_declare` at the end of the table below.
FIGURES: tuple[Figure, ...] = ()


def _declare(f: Figure) -> Figure:
    global FIGURES
    FIGURES = (*FIGURES, f)
    return f


R, J, S, C, Q = View.REPORT, View.JSON, View.RESULTS, View.COMPARE, View.SEARCH

TOKENS_PER_S = _declare(
    Figure(
        "tokens_per_s",
        "throughput",
        "Ktok/s",
        "tokens/s",
        "ktok",
        "tokens trained per second, the pipeline's slowest side",
        ALL,
        ranged=True,
        drop=3,  # a narrow table keeps the days and cost it is judged on
        composed=True,
    )
)
KTOK_PER_S = _declare(
    Figure("ktok_per_s", "Ktok/s", "Ktok/s", "Ktok/s", "number", "tokens_per_s / 1e3", _views(J))
)
SAMPLES_PER_S = _declare(
    Figure(
        "samples_per_s",
        "samples/s",
        "samples/s",
        "samples/s",
        "number",
        "samples trained per second at the workload's mean sample length",
        _views(J, R),
        composed=True,
    )
)
DAYS = _declare(
    Figure(
        "days",
        "time",
        "days",
        "days",
        "duration",
        "days to train every epoch",
        ALL,
        tiny="time",
        ranged=True,
        composed=True,
    )
)
EPOCHS = _declare(
    Figure(
        "epochs",
        "epochs",
        "epochs",
        "epochs",
        "count",
        "passes over the dataset",
        _views(J, R, S),
        composed=True,
    )
)
TOKENS_PER_EPOCH = _declare(
    Figure(
        "tokens_per_epoch",
        "tokens per epoch",
        "tokens/epoch",
        "tokens",
        "gtokens",
        "tokens in one pass over the dataset",
        _views(J, R),
        composed=True,
    )
)
GPU_HOURS = _declare(
    Figure(
        "gpu_hours",
        "GPU-hours",
        "GPU-hours",
        "GPU-hours",
        "count",
        "GPU-hours billed over the run",
        _views(J, R),
        short="GPU-h",
        composed=True,
    )
)
BILLED_GPUS = _declare(
    Figure("billed_gpus", "billed GPUs", "billed GPUs", "GPUs", "count", "GPUs paid for", _views(J))
)
TOTAL_COST = _declare(
    Figure(
        "total_cost",
        "total cost",
        "cost",
        "cost",
        "cost",
        "what the run costs, in the plan's cost unit",
        ALL,
        ranged=True,
        composed=True,
    )
)
COST_PER_EPOCH = _declare(
    Figure(
        "cost_per_epoch",
        "per epoch",
        "cost/epoch",
        "cost",
        "cost",
        "total cost / epochs",
        _views(J, R, S, C),
        short="per epoch",
        composed=True,
    )
)
COST_UNIT = _declare(
    Figure(
        "cost_unit", "cost unit", "cost unit", "", "text", "USD or reference-GPU-hours", _views(J)
    )
)
TOTAL_COST_USD = _declare(
    Figure(
        "total_cost_usd",
        "at catalog prices",
        "$ at catalog prices",
        "USD",
        "usd",
        "the total cost in USD at catalog prices",
        _views(J, R),
        composed=True,
    )
)
ENERGY_KWH = _declare(
    Figure(
        "energy_kwh",
        "energy",
        "kWh",
        "kWh",
        "count",
        "the GPUs' energy at TDP",
        _views(J, R),
        composed=True,
    )
)
BOTTLENECK = _declare(
    Figure(
        "bottleneck",
        "bottleneck",
        "bottleneck",
        "",
        "text",
        "the side that is 100 % busy: target, drafter or link",
        ALL,
        tiny="bound",
        drop=4,
        composed=True,
    )
)
FITS = _declare(
    Figure("fits", "fits", "fits", "", "text", "every role fits its GPU memory", _views(J))
)
SPEEDUP = _declare(
    Figure(
        "speedup",
        "speed",
        "speed",
        "x",
        "times",
        "the baseline's job days / this plan's (each plan's whole job)",
        _views(J, C),
        of="comparison",
        short="speed ×",
        ranged=True,
        composed=True,
    )
)
COST_RATIO = _declare(
    Figure(
        "cost_ratio",
        "cost ratio",
        "cost ratio",
        "x",
        "times",
        "this plan's job cost / the baseline's (each plan's whole job)",
        _views(J, C),
        of="comparison",
        short="cost ×",
        ranged=True,
        composed=True,
    )
)
DAYS_DELTA = _declare(
    Figure(
        "days_delta",
        "days delta",
        "days delta",
        "days",
        "signed_duration",
        "this plan's job days - the baseline's",
        _views(J),
        of="comparison",
        composed=True,
    )
)
BREAK_EVEN = _declare(
    Figure(
        "break_even_price_ratio",
        "break-even",
        "break-even",
        "x",
        "ratios",
        "per role, the price ratio at which the plan costs what the baseline costs",
        _views(J, C),
        of="comparison",
        composed=True,
    )
)

COST_PER_MILLION_TOKENS = _declare(
    Figure(
        "cost_per_million_tokens",
        "cost/Mtok",
        "cost/Mtok",
        "cost",
        "cost_fine",
        "the online pipeline's total cost per million tokens trained, every epoch's",
        _views(J),
    )
)
# The whole job the plan describes: regeneration (when on), then the run of the plan's own
# mode (the offline run's capture and training, or the online pipeline). Every view leads
# with these; for an online plan without regeneration they equal days and total_cost.
JOB_DAYS = _declare(
    Figure(
        "job_days",
        "time",
        "job days",
        "days",
        "duration",
        "days of the whole job: every phase (regenerate, capture, train) summed",
        _views(J, R, S),
        composed=True,
    )
)
JOB_COST = _declare(
    Figure(
        "job_cost",
        "total cost",
        "job cost",
        "cost",
        "cost",
        "what the whole job costs, every phase summed, in the plan's cost unit",
        _views(J, R, S),
        composed=True,
    )
)
JOB_COST_PER_MILLION_TOKENS = _declare(
    Figure(
        "job_cost_per_million_tokens",
        "cost/Mtok",
        "cost/Mtok",
        "cost",
        "cost_fine",
        "the whole job's cost per million tokens trained, every epoch's",
        _views(J, R, S, C, Q),
        drop=5,  # cost/epoch and the total cost say much the same
    )
)
DOES_NOT_FIT = _declare(
    Figure(
        "does_not_fit",
        "does not fit",
        "does not fit",
        "",
        "text",
        "why the plan cannot run as written (a role out of GPU memory, the offline data over "
        "storage.tb, the Mooncake store over host memory); null when it fits",
        _views(J),
    )
)

# What the training buys (Projection.acceptance): the drafter's acceptance length at the
# plan's training budget, the serving speedup it gives and the serving hours that pay the
# training back. The results panel lays them out in its acceptance group; the comparison
# views give each a row (column), its range beside it. A narrow compare table gives them
# up first (the serving speedup, the payback, then tau), so its other columns stay.
TAU = _declare(
    Figure(
        "tau",
        "tau",
        "tau",
        "tokens",
        "tau",
        "expected acceptance length: tokens accepted per drafting step, at the plan's "
        "training budget (samples x epochs)",
        _views(S, C),
        of="acceptance",
        ranged=True,
        drop=6,
        composed=True,
    )
)
SERVING_SPEEDUP = _declare(
    Figure(
        "serving_speedup",
        "serve speed",
        "serve speed",
        "x",
        "times",
        "decoding speed with the drafter / without it, on the plan's serving engine",
        _views(S, C),
        of="acceptance",
        attr="speedup",
        ranged=True,
        drop=8,
        composed=True,
    )
)
BREAK_EVEN_HOURS = _declare(
    Figure(
        "break_even_hours",
        "paid back",
        "paid back",
        "hours",
        "hours",
        "serving hours after which the serving GPUs the drafter saves have paid for its training",
        _views(S, C),
        of="acceptance",
        short="paid back, d",
        range_attr="break_even_range",
        ranged=True,
        drop=7,
        composed=True,
    )
)

# The serving GPUs the drafter frees (serving.count's share, or a fleet's at
# serving.requests_per_s): what the break-even divides the training cost by. A narrow
# compare table gives it up first.
SERVING_GPUS_SAVED = _declare(
    Figure(
        "serving_gpus_saved",
        "GPUs saved",
        "GPUs saved",
        "GPUs",
        "gpus_fraction",
        "serving GPUs the drafter frees: serving.count x (1 - 1/speedup), or at "
        "serving.requests_per_s the GPUs serving it without the drafter less those with it",
        _views(C),
        of="acceptance",
        ranged=True,
        drop=9,
        composed=True,
    )
)


def shown_in(view: View, of: str = "projection") -> tuple[Figure, ...]:
    """The figures of a projection (or a comparison) a view shows, in registry order."""
    return tuple(f for f in FIGURES if view in f.views and f.of == of)


def rows(view: View, of: str = "projection") -> tuple[Figure, ...]:
    """The figures a view shows in a row (column) of their own: not composed by hand."""
    return tuple(f for f in shown_in(view, of) if not f.composed)


def json_figures(source: Any, of: str = "projection") -> dict[str, Any]:
    """The JSON keys of the figures of a projection (or a comparison), in registry order."""
    return {f.key: f.read(source) for f in shown_in(View.JSON, of)}
