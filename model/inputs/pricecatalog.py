"""Rental offers read from a maintained price catalog (`dflash-plan prices --import`).

Two formats, told apart by their header row:
- SkyPilot's catalog CSVs (github.com/skypilot-org/skypilot-catalog, `catalogs/v8/<cloud>/
  vms.csv`): InstanceType, AcceleratorName, AcceleratorCount, Price, SpotPrice, Region ...;
  the provider is the folder the file sits in. A row carries both prices: two offers.
- dstack's gpuhunt catalog CSVs (one `<provider>.csv` per provider in a `catalog.zip`):
  instance_name, location, price, gpu_count, gpu_name, gpu_memory, spot ...; the provider
  is the file name (gpuhunt's own rule), one row per price.
Neither carries a date or a storage price: the date comes from `--date` (or a gpuhunt
version such as 20260818-42), and no storage prices are imported.

Every price is per instance; an offer's is per GPU-hour: the instance price divided by the
instance's GPUs, which are the offer's rental unit. GPU names are mapped onto the GPU
catalog's keys by one table (`GPU_NAMES`); rows of other GPUs are counted, not imported.
"""

from __future__ import annotations

import csv
import datetime as dt
import io
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from pydantic import ValidationError

from ..basics import validation as v
from ..basics.errors import PlanError
from ..basics.terminal import terminal_safe
from ..basics.tomlfile import MAX_FILE_BYTES
from .offers import MAX_USD_PER_GPU_HOUR, Kind, Offer

SKYPILOT = "skypilot"
GPUHUNT = "gpuhunt"
# The columns each format must have (others are ignored: both catalogs add columns).
REQUIRED: dict[str, tuple[str, ...]] = {
    SKYPILOT: ("InstanceType", "AcceleratorName", "AcceleratorCount", "Price", "Region"),
    GPUHUNT: ("instance_name", "location", "price", "gpu_count", "gpu_name", "spot"),
}

# Catalog GPU names onto the GPU catalog's keys, after `_squash` (upper case, letters and
# digits only): "RTX-PRO-6000", "RTX PRO 6000", "RTXPro6000BlackwellServer" all squash
# to a name here. Names whose memory or form decides the key (A100 40 or 80 GB; H100 SXM,
# PCIe or NVL) are in `_by_memory_or_form`.
GPU_NAMES: dict[str, str] = {
    # RTX PRO 6000: "RTX-PRO-6000" (SkyPilot), "RTXPRO6000" (gpuhunt), and the providers'
    # own "RTX PRO 6000", "RTX-PRO6000", "RTX PRO Server 6000", "RTX PRO 6000 96GB" that
    # gpuhunt's provider code maps; NVIDIA's "RTX PRO 6000 Blackwell (Server Edition)".
    "RTXPRO6000": "rtx-pro-6000",
    "RTXPROSERVER6000": "rtx-pro-6000",
    "RTXPRO600096GB": "rtx-pro-6000",
    "RTXPRO6000BLACKWELL": "rtx-pro-6000",
    "RTXPRO6000BLACKWELLSERVER": "rtx-pro-6000",
    "RTXPRO6000BLACKWELLSERVEREDITION": "rtx-pro-6000",
    "B200": "b200",
    "B200SXM6180GB": "b200",
    "B300": "b300",
    "B300SXM6268GB": "b300",
    "GB200": "gb200",
    "H200": "h200",
    "H200SXM5141GB": "h200",
    "H100SXM": "h100-sxm",
    "H100SXM5": "h100-sxm",
    "H100SXM580GB": "h100-sxm",
    "H10080GSXM5": "h100-sxm",
    "H100PCIE": "h100-pcie",
    "H10080GPCIE": "h100-pcie",
    # PCIe cards joined in pairs by an NVLink bridge: still PCIe cards.
    "H10080GPCIENVLINK": "h100-pcie",
    "A10080GB": "a100-80g",
    "A10080GPCIE": "a100-80g",
    "A10080GPCIENVLINK": "a100-80g",
    "A100SXM480GB": "a100-80g",
    "L40S": "l40s",
    "RTX5090": "rtx-5090",
    "RTX4090": "rtx-4090",
    "MI300X": "mi300x",
    "MI325X": "mi325x",
    "MI355X": "mi355x",
}
# Verda names a multi-GPU A100 by the instance's total memory: "A100-80GB-640GB".
_TOTAL_MEMORY = re.compile(r"^(A100(?:40|80)GB)\d+GB$")
# gpuhunt version directories: YYYYMMDD-RUN.
_GPUHUNT_VERSION = re.compile(r"^(\d{4})(\d{2})(\d{2})-\d+$")
# Provider names the catalogs spell differently from offers.toml.
PROVIDER_ALIASES = {"lambdalabs": "lambda", "vastai": "vast", "datacrunch": "verda"}
_PROVIDER = re.compile(r"^[a-z0-9][a-z0-9._-]*$")
# An offer's price per GPU-hour is kept to this many decimals: a smaller one would be 0.
USD_DECIMALS = 6
# An offers file is read up to MAX_FILE_BYTES and an imported offer takes more than 200
# bytes of it (its keys that are always written, notes and source alone; 275 to 313 in
# the test catalogs): a catalog that gives more offers than this cannot fit, and is
# refused at the row that passes it, not after every row has been read and written out
# (100,000 rows took 88 s and 1 GB before the refusal).
MIN_OFFER_BYTES = 200
MAX_OFFERS = MAX_FILE_BYTES // MIN_OFFER_BYTES


