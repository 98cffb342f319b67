"""A model turn keeps the reasoning litellm streams from Anthropic, before the
reply's text and calls, and the next step of the tool loop sends it back: the
requests go through litellm's own Anthropic client to a stand-in server that
streams Anthropic's events and records what it was sent."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from types import SimpleNamespace
from typing import Any

import pytest

from lossless import ReasoningPart, TextPart, ToolPart
from lossless.config import Config, LLMConfig, ModelConfig
from lossless.reasoning import ReasoningStream
from lossless.session import Session

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

SIGNATURE = "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds"
REDACTED = "EmwKAhgBEgy3va3pzix/LafPsn4aDFIT2Xlxh0L5L8rLVyIwxtE3rAFBa8cr3qpP"
READ = {
    "type": "function",
    "function": {
        "name": "read",
        "description": "Read a file.",
        "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
    },
}


def _events(*blocks: tuple[dict[str, Any], list[dict[str, Any]]], stop: str) -> list[dict]:
    """A streamed Anthropic message: each block's start and deltas, then its end."""
    events: list[dict[str, Any]] = [
        {
            "type": "message_start",
            "message": {
                "id": "msg_1",
                "type": "message",
                "role": "assistant",
                "model": "claude-sonnet-4-5",
                "content": [],
                "stop_reason": None,
                "stop_sequence": None,
                "usage": {"input_tokens": 50, "output_tokens": 1},
            },
        }
    ]
    for index, (start, deltas) in enumerate(blocks):
        events.append({"type": "content_block_start", "index": index, "content_block": start})
        events.extend(
            {"type": "content_block_delta", "index": index, "delta": delta} for delta in deltas
        )
        events.append({"type": "content_block_stop", "index": index})
    events.append(
        {
            "type": "message_delta",
            "delta": {"stop_reason": stop, "stop_sequence": None},
            "usage": {"output_tokens": 30},
        }
    )
    events.append({"type": "message_stop"})
    return events


TOOL_TURN = _events(
    (
        {"type": "thinking", "thinking": "", "signature": ""},
        [
            {"type": "thinking_delta", "thinking": "The ledger "},
            {"type": "thinking_delta", "thinking": "comes first."},
            {"type": "signature_delta", "signature": SIGNATURE},
        ],
    ),
    ({"type": "redacted_thinking", "data": REDACTED}, []),
    ({"type": "text", "text": ""}, [{"type": "text_delta", "text": "Reading it."}]),
    (
        {"type": "tool_use", "id": "toolu_01", "name": "read", "input": {}},
        [{"type": "input_json_delta", "partial_json": '{"path": "ledger.py"}'}],
    ),
    stop="tool_use",
)
ANSWER = _events(
    ({"type": "text", "text": ""}, [{"type": "text_delta", "text": "It balances."}]),
    stop="end_turn",
)


class _Anthropic(ThreadingHTTPServer):
    """Streams the scripted messages in turn and keeps each request's body."""

    def __init__(self, replies: list[list[dict[str, Any]]]) -> None:
        super().__init__(("127.0.0.1", 0), _Handler)
        self.replies = replies
        self.requests: list[dict[str, Any]] = []


class _Handler(BaseHTTPRequestHandler):
    server: _Anthropic

    def log_message(self, format: str, *args: Any) -> None:
        pass

    def do_POST(self) -> None:
        body = self.rfile.read(int(self.headers["Content-Length"]))
        self.server.requests.append(json.loads(body))
        events = self.server.replies.pop(0)
        self.send_response(200)
        self.send_header("Content-Type", "text/event-stream")
        self.end_headers()
        for event in events:
            self.wfile.write(f"event: {event['type']}\ndata: {json.dumps(event)}\n\n".encode())
        self.wfile.flush()


@pytest.fixture
def anthropic() -> Iterator[_Anthropic]:
    server = _Anthropic([TOOL_TURN, ANSWER, ANSWER])
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield server
    finally:
        server.shutdown()
        server.server_close()


