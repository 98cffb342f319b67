"""The wire formats the local server speaks, and what they share.

Each endpoint has a :class:`WireFormat`: it reads a request (its conversation, its
size), checks it the way the provider does, and renders a :class:`Completion` as a
whole response body or as a :class:`Stream` of server-sent events. The HTTP handler
only moves bytes.
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from dataclasses import dataclass, field
from typing import Any, ClassVar

from ._wire import JSON, Completion, encode, error_body, request_chars

__all__ = ["ChatFormat", "Event", "Refusal", "Stream", "WireFormat"]


@dataclass(frozen=True)
class Event:
    """One server-sent event: an optional ``event:`` name and its ``data:``."""

    data: bytes
    name: str | None = None

    @classmethod
    def of(cls, payload: JSON, name: str | None = None) -> Event:
        """The event carrying ``payload`` as compact JSON."""
        return cls(encode(payload), name)

    def frame(self) -> bytes:
        """The event as it goes on the wire."""
        head = b"" if self.name is None else b"event: " + self.name.encode() + b"\n"
        return head + b"data: " + self.data + b"\n\n"


@dataclass(frozen=True)
class Stream:
    """A streamed response in three runs of events.

    ``body`` holds the content events, the ones ``Reply.disconnect_after_chunks``
    counts and ``Reply.chunk_delay_s`` spaces; ``head`` opens the stream and ``tail``
    closes it (finish reason, usage, the end marker).
    """

    head: list[Event]
    body: list[Event]
    tail: list[Event]
    #: What a malformed stream sends in place of its next event.
    broken: Event = field(default_factory=lambda: Event(b"{not json"))


@dataclass(frozen=True)
class Refusal:
    """A request the provider would refuse: the status and the error body it sends."""

    status: int
    body: JSON


class WireFormat(ABC):
    """One endpoint's request reading, checks and response rendering."""

    #: The name requests to this endpoint are recorded under.
    name: ClassVar[str]
    #: The URL paths this endpoint answers, without a trailing slash.
    paths: ClassVar[tuple[str, ...]]
    #: How response ids and unnamed tool call ids begin.
    response_prefix: ClassVar[str]
    tool_prefix: ClassVar[str]
    #: A status 200 body that is not valid JSON, for ``Reply.malformed``.
    malformed_body: ClassVar[bytes]

    def conversation(self, body: dict[str, Any]) -> dict[str, Any]:
        """The request as a Chat Completions body: what prefix reports compare."""
        return body

    def prompt_chars(self, body: dict[str, Any]) -> int:
        """Characters of text in the request, from which prompt tokens are estimated."""
        return request_chars(self.conversation(body))

    def check(self, body: dict[str, Any]) -> Refusal | None:
        """The refusal the provider would send for ``body``; None to accept it."""
        return None

    def planned(self, plan: Completion) -> None:  # noqa: B027 - most formats keep nothing
        """Told of each reply before it is rendered (to remember what it issued)."""

    @abstractmethod
    def error(self, status: int, message: str) -> JSON:
        """The endpoint's error body for ``status``."""

    @abstractmethod
    def render(self, plan: Completion, body: dict[str, Any]) -> JSON:
        """The whole response body."""

    @abstractmethod
    def stream(self, plan: Completion, body: dict[str, Any]) -> Stream | None:
        """The streamed response; None when ``body`` did not ask to stream."""


_CHAT_MALFORMED = b'{"id":"chatcmpl-malformed","object":"chat.completion","choices":[{'


class ChatFormat(WireFormat):
    """OpenAI Chat Completions: ``POST /v1/chat/completions``. Nothing is refused."""

    name = "chat"
    paths = ("/v1/chat/completions", "/chat/completions")
    response_prefix = "chatcmpl-"
    tool_prefix = "call_"
    malformed_body = _CHAT_MALFORMED

    def error(self, status: int, message: str) -> JSON:
        """An OpenAI-style error object."""
        return error_body(status, message)

    def render(self, plan: Completion, body: dict[str, Any]) -> JSON:
        """The ``chat.completion`` object."""
        return plan.message()

    def stream(self, plan: Completion, body: dict[str, Any]) -> Stream | None:
        """``chat.completion.chunk`` events, usage when asked, then ``[DONE]``."""
        if body.get("stream") is not True:
            return None
        options = body.get("stream_options")
        usage = isinstance(options, dict) and options.get("include_usage") is True
        tail = [Event.of(plan.final_chunk(usage))]
        if usage:
            tail.append(Event.of(plan.usage_chunk()))
        tail.append(Event(b"[DONE]"))
        head = [Event.of(plan.role_chunk(usage))]
        return Stream(head, [Event.of(chunk) for chunk in plan.body_chunks(usage)], tail)