def _squash(name: str) -> str:
    return re.sub(r"[^A-Z0-9]", "", name.upper())


def gpu_key(name: str, memory_gb: float | None = None, instance: str = "") -> str | None:
    """The GPU catalog's key for a catalog's GPU name, or None for a GPU it does not hold.
    memory_gb (per GPU) and the instance name settle the names that need them."""
    squashed = _squash(name)
    if match := _TOTAL_MEMORY.match(squashed):
        squashed = match.group(1)
    if squashed in GPU_NAMES:
        return GPU_NAMES[squashed]
    return _by_memory_or_form(squashed, memory_gb, instance.lower())


def _by_memory_or_form(squashed: str, memory_gb: float | None, instance: str) -> str | None:
    if squashed == "A100":
        # Plain "A100" is the 40 GB card unless the memory or the instance says 80.
        eighty = (memory_gb is not None and memory_gb >= 75) or "80g" in instance
        return "a100-80g" if eighty else None
    if squashed == "H100":
        # H100 NVL (94 GB) is neither catalog H100 (its own name, "H100NVL", is not in the
        # table; an instance may say it); a PCIe instance is named so (Lambda's
        # gpu_1x_h100_pcie); the rest are SXM boards (AWS p5, GCP a3, Lambda *_sxm5).
        if "nvl" in instance:
            return None
        return "h100-pcie" if "pcie" in instance else "h100-sxm"
    return None


@dataclass(frozen=True, slots=True)
class Imported:
    """What one catalog file gave."""

    path: Path
    format: str
    provider: str
    offers: tuple[Offer, ...]
    rows: int  # data rows read
    without_gpu: int  # CPU-only rows
    unknown: Counter[str] = field(default_factory=Counter)  # GPU name -> rows skipped
    duplicates: int = 0  # offers equal to one already read (same region twice, two zones)

    @property
    def skipped(self) -> int:
        return self.without_gpu + sum(self.unknown.values())

    @property
    def tag(self) -> str:
        """What marks this import's offers in the user's file: a later import of the same
        format and provider replaces them."""
        return f"{self.format}:{self.provider}"

    def summary(self) -> str:
        """'read 52 rows; 38 offers; skipped 14 rows: 3 GPU types not in hardware.toml:
        RTX-A6000 (5), ...' (terminal-safe: it quotes the catalog's names)"""
        name = display_name(self.format, self.path)
        text = f"read {self.rows:,} rows of {name} ({self.format}, {self.provider})"
        text += f"; {len(self.offers):,} offers"
        if self.duplicates:
            text += f" ({self.duplicates:,} repeated offers dropped)"
        parts = []
        if self.unknown:
            names = ", ".join(f"{n} ({c:,})" for n, c in sorted(self.unknown.items()))
            parts.append(f"{len(self.unknown)} GPU types not in hardware.toml: {names}")
        if self.without_gpu:
            rows = "row" if self.without_gpu == 1 else "rows"
            parts.append(f"{self.without_gpu:,} {rows} without a GPU")
        if parts:
            text += f"; skipped {self.skipped:,} rows: " + "; ".join(parts)
        return terminal_safe(text)


