"""The local server's three wire formats, driven through litellm and the official SDKs.

Chat Completions (``openai/`` models), Anthropic Messages (``anthropic/`` models at
``anthropic_base_url``) and OpenAI Responses (``litellm.aresponses``): one ``Reply``
rendered in each, reasoning signed and carried back through a tool loop, and every
refusal the server makes the way the provider does reaching the client as the
provider's error.
"""

from __future__ import annotations

import os

# litellm fetches its model price map over the network at import unless told otherwise.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

import json
from typing import Any

import httpx
import litellm
import openai
import pytest

from lossless.testing import LocalLLMServer, Reply, ToolCallSpec

anthropic = pytest.importorskip("anthropic")

litellm.suppress_debug_info = True

pytestmark = [
    pytest.mark.timeout(60),
    pytest.mark.anyio,
    pytest.mark.filterwarnings(
        "ignore:Items? .* (is|are) using the `ReadOnly` qualifier:UserWarning"
    ),
    # litellm's logging of a streamed Responses call dumps a usage it rebuilt itself
    # (with its cost) into a field typed otherwise; pydantic warns about litellm's data.
    pytest.mark.filterwarnings("ignore:Pydantic serializer warnings:UserWarning"),
]

CLAUDE = "anthropic/claude-sonnet-4-5"
THINKING = {"type": "enabled", "budget_tokens": 1024}
WEATHER = ToolCallSpec("get_weather", {"city": "Paris"})
CHAT_TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "get_weather",
            "parameters": {"type": "object", "properties": {"city": {"type": "string"}}},
        },
    }
]
RESPONSES_TOOLS = [{"type": "function", **CHAT_TOOLS[0]["function"]}]
ASK = [{"role": "user", "content": "What is the weather in Paris?"}]
NO_RETRIES: dict[str, Any] = {"num_retries": 0, "max_retries": 0}
# A 1x1 PNG, base64: an image litellm inlines without fetching anything.
PIXEL_PNG = (
    "iVBORw0KGgoAAAANSUhEUgAAAAEAAAABCAYAAAAfFcSJAAAADUlEQVR42mP8/5+hHgAHggJ/"
    "PchI7wAAAABJRU5ErkJggg=="
)


async def claude(server: LocalLLMServer, messages: list[Any], **extra: Any) -> Any:
    """litellm's ``anthropic/`` route to the server, thinking on, tools offered."""
    kwargs = {"tools": CHAT_TOOLS, "thinking": THINKING, **NO_RETRIES, **extra}
    api = {"api_base": server.anthropic_base_url, "api_key": "test"}
    return await litellm.acompletion(model=CLAUDE, messages=messages, **api, **kwargs)


async def responses(server: LocalLLMServer, items: Any, **extra: Any) -> Any:
    """``litellm.aresponses`` to the server, stateless, with encrypted reasoning."""
    kwargs: dict[str, Any] = {
        "include": ["reasoning.encrypted_content"],
        "store": False,
        "tools": RESPONSES_TOOLS,
        **NO_RETRIES,
        **extra,
    }
    api = {"api_base": server.base_url, "api_key": "test"}
    return await litellm.aresponses(model="openai/gpt-5", input=items, **api, **kwargs)


def anthropic_client(server: LocalLLMServer) -> Any:
    return anthropic.AsyncAnthropic(
        base_url=server.anthropic_base_url, api_key="test", max_retries=0
    )


def openai_client(server: LocalLLMServer) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=server.base_url, api_key="test", max_retries=0)


def dumped(items: list[Any]) -> list[dict[str, Any]]:
    """Output items or blocks as the plain dicts a client sends back."""
    return [item.model_dump(exclude_none=True) for item in items]


# -- Chat Completions: reasoning ---------------------------------------------------------


