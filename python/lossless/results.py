"""What a session's calls return: the request to send, a model turn's outcome, a
recorded turn, a stored message; and the callback that receives streamed parts."""

from __future__ import annotations

from collections.abc import Awaitable, Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any, Literal

from lossless.arena import InjectionReport
from lossless.parts import Part, ReasoningPart, TextPart, ToolPart

__all__ = [
    "AnthropicContext",
    "BuiltContext",
    "Message",
    "PartCallback",
    "RecordResult",
    "ResponsesContext",
    "TurnResult",
]

PartCallback = Callable[[Part], None] | Callable[[Part], Awaitable[None]]


@dataclass(frozen=True, slots=True)
class BuiltContext:
    """What the next model call would send."""

    messages: list[dict[str, Any]]
    tokens: int
    budget: int
    item_ids: list[str]
    omitted: int
    #: What the context arena injected, zone by zone; None when it injected nothing.
    injection: InjectionReport | None = None
    #: Tokens from the start of this request identical to the previous request's
    #: (what a provider's prompt cache can serve); set by :meth:`Session.context`,
    #: 0 for a peek with :meth:`Session.build_context`.
    stable_prefix_tokens: int = 0


@dataclass(frozen=True, slots=True)
class AnthropicContext(Mapping[str, Any]):
    """What the next model call would send, as an Anthropic Messages request.

    Also a mapping of the request's own fields (``system`` when there is a system
    text, ``messages``, ``tools`` when given), so it unpacks into the SDK's call:
    ``client.messages.create(model=..., max_tokens=..., **context)``.
    """

    #: The system text as text blocks (the session's prompt, the arena's stable
    #: zones, leading system turns), the last one marked for the prompt cache.
    system: list[dict[str, Any]]
    #: User and assistant turns of content blocks, roles alternating.
    messages: list[dict[str, Any]]
    #: The tool definitions in Anthropic's schema; None when the call gave none.
    tools: list[dict[str, Any]] | None
    tokens: int
    budget: int
    item_ids: list[str]
    omitted: int
    #: What the context arena injected, zone by zone; None when it injected nothing.
    injection: InjectionReport | None = None
    #: Tokens from the start of this request identical to the previous request's.
    stable_prefix_tokens: int = 0

    def _request(self) -> dict[str, Any]:
        fields: dict[str, Any] = {"system": self.system} if self.system else {}
        fields["messages"] = self.messages
        if self.tools is not None:
            fields["tools"] = self.tools
        return fields

    def __getitem__(self, key: str) -> Any:
        return self._request()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._request())

    def __len__(self) -> int:
        return len(self._request())


@dataclass(frozen=True, slots=True)
class ResponsesContext(Mapping[str, Any]):
    """What the next model call would send, as OpenAI Responses input items.

    Also a mapping of the request's own fields (``input``, ``tools`` when given),
    so it unpacks into the SDK's call: ``client.responses.create(model=...,
    **context)``. The system text is in ``input`` as ``system`` messages, in its
    place (decision 214).
    """

    #: ``message``, ``function_call``, ``function_call_output`` and ``reasoning``
    #: items, in order.
    input: list[dict[str, Any]]
    #: The tool definitions in the Responses schema; None when the call gave none.
    tools: list[dict[str, Any]] | None
    tokens: int
    budget: int
    item_ids: list[str]
    omitted: int
    #: What the context arena injected, zone by zone; None when it injected nothing.
    injection: InjectionReport | None = None
    #: Tokens from the start of this request identical to the previous request's.
    stable_prefix_tokens: int = 0

    def _request(self) -> dict[str, Any]:
        fields: dict[str, Any] = {"input": self.input}
        if self.tools is not None:
            fields["tools"] = self.tools
        return fields

    def __getitem__(self, key: str) -> Any:
        return self._request()[key]

    def __iter__(self) -> Iterator[str]:
        return iter(self._request())

    def __len__(self) -> int:
        return len(self._request())


#: A request in any of the formats the request calls give.
AnyContext = BuiltContext | AnthropicContext | ResponsesContext


@dataclass(frozen=True, slots=True)
class TurnResult:
    """The outcome of :meth:`Session.send`."""

    message_id: str
    text: str
    tool_calls: list[ToolPart]
    input_tokens: int | None
    output_tokens: int | None
    cost: float | None
    finish_reason: str | None
    context_tokens: int
    compaction_triggered: bool
    #: Tokens from the start of this request identical to the previous request's
    #: (what a provider's prompt cache can serve); 0 for a session's first request.
    stable_prefix_tokens: int = 0
    #: Input tokens the provider served from its cache, when it reports them.
    cached_input_tokens: int | None = None
    #: Input tokens the provider wrote to its cache, when it reports them.
    cache_write_input_tokens: int | None = None
    #: The reply's reasoning, as stored before its text: the provider's blocks
    #: (signed thinking, redacted thinking) and readable reasoning, in order.
    reasoning: list[ReasoningPart] = field(default_factory=list)
    #: Secrets replaced in the stored user message before it was written, as
    #: ``{kind: count}`` (never the text; see ``Config.redaction``).
    redacted: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class RecordResult:
    """The outcome of :meth:`Session.record`."""

    message_id: str
    seq: int
    token_count: int
    view_tokens: int
    compaction_triggered: bool
    #: Secrets replaced before the message was written, as ``{kind: count}`` (never
    #: the text; see ``Config.redaction``).
    redacted: Mapping[str, int] = field(default_factory=dict)


@dataclass(frozen=True, slots=True)
class Message:
    """A stored message."""

    id: str
    seq: int
    role: str
    status: Literal["complete", "streaming", "incomplete"]
    parts: list[Part]
    token_count: int | None
    created_at: int
    usage: dict[str, Any] = field(default_factory=dict)
    #: The session that stored it: a fork's history holds its parent's messages
    #: up to the fork point.
    session_id: str = ""

    @property
    def text(self) -> str:
        return "\n\n".join(part.text for part in self.parts if isinstance(part, TextPart))
