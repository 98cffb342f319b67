"""Replies the local server sends, and the responders that choose them."""

from __future__ import annotations

import json
import threading
from collections import deque
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any, Protocol, runtime_checkable

__all__ = [
    "EchoResponder",
    "Reply",
    "Responder",
    "ScriptedResponder",
    "SummaryResponder",
    "ToolCallSpec",
    "content_text",
]


@dataclass(frozen=True)
class ToolCallSpec:
    """One tool call the fake model asks the client to make.

    Attributes:
        name: Function name sent in ``function.name``.
        arguments: A mapping, serialised with :func:`json.dumps`, or a string sent
            verbatim (so a test can hand the client arguments that are not valid JSON).
        id: The tool call id. ``None`` lets the server assign ``call_<n>``, where
            ``n`` counts the tool calls it has emitted since it started or was reset,
            starting at 1.  ``""`` sends the call with no id at all, as some
            servers do.
    """

    name: str
    arguments: Mapping[str, Any] | str = field(default_factory=dict)
    id: str | None = None

    def arguments_json(self) -> str:
        """Return the arguments exactly as they go on the wire."""
        if isinstance(self.arguments, str):
            return self.arguments
        return json.dumps(dict(self.arguments))


@dataclass(frozen=True)
class Reply:
    """What the server answers to one request, on any of its endpoints.

    The server renders one :class:`Reply` in the wire format of the endpoint called:
    Chat Completions, Anthropic Messages or OpenAI Responses.

    Attributes:
        text: Assistant message content.
        tool_calls: Tool calls to return, in order.
        reasoning: The model's reasoning before it answers, signed by the server.
            Chat Completions: ``reasoning_content`` on the message (or delta), and
            ``thinking_blocks`` with a signature when the request names an
            Anthropic-style model (its name holds ``claude`` or ``anthropic``).
            Anthropic: a ``thinking`` block with a ``signature``, when the request
            enabled ``thinking`` (left out otherwise, as the provider would).
            Responses: a ``reasoning`` item with the text as its summary, and an
            ``encrypted_content`` token when the request's ``include`` asks for it.
        compaction: A summary of the conversation so far that the provider's own
            compaction made: the Anthropic endpoint opens the reply with a signed
            ``compaction`` block holding it, when the request turned compaction on
            (a ``compact_20260112`` edit in ``context_management``); the provider
            then reads the block back in place of everything before it. Other
            endpoints leave it out.
        reasoning_redacted: Send the reasoning as the provider's opaque form only:
            an Anthropic ``redacted_thinking`` block, a Chat Completions redacted
            thinking block (no ``reasoning_content``), a Responses ``reasoning``
            item with no summary. Requires ``reasoning``.
        finish_reason: ``None`` means ``"tool_calls"`` when there are tool calls,
            otherwise ``"stop"``.
        prompt_tokens: Reported prompt tokens; ``None`` means an estimate of one token
            per four characters of the request's message text (at least 1).
        completion_tokens: Reported completion tokens; ``None`` means one token per four
            characters of ``text``, ``reasoning``, tool names and arguments (rounded up).
        cached_tokens: Prompt tokens reported as read from a prompt cache; ``None``
            leaves it to the server (see ``LocalLLMServer(report_cached_tokens=...)``).
        latency_s: Delay before the first byte of the response.
        chunk_delay_s: Delay between streamed chunks.
        status: HTTP status. Anything but 200 returns the endpoint's error body (an
            OpenAI-style one, or Anthropic's ``{"type": "error", ...}``) whose message
            is ``text`` when given.
        hang: Accept the request and never answer; the handler gives up when the
            client disconnects or the server stops.
        malformed: Streaming: a few valid chunks, then ``data: {not json``, then the
            body ends. Non-streaming: status 200 with a body that is not valid JSON.
        disconnect_after_chunks: Streaming: after the opening events (the role chunk;
            Anthropic's ``message_start``; ``response.created``), send this many
            content or tool-call events, then close the connection without finishing
            the chunked body and without the closing events (``data: [DONE]``;
            ``message_stop``; ``response.completed``). Non-streaming: close the
            connection without sending a response.
    """

    text: str = ""
    tool_calls: list[ToolCallSpec] = field(default_factory=list)
    finish_reason: str | None = None
    prompt_tokens: int | None = None
    completion_tokens: int | None = None
    latency_s: float = 0.0
    chunk_delay_s: float = 0.0
    status: int = 200
    hang: bool = False
    malformed: bool = False
    disconnect_after_chunks: int | None = None
    # Added after the original fields so positional construction keeps its meaning.
    reasoning: str = ""
    reasoning_redacted: bool = False
    cached_tokens: int | None = None
    compaction: str = ""

    def __post_init__(self) -> None:
        if not 100 <= self.status <= 599:
            raise ValueError(f"status must be an HTTP status code, got {self.status}")
        if self.latency_s < 0 or self.chunk_delay_s < 0:
            raise ValueError("delays must not be negative")
        if self.disconnect_after_chunks is not None and self.disconnect_after_chunks < 0:
            raise ValueError("disconnect_after_chunks must not be negative")
        for count in (self.prompt_tokens, self.completion_tokens, self.cached_tokens):
            if count is not None and count < 0:
                raise ValueError("token counts must not be negative")
        if self.reasoning_redacted and not self.reasoning:
            raise ValueError("reasoning_redacted needs the reasoning text to seal")

    @property
    def effective_finish_reason(self) -> str:
        """The finish reason actually sent."""
        if self.finish_reason is not None:
            return self.finish_reason
        return "tool_calls" if self.tool_calls else "stop"


