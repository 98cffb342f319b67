"""Anthropic's Messages API (``POST /v1/messages``) for the local server."""

from __future__ import annotations

import json
from typing import Any

from ._anthropic_checks import cache_marks, compaction_enabled, refusal, thinking_enabled
from ._formats import Event, Refusal, Stream, WireFormat
from ._reply import content_text
from ._signing import Signer
from ._wire import JSON, Completion, ToolCallOut, split_arguments, split_text

__all__ = ["AnthropicFormat", "anthropic_error"]

_ERROR_TYPES = {
    400: "invalid_request_error",
    401: "authentication_error",
    403: "permission_error",
    404: "not_found_error",
    413: "request_too_large",
    429: "rate_limit_error",
    500: "api_error",
    529: "overloaded_error",
}
# Chat Completions finish reasons a Reply may name, as Anthropic's stop reasons.
_STOP_REASONS = {
    "stop": "end_turn",
    "tool_calls": "tool_use",
    "length": "max_tokens",
    "content_filter": "refusal",
}


def anthropic_error(status: int, message: str) -> JSON:
    """Anthropic's error body for ``status``."""
    kind = _ERROR_TYPES.get(status, "api_error" if status >= 500 else "invalid_request_error")
    return {"type": "error", "error": {"type": kind, "message": message}}


class AnthropicFormat(WireFormat):
    """Anthropic Messages: ``POST /v1/messages``.

    Refused with HTTP 400 and ``invalid_request_error``, as the provider refuses them:
    a missing ``model``, ``messages`` or ``max_tokens``; a ``thinking`` budget under
    1024 tokens or not under ``max_tokens``; no messages, a first message not from
    the user, roles that do not alternate; empty content or empty text blocks; a
    block of an unknown type; a ``tool_use`` not answered by a ``tool_result`` in
    the next message, a ``tool_result`` answering no ``tool_use`` of the message
    before, a ``tool_result`` after other content, a repeated ``tool_use`` id; a
    ``thinking`` block without a ``signature`` or whose signature this server did
    not issue for its text, a ``redacted_thinking`` block whose ``data`` it did not
    issue; with thinking enabled, a last assistant message that calls tools without
    opening with a thinking block; more than four ``cache_control`` marks; a
    ``compaction`` block outside an assistant message, in a request that did not
    turn compaction on, or whose summary or signature this server did not issue.
    The provider reads a request from its newest compaction block on: what the
    responder sees and the prompt tokens reported start there.
    """

    name = "anthropic"
    paths = ("/v1/messages",)
    response_prefix = "msg_"
    tool_prefix = "toolu_"
    malformed_body = b'{"id":"msg_malformed","type":"message","content":[{'

    def __init__(self, signer: Signer) -> None:
        """Check thinking signatures with ``signer``, the server's."""
        self._signer = signer

    def conversation(self, body: dict[str, Any]) -> dict[str, Any]:
        """The request as a Chat Completions body: system first, results as tool messages."""
        messages: list[JSON] = []
        system = content_text(body.get("system"))
        if system:
            messages.append({"role": "system", "content": system})
        for message in _from_compaction(body.get("messages") or []):
            if isinstance(message, dict):
                messages.extend(_chat_messages(message))
        view: JSON = {key: body[key] for key in ("model", "stream", "max_tokens") if key in body}
        view["messages"] = messages
        return view

    def check(self, body: dict[str, Any]) -> Refusal | None:
        """Anthropic's ``invalid_request_error`` for what the provider refuses."""
        message = refusal(body, self._signer)
        return None if message is None else Refusal(400, anthropic_error(400, message))

    def error(self, status: int, message: str) -> JSON:
        """Anthropic's error body."""
        return anthropic_error(status, message)

    def render(self, plan: Completion, body: dict[str, Any]) -> JSON:
        """The ``message`` object."""
        message = _message(plan, body, _content(plan, body))
        message["stop_reason"] = _stop_reason(plan)
        return message

    def stream(self, plan: Completion, body: dict[str, Any]) -> Stream | None:
        """``message_start``, a ping, each block's start, deltas and stop, then
        ``message_delta`` (stop reason, output tokens) and ``message_stop``."""
        if body.get("stream") is not True:
            return None
        start = _message(plan, body, [])
        start["usage"]["output_tokens"] = 1  # as the provider reports before any output
        head = [
            Event.of({"type": "message_start", "message": start}, "message_start"),
            Event.of({"type": "ping"}, "ping"),
        ]
        events: list[Event] = []
        for index, block in enumerate(_content(plan, body)):
            events.extend(_block_events(index, block))
        delta = {
            "type": "message_delta",
            "delta": {"stop_reason": _stop_reason(plan), "stop_sequence": None},
            "usage": {"output_tokens": plan.completion_tokens},
        }
        tail = [
            Event.of(delta, "message_delta"),
            Event.of({"type": "message_stop"}, "message_stop"),
        ]
        return Stream(head, events, tail, broken=Event(b"{not json", "content_block_delta"))


def _from_compaction(messages: list[Any]) -> list[Any]:
    """What the provider reads of ``messages``: from the newest compaction block on,
    the block standing for everything before it (as its summary, a user turn)."""
    for index in range(len(messages) - 1, -1, -1):
        message = messages[index]
        content = message.get("content") if isinstance(message, dict) else None
        blocks = content if isinstance(content, list) else []
        at = next((i for i in range(len(blocks) - 1, -1, -1) if _is_compaction(blocks[i])), None)
        if at is not None:
            summary = {"role": "user", "content": str(blocks[at].get("content", ""))}
            rest = {**message, "content": blocks[at + 1 :]}
            return [summary, *([rest] if rest["content"] else []), *messages[index + 1 :]]
    return messages


