"""Model calls through litellm against the local server: streaming, tool calls, usage and
cost, retries with backoff, timeouts, malformed and cut streams."""

from __future__ import annotations

import json
import time
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import TEST_MODEL
from lossless.config import Config, LLMConfig
from lossless.errors import LLMError, LosslessError
from lossless.events import EventName
from lossless.llm import PartialReply, complete_text, stream_completion
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec

pytestmark = pytest.mark.anyio

USER = [{"role": "user", "content": "hello"}]
# 12 words: the server streams three words per chunk, so four content chunks.
LONG = "one two three four five six seven eight nine ten eleven twelve"


def llm_config(server: LocalLLMServer, **overrides: Any) -> LLMConfig:
    values: dict[str, Any] = {
        "api_base": server.base_url,
        "api_key": "test",
        "timeout_s": 5.0,
        "num_retries": 1,
        "retry_backoff_s": 0.01,
    }
    values.update(overrides)
    return LLMConfig(**values)


def tape(session: Any) -> list[tuple[str, dict[str, Any]]]:
    return [
        (row["name"], json.loads(row["payload_json"])) for row in session.store.events(session.id)
    ]


# -- streaming --------------------------------------------------------------------------


async def test_text_streams_in_deltas_with_usage(server: LocalLLMServer) -> None:
    server.enqueue(Reply(text=LONG, prompt_tokens=21, completion_tokens=13))
    deltas: list[str] = []

    async def on_text(delta: str) -> None:
        deltas.append(delta)

    reply = await stream_completion(TEST_MODEL, USER, llm=llm_config(server), on_text=on_text)
    assert reply.text == LONG
    assert len(deltas) == 4 and "".join(deltas) == LONG
    assert (reply.input_tokens, reply.output_tokens) == (21, 13)
    assert reply.finish_reason == "stop"
    assert reply.tool_calls == []
    request = server.requests[-1]
    assert request["stream"] is True
    assert request["stream_options"] == {"include_usage": True}
    assert request["messages"] == USER


async def test_request_carries_tools_and_max_tokens(server: LocalLLMServer) -> None:
    tool = {
        "type": "function",
        "function": {"name": "read", "parameters": {"type": "object", "properties": {}}},
    }
    await stream_completion(TEST_MODEL, USER, llm=llm_config(server), tools=[tool], max_tokens=321)
    request = server.requests[-1]
    assert request["tools"] == [tool]
    assert request["max_tokens"] == 321


async def test_tool_calls_are_assembled_from_fragments_with_their_ids(
    server: LocalLLMServer,
) -> None:
    server.enqueue(
        Reply(
            text="let me look",
            tool_calls=[
                ToolCallSpec("read", {"path": "src/main.py", "lines": [1, 200]}, id="call_read"),
                ToolCallSpec("grep", {"pattern": "def main"}),  # the server names it call_1
            ],
        )
    )
    reply = await stream_completion(TEST_MODEL, USER, llm=llm_config(server))
    assert reply.text == "let me look"
    assert reply.finish_reason == "tool_calls"
    assert [(call.name, call.call_id) for call in reply.tool_calls] == [
        ("read", "call_read"),
        ("grep", "call_1"),
    ]
    assert json.loads(str(reply.tool_calls[0].input)) == {"path": "src/main.py", "lines": [1, 200]}
    assert json.loads(str(reply.tool_calls[1].input)) == {"pattern": "def main"}
    assert all(call.status == "pending" and call.output is None for call in reply.tool_calls)


async def test_cost_comes_from_litellms_price_map(server: LocalLLMServer) -> None:
    import litellm

    server.enqueue(Reply(text="priced", prompt_tokens=1_000, completion_tokens=500))
    reply = await stream_completion("openai/gpt-4o", USER, llm=llm_config(server))
    prompt, completion = litellm.cost_per_token(
        model="openai/gpt-4o", prompt_tokens=1_000, completion_tokens=500
    )
    assert reply.cost == pytest.approx(prompt + completion)
    assert reply.cost is not None and reply.cost > 0


