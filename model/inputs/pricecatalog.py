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
import math
import re
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from ..basics.errors import PlanError
from .offers import Kind, Offer

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
        RTX-A6000 (5), ...'"""
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
        return text


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
    raise PlanError(
        f"{where}: not a price catalog this reads (columns: {shown or 'none'}); "
        f"expected the columns of {expected}"
    )


def date_of(fmt: str, date: str | None, source: str, where: str) -> str:
    """The snapshot's date: --date, else a gpuhunt version (YYYYMMDD-N) given as --source."""
    if date is not None:
        try:
            dt.date.fromisoformat(date)
        except ValueError:
            raise PlanError(f"--date {date!r}: use YYYY-MM-DD (the snapshot's date)") from None
        if not re.fullmatch(r"\d{4}-\d{2}-\d{2}", date):
            raise PlanError(f"--date {date!r}: use YYYY-MM-DD (the snapshot's date)")
        return date
    if fmt == GPUHUNT and (match := _GPUHUNT_VERSION.match(source)):
        try:
            return dt.date(*(int(g) for g in match.groups())).isoformat()
        except ValueError:
            pass
    own = " or --source VERSION (a gpuhunt version such as 20260818-42)" if fmt == GPUHUNT else ""
    raise PlanError(
        f"{where}: {fmt} rows carry no date; give --date YYYY-MM-DD (when the snapshot "
        f"was taken){own}"
    )


def provider_of(fmt: str, path: Path, given: str | None) -> str:
    """--provider, else the catalog's own place for it: SkyPilot's folder, gpuhunt's file
    name."""
    raw = given if given else (path.stem if fmt == GPUHUNT else path.resolve().parent.name)
    name = PROVIDER_ALIASES.get(raw.lower(), raw.lower())
    if not _PROVIDER.match(name) or len(name) > 64:
        whence = "--provider" if given else f"the {'file' if fmt == GPUHUNT else 'folder'} name"
        raise PlanError(
            f"{path}: provider {name!r} (from {whence}) is not a provider name "
            "(lower-case letters, digits, '.', '_', '-'); give --provider NAME"
        )
    return name


def read_catalog(
    path: Path,
    text: str,
    *,
    date: str | None,
    source: str = "",
    provider: str | None = None,
) -> Imported:
    """The offers of one catalog file's text, or a one-line PlanError naming the file, line,
    column and value of the first bad row."""
    try:
        return _read(path, text, date=date, source=source, provider=provider)
    except csv.Error as err:  # a field over csv's limit, a stray quote in strict files
        raise PlanError(f"{path}: not a CSV file this reads: {err}") from None


def _read(
    path: Path, text: str, *, date: str | None, source: str, provider: str | None
) -> Imported:
    lines = text.splitlines()
    reader = csv.reader(lines)
    header = next(reader, [])
    fmt = detect(header, str(path))
    when = date_of(fmt, date, source, str(path))
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
    return Imported(path, fmt, who, tuple(offers.values()), rows, without_gpu, unknown, duplicates)


class _Row:
    """One data row, read by column name; bad values are one-line errors."""

    def __init__(self, row: list[str], col: Mapping[str, int], path: Path, line: int) -> None:
        self.row, self.col, self.path, self.line = row, col, path, line

    def text(self, name: str) -> str:
        i = self.col.get(name)
        return self.row[i].strip() if i is not None and i < len(self.row) else ""

    def bad(self, name: str, value: str, allowed: str) -> PlanError:
        return PlanError(f"{self.path}:{self.line}: {name} = {value!r}: {allowed}")

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

    def offer(kind: Kind, usd: float) -> Offer:
        return Offer(
            provider=provider,
            gpu=key,
            kind=kind,
            usd_per_gpu_hour=round(usd / gpus, 6),
            unit_gpus=gpus,
            instance=cell.text(instance)[:200],
            region=region[:100],
            date=date,
            source=source,
            imported=f"{fmt}:{provider}",
            notes=f"${usd:g}/h for {gpus} GPU{'s' if gpus > 1 else ''} (catalog row "
            f"{cell.line}), divided by {gpus}",
        )

    if fmt == SKYPILOT:
        on_demand = cell.price("Price")
        spot = cell.price("SpotPrice", optional=True)
        assert on_demand is not None
        yield offer("on-demand", on_demand)
        if spot is not None:
            yield offer("spot", spot)
    else:
        spot_text = cell.text("spot")
        if spot_text not in ("True", "False"):
            raise cell.bad("spot", spot_text, "must be True or False")
        usd = cell.price("price")
        assert usd is not None
        yield offer("spot" if spot_text == "True" else "on-demand", usd)


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
    import of the same catalog; the file's other offers and its comments kept."""
    import tomlkit  # only for writing: keeps the other commands fast

    from ..basics.tomlfile import MAX_FILE_BYTES, parse_toml, to_toml
    from .offers import parse_offers

    head = NEW_FILE_HEAD
    replaced = kept = 0
    if existing is not None:
        parse_offers(parse_toml(existing, where), where, existing)  # a bad file stops here
        document = tomlkit.parse(existing.removeprefix("\ufeff"))
        table = document.get("offer", [])
        mine = [i for i, row in enumerate(table) if row.get("imported") == imported.tag]
        for i in reversed(mine):
            del table[i]
        replaced, kept = len(mine), len(table)
        if "offer" in document and not kept:
            del document["offer"]  # an empty array of tables is written `offer = []`
        head = tomlkit.dumps(document).rstrip("\n") + "\n"
    # The new offers are appended as text: tomlkit spaces tables it appends unevenly.
    blocks = (
        to_toml({k: v for k, v in offer.model_dump().items() if v != ""})
        for offer in imported.offers
    )
    text = head + "".join(f"\n[[offer]]\n{block}" for block in blocks)
    parse_offers(parse_toml(text, where), where, text)  # what is written reads back
    if len(text.encode()) > MAX_FILE_BYTES:
        raise PlanError(
            f"{where}: with {len(imported.offers):,} offers from {imported.path.name} it "
            f"would be {len(text.encode()):,} bytes; offers files are read up to "
            f"{MAX_FILE_BYTES:,} bytes: import a smaller catalog (fewer regions or GPUs)"
        )
    return Merged(text, replaced, kept)
