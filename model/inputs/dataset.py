"""A JSONL training set's size and sample lengths, streamed (datasets run to gigabytes).

`measure` reads one record at a time (model/lines.py) and keeps 4 bytes per sample: the
sample's length, for the exact p50/p99 at the end. A sample's text is the text of all
its turns in the common chat formats (below); its length is counted with the target's
tokenizer when one is given, else estimated from characters at CHARS_PER_TOKEN, and the
result says which (`basis`). Bad lines are counted, the first one named, and skipped.
`measure_cached` keeps results in a small JSON file next to a plan, keyed by the dataset's
path, size and modification time.
"""

from __future__ import annotations

import json
import math
from array import array
from collections.abc import Callable
from dataclasses import asdict, dataclass, field
from pathlib import Path
from typing import Any

import numpy as np

from ..basics.errors import PlanError
from ..basics.lines import Progress, records
from ..basics.tomlfile import read_text, write_atomic

# One JSON record may hold a long conversation (a 128K-token sample is about 0.5 MB of
# text); a longer line is not a sample this planner can use and is skipped unread.
MAX_RECORD_BYTES = 16 << 20
# "A helpful rule of thumb is that one token generally corresponds to ~4 characters of
# text for common English text" (OpenAI, platform.openai.com/tokenizer). Code, other
# languages and other tokenizers differ (Chinese runs nearer 1-1.5 characters a token):
# give the target's tokenizer for a measured count.
CHARS_PER_TOKEN = 4.0
CHARS_PER_TOKEN_SOURCE = "OpenAI's rule of thumb for English, platform.openai.com/tokenizer"
CACHE_VERSION = 1
CACHE_ENTRIES = 16  # datasets remembered per plan; the oldest is dropped first

# A tokenizer: the path of a tokenizer.json (or a folder holding one), read with the
# optional `tokenizers` package; or a function from text to its token count.
TokenCounter = Callable[[str], int]


@dataclass(frozen=True, slots=True)
class DatasetStats:
    """Samples and their lengths in tokens (measured or estimated: `basis` says which).

    mean/p50/p99/max are over all good samples; p50 and p99 are nearest-rank percentiles
    (the smallest length at least that share of samples do not exceed). With max_length,
    `mean_tokens_truncated` is the mean of min(length, max_length), what a trainer that
    truncates at max_length processes, and `over_max_length` the samples it cuts."""

    path: str
    samples: int
    mean_tokens: float
    p50_tokens: int
    p99_tokens: int
    max_tokens: int
    basis: str
    mean_turns: float
    bad_lines: int = 0
    first_bad: str | None = None
    formats: dict[str, int] = field(default_factory=dict)
    max_length: int | None = None
    mean_tokens_truncated: float | None = None
    over_max_length: int | None = None
    from_cache: bool = False

    def summary(self) -> str:
        text = (
            f"{self.samples:,} samples, {self.mean_tokens:,.0f} tokens on average "
            f"(p50 {self.p50_tokens:,}, p99 {self.p99_tokens:,}, max {self.max_tokens:,}; "
            f"{self.basis})"
        )
        if self.bad_lines:
            text += f"; {self.bad_lines:,} bad lines skipped (first: {self.first_bad})"
        return text

    def workload_updates(self) -> dict[str, tuple[int, str]]:
        """Plan keys this sets, each with where it came from."""
        where = f"{Path(self.path).name} ({self.basis})"
        mean = (
            self.mean_tokens if self.mean_tokens_truncated is None else self.mean_tokens_truncated
        )
        cut = (
            ""
            if self.mean_tokens_truncated is None
            else f", truncated at max_length {self.max_length:,}"
        )
        return {
            "workload.samples": (self.samples, f"{where}: sample count"),
            "workload.avg_sample_tokens": (
                max(1, round(mean)),
                f"{where}: mean sample length{cut}",
            ),
        }


def sample_texts(record: Any) -> tuple[str, list[str]]:
    """(format name, the texts of a sample's turns) for one JSON record; ValueError
    saying what was expected when it is none of the formats read here.

    - {"conversations": [{"from"|"role": ..., "value"|"content": ...}, ...]} (ShareGPT,
      SpecForge's prepared data)
    - {"messages": [{"role": ..., "content": str | [{"type": "text", "text": ...}]}]}
    - {"text": ...}
    - {"prompt": ..., "response"|"completion": ...}
    """
    if not isinstance(record, dict):
        raise ValueError(f"a JSON {type(record).__name__}, not an object")
    for key in ("conversations", "messages"):
        if key in record:
            turns = record[key]
            if not isinstance(turns, list):
                raise ValueError(f"'{key}' is not a list of turns")
            return key, [_turn_text(turn, key, i) for i, turn in enumerate(turns)]
    if "text" in record:
        return "text", [_string(record["text"], "'text'")]
    if "prompt" in record:
        answer = next((k for k in ("response", "completion") if k in record), None)
        texts = [_string(record["prompt"], "'prompt'")]
        if answer:
            texts.append(_string(record[answer], f"'{answer}'"))
        return "prompt/response", texts
    keys = ", ".join(list(record)[:6]) or "none"
    raise ValueError(f"no conversations, messages, text or prompt key (keys: {keys})")


