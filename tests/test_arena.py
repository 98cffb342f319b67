"""The context arena through the public API: pins, task state, tool failures, recall,
external recall ports, persistence, placement and the prefix rule."""

from __future__ import annotations

import itertools
import json
import tempfile
from collections.abc import Callable, Sequence
from pathlib import Path
from typing import Any

import anyio
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from conftest import TEST_MODEL
from lossless import Session
from lossless.arena import LexicalRecallPort, RecallHit
from lossless.config import ArenaConfig, CompactionConfig, Config
from lossless.errors import ArenaFullError, InvalidInputError
from lossless.events import EventName
from lossless.parts import ToolPart
from lossless.testing import LocalLLMServer, Reply

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]


def texts(request: dict[str, Any]) -> list[tuple[str, str]]:
    return [(m["role"], m.get("content") or "") for m in request["messages"]]


async def test_a_session_without_entries_assembles_what_it_did_without_the_arena(
    config_for: Callable[..., Config], db: Path
) -> None:
    on = config_for()
    off = config_for(arena=ArenaConfig(enabled=False))
    async with Session.open(model=TEST_MODEL, db=db, config=on, system_prompt="be brief") as s:
        await s.record("user", "hello there")
        await s.record("assistant", [ToolPart("ls", "c1", {"path": "."}, output="a.py")])
        with_arena = s.build_context()
        session_id = s.id
    async with Session.open(model=TEST_MODEL, db=db, config=off, session_id=session_id) as s:
        without = s.build_context()
    assert with_arena.messages == without.messages
    assert with_arena.tokens == without.tokens
    assert with_arena.injection is None and without.injection is None


async def test_the_server_sees_the_pin_in_the_system_message_and_the_task_by_the_newest_turn(
    server: LocalLLMServer, session: Session
) -> None:
    await session.send("first question")
    key = await session.pin("Never touch legacy_billing/.")
    await session.set_task("Refactor the payout client.")
    server.enqueue(Reply(text="ok"))
    await session.send("second question")
    request = server.requests[-1]
    messages = texts(request)
    assert messages[0][0] == "system"
    assert "Never touch legacy_billing/." in messages[0][1]
    assert "Refactor the payout client." not in messages[0][1]
    # The volatile block is a user message right after the newest user message.
    assert messages[-2] == ("user", "second question")
    assert messages[-1][0] == "user"
    assert "<task_state>\nRefactor the payout client.\n</task_state>" in messages[-1][1]
    context = session.build_context()
    assert context.injection is not None
    truth = context.injection.zones["truth"]
    assert truth.accepted > 0 and truth.allocated >= truth.accepted
    assert context.tokens <= context.budget
    assert await session.unpin(key)
    assert "legacy_billing" not in json.dumps(session.build_context().messages)


async def test_litellm_keeps_the_block_out_of_a_separate_system_field(session: Session) -> None:
    from lossless.testing.conformance._litellm import _litellm

    await session.record("user", "start")
    await session.pin("The staging cluster is read-only.")
    await session.set_task("Write the migration plan.")
    messages = session.build_context().messages
    config = _litellm().anthropic_config()
    data = config.transform_request(
        model="claude-3-5-sonnet-20241022",
        messages=messages,
        optional_params={},
        litellm_params={},
        headers={},
    )
    system = json.dumps(data["system"])
    assert "read-only" in system and "migration plan" not in system
    assert "migration plan" in json.dumps(data["messages"][-1])


async def test_entries_survive_load(config: Config, db: Path) -> None:
    async with Session.open(model=TEST_MODEL, db=db, config=config) as s:
        await s.pin("Prices are in cents.", key="money")
        await s.set_task("Audit the invoices.")
        await s.set_task("Audit the refunds.")
        session_id = s.id
    async with Session.open(model=TEST_MODEL, db=db, config=config, session_id=session_id) as s:
        entries = {e.key: e for e in s.arena.entries()}
        assert entries["money"].text == "Prices are in cents."
        assert entries["money"].zone == "truth" and entries["money"].priority == "high"
        assert entries["task"].text == "Audit the refunds."
        await s.record("user", "go")
        assert "Audit the refunds." in json.dumps(s.build_context().messages)


async def test_bad_input_is_refused_and_changes_nothing(session: Session) -> None:
    await session.pin("kept", key="k")
    with pytest.raises(InvalidInputError, match="zone"):
        await session.arena.add("nowhere", "k2", "text")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="text"):
        await session.pin("   ")
    with pytest.raises(InvalidInputError, match="key"):
        await session.arena.add("truth", 42, "text")  # type: ignore[arg-type]
    with pytest.raises(InvalidInputError, match="priority"):
        await session.arena.add("truth", "k3", "text", priority="urgent")  # type: ignore[arg-type]
    assert [e.key for e in session.arena.entries()] == ["k"]


