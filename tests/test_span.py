"""Compaction spans: the native ``Span`` handle that names a round's messages, and the
extractive summary of a large span read on two connections at once."""

from __future__ import annotations

import json
import random
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import pytest

from lossless import _native
from lossless.errors import CompactionBusyError, InvalidInputError

MODEL = "gpt-4o"
_TEXT = (
    "the parser fails when input is empty we must never drop a row because the ledger "
    "found a bug next TODO fixed added always only config value module returns error"
)
WORDS = _TEXT.split()


def sentence(rng: random.Random) -> str:
    return " ".join(rng.choice(WORDS) for _ in range(rng.randint(6, 30))) + "."


def agent_session(store: _native.Store, sid: str, messages: int, seed: int = 7) -> None:
    """User and assistant turns; tool calls (some failed, some naming files), file refs."""
    rng = random.Random(seed)
    for index in range(messages):
        role = "user" if index % 2 == 0 else "assistant"
        parts: list[dict[str, Any]] = [{"kind": "text", "text": sentence(rng)}]
        if role == "assistant" and rng.random() < 0.4:
            failed = rng.random() < 0.1
            parts.append(
                {
                    "kind": "tool",
                    "name": rng.choice(["read_file", "bash", "grep"]),
                    "call_id": f"call_{index}",
                    "input": json.dumps({"path": f"src/mod_{index % 37}.py"}),
                    "output": f"line one of {index}\nmore",
                    "status": "error" if failed else "completed",
                    "error": "exit status 1\nstderr" if failed and index % 3 else None,
                }
            )
        if rng.random() < 0.02:
            parts.append(
                {
                    "kind": "file_ref",
                    "file_id": f"file_{index:08x}",
                    "path": f"docs/{index}.pdf",
                }
            )
        store.append_message(sid, role, parts)


def large_spans(
    tmp_path: Path, messages: int, seed: int
) -> Iterator[tuple[_native.Store, str, _native.Span]]:
    """The same agent session on a file (read on two connections) and in memory (on
    one), each with the span of its next summary."""
    for path in (str(tmp_path / "large.db"), ":memory:"):
        store = _native.Store(path)
        sid = store.create_session(MODEL, "{}", None)
        agent_session(store, sid, messages, seed=seed)
        yield store, sid, store.compaction_span(sid, 2)


@pytest.fixture
def native(tmp_path: Path) -> _native.Store:
    return _native.Store(str(tmp_path / "span.db"))


@pytest.fixture
def sid(native: _native.Store) -> str:
    sid = native.create_session(MODEL, "{}", None)
    agent_session(native, sid, 40)
    return sid


def test_a_span_names_the_unprotected_view_messages(native: _native.Store, sid: str) -> None:
    span = native.compaction_span(sid, 2)
    items = native.view_items(sid)
    expected = [item for item in items[: len(span)] if item["kind"] == "message"]
    assert span.session_id == sid
    assert span.message_ids == [item["id"] for item in expected]
    assert span.message_count == len(span) == len(expected) == 36
    assert span.tokens == sum(item["tokens"] for item in expected)
    assert span.view_tokens == sum(item["tokens"] for item in items)
    assert span.view_version == native.view_stats(sid)["version"]
    assert (span.first_seq, span.last_seq) == (1, 36)
    assert (span.summary_ids, span.summary_tokens) == ([], 0)
    assert "messages=36" in repr(span)


def test_the_head_of_a_span_is_its_oldest_messages(native: _native.Store, sid: str) -> None:
    span = native.compaction_span(sid, 2)
    tokens = {item["id"]: item["tokens"] for item in native.view_items(sid)}
    head = span.head(10)
    assert head.message_ids == span.message_ids[:10]
    assert head.tokens == sum(tokens[id_] for id_ in head.message_ids)
    assert (head.first_seq, head.last_seq) == (1, 10)
    assert head.view_version == span.view_version
    assert span.head(1_000).message_ids == span.message_ids
    assert len(span.head(0)) == 0


@pytest.mark.parametrize("method", ["extractive_summary", "truncate_summary"])
def test_a_span_summarises_like_its_list_of_ids(
    native: _native.Store, sid: str, method: str
) -> None:
    span = native.compaction_span(sid, 2)
    by_span = getattr(native, method)(span, 600)
    by_list = getattr(native, method)(span.message_ids, 600)
    assert by_span["text"] == by_list["text"]
    assert by_span["token_count"] == by_list["token_count"]
    assert by_span["file_ids"] == by_list["file_ids"]
    # A span's caller takes span.head(message_count): no copy of the ids comes back.
    assert "message_ids" not in by_span
    assert by_span["message_count"] == by_list["message_count"] == span.message_count
    assert by_list["message_ids"] == span.message_ids


