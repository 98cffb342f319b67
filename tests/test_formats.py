"""Requests in Anthropic Messages and OpenAI Responses formats, and histories read
in from them: judged by the providers' SDK types, the local server's provider
checks and the SDK clients themselves, over both backends."""

from __future__ import annotations

import os

os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.responses import FunctionToolParam, ResponseInputParam

from lossless import ReasoningPart, Session
from lossless.config import Config, ModelConfig
from lossless.errors import InvalidInputError
from lossless.testing._anthropic_checks import refusal
from lossless.testing._responses import ResponsesFormat
from lossless.testing._signing import Signer

anthropic = pytest.importorskip("anthropic")
from anthropic.types import MessageParam, TextBlockParam, ToolParam  # noqa: E402

pytestmark = [pytest.mark.both_backends]

CLAUDE = "claude-sonnet-4-5"
GPT = "gpt-5"
THINKING = {"type": "enabled", "budget_tokens": 1024}
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read",
            "description": "Read a file.",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]
SIGNER = Signer()

anthropic_messages = pydantic.TypeAdapter(list[MessageParam])
anthropic_system = pydantic.TypeAdapter(list[TextBlockParam])
anthropic_tools = pydantic.TypeAdapter(list[ToolParam])
responses_input = pydantic.TypeAdapter(ResponseInputParam)
responses_tools = pydantic.TypeAdapter(list[FunctionToolParam])


def config() -> Config:
    return Config(
        model=ModelConfig(context_limit=200_000, max_output_tokens=4_000, profile="default")
    )


def without_marks(value: Any) -> Any:
    """``value`` with every ``cache_control`` mark taken out."""
    if isinstance(value, list):
        return [without_marks(item) for item in value]
    if isinstance(value, dict):
        return {k: without_marks(v) for k, v in value.items() if k != "cache_control"}
    return value


# -- random tool-run histories -----------------------------------------------------------

_WORDS = st.text(alphabet="abcdefghij klmnop", min_size=1, max_size=30).filter(str.strip)
_INPUTS = st.dictionaries(
    st.text(alphabet="abcxyz", min_size=1, max_size=4),
    st.integers(-5, 5) | _WORDS,
    max_size=3,
)
# A history: user turns, each followed by a tool loop (steps of calls and their
# results, each step with or without reasoning and text) and maybe a final answer.
_STEP = st.tuples(
    st.booleans(), st.booleans(), st.lists(st.tuples(_INPUTS, _WORDS), min_size=1, max_size=2)
)
_TURN = st.tuples(_WORDS, st.lists(_STEP, max_size=3), st.one_of(st.none(), _WORDS))
_HISTORY = st.lists(_TURN, min_size=1, max_size=4).map(
    # Two user texts in a row are one Anthropic turn, which comes back as one text
    # (its blocks joined): a turn before another has a step or an answer.
    lambda turns: [
        (text, steps, "done" if not steps and answer is None and n + 1 < len(turns) else answer)
        for n, (text, steps, answer) in enumerate(turns)
    ]
)

Turn = tuple[str, list[tuple[bool, bool, list[tuple[dict[str, Any], str]]]], str | None]