async def test_oversized_working_memory_is_cut_to_its_cap_and_the_cut_reported(
    session: Session,
) -> None:
    long = "BEGIN " + "a line of notes\n" * 2_000 + " END"
    result = await session.set_working_memory(long)
    cap = session.config.arena.cap("memory_working")
    assert result.cut_from is not None and result.cut_from > cap
    assert result.tokens <= cap
    text = session.arena.entries()[0].text
    assert text.startswith("BEGIN") and text.endswith("END") and "tokens cut" in text


async def test_a_failed_tool_enters_tool_failures_and_leaves_when_it_succeeds(
    session: Session,
) -> None:
    await session.record("user", "run the tests")
    await session.record(
        "assistant",
        [
            ToolPart(
                "pytest",
                "c1",
                {"k": "x"},
                output="E  assert 1 == 2",
                status="error",
                error="exit 1",
            )
        ],
    )
    entries = {e.key: e for e in session.arena.entries()}
    assert "pytest failed: exit 1" in entries["tool:pytest"].text
    assert "<tool_failures" in json.dumps(session.build_context().messages)
    await session.record("assistant", [ToolPart("pytest", "c2", {}, status="pending")])
    await session.update_tool("c2", status="completed", output="3 passed")
    assert "tool:pytest" not in {e.key for e in session.arena.entries()}


async def test_at_the_ceiling_a_new_low_key_is_refused_with_an_event(
    config_for: Callable[..., Config], db: Path
) -> None:
    arena = ArenaConfig(max_entries=2, degradation_policy="drop_low_priority")
    async with Session.open(model=TEST_MODEL, db=db, config=config_for(arena=arena)) as s:
        seen: list[Any] = []
        s.events.subscribe(seen.append, EventName.ARENA_CEILING_ENFORCED)
        await s.arena.add("truth", "a", "one", priority="normal")
        await s.arena.add("truth", "b", "two", priority="high")
        with pytest.raises(ArenaFullError):
            await s.arena.add("truth", "c", "three", priority="low")
        await s.arena.add("truth", "a", "one, updated", priority="normal")  # updates land
        await s.arena.add("truth", "d", "four", priority="critical")  # evicts "a"
        assert [e.key for e in s.arena.entries()] == ["b", "d"]
        assert [event.payload["accepted"] for event in seen] == [False, True]


def _compacting(config_for: Callable[..., Config], port: object = None, **arena: Any) -> Config:
    return config_for(
        compaction=CompactionConfig(
            output_budget=1_000, tail_tokens=200, tail_messages=4, protect_user_turns=1
        ),
        arena=ArenaConfig(recall_port=port, **arena),
    )


async def _history(session: Session, server: LocalLLMServer) -> None:
    await session.record("user", "The staging password rotates every ninety days.")
    await session.record("assistant", "Noted: ninety days.")
    for n in range(8):
        await session.record("user", f"filler turn {n} about unrelated chores")
        await session.record("assistant", f"done with chore {n}")
    result = await session.compact()
    assert result.status == "completed", result


