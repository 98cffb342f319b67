"""Would every major provider accept this OpenAI-format chat request?

:func:`check_request` judges a list of OpenAI chat messages (the dicts handed to
litellm) with code written elsewhere wherever it can:

``"openai"``
    openai's own ``ChatCompletionMessageParam`` types, through pydantic, plus the
    project's structural rules: a user message first after the system prompt, every
    tool call answered once by a tool message right after it, unique call ids, no
    empty text, tool arguments that are a JSON object.
``"anthropic"``, ``"bedrock"``, ``"gemini"``
    litellm's request transformation for that provider, run offline (one that raises
    is a rejection), then the provider's documented structural rules on the payload it
    built: litellm quietly repairs or drops much of what the provider would refuse.

Each violation reads ``"<provider>/<rule> at <where>: <detail>"``, where ``where`` is
``message N`` (an index into the caller's list), ``turn N`` (an index into the payload
litellm built for the provider) or ``request``. The rules:

- openai: ``schema``, ``role``, ``first-user``, ``empty-content``,
  ``tool-call``, ``arguments-json``, ``arguments-object``, ``unique-tool-call-id``,
  ``missing-tool-result``, ``unknown-tool-result``, ``misplaced-tool-result``,
  ``duplicate-tool-result``.
- anthropic, bedrock, gemini: ``litellm-rejected``, ``no-turns``, ``first-user``,
  ``alternating-roles`` (not gemini), ``role``, ``empty-turn``, ``empty-text``,
  ``tool-input``, ``unique-tool-id`` (not gemini), ``orphan-tool-result``,
  ``duplicate-tool-result``, ``unanswered-tool-call``, ``tool-results-first``
  (anthropic only).

::

    from lossless.testing.conformance import check_request

    check_request([{"role": "user", "content": "hi"}])  # raises ConformanceError if not

The payloads reflect litellm's settings in this process: with ``litellm.modify_params``
on, litellm repairs more and the provider checks find less; the ``"openai"`` rules do
not depend on it.
"""

from __future__ import annotations

from collections.abc import Collection, Mapping, Sequence
from typing import Any, Final

from ._litellm import transform
from ._payloads import payload_violations
from ._schema import schema_violations
from ._structure import structure_violations

__all__ = ["PROVIDERS", "ConformanceError", "check_request", "violations"]

PROVIDERS: Final = ("openai", "anthropic", "bedrock", "gemini")

_MAX_DETAIL = 300


class ConformanceError(AssertionError):
    """A request some provider would refuse; :attr:`violations` says why."""

    def __init__(self, violations: Sequence[str]) -> None:
        self.violations: list[str] = list(violations)
        lines = "\n".join(f"  - {found}" for found in self.violations)
        count = len(self.violations)
        super().__init__(f"request breaks {count} provider rule{'s' * (count != 1)}:\n{lines}")


def violations(
    messages: Sequence[Mapping[str, Any]], *, providers: Collection[str] = PROVIDERS
) -> list[str]:
    """Every problem found in ``messages`` for ``providers``; empty when all would accept.

    ``messages`` is left as it is: litellm works on a copy.
    """
    wanted = _checked(providers)
    found: list[str] = []
    for provider in PROVIDERS:
        if provider not in wanted:
            continue
        if provider == "openai":
            found += schema_violations(messages)
            found += structure_violations(messages)
        else:
            found += _provider_violations(provider, messages)
    return found


def check_request(
    messages: Sequence[Mapping[str, Any]], *, providers: Collection[str] = PROVIDERS
) -> None:
    """Raise :class:`ConformanceError` unless every provider in ``providers`` would accept."""
    found = violations(messages, providers=providers)
    if found:
        raise ConformanceError(found)


def _checked(providers: Collection[str]) -> frozenset[str]:
    if isinstance(providers, str):
        raise TypeError(f"providers must be a collection of names, not the string {providers!r}")
    unknown = sorted(set(providers) - set(PROVIDERS))
    if unknown:
        raise ValueError(f"unknown providers {unknown}; known: {PROVIDERS}")
    return frozenset(providers)


def _provider_violations(provider: str, messages: Sequence[Mapping[str, Any]]) -> list[str]:
    try:
        payload = transform(provider, messages)
    except Exception as err:
        # litellm raises anything from BadRequestError to a bare Exception or KeyError.
        first_line = (str(err).strip().splitlines() or [""])[0][:_MAX_DETAIL]
        detail = f"litellm refused the request: {type(err).__name__}: {first_line}"
        return [f"{provider}/litellm-rejected at request: {detail}"]
    return payload_violations(provider, payload)