def display_name(fmt: str, path: Path) -> str:
    """The file as its catalog names it: SkyPilot's 'verda/vms.csv', gpuhunt's 'verda.csv'."""
    return f"{path.resolve().parent.name}/{path.name}" if fmt == SKYPILOT else path.name


def detect(header: Sequence[str], where: str) -> str:
    """The format of a catalog file from its header row, or a one-line PlanError."""
    names = set(header)
    for fmt, required in REQUIRED.items():
        if set(required) <= names:
            return fmt
    expected = "; ".join(f"{fmt}: {', '.join(cols)}" for fmt, cols in REQUIRED.items())
    shown = ", ".join(header[:12]) + (", ..." if len(header) > 12 else "")
    raise PlanError.at(
        where,
        f"not a price catalog this reads (columns: {shown or 'none'}); "
        f"expected the columns of {expected}",
    )


def date_of(
    fmt: str, date: str | None, source: str, where: str, today: dt.date | None = None
) -> str:
    """The snapshot's date: --date, else a gpuhunt version (YYYYMMDD-N) given as --source.
    A date after today is refused: no one has seen that price yet (a typo, or a wrong
    clock), and its age would be negative."""
    today = today or dt.date.today()
    if date is not None:
        try:
            day = dt.date.fromisoformat(date)
        except ValueError:
            raise PlanError.flag(
                "--date", v.short_repr(date), "use YYYY-MM-DD (the snapshot's date)"
            ) from None
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
            raise PlanError.flag(
                "--date", v.short_repr(date), "use YYYY-MM-DD (the snapshot's date)"
            )
        if day > today:
            raise PlanError.flag(
                "--date",
                date,
                f"after today ({today.isoformat()}); give the date the snapshot was taken",
            )
        return date
    if fmt == GPUHUNT and (match := _GPUHUNT_VERSION.match(source)):
        try:
            day = dt.date(*(int(g) for g in match.groups()))
        except ValueError:
            pass
        else:
            if day > today:
                raise PlanError.flag(
                    "--source",
                    source,
                    f"a gpuhunt version dated {day.isoformat()}, after today "
                    f"({today.isoformat()}); give --date YYYY-MM-DD (when the snapshot was "
                    "taken)",
                )
            return day.isoformat()
    own = " or --source VERSION (a gpuhunt version such as 20260818-42)" if fmt == GPUHUNT else ""
    raise PlanError.at(
        where,
        f"{fmt} rows carry no date; give --date YYYY-MM-DD (when the snapshot was taken){own}",
    )


def provider_of(fmt: str, path: Path, given: str | None) -> str:
    """--provider, else the catalog's own place for it: SkyPilot's folder, gpuhunt's file
    name."""
    raw = given if given else (path.stem if fmt == GPUHUNT else path.resolve().parent.name)
    name = PROVIDER_ALIASES.get(raw.lower(), raw.lower())
    if not _PROVIDER.match(name) or len(name) > 64:
        whence = "--provider" if given else f"the {'file' if fmt == GPUHUNT else 'folder'} name"
        raise PlanError.at(
            str(path),
            f"provider {name!r} (from {whence}) is not a provider name "
            "(lower-case letters, digits, '.', '_', '-'); give --provider NAME",
        )
    return name


def read_catalog(
    path: Path,
    text: str,
    *,
    date: str | None,
    source: str = "",
    provider: str | None = None,
    today: dt.date | None = None,
) -> Imported:
    """The offers of one catalog file's text, or a one-line PlanError naming the file, line,
    column and value of the first bad row."""
    check_source(source)
    try:
        return _read(path, text, date=date, source=source, provider=provider, today=today)
    except csv.Error as err:  # a field over csv's limit, a stray quote in strict files
        raise PlanError.at(str(path), f"not a CSV file this reads: {err}") from None


def check_source(source: str) -> None:
    """--source: a catalog's commit or version, kept with every offer: one line of at most
    NAME_CHARS (a 2,000-character one would not fit an offer's source)."""
    try:
        v.one_line(v.NAME_CHARS)(source)
    except ValueError as err:
        raise PlanError.flag(
            "--source", v.short_repr(source), f"{err}; give the catalog's commit or version"
        ) from None