@runtime_checkable
class Responder(Protocol):
    """Makes a reply from a request body when no scripted reply is queued.

    Called from the server's handler threads, possibly concurrently. Requests to the
    Anthropic and Responses endpoints arrive translated to a Chat Completions body
    (``model``, ``messages`` with the system prompt first and tool results as
    ``tool`` messages), so one responder serves every endpoint.
    """

    def __call__(self, request: dict[str, Any]) -> Reply:
        """Return the reply for ``request`` (the decoded JSON body, or its translation)."""
        ...


def content_text(content: object) -> str:
    """Flatten an OpenAI message ``content`` (string, parts list or None) to text.

    Text parts are joined with newlines; image and other non-text parts are skipped.
    """
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        texts: list[str] = []
        for part in content:
            if isinstance(part, str):
                texts.append(part)
            elif isinstance(part, dict) and isinstance(part.get("text"), str):
                texts.append(part["text"])
        return "\n".join(texts)
    return str(content)


def _messages(request: Mapping[str, Any]) -> list[dict[str, Any]]:
    raw = request.get("messages")
    if not isinstance(raw, list):
        return []
    return [m for m in raw if isinstance(m, dict)]


def _last_with_role(messages: list[dict[str, Any]], role: str) -> dict[str, Any] | None:
    matches = [message for message in messages if message.get("role") == role]
    return matches[-1] if matches else None


class EchoResponder:
    """Acknowledges the last user message: ``"ack: "`` plus its first 80 characters.

    When the conversation ends with a ``tool`` message the reply instead reports that
    the tool result arrived, quoting its start, so agent loops terminate. The context
    arena's ``<context>`` block after the newest user message is not what the user
    said: the message before it is acknowledged.
    """

    def __init__(self, prefix: str = "ack: ", limit: int = 80) -> None:
        """Configure the prefix and how many characters of the message to quote."""
        self.prefix = prefix
        self.limit = limit

    def __call__(self, request: dict[str, Any]) -> Reply:
        """Return the acknowledgement for ``request``."""
        messages = _messages(request)
        if messages and _is_arena_block(messages[-1]):
            messages = messages[:-1]
        if messages and messages[-1].get("role") == "tool":
            last = messages[-1]
            quoted = content_text(last.get("content"))[: self.limit]
            call_id = last.get("tool_call_id")
            label = f" for {call_id}" if isinstance(call_id, str) and call_id else ""
            return Reply(text=f"tool result received{label}: {quoted}")
        user = _last_with_role(messages, "user")
        quoted = content_text(user.get("content"))[: self.limit] if user else ""
        return Reply(text=self.prefix + quoted)


def _is_arena_block(message: dict[str, Any]) -> bool:
    return message.get("role") == "user" and content_text(message.get("content")).startswith(
        "<context>\n"
    )


class SummaryResponder:
    """A deterministic stand-in for a summarising model.

    The reply is short markdown with fixed ``## `` sections: ``Goal`` (the first 200
    characters of the last user message), ``Progress`` (message counts by role),
    ``Tools used`` (names of tool calls seen, sorted) and ``Other context`` (the
    line count of all message text). Its size is bounded, so long inputs shrink.
    """

    def __init__(self, goal_chars: int = 200, max_tools: int = 10) -> None:
        """Configure how much of the goal to quote and how many tool names to list."""
        self.goal_chars = goal_chars
        self.max_tools = max_tools

    def __call__(self, request: dict[str, Any]) -> Reply:
        """Return the summary of ``request``'s messages."""
        messages = _messages(request)
        user = _last_with_role(messages, "user")
        goal = content_text(user.get("content")).strip() if user else ""
        goal = goal[: self.goal_chars] or "(no user message)"

        roles: dict[str, int] = {}
        tools: set[str] = set()
        lines = 0
        for message in messages:
            role = str(message.get("role", "unknown"))
            roles[role] = roles.get(role, 0) + 1
            text = content_text(message.get("content"))
            if text:
                lines += text.count("\n") + 1
            for call in message.get("tool_calls") or []:
                function = call.get("function") if isinstance(call, dict) else None
                if isinstance(function, dict) and isinstance(function.get("name"), str):
                    tools.add(function["name"])

        by_role = ", ".join(f"{role} {count}" for role, count in sorted(roles.items()))
        tool_names = sorted(tools)[: self.max_tools]
        sections = [
            "## Goal",
            goal,
            "",
            "## Progress",
            f"- {len(messages)} messages summarised ({by_role or 'none'})",
            "",
            "## Tools used",
            *(f"- {name}" for name in tool_names),
            *(["- none"] if not tool_names else []),
            "",
            "## Other context",
            f"- {lines} lines of message text",
        ]
        return Reply(text="\n".join(sections))


class ScriptedResponder:
    """Returns the given replies in order, then defers to ``then``.

    Thread-safe: concurrent requests each take a distinct scripted reply.
    """

    def __init__(self, replies: Iterable[Reply], then: Responder | None = None) -> None:
        """Script ``replies``; ``then`` (default :class:`EchoResponder`) answers after."""
        self._replies: deque[Reply] = deque(replies)
        self._then: Responder = then if then is not None else EchoResponder()
        self._lock = threading.Lock()

    @property
    def remaining(self) -> int:
        """How many scripted replies have not been used yet."""
        with self._lock:
            return len(self._replies)

    def __call__(self, request: dict[str, Any]) -> Reply:
        """Return the next scripted reply, or the fallback responder's reply."""
        with self._lock:
            if self._replies:
                return self._replies.popleft()
        return self._then(request)