def _turn_text(turn: Any, key: str, index: int) -> str:
    where = f"'{key}'[{index}]"
    if not isinstance(turn, dict):
        raise ValueError(f"{where} is not an object")
    name = next((k for k in ("value", "content") if k in turn), None)
    if name is None:
        raise ValueError(f"{where} has no 'value' or 'content'")
    content = turn[name]
    if isinstance(content, list):  # OpenAI-style parts: only text is counted
        return "".join(
            _string(part.get("text"), f"{where} text part")
            for part in content
            if isinstance(part, dict) and part.get("type") == "text"
        )
    return _string(content, f"{where}.{name}")


def _string(value: Any, where: str) -> str:
    if value is None:
        return ""  # e.g. an assistant turn that only calls tools
    if not isinstance(value, str):
        raise ValueError(f"{where} is a {type(value).__name__}, not text")
    return value


def _counter(tokenizer: str | Path | TokenCounter | None) -> tuple[TokenCounter, float, str]:
    """What counts a text (tokens, or characters for the estimate), the units per token,
    and the basis to state. The estimate divides a sample's characters, all turns
    together, by CHARS_PER_TOKEN and rounds up."""
    if tokenizer is None:
        return (
            len,
            CHARS_PER_TOKEN,
            f"estimated at {CHARS_PER_TOKEN:g} characters per token, {CHARS_PER_TOKEN_SOURCE}",
        )
    if callable(tokenizer):
        name = getattr(tokenizer, "__name__", type(tokenizer).__name__)
        return tokenizer, 1.0, f"counted with tokenizer {name}"
    path = Path(tokenizer)
    if path.is_dir():
        path = path / "tokenizer.json"
    if not path.is_file():
        raise PlanError.at(
            str(path),
            "no such tokenizer file (give the tokenizer.json of the target model, or its folder)",
        )
    try:
        from tokenizers import Tokenizer  # optional: only when a tokenizer is given
    except ImportError:
        raise PlanError.at(
            str(path),
            "reading a tokenizer needs the 'tokenizers' package "
            "(pip install tokenizers); without a tokenizer the length is "
            "estimated from characters",
        ) from None
    try:
        loaded = Tokenizer.from_file(str(path))
    except Exception as err:  # the Rust library raises its own types
        raise PlanError.at(str(path), f"not a tokenizer.json: {str(err).splitlines()[0]}") from None
    return (
        lambda text: len(loaded.encode(text, add_special_tokens=False).ids),
        1.0,
        f"counted with {path}",
    )


def measure(
    path: Path,
    tokenizer: str | Path | TokenCounter | None = None,
    progress: Progress | None = None,
    max_length: int | None = None,
    tokens_per_turn: int = 0,
) -> DatasetStats:
    """Count the samples of a JSONL dataset and their length distribution.

    tokens_per_turn adds the chat template's own tokens per turn when known (Qwen's
    `<|im_start|>role\\n ... <|im_end|>\\n` is 5); by default only the turns' text is
    counted. PlanError when no line is a usable sample."""
    path = Path(path)
    count, per_token, basis = _counter(tokenizer)
    lengths = array("I")
    turns_total = 0
    bad = 0
    first_bad: str | None = None
    formats: dict[str, int] = {}
    for record in records(path, MAX_RECORD_BYTES, progress=progress, what="a JSONL dataset"):
        try:
            if record.data is None:
                raise ValueError(f"longer than {MAX_RECORD_BYTES >> 20} MiB")
            try:
                parsed = json.loads(record.data)
            except UnicodeDecodeError:
                raise ValueError("not UTF-8 text") from None
            except ValueError as err:
                raise ValueError(
                    "not JSON: "
                    + ("cut short (the file may be truncated)" if record.last else str(err))
                ) from None
            except RecursionError:
                raise ValueError("not JSON: nested too deeply") from None
            kind, texts = sample_texts(parsed)
            tokens = math.ceil(
                sum(count(text) for text in texts) / per_token
            ) + tokens_per_turn * len(texts)
        except ValueError as err:
            bad += 1
            if first_bad is None:
                first_bad = f"{path.name}:{record.line}: {err}"
            continue
        lengths.append(min(tokens, 0xFFFFFFFF))
        turns_total += len(texts)
        formats[kind] = formats.get(kind, 0) + 1
    if not lengths:
        why = f" ({bad:,} bad lines; first: {first_bad})" if bad else " (empty file)"
        raise PlanError.at(
            str(path),
            f"no samples{why}; each line must be a JSON object with "
            f"conversations, messages, text or prompt/response",
        )
    values = np.sort(np.frombuffer(lengths, dtype=np.uint32).astype(np.int64))
    n = len(values)
    truncated = over = None
    if max_length is not None:
        truncated = float(np.minimum(values, max_length).mean())
        over = int((values > max_length).sum())
    return DatasetStats(
        path=str(path),
        samples=n,
        mean_tokens=float(values.mean()),
        p50_tokens=_nearest_rank(values, 0.50),
        p99_tokens=_nearest_rank(values, 0.99),
        max_tokens=int(values[-1]),
        basis=basis,
        mean_turns=turns_total / n,
        bad_lines=bad,
        first_bad=first_bad,
        formats=formats,
        max_length=max_length,
        mean_tokens_truncated=truncated,
        over_max_length=over,
    )