def _read(
    path: Path,
    text: str,
    *,
    date: str | None,
    source: str,
    provider: str | None,
    today: dt.date | None,
) -> Imported:
    # csv reads the lines itself (newline=""): a quoted field may hold a line break, and
    # only CR and LF end a row, never the VT, FF, NEL or U+2028 that str.splitlines splits on.
    reader = csv.reader(io.StringIO(text, newline=""))
    header = next(reader, [])
    fmt = detect(header, str(path))
    when = date_of(fmt, date, source, str(path), today)
    who = provider_of(fmt, path, provider)
    origin = f"{fmt} catalog {display_name(fmt, path)}" + (f" @ {source}" if source else "")
    col = {name: i for i, name in enumerate(header)}
    offers: dict[tuple[Any, ...], Offer] = {}
    rows = without_gpu = duplicates = 0
    unknown: Counter[str] = Counter()
    for row in reader:
        if not row:
            continue
        rows += 1
        line = reader.line_num
        cell = _Row(row, col, path, line)
        for offer in _offers_of(fmt, cell, who, when, origin, unknown):
            if offer is None:
                without_gpu += 1
                continue
            o = offer
            key = (o.gpu, o.kind, o.unit_gpus, o.instance, o.region, o.usd_per_gpu_hour)
            if key in offers:
                duplicates += 1
            offers.setdefault(key, o)
        if len(offers) > MAX_OFFERS:
            raise PlanError.at(
                f"{path}:{line}",
                f"more than {MAX_OFFERS:,} offers by this row, and an offers "
                f"file is read up to {MAX_FILE_BYTES:,} bytes (about {MAX_OFFERS:,} offers): "
                "import a smaller catalog (fewer regions or GPUs)",
            )
    return Imported(path, fmt, who, tuple(offers.values()), rows, without_gpu, unknown, duplicates)


class _Row:
    """One data row, read by column name; bad values are one-line errors."""

    def __init__(self, row: list[str], col: Mapping[str, int], path: Path, line: int) -> None:
        self.row, self.col, self.path, self.line = row, col, path, line

    def text(self, name: str) -> str:
        i = self.col.get(name)
        return self.row[i].strip() if i is not None and i < len(self.row) else ""

    def bad(self, name: str, value: str, allowed: str) -> PlanError:
        return PlanError.field(name, repr(value), allowed, f"{self.path}:{self.line}")

    def number(self, name: str, *, optional: bool = False) -> float | None:
        value = self.text(name)
        if not value and optional:
            return None
        try:
            number = float(value)
        except ValueError:
            number = math.nan
        if not math.isfinite(number):
            raise self.bad(name, value, "must be a number")
        return number

    def price(self, name: str, *, optional: bool = False) -> float | None:
        """USD per instance-hour: positive, or None for an empty optional one."""
        value = self.number(name, optional=optional)
        if value is not None and value <= 0:
            raise self.bad(name, self.text(name), "must be a price above 0 (USD per hour)")
        return value

    def gpus(self, name: str) -> int:
        value = self.number(name)
        assert value is not None
        if value < 1 or value != int(value) or value > 1024:
            raise self.bad(name, self.text(name), "must be a whole number of GPUs, 1 to 1024")
        return int(value)


