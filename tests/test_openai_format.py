"""OpenAI chat messages in: record_messages, Session.open, and the round trip to build_context."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import pytest

from conftest import TEST_MODEL
from lossless import Store, TextPart, ToolPart
from lossless.config import Config, ModelConfig
from lossless.errors import InvalidInputError, SessionClosedError, SessionNotFoundError
from lossless.events import EventName
from lossless.session import Message, RecordResult, Session

pytestmark = pytest.mark.anyio

SYSTEM = "You are a coding agent. Use the tools to inspect the repository."


@pytest.fixture
def config() -> Config:
    # Explicit limits: the test model is not in litellm's model map.
    return Config(model=ModelConfig(context_limit=32_000, max_output_tokens=1_000))


@pytest.fixture
async def session(config: Config, db: Path) -> AsyncIterator[Session]:
    async with Session.open(model=TEST_MODEL, db=db, config=config, system_prompt=SYSTEM) as opened:
        yield opened


def call(call_id: str, name: str, arguments: str) -> dict[str, Any]:
    return {"id": call_id, "type": "function", "function": {"name": name, "arguments": arguments}}


def context_messages(session: Session) -> list[dict[str, Any]]:
    """The context, with the one difference the chat format allows removed.

    An assistant message made only of tool calls may leave ``content`` out (as the
    inputs here do); the context always carries the key, as ``None``. Nothing else
    is normalised.
    """
    messages = []
    for message in session.build_context().messages:
        if message["role"] == "assistant" and message["content"] is None:
            assert message["tool_calls"], "only a tool-call message may have no content"
            message = {key: value for key, value in message.items() if key != "content"}
        messages.append(message)
    return messages


def assert_same_messages(actual: list[dict[str, Any]], expected: list[dict[str, Any]]) -> None:
    assert [m["role"] for m in actual] == [m["role"] for m in expected]
    for index, (got, want) in enumerate(zip(actual, expected, strict=True)):
        assert got.get("content") == want.get("content"), index
        assert got.get("tool_call_id") == want.get("tool_call_id"), index
        got_calls = [
            (c["id"], c["type"], c["function"]["name"], c["function"]["arguments"])
            for c in got.get("tool_calls", [])
        ]
        want_calls = [
            (c["id"], c["type"], c["function"]["name"], c["function"]["arguments"])
            for c in want.get("tool_calls", [])
        ]
        assert got_calls == want_calls, index
        assert got == want, index


# Arguments with unusual spacing and key order: they must come back byte for byte.
README_ARGS = '{"path":  "README.md", "max_lines": 40}'
SETUP_ARGS = '{"max_lines":10,"path":"setup.py"}'
PYTEST_ARGS = '{"cmd": "pytest -q"}'

AGENT_HISTORY: list[dict[str, Any]] = [
    {"role": "system", "content": SYSTEM},
    {"role": "user", "content": "What do README.md and setup.py say?"},
    {
        "role": "assistant",
        "tool_calls": [
            call("call_readme", "read_file", README_ARGS),
            call("call_setup", "read_file", SETUP_ARGS),
        ],
    },
    {"role": "tool", "tool_call_id": "call_readme", "content": "# lossless\nBounded context."},
    {"role": "tool", "tool_call_id": "call_setup", "content": "from setuptools import setup"},
    {"role": "assistant", "content": "README describes lossless; setup.py uses setuptools."},
    {"role": "user", "content": "Now run the tests."},
    {
        "role": "assistant",
        "content": "Running them.",
        "tool_calls": [call("call_pytest", "shell", PYTEST_ARGS)],
    },
]
LATER_RESULT: list[dict[str, Any]] = [
    {"role": "tool", "tool_call_id": "call_pytest", "content": "12 passed in 0.4s"},
]


def tool_parts(message: Message) -> list[ToolPart]:
    return [part for part in message.parts if isinstance(part, ToolPart)]


# -- the round trip ------------------------------------------------------------------------


async def test_an_agent_history_comes_back_as_it_went_in(session: Session) -> None:
    results = await session.record_messages(AGENT_HISTORY)
    assert all(isinstance(result, RecordResult) for result in results)
    # The leading system message is the session's prompt: not stored again.
    assert [m.role for m in session.history()] == [
        "user",
        "assistant",
        "assistant",
        "user",
        "assistant",
    ]
    assert [result.message_id for result in results] == [m.id for m in session.history()]

    # The last call has no result yet: stored pending, shown as such to the model.
    last = tool_parts(session.history()[-1])
    assert [(p.call_id, p.status, p.output) for p in last] == [("call_pytest", "pending", None)]
    before = context_messages(session)
    assert_same_messages(before[:-1], AGENT_HISTORY)
    assert before[-1]["tool_call_id"] == "call_pytest"

    assert await session.record_messages(LATER_RESULT) == []
    assert_same_messages(context_messages(session), AGENT_HISTORY + LATER_RESULT)

    # The later result completed the open call; it is not a turn of its own.
    history = session.history()
    assert len(history) == 5
    assert [(p.call_id, p.status, p.output) for p in tool_parts(history[-1])] == [
        ("call_pytest", "completed", "12 passed in 0.4s")
    ]
    parallel = tool_parts(history[1])
    assert [(p.name, p.call_id, p.input, p.status) for p in parallel] == [
        ("read_file", "call_readme", README_ARGS, "completed"),
        ("read_file", "call_setup", SETUP_ARGS, "completed"),
    ]
    assert history[1].parts == parallel, "a reply of only tool calls has no text part"
    assert history[-1].parts[0] == TextPart("Running them.")


async def test_a_later_result_goes_through_update_tool(session: Session) -> None:
    await session.record("user", "list the files")
    await session.record("assistant", [ToolPart("ls", "call_ls", "{}", status="running")])
    updates: list[dict[str, Any]] = []
    session.events.subscribe(lambda event: updates.append(event.payload), EventName.TOOL_UPDATED)
    await session.record_messages([{"role": "tool", "tool_call_id": "call_ls", "content": "a.txt"}])
    assert updates == [{"call_id": "call_ls", "status": "completed"}]
    assert len(session.history()) == 2
    (part,) = tool_parts(session.history()[-1])
    assert (part.status, part.output) == ("completed", "a.txt")


async def test_a_result_arriving_after_other_turns_still_fills_its_call(session: Session) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "start the build"},
        {"role": "assistant", "tool_calls": [call("call_build", "make", "{}")]},
        {"role": "user", "content": "any news?"},
        {"role": "tool", "tool_call_id": "call_build", "content": "built"},
    ]
    results = await session.record_messages(messages)
    assert len(results) == 3
    (part,) = tool_parts(session.history()[1])
    assert (part.status, part.output) == ("completed", "built")
    # The chat format wants the result right after its call: that is where it goes.
    assert [m["role"] for m in session.build_context().messages] == [
        "system",
        "user",
        "assistant",
        "tool",
        "user",
    ]


async def test_a_reused_call_id_is_answered_call_by_call(session: Session) -> None:
    # Some providers number their call ids per reply, so an id comes back.
    messages: list[dict[str, Any]] = [
        {"role": "user", "content": "read two files, one at a time"},
        {"role": "assistant", "tool_calls": [call("call_0", "read", '{"p": "a"}')]},
        {"role": "tool", "tool_call_id": "call_0", "content": "A"},
        {"role": "assistant", "tool_calls": [call("call_0", "read", '{"p": "b"}')]},
        {"role": "tool", "tool_call_id": "call_0", "content": "B"},
    ]
    await session.record_messages(messages)
    # Stored as given; the request renames the repeat, on the call and on its result,
    # since providers refuse two tool calls with one id.
    stored = [
        part.call_id for m in session.history() for part in m.parts if hasattr(part, "call_id")
    ]
    assert stored == ["call_0", "call_0"]
    renamed = [dict(m) for m in messages]
    renamed[3] = {"role": "assistant", "tool_calls": [call("call_0_2", "read", '{"p": "b"}')]}
    renamed[4] = {"role": "tool", "tool_call_id": "call_0_2", "content": "B"}
    assert_same_messages(
        context_messages(session), [{"role": "system", "content": SYSTEM}, *renamed]
    )


async def test_text_content_parts_are_kept_as_parts(session: Session) -> None:
    await session.record_messages(
        [
            {
                "role": "user",
                "content": [{"type": "text", "text": "first"}, {"type": "text", "text": "second"}],
            },
            {"role": "assistant", "tool_calls": [call("call_x", "x", "")]},
            {
                "role": "tool",
                "tool_call_id": "call_x",
                "content": [{"type": "text", "text": "out 1"}, {"type": "text", "text": "out 2"}],
            },
        ]
    )
    user, assistant = session.history()
    assert user.parts == [TextPart("first"), TextPart("second")]
    (part,) = tool_parts(assistant)
    assert (part.input, part.output) == ("", "out 1\n\nout 2")
    # One message's text parts are sent as one content string, a blank line apart.
    assert session.build_context().messages[1]["content"] == "first\n\nsecond"


async def test_an_empty_assistant_reply_is_still_a_turn(session: Session) -> None:
    await session.record_messages(
        [{"role": "user", "content": "?"}, {"role": "assistant", "content": ""}]
    )
    assert [(m.role, m.parts) for m in session.history()] == [
        ("user", [TextPart("?")]),
        ("assistant", [TextPart("")]),
    ]


# -- system messages -----------------------------------------------------------------------


async def test_a_leading_system_message_is_stored_when_the_session_has_no_prompt(
    config: Config, db: Path
) -> None:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "Be brief."},
        {"role": "user", "content": "hi"},
        {"role": "assistant", "content": "hello"},
    ]
    async with Session.open(model=TEST_MODEL, db=db, config=config) as session:
        results = await session.record_messages(messages)
        assert len(results) == 3
        assert [m.role for m in session.history()] == ["system", "user", "assistant"]
        assert session.build_context().messages == messages


async def test_system_messages_other_than_the_prompt_are_stored_in_place(
    session: Session,
) -> None:
    await session.record_messages(
        [
            {"role": "system", "content": "A different prompt."},
            {"role": "user", "content": "hi"},
            {"role": "system", "content": SYSTEM},
        ]
    )
    # Only a leading repeat of the session's prompt is skipped; nothing else is dropped.
    assert [(m.role, m.text) for m in session.history()] == [
        ("system", "A different prompt."),
        ("user", "hi"),
        ("system", SYSTEM),
    ]
    assert session.build_context().messages == [
        {"role": "system", "content": SYSTEM},
        {"role": "system", "content": "A different prompt."},
        {"role": "user", "content": "hi"},
        {"role": "system", "content": SYSTEM},
    ]


# -- bad input -----------------------------------------------------------------------------

OK_USER = {"role": "user", "content": "fine"}
OK_CALL = {"role": "assistant", "tool_calls": [call("call_new", "ls", "{}")]}
BAD_INPUTS: dict[str, tuple[Any, str]] = {
    "not a list": ({"role": "user", "content": "hi"}, r"^messages:"),
    "not a message": ([OK_USER, "hello"], r"messages\[1\]"),
    "unknown role": ([OK_USER, {"role": "robot", "content": "beep"}], r"messages\[1\]\.role"),
    "developer role": ([{"role": "developer", "content": "x"}], r"messages\[0\]\.role"),
    "missing role": ([OK_USER, {"content": "hi"}], r"messages\[1\]\.role: missing"),
    "user without content": ([{"role": "user"}], r"messages\[0\]\.content: missing"),
    "content of a wrong type": ([{"role": "user", "content": 42}], r"messages\[0\]\.content"),
    "audio part": (
        [
            OK_USER,
            {
                "role": "user",
                "content": [
                    {"type": "text", "text": "what is this?"},
                    {"type": "input_audio", "input_audio": {"data": "AA==", "format": "wav"}},
                ],
            },
        ],
        r"messages\[1\]\.content\[1\].*'input_audio'",
    ),
    "image in an assistant message": (
        [
            OK_USER,
            {
                "role": "assistant",
                "content": [
                    {"type": "image_url", "image_url": {"url": "https://example.com/a.png"}},
                ],
            },
        ],
        r"messages\[1\]\.content\[0\].*'image_url'",
    ),
    "empty list of parts": ([{"role": "user", "content": []}], r"messages\[0\]\.content"),
    "assistant saying nothing": ([OK_USER, {"role": "assistant"}], r"messages\[1\]"),
    "arguments as a dict": (
        [
            OK_USER,
            {
                "role": "assistant",
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "ls", "arguments": {}}}
                ],
            },
        ],
        r"messages\[1\]\.tool_calls\[0\]\.function\.arguments",
    ),
    "call without id": (
        [{"role": "assistant", "tool_calls": [{"function": {"name": "ls", "arguments": ""}}]}],
        r"messages\[0\]\.tool_calls\[0\]\.id: missing",
    ),
    "call without function": (
        [{"role": "assistant", "tool_calls": [{"id": "c", "type": "function"}]}],
        r"messages\[0\]\.tool_calls\[0\]\.function: missing",
    ),
    "call without name": (
        [{"role": "assistant", "tool_calls": [{"id": "c", "function": {"arguments": ""}}]}],
        r"messages\[0\]\.tool_calls\[0\]\.function\.name: missing",
    ),
    "custom tool call": (
        [{"role": "assistant", "tool_calls": [{"id": "c", "type": "custom", "custom": {}}]}],
        r"messages\[0\]\.tool_calls\[0\]\.type",
    ),
    "same call id twice in one reply": (
        [{"role": "assistant", "tool_calls": [call("c", "ls", ""), call("c", "ls", "")]}],
        r"messages\[0\]\.tool_calls\[1\]\.id",
    ),
    "legacy function_call": (
        [{"role": "assistant", "content": None, "function_call": {"name": "ls", "arguments": ""}}],
        r"messages\[0\]\.function_call",
    ),
    "tool without tool_call_id": (
        [OK_CALL, {"role": "tool", "content": "x"}],
        r"messages\[1\]\.tool_call_id: missing",
    ),
    "tool without content": (
        [OK_CALL, {"role": "tool", "tool_call_id": "call_new"}],
        r"messages\[1\]\.content: missing",
    ),
    "tool answering no call": (
        [
            OK_USER,
            OK_CALL,
            {"role": "tool", "tool_call_id": "call_new", "content": "ok"},
            {"role": "tool", "tool_call_id": "call_nobody", "content": "lost"},
        ],
        r"messages\[3\]\.tool_call_id: 'call_nobody'",
    ),
    "tool before its call": (
        [{"role": "tool", "tool_call_id": "call_new", "content": "early"}, OK_CALL],
        r"messages\[0\]\.tool_call_id",
    ),
    "second result for one call": (
        [
            OK_CALL,
            {"role": "tool", "tool_call_id": "call_new", "content": "one"},
            {"role": "tool", "tool_call_id": "call_new", "content": "two"},
        ],
        r"messages\[2\]\.tool_call_id",
    ),
    "result for a call the session finished": (
        [{"role": "tool", "tool_call_id": "call_done", "content": "again"}],
        r"messages\[0\]\.tool_call_id: 'call_done'",
    ),
    "second result for an open call of the session": (
        [
            {"role": "tool", "tool_call_id": "call_open", "content": "one"},
            {"role": "tool", "tool_call_id": "call_open", "content": "two"},
        ],
        r"messages\[1\]\.tool_call_id: 'call_open'",
    ),
    "control character in a call id": (
        [{"role": "assistant", "tool_calls": [call("call\n1", "ls", "")]}],
        r"messages\[0\]\.tool_calls\[0\]\.id",
    ),
}


@pytest.mark.parametrize(("messages", "match"), BAD_INPUTS.values(), ids=BAD_INPUTS.keys())
async def test_bad_input_is_rejected_and_stores_nothing(
    session: Session, messages: Any, match: str
) -> None:
    await session.record("user", "earlier")
    await session.record(
        "assistant",
        [
            ToolPart("ls", "call_done", "{}", output="a.txt", status="completed"),
            ToolPart("ls", "call_open", "{}", status="pending"),
        ],
    )
    before = session.history()
    with pytest.raises(InvalidInputError, match=match) as info:
        await session.record_messages(messages)
    assert isinstance(info.value, ValueError)
    assert session.history() == before


async def test_record_messages_on_a_closed_session_raises(session: Session) -> None:
    await session.close()
    with pytest.raises(SessionClosedError):
        await session.record_messages([OK_USER])


# -- Session.open ----------------------------------------------------------------------------


async def test_open_creates_then_loads_the_same_session(config: Config, db: Path) -> None:
    async with Session.open(
        model=TEST_MODEL, db=db, config=config, system_prompt=SYSTEM
    ) as created:
        assert created.id.startswith("ses_")
        await created.record_messages(AGENT_HISTORY)
        history = created.history()
        context = created.build_context()
    assert created.closed

    async with Session.open(model=TEST_MODEL, db=db, session_id=created.id) as loaded:
        assert loaded.id == created.id
        assert loaded.system_prompt == SYSTEM
        assert loaded.history() == history
        assert loaded.build_context() == context
        # The open call left by the first run takes its result in the second.
        await loaded.record_messages(LATER_RESULT)
        assert_same_messages(context_messages(loaded), AGENT_HISTORY + LATER_RESULT)
    assert loaded.closed


async def test_open_closes_the_session_when_the_body_raises(config: Config, db: Path) -> None:
    with pytest.raises(RuntimeError, match="agent crashed"):
        async with Session.open(model=TEST_MODEL, db=db, config=config) as session:
            raise RuntimeError("agent crashed")
    assert session.closed


async def test_open_rejects_a_model_or_prompt_the_stored_session_does_not_have(
    config: Config, db: Path
) -> None:
    async with Session.open(
        model=TEST_MODEL, db=db, config=config, system_prompt=SYSTEM
    ) as created:
        pass
    events = len(Store(db).native.events(created.id))
    with pytest.raises(InvalidInputError, match="model"):
        async with Session.open(model="openai/another", db=db, session_id=created.id):
            pytest.fail("the body must not run")
    with pytest.raises(InvalidInputError, match="system_prompt"):
        async with Session.open(
            model=TEST_MODEL, db=db, session_id=created.id, system_prompt="Other."
        ):
            pytest.fail("the body must not run")
    # Refused before anything was flagged or published.
    assert len(Store(db).native.events(created.id)) == events
    with pytest.raises(SessionNotFoundError):
        async with Session.open(model=TEST_MODEL, db=db, session_id="ses_doesnotexist"):
            pytest.fail("the body must not run")


# -- typed messages from openai and litellm ------------------------------------------------


async def test_openai_typed_messages_are_accepted(session: Session) -> None:
    from openai.types.chat import (
        ChatCompletionAssistantMessageParam,
        ChatCompletionMessage,
        ChatCompletionMessageFunctionToolCall,
        ChatCompletionMessageFunctionToolCallParam,
        ChatCompletionMessageParam,
        ChatCompletionSystemMessageParam,
        ChatCompletionToolMessageParam,
        ChatCompletionUserMessageParam,
    )
    from openai.types.chat.chat_completion_message_function_tool_call import Function

    messages: list[ChatCompletionMessageParam] = [
        ChatCompletionSystemMessageParam(role="system", content=SYSTEM),
        ChatCompletionUserMessageParam(
            role="user", content=[{"type": "text", "text": "Read a.txt"}]
        ),
        ChatCompletionAssistantMessageParam(
            role="assistant",
            tool_calls=[
                ChatCompletionMessageFunctionToolCallParam(
                    id="call_a",
                    type="function",
                    function={"name": "read_file", "arguments": '{"path": "a.txt"}'},
                )
            ],
        ),
        ChatCompletionToolMessageParam(role="tool", tool_call_id="call_a", content="A!"),
    ]
    # The response object a model call returns, appended as is.
    reply = ChatCompletionMessage(
        role="assistant",
        content="It says A!",
        tool_calls=[
            ChatCompletionMessageFunctionToolCall(
                id="call_b",
                type="function",
                function=Function(name="read_file", arguments='{"path": "b.txt"}'),
            )
        ],
    )
    await session.record_messages([*messages, reply])
    context = context_messages(session)
    assert context[1] == {"role": "user", "content": "Read a.txt"}
    assert_same_messages(context[2:4], [dict(messages[2]), dict(messages[3])])
    assert context[4]["content"] == "It says A!"
    assert context[4]["tool_calls"] == [reply.model_dump()["tool_calls"][0]]
    (pending,) = tool_parts(session.history()[-1])
    assert (pending.call_id, pending.status) == ("call_b", "pending")


async def test_litellm_message_objects_are_accepted(session: Session) -> None:
    from litellm.types.utils import Message as LiteLLMMessage

    reply = LiteLLMMessage(
        role="assistant",
        content=None,
        tool_calls=[call("call_l", "grep", '{"q": "TODO"}')],
    )
    answer = LiteLLMMessage(role="assistant", content="Two TODOs.")
    messages: list[Any] = [
        {"role": "user", "content": "find TODOs"},
        reply,
        {"role": "tool", "tool_call_id": "call_l", "content": "2 hits"},
        answer,
    ]
    await session.record_messages(messages)
    assert_same_messages(
        context_messages(session)[1:],
        [
            {"role": "user", "content": "find TODOs"},
            {"role": "assistant", "tool_calls": [call("call_l", "grep", '{"q": "TODO"}')]},
            {"role": "tool", "tool_call_id": "call_l", "content": "2 hits"},
            {"role": "assistant", "content": "Two TODOs."},
        ],
    )
    # An agent loop often rebuilds the dict around the response's own tool call objects.
    await session.record_messages(
        [{"role": "assistant", "content": "Again.", "tool_calls": reply.tool_calls}]
    )
    (part,) = tool_parts(session.history()[-1])
    assert (part.call_id, part.input) == ("call_l", '{"q": "TODO"}')
    assert json.loads(str(part.input)) == {"q": "TODO"}
