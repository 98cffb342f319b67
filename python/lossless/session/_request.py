"""Composing a session's request: the view, the arena's block, the system prompt
and the tools, fitted to the budget and recorded as sent for the cache figures.
"""

from __future__ import annotations

import json
import time
from collections.abc import Sequence
from dataclasses import replace
from functools import partial
from typing import Any, Literal, overload

from lossless import _native
from lossless.arena._plan import BLOCK_FRAMING_TOKENS, STABLE_JOINT_TOKENS, Planned, Prepared
from lossless.formats import MessageFormat, checked_format, format_tools
from lossless.prompt_cache import CacheHints, with_cache_hints
from lossless.results import AnthropicContext, AnyContext, BuiltContext, ResponsesContext
from lossless.session._request_log import RequestLog
from lossless.session._request_parts import _EarlierBlocks, _Request, _RequestParts


class RequestComposer(RequestLog):
    """How a session composes the request it sends next."""

    @overload
    def build_context(
        self,
        *,
        tools: Sequence[dict[str, Any]] | None = None,
        format: Literal["openai"] = "openai",
    ) -> BuiltContext: ...
    @overload
    def build_context(
        self, *, tools: Sequence[dict[str, Any]] | None = None, format: Literal["anthropic"]
    ) -> AnthropicContext: ...
    @overload
    def build_context(
        self, *, tools: Sequence[dict[str, Any]] | None = None, format: Literal["responses"]
    ) -> ResponsesContext: ...
    def build_context(
        self, *, tools: Sequence[dict[str, Any]] | None = None, format: MessageFormat = "openai"
    ) -> AnyContext:
        """The messages the next model call would send, assembled within the budget.

        ``format`` chooses how: ``"openai"`` (Chat Completions messages, a
        :class:`BuiltContext`), ``"anthropic"`` (an :class:`AnthropicContext`: the
        system text apart and turns of content blocks, cache breakpoints marked)
        or ``"responses"`` (a :class:`ResponsesContext` of Responses input items).
        ``tools`` are given as Chat Completions tool definitions and come back in
        the format's schema.

        ``tools`` (the tool definitions the call will carry) take their share of the
        window first: ``tokens`` counts them, and the history gets what is left. The
        context arena's injection is planned next and reserved before the history:
        identity and pinned facts follow the system prompt, the other zones go in one
        ``<context>`` block right after the newest user message. External recall
        runs only in a model turn (it may wait on the network).
        """
        return self._build(tools, None, checked_format(format))[0]

    def _build(
        self,
        tools: Sequence[dict[str, Any]] | None,
        prepared: Prepared | None,
        format: MessageFormat = "openai",
    ) -> tuple[AnyContext, Planned | None, _Request]:
        tools_json = _tools_json(tools)
        assemble = partial(self._assemble, format=format, tools=tools)
        tool_tokens = self._tool_tokens(tools_json)
        planned, free = None, 0
        if self.arena.enabled:
            prepared = prepared if prepared is not None else self.arena.recall_internal()
            room = self.budget.usable - tool_tokens
            stats = self._store.view_stats(self.id)
            free = room - stats.tokens
            # What the history keeps whatever the pressure: the instruction, and the
            # marker that says what was left out.
            kept = stats.instruction_tokens + _native.MARKER_TOKENS
            planned = self.arena.plan(free, prepared, most=room - kept)
        if planned is None or not (planned.raw["stable"] or planned.raw["volatile"]):
            block, block_tokens = "", 0
            earlier: _EarlierBlocks = ()
            if self.arena.enabled:
                # Nothing planned: within a tool loop the loop's block still goes out
                # as sent, and earlier blocks stay where they were.
                block, block_tokens = self._steady_block(block, block_tokens, max(free, 0))
                earlier = self._earlier_blocks(free - block_tokens)
            context, request = assemble(
                tools_json,
                tool_tokens,
                self.system_prompt,
                block,
                self._system_tokens,
                block_tokens,
                earlier,
            )
        else:
            stable = planned.raw["stable"]
            prompt = (
                f"{self.system_prompt}\n\n{stable}"
                if self.system_prompt and stable
                else (self.system_prompt or stable)
            )
            # Counted in the core with the plan; the joint "\n\n" and a token of margin
            # for a merge across it.
            stable_tokens = planned.raw["stable_tokens"] + STABLE_JOINT_TOKENS if stable else 0
            prompt_tokens = (self._system_tokens or 4) + stable_tokens
            block = planned.raw["volatile"]
            block_tokens = planned.raw["volatile_tokens"] + BLOCK_FRAMING_TOKENS if block else 0
            # The loop's last block may stand in for this one when it costs no more
            # than what the history leaves or what this plan was given.
            block, block_tokens = self._steady_block(block, block_tokens, max(free, block_tokens))
            earlier = self._earlier_blocks(free - block_tokens - stable_tokens)
            context, request = assemble(
                tools_json, tool_tokens, prompt, block, prompt_tokens, block_tokens, earlier
            )
        if planned is not None:
            usage = _native.normalize_usage(None, context.tokens, context.budget)
            context = replace(context, injection=planned.report_with(usage))
        return context, planned, request

    def _tool_tokens(self, tools_json: str) -> int:
        """Tokens of the tool definitions, counted once while a loop sends the same."""
        if tools_json != self._counted_tools[0]:
            self._counted_tools = (tools_json, self._count(tools_json) if tools_json else 0)
        return self._counted_tools[1]

    def _assemble(
        self,
        tools_json: str,
        tool_tokens: int,
        prompt: str | None,
        block: str,
        prompt_tokens: int,
        block_tokens: int,
        earlier: _EarlierBlocks,
        *,
        format: MessageFormat = "openai",
        tools: Sequence[dict[str, Any]] | None = None,
    ) -> tuple[AnyContext, _Request]:
        """The history within what the tools, the system message and the arena's
        blocks leave, with the system message first and the blocks placed (the
        current one after the newest user message, ``earlier`` ones where they were
        sent); and what the request is made of, to compare the next request with.

        In another ``format`` the same request is laid out without building chat
        messages (``messages`` holds the index of each rendered message, and the
        messages placed around them) and converted in the core; profiles are for
        chat templates and do not apply."""
        earlier_tokens = sum(tokens for _, _, tokens in earlier)
        history_budget = (
            self.budget.usable
            - tool_tokens
            - block_tokens
            - earlier_tokens
            - (prompt_tokens - self._system_tokens)
        )
        messages: list[Any]
        if format == "openai":
            messages, tokens, item_ids, omitted, newest, items = self._store.assemble_placed(
                self.id, history_budget, self.profile
            )
        else:
            tokens, item_ids, omitted, newest, items = self._store.assemble_items(
                self.id, history_budget
            )
            messages = list(range(items.message_count))
        merged = self.profile != "default" and format == "openai"
        block_at = _place_block(messages, newest, block, merge=merged) if block else None
        block_last = block_at == len(messages) - 1
        parts = _RequestParts(
            tools_json,
            tool_tokens,
            prompt or "",
            prompt_tokens if prompt else 0,
            block,
            block_tokens,
            merged,
            history_budget,
            earlier,
        )
        # From the newest down, so each insertion leaves the earlier places as they are.
        for _, at, text, earlier_block_tokens in reversed(parts.earlier_placed(items)):
            _place_block(messages, at, text, merge=merged)
            tokens += earlier_block_tokens
        tokens += tool_tokens + block_tokens
        # Where the history ends: before the block when the block is the last message.
        history_end = len(messages) - (2 if block_last else 1)
        summary_end = items.summary_end if not merged else -1
        if prompt:
            if merged and messages and messages[0]["role"] == "system":
                # Strict templates take one system message.
                first = messages.pop(0)
                merged_prompt = f"{prompt}\n\n{first['content']}"
                messages.insert(0, {"role": "system", "content": merged_prompt})
            else:
                messages.insert(0, {"role": "system", "content": prompt})
                history_end, summary_end = history_end + 1, summary_end + (summary_end >= 0)
            tokens += prompt_tokens
        hints = CacheHints(
            0 if prompt else None,
            summary_end if summary_end >= 0 else None,
            history_end if history_end >= 0 else None,
        )
        request = _Request(
            parts, parts.print_of(items), hints, self._block_stamp(), items.newest_user_id
        )
        budget = self.budget.usable + self._system_tokens
        if format == "openai":
            return BuiltContext(messages, tokens, budget, item_ids, omitted), request
        sizes = (tokens, budget, item_ids, omitted)
        return self._formatted(format, items, messages, hints, tools, sizes), request

    def _formatted(
        self,
        format: MessageFormat,
        items: _native.ItemUnits,
        layout: list[Any],
        hints: CacheHints,
        tools: Sequence[dict[str, Any]] | None,
        sizes: tuple[int, int, list[str], int],
    ) -> AnthropicContext | ResponsesContext:
        """The request laid out as ``layout`` in ``format``, converted in the core.
        An Anthropic request always marks the end of its stable history for the
        prompt cache (Anthropic caches nothing unmarked), and the system message and
        summaries too with ``cache_hints`` (decision 215)."""
        converted = format_tools(tools, format)
        if format == "anthropic":
            marks = hints.at() if self.config.llm.cache_hints else _history_mark(hints)
            system, turns = _native.format_request(items, layout, format, marks)
            return AnthropicContext(system or [], turns, converted, *sizes)
        _, input_items = _native.format_request(items, layout, format, [])
        return ResponsesContext(input_items, converted, *sizes)

    async def _prepare_request(
        self, tools: Sequence[dict[str, Any]] | None, format: MessageFormat = "openai"
    ) -> tuple[tuple[AnyContext, Planned | None], Prepared | None]:
        """What a model turn does before calling the model: waits at the hard limit,
        recalls, plans and assembles the request, and records it as sent. Returns
        the request (with cache hints when configured) with the arena's plan, and
        the turn's recall."""
        await self._compact_if_cache_expired()
        await self._respect_hard_threshold()
        prepared = await self.arena.prepare() if self.arena.enabled else None
        return await self._request_for(tools, prepared, format=format), prepared

    async def _request_for(
        self,
        tools: Sequence[dict[str, Any]] | None,
        prepared: Prepared | None,
        format: MessageFormat = "openai",
    ) -> tuple[AnyContext, Planned | None]:
        """The request as it is sent, recorded as sent: kept to compare the next
        one with, and described on the event tape (``request_built``)."""
        context, plan, request = self._build(tools, prepared, format)
        stable_prefix = self._observe_request(request)
        sent: AnyContext
        if not isinstance(context, BuiltContext):
            # A summarisation call reusing the conversation needs chat messages.
            self._last_messages = None
            sent = replace(context, stable_prefix_tokens=stable_prefix)
        else:
            messages = self._sendable(context, request)
            sent = replace(context, messages=messages, stable_prefix_tokens=stable_prefix)
        await self._log_request(sent, plan, request, format)
        return sent, plan

    def _sendable(self, context: BuiltContext, request: _Request) -> list[dict[str, Any]]:
        """The messages of ``context`` as they are sent (with cache hints when
        configured), kept as the last messages sent."""
        messages = context.messages
        if self.config.llm.cache_hints:
            messages = with_cache_hints(messages, request.hints)
        self._last_messages = messages
        return messages

    def _block_stamp(self) -> tuple[int, int, int, int]:
        """What the arena's block depends on besides tool outcomes: the user turns
        recorded, the arena's user writes and the summaries in the view."""
        return (self._user_turns, self.arena.user_writes, *self._summaries_stamp())

    def _summaries_stamp(self) -> tuple[int, int]:
        """The summaries in the view as stored (how many, and their tokens): what a
        compaction changes that the arena's blocks depend on. Read from the store
        rather than counted when a compaction ends, so that a request built between
        a round's commit and its end sees the commit: the next request would
        otherwise change the blocks again, a second invalidation for one round."""
        stats = self._store.view_stats(self.id)
        return stats.summary_items, stats.summary_tokens

    def _steady_block(self, block: str, block_tokens: int, free: int) -> tuple[str, int]:
        """The block to send: within a tool loop (no user turn, arena write or
        compaction since the last request) the last request's block again, when it
        still fits beside the history. The block sits right after the newest user
        message, so a block that changed would make the provider read every message
        of the loop after it again; what changed in a loop (a tool failing or
        recovering) is in the loop's own messages, and the next user turn re-plans."""
        last = self._last_request
        if (
            last is None
            or not last.parts.block
            or last.stamp != self._block_stamp()
            or last.parts.block_tokens > free
        ):
            return block, block_tokens
        return last.parts.block, last.parts.block_tokens

    def _earlier_blocks(self, room: int) -> _EarlierBlocks:
        """The blocks of earlier user turns to send where they were sent: a new user
        turn places a new block after itself and leaves the last request's block
        after its own message, so the provider reads on from the end of the last
        request instead of reading that turn's tool loop again (decision 114). They
        stay until a summary changes the view (what follows its change is read anew
        anyway) or until they no longer fit in ``room`` beside the history."""
        last = self._last_request
        if last is None or last.stamp[2:] != self._summaries_stamp():
            return ()
        if self.profile != "default":
            # A profile merges and splits messages: the places the view's items give
            # are not where the messages end up (a block would go astray or past the
            # end), and merged into a user message a block moves the front anyway.
            return ()
        earlier = last.parts.earlier
        if last.parts.block and last.newest_user_id and last.stamp[0] != self._user_turns:
            kept = (last.newest_user_id, last.parts.block, last.parts.block_tokens)
            earlier = (*earlier, kept)
        if sum(tokens for _, _, tokens in earlier) > room:
            return ()
        return earlier

    def _observe_request(self, request: _Request) -> int:
        """Tokens ``request`` shares with the start of the previous request, which it
        then replaces as the one the next request is compared with."""
        last, self._last_request = self._last_request, request
        self._last_request_at = time.monotonic()
        return 0 if last is None else request.print.common_prefix_tokens(last.print)

    def _invalidated_since_last_request(self) -> int | None:
        """Tokens of the last request a provider's cache can no longer serve, the
        view being what it is now (after a compaction): the last request assembled
        again with the same system message, tools and block. None before any request."""
        last = self._last_request
        if last is None or self._closed:
            return None
        items = self._store.assemble_placed(self.id, last.parts.history_budget, self.profile)[5]
        return last.print.invalidated_by(last.parts.print_of(items))


def _history_mark(hints: CacheHints) -> list[int]:
    """The one cache breakpoint an Anthropic request always has: where its history
    ends (else its system message)."""
    end = hints.history if hints.history is not None else hints.system
    return [] if end is None else [end]


def _tools_json(tools: Sequence[dict[str, Any]] | None) -> str:
    """Tool definitions as a request carries them, compact; empty for none."""
    return json.dumps(list(tools), separators=(",", ":")) if tools else ""


def _place_block(
    messages: list[dict[str, Any]], newest: int, block: str, *, merge: bool
) -> int | None:
    """Puts the arena's volatile block right after the newest user message (at the
    end when there is none). As a message of its own, and of the ``user`` role:
    litellm lifts ``system`` messages into a provider's separate system field (the
    front of the request), which would undo the placement. A profile that needs
    alternating roles gets it appended to that message instead. Returns the block's
    index, or None when it was merged."""
    if newest < 0:
        messages.append({"role": "user", "content": block})
        return len(messages) - 1
    if merge and isinstance(messages[newest].get("content"), str):
        messages[newest]["content"] = f"{messages[newest]['content']}\n\n{block}"
        return None
    messages.insert(newest + 1, {"role": "user", "content": block})
    return newest + 1