def _offers_of(
    fmt: str, cell: _Row, provider: str, date: str, source: str, unknown: Counter[str]
) -> Iterable[Offer | None]:
    """The offers of one row: None for a row without a GPU, nothing for an unknown GPU."""
    if fmt == SKYPILOT:
        name, count_col, instance = cell.text("AcceleratorName"), "AcceleratorCount", "InstanceType"
        # SkyPilot's GpuInfo memory is per GPU in one catalog, per instance or in GB in
        # others: not read; its names say the memory where it matters (A100-80GB).
        region, memory = cell.text("Region"), None
    else:
        name, count_col, instance = cell.text("gpu_name"), "gpu_count", "instance_name"
        region, memory = cell.text("location"), cell.number("gpu_memory", optional=True)
    count = cell.text(count_col)
    if not name or count in ("", "0", "0.0"):
        yield None
        return
    key = gpu_key(name, memory, cell.text(instance))
    if key is None:
        # gpuhunt names both A100s "A100": its memory tells which one was skipped.
        unknown[name if memory is None else f"{name} {memory:g} GB"] += 1
        return
    gpus = cell.gpus(count_col)
    per = f"{gpus} GPU{'s' if gpus > 1 else ''}"

    def offer(kind: Kind, column: str) -> Offer | None:
        usd = cell.price(column, optional=column == "SpotPrice")
        if usd is None:
            return None
        usd_per_gpu_hour = round(usd / gpus, USD_DECIMALS)
        if not 0 < usd_per_gpu_hour <= MAX_USD_PER_GPU_HOUR:
            low = 10.0**-USD_DECIMALS
            raise cell.bad(
                column,
                cell.text(column),
                f"${usd:g}/h for {per} is ${usd / gpus:g} per GPU-hour; an offer's must be "
                f"from ${low:.{USD_DECIMALS}f} to ${MAX_USD_PER_GPU_HOUR:,.0f} per GPU-hour",
            )
        try:
            return Offer(
                provider=provider,
                gpu=key,
                kind=kind,
                usd_per_gpu_hour=usd_per_gpu_hour,
                unit_gpus=gpus,
                instance=cell.text(instance)[:200],
                region=region[:100],
                date=date,
                source=source,
                imported=f"{fmt}:{provider}",
                notes=f"${usd:g}/h for {per} (catalog row {cell.line}), divided by {gpus}",
            )
        except ValidationError as err:  # every value is checked above: never a traceback
            raise v.explain(err, f"{cell.path}:{cell.line}") from None

    if fmt == SKYPILOT:
        kinds: tuple[tuple[Kind, str], ...] = (("on-demand", "Price"), ("spot", "SpotPrice"))
    else:
        spot_text = cell.text("spot")
        if spot_text not in ("True", "False"):
            raise cell.bad("spot", spot_text, "must be True or False")
        kinds = (("spot" if spot_text == "True" else "on-demand", "price"),)
    for kind, column in kinds:
        if (made := offer(kind, column)) is not None:
            yield made


# The head of an offers file the first import creates.
NEW_FILE_HEAD = """\
# Your rental offers (dflash-plan prices). Each [[offer]] adds to the built-in table or
# replaces its offers of the same provider, gpu and kind. Offers with `imported` set were
# written by `dflash-plan prices --import` and are replaced by the next import of the same
# catalog; offers without it are yours and are kept.
"""


@dataclass(frozen=True, slots=True)
class Merged:
    text: str
    replaced: int  # offers of an earlier import of the same catalog, removed
    kept: int  # the file's other offers


def merge(existing: str | None, where: str, imported: Imported) -> Merged:
    """The user's offers file with this import's offers in place of those of an earlier
    import of the same catalog; the file's other offers and its comments kept where they
    are. A file of [[offer]] tables gets the new offers as tables where the earlier
    import's were (else at its end); one written as an inline array (`offer = [ {...},
    ... ]`) gets them at the end of that array."""
    from ..basics.tomlfile import parse_toml
    from .offers import parse_offers

    fields = [{k: v for k, v in o.model_dump().items() if v != ""} for o in imported.offers]
    kept: tuple[Offer, ...] = ()
    replaced = 0
    expected = imported.offers  # the offers the file holds after, in order
    if existing is None:
        text = _with_tables(NEW_FILE_HEAD, fields)
    else:
        doc = parse_toml(existing, where)
        offers = parse_offers(doc, where, existing)  # a bad file stops here
        drop = [o.imported == imported.tag for o in offers]
        kept = tuple(o for o, gone in zip(offers, drop, strict=True) if not gone)
        replaced = len(offers) - len(kept)
        if "offer" in doc and not _OFFER_HEADER.search(existing):
            text = _into_array(existing, drop, fields)
            expected = kept + imported.offers
        else:
            before, after, tight = _without_tables(existing, where, drop)
            text = _with_tables(before, fields, tight) + after
            first = drop.index(True) if replaced else len(offers)
            expected = (
                offers[:first]
                + imported.offers
                + tuple(o for o, gone in zip(offers[first:], drop[first:], strict=True) if not gone)
            )
    size = len(text.encode())
    if size > MAX_FILE_BYTES:
        raise PlanError.at(
            where,
            f"with {len(imported.offers):,} offers from {imported.path.name} it "
            f"would be {size:,} bytes; offers files are read up to "
            f"{MAX_FILE_BYTES:,} bytes: import a smaller catalog (fewer regions or GPUs)",
        )
    # What is written reads back: the file's other offers as they were, the new ones in
    # place of the old.
    back = parse_offers(parse_toml(text, where), where, text)
    if [o.model_dump() for o in back] != [o.model_dump() for o in expected]:
        raise PlanError.at(
            where,
            "cannot tell its [[offer]] tables apart (a line '[[offer]]' inside a "
            "multi-line string?); nothing was written: move the imported offers out by hand",
        )
    return Merged(text, replaced, len(kept))


