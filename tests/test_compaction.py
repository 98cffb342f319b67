"""Compaction: the summarisation ladder through litellm and the local server, the
engine's thresholds, rounds, failures and leases, and session.compact()."""

from __future__ import annotations

import dataclasses
import json
import random
import sqlite3
import subprocess
import sys
import textwrap
import time
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import TEST_MODEL, sql_rows
from lossless import _native
from lossless.compaction import prompts
from lossless.compaction.ledger_model import LEDGER_PROMPT
from lossless.config import CompactionConfig, Config, ModelConfig
from lossless.errors import CompactionBusyError, LosslessError, StoreError
from lossless.events import Event, EventName
from lossless.models import Budget
from lossless.session import Session
from lossless.testing import LocalLLMServer, Reply, SummaryResponder
from lossless.tokens import TokenCounter

SUMMARY_FRAMING_TOKENS = _native.SUMMARY_FRAMING_TOKENS

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.both_backends,
]

# usable = 12,000 - 1,000 (reply) - 1,000 (compaction reserve) = 10,000; soft limit 6,000.
LIMITS = ModelConfig(context_limit=12_000, max_output_tokens=1_000)
SUMMARY_MODEL = "openai/lossless-summariser"
_VOCAB_TEXT = (
    "payment ledger refund invoice currency settle batch retry webhook merchant account "
    "balance charge capture dispute payout schedule config service handler request response "
    "timeout error value module function fixture decimal rounding minor units tests failing "
    "passing patch"
)
VOCAB = _VOCAB_TEXT.split()


def prose(seed: int, words: int) -> str:
    rng = random.Random(seed)
    return " ".join(rng.choice(VOCAB) for _ in range(words))


def file_id(n: int) -> str:
    return f"file_{n * 2654435761 % 16**12:012x}"


def compaction(**fields: Any) -> CompactionConfig:
    return CompactionConfig(**{"output_budget": 1_000, **fields})


def llm_compaction(**fields: Any) -> CompactionConfig:
    return compaction(**{"model": SUMMARY_MODEL, "model_context_limit": 100_000, **fields})


async def open_session(config_for: Callable[..., Config], db: Path, **sections: Any) -> Session:
    sections.setdefault("model", LIMITS)
    sections.setdefault("compaction", compaction())
    return await Session.create(model=TEST_MODEL, db=db, config=config_for(**sections))


def stuff(
    session: Session, turns: int, words: int = 120, *, start: int = 0, files_every: int = 0
) -> None:
    """Append turns straight to the store: nothing triggers, as if another process wrote them."""
    for turn in range(start, start + turns):
        user = f"turn {turn}: {prose(turn, words // 4)}"
        if files_every and turn % files_every == 0:
            user += f" see {file_id(turn)}"
        session.store.append_message(session.id, "user", [{"kind": "text", "text": user}])
        session.store.append_message(
            session.id, "assistant", [{"kind": "text", "text": prose(-turn - 1, words)}]
        )


def snapshot(session: Session) -> tuple[Any, ...]:
    store = session.store
    return (
        store.history(session.id),
        store.view_items(session.id),
        store.describe(session.id),
        store.view_stats(session.id)["tokens"],
    )


def lease_is_free(session: Session, db: Path) -> bool:
    """Another store can take the session's compaction lease at once."""
    other = _native.Store(str(db))
    taken = other.acquire_compaction_lease(session.id, "another-holder", 60_000)
    if taken:
        other.release_compaction_lease(session.id, "another-holder")
    return taken


def recorder(session: Session) -> list[Event]:
    events: list[Event] = []
    session.events.subscribe(events.append)
    return events


def named(events: list[Event], name: EventName) -> list[Event]:
    return [event for event in events if event.name == name]


def is_compaction_request(request: dict[str, Any]) -> bool:
    system = request["messages"][0]
    return system["role"] == "system" and system["content"] in (
        prompts.LEVEL1,
        prompts.LEVEL2,
        prompts.CONDENSE1,
        prompts.CONDENSE2,
        LEDGER_PROMPT,
    )


def footer_ids(text: str) -> list[str]:
    footer = text.rsplit("[LCM File IDs: ", 1)[1].rstrip("]")
    return footer.split(", ")


# -- levels -------------------------------------------------------------------------------


