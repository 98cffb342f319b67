"""The context arena: internal recall over a large session, and what the arena adds
to an assembly.

Targets: internal recall over a session of 100,000 stored messages <= 5 ms median;
``build_context`` with the arena on and a typical injection (about 1,500 tokens over
five zones) within 1.5x of ``build_context`` with the arena off. The plan itself over
4,096 live entries is measured by ``cargo bench --bench arena`` (<= 200 µs).
"""

from __future__ import annotations

import itertools
import sqlite3
import tempfile
from collections.abc import Callable, Iterator
from dataclasses import replace
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import BenchDB, Corpus, build_messages
from lossless import Session, Store
from lossless.config import ArenaConfig, Config, ModelConfig

# Questions as a user asks them; their words are the corpus' vocabulary.
QUESTIONS = [
    "Which test fixture failed with a timeout error when the client retried the payment request?",
    "What did we decide about the default retry setting for the server session budget?",
    "Where is the invoice export report written, and which file path does it use?",
    "Why did the ledger balance check fail after the schema migration of the account table?",
]
KEPT_IN_VIEW = 40
_compacted: dict[int, BenchDB] = {}


def _compacted_db(db: BenchDB) -> BenchDB:
    """A copy of ``db`` (the other benchmarks share it) with all but its newest messages
    under one summary: what recall searches."""
    if db.n not in _compacted:
        copy = db.path.with_name(f"arena-recall-{db.n}.db")
        with sqlite3.connect(db.path) as source, sqlite3.connect(copy) as target:
            source.backup(target)
        db = replace(db, path=copy)
        store = Store(db.path)
        ids = [item["id"] for item in store.native.view_items(db.session_id)]
        if len(ids) > KEPT_IN_VIEW:
            store.native.commit_summary(
                db.session_id, "Earlier work on the services.", 3, ids[:-KEPT_IN_VIEW], [], None
            )
        _compacted[db.n] = db
    return _compacted[db.n]


@pytest.mark.benchmark(group="arena-recall")
def test_internal_recall(
    benchmark: Any, n: int, bench_db: Callable[[int], BenchDB], record: Callable[..., None]
) -> None:
    db = _compacted_db(bench_db(n))
    store = Store(db.path)
    rounds = iter(range(1 << 30))

    def recall() -> list[dict[str, Any]]:
        question = QUESTIONS[next(rounds) % len(QUESTIONS)]
        return store.native.recall(db.session_id, question, 4, 200)

    hits = benchmark(recall)
    assert hits and all(0 < hit["score"] <= 1 for hit in hits)
    record(benchmark, f"internal recall n={n:,}", "<= 5 ms at n = 100,000", hits=len(hits))


def _entries() -> list[tuple[str, str, str]]:
    """About 1,500 tokens over five zones."""
    return [
        ("identity", "role", "You are the payments agent of the billing team. " * 16),
        ("truth", "rule-1", "Never touch legacy_billing/; it is frozen until the audit. " * 14),
        ("truth", "rule-2", "Amounts are integers in cents; never use floats for money. " * 14),
        ("task_state", "task", "Refactor the payout client: retries, idempotency keys. " * 20),
        ("tool_failures", "tool:pytest", "pytest failed: exit 1\nE assert 200 == 500\n" * 20),
        (
            "memory_working",
            "working",
            "Tried retry=3 with jitter; flaky on CI; next: backoff. " * 12,
        ),
    ]


@pytest.fixture(scope="module")
def sessions(corpus: Corpus) -> Iterator[tuple[Session, Session]]:
    """One session of 200 messages, opened with the arena on (with entries) and off."""
    root = Path(tempfile.mkdtemp())
    db = root / "arena.db"
    model = ModelConfig(context_limit=200_000, max_output_tokens=8_000, token_correction=1.0)

    async def open_both() -> tuple[Session, Session]:
        on = await Session.create(model="gpt-4o", db=db, config=Config(model=model))
        for role, parts in build_messages(200, corpus):
            on.store.append_message(on.id, role, parts)
        for zone, key, text in _entries():
            await on.arena.add(zone, key, text)  # type: ignore[arg-type]
        off_config = Config(model=model, arena=ArenaConfig(enabled=False))
        off = await Session.load(on.id, db=db, config=off_config)
        return on, off

    on, off = anyio.run(open_both)
    yield on, off