async def test_chat_reply_carries_reasoning_content(server: LocalLLMServer) -> None:
    server.enqueue(Reply(text="Sunny.", reasoning="The user wants weather."))
    api = {"api_base": server.base_url, "api_key": "test", **NO_RETRIES}
    response = await litellm.acompletion(model="openai/gpt-x", messages=ASK, **api)
    message = response.choices[0].message
    assert (message.content, message.reasoning_content) == ("Sunny.", "The user wants weather.")
    assert not getattr(message, "thinking_blocks", None)  # not an Anthropic-style model
    assert response.usage.completion_tokens_details.reasoning_tokens > 0
    assert server.recorded[0].format == "chat"


@pytest.mark.parametrize("stream", [False, True])
async def test_chat_claude_model_gets_signed_thinking_blocks(
    server: LocalLLMServer, stream: bool
) -> None:
    server.enqueue(Reply(text="Sunny.", reasoning="Look it up first."))
    api = {"api_base": server.base_url, "api_key": "test", **NO_RETRIES}
    response = await litellm.acompletion(
        model="openai/claude-relay", messages=ASK, stream=stream, **api
    )
    if stream:
        response = litellm.stream_chunk_builder([chunk async for chunk in response], ASK)
    message = response.choices[0].message
    assert message.reasoning_content == "Look it up first."
    [block] = message.thinking_blocks
    assert block["thinking"] == "Look it up first." and block["signature"]
    # The same server's Anthropic endpoint takes the signature back.
    server.enqueue(Reply(text="ok"))
    turn = {"role": "assistant", "content": [block, {"type": "text", "text": "Sunny."}]}
    body = {"model": "c", "max_tokens": 2048, "thinking": THINKING, "messages": [ASK[0], turn]}
    body["messages"].append({"role": "user", "content": "thanks"})
    async with httpx.AsyncClient(base_url=server.anthropic_base_url) as client:
        assert (await client.post("/v1/messages", json=body)).status_code == 200


# -- Anthropic Messages through litellm -------------------------------------------------


async def test_anthropic_reply_through_litellm(server: LocalLLMServer) -> None:
    server.enqueue(Reply(text="Sunny.", reasoning="Think first.", prompt_tokens=40))
    response = await claude(server, ASK)
    message = response.choices[0].message
    assert (message.content, message.reasoning_content) == ("Sunny.", "Think first.")
    [block] = message.thinking_blocks
    assert block["type"] == "thinking" and block["signature"]
    assert response.choices[0].finish_reason == "stop"
    assert response.usage.prompt_tokens == 40
    [recorded] = server.recorded
    assert (recorded.format, recorded.path, recorded.refusal) == ("anthropic", "/v1/messages", None)
    assert recorded.body["thinking"] == THINKING and recorded.body["max_tokens"] > 1024
    assert server.requests_to("anthropic") == [recorded.body] and not server.requests_to("chat")


async def test_anthropic_without_thinking_leaves_reasoning_out(server: LocalLLMServer) -> None:
    server.enqueue(Reply(text="Sunny.", reasoning="unseen"))
    response = await claude(server, ASK, thinking=None)
    assert response.choices[0].message.content == "Sunny."
    assert not getattr(response.choices[0].message, "reasoning_content", None)


async def test_anthropic_request_blocks_from_litellm(server: LocalLLMServer) -> None:
    pixel = "data:image/png;base64," + PIXEL_PNG
    cached = {"type": "text", "text": "Be brief.", "cache_control": {"type": "ephemeral"}}
    parts = [
        {"type": "text", "text": "What is this?"},
        {"type": "image_url", "image_url": {"url": pixel}},
    ]
    messages = [{"role": "system", "content": [cached]}, {"role": "user", "content": parts}]
    await claude(server, messages, thinking=None)
    body = server.requests_to("anthropic")[0]
    assert body["system"][0]["cache_control"] == {"type": "ephemeral"}
    assert [block["type"] for block in body["messages"][0]["content"]] == ["text", "image"]
    assert server.prefixes[0].messages == 2  # the system prompt and the user's turn


