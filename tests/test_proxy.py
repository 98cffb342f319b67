"""``lossless proxy``: a client that sends its whole history each time, pointed at the
proxy, gets bounded requests sent upstream, each message stored once, streams and
errors passed through. The upstream is the project's local server; the clients are
the official ``openai`` and ``anthropic`` SDKs."""

from __future__ import annotations

import json
import signal
import subprocess
import sys
from collections.abc import AsyncIterator
from pathlib import Path
from typing import Any

import anthropic
import anyio
import openai
import pytest

from lossless import Session, count_tokens, session_for_key
from lossless.config import Config
from lossless.proxy import LosslessProxy
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec, small_window
from lossless.testing.conformance import check_request

pytestmark = pytest.mark.anyio

SYSTEM = "You are the build agent. Never push to main."
INSTRUCTION = "Make every test in the billing package pass."


def _config(context_limit: int = 4_000) -> Config:
    return small_window(context_limit)


@pytest.fixture
async def proxy(server: LocalLLMServer, tmp_path: Path) -> AsyncIterator[LosslessProxy]:
    async with LosslessProxy(
        upstream=server.base_url, db=tmp_path / "proxy.db", config=_config(), port=0
    ) as running:
        yield running


def _client(proxy: LosslessProxy, **headers: str) -> openai.AsyncOpenAI:
    return openai.AsyncOpenAI(base_url=proxy.url, api_key="sk-test", default_headers=headers)


async def _tool_run(client: openai.AsyncOpenAI, server: LocalLLMServer, steps: int) -> list[Any]:
    """A client that keeps its whole history and sends it every step."""
    messages: list[Any] = [
        {"role": "system", "content": SYSTEM},
        {"role": "user", "content": INSTRUCTION},
    ]
    for step in range(steps):
        server.enqueue(Reply(tool_calls=[ToolCallSpec("run_tests", json.dumps({"n": step}))]))
        reply = await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        message = reply.choices[0].message
        messages.append(message.model_dump(exclude_none=True))
        call = message.tool_calls[0]
        output = f"step {step}: 41 passed, 1 failed in billing/test_{step}.py " + "log " * 150
        messages.append({"role": "tool", "tool_call_id": call.id, "content": output})
    return messages


async def test_a_whole_history_goes_upstream_bounded(
    proxy: LosslessProxy, server: LocalLLMServer, tmp_path: Path
) -> None:
    async with _client(proxy) as client:
        messages = await _tool_run(client, server, 30)
    sent = server.requests
    assert len(sent) == 30
    budget = _config().model.context_limit
    for request in sent:
        upstream_messages = request["messages"]
        check_request(upstream_messages)
        text = json.dumps(upstream_messages)
        assert INSTRUCTION in text and SYSTEM in text
        assert len(text) / 4 < budget, "the upstream gets a bounded request"
    # The last requests leave most of the history out: the client sent all of it.
    assert len(sent[-1]["messages"]) < len(messages) - 10
    key = None
    async with Session.open(
        model="openai/gpt-4o-mini",
        db=tmp_path / "proxy.db",
        config=_config(),
        system_prompt=SYSTEM,
        key=_only_key(tmp_path),
    ) as session:
        key = session.key
        # The user turn and one turn per call, each stored once.
        assert len(session.history()) == 1 + 29
    assert key is not None and key.startswith("proxy:")


def _only_key(tmp_path: Path) -> str:
    import sqlite3

    with sqlite3.connect(tmp_path / "proxy.db") as conn:
        keys = [row[0] for row in conn.execute("SELECT DISTINCT key FROM session_keys")]
    assert len(keys) == 1
    return keys[0]


async def test_a_header_names_the_session(
    proxy: LosslessProxy, server: LocalLLMServer, tmp_path: Path
) -> None:
    async with _client(proxy, **{"X-Lossless-Session": "build-7"}) as client:
        await _tool_run(client, server, 3)
    assert await session_for_key(tmp_path / "proxy.db", "build-7") is not None
    for request in server.requests:
        assert "X-Lossless-Session" not in json.dumps(request)