async def test_a_model_without_a_price_has_no_cost(server: LocalLLMServer) -> None:
    reply = await stream_completion(TEST_MODEL, USER, llm=llm_config(server))
    assert reply.input_tokens is not None
    assert reply.cost is None


async def test_a_price_registered_later_is_used(server: LocalLLMServer) -> None:
    import litellm

    model = "openai/lossless-priced-later"
    first = await stream_completion(model, USER, llm=llm_config(server))
    assert first.input_tokens is not None and first.cost is None
    litellm.register_model(
        {
            model: {
                "input_cost_per_token": 1e-6,
                "output_cost_per_token": 2e-6,
                "litellm_provider": "openai",
                "mode": "chat",
            }
        }
    )
    server.enqueue(Reply(text="now priced", prompt_tokens=100, completion_tokens=10))
    second = await stream_completion(model, USER, llm=llm_config(server))
    assert second.cost == pytest.approx(100 * 1e-6 + 10 * 2e-6)


async def test_complete_text_is_non_streaming(server: LocalLLMServer) -> None:
    server.enqueue(Reply(status=500), Reply(text="a summary"))
    text = await complete_text(TEST_MODEL, USER, llm=llm_config(server), max_tokens=50)
    assert text == "a summary"
    assert len(server.requests) == 2
    assert "stream" not in server.requests[-1] or server.requests[-1]["stream"] is False
    assert server.requests[-1]["max_tokens"] == 50


# -- retries ----------------------------------------------------------------------------


async def test_a_server_error_is_retried_once_then_succeeds(server: LocalLLMServer) -> None:
    server.enqueue(Reply(status=500, text="overloaded"), Reply(text="second time lucky"))
    retries: list[tuple[int, str]] = []
    reply = await stream_completion(
        TEST_MODEL,
        USER,
        llm=llm_config(server, num_retries=1),
        on_retry=lambda attempt, reason: retries.append((attempt, reason)),
    )
    assert reply.text == "second time lucky"
    assert len(server.requests) == 2
    assert len(retries) == 1 and retries[0][0] == 1
    assert "overloaded" in retries[0][1]


@pytest.mark.parametrize("status", [429, 502, 503])
async def test_rate_limits_and_gateway_errors_are_retried(
    server: LocalLLMServer, status: int
) -> None:
    server.enqueue(Reply(status=status), Reply(text="fine"))
    reply = await stream_completion(TEST_MODEL, USER, llm=llm_config(server, num_retries=1))
    assert reply.text == "fine"
    assert len(server.requests) == 2


async def test_all_attempts_failing_raise_llm_error(server: LocalLLMServer) -> None:
    server.enqueue(*[Reply(status=500, text="still down")] * 3)
    with pytest.raises(LLMError, match="still down") as info:
        await stream_completion(TEST_MODEL, USER, llm=llm_config(server, num_retries=2))
    assert isinstance(info.value, LosslessError)
    assert len(server.requests) == 3


async def test_client_errors_are_not_retried(server: LocalLLMServer) -> None:
    server.enqueue(Reply(status=400, text="bad request body"), Reply(text="unused"))
    retries: list[int] = []
    with pytest.raises(LLMError, match="bad request body"):
        await stream_completion(
            TEST_MODEL,
            USER,
            llm=llm_config(server, num_retries=3),
            on_retry=lambda attempt, reason: retries.append(attempt),
        )
    assert len(server.requests) == 1
    assert retries == []


async def test_retries_back_off_exponentially(server: LocalLLMServer) -> None:
    server.enqueue(Reply(status=500), Reply(status=500), Reply(text="ok"))
    started = time.perf_counter()
    reply = await stream_completion(
        TEST_MODEL, USER, llm=llm_config(server, num_retries=2, retry_backoff_s=0.1)
    )
    elapsed = time.perf_counter() - started
    assert reply.text == "ok"
    assert elapsed >= 0.1 + 0.2  # first delay, then doubled


async def test_zero_retries_means_one_attempt(server: LocalLLMServer) -> None:
    server.enqueue(Reply(status=500), Reply(text="unused"))
    with pytest.raises(LLMError):
        await stream_completion(TEST_MODEL, USER, llm=llm_config(server, num_retries=0))
    assert len(server.requests) == 1