def _is_compaction(block: object) -> bool:
    return isinstance(block, dict) and block.get("type") == "compaction"


def _chat_messages(message: JSON) -> list[JSON]:
    """One Anthropic message as Chat Completions messages."""
    role, content = message.get("role"), message.get("content")
    if not isinstance(content, list):
        return [{"role": role, "content": content}]
    blocks = [block for block in content if isinstance(block, dict)]
    if role == "assistant":
        chat: JSON = {"role": "assistant", "content": content_text(blocks) or None}
        calls = [
            {
                "id": block.get("id"),
                "type": "function",
                "function": {
                    "name": block.get("name"),
                    "arguments": json.dumps(block.get("input")),
                },
            }
            for block in blocks
            if block.get("type") == "tool_use"
        ]
        if calls:
            chat["tool_calls"] = calls
        return [chat]
    results = [
        {
            "role": "tool",
            "tool_call_id": b.get("tool_use_id"),
            "content": content_text(b.get("content")),
        }
        for b in blocks
        if b.get("type") == "tool_result"
    ]
    rest = [block for block in blocks if block.get("type") != "tool_result"]
    return results + ([{"role": role, "content": rest}] if rest else [])


def _stop_reason(plan: Completion) -> str:
    reason = plan.reply.effective_finish_reason
    return _STOP_REASONS.get(reason, reason)


def _usage(plan: Completion, body: JSON) -> JSON:
    """Anthropic's usage: ``input_tokens`` counts only what the cache neither read nor
    wrote, so the three input counts add up to the prompt."""
    read = plan.cached_tokens or 0
    # With a cache mark, the provider writes what it did not read up to the mark; the
    # marks litellm and lossless place sit at the end of the prompt.
    written = (
        plan.prompt_tokens - read if plan.cached_tokens is not None and cache_marks(body) else 0
    )
    return {
        "input_tokens": plan.prompt_tokens - read - written,
        "output_tokens": plan.completion_tokens,
        "cache_creation_input_tokens": written,
        "cache_read_input_tokens": read,
    }


def _message(plan: Completion, body: JSON, content: list[JSON]) -> JSON:
    return {
        "id": plan.completion_id,
        "type": "message",
        "role": "assistant",
        "model": plan.model,
        "content": content,
        "stop_reason": None,
        "stop_sequence": None,
        "usage": _usage(plan, body),
    }


def _tool_input(call: ToolCallOut) -> object:
    """The call's arguments as an object; arguments that are not one go as the raw
    string, so a test can still hand the client a malformed call."""
    try:
        parsed = json.loads(call.arguments) if call.arguments else {}
    except ValueError:
        return call.arguments
    return parsed if isinstance(parsed, dict) else call.arguments


def _content(plan: Completion, body: JSON) -> list[JSON]:
    """The reply's content blocks: compaction and thinking (each if the request
    enabled it), text, tool uses."""
    blocks: list[JSON] = []
    if plan.reply.compaction and compaction_enabled(body):
        summary, signature = plan.reply.compaction, plan.compaction_signature
        blocks.append({"type": "compaction", "content": summary, "signature": signature})
    blocks += plan.thinking_blocks() if thinking_enabled(body) else []
    if plan.reply.text or not (plan.tool_calls or blocks):
        blocks.append({"type": "text", "text": plan.reply.text})
    blocks.extend(
        {"type": "tool_use", "id": call.id, "name": call.name, "input": _tool_input(call)}
        for call in plan.tool_calls
    )
    return blocks


def _opened(block: JSON) -> JSON:
    """A block as ``content_block_start`` announces it, empty until its deltas."""
    kind = block["type"]
    if kind == "thinking":
        return {"type": "thinking", "thinking": "", "signature": ""}
    if kind == "text":
        return {"type": "text", "text": ""}
    if kind == "tool_use":
        return {**block, "input": {}}
    if kind == "compaction":
        return {**block, "content": ""}  # its summary streams in deltas
    return block  # redacted_thinking: its data comes whole with the start


def _deltas(block: JSON) -> list[JSON]:
    """The ``content_block_delta`` payloads that fill a block."""
    kind = block["type"]
    if kind == "thinking":
        pieces = split_text(block["thinking"])
        deltas = [{"type": "thinking_delta", "thinking": piece} for piece in pieces]
        return [*deltas, {"type": "signature_delta", "signature": block["signature"]}]
    if kind == "text":
        return [{"type": "text_delta", "text": piece} for piece in split_text(block["text"])]
    if kind == "compaction":
        pieces = split_text(block["content"])
        return [{"type": "compaction_delta", "content": piece} for piece in pieces]
    if kind == "tool_use":
        arguments = block["input"]
        raw = arguments if isinstance(arguments, str) else json.dumps(arguments)
        return [{"type": "input_json_delta", "partial_json": p} for p in split_arguments(raw)]
    return []


def _block_events(index: int, block: JSON) -> list[Event]:
    """One content block streamed: its start, its deltas, its stop."""
    start = {"type": "content_block_start", "index": index, "content_block": _opened(block)}
    events = [Event.of(start, "content_block_start")]
    for delta in _deltas(block):
        payload = {"type": "content_block_delta", "index": index, "delta": delta}
        events.append(Event.of(payload, "content_block_delta"))
    events.append(Event.of({"type": "content_block_stop", "index": index}, "content_block_stop"))
    return events