async def test_streams_pass_through_chunk_by_chunk(
    proxy: LosslessProxy, server: LocalLLMServer
) -> None:
    text = "The failing test expects cents, not euros. " * 8
    messages = [{"role": "user", "content": INSTRUCTION}]

    async def chunks(base_url: str) -> list[str]:
        server.enqueue(Reply(text=text))
        async with openai.AsyncOpenAI(base_url=base_url, api_key="sk-test") as client:
            stream = await client.chat.completions.create(
                model="gpt-4o-mini", messages=messages, stream=True
            )
            return [chunk.choices[0].delta.content or "" async for chunk in stream if chunk.choices]

    direct = await chunks(server.base_url)
    through = await chunks(proxy.url)
    assert through == direct
    assert "".join(through) == text
    assert len(through) > 3


async def test_upstream_errors_reach_the_client_unchanged(
    proxy: LosslessProxy, server: LocalLLMServer
) -> None:
    messages = [{"role": "user", "content": INSTRUCTION}]
    bodies = []
    for base_url in (server.base_url, proxy.url):
        server.enqueue(Reply(text="no", status=429))
        async with openai.AsyncOpenAI(base_url=base_url, api_key="k", max_retries=0) as client:
            with pytest.raises(openai.RateLimitError) as raised:
                await client.chat.completions.create(model="gpt-4o-mini", messages=messages)
        bodies.append(raised.value.body)
    assert bodies[0] == bodies[1]


async def test_an_unreachable_upstream_is_a_502(tmp_path: Path) -> None:
    async with LosslessProxy(
        upstream="http://127.0.0.1:9/v1", db=tmp_path / "p.db", config=_config(), port=0
    ) as proxy:
        async with openai.AsyncOpenAI(base_url=proxy.url, api_key="k", max_retries=0) as client:
            with pytest.raises(openai.InternalServerError) as raised:
                await client.chat.completions.create(
                    model="gpt-4o-mini", messages=[{"role": "user", "content": "hi"}]
                )
        assert raised.value.status_code == 502


async def test_bad_requests_are_refused_and_store_nothing(
    proxy: LosslessProxy, server: LocalLLMServer, tmp_path: Path
) -> None:
    async with openai.AsyncOpenAI(base_url=proxy.url, api_key="k", max_retries=0) as client:
        with pytest.raises(openai.BadRequestError):
            await client.chat.completions.create(
                model="gpt-4o-mini",
                messages=[{"role": "tool", "tool_call_id": "nowhere", "content": "x"}],
            )
    assert server.requests == []


async def test_the_anthropic_client_through_the_proxy(
    server: LocalLLMServer, tmp_path: Path
) -> None:
    async with (
        LosslessProxy(
            upstream=server.anthropic_base_url, db=tmp_path / "a.db", config=_config(), port=0
        ) as proxy,
        anthropic.AsyncAnthropic(base_url=proxy.url.removesuffix("/v1"), api_key="k") as client,
    ):
        messages: list[dict[str, Any]] = [{"role": "user", "content": INSTRUCTION}]
        for step in range(12):
            server.enqueue(Reply(tool_calls=[ToolCallSpec("run_tests", json.dumps({"n": step}))]))
            reply = await client.messages.create(
                model="claude-opus-4-6", max_tokens=300, system=SYSTEM, messages=messages
            )
            content = [block.model_dump(exclude_none=True) for block in reply.content]
            messages.append({"role": "assistant", "content": content})
            use = next(block for block in content if block["type"] == "tool_use")
            result = {"type": "tool_result", "tool_use_id": use["id"], "content": "ok " * 400}
            messages.append({"role": "user", "content": [result]})
    sent = server.requests_to("anthropic")
    assert len(sent) == 12
    assert all(SYSTEM in json.dumps(request.get("system")) for request in sent)
    # Twelve results of about 400 tokens outgrow the 4,000-token window.
    assert len(sent[-1]["messages"]) < len(messages) - 2
    limit = _config().model.context_limit
    assert all(count_tokens(json.dumps(request["messages"])) < limit for request in sent)