# An [[offer]] table's header line, and a line that holds no key (blank, or a comment).
_OFFER_HEADER = re.compile(
    r"""^[ \t]*\[\[[ \t]*(?:offer|"offer"|'offer')[ \t]*\]\][ \t]*(?:#.*)?\r?$""", re.M
)
_NO_KEY = re.compile(r"[ \t]*(?:#.*)?\r?")
_COMMENT = re.compile(r"[ \t]*#.*")


def _without_tables(text: str, where: str, drop: Sequence[bool]) -> tuple[str, str, bool]:
    """An offers file of [[offer]] tables without those marked in drop: the text before
    the first of them and the text after it, where the new offers go (so that nothing
    moves on a re-import; the end when none is dropped), and whether a comment stood
    right above it (the new offers follow it without a blank line). The comment lines
    above a table (after the keys of the one before) belong to it: they stay with a kept
    table, and stay where they were when the table goes."""
    lines = text.split("\n")  # TOML's line breaks only (str.splitlines splits on more)
    heads = [i for i, line in enumerate(lines) if _OFFER_HEADER.fullmatch(line)]
    if len(heads) != len(drop):
        raise PlanError.at(
            where,
            f"cannot tell its [[offer]] tables apart ({len(heads):,} '[[offer]]' "
            f"lines for {len(drop):,} offers); nothing was written",
        )
    out = lines[: heads[0]] if heads else lines
    at: int | None = None  # where in out the new offers go
    tight = False
    lead: list[str] = []  # the lines between the previous table's keys and this header
    for k, start in enumerate(heads):
        end = heads[k + 1] if k + 1 < len(heads) else len(lines)
        last = max(i for i in range(start, end) if i == start or not _NO_KEY.fullmatch(lines[i]))
        if drop[k] and at is None:  # the first to go: its lead stays as it was
            out += lead
            at, tight = len(out), start > 0 and bool(_COMMENT.fullmatch(lines[start - 1]))
        elif drop[k]:  # the next ones: their comments stay
            out += [line for line in lead if _COMMENT.fullmatch(line)]
        else:
            out += lead + lines[start : last + 1]
        lead = lines[last + 1 : end]
    out += lead
    before, after = (out, []) if at is None else (out[:at], out[at:])
    return _lines(before) or NEW_FILE_HEAD, _lines(after), tight


def _lines(lines: list[str]) -> str:
    """Lines as text, without the blank lines at the end."""
    while lines and not lines[-1].strip():
        lines = lines[:-1]
    return "\n".join(lines) + "\n" if lines else ""


def _with_tables(head: str, fields: Sequence[Mapping[str, Any]], tight: bool = False) -> str:
    """head, then each offer as an [[offer]] table after a blank line (the first one right
    after head when tight), written as text: tomlkit spaces tables it appends unevenly."""
    from ..basics.tomlfile import to_toml

    tables = "".join(f"\n[[offer]]\n{to_toml(dict(f))}" for f in fields)
    return head + (tables.removeprefix("\n") if tight else tables)


def _into_array(text: str, drop: Sequence[bool], fields: Sequence[Mapping[str, Any]]) -> str:
    """An offers file written as an inline array, without the offers marked in drop and
    with the new ones appended to the array (tomlkit keeps the rest as written)."""
    import tomlkit  # only for writing: keeps the other commands fast

    document = tomlkit.parse(text)
    array = document["offer"]
    for i in reversed([i for i, gone in enumerate(drop) if gone]):
        del array[i]
    if fields and "\n" not in array.as_string():
        array.multiline(True)  # one offer a line, not hundreds on one
    for f in fields:
        table = tomlkit.inline_table()
        table.update(f)
        array.append(table)
    return tomlkit.dumps(document)