async def test_anthropic_tool_loop_carries_thinking_back(server: LocalLLMServer) -> None:
    server.enqueue(Reply(reasoning="I need the weather.", tool_calls=[WEATHER]))
    chunks = [chunk async for chunk in await claude(server, ASK, stream=True)]
    first = litellm.stream_chunk_builder(chunks, ASK).choices[0].message
    [call] = first.tool_calls
    assert (call.function.name, json.loads(call.function.arguments)) == (
        "get_weather",
        WEATHER.arguments,
    )
    assert first.thinking_blocks[0]["thinking"] == "I need the weather."

    server.enqueue(Reply(text="It is sunny in Paris."))
    result = {"role": "tool", "tool_call_id": call.id, "content": "sunny, 24 C"}
    history = [*ASK, first.model_dump(exclude_none=True), result]
    second = await claude(server, history)
    assert second.choices[0].message.content == "It is sunny in Paris."
    assistant = server.requests[-1]["messages"][1]["content"]
    assert [block["type"] for block in assistant] == ["thinking", "tool_use"]


async def test_anthropic_refusals_reach_litellm(server: LocalLLMServer) -> None:
    server.enqueue(Reply(reasoning="Check the sky.", tool_calls=[WEATHER]))
    first = (await claude(server, ASK)).choices[0].message
    result = {"role": "tool", "tool_call_id": first.tool_calls[0].id, "content": "sunny"}
    bare = first.model_dump(exclude_none=True)
    del bare["thinking_blocks"], bare["reasoning_content"]
    with pytest.raises(litellm.BadRequestError, match="Expected `thinking` or `redacted_thinking`"):
        await claude(server, [*ASK, bare, result])
    altered = first.model_dump(exclude_none=True)
    altered["thinking_blocks"] = [{**first.thinking_blocks[0], "thinking": "Check the sea."}]
    with pytest.raises(litellm.BadRequestError, match="Invalid `signature` in `thinking` block"):
        await claude(server, [*ASK, altered, result])
    assert [r.refusal is not None for r in server.recorded] == [False, True, True]
    assert server.pending_replies == 0


async def test_anthropic_status_errors_keep_their_kind(server: LocalLLMServer) -> None:
    server.enqueue(Reply(status=429, text="slow down"), Reply(status=529, text="busy"))
    with pytest.raises(litellm.RateLimitError, match="slow down"):
        await claude(server, ASK)
    async with anthropic_client(server) as client:
        with pytest.raises(anthropic.APIStatusError) as caught:
            await client.messages.create(model="c", max_tokens=64, messages=ASK)
    assert caught.value.status_code == 529
    assert caught.value.body["error"] == {"type": "overloaded_error", "message": "busy"}


# -- Anthropic Messages through the anthropic SDK -----------------------------------------


async def test_anthropic_sdk_stream_events_and_message(server: LocalLLMServer) -> None:
    server.enqueue(
        Reply(text="Calling the tool now.", reasoning="Weather needs a tool.", tool_calls=[WEATHER])
    )
    tools = [{"name": "get_weather", "input_schema": {"type": "object"}}]
    async with (
        anthropic_client(server) as client,
        client.messages.stream(
            model="c", max_tokens=2048, thinking=THINKING, tools=tools, messages=ASK
        ) as stream,
    ):
        kinds = [(event.type, getattr(event, "delta", None)) async for event in stream]
        message = await stream.get_final_message()
    raw = [kind for kind, _ in kinds]
    assert raw[0] == "message_start" and raw[-1] == "message_stop"
    deltas = {delta.type for _, delta in kinds if delta is not None and hasattr(delta, "type")}
    assert {"thinking_delta", "signature_delta", "text_delta", "input_json_delta"} <= deltas
    assert [block.type for block in message.content] == ["thinking", "text", "tool_use"]
    assert message.content[2].input == {"city": "Paris"} and message.stop_reason == "tool_use"
    assert message.usage.output_tokens > 0