def test_a_capped_transcript_covers_the_head_of_its_span(native: _native.Store, sid: str) -> None:
    span = native.compaction_span(sid, 2)
    full = native.transcript(span)
    capped = native.transcript(span, None, full["token_count"] // 3)
    by_list = native.transcript(span.message_ids, None, full["token_count"] // 3)
    assert 3 <= capped["message_count"] < span.message_count
    assert span.head(capped["message_count"]).message_ids == by_list["message_ids"]
    assert capped["text"] == by_list["text"]


def test_a_span_commits_and_cannot_commit_twice(native: _native.Store, sid: str) -> None:
    span = native.compaction_span(sid, 2)
    head = span.head(20)
    committed = native.commit_summary(sid, "the first twenty", 1, head, [])
    assert committed["messages_covered"] == 20
    items = native.view_items(sid)
    assert items[0]["id"] == committed["summary_id"]
    assert {item["id"] for item in items}.isdisjoint(head.message_ids)
    # Its messages left the view: the same span can never be summarised again.
    with pytest.raises((InvalidInputError, CompactionBusyError)):
        native.commit_summary(sid, "again", 1, head, [])
    with pytest.raises((InvalidInputError, CompactionBusyError)):
        native.extractive_summary(span, 500)
    rest = native.compaction_span(sid, 2)
    assert rest.message_ids == span.message_ids[20:]
    assert rest.summary_ids == [committed["summary_id"]]
    assert rest.summary_tokens == items[0]["tokens"] == committed["token_count"]


def test_an_empty_span_is_refused(native: _native.Store, sid: str) -> None:
    empty = native.compaction_span(sid, 100)
    assert len(empty) == 0
    with pytest.raises(InvalidInputError):
        native.extractive_summary(empty, 500)
    with pytest.raises(InvalidInputError):
        native.truncate_summary(empty, 500)
    with pytest.raises(InvalidInputError):
        native.transcript(empty)
    with pytest.raises(InvalidInputError):
        native.commit_summary(sid, "nothing", 1, empty, [])


def test_a_large_span_reads_on_two_connections_with_the_same_summary(tmp_path: Path) -> None:
    # A file store reads the older and the newer half of a large span on two
    # connections and merges what it gathered; a private in-memory store cannot
    # open a second connection and reads it whole. The summaries must not differ.
    summaries = []
    for store, _sid, span in large_spans(tmp_path, 2_501, seed=11):
        assert span.message_count == 2_498
        for budget in (300, 2_000, 20_000):
            summary = store.extractive_summary(span, budget)
            summaries.append((budget, summary["text"], summary["file_ids"]))
    half = len(summaries) // 2
    assert summaries[:half] == summaries[half:]
    assert any("file_" in text for _, text, _ in summaries)


def test_an_extractive_summary_commits_in_the_call_that_reads_it(
    native: _native.Store, sid: str
) -> None:
    span = native.compaction_span(sid, 2)
    expected = native.extractive_summary(span, 400)
    result = native.commit_extractive_summary(span, 400)
    assert (result["text"], result["token_count"]) == (expected["text"], expected["token_count"])
    assert result["file_ids"] == expected["file_ids"]
    assert result["message_count"] == span.message_count
    committed = result["committed"]
    assert committed is not None and committed["messages_covered"] == span.message_count
    assert committed["tokens_after"] < committed["tokens_before"]
    (summary,) = native.live_summaries(sid)
    assert summary["id"] == committed["summary_id"] and summary["text"] == result["text"]
    assert summary["level"] == 1
    (node,) = native.describe(None, committed["summary_id"])
    assert node["sources"] == span.message_ids
    assert native.view_items(sid)[0]["id"] == committed["summary_id"]
    # Its messages left the view: the span cannot be committed twice.
    with pytest.raises((InvalidInputError, CompactionBusyError)):
        native.commit_extractive_summary(span, 400)


def test_an_extractive_summary_that_does_not_fit_writes_nothing(native: _native.Store) -> None:
    # Every file id of the span goes into the summary's footer: 60 of them do not
    # fit 128 tokens.
    sid = native.create_session(MODEL, "{}", None)
    for index in range(60):
        role = "user" if index % 2 == 0 else "assistant"
        text = f"step {index} reads file_{index:08x}"
        native.append_message(sid, role, [{"kind": "text", "text": text}])
    span = native.compaction_span(sid, 2)
    before = (native.view_items(sid), native.live_summaries(sid))
    result = native.commit_extractive_summary(span, 128)
    assert result["committed"] is None and result["token_count"] > 128
    assert len(result["file_ids"]) == span.message_count
    assert (native.view_items(sid), native.live_summaries(sid)) == before
    assert native.commit_extractive_summary(span, 2_000)["committed"] is not None


def test_a_large_span_commits_the_same_summary_from_two_connections(tmp_path: Path) -> None:
    # On a file the writing connection reads part of the span beside its writes and
    # a second connection reads the rest; in memory one connection does it all.
    outcomes = []
    for store, sid, span in large_spans(tmp_path, 3_001, seed=13):
        result = store.commit_extractive_summary(span, 6_000)
        assert result["committed"] is not None
        (summary,) = store.live_summaries(sid)
        (node,) = store.describe(None, summary["id"])
        assert node["sources"] == span.message_ids
        outcomes.append((result["text"], result["file_ids"], summary["text"]))
    assert outcomes[0] == outcomes[1]
