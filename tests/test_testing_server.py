"""The local OpenAI-compatible server in ``lossless.testing``, driven through litellm."""

from __future__ import annotations

import os

# litellm fetches its model price map over the network at import unless told otherwise.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

import asyncio
import http.client
import json
import threading
import time
from collections.abc import AsyncIterator
from typing import Any

import litellm
import openai
import pytest

from lossless.testing import (
    EchoResponder,
    LocalLLMServer,
    Reply,
    Responder,
    ScriptedResponder,
    SummaryResponder,
    ToolCallSpec,
)

litellm.suppress_debug_info = True

pytestmark = [
    pytest.mark.timeout(60),
    # litellm's response types trip a pydantic UserWarning about `ReadOnly` TypedDict
    # items when first built; it says nothing about the code under test.
    pytest.mark.filterwarnings(
        "ignore:Items? .* (is|are) using the `ReadOnly` qualifier:UserWarning"
    ),
]

# Every litellm exception derives from openai.APIError; litellm.APIError is only one branch
# (mid-stream failures surface as MidStreamFallbackError, a ServiceUnavailableError).
ANY_LITELLM_ERROR = openai.APIError

USER = [{"role": "user", "content": "What is the weather in Paris today?"}]


def call_kwargs(server: LocalLLMServer, **extra: Any) -> dict[str, Any]:
    # Retries would silently send a second request and consume the next reply.
    kwargs: dict[str, Any] = {
        "model": "openai/test-model",
        "api_base": server.base_url,
        "api_key": "test",
        "messages": USER,
        "num_retries": 0,
        "max_retries": 0,
    }
    kwargs.update(extra)
    return kwargs


class Collected:
    def __init__(self) -> None:
        self.content_chunks: list[str] = []
        self.roles: list[str] = []
        self.tool_calls: dict[int, dict[str, str]] = {}
        self.finish_reasons: list[str] = []
        self.usage: Any = None

    @property
    def content(self) -> str:
        return "".join(self.content_chunks)


async def collect(stream: AsyncIterator[Any]) -> Collected:
    out = Collected()
    async for chunk in stream:
        usage = getattr(chunk, "usage", None)
        if usage is not None:
            out.usage = usage
        for choice in chunk.choices:
            delta = choice.delta
            if delta.role:
                out.roles.append(delta.role)
            if delta.content:
                out.content_chunks.append(delta.content)
            for call in delta.tool_calls or []:
                slot = out.tool_calls.setdefault(call.index, {"id": "", "name": "", "args": ""})
                if call.id:
                    slot["id"] = call.id
                if call.function.name:
                    slot["name"] = call.function.name
                if call.function.arguments:
                    slot["args"] += call.function.arguments
            if choice.finish_reason:
                out.finish_reasons.append(choice.finish_reason)
    return out


async def stream_reply(server: LocalLLMServer, **extra: Any) -> Collected:
    response = await litellm.acompletion(**call_kwargs(server, stream=True, **extra))
    return await collect(response)


def raw_post(server: LocalLLMServer, body: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=10)
    try:
        payload = json.dumps(body)
        conn.request("POST", "/v1/chat/completions", payload, {"Content-Type": "application/json"})
        response = conn.getresponse()
        return response.status, dict(response.getheaders()), response.read()
    finally:
        conn.close()


def sse_payloads(raw: bytes) -> list[str]:
    events = raw.decode().split("\n\n")
    assert events[-1] == ""
    payloads = []
    for event in events[:-1]:
        assert event.startswith("data: "), event
        payloads.append(event.removeprefix("data: "))
    return payloads


# -- plumbing -----------------------------------------------------------------------


def test_base_url_models_and_unknown_paths(server: LocalLLMServer) -> None:
    assert server.base_url == f"http://127.0.0.1:{server.port}/v1"
    conn = http.client.HTTPConnection("127.0.0.1", server.port, timeout=5)
    try:
        conn.request("GET", "/v1/models")
        response = conn.getresponse()
        listing = json.loads(response.read())
        assert response.status == 200
        assert listing["object"] == "list"
        assert [m["id"] for m in listing["data"]] == ["lossless-test"]

        conn.request("GET", "/v1/nothing-here")
        response = conn.getresponse()
        assert response.status == 404
        assert "error" in json.loads(response.read())
    finally:
        conn.close()


def test_not_running_has_no_address() -> None:
    srv = LocalLLMServer()
    with pytest.raises(RuntimeError):
        _ = srv.base_url
    srv.stop()  # stopping a server that never started is harmless


