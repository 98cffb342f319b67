"""OpenAI chat-completions payloads built from a :class:`Reply`."""

from __future__ import annotations

import json
import re
import time
from dataclasses import dataclass, field
from typing import Any

from ._reply import Reply, content_text
from ._signing import Signer

JSON = dict[str, Any]

WORDS_PER_CHUNK = 3
#: What a compaction summary is signed under, so that a thinking block's signature
#: never passes for a compaction block's.
COMPACTION_PREFIX = "compaction\0"
ARGUMENT_FRAGMENTS = 3

_WORD = re.compile(r"\S+\s*|\s+")


def estimate_tokens(chars: int) -> int:
    """One token per four characters, rounded up."""
    return (chars + 3) // 4


def request_chars(request: dict[str, Any]) -> int:
    """Characters of message text in a request, including tool-call names and arguments."""
    total = 0
    messages = request.get("messages")
    for message in messages if isinstance(messages, list) else []:
        if not isinstance(message, dict):
            continue
        total += len(content_text(message.get("content")))
        for call in message.get("tool_calls") or []:
            function = call.get("function") if isinstance(call, dict) else None
            if isinstance(function, dict):
                total += len(str(function.get("name", "")))
                total += len(str(function.get("arguments", "")))
    return total


def split_text(text: str, words_per_chunk: int = WORDS_PER_CHUNK) -> list[str]:
    """Split ``text`` into pieces of a few words that concatenate back to it exactly."""
    words = _WORD.findall(text)
    return ["".join(words[i : i + words_per_chunk]) for i in range(0, len(words), words_per_chunk)]


