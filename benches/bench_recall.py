"""Recall over large stores: grep (FTS5 bm25) and expand of a condensed summary.

Targets: grep over 100,000 stored messages <= 20 ms median, for one word, a rare
term and a question of 10-20 words; expand of a condensed summary covering 1,000
messages with a 20k-token budget <= 5 ms.
"""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest

from conftest import BenchDB, Corpus, build_messages
from lossless import Store

# A word of the corpus' vocabulary: present in a large share of messages, so bm25
# ranks many rows. A rare token is the easy case; both are measured.
COMMON_QUERY = "retries"
LEAF_SIZE = 100
# Questions as an agent asks them, 10-20 words each, built from the corpus'
# vocabulary: every content word is common, so each matches many rows (the costly
# case for a ranking over any word).
QUESTIONS = [
    "Which test fixture failed with a timeout error when the client retried the payment request?",
    "What did we decide about the default retry setting for the server session budget?",
    "Where is the invoice export report written, and which file path does it use?",
    "Why did the ledger balance check fail after the schema migration of the account table?",
    "How many tokens does the summary of the session context window use by default?",
]


@pytest.mark.benchmark(group="recall-grep")
def test_grep_common_word(
    benchmark: Any, n: int, bench_db: Callable[[int], BenchDB], record: Callable[..., None]
) -> None:
    db = bench_db(n)
    store = Store(db.path)
    hits = benchmark(store.grep, COMMON_QUERY, session_id=db.session_id, limit=20)
    # Stemmed: "retries" finds "retry" too.
    assert hits and all("[retr" in hit["snippet"].lower() for hit in hits)
    record(benchmark, f"grep common word n={n:,}", "<= 20 ms at n = 100,000", hits=len(hits))


@pytest.mark.benchmark(group="recall-grep")
def test_grep_rare_term(
    benchmark: Any, n: int, bench_db: Callable[[int], BenchDB], record: Callable[..., None]
) -> None:
    db = bench_db(n)
    store = Store(db.path)
    sid = store.create_session("gpt-4o")
    store.append(sid, "user", "The release codename is vermilion-kestrel; keep it secret.")
    hits = benchmark(store.grep, "vermilion kestrel", limit=20)
    assert len(hits) == 1
    record(benchmark, f"grep rare term n={n:,}", "<= 20 ms at n = 100,000")


@pytest.mark.benchmark(group="recall-grep")
def test_grep_question(
    benchmark: Any, n: int, bench_db: Callable[[int], BenchDB], record: Callable[..., None]
) -> None:
    db = bench_db(n)
    store = Store(db.path)
    assert all(10 <= len(question.split()) <= 20 for question in QUESTIONS)
    rounds = iter(range(1 << 30))

    def ask() -> list[dict[str, Any]]:
        question = QUESTIONS[next(rounds) % len(QUESTIONS)]
        return store.grep(question, session_id=db.session_id, limit=20)

    hits = benchmark(ask)
    assert len(hits) == 20
    record(benchmark, f"grep question of 10-20 words n={n:,}", "<= 20 ms at n = 100,000")


@pytest.fixture(scope="module")
def condensed_summary(
    tmp_path_factory: pytest.TempPathFactory, corpus: Corpus
) -> tuple[Store, str]:
    """A summary condensing ten leaves that cover 1,000 messages between them."""
    path: Path = tmp_path_factory.mktemp("expand") / "expand.db"
    store = Store(path)
    sid = store.create_session("gpt-4o")
    native = store.native
    for role, parts in build_messages(1_000 + 4, corpus):
        native.append_message(sid, role, parts)
    leaves = []
    for _ in range(10):
        span = native.compaction_span(sid)
        ids = span.message_ids[:LEAF_SIZE]
        text = native.extractive_summary(ids, 400)["text"]
        leaves.append(native.commit_summary(sid, text, 1, ids, [])["summary_id"])
    merged = native.condense_truncate(leaves, 512)["text"]
    condensed = native.commit_summary(sid, merged, 3, [], leaves)["summary_id"]
    return store, condensed


@pytest.mark.benchmark(group="recall-expand")
def test_expand_condensed_summary(
    benchmark: Any, condensed_summary: tuple[Store, str], record: Callable[..., None]
) -> None:
    store, summary_id = condensed_summary
    expansion = benchmark(store.expand, summary_id, max_tokens=20_000)
    assert expansion["total_messages"] == 1_000
    assert 0 < expansion["tokens"] <= 20_000
    record(
        benchmark,
        "expand condensed summary of 1,000 messages",
        "<= 5 ms",
        shown=len(expansion["messages"]),
    )
