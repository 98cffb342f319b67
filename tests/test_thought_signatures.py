"""Gemini's thought signatures survive the store: litellm hands a signature over on
a tool call (``provider_specific_fields`` and the call's id after ``__thought__``),
and every function call of the current turn goes back with it, as litellm's own
Gemini conversion of the request shows, whether the signed id fits the store's
limit on ids or not."""

from __future__ import annotations

import base64
import json
from pathlib import Path
from typing import Any

import pytest

from lossless import ReasoningPart, ToolPart
from lossless.config import Config, LLMConfig, ModelConfig
from lossless.session import Session
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends, pytest.mark.timeout(60)]

GEMINI = "gemini/gemini-3-pro-preview"
# Signatures as long as Gemini's often are: a signed id is past 512 bytes.
LONG = base64.b64encode(bytes(range(256)) * 3).decode()
SHORT = base64.b64encode(b"a short signature").decode()


def gemini_calls(messages: list[dict[str, Any]]) -> list[dict[str, Any]]:
    """The function-call parts of litellm's Gemini request for ``messages``."""
    from litellm.llms.vertex_ai.gemini.transformation import (
        gemini_convert_messages_with_history,
    )

    contents = gemini_convert_messages_with_history(
        messages=[m for m in messages if m["role"] != "system"],  # type: ignore[misc]
        model="gemini-3-pro-preview",
    )
    return [
        part
        for content in contents
        for part in content["parts"]
        if "function_call" in part or "functionCall" in part
    ]


def call(call_id: str, path: str, signature: str | None = None) -> dict[str, Any]:
    tool: dict[str, Any] = {
        "id": call_id,
        "type": "function",
        "function": {"name": "read", "arguments": json.dumps({"path": path})},
    }
    if signature is not None:
        tool["provider_specific_fields"] = {"thought_signature": signature}
    return tool


def config(api_base: str = "http://127.0.0.1:9") -> Config:
    return Config(
        model=ModelConfig(context_limit=32_000, max_output_tokens=1_000, profile="default"),
        llm=LLMConfig(api_base=api_base, api_key="test", num_retries=0),
    )


async def test_every_call_of_the_turn_goes_back_with_its_signature(database: Path | str) -> None:
    long_id = f"call_a__thought__{LONG}"
    short_id = f"call_c__thought__{SHORT}"
    history = [
        {"role": "user", "content": "Read the ledger."},
        # Gemini signs the first call of a parallel batch only.
        {"role": "assistant", "content": None, "tool_calls": [call(long_id, "a.py", LONG)]},
        {"role": "tool", "tool_call_id": long_id, "content": "a"},
        {
            "role": "assistant",
            "content": None,
            "tool_calls": [call(short_id, "c.py", SHORT), call("call_d", "d.py")],
        },
        {"role": "tool", "tool_call_id": short_id, "content": "c"},
        {"role": "tool", "tool_call_id": "call_d", "content": "d"},
    ]
    async with Session.open(model=GEMINI, db=database, config=config()) as session:
        await session.record_messages(history)
        first, second = session.history()[1:]
        # The long signed id is stored without its signature, which a part keeps.
        signature, read_a = first.parts
        assert isinstance(read_a, ToolPart) and read_a.call_id == "call_a"
        assert signature == ReasoningPart(
            "gemini",
            None,
            json.dumps(
                {"type": "thought_signature", "id": "call_a", "signature": LONG},
                separators=(",", ":"),
            ),
        )
        # A signed id the store takes is kept as it came, and carries its signature.
        assert [type(part) for part in second.parts] == [ToolPart, ToolPart]
        assert [part.call_id for part in second.parts if isinstance(part, ToolPart)] == [
            short_id,
            "call_d",
        ]
        calls = gemini_calls(session.build_context().messages)
    assert [part.get("thoughtSignature") for part in calls] == [LONG, SHORT, None]


async def test_a_signature_only_in_provider_fields_is_kept_and_a_long_id_answers(
    database: Path | str,
) -> None:
    async with Session.open(model=GEMINI, db=database, config=config()) as session:
        await session.record_messages(
            [
                {"role": "user", "content": "Read a.py."},
                {"role": "assistant", "content": None, "tool_calls": [call("c1", "a.py", LONG)]},
            ]
        )
        # An own loop answers by the id litellm handed it.
        await session.update_tool(f"c1__thought__{LONG}", status="completed", output="a")
        messages = session.build_context().messages
        assert messages[-1]["tool_call_id"] == f"c1__thought__{LONG}"
        assert [part.get("thoughtSignature") for part in gemini_calls(messages)] == [LONG]
        # A new instruction ends the turn: Gemini checks no signature of an older
        # turn, which goes without its own (litellm puts Gemini's placeholder).
        await session.record("user", "Thanks.")
        messages = session.build_context().messages
        (older,) = gemini_calls(messages)
        assert older.get("thoughtSignature") != LONG


async def test_send_keeps_a_signed_id_past_the_limit_and_sends_it_back(
    database: Path | str,
) -> None:
    signed = f"call_7__thought__{LONG}"
    with LocalLLMServer() as server:
        server.enqueue(
            Reply(tool_calls=[ToolCallSpec("read", {"path": "a.py"}, id=signed)]),
            Reply(text="Read."),
        )
        cfg = config(server.base_url)
        async with Session.open(model="openai/lossless-test", db=database, config=cfg) as s:
            result = await s.send("Read a.py.")
            (read,) = result.tool_calls
            assert read.call_id == "call_7"
            assert [part.payload for part in result.reasoning] == [
                {"type": "thought_signature", "id": "call_7", "signature": LONG}
            ]
            await s.update_tool(read.call_id, status="completed", output="a")
            # The request the next step sends, as litellm is handed it.
            request = (await s.context()).messages
            assert request[1]["tool_calls"][0]["id"] == signed
            assert request[2]["tool_call_id"] == signed
            assert [part.get("thoughtSignature") for part in gemini_calls(request)] == [LONG]
            assert (await s.respond()).text == "Read."