def split_arguments(arguments: str, fragments: int = ARGUMENT_FRAGMENTS) -> list[str]:
    """Split a tool call's argument string into up to ``fragments`` pieces."""
    if not arguments:
        return []
    size = -(-len(arguments) // fragments)
    return [arguments[i : i + size] for i in range(0, len(arguments), size)]


@dataclass(frozen=True)
class ToolCallOut:
    """A tool call with its id resolved and arguments serialised."""

    id: str
    name: str
    arguments: str


def _output_estimate(reply: Reply, calls: list[ToolCallOut]) -> int:
    """Completion tokens for a reply that names none: its text, reasoning and calls."""
    chars = len(reply.text) + len(reply.reasoning)
    return estimate_tokens(chars + sum(len(c.name) + len(c.arguments) for c in calls))


@dataclass(frozen=True)
class Completion:
    """Everything needed to render one response, fixed when the request arrives.

    The Chat Completions rendering lives here; the other endpoints render the same
    plan in their own formats.
    """

    reply: Reply
    completion_id: str
    model: str
    tool_calls: list[ToolCallOut]
    prompt_tokens: int
    completion_tokens: int
    created: int = field(default_factory=lambda: int(time.time()))
    #: Prompt tokens reported as served from a prompt cache; None reports none.
    cached_tokens: int | None = None
    #: The server's signature of the reply's reasoning text ("" without reasoning).
    signature: str = ""
    #: The reasoning sealed into an opaque token ("" without reasoning).
    sealed_reasoning: str = ""
    #: The server's signature of the reply's compaction summary ("" without one).
    compaction_signature: str = ""

    @classmethod
    def plan(
        cls,
        reply: Reply,
        request: dict[str, Any],
        completion_id: str,
        tool_ids: list[str],
        cached_tokens: int | None = None,
        *,
        prompt_chars: int | None = None,
        signer: Signer | None = None,
    ) -> Completion:
        """Resolve ids and token counts; ``tool_ids`` supplies ids for unnamed calls.

        ``prompt_chars`` is the request's text size when it is not a Chat Completions
        body; ``signer`` signs the reasoning.
        """
        pending = iter(tool_ids)
        calls = [
            ToolCallOut(
                id=spec.id if spec.id is not None else next(pending),
                name=spec.name,
                arguments=spec.arguments_json(),
            )
            for spec in reply.tool_calls
        ]
        prompt = reply.prompt_tokens
        if prompt is None:
            chars = request_chars(request) if prompt_chars is None else prompt_chars
            prompt = max(1, estimate_tokens(chars))
        completion = reply.completion_tokens
        if completion is None:
            completion = _output_estimate(reply, calls)
        if reply.cached_tokens is not None:
            cached_tokens = reply.cached_tokens
        model = request.get("model")
        signature = sealed = compacted = ""
        if signer is not None and reply.reasoning:
            signature, sealed = signer.sign(reply.reasoning), signer.seal(reply.reasoning)
        if signer is not None and reply.compaction:
            compacted = signer.sign(COMPACTION_PREFIX + reply.compaction)
        return cls(
            reply=reply,
            completion_id=completion_id,
            model=model if isinstance(model, str) else "unknown",
            tool_calls=calls,
            prompt_tokens=prompt,
            completion_tokens=completion,
            cached_tokens=None if cached_tokens is None else min(cached_tokens, prompt),
            signature=signature,
            sealed_reasoning=sealed,
            compaction_signature=compacted,
        )

    @property
    def reasoning_tokens(self) -> int:
        """Completion tokens spent on reasoning: its share, by characters, at most all."""
        return min(self.completion_tokens, estimate_tokens(len(self.reply.reasoning)))

    def thinking_blocks(self) -> list[JSON]:
        """The reasoning as Anthropic thinking blocks, as litellm carries them."""
        if not self.reply.reasoning:
            return []
        if self.reply.reasoning_redacted:
            return [{"type": "redacted_thinking", "data": self.sealed_reasoning}]
        return [{"type": "thinking", "thinking": self.reply.reasoning, "signature": self.signature}]

    def _carries_thinking_blocks(self) -> bool:
        # Servers that relay Anthropic models over Chat Completions (litellm's proxy,
        # routers) add the signed blocks, which litellm reads back as thinking_blocks.
        name = self.model.lower()
        return "claude" in name or "anthropic" in name

    def usage(self) -> JSON:
        """The ``usage`` object."""
        usage: JSON = {
            "prompt_tokens": self.prompt_tokens,
            "completion_tokens": self.completion_tokens,
            "total_tokens": self.prompt_tokens + self.completion_tokens,
        }
        if self.cached_tokens is not None:
            usage["prompt_tokens_details"] = {"cached_tokens": self.cached_tokens}
        if self.reply.reasoning:
            usage["completion_tokens_details"] = {"reasoning_tokens": self.reasoning_tokens}
        return usage

    def message(self) -> JSON:
        """The non-streaming response body."""
        message: JSON = {
            "role": "assistant",
            "content": self.reply.text if self.reply.text or not self.tool_calls else None,
            "refusal": None,
        }
        if self.reply.reasoning and not self.reply.reasoning_redacted:
            message["reasoning_content"] = self.reply.reasoning
        if self.reply.reasoning and self._carries_thinking_blocks():
            message["thinking_blocks"] = self.thinking_blocks()
        if self.tool_calls:
            message["tool_calls"] = [
                {
                    "id": call.id or None,
                    "type": "function",
                    "function": {"name": call.name, "arguments": call.arguments},
                }
                for call in self.tool_calls
            ]
        return {
            "id": self.completion_id,
            "object": "chat.completion",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": None,
            "choices": [
                {
                    "index": 0,
                    "message": message,
                    "logprobs": None,
                    "finish_reason": self.reply.effective_finish_reason,
                }
            ],
            "usage": self.usage(),
        }

    def _chunk(self, delta: JSON, finish_reason: str | None, include_usage: bool) -> JSON:
        chunk: JSON = {
            "id": self.completion_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": None,
            "choices": [
                {"index": 0, "delta": delta, "logprobs": None, "finish_reason": finish_reason}
            ],
        }
        if include_usage:
            # OpenAI sends an explicit null on every chunk but the last when usage is on.
            chunk["usage"] = None
        return chunk

    def role_chunk(self, include_usage: bool) -> JSON:
        """The first chunk, announcing the assistant role."""
        return self._chunk({"role": "assistant", "content": ""}, None, include_usage)

    def body_chunks(self, include_usage: bool) -> list[JSON]:
        """Reasoning chunks, content chunks, then tool-call fragments."""
        chunks = [self._chunk(delta, None, include_usage) for delta in self._reasoning_deltas()]
        chunks += [
            self._chunk({"content": piece}, None, include_usage)
            for piece in split_text(self.reply.text)
        ]
        for index, call in enumerate(self.tool_calls):
            head = {
                "index": index,
                "id": call.id or None,
                "type": "function",
                "function": {"name": call.name, "arguments": ""},
            }
            chunks.append(self._chunk({"tool_calls": [head]}, None, include_usage))
            for piece in split_arguments(call.arguments):
                fragment = {"index": index, "function": {"arguments": piece}}
                chunks.append(self._chunk({"tool_calls": [fragment]}, None, include_usage))
        return chunks

    def _reasoning_deltas(self) -> list[JSON]:
        """The reasoning streamed as litellm streams an Anthropic model's thinking.

        Pieces of text first, each with its thinking-block fragment when the model is
        Anthropic-style, then the signature alone: litellm's stream builder closes a
        thinking block when its signature arrives.
        """
        reasoning, blocks = self.reply.reasoning, self._carries_thinking_blocks()
        if not reasoning:
            return []
        if self.reply.reasoning_redacted:
            return [{"thinking_blocks": self.thinking_blocks()}] if blocks else []
        deltas: list[JSON] = []
        for piece in split_text(reasoning):
            delta: JSON = {"reasoning_content": piece}
            if blocks:
                delta["thinking_blocks"] = [{"type": "thinking", "thinking": piece}]
            deltas.append(delta)
        if blocks:
            signed = {"type": "thinking", "thinking": "", "signature": self.signature}
            deltas.append({"reasoning_content": "", "thinking_blocks": [signed]})
        return deltas

    def final_chunk(self, include_usage: bool) -> JSON:
        """The chunk carrying ``finish_reason``."""
        return self._chunk({}, self.reply.effective_finish_reason, include_usage)

    def usage_chunk(self) -> JSON:
        """The trailing chunk sent when ``stream_options.include_usage`` is set."""
        return {
            "id": self.completion_id,
            "object": "chat.completion.chunk",
            "created": self.created,
            "model": self.model,
            "system_fingerprint": None,
            "choices": [],
            "usage": self.usage(),
        }


_ERROR_TYPES = {
    400: ("invalid_request_error", None),
    401: ("authentication_error", "invalid_api_key"),
    403: ("permission_error", None),
    404: ("not_found_error", None),
    429: ("rate_limit_error", "rate_limit_exceeded"),
}


def error_body(status: int, message: str) -> JSON:
    """An OpenAI-style error object for ``status``."""
    kind, code = _ERROR_TYPES.get(status, ("server_error" if status >= 500 else "api_error", None))
    return {"error": {"message": message, "type": kind, "param": None, "code": code}}


def encode(payload: JSON) -> bytes:
    """Serialise a payload compactly."""
    return json.dumps(payload, separators=(",", ":")).encode()