def test_raw_stream_wire_format(server: LocalLLMServer) -> None:
    server.enqueue(Reply(text="one two three four five six seven"))
    body = {"model": "m", "messages": USER, "stream": True}
    status, headers, raw = raw_post(server, {**body, "stream_options": {"include_usage": True}})
    assert status == 200
    assert headers["Content-Type"] == "text/event-stream"
    payloads = sse_payloads(raw)
    assert payloads[-1] == "[DONE]"
    chunks = [json.loads(p) for p in payloads[:-1]]
    assert all(c["object"] == "chat.completion.chunk" for c in chunks)
    assert chunks[0]["choices"][0]["delta"]["role"] == "assistant"
    assert chunks[-1]["choices"] == []
    assert chunks[-1]["usage"]["total_tokens"] > 0
    assert chunks[-2]["choices"][0]["finish_reason"] == "stop"
    pieces = [c["choices"][0]["delta"].get("content") or "" for c in chunks[:-1]]
    assert "".join(pieces) == "one two three four five six seven"
    assert sum(1 for p in pieces if p) >= 3

    # Without include_usage there is no usage chunk at all.
    status, _, raw = raw_post(server, body)
    chunks = [json.loads(p) for p in sse_payloads(raw)[:-1]]
    assert all("usage" not in c for c in chunks)
    assert chunks[-1]["choices"][0]["finish_reason"] == "stop"


# -- scripted replies through litellm -----------------------------------------------


@pytest.mark.anyio
async def test_non_streaming_text_and_usage(server: LocalLLMServer) -> None:
    server.enqueue(Reply(text="Sunny, 24 degrees.", prompt_tokens=11, completion_tokens=7))
    response = await litellm.acompletion(**call_kwargs(server))
    choice = response.choices[0]
    assert choice.message.content == "Sunny, 24 degrees."
    assert choice.finish_reason == "stop"
    usage = response.usage
    assert (usage.prompt_tokens, usage.completion_tokens, usage.total_tokens) == (11, 7, 18)


@pytest.mark.anyio
async def test_streaming_text_arrives_in_several_chunks(server: LocalLLMServer) -> None:
    text = "The quick brown fox jumps over the lazy dog near the river bank."
    server.enqueue(Reply(text=text, chunk_delay_s=0.01))
    out = await stream_reply(server)
    assert out.content == text
    assert len(out.content_chunks) >= 4
    assert out.roles[:1] == ["assistant"]
    assert out.finish_reasons == ["stop"]


@pytest.mark.anyio
async def test_streaming_usage_with_include_usage(server: LocalLLMServer) -> None:
    server.enqueue(Reply(text="short answer", prompt_tokens=40, completion_tokens=3))
    out = await stream_reply(server, stream_options={"include_usage": True})
    assert out.content == "short answer"
    assert out.usage is not None
    assert (out.usage.prompt_tokens, out.usage.completion_tokens) == (40, 3)
    assert out.usage.total_tokens == 43


@pytest.mark.anyio
async def test_default_usage_is_a_deterministic_estimate(server: LocalLLMServer) -> None:
    server.enqueue(Reply(text="x" * 40), Reply(text="x" * 40))
    first = await litellm.acompletion(**call_kwargs(server))
    second = await litellm.acompletion(**call_kwargs(server))
    prompt_chars = len(USER[0]["content"])
    assert first.usage.prompt_tokens == (prompt_chars + 3) // 4
    assert first.usage.completion_tokens == 10
    assert first.usage.model_dump() == second.usage.model_dump()


@pytest.mark.anyio
async def test_streaming_tool_calls_reassemble(server: LocalLLMServer) -> None:
    server.enqueue(
        Reply(
            text="Checking.",
            tool_calls=[
                ToolCallSpec("get_weather", {"city": "Paris", "unit": "celsius"}),
                ToolCallSpec("lookup", '{"query": "forecast"}', id="call_custom"),
                ToolCallSpec("get_time", {"tz": "Europe/Paris"}),
            ],
        )
    )
    out = await stream_reply(server)
    assert out.content == "Checking."
    assert out.finish_reasons == ["tool_calls"]
    calls = [out.tool_calls[i] for i in sorted(out.tool_calls)]
    assert [c["name"] for c in calls] == ["get_weather", "lookup", "get_time"]
    assert [c["id"] for c in calls] == ["call_1", "call_custom", "call_2"]
    assert json.loads(calls[0]["args"]) == {"city": "Paris", "unit": "celsius"}
    assert json.loads(calls[1]["args"]) == {"query": "forecast"}
    assert json.loads(calls[2]["args"]) == {"tz": "Europe/Paris"}


@pytest.mark.anyio
async def test_non_streaming_tool_calls(server: LocalLLMServer) -> None:
    server.enqueue(Reply(tool_calls=[ToolCallSpec("read_file", {"path": "a.txt"})]))
    response = await litellm.acompletion(**call_kwargs(server))
    choice = response.choices[0]
    assert choice.finish_reason == "tool_calls"
    assert choice.message.content is None
    (call,) = choice.message.tool_calls
    assert call.id == "call_1"
    assert call.function.name == "read_file"
    assert json.loads(call.function.arguments) == {"path": "a.txt"}


