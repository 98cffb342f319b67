"""``Session.sync``: the whole history in every turn, each message stored once, the
bounded request out; keys that name sessions from outside."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest

from conftest import sql_rows
from lossless import Session, session_for_key
from lossless.config import Config
from lossless.errors import HistoryDivergedError, InvalidInputError
from lossless.session import AnthropicContext, ResponsesContext
from lossless.testing.conformance import check_request

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

MODEL = "openai/sync-test"
SYSTEM = "You are the release agent."


def _turn(n: int) -> list[dict[str, Any]]:
    """One tool round: the assistant calls a tool, the tool answers."""
    call = f"call_{n}"
    return [
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [
                {
                    "id": call,
                    "type": "function",
                    "function": {"name": "run", "arguments": json.dumps({"step": n})},
                }
            ],
        },
        {"role": "tool", "tool_call_id": call, "content": f"step {n} finished: ok"},
    ]


def _history(rounds: int) -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": "Ship release 4.2: run every step."},
    ]
    for n in range(rounds):
        messages.extend(_turn(n))
    return messages


def _stored_messages(session: Session) -> int:
    return len(session.history())


def _rows(db: Path | str) -> list[tuple[str, ...]]:
    """Every stored message row, read from outside the library once sessions closed."""
    return sql_rows(db, "SELECT id, session_id, seq, role FROM messages ORDER BY session_id, seq")


async def test_a_growing_history_is_stored_once(config: Config, db: Path | str) -> None:
    async with Session.open(model=MODEL, db=db, config=config, system_prompt=SYSTEM) as session:
        for rounds in range(1, 6):
            context = await session.sync(_history(rounds))
            check_request(context.messages)
        first = _stored_messages(session)
        # The system prompt is the session's; the user turn and one assistant turn
        # per round (its tool result completes the call) are stored.
        assert first == 1 + 5
        again = await session.sync(_history(5))
        assert _stored_messages(session) == first
        assert again.messages == context.messages
        history = session.history()
        calls = [part for message in history for part in message.parts if part.kind == "tool"]
        assert [call.output for call in calls] == [f"step {n} finished: ok" for n in range(5)]


async def test_equal_content_in_other_objects_is_recognised(config: Config, db: Path | str) -> None:
    async with Session.open(model=MODEL, db=db, config=config) as session:
        await session.sync(_history(2))
        # The same messages rebuilt: keys in another order, None members added.
        rebuilt = [dict(reversed(list(message.items())), name=None) for message in _history(3)]
        await session.sync(rebuilt)
        assert _stored_messages(session) == 2 + 3


async def test_an_edited_history_raises_when_asked_and_stores_nothing(
    config: Config, db: Path | str
) -> None:
    async with Session.open(model=MODEL, db=db, config=config) as session:
        await session.sync(_history(3))
        before = session.history()
        edited = _history(4)
        edited[1] = {"role": "user", "content": "Ship release 4.3 instead."}
        with pytest.raises(HistoryDivergedError) as raised:
            await session.sync(edited, on_change="raise")
        assert raised.value.index == 1
        assert session.history() == before
    assert len(_rows(db)) == 5  # the system turn, the user turn, three calls


async def test_bad_input_is_refused(config: Config, db: Path | str) -> None:
    async with Session.open(model=MODEL, db=db, config=config) as session:
        with pytest.raises(InvalidInputError):
            await session.sync({"role": "user", "content": "not a list"})  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError):
            await session.sync([{"role": "user", "content": object()}])
        with pytest.raises(InvalidInputError):
            await session.sync(_history(1), on_change="merge")  # type: ignore[arg-type]
        assert _stored_messages(session) == 0


async def test_anthropic_and_responses_come_back_in_their_format(
    config: Config, db: Path | str
) -> None:
    anthropic = [
        {"role": "user", "content": "List the open tickets."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "tickets", "input": {}}],
        },
        {
            "role": "user",
            "content": [{"type": "tool_result", "tool_use_id": "toolu_1", "content": "T-1, T-2"}],
        },
    ]
    async with Session.open(model="anthropic/claude-sync", db=db, config=config) as session:
        context = await session.sync(anthropic, system="You triage tickets.")
        assert isinstance(context, AnthropicContext)
        again = await session.sync(anthropic, system="You triage tickets.")
        assert again["messages"] == context["messages"]
        assert _stored_messages(session) == 3
    responses = [
        {"role": "user", "content": [{"type": "input_text", "text": "Count the files."}]},
        {"type": "function_call", "call_id": "fc_1", "name": "ls", "arguments": "{}"},
        {"type": "function_call_output", "call_id": "fc_1", "output": "12 files"},
    ]
    async with Session.open(model=MODEL, db=db, config=config) as session:
        result = await session.sync(responses)
        assert isinstance(result, ResponsesContext)
        await session.sync([*responses, {"role": "assistant", "content": "12."}])
        assert _stored_messages(session) == 3


async def test_a_key_opens_the_same_session(config: Config, db: Path | str) -> None:
    assert await session_for_key(db, "thread-7") is None
    async with Session.open(model=MODEL, db=db, config=config, key="thread-7") as first:
        await first.sync(_history(1))
        assert first.key == "thread-7"
    assert await session_for_key(db, "thread-7") == first.id
    async with Session.open(model=MODEL, db=db, config=config, key="thread-7") as second:
        assert second.id == first.id
        await second.sync(_history(2))
        assert _stored_messages(second) == 2 + 2
    async with await Session.create(model=MODEL, db=db, config=config, key="thread-7") as fresh:
        assert fresh.id != first.id
    assert await session_for_key(db, "thread-7") == fresh.id
    with pytest.raises(InvalidInputError):
        await Session.create(model=MODEL, db=db, config=config, key="")