async def test_requests_of_one_session_at_once(
    proxy: LosslessProxy, server: LocalLLMServer, tmp_path: Path
) -> None:
    messages = [{"role": "system", "content": SYSTEM}, {"role": "user", "content": INSTRUCTION}]
    server.enqueue(*[Reply(text=f"answer {n}") for n in range(6)])
    async with (
        _client(proxy, **{"X-Lossless-Session": "parallel"}) as client,
        anyio.create_task_group() as group,
    ):
        for _ in range(6):
            group.start_soon(
                lambda: client.chat.completions.create(model="gpt-4o-mini", messages=messages)
            )
    async with Session.open(
        model="openai/gpt-4o-mini",
        db=tmp_path / "proxy.db",
        config=_config(),
        system_prompt=SYSTEM,
        key="parallel",
    ) as session:
        assert len(session.history()) == 1


async def test_the_responses_api_through_the_proxy(
    proxy: LosslessProxy, server: LocalLLMServer, tmp_path: Path
) -> None:
    async with _client(proxy) as client:
        for topic in ("billing", "payroll"):
            await _responses_run(client, server, f"Fix the {topic} tests.")
    sent = server.requests_to("responses")
    assert len(sent) == 16
    assert all("instructions" not in request for request in sent)
    assert all(SYSTEM in json.dumps(request["input"]) for request in sent)
    assert len(sent[7]["input"]) < 15, "the eighth request of the first is bounded"
    import sqlite3

    with sqlite3.connect(tmp_path / "proxy.db") as conn:
        keys = {row[0] for row in conn.execute("SELECT key FROM session_keys")}
    assert len(keys) == 2, "each conversation is known by its opening"


async def _responses_run(client: openai.AsyncOpenAI, server: LocalLLMServer, ask: str) -> None:
    """Eight tool rounds of a Responses client that sends its whole input each time."""
    items: list[dict[str, Any]] = [{"role": "user", "content": ask}]
    for step in range(8):
        server.enqueue(Reply(tool_calls=[ToolCallSpec("run_tests", json.dumps({"n": step}))]))
        reply = await client.responses.create(model="gpt-4o-mini", instructions=SYSTEM, input=items)
        call = next(item for item in reply.output if item.type == "function_call")
        items.append(
            {
                "type": "function_call",
                "call_id": call.call_id,
                "name": call.name,
                "arguments": call.arguments,
            }
        )
        items.append(
            {"type": "function_call_output", "call_id": call.call_id, "output": "ok " * 800}
        )


def test_the_example_runs_offline() -> None:
    """``examples/proxy_client.py`` runs a client through the proxy to the local server."""
    example = Path(__file__).parent.parent / "examples" / "proxy_client.py"
    done = subprocess.run(
        [sys.executable, str(example)], capture_output=True, text=True, timeout=120, check=True
    )
    assert "the client holds 42 messages" in done.stdout
    assert "stores 20 turns, each once" in done.stdout


def test_the_command_serves_until_stopped(server: LocalLLMServer, tmp_path: Path) -> None:
    """``lossless proxy`` prints where it serves, serves, and stops on a signal."""
    command = [
        sys.executable,
        "-m",
        "lossless",
        "--db",
        str(tmp_path / "cli.db"),
        "proxy",
        "--upstream",
        server.base_url,
        "--port",
        "0",
        "--context-limit",
        "8000",
    ]
    process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
    try:
        assert process.stdout is not None
        line = process.stdout.readline()
        url = line.split(" on ", 1)[1].split(" ", 1)[0]
        server.enqueue(Reply(text="All green."))
        with openai.OpenAI(base_url=url, api_key="k") as client:
            reply = client.chat.completions.create(
                model="gpt-4o-mini", messages=[{"role": "user", "content": "Status?"}]
            )
        assert reply.choices[0].message.content == "All green."
    finally:
        process.send_signal(signal.SIGINT)
        assert process.wait(timeout=30) == 0