@pytest.mark.anyio
async def test_queue_is_fifo_then_responder(server: LocalLLMServer) -> None:
    server.enqueue(Reply(text="first"), Reply(text="second"))
    texts = []
    for _ in range(3):
        response = await litellm.acompletion(**call_kwargs(server))
        texts.append(response.choices[0].message.content)
    assert texts == ["first", "second", "ack: What is the weather in Paris today?"]
    assert server.pending_replies == 0


@pytest.mark.anyio
async def test_requests_are_recorded_and_reset(server: LocalLLMServer) -> None:
    await litellm.acompletion(**call_kwargs(server, messages=[{"role": "user", "content": "a"}]))
    await stream_reply(server, messages=[{"role": "user", "content": "b"}])
    recorded = server.requests
    assert [r["messages"][-1]["content"] for r in recorded] == ["a", "b"]
    assert recorded[0]["model"] == "test-model"
    assert not recorded[0].get("stream")
    assert recorded[1]["stream"] is True
    server.enqueue(Reply(text="unused"))
    server.reset()
    assert server.requests == []
    assert server.pending_replies == 0


@pytest.mark.anyio
async def test_latency_delays_the_response(server: LocalLLMServer) -> None:
    server.enqueue(Reply(text="late", latency_s=0.3))
    started = time.monotonic()
    response = await litellm.acompletion(**call_kwargs(server))
    assert time.monotonic() - started >= 0.3
    assert response.choices[0].message.content == "late"


# -- failures -----------------------------------------------------------------------


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_http_500_raises(server: LocalLLMServer, stream: bool) -> None:
    server.enqueue(Reply(status=500, text="backend exploded"))
    with pytest.raises(litellm.exceptions.InternalServerError, match="backend exploded"):
        response = await litellm.acompletion(**call_kwargs(server, stream=stream))
        if stream:
            await collect(response)
    assert len(server.requests) == 1


@pytest.mark.anyio
async def test_http_429_raises_rate_limit(server: LocalLLMServer) -> None:
    server.enqueue(Reply(status=429))
    with pytest.raises(litellm.exceptions.RateLimitError):
        await litellm.acompletion(**call_kwargs(server))


@pytest.mark.anyio
@pytest.mark.parametrize("stream", [False, True])
async def test_hang_times_out_client(server: LocalLLMServer, stream: bool) -> None:
    server.enqueue(Reply(hang=True))
    started = time.monotonic()
    with pytest.raises(litellm.exceptions.Timeout):
        response = await litellm.acompletion(**call_kwargs(server, stream=stream, timeout=0.5))
        if stream:
            await collect(response)
    assert time.monotonic() - started < 5
    assert len(server.requests) == 1


@pytest.mark.anyio
async def test_malformed_stream_raises(server: LocalLLMServer) -> None:
    server.enqueue(Reply(text="one two three four five six seven eight nine", malformed=True))
    with pytest.raises(ANY_LITELLM_ERROR):
        await stream_reply(server)


@pytest.mark.anyio
async def test_malformed_non_streaming_raises(server: LocalLLMServer) -> None:
    server.enqueue(Reply(text="whatever", malformed=True))
    with pytest.raises(ANY_LITELLM_ERROR):
        await litellm.acompletion(**call_kwargs(server))


@pytest.mark.anyio
async def test_disconnect_mid_stream_fails_or_truncates(server: LocalLLMServer) -> None:
    text = "alpha beta gamma delta epsilon zeta eta theta iota kappa lambda mu"
    server.enqueue(Reply(text=text, disconnect_after_chunks=2))
    try:
        out = await stream_reply(server)
    except ANY_LITELLM_ERROR:
        return
    assert out.content != text
    assert text.startswith(out.content)
    assert out.finish_reasons in ([], ["stop"])


@pytest.mark.anyio
async def test_disconnect_without_response_non_streaming(server: LocalLLMServer) -> None:
    server.enqueue(Reply(text="never sent", disconnect_after_chunks=0))
    with pytest.raises(ANY_LITELLM_ERROR):
        await litellm.acompletion(**call_kwargs(server))


@pytest.mark.anyio
async def test_concurrent_requests_each_get_one_reply(server: LocalLLMServer) -> None:
    server.enqueue(*(Reply(text=f"reply {i}", latency_s=0.05) for i in range(8)))

    async def ask(i: int) -> str:
        messages = [{"role": "user", "content": f"q{i}"}]
        response = await litellm.acompletion(**call_kwargs(server, messages=messages))
        return str(response.choices[0].message.content)

    texts = await asyncio.gather(*(ask(i) for i in range(8)))
    assert sorted(texts) == sorted(f"reply {i}" for i in range(8))
    assert sorted(r["messages"][0]["content"] for r in server.requests) == [
        f"q{i}" for i in range(8)
    ]


