"""What a provider said a request cost, read from any of the usage shapes an own
loop gets back: OpenAI Chat Completions (and litellm's), OpenAI Responses and
Anthropic Messages, as objects or as dicts."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from lossless.errors import InvalidInputError

__all__ = ["ReportedUsage", "read_usage"]


@dataclass(frozen=True, slots=True)
class ReportedUsage:
    """A request's usage as lossless takes it in."""

    #: Every input token the provider read, cached ones included.
    input_tokens: int
    #: Input tokens served from the provider's prompt cache, when it says.
    cached_input_tokens: int | None = None
    #: Input tokens written to the provider's prompt cache, when it says.
    cache_write_input_tokens: int | None = None
    output_tokens: int | None = None


def _field(source: Any, name: str) -> Any:
    if isinstance(source, Mapping):
        return source.get(name)
    return getattr(source, name, None)


def _count(source: Any, name: str) -> int | None:
    value = _field(source, name)
    if isinstance(value, bool) or not isinstance(value, int):
        return None
    return value


def read_usage(usage: object) -> ReportedUsage:
    """``usage`` (a response's ``usage``, or the response itself) as a
    :class:`ReportedUsage`.

    Chat Completions count cached tokens inside ``prompt_tokens`` and name them in
    ``prompt_tokens_details.cached_tokens``; Responses do the same with
    ``input_tokens`` and ``input_tokens_details``; Anthropic counts only the
    uncached part in ``input_tokens`` and the rest in ``cache_read_input_tokens``
    and ``cache_creation_input_tokens``. Anything else raises
    :class:`InvalidInputError`.
    """
    inner = _field(usage, "usage")
    if inner is not None and _count(usage, "prompt_tokens") is None:
        usage = inner
    output = _count(usage, "completion_tokens")
    if output is None:
        output = _count(usage, "output_tokens")
    read = _count(usage, "cache_read_input_tokens")
    written = _count(usage, "cache_creation_input_tokens")
    prompt = _count(usage, "prompt_tokens")
    if prompt is not None:
        cached = _count(_field(usage, "prompt_tokens_details") or {}, "cached_tokens")
        return ReportedUsage(prompt, cached if cached is not None else read, written, output)
    given = _count(usage, "input_tokens")
    if given is None:
        raise InvalidInputError(
            "usage: expected prompt_tokens (Chat Completions) or input_tokens "
            f"(Responses, Anthropic), got {type(usage).__name__}"
        )
    details = _field(usage, "input_tokens_details")
    if details is not None:
        return ReportedUsage(given, _count(details, "cached_tokens"), None, output)
    total = given + (read or 0) + (written or 0)
    return ReportedUsage(total, read, written, output)