# -- timeouts ---------------------------------------------------------------------------


async def test_a_hanging_server_times_out_and_is_retried(server: LocalLLMServer) -> None:
    server.enqueue(Reply(hang=True), Reply(text="awake now"))
    retries: list[str] = []
    started = time.perf_counter()
    reply = await stream_completion(
        TEST_MODEL,
        USER,
        llm=llm_config(server, timeout_s=0.3, num_retries=1),
        on_retry=lambda attempt, reason: retries.append(reason),
    )
    assert reply.text == "awake now"
    assert len(server.requests) == 2
    assert len(retries) == 1 and "Timeout" in retries[0]
    assert time.perf_counter() - started < 3


async def test_timeouts_on_every_attempt_raise_llm_error(server: LocalLLMServer) -> None:
    server.enqueue(Reply(hang=True), Reply(hang=True))
    started = time.perf_counter()
    with pytest.raises(LLMError, match="Timeout"):
        await stream_completion(
            TEST_MODEL, USER, llm=llm_config(server, timeout_s=0.3, num_retries=1)
        )
    assert len(server.requests) == 2
    assert time.perf_counter() - started < 3


# -- broken streams ---------------------------------------------------------------------


async def test_a_stream_cut_before_any_content_is_retried(server: LocalLLMServer) -> None:
    server.enqueue(Reply(text=LONG, disconnect_after_chunks=0), Reply(text="complete answer"))
    reply = await stream_completion(TEST_MODEL, USER, llm=llm_config(server, num_retries=1))
    assert reply.text == "complete answer"
    assert len(server.requests) == 2


async def test_a_stream_cut_after_content_raises_partial_reply_without_retry(
    server: LocalLLMServer,
) -> None:
    server.enqueue(Reply(text=LONG, disconnect_after_chunks=2), Reply(text="must not be used"))
    with pytest.raises(PartialReply) as info:
        await stream_completion(TEST_MODEL, USER, llm=llm_config(server, num_retries=2))
    assert isinstance(info.value, LLMError)
    assert info.value.reply.text == "one two three four five six "
    assert len(server.requests) == 1, "a partial reply must not be silently re-asked"


async def test_malformed_chunks_after_content_raise_partial_reply(server: LocalLLMServer) -> None:
    server.enqueue(Reply(text=LONG, malformed=True))
    with pytest.raises(PartialReply) as info:
        await stream_completion(TEST_MODEL, USER, llm=llm_config(server))
    partial = info.value.reply.text
    assert partial and LONG.startswith(partial) and partial != LONG


# -- through a session ----------------------------------------------------------------------


async def test_session_retry_succeeds_and_publishes_llm_retry(
    server: LocalLLMServer, session: Any
) -> None:
    server.enqueue(Reply(status=500, text="flaky"), Reply(text="made it"))
    result = await session.send("hello")
    assert result.text == "made it"
    retries = [payload for name, payload in tape(session) if name == EventName.LLM_RETRY]
    assert len(retries) == 1
    assert retries[0]["attempt"] == 1 and "flaky" in retries[0]["reason"]
    assert [(m.role, m.status, m.text) for m in session.history()] == [
        ("user", "complete", "hello"),
        ("assistant", "complete", "made it"),
    ]


async def test_session_failure_keeps_the_user_turn_and_never_stores_the_error(
    server: LocalLLMServer, session: Any
) -> None:
    server.enqueue(Reply(status=500, text="ERROR-TEXT-42"), Reply(status=500, text="ERROR-TEXT-42"))
    with pytest.raises(LLMError, match="ERROR-TEXT-42"):
        await session.send("are you there?")
    history = session.history()
    assert history[0].role == "user" and history[0].text == "are you there?"
    assert history[0].status == "complete"
    for message in history:
        assert "ERROR-TEXT-42" not in message.text
    assert [m.status for m in history if m.role == "assistant"] in ([], ["incomplete"])
    context = session.build_context()
    assert all("ERROR-TEXT-42" not in json.dumps(m) for m in context.messages)
    assert not any(m["role"] == "assistant" for m in context.messages)
    failed = [payload for name, payload in tape(session) if name == EventName.LLM_FAILED]
    assert len(failed) == 1 and "ERROR-TEXT-42" in failed[0]["error"]

    # The session carries on: the next turn sees the earlier user turn.
    result = await session.send("hello again")
    assert result.text == "ack: hello again"
    sent = [m["content"] for m in server.requests[-1]["messages"]]
    assert sent == ["are you there?", "hello again"]