def anthropic_history(history: list[Turn]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A history as Anthropic messages (results merged with the user text after
    them), and what a request gives back: reasoning only after the newest user text."""
    messages: list[dict[str, Any]] = []
    expected: list[dict[str, Any]] = []
    count = 0

    def add(role: str, blocks: list[dict[str, Any]], kept: list[dict[str, Any]]) -> None:
        for target, content in ((messages, blocks), (expected, kept)):
            if target and target[-1]["role"] == role:
                target[-1]["content"].extend(content)
            else:
                target.append({"role": role, "content": list(content)})

    for number, (text, steps, answer) in enumerate(history):
        last = number == len(history) - 1
        user = [{"type": "text", "text": text}]
        add("user", user, user)
        for thinks, says, calls in steps:
            blocks: list[dict[str, Any]] = []
            if thinks:
                thought = f"thought {count}"
                signed = {
                    "type": "thinking",
                    "thinking": thought,
                    "signature": SIGNER.sign(thought),
                }
                blocks.append(signed)
            if says:
                blocks.append({"type": "text", "text": f"step {count}"})
            results = []
            for arguments, output in calls:
                count += 1
                call_id = f"toolu_{count}"
                blocks.append(
                    {"type": "tool_use", "id": call_id, "name": "read", "input": arguments}
                )
                results.append({"type": "tool_result", "tool_use_id": call_id, "content": output})
            kept = [b for b in blocks if last or b["type"] != "thinking"]
            add("assistant", blocks, kept)
            add("user", results, results)
        if answer is not None:
            block = [{"type": "text", "text": answer}]
            # Anthropic refuses a final assistant text ending in white space.
            final = [{"type": "text", "text": answer.rstrip() if last else answer}]
            add("assistant", block, final)
    return messages, expected


def responses_history(history: list[Turn]) -> tuple[list[dict[str, Any]], list[dict[str, Any]]]:
    """A history as Responses input items, and what a request gives back."""
    items: list[dict[str, Any]] = []
    expected: list[dict[str, Any]] = []
    count = 0
    for number, (text, steps, answer) in enumerate(history):
        last = number == len(history) - 1
        user = {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_text", "text": text}],
        }
        items.append(user)
        expected.append(user)
        for thinks, says, calls in steps:
            if thinks:
                reasoning = {
                    "id": f"rs_{count}",
                    "type": "reasoning",
                    "summary": [{"type": "summary_text", "text": f"thought {count}"}],
                    "encrypted_content": SIGNER.seal(f"thought {count}"),
                }
                items.append(reasoning)
                if last:
                    expected.append(reasoning)
            if says:
                said = {"type": "message", "role": "assistant", "content": f"step {count}"}
                items.append(said)
                expected.append(said)
            outputs = []
            for arguments, output in calls:
                count += 1
                call = {
                    "type": "function_call",
                    "call_id": f"call_{count}",
                    "name": "read",
                    "arguments": json.dumps(arguments, separators=(",", ":")),
                }
                items.append(call)
                expected.append(call)
                outputs.append(
                    {"type": "function_call_output", "call_id": f"call_{count}", "output": output}
                )
            items.extend(outputs)
            expected.extend(outputs)
        if answer is not None:
            said = {"type": "message", "role": "assistant", "content": answer}
            items.append(said)
            expected.append(said)
    return items, expected


def thinks(messages: list[dict[str, Any]]) -> bool:
    """Whether a request of ``messages`` may turn thinking on: its last assistant
    turn, if it calls tools, opens with its thinking."""
    assistants = [m["content"] for m in messages if m["role"] == "assistant"]
    if not assistants or all(block["type"] != "tool_use" for block in assistants[-1]):
        return True
    return bool(assistants[-1][0]["type"] == "thinking")


def check_anthropic(request: Any) -> None:
    """What Anthropic's SDK types and the server's provider checks say of a request
    (with thinking on when the history was made with it)."""
    anthropic_messages.validate_python(request["messages"])
    if "system" in request:
        anthropic_system.validate_python(request["system"])
    if "tools" in request:
        anthropic_tools.validate_python(request["tools"])
    thinking = THINKING if thinks(request["messages"]) else {"type": "disabled"}
    body = {"model": CLAUDE, "max_tokens": 4_000, "thinking": thinking, **request}
    assert refusal(body, SIGNER) is None


def check_responses(request: Any) -> None:
    """What the Responses SDK types and the server's provider checks say of a request."""
    responses_input.validate_python(request["input"])
    if "tools" in request:
        responses_tools.validate_python(request["tools"])
    body = {"model": GPT, "store": False, **request}
    assert ResponsesFormat(SIGNER).check(body) is None


def repeats_a_call(history: list[Turn]) -> bool:
    """Whether a step calls the same tool with the same input twice: Chat Completions
    then splits the step in two (decision 35), which the other formats join again."""
    return any(
        len({json.dumps(arguments, sort_keys=True) for arguments, _ in calls}) < len(calls)
        for _, steps, _ in history
        for _, _, calls in steps
    )


def litellm_anthropic(chat: list[dict[str, Any]]) -> dict[str, Any]:
    """litellm's Anthropic transformation of the same request in Chat Completions."""
    import litellm

    return dict(
        litellm.AnthropicConfig().transform_request(
            model=CLAUDE,
            messages=chat,
            optional_params={"max_tokens": 4_000},
            litellm_params={},
            headers={},
        )
    )


def litellm_reading(items: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """What litellm's Responses transformation reads from input items, as (role,
    text, calls, answered call)."""
    from litellm.responses.litellm_completion_transformation.transformation import (
        LiteLLMCompletionResponsesConfig,
    )

    read = LiteLLMCompletionResponsesConfig.transform_responses_api_input_to_messages(
        input=items, responses_api_request={}
    )
    return shape([dict(message) for message in read])


def shape(messages: list[dict[str, Any]]) -> list[tuple[Any, ...]]:
    """Chat messages as (role, text, calls, answered call), text parts joined."""

    def text(content: Any) -> Any:
        if isinstance(content, list):
            return "".join(part.get("text", "") for part in content) or None
        return content or None

    def calls(message: dict[str, Any]) -> list[tuple[Any, ...]]:
        return [
            (c["id"], c["function"]["name"], c["function"]["arguments"])
            for c in message.get("tool_calls") or []
        ]

    return [(m["role"], text(m.get("content")), calls(m), m.get("tool_call_id")) for m in messages]


def run(db: Path | str, body: Callable[[Path | str], Any]) -> None:
    anyio.run(body, db)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(history=_HISTORY, system=st.booleans())
def test_an_anthropic_history_comes_back_as_it_went_in(
    db: Path | str, history: list[Turn], system: bool
) -> None:
    messages, expected = anthropic_history(history)
    prompt = [{"type": "text", "text": "You read files."}] if system else None

    async def body(db: Path | str) -> None:
        async with Session.open(model=CLAUDE, db=db, config=config()) as session:
            await session.record_messages(messages, system=prompt)
            request = await session.context(format="anthropic", tools=TOOLS)
            assert without_marks(request.messages) == expected
            assert without_marks(request.system) == (prompt or [])
            check_anthropic(request)
            # litellm's transformation of the same request in Chat Completions.
            theirs = litellm_anthropic(session.build_context().messages)
            if not repeats_a_call(history):
                assert without_marks(request.messages) == theirs["messages"]
            assert without_marks(request.system) == (theirs.get("system") or [])
            # The one cache mark: the end of the history.
            assert json.dumps(request.messages).count("cache_control") == 1
            assert "cache_control" in request.messages[-1]["content"][-1]

    run(db, body)


@settings(
    max_examples=25, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture]
)
@given(history=_HISTORY, system=st.booleans())
def test_a_responses_history_comes_back_as_it_went_in(
    db: Path | str, history: list[Turn], system: bool
) -> None:
    items, expected = responses_history(history)
    if system:
        lead = {
            "type": "message",
            "role": "system",
            "content": [{"type": "input_text", "text": "Read."}],
        }
        items, expected = [lead, *items], [lead, *expected]

    async def body(db: Path | str) -> None:
        async with Session.open(model=GPT, db=db, config=config()) as session:
            await session.record_messages(items)
            request = await session.context(format="responses", tools=TOOLS)
            assert request.input == expected
            check_responses(request)
            # litellm reads the items as the same request in Chat Completions.
            chat = session.build_context().messages
            if not repeats_a_call(history):
                # (litellm reads a reasoning item as user text: left out here.)
                plain = [item for item in request.input if item["type"] != "reasoning"]
                assert litellm_reading(plain) == shape(chat)

    run(db, body)


# -- reading formats in ------------------------------------------------------------------


@pytest.mark.anyio
async def test_reasoning_is_kept_verbatim_as_parts_of_its_provider(db: Path | str) -> None:
    signed = {"type": "thinking", "thinking": "look", "signature": SIGNER.sign("look")}
    item = {"id": "rs_1", "type": "reasoning", "summary": [{"type": "summary_text", "text": "hm"}]}
    call = {"type": "function_call", "call_id": "c1", "name": "read", "arguments": "{}"}
    async with Session.open(model=CLAUDE, db=db, config=config()) as session:
        await session.record_messages(
            [
                {"role": "user", "content": "go"},
                {"role": "assistant", "content": [signed, {"type": "text", "text": "ok"}]},
            ]
        )
        await session.record_messages(
            [item, call, {"type": "function_call_output", "call_id": "c1", "output": "x"}]
        )
        parts = [part for message in session.history() for part in message.parts]
    reasoning = [part for part in parts if isinstance(part, ReasoningPart)]
    assert [(part.provider, json.loads(str(part.payload)), part.text) for part in reasoning] == [
        ("anthropic", signed, "look"),
        ("openai", item, "hm"),
    ]


@pytest.mark.anyio
@pytest.mark.parametrize(
    "messages",
    [
        [
            {"role": "user", "content": [{"type": "input_text", "text": "a"}]},
            {
                "role": "assistant",
                "content": [{"type": "tool_use", "id": "t", "name": "r", "input": {}}],
            },
        ],
        [
            {"role": "assistant", "content": None, "tool_calls": []},
            {"type": "function_call_output", "call_id": "c", "output": "x"},
        ],
        [{"role": "user", "content": "hi"}, {"type": "web_search_call"}],
    ],
)
async def test_a_mixed_or_unknown_list_is_refused_and_stores_nothing(
    db: Path | str, messages: list[dict[str, Any]]
) -> None:
    async with Session.open(model=CLAUDE, db=db, config=config()) as session:
        with pytest.raises(InvalidInputError):
            await session.record_messages(messages)
        assert session.history() == []


@pytest.mark.anyio
async def test_plain_messages_read_as_chat_completions_in_every_format(db: Path | str) -> None:
    plain = [{"role": "user", "content": "hi"}, {"role": "assistant", "content": "hello"}]
    async with Session.open(model=CLAUDE, db=db, config=config()) as session:
        for name in ("openai", "anthropic", "responses", None):
            await session.record_messages(plain, format=name)  # type: ignore[arg-type]
        assert [m.text for m in session.history()] == ["hi", "hello"] * 4
        with pytest.raises(InvalidInputError, match="format"):
            await session.record_messages(plain, format="gemini")  # type: ignore[arg-type]
        with pytest.raises(InvalidInputError, match="system"):
            await session.record_messages(plain, format="responses", system="x")
        with pytest.raises(InvalidInputError, match="format"):
            session.build_context(format="gemini")  # type: ignore[call-overload]
        with pytest.raises(InvalidInputError, match="format"):
            await session.context(format="gemini")  # type: ignore[call-overload]


PIXEL = "iVBORw0KGgo="


def test_images_and_documents_in_become_chat_completions_content_parts() -> None:
    from lossless import anthropic_format, responses_format

    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": PIXEL},
    }
    doc = {
        "type": "document",
        "source": {"type": "url", "url": "https://example.com/r.pdf"},
        "title": "r.pdf",
    }
    result = {
        "type": "tool_result",
        "tool_use_id": "t",
        "content": [{"type": "text", "text": "shot"}, image],
    }
    converted = anthropic_format.to_openai(
        [{"role": "user", "content": [result, {"type": "text", "text": "see"}, doc]}]
    )
    assert converted == [
        {
            "role": "tool",
            "tool_call_id": "t",
            "content": [
                {"type": "text", "text": "shot"},
                {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{PIXEL}"}},
            ],
        },
        {
            "role": "user",
            "content": [
                {"type": "text", "text": "see"},
                {
                    "type": "file",
                    "file": {"file_data": "https://example.com/r.pdf", "filename": "r.pdf"},
                },
            ],
        },
    ]
    items = [
        {
            "type": "message",
            "role": "user",
            "content": [{"type": "input_image", "image_url": "https://x/a.png", "detail": "auto"}],
        },
        {
            "type": "function_call_output",
            "call_id": "c",
            "output": [
                {
                    "type": "input_file",
                    "file_data": "data:application/pdf;base64,JVBE",
                    "filename": "a.pdf",
                }
            ],
        },
    ]
    assert responses_format.to_openai(items) == [
        {
            "role": "user",
            "content": [{"type": "image_url", "image_url": {"url": "https://x/a.png"}}],
        },
        {
            "role": "tool",
            "tool_call_id": "c",
            "content": [
                {
                    "type": "file",
                    "file": {"file_data": "data:application/pdf;base64,JVBE", "filename": "a.pdf"},
                }
            ],
        },
    ]


@pytest.mark.anyio
async def test_a_screenshot_in_a_tool_result_goes_round_each_format(db: Path | str) -> None:
    """A computer-use step read in as Anthropic Messages: the screenshot inside the
    tool result is stored once, read back byte for byte, and goes out inline inside
    the tool result in Anthropic's format, as an input image of the call's output in
    the Responses format, and in a user message after the tool message in Chat
    Completions."""
    import base64

    from lossless.testing import screenshot

    shot = screenshot(320, 200, seed=4)
    encoded = base64.b64encode(shot).decode()
    image = {
        "type": "image",
        "source": {"type": "base64", "media_type": "image/png", "data": encoded},
    }
    history = [
        {"role": "user", "content": "Open the dashboard."},
        {
            "role": "assistant",
            "content": [{"type": "tool_use", "id": "toolu_1", "name": "screenshot", "input": {}}],
        },
        {
            "role": "user",
            "content": [
                {
                    "type": "tool_result",
                    "tool_use_id": "toolu_1",
                    "content": [{"type": "text", "text": "the dashboard"}, image],
                }
            ],
        },
    ]
    async with Session.open(model=CLAUDE, db=db, config=config()) as session:
        await session.record_messages(history, format="anthropic")
        media = [
            part for message in session.history() for part in message.parts if part.kind == "media"
        ]
        assert len(media) == 1 and media[0].media_id is not None
        assert await session.read_media(media[0].media_id) == shot

        out = session.build_context(format="anthropic")
        anthropic_messages.validate_python(out["messages"])
        result = out["messages"][-1]["content"][0]
        assert result["type"] == "tool_result"
        sent = [block for block in result["content"] if block["type"] == "image"]
        assert [block["source"]["data"] for block in sent] == [encoded]

        items = session.build_context(format="responses")["input"]
        responses_input.validate_python(items)
        output = next(item for item in items if item.get("type") == "function_call_output")
        images = [part for part in output["output"] if part["type"] == "input_image"]
        assert [part["image_url"] for part in images] == [f"data:image/png;base64,{encoded}"]

        chat = session.build_context().messages
        assert chat[-2]["role"] == "tool"
        assert chat[-1]["role"] == "user"
        assert chat[-1]["content"][-1]["image_url"]["url"] == f"data:image/png;base64,{encoded}"


@pytest.mark.anyio
async def test_a_provider_compaction_goes_round_its_own_format(db: Path | str) -> None:
    """A Responses compaction item and an Anthropic compaction block read in are
    kept verbatim, stand in for what precedes them, and go back to their provider
    in its format, unchanged; what they stand for stays stored."""
    item = {"type": "compaction", "encrypted_content": SIGNER.seal("the story so far")}
    history = [
        {"role": "user", "content": "Plan the migration."},
        {"type": "message", "role": "assistant", "content": "A first plan."},
        item,
        {"type": "message", "role": "assistant", "content": "Compacted."},
        {"role": "user", "content": "Go on."},
    ]
    async with Session.open(model=GPT, db=db, config=config()) as session:
        await session.record_messages(history, format="responses")
        kinds = [part.kind for message in session.history() for part in message.parts]
        assert "provider_compaction" in kinds and len(session.history()) == 4
        items = session.build_context(format="responses")["input"]
        responses_input.validate_python(items)
        assert item in items
        assert "A first plan." not in json.dumps(items)
        assert "Go on." in json.dumps(items[-1])

    block = {"type": "compaction", "content": "The plan so far.", "signature": "c2ln"}
    turns = [
        {"role": "user", "content": [{"type": "text", "text": "Plan the migration."}]},
        {"role": "assistant", "content": [{"type": "text", "text": "A first plan."}]},
        {"role": "user", "content": [{"type": "text", "text": "More."}]},
        {"role": "assistant", "content": [block, {"type": "text", "text": "Compacted."}]},
        {"role": "user", "content": [{"type": "text", "text": "Go on."}]},
    ]
    async with Session.open(model=CLAUDE, db=db, config=config()) as session:
        await session.record_messages(turns, format="anthropic")
        out = session.build_context(format="anthropic")
        anthropic_messages.validate_python(out["messages"])
        assistants = [m for m in out["messages"] if m["role"] == "assistant"]
        assert assistants[-1]["content"][0] == block
        assert "A first plan." not in json.dumps(out["messages"])