@pytest.mark.benchmark(group="arena-build-context")
def test_build_context_arena_off(
    benchmark: Any, sessions: tuple[Session, Session], record: Callable[..., None]
) -> None:
    context = benchmark(sessions[1].build_context)
    assert context.injection is None
    record(benchmark, "build_context, arena off", "(baseline)")


@pytest.mark.benchmark(group="arena-build-context")
def test_build_context_arena_on(
    benchmark: Any, sessions: tuple[Session, Session], record: Callable[..., None]
) -> None:
    context = benchmark(sessions[0].build_context)
    assert context.injection is not None
    injected = context.injection.tokens
    assert 1_000 <= injected <= 2_500, injected
    record(
        benchmark,
        "build_context, arena on",
        "<= 1.5x of arena off",
        injected_tokens=injected,
    )


@pytest.fixture(scope="module")
def tool_run_sessions(corpus: Corpus) -> Iterator[tuple[Session, Session]]:
    """Two sessions of 200 messages, the arena on (with entries) in one, off in the
    other, each ending on the user's instruction: a tool run follows."""
    root = Path(tempfile.mkdtemp())
    db = root / "arena-tool-run.db"
    model = ModelConfig(context_limit=200_000, max_output_tokens=8_000, token_correction=1.0)

    async def open_both() -> tuple[Session, Session]:
        off_config = Config(model=model, arena=ArenaConfig(enabled=False))
        on = await Session.create(model="gpt-4o", db=db, config=Config(model=model))
        off = await Session.create(model="gpt-4o", db=db, config=off_config)
        for session in (on, off):
            for role, parts in build_messages(200, corpus):
                session.store.append_message(session.id, role, parts)
            session.store.append_message(
                session.id, "user", [{"kind": "text", "text": QUESTIONS[0]}]
            )
        for zone, key, text in _entries():
            await on.arena.add(zone, key, text)  # type: ignore[arg-type]
        return on, off

    yield anyio.run(open_both)


def _after_a_tool_result(benchmark: Any, session: Session) -> Any:
    """Times one ``build_context`` after each tool result of a tool run (the result's
    write itself is not timed)."""
    calls = itertools.count()

    def tool_result() -> None:
        call = next(calls)
        part = {
            "kind": "tool",
            "name": "grep",
            "call_id": f"call_{call}",
            "input": '{"pattern": "retry"}',
            "output": f"src/payout.py:{call}: retry = 3",
            "status": "completed",
        }
        session.store.append_message(session.id, "assistant", [part])

    return benchmark.pedantic(session.build_context, setup=tool_result, rounds=200)


@pytest.mark.benchmark(group="arena-tool-run")
def test_tool_run_build_arena_off(
    benchmark: Any, tool_run_sessions: tuple[Session, Session], record: Callable[..., None]
) -> None:
    context = _after_a_tool_result(benchmark, tool_run_sessions[1])
    assert context.injection is None
    record(benchmark, "build_context after each tool result, arena off", "(baseline)")


@pytest.mark.benchmark(group="arena-tool-run")
def test_tool_run_build_arena_on(
    benchmark: Any, tool_run_sessions: tuple[Session, Session], record: Callable[..., None]
) -> None:
    context = _after_a_tool_result(benchmark, tool_run_sessions[0])
    assert context.injection is not None
    record(
        benchmark,
        "build_context after each tool result, arena on",
        "<= 1.5x of arena off",
        injected_tokens=context.injection.tokens,
    )
