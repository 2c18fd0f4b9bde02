"""Turning pydantic validation errors into the one-line messages users see."""

from __future__ import annotations

import math
from collections.abc import Callable
from dataclasses import dataclass
from typing import Annotated, Any

from pydantic import BeforeValidator, Field, Strict, ValidationError

from .errors import PlanError, suggest
from .numbers import NumberError, TypedNumber, parse_number
from .tomlfile import line_of


def explain(
    err: ValidationError,
    where: str,
    text: str | None = None,
    prefix: tuple[str, ...] = (),
    known: dict[tuple[str, ...], list[str]] | None = None,
) -> PlanError:
    """A PlanError for the first problem in err: file, line, key, bad value, what is allowed."""
    first = err.errors()[0]
    # pydantic's location holds list indexes and union-branch tags besides plan keys: the
    # key is the plan key (what the app marks), the shown name keeps the index.
    loc = prefix + tuple(
        str(part) for part in first["loc"] if isinstance(part, str) and not _is_tag(part)
    )
    shown = ".".join(prefix)
    for part in first["loc"]:
        if isinstance(part, int):
            shown += f"[{part}]"
        elif not _is_tag(part):
            shown += f".{part}" if shown else part
    key = ".".join(loc)
    line = line_of(text, loc) if text else None
    place = f"{where}:{line}" if line else where
    kind = first["type"]
    if kind == "extra_forbidden":
        parent = loc[:-1]
        hint = suggest(loc[-1], (known or {}).get(parent, []))
        allowed = (known or {}).get(parent)
        listing = f"; allowed: {', '.join(allowed)}" if allowed and not hint else ""
        reason = f"unknown key '{key}'{hint}{listing}"
        return PlanError.at(place, reason, key=key)
    if kind == "missing":
        reason = f"missing required key '{key}'"
        return PlanError.at(place, reason, key=key)
    value = first.get("input")
    reason = _message(first)
    if isinstance(value, dict):  # a rule between a table's keys: no single value
        return PlanError.at(place, reason, key=key, shown=shown)
    return PlanError.field(key, short_repr(value), reason, place, shown=shown)


def _is_tag(part: str) -> bool:
    """A union-branch tag pydantic puts into locations (`function-before[check(), float]`,
    `tuple[...]`) or one of our discriminator tags (`(rate)`); never a plan key, since
    plan keys hold no brackets."""
    return "[" in part or part.startswith("(")


# pydantic's wording for type errors, in ours (what is allowed, not what "input should" be).
_MESSAGES = {
    "string_type": "must be text (in quotes)",
    "bool_type": "must be true or false",
    "bool_parsing": "must be true or false",
    "dict_type": "must be a table",
    "model_type": "must be a table",
    "model_attributes_type": "must be a table",
    "tuple_type": "must be a list",
    "list_type": "must be a list",
    "int_type": "must be a whole number",
    "int_parsing": "must be a whole number",
    "float_type": "must be a number",
    "float_parsing": "must be a number",
}


def _message(error: Any) -> str:
    kind, ctx = error["type"], error.get("ctx") or {}
    if kind in _MESSAGES:
        return _MESSAGES[kind]
    if kind == "literal_error":
        return f"must be one of {ctx.get('expected', '')}"
    if kind == "string_too_long":
        return f"must be at most {ctx.get('max_length', 0):,} characters"
    if kind == "string_too_short":
        return "must not be empty"
    if kind == "too_long":
        return f"must have at most {ctx.get('max_length', 0):,} items"
    if kind in ("greater_than", "greater_than_equal", "less_than", "less_than_equal"):
        limit = next(iter(ctx.values()), "")
        relation = {
            "greater_than": "greater than",
            "greater_than_equal": "at least",
            "less_than": "less than",
            "less_than_equal": "at most",
        }[kind]
        return f"must be {relation} {limit}"
    message = str(error["msg"])
    return message.removeprefix("Value error, ")


# Bounds. Every count, size, rate and price a plan, a hardware file or a config.json gives
# has a range far beyond any real value (docs/limits.md says why each one is where it is),
# so that a typo or a hostile file gets a one-line error instead of an overflow, a NaN or a
# hang. A bound is checked before pydantic's own type check, so the message is ours.


@dataclass(frozen=True, slots=True)
class Bound:
    lo: float
    hi: float
    unit: str = ""
    integer: bool = True

    def describe(self) -> str:
        """'from 1 to 100,000 GPUs' as the range reads in messages and descriptions."""
        unit = f" {self.unit}" if self.unit else ""
        return f"from {_number(self.lo)} to {_number(self.hi)}{unit}"

    def check(self, value: object) -> int | float:
        """value, if it is a finite number of the right kind inside the range; else a
        ValueError saying what is allowed."""
        kind = "a whole number" if self.integer else "a number"
        ok_type = (int,) if self.integer else (int, float)
        if isinstance(value, TypedNumber):  # typed on the command line
            try:
                value = parse_number(value)
            except NumberError as err:
                raise ValueError(f"{err}; must be {kind} {self.describe()}") from None
        if isinstance(value, bool) or not isinstance(value, ok_type):
            raise ValueError(f"must be {kind} {self.describe()}")
        if isinstance(value, float) and not math.isfinite(value):
            raise ValueError(f"must be a finite number {self.describe()}")
        if not self.lo <= value <= self.hi:
            if self.integer and self.lo == 1 and value < 1:
                raise ValueError(f"must be greater than 0 (a whole number {self.describe()})")
            raise ValueError(f"must be {kind} {self.describe()}")
        return value if self.integer else float(value)

    @property
    def before(self) -> Any:
        """The pydantic validator that applies this bound, as Annotated metadata:
        `Annotated[int, BOUND.before, BOUND.field("what it counts")]`."""
        return BeforeValidator(self.check)

    def field(self, description: str = "") -> Any:
        """Field metadata whose description ends with this bound's range."""
        text = f"{description}; {self.describe()}" if description else self.describe()
        return Field(description=text)