async def test_anthropic_sdk_redacted_thinking_round_trip(server: LocalLLMServer) -> None:
    server.enqueue(Reply(reasoning="secret", reasoning_redacted=True, tool_calls=[WEATHER]))
    tools = [{"name": "get_weather", "input_schema": {"type": "object"}}]
    async with anthropic_client(server) as client:
        first = await client.messages.create(
            model="c", max_tokens=2048, thinking=THINKING, tools=tools, messages=ASK
        )
        assert [block.type for block in first.content] == ["redacted_thinking", "tool_use"]
        answer = {"type": "tool_result", "tool_use_id": first.content[1].id, "content": "sunny"}
        history = [*ASK, {"role": "assistant", "content": dumped(first.content)}]
        history.append({"role": "user", "content": [answer]})
        second = await client.messages.create(
            model="c", max_tokens=2048, thinking=THINKING, tools=tools, messages=history
        )
    assert second.content[0].text.startswith("tool result received")


def _thinking_turn(server: LocalLLMServer, change: dict[str, Any] | None = None) -> Any:
    """An assistant turn as ``server`` sent it: a signed thinking block, then a call.

    ``change`` updates the thinking block (a None value removes that key); None
    leaves the block out.
    """
    server.enqueue(Reply(reasoning="plan", tool_calls=[ToolCallSpec("f", {}, id="toolu_a")]))
    body = {"model": "c", "max_tokens": 2048, "thinking": THINKING, "messages": ASK}
    thinking, call = httpx.post(f"{server.anthropic_base_url}/v1/messages", json=body).json()[
        "content"
    ]
    if change is None:
        return {"role": "assistant", "content": [call]}
    block = {k: v for k, v in {**thinking, **change}.items() if v is not None}
    return {"role": "assistant", "content": [block, call]}


RESULT = {
    "role": "user",
    "content": [{"type": "tool_result", "tool_use_id": "toolu_a", "content": "ok"}],
}
REFUSALS: dict[str, tuple[Any, str]] = {
    "first message from the assistant": (
        lambda s: [{"role": "assistant", "content": "hi"}, *ASK],
        'first message must use the "user" role',
    ),
    "two user messages in a row": (lambda s: [*ASK, *ASK], "roles must alternate"),
    "tool_result without its tool_use": (
        lambda s: [*ASK, {"role": "assistant", "content": "ok"}, RESULT],
        "unexpected `tool_use_id` found in `tool_result` blocks: toolu_a",
    ),
    "tool_use without its tool_result": (
        lambda s: [*ASK, _thinking_turn(s), {"role": "user", "content": "go on"}],
        "`tool_use` ids were found without `tool_result` blocks immediately after: toolu_a",
    ),
    "thinking block without a signature": (
        lambda s: [*ASK, _thinking_turn(s, {"signature": None}), RESULT],
        "thinking.signature: Field required",
    ),
    "thinking text changed": (
        lambda s: [*ASK, _thinking_turn(s, {"thinking": "another plan"}), RESULT],
        "Invalid `signature` in `thinking` block",
    ),
    "redacted thinking not issued here": (
        lambda s: [*ASK, _thinking_turn(s, {"type": "redacted_thinking", "data": "x"}), RESULT],
        "Invalid `data` in `redacted_thinking` block",
    ),
    "tool_use before any thinking": (
        lambda s: [*ASK, _thinking_turn(s, None), RESULT],
        "Expected `thinking` or `redacted_thinking`, but found `tool_use`",
    ),
}


@pytest.mark.parametrize("case", list(REFUSALS))
async def test_anthropic_sdk_gets_each_refusal(server: LocalLLMServer, case: str) -> None:
    build, expected = REFUSALS[case]
    messages = build(server)
    before = len(server.recorded)
    server.enqueue(Reply(text="never sent"))
    async with anthropic_client(server) as client:
        with pytest.raises(anthropic.BadRequestError) as caught:
            await client.messages.create(
                model="c", max_tokens=2048, thinking=THINKING, messages=messages
            )
    assert caught.value.status_code == 400
    assert caught.value.body["type"] == "error"
    assert caught.value.body["error"]["type"] == "invalid_request_error"
    assert expected in caught.value.body["error"]["message"]
    assert server.recorded[before].refusal == caught.value.body["error"]["message"]
    assert server.pending_replies == 1  # a refused request uses no reply