async def test_extractive_summariser_is_the_default_without_a_compaction_model(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    async with await open_session(config_for, db) as session:
        stuff(session, 20, files_every=5)
        result = await session.compact()
        assert result.status == "completed", result.reason
        assert result.levels[0] == 1
        assert server.requests == [], "no model is called without a compaction model"
        leaf = session.store.describe(session.id)[-1]
        assert leaf["kind"] == "leaf" and leaf["level"] == 1
        assert not leaf["text"].startswith("[deterministic truncation")
        assert set(footer_ids(leaf["text"])) >= {file_id(turn) for turn in range(0, 18, 5)}
        assert session.view_tokens() <= session.budget.soft_limit


async def test_the_summariser_alone_writes_nothing(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    # The engine commits the built-in summary in the call that reads the span; the
    # summariser's own summarise() only proposes one.
    async with await open_session(config_for, db) as session:
        stuff(session, 20, files_every=5)
        before = snapshot(session)
        span = session.store.compaction_span(session.id, 2)
        candidate = await session.compaction._summariser.summarise(span, 2_000)
        assert (candidate.summariser, candidate.level) == ("extractive", 1)
        assert candidate.span is span and candidate.message_count == span.message_count
        assert 0 < candidate.token_count < span.tokens
        assert set(footer_ids(candidate.text)) >= {file_id(turn) for turn in range(0, 18, 5)}
        assert snapshot(session) == before


async def test_level1_is_a_structured_summary_from_the_compaction_model(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    server.responder = SummaryResponder()
    async with await open_session(config_for, db, compaction=llm_compaction()) as session:
        stuff(session, 20, files_every=4)
        result = await session.compact()
        assert result.status == "completed", result.reason
        assert result.levels == [1]
        # The summary, then the ledger's items read out of the same span, as JSON.
        assert len(server.requests) == 2
        asked = server.requests[1]
        assert asked["messages"][0]["content"] == LEDGER_PROMPT
        assert asked["response_format"]["json_schema"]["name"] == "ledger"
        request = server.requests[0]
        assert request["model"] == SUMMARY_MODEL.split("/", 1)[1]
        assert request["messages"][0]["content"] == prompts.LEVEL1
        assert "[#1 user]" in request["messages"][1]["content"]
        summary = session.store.live_summaries(session.id)[0]
        assert summary["text"].startswith("## Goal")
        # The model never saw a footer to copy: the file ids were appended to its reply.
        assert set(footer_ids(summary["text"])) == {file_id(turn) for turn in range(0, 18, 4)}
        assert result.messages_covered == 36


async def test_a_reply_bigger_than_its_input_escalates_to_level2_then_the_built_in_summary(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    server.responder = lambda request: Reply(text=prose(1, 6_000))
    async with await open_session(config_for, db, compaction=llm_compaction()) as session:
        stuff(session, 20, files_every=3)
        result = await session.compact()
        assert result.status == "completed", result.reason
        assert result.levels == [1]
        prompts_seen = [request["messages"][0]["content"] for request in server.requests]
        assert prompts_seen == [prompts.LEVEL1, prompts.LEVEL2]
        assert (
            result.attempts[0].startswith("level 1:")
            and "not smaller than its input" in result.attempts[0]
        )
        assert result.attempts[1].startswith("level 2:")
        # Both model levels failed: the built-in summary, which keeps every
        # instruction it finds, comes before truncation.
        summary = session.store.live_summaries(session.id)[0]
        assert summary["level"] == 1
        assert summary["text"].startswith("## Goal")
        assert set(footer_ids(summary["text"])) == {file_id(turn) for turn in range(0, 18, 3)}
        assert session.view_tokens() <= session.budget.soft_limit


async def test_level2_takes_over_when_level1_is_too_big(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    summary = SummaryResponder()
    server.enqueue(Reply(text=prose(2, 6_000)))
    server.responder = summary
    async with await open_session(config_for, db, compaction=llm_compaction()) as session:
        stuff(session, 20)
        result = await session.compact()
        assert result.levels == [2]
        assert server.requests[1]["messages"][0]["content"] == prompts.LEVEL2
        # Level 2 cuts each message short.
        assert len(server.requests[1]["messages"][1]["content"]) < len(
            server.requests[0]["messages"][1]["content"]
        )


async def test_a_failing_compaction_model_falls_back_to_the_built_in_summary(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    server.responder = lambda request: Reply(text="overloaded", status=500)
    async with await open_session(
        config_for, db, compaction=llm_compaction(), llm_overrides={"num_retries": 0}
    ) as session:
        stuff(session, 20)
        result = await session.compact()
        assert result.status == "completed", result.reason
        assert result.levels == [1]
        assert len(server.requests) == 2
        assert all("model call failed" in attempt for attempt in result.attempts[:2])
        assert session.store.live_summaries(session.id)[0]["text"].startswith("## Goal")


async def test_an_empty_reply_escalates(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    server.responder = lambda request: Reply(text="  \n ")
    async with await open_session(config_for, db, compaction=llm_compaction()) as session:
        stuff(session, 20)
        result = await session.compact()
        assert result.levels == [1]
        assert "no text" in result.attempts[0]


async def test_the_transcript_is_capped_at_75_percent_of_the_compaction_window(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    server.responder = SummaryResponder()
    window = 2_000
    config = llm_compaction(model_context_limit=window, max_rounds=10)
    async with await open_session(config_for, db, compaction=config) as session:
        stuff(session, 60)
        span = len(session.store.compaction_span(session.id, 2).message_ids)
        result = await session.compact()
        assert result.status == "completed", result.reason
        counter = TokenCounter(TEST_MODEL)
        leaf_requests = [
            r for r in server.requests if r["messages"][0]["content"] == prompts.LEVEL1
        ]
        assert len(leaf_requests) >= 2, "each round covers only what fits the compaction window"
        for request in leaf_requests:
            assert counter.count(request["messages"][1]["content"]) <= int(window * 0.75)
        first_leaf = session.store.describe(session.id)[-1]
        assert first_leaf["kind"] == "leaf" and 3 <= first_leaf["message_count"] < span
        assert session.view_tokens() <= session.budget.soft_limit


# -- the engine -------------------------------------------------------------------------------


async def test_the_soft_threshold_starts_a_background_round_after_the_turn(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    summary = SummaryResponder()
    server.responder = lambda request: Reply(text=summary(request).text, latency_s=0.5)
    async with await open_session(config_for, db, compaction=llm_compaction()) as session:
        events = recorder(session)
        soft = session.budget.soft_limit
        for turn in range(100):
            started = time.perf_counter()
            recorded = await session.record(
                "user" if turn % 2 == 0 else "assistant", prose(turn, 150)
            )
            elapsed = time.perf_counter() - started
            if recorded.compaction_triggered:
                break
        assert recorded.compaction_triggered and recorded.view_tokens > soft
        assert elapsed < 0.4, "the turn does not wait for the round"
        assert session.compaction.pending
        assert named(events, EventName.COMPACTION_TRIGGERED)
        await session.compaction.wait_for_pending()
        assert not session.compaction.pending
        result = session.compaction.last_result
        assert result is not None and result.status == "completed", result
        assert session.view_tokens() <= soft
        assert named(events, EventName.COMPACTION_COMPLETED)


async def test_the_hard_threshold_makes_send_wait_before_the_model_call(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    summary = SummaryResponder()
    seen: list[tuple[str, int]] = []

    async with await open_session(config_for, db, compaction=llm_compaction()) as session:
        other = _native.Store(str(db))

        def responder(request: dict[str, Any]) -> Reply:
            kind = "compaction" if is_compaction_request(request) else "chat"
            seen.append((kind, other.view_stats(session.id)["tokens"]))
            return summary(request) if kind == "compaction" else Reply(text="answer")

        server.responder = responder
        stuff(session, 70)
        assert session.view_tokens() > session.budget.usable
        result = await session.send("and now?")
        assert result.text == "answer"
        kinds = [kind for kind, _ in seen]
        assert kinds[0] == "compaction" and kinds[-1] == "chat" and kinds.count("chat") == 1
        assert seen[-1][1] <= session.budget.usable, "the model never sees an over-budget view"
        assert result.context_tokens <= session.build_context().budget


async def test_record_past_the_hard_threshold_leaves_the_wait_to_the_model_turn(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    async with await open_session(config_for, db) as session:
        stuff(session, 70)
        assert session.budget.usable < session.view_tokens() < 2 * session.budget.usable
        recorded = await session.record("user", "one more")
        # The write returns at once; the round it started runs in the background.
        assert recorded.compaction_triggered and session.compaction.pending
        assert recorded.view_tokens > session.budget.usable
        result = await session.send("go on")
        assert result.context_tokens <= session.budget.usable
        assert session.view_tokens() <= session.budget.soft_limit


async def test_record_waits_when_the_view_is_twice_the_usable_budget(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    async with await open_session(config_for, db) as session:
        stuff(session, 150)
        assert session.view_tokens() > 2 * session.budget.usable
        recorded = await session.record("user", "one more")
        assert recorded.view_tokens <= session.budget.soft_limit
        assert not session.compaction.pending


async def test_abort_stops_a_running_round_and_keeps_nothing_half_done(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    server.responder = lambda request: Reply(hang=True)
    config = llm_compaction()
    async with await open_session(
        config_for, db, compaction=config, llm_overrides={"timeout_s": 30}
    ) as session:
        stuff(session, 45)
        before = snapshot(session)
        # Over the soft limit but under the hard one: the round runs in the background.
        assert session.budget.soft_limit < session.view_tokens()
        recorded = await session.record("user", "go on")
        assert recorded.compaction_triggered
        await anyio.to_thread.run_sync(server.wait_for_requests, 1)
        started = time.perf_counter()
        session.compaction.abort()
        with anyio.fail_after(5):
            await session.compaction.wait_for_pending()
        assert time.perf_counter() - started < 3, "the model call in flight was cancelled"
        result = session.compaction.last_result
        assert result is not None and result.status == "aborted"
        after = snapshot(session)
        assert after[2] == before[2] == [], "no summary was written"
        # Aborting with nothing running is a no-op, and the next round runs normally.
        session.compaction.abort()
        server.responder = SummaryResponder()
        assert (await session.compact()).status == "completed"


async def test_max_rounds_bounds_one_compaction(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    server.responder = SummaryResponder()
    config = llm_compaction(model_context_limit=1_200, max_rounds=2)
    async with await open_session(config_for, db, compaction=config) as session:
        stuff(session, 60)
        events = recorder(session)
        result = await session.compact()
        assert result.rounds == 2
        assert result.status == "stalled"
        assert "max_rounds" in result.reason
        assert named(events, EventName.COMPACTION_STALLED)[0].payload["reason"] == result.reason
        assert result.summary_ids, "the rounds it ran were kept"


async def test_a_round_without_progress_stops_and_says_why(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    async with await open_session(config_for, db) as session:
        # The newest user message stays verbatim and the newest message is always in
        # the tail: an instruction larger than the soft limit leaves nothing to compact.
        instruction = prose(1, 7_000)
        session.store.append_message(session.id, "user", [{"kind": "text", "text": instruction}])
        session.store.append_message(session.id, "assistant", [{"kind": "text", "text": "ok"}])
        assert session.view_tokens() > session.budget.soft_limit
        events = recorder(session)
        before = snapshot(session)
        result = await session.compact()
        assert result.status == "stalled"
        assert "no progress" in result.reason and "protected tail" in result.reason
        stalled = named(events, EventName.COMPACTION_STALLED)
        assert len(stalled) == 1 and stalled[0].payload["reason"] == result.reason
        assert snapshot(session) == before


async def test_run_compaction_never_raises_when_the_summariser_fails(
    server: LocalLLMServer,
    config_for: Callable[..., Config],
    db: Path,
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    server.responder = SummaryResponder()
    async with await open_session(config_for, db, compaction=llm_compaction()) as session:
        stuff(session, 20)
        before = snapshot(session)
        events = recorder(session)

        async def broken(*args: Any) -> Any:
            raise RuntimeError("summariser exploded")

        monkeypatch.setattr(session.compaction._summariser, "summarise", broken)
        result = await session.compact()
        assert result.status == "failed"
        assert result.error is not None and "summariser exploded" in result.error
        failed = named(events, EventName.COMPACTION_FAILED)
        assert len(failed) == 1 and "summariser exploded" in failed[0].payload["error"]
        assert snapshot(session) == before
        # The lease was given back: the next compaction runs.
        monkeypatch.undo()
        assert (await session.compact()).status == "completed"


class _FailingStore:
    """The native store with one method failing: on every call, or on its first
    ``times`` calls."""

    def __init__(
        self,
        store: _native.Store,
        name: str,
        error: type[LosslessError] = StoreError,
        times: int | None = None,
    ) -> None:
        self._store = store
        self._name = name
        self._error = error
        self._times = times
        self.failures = 0

    def __getattr__(self, name: str) -> Any:
        if name == self._name and (self._times is None or self.failures < self._times):

            def fail(*args: Any) -> Any:
                self.failures += 1
                raise self._error(f"{name} failed (injected)")

            return fail
        return getattr(self._store, name)


@pytest.mark.parametrize("method", ["compaction_round", "live_summaries"])
async def test_run_compaction_never_raises_when_a_native_call_fails(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path, method: str
) -> None:
    async with await open_session(config_for, db) as session:
        stuff(session, 20)
        if method == "live_summaries":
            # Reach the condensation step: two summaries and still over the limit.
            span = session.store.compaction_span(session.id, 2).message_ids
            for half in (span[:10], span[10:20]):
                session.store.commit_summary(session.id, prose(3, 3_500), 1, half, [])
        before = snapshot(session)
        events = recorder(session)
        failing = _FailingStore(session.store, method)
        session.compaction._store = failing  # type: ignore[assignment]
        session.compaction._summariser._store = failing  # type: ignore[assignment]
        result = await session.compact()
        assert result.status == "failed", result
        assert result.error == f"StoreError: {method} failed (injected)"
        assert named(events, EventName.COMPACTION_FAILED)
        if method != "live_summaries":
            assert snapshot(session) == before
        assert lease_is_free(session, db)
        session.compaction._store = session.store
        session.compaction._summariser._store = session.store
        assert (await session.compact()).status == "completed"


async def test_a_round_that_finds_the_view_changed_plans_again(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    async with await open_session(config_for, db) as session:
        stuff(session, 40)
        # The first extractive commit is refused as if the view changed under it.
        busy = _FailingStore(session.store, "compaction_round", CompactionBusyError, times=1)
        session.compaction._store = busy  # type: ignore[assignment]
        session.compaction._summariser._store = busy  # type: ignore[assignment]
        result = await session.compaction.run_compaction()
        assert busy.failures == 1
        assert result.status == "completed" and result.rounds == 2, result
        assert result.levels == [1] and session.view_tokens() <= session.budget.soft_limit
        assert lease_is_free(session, db)


# A trigger that fails a summary's sixth source edge, in each backend's dialect.
FAIL_THE_SIXTH_EDGE = (
    "CREATE TRIGGER fail_edges BEFORE INSERT ON summary_sources WHEN NEW.ord = 5 "
    "BEGIN SELECT RAISE(ABORT, 'injected failure'); END",
    "CREATE FUNCTION fail_edges() RETURNS trigger LANGUAGE plpgsql AS $$ BEGIN "
    "IF NEW.ord = 5 THEN RAISE EXCEPTION 'injected failure'; END IF; RETURN NEW; END $$; "
    "CREATE TRIGGER fail_edges BEFORE INSERT ON summary_sources "
    "FOR EACH ROW EXECUTE FUNCTION fail_edges()",
)


async def test_a_commit_failing_inside_its_transaction_leaves_the_store_unchanged(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    # SQLite: the trigger's connection stays open while the store's is; a sqlite3
    # module closing its last connection (as it believes) would reset the log that
    # the store's own SQLite library, which does not see its locks, still uses.
    outside = sqlite3.connect(db, isolation_level=None) if isinstance(db, Path) else None

    def run(sql: str) -> None:
        if outside is None:
            sql_rows(db, sql)
        else:
            outside.execute(sql)

    async with await open_session(config_for, db) as session:
        stuff(session, 20, files_every=2)
        before = snapshot(session)
        run(FAIL_THE_SIXTH_EDGE[outside is None])
        result = await session.compact()
        assert result.status == "failed"
        assert result.error is not None and "injected failure" in result.error
        assert snapshot(session) == before
        run("DROP TRIGGER fail_edges" + (" ON summary_sources" * (outside is None)))
        assert (await session.compact()).status == "completed"
    if outside is not None:
        outside.close()


async def test_condensation_runs_while_over_budget_with_two_or_more_summaries(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    async with await open_session(config_for, db) as session:
        stuff(session, 44, words=60)
        span = session.store.compaction_span(session.id, 2).message_ids
        # Eight leaf summaries written earlier, together over the soft limit.
        for index in range(8):
            text = f"{prose(100 + index, 700)} about {file_id(1_000 + index)}"
            session.store.commit_summary(
                session.id, text, 1, span[index * 10 : index * 10 + 10], []
            )
        assert len(session.store.live_summaries(session.id)) == 8
        assert session.view_tokens() > session.budget.soft_limit
        events = recorder(session)
        result = await session.compact()
        assert result.status == "completed", result.reason
        live = session.store.live_summaries(session.id)
        condensed = [row for row in live if row["kind"] == "condensed"]
        assert len(condensed) == 1
        # Without a model, the summaries' sections merge (level 1), the newest kept: a
        # summary in another form, as these are, is kept whole or left out whole.
        assert 3 not in result.levels, "the merge fits, no truncation"
        assert prose(107, 700) in condensed[0]["text"]
        assert prose(100, 700) not in condensed[0]["text"]
        # Cut to the round's own target: what the goal leaves, at most the largest
        # summary (the header the summary renders with comes on top).
        largest = session.config.compaction.summary_max_tokens
        assert condensed[0]["token_count"] <= largest + SUMMARY_FRAMING_TOKENS
        assert session.view_tokens() <= session.compaction.goal
        # A parent over at most `condense_max_children` summaries, the oldest first.
        children = session.store.describe(None, condensed[0]["id"])
        assert len([node for node in children if node["depth"] == 0]) <= 8
        for index in range(8):
            assert file_id(1_000 + index) in condensed[0]["text"]
        payload = named(events, EventName.COMPACTION_COMPLETED)[-1].payload
        assert payload["levels"] == result.levels
        assert session.view_tokens() <= session.budget.soft_limit


async def test_condensation_through_the_model(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    server.responder = SummaryResponder()
    async with await open_session(config_for, db, compaction=llm_compaction()) as session:
        stuff(session, 44, words=60)
        span = session.store.compaction_span(session.id, 2).message_ids
        for index in range(8):
            text = f"{prose(100 + index, 700)} about {file_id(1_000 + index)}"
            session.store.commit_summary(
                session.id, text, 1, span[index * 10 : index * 10 + 10], []
            )
        result = await session.compact()
        assert result.status == "completed", result.reason
        assert any(r["messages"][0]["content"] == prompts.CONDENSE1 for r in server.requests)
        live = session.store.live_summaries(session.id)
        condensed = [row for row in live if row["kind"] == "condensed"]
        assert len(condensed) == 1 and condensed[0]["level"] == 1
        assert {file_id(1_000 + index) for index in range(8)} <= set(condensed[0]["file_ids"])


def sectioned_leaves(session: Session, leaves: int) -> list[_native.SummaryRow]:
    """``leaves`` summaries in the built-in summariser's sections, committed over ten
    messages each, oldest first: leaf ``n`` finds "cause n" and names a file id."""
    span = session.store.compaction_span(session.id, 2).message_ids
    for index in range(leaves):
        text = (
            f"## Goal\nSettle batch {index}\n\n## Instructions and constraints\n"
            f"- Never round minor units.\n\n## Discoveries\n- I found cause {index}: "
            f"{prose(200 + index, 20)} in {file_id(2_000 + index)}"
        )
        session.store.commit_summary(session.id, text, 1, span[index * 10 : index * 10 + 10], [])
    return session.store.live_summaries(session.id)


async def test_condensation_without_a_model_merges_sections_keeping_the_newest(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    async with await open_session(config_for, db) as session:
        stuff(session, 44, words=60)
        live = sectioned_leaves(session, 8)
        candidate = await session.compaction._summariser.condense(live, 300)
        assert (candidate.summariser, candidate.level) == ("extractive", 1)
        assert candidate.token_count <= 300 and candidate.attempts == ()
        assert "cause 7" in candidate.text and "cause 0" not in candidate.text
        assert candidate.text.count("- Never round minor units.") == 1
        assert candidate.text.startswith("## Goal\nSettle batch 0\nSettle batch 7")
        assert set(footer_ids(candidate.text)) == {file_id(2_000 + n) for n in range(8)}


async def test_condensation_falls_to_the_merge_when_the_model_fails_then_to_truncation(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    server.responder = lambda request: Reply(text="overloaded", status=500)
    async with await open_session(
        config_for, db, compaction=llm_compaction(), llm_overrides={"num_retries": 0}
    ) as session:
        stuff(session, 44, words=60)
        live = sectioned_leaves(session, 8)
        summariser = session.compaction._summariser
        candidate = await summariser.condense(live, 300)
        assert (candidate.summariser, candidate.level) == ("extractive", 1)
        assert all("model call failed" in attempt for attempt in candidate.attempts)
        assert "cause 7" in candidate.text
        # A footer larger than the target: the merge does not fit, the truncation
        # (level 3) keeps every file id whatever it costs.
        candidate = await summariser.condense(live, 20)
        assert (candidate.summariser, candidate.level) == ("truncation", 3)
        assert candidate.attempts[-1].startswith("condense extractive: ")
        assert set(footer_ids(candidate.text)) == {file_id(2_000 + n) for n in range(8)}


def overlap_counting(delay_s: float) -> tuple[Callable[[dict[str, Any]], Reply], list[int]]:
    """A summary responder that takes ``delay_s`` a request, and the most requests it
    ever saw in flight at once (a one-item list, read after the calls)."""
    summary = SummaryResponder()
    in_flight = [0]
    most = [0]

    def responder(request: dict[str, Any]) -> Reply:
        in_flight[0] += 1
        most[0] = max(most[0], in_flight[0])
        time.sleep(delay_s)
        in_flight[0] -= 1
        return summary(request)

    return responder, most


async def test_a_long_span_is_summarised_as_bounded_leaves_concurrently(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    responder, most = overlap_counting(0.2)
    server.responder = responder
    bound = 1_500
    compaction = llm_compaction(leaf_chunk_tokens=bound, leaf_concurrency=3, level2_enabled=False)
    async with await open_session(config_for, db, compaction=compaction) as session:
        stuff(session, 40, words=120, files_every=5)
        result = await session.compact()
        assert result.status == "completed", result.reason
        leaves = [row for row in session.store.describe(session.id, None) if row["kind"] == "leaf"]
        assert len(leaves) >= 3, f"{len(leaves)} leaves"
        assert most[0] >= 2, "the leaves' model calls ran at once"
        for leaf in leaves:
            expansion = session.store.expand(leaf["id"], 1_000_000)
            source = sum(message["tokens"] for message in expansion["messages"])
            # A run holds at most the bound, or a single larger message.
            assert source <= bound or len(expansion["messages"]) == 1, source
        # Every file id of the compacted turns is still in the context.
        context = json.dumps(session.build_context().messages)
        for turn in range(0, 40, 5):
            assert file_id(turn) in context


async def test_two_compactions_of_one_session_never_overlap(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    responder, most = overlap_counting(0.3)
    server.responder = responder
    async with await open_session(config_for, db, compaction=llm_compaction()) as session:
        stuff(session, 45)
        results = []

        async def run() -> None:
            results.append(await session.compaction.run_compaction())

        async with anyio.create_task_group() as group:
            group.start_soon(run)
            group.start_soon(run)
        assert most[0] == 1
        assert sorted(result.status for result in results) == ["completed", "not_needed"]


async def test_the_lease_is_given_back_however_a_compaction_ends(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    async with await open_session(config_for, db) as session:
        # Nothing to do.
        assert (await session.compaction.run_compaction()).status == "not_needed"
        assert lease_is_free(session, db)
        # One round, ended by the built-in summary.
        stuff(session, 40)
        assert session.view_tokens() > session.budget.soft_limit
        result = await session.compaction.run_compaction()
        assert result.status == "completed" and result.levels == [1]
        assert result.tokens_after == session.view_tokens() < result.tokens_before
        assert lease_is_free(session, db)
        # A round that goes on to condense the summaries.
        stuff(session, 40, start=100)
        span = session.store.compaction_span(session.id, 2).message_ids
        session.store.commit_summary(session.id, prose(3, 3_500), 1, span[:10], [])
        assert session.view_tokens() > session.budget.soft_limit
        result = await session.compaction.run_compaction()
        assert result.status == "completed" and len(result.levels) >= 2, result
        assert result.tokens_after == session.view_tokens() <= session.budget.soft_limit
        assert lease_is_free(session, db)


async def test_no_round_runs_once_the_lease_was_given_back(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    async with await open_session(config_for, db) as session:
        stuff(session, 5)
        assert session.view_tokens() <= session.budget.soft_limit
        engine = session.compaction
        real = engine._budget
        reads = 0

        def shrinking() -> Budget:
            # The first read (in the hop that takes the lease) sees the real budget;
            # every later one a soft limit the view is far over.
            nonlocal reads
            reads += 1
            return real() if reads == 1 else dataclasses.replace(real(), soft_fraction=0.01)

        engine._budget = shrinking
        before = snapshot(session)
        result = await engine.run_compaction()
        assert result.status == "not_needed" and result.rounds == 0, result
        assert "gave its lease back" in result.reason
        assert snapshot(session) == before
        assert lease_is_free(session, db)


async def test_another_store_holding_the_lease_makes_compaction_busy(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    async with await open_session(config_for, db) as session:
        stuff(session, 20)
        other = _native.Store(str(db))
        assert other.acquire_compaction_lease(session.id, "someone-else", 60_000)
        before = snapshot(session)
        result = await session.compact()
        assert result.status == "busy" and "lease" in result.reason
        assert snapshot(session) == before
        other.release_compaction_lease(session.id, "someone-else")
        assert (await session.compact()).status == "completed"
        # A lease whose holder is gone is taken over: on SQLite once it expires, on
        # PostgreSQL once the server has ended the holder's connection.
        assert other.acquire_compaction_lease(session.id, "crashed", 1)
        other.close()
        stuff(session, 20, start=100)
        assert await compacts_within(session, seconds=10)


async def compacts_within(session: Session, *, seconds: float) -> bool:
    """Whether a compaction of ``session`` completes within ``seconds``, asked again
    while another holder's lease keeps it busy."""
    with anyio.move_on_after(seconds):
        while True:
            result = await session.compact()
            if result.status != "busy":
                return result.status == "completed"
            await anyio.sleep(0.02)
    return False


HOLDER = textwrap.dedent(
    """
    import sys
    from lossless import _native
    store = _native.Store(sys.argv[1])
    assert store.acquire_compaction_lease(sys.argv[2], "other-process", 60_000)
    print("held", flush=True)
    sys.stdin.readline()
    store.release_compaction_lease(sys.argv[2], "other-process")
    print("released", flush=True)
    """
)


async def test_another_process_holding_the_lease_makes_compaction_busy(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    async with await open_session(config_for, db) as session:
        stuff(session, 20)
        holder = subprocess.Popen(  # noqa: ASYNC220 - a helper process, started once
            [sys.executable, "-c", HOLDER, str(db), session.id],
            stdin=subprocess.PIPE,
            stdout=subprocess.PIPE,
            text=True,
        )
        try:
            assert holder.stdout is not None and holder.stdin is not None
            assert holder.stdout.readline().strip() == "held"
            result = await session.compact()
            assert result.status == "busy"
            holder.stdin.write("\n")
            holder.stdin.flush()
            assert holder.stdout.readline().strip() == "released"
        finally:
            holder.wait(timeout=10)
        assert (await session.compact()).status == "completed"


async def test_events_carry_level_tokens_messages_and_duration(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    async with await open_session(config_for, db) as session:
        stuff(session, 20)
        events = recorder(session)
        result = await session.compact()
        (completed,) = named(events, EventName.COMPACTION_COMPLETED)
        payload = completed.payload
        assert payload["status"] == "completed"
        assert payload["level"] == max(result.levels)
        assert payload["tokens_before"] > payload["tokens_after"] == session.view_tokens()
        assert payload["messages_covered"] == result.messages_covered == 36
        assert payload["duration_s"] > 0
        assert payload["summary_ids"] == result.summary_ids
        # The event is on the store's tape too.
        taped = [
            row for row in session.store.events(session.id) if row["name"] == "compaction_completed"
        ]
        assert len(taped) == 1


async def test_compact_runs_a_round_on_demand_under_the_threshold(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    async with await open_session(config_for, db) as session:
        stuff(session, 6, words=40)
        assert session.view_tokens() < session.budget.soft_limit
        result = await session.compact()
        assert result.status == "completed" and len(result.summary_ids) == 1
        # Nothing left to compact: said so, not reported as a stall.
        again = await session.compact()
        assert again.status == "not_needed" and again.summary_ids == []


async def test_pruning_alone_can_bring_the_view_under_the_threshold(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    config = compaction(prune_protect_tokens=500, prune_minimum_tokens=200)
    async with await open_session(config_for, db, compaction=config) as session:
        for turn in range(8):
            session.store.append_message(
                session.id, "user", [{"kind": "text", "text": f"read file {turn}"}]
            )
            output = prose(turn, 900) + f" {file_id(turn)}"
            tool = {
                "kind": "tool",
                "name": "read_file",
                "call_id": f"c{turn}",
                "input": "{}",
                "output": output,
            }
            session.store.append_message(session.id, "assistant", [tool])
        assert session.view_tokens() > session.budget.soft_limit
        events = recorder(session)
        result = await session.compaction.run_compaction()
        assert result.status == "completed", result.reason
        assert result.pruned_parts >= 3 and result.summary_ids == []
        assert named(events, EventName.PRUNE_COMPLETED)
        assert result.tokens_after == session.view_tokens() <= session.budget.soft_limit
        assert lease_is_free(session, db)
        text = str(session.build_context().messages)
        for turn in range(8):
            assert file_id(turn) in text


async def test_pruning_is_skipped_when_a_summary_is_needed_anyway(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    config = compaction(prune_protect_tokens=500, prune_minimum_tokens=200)
    async with await open_session(config_for, db, compaction=config) as session:
        for turn in range(30):
            session.store.append_message(
                session.id, "user", [{"kind": "text", "text": prose(turn, 200)}]
            )
            tool = {
                "kind": "tool",
                "name": "grep",
                "call_id": f"c{turn}",
                "input": "{}",
                "output": prose(turn, 100),
            }
            session.store.append_message(session.id, "assistant", [tool])
        result = await session.compact()
        assert result.status == "completed"
        assert result.pruned_parts == 0 and result.summary_ids


async def test_disabled_compaction_never_triggers_but_compact_still_runs(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    async with await open_session(config_for, db, compaction=compaction(enabled=False)) as session:
        for turn in range(80):
            recorded = await session.record(
                "user" if turn % 2 == 0 else "assistant", prose(turn, 150)
            )
            assert not recorded.compaction_triggered
        assert session.view_tokens() > session.budget.usable
        context = session.build_context()
        assert context.tokens <= context.budget and context.omitted > 0
        assert (await session.compact()).status == "completed"


async def test_turns_written_while_a_round_runs_get_a_round_of_their_own(
    config_for: Callable[..., Config], db: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    # A round reads the view when it starts. Turns recorded while it runs find it
    # pending and start none; once it ends, the view is checked again, so they are
    # not left over the soft limit until the next model turn. The first round here
    # stands for one that found nothing to take out when it read the view (it
    # stalled): it waits until the turns are written, then ends.
    async with await open_session(config_for, db) as session:
        events = recorder(session)
        engine = session.compaction
        entered, release = anyio.Event(), anyio.Event()
        real_round = engine.run_compaction

        async def first_round_stalls(*, force: bool = False) -> Any:
            if not entered.is_set():
                entered.set()
                await release.wait()
                return None
            return await real_round(force=force)

        monkeypatch.setattr(engine, "run_compaction", first_round_stalls)
        soft = session.budget.soft_limit
        turn = 0
        while not engine.pending:
            await session.record("user", f"turn {turn}: {prose(turn, 100)}")
            turn += 1
        with anyio.fail_after(30):
            await entered.wait()
        # The view grows past the soft limit by turns written during the round alone,
        # staying under twice the usable budget (where a write would wait for it).
        start_view = session.view_tokens()
        while session.view_tokens() - start_view <= soft:
            await session.record("user", f"turn {turn}: {prose(turn, 100)}")
            turn += 1
        assert session.view_tokens() < 2 * session.budget.usable
        release.set()
        await engine.wait_for_pending()
        assert len(named(events, EventName.COMPACTION_TRIGGERED)) == 2
        assert session.view_tokens() <= soft
