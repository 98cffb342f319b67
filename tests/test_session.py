"""The Session API against the local OpenAI-compatible server, through litellm for real."""

from __future__ import annotations

import json
import os
import select
import signal
import subprocess
import sys
import textwrap
import time
from collections.abc import Awaitable, Callable
from functools import partial
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from conftest import TEST_MODEL
from lossless import FileRefPart, Store, TextPart, ToolPart
from lossless.config import CompactionConfig, Config, ModelConfig
from lossless.errors import (
    InvalidInputError,
    LLMError,
    NotFoundError,
    SessionBusyError,
    SessionClosedError,
    SessionNotFoundError,
    UnknownModelError,
)
from lossless.events import Event, EventName
from lossless.session import BuiltContext, Message, RecordResult, Session, TurnResult
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

# 12 words: the server streams three words per chunk, so four content chunks.
LONG = "one two three four five six seven eight nine ten eleven twelve"


def event_names(session: Session) -> list[str]:
    return [row["name"] for row in session.store.events(session.id)]


def events_named(session: Session, name: EventName) -> list[dict[str, Any]]:
    rows = session.store.events(session.id)
    return [json.loads(row["payload_json"]) for row in rows if row["name"] == name.value]


def roles_and_texts(session: Session) -> list[tuple[str, str]]:
    return [(message.role, message.text) for message in session.history()]


# -- lifecycle ----------------------------------------------------------------------------


async def test_create_stores_a_session_with_an_id(config: Config, db: Path) -> None:
    async with await Session.create(
        model=TEST_MODEL, db=db, config=config, system_prompt="You are terse."
    ) as session:
        assert session.id.startswith("ses_")
        assert session.model == TEST_MODEL
        assert session.system_prompt == "You are terse."
        assert not session.closed
        assert session.history() == []
    listed = {row["id"]: row for row in Store(db).sessions()}
    assert session.id in listed
    assert listed[session.id]["model"] == TEST_MODEL


async def test_async_with_closes_the_session(config: Config, db: Path) -> None:
    async with await Session.create(model=TEST_MODEL, db=db, config=config) as session:
        assert not session.closed
    assert session.closed
    assert event_names(session)[-1] == "session_closed"


async def test_close_twice_is_harmless(config: Config, db: Path) -> None:
    session = await Session.create(model=TEST_MODEL, db=db, config=config)
    await session.close()
    await session.close()
    assert event_names(session).count("session_closed") == 1


async def test_two_sessions_in_one_file_are_independent(config: Config, db: Path) -> None:
    async with (
        await Session.create(model=TEST_MODEL, db=db, config=config) as first,
        await Session.create(model=TEST_MODEL, db=db, config=config) as second,
    ):
        await first.record("user", "for the first")
        await second.record("user", "for the second")
        assert first.id != second.id
        assert roles_and_texts(first) == [("user", "for the first")]
        assert roles_and_texts(second) == [("user", "for the second")]


