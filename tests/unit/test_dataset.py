"""Measuring a JSONL dataset: formats, lengths, bad lines, progress and the cache."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from dflash_plan.model.basics.errors import PlanError
from dflash_plan.model.inputs import dataset
from dflash_plan.model.inputs.dataset import cache_path, measure, measure_cached, sample_texts

MIXED = Path(__file__).parents[1] / "data" / "dataset" / "mixed.jsonl"
# mixed.jsonl, by line (characters of text; the estimate is ceil(characters / 4)):
#  1 ShareGPT from/value, 40 + 60 = 100 chars -> 25 tokens, 2 turns
#  2 conversations role/content, 10 + 10 = 20 -> 5, 2 turns
#  3 not JSON                                    (bad)
#  4 messages: a text part of 20 (the image part is not text), a null content, 8 -> 28
#    chars -> 7 tokens, 3 turns
#  5 a turn whose value is a number              (bad)
#  6 blank                                       (not a record)
#  7 a JSON list                                 (bad)
#  8 text, 400 -> 100, 1 turn
#  9 prompt 30 + response 10 = 40 -> 10, 2 turns
# 10 cut short, no newline                       (bad)
# Lengths sorted: 5, 7, 10, 25, 100.


def test_formats_lengths_and_bad_lines():
    stats = measure(MIXED)
    assert stats.samples == 5
    assert stats.mean_tokens == pytest.approx(147 / 5)  # 5 + 7 + 10 + 25 + 100
    # Nearest rank: p50 is the ceil(0.5 x 5) = 3rd length, p99 the ceil(4.95) = 5th.
    assert (stats.p50_tokens, stats.p99_tokens, stats.max_tokens) == (10, 100, 100)
    assert stats.mean_turns == pytest.approx(10 / 5)  # 2 + 2 + 3 + 1 + 2
    assert stats.formats == {"conversations": 2, "messages": 1, "text": 1, "prompt/response": 1}
    assert stats.bad_lines == 4
    assert stats.first_bad.startswith("mixed.jsonl:3: not JSON")
    assert "4 characters per token" in stats.basis and "OpenAI" in stats.basis
    assert "4 bad lines skipped (first: mixed.jsonl:3" in stats.summary()


def test_truncation_at_max_length_and_template_tokens():
    stats = measure(MIXED, max_length=20)
    # min(length, 20): 5, 7, 10, 20, 20 -> 62 / 5; two samples are cut.
    assert stats.mean_tokens_truncated == pytest.approx(62 / 5)
    assert stats.over_max_length == 2
    assert stats.workload_updates()["workload.avg_sample_tokens"][0] == 12  # round(12.4)
    # 5 template tokens per turn: 25 + 10, 5 + 10, 7 + 15, 100 + 5, 10 + 10.
    stats = measure(MIXED, tokens_per_turn=5)
    assert stats.mean_tokens == pytest.approx((35 + 15 + 22 + 105 + 20) / 5)


def test_a_tokenizer_function_counts_exactly(tmp_path):
    # One sample of k words for k = 1..100, counted by a word-splitting "tokenizer":
    # mean 50.5; p50 the 50th length = 50; p99 the 99th = 99; max 100.
    path = tmp_path / "words.jsonl"
    path.write_text(
        "".join(json.dumps({"text": " ".join(["w"] * k)}) + "\n" for k in range(100, 0, -1))
    )

    def words(text: str) -> int:
        return len(text.split())

    stats = measure(path, tokenizer=words)
    assert (stats.samples, stats.mean_tokens) == (100, 50.5)
    assert (stats.p50_tokens, stats.p99_tokens, stats.max_tokens) == (50, 99, 100)
    assert stats.basis == "counted with tokenizer words"
    updates = stats.workload_updates()
    assert updates["workload.samples"][0] == 100
    assert updates["workload.avg_sample_tokens"][0] == 50  # round(50.5): banker's, 50


def test_progress_reaches_the_file_size():
    seen = []
    measure(MIXED, progress=lambda done, total: seen.append((done, total)))
    size = MIXED.stat().st_size
    assert seen[-1] == (size, size)


def test_a_record_over_the_limit_is_skipped_unread(tmp_path, monkeypatch):
    monkeypatch.setattr(dataset, "MAX_RECORD_BYTES", 1 << 20)
    path = tmp_path / "big.jsonl"
    path.write_text(json.dumps({"text": "x" * (2 << 20)}) + "\n" + '{"text": "abcd"}\n')
    stats = measure(path)
    assert (stats.samples, stats.mean_tokens, stats.bad_lines) == (1, 1, 1)
    assert stats.first_bad == "big.jsonl:1: longer than 1 MiB"


@pytest.mark.parametrize(
    "record, why",
    [
        ({"conversations": "hi"}, "'conversations' is not a list of turns"),
        ({"messages": [{"role": "user"}]}, "'messages'[0] has no 'value' or 'content'"),
        ({"messages": ["hi"]}, "'messages'[0] is not an object"),
        ({"text": ["a", "b"]}, "'text' is a list, not text"),
        (
            {"id": 1, "input": "x"},
            "no conversations, messages, text or prompt key (keys: id, input)",
        ),
        (7, "a JSON int, not an object"),
    ],
)
def test_sample_texts_says_what_was_expected(record, why):
    with pytest.raises(ValueError) as err:
        sample_texts(record)
    assert str(err.value) == why


def test_nothing_usable_is_an_error(tmp_path):
    empty = tmp_path / "empty.jsonl"
    empty.write_text("\n\n")
    with pytest.raises(PlanError, match=r"empty.jsonl: no samples \(empty file\)"):
        measure(empty)
    bad = tmp_path / "bad.jsonl"
    bad.write_bytes(b'{"text": "\xff"}\n')
    with pytest.raises(PlanError, match=r"1 bad lines; first: bad.jsonl:1: not UTF-8"):
        measure(bad)


def test_tokenizer_file_errors(tmp_path, monkeypatch):
    with pytest.raises(PlanError, match="no such tokenizer file"):
        measure(MIXED, tokenizer=tmp_path / "nope.json")
    tok = tmp_path / "tokenizer.json"
    tok.write_text("{}")
    # The optional package missing: a one-line error saying how to get it, not a guess.
    monkeypatch.setitem(sys.modules, "tokenizers", None)
    with pytest.raises(PlanError, match="needs the 'tokenizers' package"):
        measure(MIXED, tokenizer=tmp_path)


def test_cache_next_to_the_plan(tmp_path):
    data = tmp_path / "train.jsonl"
    data.write_text('{"text": "abcdefgh"}\n')
    plan = tmp_path / "plan.toml"
    first = measure_cached(data, plan)
    assert not first.from_cache and cache_path(plan) == tmp_path / ".plan.toml.datasets.json"
    again = measure_cached(data, plan)
    assert again.from_cache and again.mean_tokens == first.mean_tokens == 2  # 8 chars / 4
    # Another size: measured again (12 characters: 3 tokens).
    data.write_text('{"text": "abcdefghijkl"}\n')
    changed = measure_cached(data, plan)
    assert not changed.from_cache and changed.mean_tokens == 3
    # Same size, another modification time: measured again.
    data.write_text('{"text": "abcdefghijkm"}\n')
    os.utime(data, ns=(0, 10**9))
    assert not measure_cached(data, plan).from_cache
    # A broken cache is measured again, and replaced.
    cache_path(plan).write_text("{broken")
    assert not measure_cached(data, plan).from_cache
    assert measure_cached(data, plan).from_cache
    # A tokenizer function has no identity across runs: never cached.
    assert not measure_cached(data, plan, tokenizer=len).from_cache
    assert not measure_cached(data, plan, tokenizer=len).from_cache


def test_cache_keeps_a_bounded_number_of_datasets(tmp_path, monkeypatch):
    monkeypatch.setattr(dataset, "CACHE_ENTRIES", 2)
    plan = tmp_path / "plan.toml"
    for name in "abc":
        (tmp_path / f"{name}.jsonl").write_text('{"text": "abcd"}\n')
        measure_cached(tmp_path / f"{name}.jsonl", plan)
    entries = json.loads(cache_path(plan).read_text())["entries"]
    # The oldest (a) was dropped.
    assert [Path(e["path"]).name for e in entries.values()] == ["b.jsonl", "c.jsonl"]