@pytest.mark.anyio
async def test_responder_failure_becomes_http_500() -> None:
    def broken(request: dict[str, Any]) -> Reply:
        raise KeyError("missing")

    async with LocalLLMServer(responder=broken) as srv:
        with pytest.raises(litellm.exceptions.InternalServerError, match="responder failed"):
            await litellm.acompletion(**call_kwargs(srv))


# -- responders ---------------------------------------------------------------------


def test_echo_responder_is_deterministic() -> None:
    echo = EchoResponder()
    long_text = "word " * 50
    request = {
        "messages": [{"role": "system", "content": "s"}, {"role": "user", "content": long_text}]
    }
    assert echo(request) == echo(request)
    assert echo(request).text == "ack: " + long_text[:80]

    parts = [{"type": "text", "text": "look at"}, {"type": "image_url", "image_url": {"url": "x"}}]
    assert echo({"messages": [{"role": "user", "content": parts}]}).text == "ack: look at"

    tool_turn = {
        "messages": [
            {"role": "user", "content": "go"},
            {"role": "tool", "tool_call_id": "call_1", "content": "42 degrees"},
        ]
    }
    reply = echo(tool_turn)
    assert "call_1" in reply.text
    assert "42 degrees" in reply.text
    assert not reply.tool_calls
    assert echo({}).text == "ack: "


def test_summary_responder_is_deterministic_and_short() -> None:
    transcript = "\n".join(
        f"line {i}: the agent edited file_{i}.py and ran tests" for i in range(300)
    )
    request = {
        "messages": [
            {"role": "system", "content": "Summarise the conversation."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {"id": "c", "type": "function", "function": {"name": "bash", "arguments": "{}"}}
                ],
            },
            {"role": "user", "content": transcript},
        ]
    }
    summarise = SummaryResponder()
    first, second = summarise(request), summarise(request)
    assert first == second
    headers = [line for line in first.text.splitlines() if line.startswith("## ")]
    assert headers[0] == "## Goal"
    assert "## Other context" in headers
    assert len(headers) >= 3
    assert transcript[:200] in first.text
    assert "301 lines" in first.text
    assert "- bash" in first.text
    assert len(first.text) * 10 < len(transcript)


def test_scripted_responder_then_falls_back() -> None:
    scripted = ScriptedResponder([Reply(text="one"), Reply(text="two")], then=SummaryResponder())
    request = {"messages": USER}
    assert isinstance(scripted, Responder)
    assert [scripted(request).text for _ in range(2)] == ["one", "two"]
    assert scripted.remaining == 0
    assert scripted(request).text.startswith("## Goal")
    default = ScriptedResponder([])
    assert default(request).text.startswith("ack: ")


@pytest.mark.anyio
async def test_summary_responder_through_server() -> None:
    async with LocalLLMServer(responder=SummaryResponder()) as srv:
        long_input = "step done\n" * 500
        messages = [{"role": "user", "content": long_input}]
        first = await stream_reply(srv, messages=messages)
        second = await litellm.acompletion(**call_kwargs(srv, messages=messages))
    assert first.content == second.choices[0].message.content
    assert first.content.startswith("## Goal\nstep done")
    assert len(first.content) < len(long_input) // 10


# -- lifecycle ----------------------------------------------------------------------


def test_stop_is_fast_with_hanging_requests() -> None:
    srv = LocalLLMServer().start()
    srv.enqueue(Reply(hang=True), Reply(hang=True))
    errors: list[BaseException] = []

    def client() -> None:
        try:
            raw_post(srv, {"model": "m", "messages": USER})
        except (OSError, http.client.HTTPException) as exc:
            errors.append(exc)

    threads = [threading.Thread(target=client) for _ in range(2)]
    for thread in threads:
        thread.start()
    srv.wait_for_requests(2)
    # An idle keep-alive connection must not hold the server open either.
    idle = http.client.HTTPConnection("127.0.0.1", srv.port, timeout=5)
    idle.request("GET", "/v1/models")
    idle.getresponse().read()

    started = time.monotonic()
    srv.stop()
    assert time.monotonic() - started < 1.0
    for thread in threads:
        thread.join(5)
        assert not thread.is_alive()
    idle.close()
    assert len(errors) == 2


@pytest.mark.anyio
async def test_async_context_manager_and_restart() -> None:
    srv = LocalLLMServer()
    async with srv:
        first_url = srv.base_url
        response = await litellm.acompletion(**call_kwargs(srv))
        assert response.choices[0].message.content.startswith("ack: ")
    with pytest.raises(RuntimeError):
        _ = srv.base_url
    with srv:
        assert srv.base_url.startswith("http://127.0.0.1:")
    assert first_url.endswith("/v1")