@pytest.mark.parametrize(
    ("change", "expected"),
    [
        ({"max_tokens": None}, "max_tokens: Field required"),
        ({"thinking": {"type": "enabled", "budget_tokens": 100}}, "greater than or equal to 1024"),
        ({"max_tokens": 1024}, "`max_tokens` must be greater than `thinking.budget_tokens`"),
    ],
)
def test_anthropic_refuses_bad_fields(
    server: LocalLLMServer, change: dict[str, Any], expected: str
) -> None:
    body = {"model": "c", "max_tokens": 2048, "thinking": THINKING, "messages": ASK, **change}
    body = {key: value for key, value in body.items() if value is not None}
    response = httpx.post(f"{server.anthropic_base_url}/v1/messages", json=body)
    assert response.status_code == 400
    assert response.json()["error"]["type"] == "invalid_request_error"
    assert expected in response.json()["error"]["message"]


def test_anthropic_cache_marks_and_cached_usage() -> None:
    marked = {"type": "text", "text": "x" * 400, "cache_control": {"type": "ephemeral"}}
    body = {"model": "c", "max_tokens": 64, "messages": [{"role": "user", "content": [marked]}]}
    with LocalLLMServer(report_cached_tokens=True) as server:
        url = f"{server.anthropic_base_url}/v1/messages"
        first = httpx.post(url, json=body).json()["usage"]
        second = httpx.post(url, json=body).json()["usage"]
        too_many = {**body, "messages": [{"role": "user", "content": [marked] * 5}]}
        refused = httpx.post(url, json=too_many).json()
    assert first["cache_creation_input_tokens"] == 100 and first["cache_read_input_tokens"] == 0
    assert second["cache_read_input_tokens"] == 100 and second["input_tokens"] == 0
    assert "A maximum of 4 blocks with cache_control" in refused["error"]["message"]


def test_anthropic_clients_take_the_base_url_without_v1(server: LocalLLMServer) -> None:
    assert server.anthropic_base_url + "/v1" == server.base_url
    body = {"model": "c", "max_tokens": 64, "messages": ASK}
    response = httpx.post(f"{server.base_url}/v1/messages", json=body)
    assert response.status_code == 404 and "anthropic_base_url" in response.text


# -- OpenAI Responses ---------------------------------------------------------------------


async def test_responses_reply_through_litellm(server: LocalLLMServer) -> None:
    server.enqueue(
        Reply(text="Sunny.", reasoning="Think first.", prompt_tokens=30, cached_tokens=20)
    )
    response = await responses(server, "What is the weather?")
    reasoning, message = response.output
    assert reasoning.type == "reasoning" and reasoning.summary[0].text == "Think first."
    assert reasoning.encrypted_content
    assert message.content[0].text == "Sunny."
    assert response.usage.input_tokens == 30
    assert response.usage.input_tokens_details.cached_tokens == 20
    assert response.usage.output_tokens_details.reasoning_tokens > 0
    assert [r.format for r in server.recorded] == ["responses"]


async def test_responses_tool_loop_streams_and_carries_reasoning(server: LocalLLMServer) -> None:
    server.enqueue(Reply(reasoning="I need the weather.", tool_calls=[WEATHER]))
    events, final = [], None
    async for event in await responses(server, ASK, stream=True):
        events.append(str(getattr(event.type, "value", event.type)))
        final = getattr(event, "response", final)
    assert events[0] == "response.created" and events[-1] == "response.completed"
    assert {"response.output_item.added", "response.function_call_arguments.delta"} <= set(events)
    assert "response.output_item.done" in events
    output = dumped(final.output)
    assert [item["type"] for item in output] == ["reasoning", "function_call"]
    call = output[1]
    assert json.loads(call["arguments"]) == {"city": "Paris"}

    server.enqueue(Reply(text="It is sunny."))
    back = {"type": "function_call_output", "call_id": call["call_id"], "output": "sunny"}
    second = await responses(server, [*ASK, *output, back])
    assert second.output[0].content[0].text == "It is sunny."
    sent = server.requests[-1]["input"]
    assert [item.get("type", "message") for item in sent] == [
        "message",
        "reasoning",
        "function_call",
        "function_call_output",
    ]