def _config(server: _Anthropic) -> Config:
    host, port = server.server_address[:2]
    return Config(
        model=ModelConfig(context_limit=32_000, max_output_tokens=1_000, profile="default"),
        llm=LLMConfig(api_base=f"http://{host}:{port}", api_key="test", num_retries=0),
    )


def _assistant_turns(request: dict[str, Any]) -> list[list[dict[str, Any]]]:
    return [m["content"] for m in request["messages"] if m["role"] == "assistant"]


async def test_streamed_reasoning_is_stored_first_and_sent_back_in_its_loop(
    anthropic: _Anthropic, database: Path | str
) -> None:
    async with Session.open(
        model="anthropic/claude-sonnet-4-5", db=database, config=_config(anthropic)
    ) as session:
        result = await session.send("Settle the ledger.", tools=[READ])
        assert [call.call_id for call in result.tool_calls] == ["toolu_01"]
        parts = session.history()[-1].parts
        thinking = {
            "type": "thinking",
            "thinking": "The ledger comes first.",
            "signature": SIGNATURE,
        }
        redacted = {"type": "redacted_thinking", "data": REDACTED}
        assert parts[:3] == [
            ReasoningPart(
                "anthropic", "The ledger comes first.", json.dumps(thinking, separators=(",", ":"))
            ),
            ReasoningPart("anthropic", None, json.dumps(redacted, separators=(",", ":"))),
            TextPart("Reading it."),
        ]
        assert isinstance(parts[3], ToolPart) and parts[3].call_id == "toolu_01"

        await session.update_tool("toolu_01", status="completed", output="def settle(): pass")
        await session.respond(tools=[READ])
        (turn,) = _assistant_turns(anthropic.requests[1])
        assert turn[:2] == [thinking, redacted]
        assert [block["type"] for block in turn[2:]] == ["text", "tool_use"]

        # A new user turn closes the loop: its blocks are not sent again.
        await session.send("Thanks.", tools=[READ])
        turns = _assistant_turns(anthropic.requests[2])
        assert all(block["type"] not in ("thinking", "redacted_thinking") for block in turns[0])


def _delta(**fields: Any) -> SimpleNamespace:
    return SimpleNamespace(**fields)


def test_pieces_of_a_block_end_at_its_signature_and_the_rest_is_text() -> None:
    parts: list[ReasoningPart] = []
    stream = ReasoningStream("anthropic", parts)
    for piece in ["The ", "ledger."]:
        fragment = {"type": "thinking", "thinking": piece, "index": 0}
        stream.add(_delta(reasoning_content=piece, thinking_blocks=[fragment]))
    signed = {"type": "thinking", "thinking": "", "signature": "U0lH", "index": 0}
    stream.add(_delta(reasoning_content="", thinking_blocks=[signed]))
    stream.add(_delta(thinking_blocks=[{"type": "redacted_thinking", "data": "RA==", "index": 1}]))
    # A block the stream broke off before its signature: its text is kept alone.
    cut = {"type": "thinking", "thinking": "Then the", "index": 2}
    stream.add(_delta(reasoning_content="Then the", thinking_blocks=[cut]))
    stream.finish()
    assert parts == [
        ReasoningPart(
            "anthropic",
            "The ledger.",
            {"type": "thinking", "thinking": "The ledger.", "signature": "U0lH"},
        ),
        ReasoningPart("anthropic", None, {"type": "redacted_thinking", "data": "RA=="}),
        ReasoningPart("anthropic", "Then the"),
    ]


def test_readable_reasoning_alone_becomes_one_part_of_text() -> None:
    parts: list[ReasoningPart] = []
    stream = ReasoningStream("deepseek", parts)
    for piece in ["Two and ", "two."]:
        stream.add(_delta(reasoning_content=piece, thinking_blocks=None, content=None))
    stream.add(_delta(content="4"))
    stream.finish()
    assert parts == [ReasoningPart("deepseek", "Two and two.")]