async def test_memory_recall_brings_back_what_compaction_took_out(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    async with Session.open(model=TEST_MODEL, db=db, config=_compacting(config_for)) as s:
        await _history(s, server)
        server.enqueue(Reply(text="ninety"))
        await s.send("how often does the staging password rotate?")
        block = texts(server.requests[-1])[-1][1]
        assert "<memory_recall" in block and "ninety days" in block
        report = s.build_context().injection
        assert report is not None and report.recall_score is not None


class _Port:
    def __init__(self, answer: Callable[[], Any]) -> None:
        self.answer = answer
        self.queries: list[str] = []

    async def search(self, query: str, k: int) -> Sequence[RecallHit]:
        self.queries.append(query)
        result = self.answer()
        if isinstance(result, float):
            await anyio.sleep(result)
            return []
        return result  # type: ignore[no-any-return]


def _raise() -> Any:
    raise RuntimeError("index offline")


@pytest.mark.parametrize(
    ("answer", "reason"),
    [
        (_raise, "port_error"),
        (lambda: 5.0, "timeout"),
        (lambda: ["junk"], "junk"),
        (lambda: [], "no_hits"),
    ],
)
async def test_a_failing_port_is_skipped_with_an_event_and_the_turn_goes_on(
    server: LocalLLMServer,
    config_for: Callable[..., Config],
    db: Path,
    answer: Callable[[], Any],
    reason: str,
) -> None:
    port = _Port(answer)
    config = _compacting(config_for, port, external_timeout_s=0.2)
    async with Session.open(model=TEST_MODEL, db=db, config=config) as s:
        skipped: list[Any] = []
        s.events.subscribe(skipped.append, EventName.EXTERNAL_RECALL_SKIPPED)
        server.enqueue(Reply(text="fine"))
        result = await s.send("what is the capital of the moon base?")
        assert result.text == "fine"
        assert [event.payload["reason"] for event in skipped] == [reason]
        assert not [e for e in s.arena.entries() if e.external]


async def test_external_hits_that_were_injected_are_written_back(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    port = LexicalRecallPort([("doc1", "The moon base capital is Tranquility City.")])
    async with Session.open(model=TEST_MODEL, db=db, config=_compacting(config_for, port)) as s:
        server.enqueue(Reply(text="Tranquility"))
        await s.send("what is the capital of the moon base?")
        assert "Tranquility City" in texts(server.requests[-1])[-1][1]
        written = [e for e in s.arena.entries() if e.external]
        assert [e.zone for e in written] == ["rag_external"]
        # Written back once, not injected again.
        server.enqueue(Reply(text="again"))
        await s.send("and the weather there?")
        assert "Tranquility City" not in texts(server.requests[-1])[-1][1]


async def test_the_controller_adapts_and_its_caps_persist(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    # Without the ledger, whose own cap the truth zone would add.
    arena = ArenaConfig(caps={"truth": 64}, floors={}, warmup_turns=2, ledger=False)
    async with Session.open(model=TEST_MODEL, db=db, config=config_for(arena=arena)) as s:
        adapted: list[Any] = []
        s.events.subscribe(adapted.append, EventName.ARENA_ZONE_ADAPTED)
        # Three pins of ~50 tokens each in a truth cap of 64: the zone is cut every turn.
        for n in range(3):
            await s.pin(f"rule {n}: " + "keep the ledger balanced " * 10)
        for n in range(3):
            server.enqueue(Reply(text="ok"))
            await s.send(f"turn {n}")
        assert adapted and all(shift["to"] == "truth" for shift in adapted[-1].payload["shifts"])
        planned = s.build_context().injection
        assert planned is not None and planned.zones["truth"].cap > 64
        session_id = s.id
    stored = [e["name"] for e in s.store.events(session_id)]
    assert "arena_zone_adapted" in stored


def _newest_user_prefix(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The request up to and including its newest user message that is not the
    arena's block (the block is the last message, right after it)."""
    block = messages[-1]["role"] == "user" and messages[-1]["content"].startswith("<context>")
    end = len(messages) - (1 if block else 0)
    newest = max(i for i in range(end) if messages[i]["role"] == "user")
    return messages[: newest + 1]


_steps = st.lists(
    st.tuples(
        st.sampled_from(["task", "pin", "failure", "none"]),
        st.text(alphabet="abcdefgh ", min_size=1, max_size=30).filter(str.strip),
    ),
    min_size=2,
    max_size=5,
)


@settings(
    max_examples=8, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(steps=_steps)
def test_between_compactions_each_request_begins_with_the_last_one_up_to_its_newest_user_turn(
    server: LocalLLMServer, config_for: Callable[..., Config], steps: list[tuple[str, str]]
) -> None:
    async def run() -> list[dict[str, Any]]:
        server.reset()
        with tempfile.TemporaryDirectory() as tmp:
            db = Path(tmp) / "prefix.db"
            async with Session.open(
                model=TEST_MODEL, db=db, config=config_for(), system_prompt="be brief"
            ) as s:
                for turn, (kind, words) in enumerate(steps):
                    if kind == "task":
                        await s.set_task(f"task {words}")
                    elif kind == "pin":
                        await s.pin(f"fact {words}")
                    elif kind == "failure":
                        await s.record(
                            "assistant",
                            [ToolPart("make", f"c{turn}", {}, output=words, status="error")],
                        )
                    server.enqueue(Reply(text=f"reply {turn}"))
                    await s.send(f"question {turn}: {words}")
        return server.requests

    requests = anyio.run(run)
    for before, after in itertools.pairwise(requests):
        prefix = _newest_user_prefix(before["messages"])
        if after["messages"][0] != prefix[0]:
            # A pin changed the system message: the rest still holds.
            prefix, head = prefix[1:], after["messages"][1 : len(prefix)]
        else:
            head = after["messages"][: len(prefix)]
        assert head == prefix


def _block(messages: list[dict[str, Any]]) -> str:
    return next(m["content"] for m in messages if "<memory_recall" in (m.get("content") or ""))


async def test_a_build_plans_anew_only_after_what_it_depends_on_changed(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    async with Session.open(model=TEST_MODEL, db=db, config=_compacting(config_for)) as s:
        await _history(s, server)
        await s.record("user", "how often does the staging password rotate?")
        first = s.build_context()
        assert "ninety days" in _block(first.messages)
        assert s.build_context() == first
        # A tool run after the question keeps its recall and its block.
        await s.record("assistant", [ToolPart("vault", "c1", {"path": "staging"}, output="ok")])
        after_tool = s.build_context()
        assert _block(after_tool.messages) == _block(first.messages)
        assert after_tool.messages[: len(first.messages) - 1] == first.messages[:-1]
        # An arena write is planned in.
        await s.set_task("Rotate the staging password today.")
        assert "Rotate the staging password today." in json.dumps(s.build_context().messages)
        # A new question is recalled for itself.
        await s.record("user", "which unrelated chores did the filler turns cover?")
        block = _block(s.build_context().messages)
        assert "chore" in block and "ninety days" not in block


async def test_a_call_recorded_before_a_load_that_fails_after_it_enters_tool_failures(
    config: Config, db: Path
) -> None:
    async with Session.open(model=TEST_MODEL, db=db, config=config) as s:
        await s.record("user", "run the tests")
        await s.record("assistant", [ToolPart("pytest", "c7", {"path": "tests"}, status="pending")])
        session_id = s.id
    async with Session.open(model=TEST_MODEL, db=db, config=config, session_id=session_id) as s:
        await s.update_tool("c7", status="error", error="exit 1: 3 failed")
        failures = [e for e in s.arena.entries() if e.zone == "tool_failures"]
        assert [e.key for e in failures] == ["tool:pytest"]
        assert "exit 1: 3 failed" in failures[0].text


@pytest.mark.parametrize("reset", [False, True])
async def test_a_compaction_resets_what_the_arena_learned_only_when_configured(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path, reset: bool
) -> None:
    config = _compacting(config_for, reset_on_compaction=reset)
    resets: list[Any] = []
    reset_seen = anyio.Event()

    def on_reset(event: Any) -> None:
        resets.append(event)
        reset_seen.set()

    async with Session.open(model=TEST_MODEL, db=db, config=config) as s:
        s.events.subscribe(on_reset, EventName.ARENA_RESET)
        await s.arena.add("memory_working", "welcome", "Say hello to the reviewer once.", once=True)
        server.enqueue(Reply(text="hello"))
        await s.send("start")
        assert "Say hello to the reviewer once." in json.dumps(server.requests[-1])
        server.enqueue(Reply(text="ok"))
        await s.send("go on")
        # Not injected again: the block after the new question lacks it (the block sent
        # with "start" stays where it was, as the conversation the model already read).
        sent = server.requests[-1]["messages"]
        after_question = sent[[m.get("content") for m in sent].index("go on") :]
        assert "Say hello to the reviewer once." not in json.dumps(after_question)
        assert "Say hello to the reviewer once." in json.dumps(sent)
        await _history(s, server)
        if reset:
            with anyio.fail_after(5):  # delivered to handlers in the background
                await reset_seen.wait()
        server.enqueue(Reply(text="ok"))
        await s.send("and now?")
        shown_again = "Say hello to the reviewer once." in json.dumps(server.requests[-1])
    assert shown_again is reset
    assert [event.payload["reason"] for event in resets] == (["compaction"] if reset else [])


async def test_a_forks_memory_recall_reaches_what_it_shares_with_its_parent(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    """A fork's summaries cover its parent's messages: its recall finds them, and
    not the parent's messages after the fork point."""
    async with Session.open(model=TEST_MODEL, db=db, config=_compacting(config_for)) as parent:
        await _history(parent, server)
        async with await parent.fork() as child:
            await parent.record("user", "The backup password rotates every seven days.")
            # The child's view starts with the parent's summaries: they cover the
            # password's message, which the parent holds.
            server.enqueue(Reply(text="ninety"))
            await child.send("how often does the staging password rotate?")
            block = texts(server.requests[-1])[-1][1]
            assert "<memory_recall" in block and "ninety days" in block
            assert "seven days" not in block