def _nearest_rank(sorted_values: np.ndarray, share: float) -> int:
    """The smallest value that at least `share` of the values do not exceed."""
    return int(sorted_values[max(0, math.ceil(share * len(sorted_values)) - 1)])


# --- the cache next to a plan -----------------------------------------------------------


def cache_path(plan_path: Path) -> Path:
    """Where the cache of a plan's dataset measurements lives: `.plan.toml.datasets.json`
    beside the plan (hidden, so it does not crowd the folder)."""
    plan_path = Path(plan_path)
    return plan_path.with_name(f".{plan_path.name}.datasets.json")


def _key(
    path: Path, tokenizer: str | Path | None, max_length: int | None, tokens_per_turn: int
) -> str | None:
    """The cache key: the dataset's absolute path, size and modification time (and the
    tokenizer file's), so an edited or replaced file is measured again."""

    def stamp(p: Path) -> str:
        info = p.stat()
        return f"{p.resolve()}|{info.st_size}|{info.st_mtime_ns}"

    try:
        parts = [stamp(path)]
        if tokenizer is not None:
            tok = Path(tokenizer)
            parts.append(stamp(tok / "tokenizer.json" if tok.is_dir() else tok))
    except OSError:
        return None
    parts += [
        f"max_length={max_length}",
        f"tokens_per_turn={tokens_per_turn}",
        f"chars_per_token={CHARS_PER_TOKEN}",
    ]
    return "\n".join(parts)


def _read_cache(file: Path) -> dict[str, Any]:
    try:
        doc = json.loads(read_text(file))
    except (PlanError, ValueError):
        return {}  # no cache, or a broken one: measure again
    if (
        not isinstance(doc, dict)
        or doc.get("version") != CACHE_VERSION
        or not isinstance(doc.get("entries"), dict)
    ):
        return {}
    entries: dict[str, Any] = doc["entries"]
    return entries


def measure_cached(
    path: Path,
    plan_path: Path,
    tokenizer: str | Path | TokenCounter | None = None,
    progress: Progress | None = None,
    max_length: int | None = None,
    tokens_per_turn: int = 0,
) -> DatasetStats:
    """`measure`, answered from the cache next to plan_path when the dataset (and the
    tokenizer file) are unchanged; a fresh result is written back atomically. A tokenizer
    given as a function is not cached (nothing identifies it across runs)."""
    path = Path(path)
    key = None if callable(tokenizer) else _key(path, tokenizer, max_length, tokens_per_turn)
    file = cache_path(plan_path)
    entries = _read_cache(file) if key else {}
    if key and isinstance(entries.get(key), dict):
        try:
            return DatasetStats(**{**entries[key], "from_cache": True})
        except TypeError:
            pass  # an entry of another shape: measure again
    stats = measure(path, tokenizer, progress, max_length, tokens_per_turn)
    if key:
        entries.pop(key, None)
        entries[key] = {k: v for k, v in asdict(stats).items() if k != "from_cache"}
        while len(entries) > CACHE_ENTRIES:
            entries.pop(next(iter(entries)))
        write_atomic(
            file, json.dumps({"version": CACHE_VERSION, "entries": entries}, indent=1) + "\n"
        )
    return stats


__all__ = [
    "CHARS_PER_TOKEN",
    "DatasetStats",
    "cache_path",
    "measure",
    "measure_cached",
    "sample_texts",
]