async def test_responses_refusals_reach_litellm(server: LocalLLMServer) -> None:
    server.enqueue(Reply(reasoning="Hmm.", tool_calls=[WEATHER]))
    output = dumped((await responses(server, ASK)).output)
    back = {"type": "function_call_output", "call_id": output[1]["call_id"], "output": "sunny"}
    sealed = output[0]["encrypted_content"]
    # One character changed in the middle, where every bit counts (a fixed "A" at
    # the end is no change when the content already ends in "A").
    at = len(sealed) // 2
    flipped = "B" if sealed[at] == "A" else "A"
    altered = {**output[0], "encrypted_content": sealed[:at] + flipped + sealed[at + 1 :]}
    with pytest.raises(litellm.BadRequestError, match="could not be verified"):
        await responses(server, [*ASK, altered, output[1], back])
    orphan = {**back, "call_id": "call_unknown"}
    with pytest.raises(litellm.BadRequestError, match=r"No tool call found .* call_unknown"):
        await responses(server, [*ASK, orphan])
    assert [r.refusal is None for r in server.recorded] == [True, False, False]


@pytest.mark.parametrize(
    ("items", "code", "expected"),
    [
        ([{"type": "function_call_output", "call_id": "c9", "output": "x"}], None, "No tool call"),
        (
            [{"type": "reasoning", "id": "rs_9", "summary": [], "encrypted_content": "bm8.bm8"}],
            "invalid_encrypted_content",
            "could not be verified",
        ),
        ([{"type": "reasoning", "id": "rs_9", "summary": []}], None, "not persisted"),
        (
            [{"type": "function_call", "call_id": "c9", "name": "f", "arguments": "{}"}],
            None,
            "No tool output",
        ),
    ],
)
async def test_openai_sdk_gets_each_refusal(
    server: LocalLLMServer, items: list[Any], code: str | None, expected: str
) -> None:
    async with openai_client(server) as client:
        with pytest.raises(openai.BadRequestError) as caught:
            await client.responses.create(model="gpt-5", input=[*ASK, *items], store=False)
    error = caught.value
    assert error.status_code == 400 and error.code == code and expected in error.message
    assert error.type == "invalid_request_error"


async def test_openai_sdk_stream_and_plain(server: LocalLLMServer) -> None:
    server.enqueue(Reply(text="one two three four", reasoning="why"), Reply(text="plain"))
    async with openai_client(server) as client:
        async with client.responses.stream(
            model="gpt-5", input="hi", include=["reasoning.encrypted_content"], store=False
        ) as stream:
            numbers = [event.sequence_number async for event in stream]
            final = await stream.get_final_response()
        plain = await client.responses.create(model="gpt-5", input="hi")
    assert numbers == list(range(len(numbers)))
    assert final.output_text == "one two three four"
    assert final.output[0].encrypted_content
    assert plain.output_text == "plain" and plain.output[0].type == "message"


async def test_every_endpoint_reaches_the_responder(server: LocalLLMServer) -> None:
    # The default responder reads each request as Chat Completions messages.
    chat = await litellm.acompletion(
        model="openai/x", messages=ASK, api_base=server.base_url, api_key="t", **NO_RETRIES
    )
    messages = await claude(server, ASK, thinking=None)
    response = await responses(server, "What is the weather in Paris?")
    expected = "ack: What is the weather in Paris?"
    assert chat.choices[0].message.content == expected
    assert messages.choices[0].message.content == expected
    assert response.output[0].content[0].text == expected
    assert [r.format for r in server.recorded] == ["chat", "anthropic", "responses"]