async def test_load_reopens_history_model_and_system_prompt(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    async with await Session.create(
        model=TEST_MODEL, db=db, config=config, system_prompt="Be brief."
    ) as session:
        await session.send("first question")
        before = session.history()
        context_before = session.build_context()

    async with await Session.load(session.id, db=db, config=config) as loaded:
        assert loaded.id == session.id
        assert loaded.model == TEST_MODEL
        assert loaded.system_prompt == "Be brief."
        assert loaded.history() == before
        assert loaded.build_context() == context_before
        result = await loaded.send("second question")
        assert result.text == "ack: second question"
        assert [m["content"] for m in server.requests[-1]["messages"]] == [
            "Be brief.",
            "first question",
            "ack: first question",
            "second question",
        ]


async def test_load_of_an_unknown_session_is_a_key_error(db: Path) -> None:
    Store(db)
    with pytest.raises(SessionNotFoundError) as info:
        await Session.load("ses_doesnotexist", db=db)
    assert isinstance(info.value, KeyError)


async def test_unknown_model_name_is_rejected(db: Path) -> None:
    with pytest.raises(UnknownModelError) as info:
        await Session.create(model="definitely-not-a-model", db=db)
    assert isinstance(info.value, ValueError)
    assert "definitely-not-a-model" in str(info.value)


async def test_everything_after_close_raises_session_closed(
    server: LocalLLMServer, session: Session
) -> None:
    await session.record("user", "hello")
    await session.close()
    with pytest.raises(SessionClosedError):
        await session.send("are you there?")
    with pytest.raises(SessionClosedError):
        await session.record("user", "still here?")
    with pytest.raises(SessionClosedError):
        await session.update_tool("call_1", status="running")
    assert server.requests == []
    assert roles_and_texts(session) == [("user", "hello")]
    # Reading what is stored stays possible.
    assert session.build_context().messages == [{"role": "user", "content": "hello"}]


# -- send -----------------------------------------------------------------------------------


async def test_send_returns_text_tokens_and_finish_reason(
    server: LocalLLMServer, session: Session
) -> None:
    server.enqueue(Reply(text="Paris.", prompt_tokens=17, completion_tokens=2))
    result = await session.send("Capital of France?")
    assert isinstance(result, TurnResult)
    assert result.text == "Paris."
    assert result.tool_calls == []
    assert (result.input_tokens, result.output_tokens) == (17, 2)
    assert result.finish_reason == "stop"
    assert result.cost is None  # the test model has no price
    assert result.compaction_triggered is False
    assert result.context_tokens > 0

    user, assistant = session.history()
    assert isinstance(user, Message) and isinstance(assistant, Message)
    assert (user.role, user.text, user.status) == ("user", "Capital of France?", "complete")
    assert (assistant.role, assistant.text, assistant.status) == ("assistant", "Paris.", "complete")
    assert assistant.id == result.message_id
    assert assistant.usage == {"input_tokens": 17, "output_tokens": 2, "finish_reason": "stop"}
    assert assistant.seq > user.seq


async def test_send_records_the_cost_of_a_priced_model(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    import litellm

    async with await Session.create(model="openai/gpt-4o", db=db, config=config) as session:
        server.enqueue(Reply(text="costly", prompt_tokens=2_000, completion_tokens=1_000))
        result = await session.send("price this")
    prompt, completion = litellm.cost_per_token(
        model="openai/gpt-4o", prompt_tokens=2_000, completion_tokens=1_000
    )
    assert result.cost == pytest.approx(prompt + completion)
    assert session.history()[-1].usage["cost"] == pytest.approx(prompt + completion)


async def test_the_user_turn_is_stored_before_the_model_is_called(
    server: LocalLLMServer, session: Session, db: Path
) -> None:
    seen_by_server: list[list[tuple[str, str, str]]] = []

    def responder(request: dict[str, Any]) -> Reply:
        # Another connection, from the server's thread, while the request is in flight.
        rows = Store(db).history(session.id)
        seen_by_server.append(
            [
                (row["role"], row["status"], "".join(p.get("text", "") for p in row["parts"]))
                for row in rows
            ]
        )
        return Reply(text="noted")

    server.responder = responder
    await session.send("remember this")
    assert seen_by_server == [
        [("user", "complete", "remember this"), ("assistant", "streaming", "")]
    ]
    assert [m.status for m in session.history()] == ["complete", "complete"]


async def test_the_request_is_exactly_build_context_plus_the_new_turn(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    async with await Session.create(
        model=TEST_MODEL, db=db, config=config, system_prompt="System rules."
    ) as session:
        await session.record("user", "earlier question")
        await session.record("assistant", "earlier answer")
        context = session.build_context()
        assert isinstance(context, BuiltContext)
        assert context.messages == [
            {"role": "system", "content": "System rules."},
            {"role": "user", "content": "earlier question"},
            {"role": "assistant", "content": "earlier answer"},
        ]
        assert context.tokens > 0 and context.omitted == 0
        assert len(context.item_ids) == 2
        await session.send("new question")
        request = server.requests[-1]
        assert request["messages"] == [
            *context.messages,
            {"role": "user", "content": "new question"},
        ]
        assert request["max_tokens"] == session.budget.max_output_tokens
        # And the context now ends with the stored reply.
        assert session.build_context().messages[-1] == {
            "role": "assistant",
            "content": "ack: new question",
        }


async def test_build_context_token_total_grows_with_each_turn(session: Session) -> None:
    empty = session.build_context()
    assert empty.messages == [] and empty.tokens == 0
    await session.record("user", "a fairly short message")
    one = session.build_context()
    await session.record("assistant", "a somewhat longer reply with more words in it")
    two = session.build_context()
    assert 0 < one.tokens < two.tokens
    assert two.tokens == session.view_tokens()
    assert two.budget == session.budget.usable


def _sync_collector(sink: list[tuple[float, Any]]) -> Callable[[Any], None]:
    def on_part(part: Any) -> None:
        sink.append((time.perf_counter(), part))

    return on_part


def _async_collector(sink: list[tuple[float, Any]]) -> Callable[[Any], Awaitable[None]]:
    async def on_part(part: Any) -> None:
        await anyio.lowlevel.checkpoint()
        sink.append((time.perf_counter(), part))

    return on_part


@pytest.mark.parametrize(
    "make_callback", [_sync_collector, _async_collector], ids=["sync", "async"]
)
async def test_on_part_receives_text_deltas_as_they_stream(
    server: LocalLLMServer,
    session: Session,
    make_callback: Callable[[list[tuple[float, Any]]], Any],
) -> None:
    server.enqueue(Reply(text=LONG, chunk_delay_s=0.05))
    received: list[tuple[float, Any]] = []
    result = await session.send("count", on_part=make_callback(received))
    finished = time.perf_counter()
    parts = [part for _, part in received]
    assert all(isinstance(part, TextPart) for part in parts)
    assert len(parts) == 4
    assert "".join(part.text for part in parts) == LONG == result.text
    # Streamed, not delivered at the end: the first delta came well before the last chunk.
    assert finished - received[0][0] >= 0.1


async def test_tool_calls_become_tool_parts_with_call_ids(
    server: LocalLLMServer, session: Session
) -> None:
    server.enqueue(
        Reply(
            text="Checking.",
            tool_calls=[
                ToolCallSpec("read_file", {"path": "README.md"}, id="call_read"),
                ToolCallSpec("grep", {"pattern": "TODO"}, id="call_grep"),
            ],
        )
    )
    received: list[Any] = []
    result = await session.send("look around", on_part=received.append)
    assert result.finish_reason == "tool_calls"
    assert result.text == "Checking."
    assert [(call.name, call.call_id, call.status) for call in result.tool_calls] == [
        ("read_file", "call_read", "pending"),
        ("grep", "call_grep", "pending"),
    ]
    assert [part.call_id for part in received if isinstance(part, ToolPart)] == [
        "call_read",
        "call_grep",
    ]

    stored = session.history()[-1]
    assert [type(part).__name__ for part in stored.parts] == ["TextPart", "ToolPart", "ToolPart"]
    tool = stored.parts[1]
    assert isinstance(tool, ToolPart)
    assert json.loads(str(tool.input)) == {"path": "README.md"}
    assert tool.status == "pending" and tool.output is None


async def test_tool_results_reach_the_model_as_tool_messages(
    server: LocalLLMServer, session: Session
) -> None:
    server.enqueue(Reply(tool_calls=[ToolCallSpec("read_file", {"path": "a.txt"}, id="call_a")]))
    result = await session.send("read a.txt")
    await session.update_tool("call_a", status="running")
    await session.update_tool("call_a", status="completed", output="contents of a")
    await session.send("what did it say?")
    messages = server.requests[-1]["messages"]
    assert not messages[1].get("content"), "a reply of only a tool call has no text"
    messages[1].pop("content", None)
    assert messages == [
        {"role": "user", "content": "read a.txt"},
        {
            "role": "assistant",
            "tool_calls": [
                {
                    "id": "call_a",
                    "type": "function",
                    "function": {"name": "read_file", "arguments": '{"path": "a.txt"}'},
                }
            ],
        },
        {"role": "tool", "content": "contents of a", "tool_call_id": "call_a"},
        {"role": "user", "content": "what did it say?"},
    ]
    tool = session.history()[1].parts[0]
    assert isinstance(tool, ToolPart) and tool.output == "contents of a"
    assert result.tool_calls[0].call_id == "call_a"


async def test_send_passes_tool_schemas_to_the_model(
    server: LocalLLMServer, session: Session
) -> None:
    tools = [
        {
            "type": "function",
            "function": {
                "name": "read_file",
                "description": "Read a file",
                "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
            },
        }
    ]
    server.enqueue(Reply(tool_calls=[ToolCallSpec("read_file", {"path": "x"}, id="call_x")]))
    result = await session.send("read x", tools=tools)
    assert server.requests[-1]["tools"] == tools
    assert [call.call_id for call in result.tool_calls] == ["call_x"]


# -- record ---------------------------------------------------------------------------------


async def test_record_appends_turns_that_ran_elsewhere(
    server: LocalLLMServer, session: Session
) -> None:
    first = await session.record("system", "Pinned: the project is called lossless.")
    second = await session.record("user", [TextPart("part one"), "part two"])
    third = await session.record("assistant", TextPart("an answer"))
    assert all(isinstance(result, RecordResult) for result in (first, second, third))
    assert first.seq < second.seq < third.seq
    assert all(result.token_count > 0 for result in (first, second, third))
    assert third.view_tokens == session.view_tokens()
    assert [m.role for m in session.history()] == ["system", "user", "assistant"]
    assert session.history()[1].parts == [TextPart("part one"), TextPart("part two")]
    assert server.requests == [], "record never calls the model"


async def test_tool_lifecycle_pending_running_completed(session: Session) -> None:
    await session.record("user", "list the files")
    await session.record(
        "assistant",
        [TextPart("On it."), ToolPart("ls", "call_ls", {"path": "."}, status="pending")],
    )

    def tool() -> ToolPart:
        part = session.history()[-1].parts[-1]
        assert isinstance(part, ToolPart)
        return part

    assert (tool().status, tool().output) == ("pending", None)
    await session.update_tool("call_ls", status="running")
    assert (tool().status, tool().output) == ("running", None)
    await session.update_tool("call_ls", status="completed", output="a.txt\nb.txt")
    assert (tool().status, tool().output, tool().error) == ("completed", "a.txt\nb.txt", None)
    assert events_named(session, EventName.TOOL_UPDATED) == [
        {"call_id": "call_ls", "status": "running"},
        {"call_id": "call_ls", "status": "completed"},
    ]
    messages = session.build_context().messages
    assert messages[-1] == {"role": "tool", "content": "a.txt\nb.txt", "tool_call_id": "call_ls"}


async def test_tool_lifecycle_ending_in_error(session: Session) -> None:
    await session.record("assistant", [ToolPart("fetch", "call_f", {"url": "x"}, status="running")])
    await session.update_tool("call_f", status="error", error="connection refused")
    part = session.history()[-1].parts[0]
    assert isinstance(part, ToolPart)
    assert (part.status, part.error, part.output) == ("error", "connection refused", None)
    tool_message = session.build_context().messages[-1]
    assert tool_message["role"] == "tool" and tool_message["tool_call_id"] == "call_f"
    assert "connection refused" in tool_message["content"]
    # A finished call's result is written once.
    with pytest.raises(InvalidInputError):
        await session.update_tool("call_f", status="completed", output="late")


async def test_record_of_a_finished_tool_call_and_its_result(session: Session) -> None:
    await session.record(
        "assistant",
        [ToolPart("grep", "call_g", {"q": "x"}, output="3 hits", status="completed")],
    )
    # The conversation opens with the assistant: a lead marker comes first.
    marker, call, result = session.build_context().messages
    assert marker["role"] == "user"
    assert call["tool_calls"][0]["id"] == "call_g"
    assert result == {"role": "tool", "content": "3 hits", "tool_call_id": "call_g"}


async def test_update_tool_rejects_unknown_ids_and_statuses(session: Session) -> None:
    await session.record("assistant", [ToolPart("ls", "call_ls", {}, status="pending")])
    with pytest.raises(NotFoundError):
        await session.update_tool("call_missing", status="running")
    with pytest.raises(InvalidInputError):
        await session.update_tool("call_ls", status="exploded")  # type: ignore[arg-type]
    part = session.history()[-1].parts[0]
    assert isinstance(part, ToolPart) and part.status == "pending"


async def test_record_keeps_file_references(session: Session) -> None:
    ref = FileRefPart("file_0123456789abcdef", "data/big.csv", "csv", 50_000, "sales by month")
    await session.record("user", [TextPart("see the attached file"), ref])
    assert session.history()[-1].parts == [TextPart("see the attached file"), ref]
    assert "file_0123456789abcdef" in json.dumps(session.build_context().messages)


# -- doom loop ------------------------------------------------------------------------------


async def test_three_identical_tool_calls_publish_doom_loop(session: Session) -> None:
    for index in range(3):
        await session.record(
            "assistant", [ToolPart("read", f"call_{index}", {"path": "same.txt"}, output="x")]
        )
    loops = events_named(session, EventName.DOOM_LOOP_DETECTED)
    assert len(loops) == 1
    assert loops[0]["tool"] == "read" and loops[0]["repeats"] == 3


async def test_different_calls_in_between_reset_the_doom_loop_count(session: Session) -> None:
    calls = [("read", "a"), ("read", "a"), ("read", "b"), ("read", "a"), ("read", "a")]
    for index, (name, path) in enumerate(calls):
        await session.record(
            "assistant", [ToolPart(name, f"call_{index}", {"path": path}, output="x")]
        )
    assert events_named(session, EventName.DOOM_LOOP_DETECTED) == []


async def test_doom_loop_threshold_is_configurable_and_watches_model_calls(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    config = config_for(doom_loop_threshold=2)
    call = ToolCallSpec("search", {"q": "the same thing"})
    server.enqueue(Reply(tool_calls=[call]), Reply(tool_calls=[call]))
    async with await Session.create(model=TEST_MODEL, db=db, config=config) as session:
        published: list[Event] = []
        session.events.subscribe(published.append, EventName.DOOM_LOOP_DETECTED)
        await session.send("find it")
        assert published == []
        await session.send("find it again")
    assert len(published) == 1
    assert published[0].payload["tool"] == "search" and published[0].payload["repeats"] == 2
    assert len(events_named(session, EventName.DOOM_LOOP_DETECTED)) == 1


# -- compaction thresholds -------------------------------------------------------------------

SMALL = {
    "model": ModelConfig(context_limit=6_000, max_output_tokens=500),
    "compaction": CompactionConfig(
        output_budget=500, prune_minimum_tokens=0, prune_protect_tokens=0
    ),
}
FILLER = " ".join(f"word{i}" for i in range(120))  # about 250 tokens


async def test_crossing_the_soft_threshold_compacts_in_the_background(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    config = config_for(**SMALL)
    async with await Session.create(model=TEST_MODEL, db=db, config=config) as session:
        soft = session.budget.soft_limit
        triggered_at = None
        for turn in range(30):
            server.enqueue(Reply(text=FILLER))
            result = await session.send(f"question {turn}")
            if result.compaction_triggered:
                triggered_at = turn
                break
        assert triggered_at is not None, "the soft threshold was never crossed"
        await session.compaction.wait_for_pending()
        assert session.view_tokens() <= soft
        # Nothing was lost: every turn is still in the history.
        assert len(session.history()) == 2 * (triggered_at + 1)
    names = event_names(session)
    assert names.index("compaction_triggered") < names.index("compaction_completed")


async def test_a_user_turn_crossing_the_soft_threshold_is_reported_by_send(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path
) -> None:
    config = config_for(**SMALL)
    async with await Session.create(model=TEST_MODEL, db=db, config=config) as session:
        soft = session.budget.soft_limit
        while session.view_tokens() + 300 < soft:
            await session.record("user", FILLER)
            await session.record("assistant", "ok")
        server.enqueue(Reply(text="short"))
        result = await session.send(FILLER + " " + FILLER)
        assert result.compaction_triggered is True
    assert "compaction_triggered" in event_names(session)


@pytest.mark.parametrize("call", ["send", "respond"])
async def test_over_the_hard_threshold_the_call_waits_for_compaction(
    server: LocalLLMServer, config_for: Callable[..., Config], db: Path, call: str
) -> None:
    config = config_for(**SMALL)
    async with await Session.create(model=TEST_MODEL, db=db, config=config) as session:
        usable = session.budget.usable
        # Another writer (a second process, say) filled the session past the window.
        other = Store(db)
        while other.view_stats(session.id)["tokens"] <= usable * 1.5:
            other.append(session.id, "user", FILLER)
            other.append(session.id, "assistant", "noted")
        view_at_request: list[int] = []
        requests_when_compacted: list[int] = []

        def responder(request: dict[str, Any]) -> Reply:
            view_at_request.append(Store(db).view_stats(session.id)["tokens"])
            return Reply(text="answer")

        server.responder = responder
        session.events.subscribe(
            lambda event: requests_when_compacted.append(len(server.requests)),
            EventName.COMPACTION_COMPLETED,
        )
        if call == "send":
            result = await session.send("and the question is")
        else:
            # No new turn: straight to the model call, past record()'s own check.
            result = await session.respond()
        assert result.text == "answer"
        assert requests_when_compacted and requests_when_compacted[0] == 0
        assert view_at_request and view_at_request[0] <= usable
        assert result.context_tokens <= session.build_context().budget


# -- bad input ----------------------------------------------------------------------------------


@pytest.mark.parametrize("message", ["", "   ", "\n\t", [TextPart("")], [" ", TextPart("  ")]])
async def test_empty_messages_are_rejected(
    server: LocalLLMServer, session: Session, message: Any
) -> None:
    with pytest.raises(InvalidInputError, match="empty") as info:
        await session.send(message)
    assert isinstance(info.value, ValueError)
    assert session.history() == []
    assert server.requests == []


@pytest.mark.parametrize(
    "message",
    [None, 42, 3.5, b"bytes", {"role": "user", "content": "hi"}, [], ["ok", 7], [None], object()],
    ids=lambda value: type(value).__name__ + (f"-{len(value)}" if isinstance(value, list) else ""),
)
async def test_wrong_part_types_are_rejected(
    server: LocalLLMServer, session: Session, message: Any
) -> None:
    with pytest.raises(InvalidInputError) as info:
        await session.send(message)
    assert isinstance(info.value, ValueError)
    with pytest.raises(InvalidInputError):
        await session.record("user", message)
    assert session.history() == []
    assert server.requests == []


async def test_record_rejects_unknown_roles(session: Session) -> None:
    with pytest.raises(InvalidInputError, match="role"):
        await session.record("robot", "beep")
    with pytest.raises(InvalidInputError):
        await session.record("tool", "a tool message needs a call id")
    assert session.history() == []


async def test_a_message_of_tool_parts_only_is_not_empty(session: Session) -> None:
    await session.record("assistant", [ToolPart("ls", "call_1", {}, status="pending")])
    assert len(session.history()) == 1


def _raise_on_second_sync() -> tuple[Callable[[Any], Any], list[str]]:
    seen: list[str] = []

    def on_part(part: Any) -> None:
        seen.append(part.text)
        if len(seen) == 2:
            raise KeyError("callback bug")

    return on_part, seen


def _raise_on_second_async() -> tuple[Callable[[Any], Any], list[str]]:
    seen: list[str] = []

    async def on_part(part: Any) -> None:
        await anyio.lowlevel.checkpoint()
        seen.append(part.text)
        if len(seen) == 2:
            raise KeyError("callback bug")

    return on_part, seen


@pytest.mark.parametrize(
    "make", [_raise_on_second_sync, _raise_on_second_async], ids=["sync", "async"]
)
async def test_a_raising_callback_propagates_and_the_partial_reply_is_stored_incomplete(
    server: LocalLLMServer,
    session: Session,
    make: Callable[[], tuple[Callable[[Any], Any], list[str]]],
) -> None:
    server.enqueue(Reply(text=LONG))
    on_part, seen = make()
    with pytest.raises(KeyError, match="callback bug"):
        await session.send("count to twelve", on_part=on_part)
    user, assistant = session.history()
    assert (user.role, user.text, user.status) == ("user", "count to twelve", "complete")
    assert assistant.status == "incomplete"
    assert assistant.text == "".join(seen) == "one two three four five six "
    (incomplete,) = events_named(session, EventName.STREAM_INCOMPLETE)
    assert incomplete["message_id"] == assistant.id and "on_part" in incomplete["reason"]
    # The session is still usable.
    result = await session.send("again, without the callback")
    assert result.text == "ack: again, without the callback"
    assert session.history()[-1].status == "complete"


async def test_a_callback_raising_on_a_tool_part_keeps_the_complete_reply(
    server: LocalLLMServer, session: Session
) -> None:
    server.enqueue(Reply(text="Calling.", tool_calls=[ToolCallSpec("ls", {}, id="call_ls")]))

    def on_part(part: Any) -> None:
        if isinstance(part, ToolPart):
            raise RuntimeError("cannot handle tools")

    with pytest.raises(RuntimeError, match="cannot handle tools"):
        await session.send("list", on_part=on_part)
    assistant = session.history()[-1]
    # The model finished; its whole reply, tool call included, is stored as it came.
    assert assistant.status == "complete"
    assert [type(part).__name__ for part in assistant.parts] == ["TextPart", "ToolPart"]
    created = events_named(session, EventName.MESSAGE_CREATED)
    assert created[-1]["message_id"] == assistant.id and created[-1]["role"] == "assistant"


async def test_a_second_concurrent_send_is_rejected_as_busy(
    server: LocalLLMServer, session: Session
) -> None:
    server.enqueue(Reply(text=LONG, chunk_delay_s=0.05))
    results: list[TurnResult] = []
    streaming = anyio.Event()

    async def first() -> None:
        results.append(await session.send("slow one", on_part=lambda part: streaming.set()))

    async with anyio.create_task_group() as tg:
        tg.start_soon(first)
        with anyio.fail_after(5):
            await streaming.wait()
        with pytest.raises(SessionBusyError):
            await session.send("impatient")
    assert [result.text for result in results] == [LONG]
    assert roles_and_texts(session) == [("user", "slow one"), ("assistant", LONG)]
    assert len(server.requests) == 1
    # Once the first finished, sending works again.
    assert (await session.send("now")).text == "ack: now"


async def test_failures_do_not_leave_the_session_busy(
    server: LocalLLMServer, session: Session
) -> None:
    server.enqueue(Reply(status=400))
    with pytest.raises(LLMError):
        await session.send("one")
    with pytest.raises(InvalidInputError):
        await session.send("")
    assert (await session.send("two")).text == "ack: two"


# -- a process killed mid-stream ------------------------------------------------------------------

_CHILD = """
    import sys

    import anyio

    from lossless.config import Config
    from lossless.session import Session


    async def main() -> None:
        db, model, config_json = sys.argv[1:4]
        config = Config.model_validate_json(config_json)
        session = await Session.create(model=model, db=db, config=config)
        print("SESSION", session.id, flush=True)

        def on_part(part):
            print("PART", part.text.strip(), flush=True)

        await session.send("tell me a long story", on_part=on_part)
        print("DONE", flush=True)


    anyio.run(main)
"""


def _read_line(process: subprocess.Popen[str], deadline: float) -> str:
    assert process.stdout is not None
    remaining = deadline - time.monotonic()
    ready, _, _ = select.select([process.stdout], [], [], max(0.0, remaining))
    if not ready:
        raise TimeoutError("the child printed nothing in time")
    return process.stdout.readline()


def _send_in_a_child_and_kill_it(
    config: Config, db: Path, script: Path, deltas_before_kill: int
) -> str:
    """Start a process that sends; SIGKILL it once it received some deltas; return the
    session id it created."""
    script.write_text(textwrap.dedent(_CHILD))
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    process = subprocess.Popen(
        [sys.executable, str(script), str(db), TEST_MODEL, config.model_dump_json()],
        stdout=subprocess.PIPE,
        stderr=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        deadline = time.monotonic() + 60
        first = _read_line(process, deadline).split()
        assert first[:1] == ["SESSION"], process.stderr.read() if process.stderr else ""
        parts = []
        while len(parts) < deltas_before_kill:
            line = _read_line(process, deadline)
            assert line.startswith("PART"), line
            parts.append(line)
        os.kill(process.pid, signal.SIGKILL)
    finally:
        if process.poll() is None:
            process.kill()
        process.wait(10)
        if process.stdout is not None:
            process.stdout.close()
        if process.stderr is not None:
            process.stderr.close()
    assert process.returncode == -signal.SIGKILL
    return first[1]


@pytest.mark.timeout(90)
async def test_a_process_killed_mid_stream_leaves_a_consistent_session(
    server: LocalLLMServer, config: Config, db: Path, tmp_path: Path
) -> None:
    story = " ".join(f"word{i}" for i in range(90))  # 30 chunks, 3 s
    server.enqueue(Reply(text=story, chunk_delay_s=0.1))
    session_id = await anyio.to_thread.run_sync(
        partial(_send_in_a_child_and_kill_it, config, db, tmp_path / "child.py", 2)
    )

    # Before load, the dead writer's reply is still marked as streaming.
    assert [row["status"] for row in Store(db).history(session_id)] == ["complete", "streaming"]

    async with await Session.load(session_id, db=db, config=config) as session:
        history = session.history()
        assert [(m.role, m.status) for m in history] == [
            ("user", "complete"),
            ("assistant", "incomplete"),
        ]
        assert history[0].text == "tell me a long story"
        assert story not in history[1].text
        (loaded,) = events_named(session, EventName.SESSION_LOADED)
        assert loaded["interrupted_flagged"] == 1
        # The view is consistent: the next turn goes out and is stored complete.
        result = await session.send("please finish the story")
        assert result.text == "ack: please finish the story"
        sent = server.requests[-1]["messages"]
        assert sent[0] == {"role": "user", "content": "tell me a long story"}
        assert sent[-1] == {"role": "user", "content": "please finish the story"}
        assert [m.status for m in session.history()] == [
            "complete",
            "incomplete",
            "complete",
            "complete",
        ]

    # Loading again changes nothing: the flag is set once.
    async with await Session.load(session_id, db=db, config=config) as again:
        assert events_named(again, EventName.SESSION_LOADED)[-1]["interrupted_flagged"] == 0
        assert [m.status for m in again.history()] == [
            "complete",
            "incomplete",
            "complete",
            "complete",
        ]