def _number(x: float) -> str:
    if x == int(x):
        return f"{int(x):,}"
    return f"{x:g}"


# The plan (docs/limits.md).
GPUS_PER_ROLE = Bound(1, 100_000, "GPUs")
TP = Bound(1, 128, "GPUs per replica")
PORT = Bound(1, 65_535)
BATCH_SIZE = Bound(1, 4_096, "samples")
# Sequences a decode engine holds in flight (vLLM's max_num_seqs, TensorRT-LLM's
# max_batch_size: both accept up to thousands).
MAX_SEQUENCES = Bound(1, 65_536, "sequences")
SAMPLES = Bound(1, 10_000_000_000, "samples")
SEQUENCE_TOKENS = Bound(1, 1_048_576, "tokens")
EPOCHS = Bound(1, 1_000, "epochs")
ANCHORS = Bound(1, 1_048_576, "anchors")
BLOCK_SIZE = Bound(1, 256, "tokens")
DRAFT_LAYERS = Bound(1, 256, "layers")
LAYER_ID = Bound(0, 9_999)
USD_PER_GPU_HOUR = Bound(0.001, 1_000, "USD per GPU-hour", integer=False)
PRICE_RATIO = Bound(0.001, 1_000, "x the reference GPU's price", integer=False)
TOKENS_PER_S_PER_GPU = Bound(1, 100_000_000, "tokens/s per GPU", integer=False)
STORAGE_TB = Bound(0.001, 1_000_000, "TB", integer=False)
STORAGE_READ_GB_PER_S = Bound(0.001, 100_000, "GB/s per node", integer=False)
USD_PER_TB_MONTH = Bound(0.001, 100_000, "USD per TB-month", integer=False)
# The GPU catalog.
TFLOPS = Bound(0.1, 100_000, "TFLOPS", integer=False)
MEMORY_GB = Bound(1, 100_000, "GB", integer=False)
MEMORY_TB_PER_S = Bound(0.01, 1_000, "TB/s", integer=False)
LINK_GB_PER_S = Bound(0.1, 100_000, "GB/s", integer=False)
NETWORK_GBIT_PER_S = Bound(0.1, 100_000, "Gb/s", integer=False)
GPUS_PER_NODE = Bound(1, 1_024, "GPUs")
NVLINK_DOMAIN_GPUS = Bound(1, 100_000, "GPUs")
TDP_W = Bound(1, 100_000, "W", integer=False)
EFFICIENCY = Bound(0.001, 1, "of the dense peak", integer=False)
SOFTMAX_SPEEDUP = Bound(1, 100, "x", integer=False)
HOST_MEMORY_GB = Bound(1, 1_000_000, "GB per node", integer=False)
# Target models (config.json).
MODEL_LAYERS = Bound(1, 10_000, "layers")
MODEL_WIDTH = Bound(1, 1_048_576)  # hidden and FFN widths
MODEL_HEADS = Bound(1, 4_096, "heads")
HEAD_DIM = Bound(1, 4_096)
VOCAB = Bound(1, 10_000_000, "tokens")
EXPERTS = Bound(0, 100_000, "experts")
SLIDING_WINDOW = Bound(1, 100_000_000, "tokens")
# Text: names shown on one line, paths and templates.
NAME_CHARS = 200
# A Kubernetes object name (a DNS-1123 subdomain): a PersistentVolumeClaim's name is
# validated with NameIsDNSSubdomain (kubernetes/kubernetes, pkg/apis/core/validation:
# ValidatePersistentVolumeClaim -> ValidatePersistentVolumeName), at most 253 characters.
K8S_NAME_CHARS = 253
TEXT_CHARS = 4_096
TEMPLATE_CHARS = 65_536

# A true/false key: TOML's true or false only. pydantic's lax bool would also take "yes",
# "off", "0" and 1, which "must be true or false" (the message) does not allow.
Flag = Annotated[bool, Strict()]

ALL_BOUNDS = {name: value for name, value in globals().items() if isinstance(value, Bound)}


def one_line(max_chars: int) -> Callable[[object], object]:
    """A before-validator for a name shown on one line: a string without control
    characters, at most max_chars long."""

    def check(value: object) -> object:
        if isinstance(value, str):
            if len(value) > max_chars:
                raise ValueError(f"must be at most {max_chars:,} characters (got {len(value):,})")
            if any(ord(c) < 32 or ord(c) == 127 for c in value):
                raise ValueError("must be one line of text without control characters")
        return value

    return check


def no_nul(value: str) -> str:
    """An after-validator for a path or name: no path or name can hold a NUL character, and
    no command-line argument can carry one (a launch script would pass something else)."""
    if "\0" in value:
        raise ValueError("must not hold a NUL character")
    return value


def short_repr(value: object, limit: int = 60) -> str:
    """The value as the user wrote it (TOML spelling for booleans), cut to limit
    characters (a bad value can be a whole file)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    if isinstance(value, TypedNumber):  # as typed after --set key=
        value = str(value)
        return value if len(value) <= limit else f"{value[:limit]}..."
    try:
        text = repr(value)
    except ValueError:  # an integer too long to print (over 4,300 digits)
        return "<a number too long to print>"
    if len(text) <= limit:
        return text
    return f"{text[:limit]}... ({len(text):,} characters)"