async def test_session_timeout_raises_llm_error(
    server: LocalLLMServer, config_for: Any, db: Path
) -> None:
    from lossless.session import Session

    config: Config = config_for(llm_overrides={"timeout_s": 0.3, "num_retries": 0})
    server.enqueue(Reply(hang=True))
    async with await Session.create(model=TEST_MODEL, db=db, config=config) as session:
        with anyio.fail_after(5), pytest.raises(LLMError, match="Timeout"):
            await session.send("hello?")
        assert [m.role for m in session.history() if m.status == "complete"] == ["user"]


async def test_session_disconnect_mid_stream_stores_the_partial_reply_incomplete(
    server: LocalLLMServer, session: Any
) -> None:
    server.enqueue(Reply(text=LONG, disconnect_after_chunks=3))
    seen: list[str] = []
    with pytest.raises(LLMError):
        await session.send("count to twelve", on_part=lambda part: seen.append(part.text))
    user, assistant = session.history()
    assert (user.role, user.status, user.text) == ("user", "complete", "count to twelve")
    assert assistant.role == "assistant"
    assert assistant.status == "incomplete"
    assert assistant.text == "one two three four five six seven eight nine "
    assert "".join(seen) == assistant.text, "the caller saw exactly what was stored"
    incomplete = [payload for name, payload in tape(session) if name == EventName.STREAM_INCOMPLETE]
    assert len(incomplete) == 1 and incomplete[0]["message_id"] == assistant.id
    assert len(server.requests) == 1


async def test_session_malformed_stream_stores_the_partial_reply_incomplete(
    server: LocalLLMServer, session: Any
) -> None:
    server.enqueue(Reply(text=LONG, malformed=True))
    with pytest.raises(LLMError):
        await session.send("hello")
    assistant = session.history()[-1]
    assert assistant.status == "incomplete"
    assert assistant.text and LONG.startswith(assistant.text) and assistant.text != LONG
    assert "not json" not in assistant.text


# A child process: imports litellm the library's way, makes one model call against the
# local server whose URL is argv[1], and reports how many objects the collector has
# frozen and how many a full collection still walks.
_HEAP_CHILD = """
import gc, json, sys
import anyio
from lossless.config import LLMConfig
from lossless.llm import stream_completion

async def main():
    llm = LLMConfig(api_base=sys.argv[1], api_key="test", timeout_s=5.0)
    await stream_completion("openai/gpt-4o-mini", [{"role": "user", "content": "hi"}], llm=llm)

anyio.run(main)
gc.collect()
print(json.dumps({"frozen": gc.get_freeze_count(), "walked": len(gc.get_objects())}))
"""


def _heap_after_one_call(server: LocalLLMServer, **env: str) -> dict[str, Any]:
    import os
    import subprocess
    import sys

    server.enqueue(Reply(text="ok"))
    done = subprocess.run(
        [sys.executable, "-c", _HEAP_CHILD, server.base_url],
        capture_output=True,
        text=True,
        timeout=120,
        env={**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True", **env},
        check=True,
    )
    figures: dict[str, Any] = json.loads(done.stdout.strip().splitlines()[-1])
    return figures


def test_litellm_and_its_first_call_are_frozen_out_of_full_collections(
    server: LocalLLMServer,
) -> None:
    # litellm's ~380,000 long-lived objects are walked by every full collection, an
    # event-loop stall of a quarter second; frozen, a full collection skips them.
    settled = _heap_after_one_call(server)
    unfrozen = _heap_after_one_call(server, LOSSLESS_GC_FREEZE="0")
    assert settled["frozen"] > 300_000
    assert unfrozen["frozen"] == 0
    assert unfrozen["walked"] > 300_000
    # What is left to walk is what the caller's own process makes: here, a few
    # thousand objects of the call itself.
    assert settled["walked"] < 50_000
