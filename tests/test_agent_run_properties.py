"""Random agent runs that mix every kind an agent sends today (signed thinking,
parallel tool calls, screenshots in tool results, images a user attaches, new
instructions), recorded through the own loop: every request, in every format,
passes its checks, fits its budget and names every image; each assistant turn of
the current tool loop that a request sends opens with its thinking, unchanged; only
the newest images go out inline; and every image reads back byte for byte."""

from __future__ import annotations

import base64
import json
import re
from pathlib import Path
from typing import Any

import anyio
import pydantic
import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st
from openai.types.chat import ChatCompletionMessageParam

from lossless import MediaPart, Session
from lossless.config import CompactionConfig, Config, MediaConfig, ModelConfig
from lossless.testing import screenshot
from lossless.testing.conformance import check_request
from test_formats import SIGNER, check_anthropic, check_responses

CLAUDE = "claude-sonnet-4-5"
MAX_INLINE = 2
CHAT = pydantic.TypeAdapter(list[ChatCompletionMessageParam])
# A page's text: long enough that a run outgrows its window and leaves history out.
PAGE = "navigation, headings and paragraphs of the page " * 30
DATA_URL = re.compile(r"data:image/png;base64,([A-Za-z0-9+/=]+)")

# One step: (thinks, screenshot seeds of its calls, a new instruction after it,
# an image the user attaches with that instruction).
step = st.tuples(
    st.booleans(),
    st.lists(st.integers(0, 40), min_size=1, max_size=3),
    st.booleans(),
    st.booleans(),
)


def _image_url(data: bytes) -> dict[str, Any]:
    return {"type": "image_url", "image_url": {"url": f"data:image/png;base64,{b64(data)}"}}


def b64(data: bytes) -> str:
    return base64.b64encode(data).decode()


def _history(steps: list[tuple[bool, list[int], bool, bool]]) -> list[dict[str, Any]]:
    """The run as Chat Completions messages, as litellm hands them to an own loop."""
    messages: list[dict[str, Any]] = [{"role": "user", "content": "Check every page."}]
    for at, (thinks, seeds, instructs, attaches) in enumerate(steps):
        calls = [
            {
                "id": f"toolu_{at}_{n}",
                "type": "function",
                "function": {"name": "open", "arguments": json.dumps({"page": at, "n": n})},
            }
            for n in range(len(seeds))
        ]
        assistant: dict[str, Any] = {"role": "assistant", "content": None, "tool_calls": calls}
        if thinks:
            thought = f"Step {at}: look at {len(seeds)} pages."
            block = {"type": "thinking", "thinking": thought, "signature": SIGNER.sign(thought)}
            assistant["thinking_blocks"] = [block]
        messages.append(assistant)
        for call, seed in zip(calls, seeds, strict=True):
            shot = screenshot(96, 64, seed=seed * 100 + at)
            content = [{"type": "text", "text": f"page {at}: " + PAGE}, _image_url(shot)]
            messages.append({"role": "tool", "tool_call_id": call["id"], "content": content})
        if instructs:
            said: list[dict[str, Any]] = [{"type": "text", "text": f"Now page {at + 1}."}]
            if attaches:
                said.append(_image_url(screenshot(80, 64, seed=1_000 + at)))
            messages.append({"role": "user", "content": said})
    return messages


def _config() -> Config:
    return Config(
        model=ModelConfig(context_limit=9_000, max_output_tokens=1_000, profile="default"),
        compaction=CompactionConfig(output_budget=1_000),
        media=MediaConfig(max_inline=MAX_INLINE),
    )


def _sent_images(text: str) -> list[str]:
    return DATA_URL.findall(text)


def _check_thinking_opens_each_turn(request: Any, stored: dict[str, dict[str, Any]]) -> None:
    """Every assistant turn after the request's newest user text (a new instruction
    shares its turn with the tool results before it) that calls a tool it stored
    with thinking opens with that block, byte for byte."""
    messages = request["messages"]
    users = [
        at
        for at, message in enumerate(messages)
        if message["role"] == "user"
        and any(block.get("type") == "text" for block in message["content"])
    ]
    for message in messages[(users[-1] if users else -1) + 1 :]:
        if message["role"] != "assistant":
            continue
        uses = [block["id"] for block in message["content"] if block["type"] == "tool_use"]
        expected = [stored[use] for use in uses if use in stored]
        if expected:
            assert message["content"][0] == expected[0]


async def _run(db: Path, steps: list[tuple[bool, list[int], bool, bool]]) -> None:
    history = _history(steps)
    thinking = {
        call["id"]: message["thinking_blocks"][0]
        for message in history
        if message.get("thinking_blocks")
        for call in message["tool_calls"]
    }
    async with Session.open(model=CLAUDE, db=db, config=_config()) as session:
        await session.record_messages(history)
        chat = session.build_context()
        check_request(chat.messages)
        CHAT.validate_python(chat.messages)
        anthropic = session.build_context(format="anthropic")
        check_anthropic(anthropic)
        _check_thinking_opens_each_turn(anthropic, thinking)
        responses = session.build_context(format="responses")
        check_responses(responses)
        for request in (chat, anthropic, responses):
            assert request.tokens <= request.budget
        # Only the newest images go inline, in every format.
        newest = [
            url["image_url"]["url"].split(",", 1)[1]
            for message in history
            if isinstance(message["content"], list)
            for url in message["content"]
            if url.get("type") == "image_url"
        ][-MAX_INLINE:]
        for request in (chat.messages, anthropic["messages"], responses["input"]):
            sent = _sent_images(json.dumps(request))
            sent += [
                block["source"]["data"]
                for block in _blocks(request)
                if block.get("type") == "image" and block["source"]["type"] == "base64"
            ]
            assert set(sent) <= set(newest)
        # Every image reads back byte for byte.
        images = [
            part
            for message in session.history()
            for part in message.parts
            if isinstance(part, MediaPart)
        ]
        assert len(images) == sum(
            1
            for message in history
            if isinstance(message["content"], list)
            for url in message["content"]
            if url.get("type") == "image_url"
        )
        # No image's reference leaves the context: each is named in every request,
        # by its reference line, a summary, or the line that stands for what was
        # left out.
        for request in (chat.messages, anthropic["messages"], responses["input"]):
            named = json.dumps(request)
            assert all(str(part.media_id) in named for part in images)
        for part in images:
            assert part.media_id is not None
            data = await session.read_media(part.media_id)
            assert data[:8] == b"\x89PNG\r\n\x1a\n"
            assert b64(data) in json.dumps(history)


def _blocks(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """Every content block of Anthropic messages, those inside tool results too."""
    found: list[dict[str, Any]] = []
    for message in messages:
        content = message.get("content")
        for block in content if isinstance(content, list) else []:
            found.append(block)
            inner = block.get("content")
            if isinstance(inner, list):
                found.extend(inner)
    return found


@settings(
    max_examples=15,
    deadline=None,
    suppress_health_check=[HealthCheck.function_scoped_fixture, HealthCheck.too_slow],
)
@given(st.lists(step, min_size=1, max_size=12))
def test_every_format_holds_every_promise_over_random_runs(
    tmp_path: Path, steps: list[tuple[bool, list[int], bool, bool]]
) -> None:
    db = tmp_path / f"run-{abs(hash(json.dumps(steps)))}.db"
    anyio.run(_run, db, steps)
    for path in tmp_path.glob(db.name + "*"):
        path.unlink()


pytestmark = [pytest.mark.timeout(300)]
