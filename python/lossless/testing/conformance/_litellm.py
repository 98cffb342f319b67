"""litellm's own request transformations, called offline, as the first judge per provider.

Each transformation turns an OpenAI message list into the payload litellm would send;
one that raises means litellm itself refuses the request. No HTTP is involved: only the
message conversion runs, against litellm's bundled model map.
"""

from __future__ import annotations

import functools
import logging
from collections.abc import Callable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from typing import Any

from lossless.llm import import_litellm

from ._common import mapping, role_of

__all__ = ["MODELS", "clone", "transform"]

# Models the payloads are built for; any current model of each family converts messages
# the same way. All three are in litellm's bundled model map, so no lookup leaves the box.
MODELS = {
    "anthropic": "claude-sonnet-4-5",
    "bedrock": "anthropic.claude-3-5-sonnet-20240620-v1:0",
    "gemini": "gemini-2.5-flash",
}

Payload = list[Any]

_quiet: ContextVar[bool] = ContextVar("lossless_conformance_quiet", default=False)


class _QuietFilter(logging.Filter):
    """Drops litellm's log records emitted while a check runs, and only those.

    litellm warns on every conversion it patches up ("Trying to merge", "neutralizing
    orphaned tool blocks"); a property test would print thousands of them. Gating on a
    context variable leaves the records of concurrent real calls alone.
    """

    def filter(self, record: logging.LogRecord) -> bool:
        return not _quiet.get()


@dataclass(frozen=True)
class _Litellm:
    anthropic_config: Callable[[], Any]
    converse_config: Callable[[], Any]
    gemini_body: Callable[..., Any]


@functools.cache
def _litellm() -> _Litellm:
    import_litellm()
    from litellm.llms.anthropic.chat.transformation import AnthropicConfig
    from litellm.llms.bedrock.chat.converse_transformation import AmazonConverseConfig
    from litellm.llms.vertex_ai.gemini.transformation import transform_request_body

    # First in line: litellm's own filter on this logger scrubs secrets from every
    # record with a dozen regexes, which would cost more than the conversion itself.
    logging.getLogger("LiteLLM").filters.insert(0, _QuietFilter())
    return _Litellm(AnthropicConfig, AmazonConverseConfig, transform_request_body)


@contextmanager
def _quietly() -> Iterator[None]:
    token = _quiet.set(True)
    try:
        yield
    finally:
        _quiet.reset(token)


def clone(value: object) -> Any:
    """A deep copy made of plain dicts and lists (litellm edits the messages it gets)."""
    if isinstance(value, Mapping):
        return {key: clone(item) for key, item in value.items()}
    if isinstance(value, list | tuple):
        return [clone(item) for item in value]
    return value


def transform(provider: str, messages: Sequence[object]) -> Payload:
    """The provider's message list as litellm builds it from a copy of ``messages``.

    Raises whatever litellm raises when it refuses the request.
    """
    build = _BUILDERS[provider]
    with _quietly():
        return build(_litellm(), clone(list(messages)))


def _anthropic(lib: _Litellm, messages: list[Any]) -> Payload:
    config = lib.anthropic_config()
    data = config.transform_request(
        model=MODELS["anthropic"],
        messages=messages,
        optional_params={},
        litellm_params={},
        headers={},
    )
    return list(data["messages"])


def _bedrock(lib: _Litellm, messages: list[Any]) -> Payload:
    # Without tools= litellm rewrites tool calls and results as plain text, which is
    # not what a session that offers tools sends; declare every tool the request uses.
    tools = _tool_specs(messages)
    config = lib.converse_config()
    data = config.transform_request(
        model=MODELS["bedrock"],
        messages=messages,
        optional_params={"tools": tools} if tools else {},
        litellm_params={},
        headers={},
    )
    return list(data["messages"])


def _gemini(lib: _Litellm, messages: list[Any]) -> Payload:
    body = lib.gemini_body(
        messages=messages,
        model=MODELS["gemini"],
        optional_params={},
        custom_llm_provider="gemini",
        litellm_params={},
        cached_content=None,
    )
    return list(body["contents"])


def _tool_specs(messages: list[Any]) -> list[dict[str, Any]]:
    names: dict[str, None] = {}
    has_results = False
    for message in messages:
        has_results = has_results or role_of(message) == "tool"
        calls = mapping(message).get("tool_calls")
        for call in calls if isinstance(calls, list) else ():
            name = mapping(mapping(call).get("function")).get("name")
            if isinstance(name, str) and name:
                names[name] = None
    if has_results and not names:
        names["tool"] = None
    return [
        {"type": "function", "function": {"name": n, "parameters": {"type": "object"}}}
        for n in names
    ]


_BUILDERS: dict[str, Callable[[_Litellm, list[Any]], Payload]] = {
    "anthropic": _anthropic,
    "bedrock": _bedrock,
    "gemini": _gemini,
}
