"""The summarisation ladder: level 1 (structured) and level 2 (aggressive) through a
model, or the built-in extractive summariser (and, to condense, the merge of the
summaries' sections) when no model is configured or its attempts fail, and level 3
(deterministic truncation in the core), which never fails and always fits."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any, Literal, TypeVar

import anyio

from lossless import _native
from lossless.calibration import TokenCalibration
from lossless.compaction import prompts
from lossless.config import Config
from lossless.llm import complete_text
from lossless.tokens import merge_file_id_footer

__all__ = ["Candidate", "Summariser"]

SummariserKind = Literal["llm", "extractive", "truncation"]

_T = TypeVar("_T")

# Below this a summary cannot say anything useful next to its file-id footer, in a
# window that affords it; a round's rules give smaller windows a smaller floor
# (``RoundRules.min_summary``), and the targets it hands here respect it.
MIN_SUMMARY_TOKENS = _native.MIN_SUMMARY_TOKENS
# Each condensed summary is cut to this before a level-2 merge.
CONDENSE2_SUMMARY_CHARS = 800
# A model summary at most this fraction of its input shrinks it well (the core's rule).
WELL_SHRUNK_DIVISOR = _native.WELL_SHRUNK_DIVISOR
# A model summary is checked against the built-in summary of the same messages,
# written within at least this many tokens: instructions claim that budget first.
CHECK_SOURCE_TOKENS = 2_000
# A model summary whose phrases are mostly its prompt's says nothing of the messages.
PROMPT_ECHO_LIMIT = 0.5
# Nor does one that mostly repeats itself (a small model stuck in a loop).
REPETITION_LIMIT = 0.5


@dataclass(frozen=True, slots=True)
class Candidate:
    """A summary ready to commit, with what it covers: the messages of ``span`` (a
    leaf) or the summaries ``summary_ids`` (a condensed summary)."""

    text: str
    token_count: int
    level: int
    summariser: SummariserKind
    span: _native.Span | None = None
    summary_ids: list[str] = field(default_factory=list)
    attempts: tuple[str, ...] = ()

    @property
    def message_count(self) -> int:
        """Messages the summary covers (0 for a condensed one)."""
        return 0 if self.span is None else self.span.message_count


def _extractive_attempt(result: _native.SpanTextResult, span: _native.Span) -> str:
    return f"extractive: {result.token_count} tokens for a {span.tokens}-token span"


class Summariser:
    """Produces summaries for one session: tries each level in turn."""

    def __init__(
        self,
        store: _native.Store,
        config: Config,
        *,
        count: Callable[[str], int],
        compaction_window: int,
    ) -> None:
        self._store = store
        self._config = config
        self._count = count
        self._compaction_window = compaction_window
        # The transcripts of the spans a model summarised since the ledger last read
        # them: the model reads the ledger's items out of them too.
        self.ledger_sources: list[str] = []
        # The messages of the session's last request, when the summarisation call may
        # reuse them (the session sets it); None sends a transcript instead.
        self.conversation: Callable[[], list[dict[str, Any]] | None] = lambda: None

    @property
    def model(self) -> str | None:
        return self._config.compaction.model

    async def _native_call(self, call: Callable[[], _T]) -> _T:
        """``call()`` (a native call) in a worker thread. A closure, not a function and
        its arguments: the type checker then sees which overload a call takes (a span
        gives a text without message ids)."""
        return await anyio.to_thread.run_sync(call)

    async def summarise(
        self, span: _native.Span, target: int, ceiling: int | None = None
    ) -> Candidate:
        """A leaf summary of ``span`` within ``target`` tokens and smaller than the span.

        A model's summary is held to ``target`` without its file-id footer (which the
        model was not asked to write), and is accepted up to ``ceiling`` (default
        ``target``) when it shrinks its input to a quarter or less: the round then
        condenses, which keeps more than a truncation to the target would.
        """
        target = max(target, 1)
        ceiling = max(target, ceiling or target)
        attempts: list[str] = []
        if self.model is not None:
            for level in (1, 2) if self._config.compaction.level2_enabled else (1,):
                candidate = await self._llm_leaf(level, span, (target, ceiling), attempts)
                if candidate is not None:
                    return candidate
        # The built-in summary keeps every instruction it finds: a better fallback for
        # model summaries that failed their checks than truncation.
        result = await self._native_call(lambda: self._store.extractive_summary(span, target))
        if result.token_count <= target and result.token_count < span.tokens:
            return Candidate(
                result.text,
                result.token_count,
                1,
                "extractive",
                span,
                attempts=tuple(attempts),
            )
        attempts.append(_extractive_attempt(result, span))
        return await self.truncate(span, target, attempts)

    async def _checked(
        self, summary: str, source: str, prompt: str, label: str, attempts: list[str]
    ) -> str | None:
        """``summary`` with what it left out of ``source`` (a built-in summary, or the
        summaries being condensed) added back, or None when it mostly repeats ``prompt``."""
        missing, echo, repetition = _native.check_summary(summary, source, prompt)
        if echo >= PROMPT_ECHO_LIMIT:
            attempts.append(f"{label}: {echo:.0%} of the summary repeats its prompt; refused")
            return None
        if repetition >= REPETITION_LIMIT:
            attempts.append(f"{label}: {repetition:.0%} of the summary repeats itself; refused")
            return None
        return _native.with_kept(summary, missing)

    async def truncate(self, span: _native.Span, target: int, attempts: list[str]) -> Candidate:
        """Level 3: the newest messages of ``span`` that fit ``target``; always fits."""
        target = max(target, 1)
        result = await self._native_call(lambda: self._store.truncate_summary(span, target))
        return Candidate(
            result.text,
            result.token_count,
            3,
            "truncation",
            span,
            attempts=tuple(attempts),
        )

    async def _llm_leaf(
        self, level: int, span: _native.Span, limits: tuple[int, int], attempts: list[str]
    ) -> Candidate | None:
        assert self.model is not None
        target, ceiling = limits
        window = self._compaction_window
        # The window is the provider's count; the cap is in ours (see lossless.calibration).
        correction = TokenCalibration(self.model).correction
        cap = int(window * self._config.compaction.input_fraction / correction)
        chars = self._config.compaction.level2_message_chars if level == 2 else None
        transcript = await self._native_call(lambda: self._store.transcript(span, chars, cap))
        instructions = prompts.LEVEL1 if level == 1 else prompts.LEVEL2
        # The most the summary may hold: a model cut off at the target would write less
        # than a summary the round accepts.
        max_tokens = min(
            ceiling,
            self._config.compaction.output_budget or ceiling,
            4_000 if level == 2 else ceiling,
        )
        messages = self._after_conversation(instructions, transcript.text) or [
            {"role": "system", "content": instructions},
            {"role": "user", "content": transcript.text},
        ]
        try:
            reply = await complete_text(
                self.model, messages, llm=self._config.llm, max_tokens=max_tokens
            )
        except Exception as err:
            attempts.append(f"level {level}: the model call failed: {err}")
            return None
        if not reply.strip():
            attempts.append(f"level {level}: the model returned no text")
            return None
        covered = span.head(transcript.message_count)
        source_tokens = max(2 * target, CHECK_SOURCE_TOKENS)
        source = await self._native_call(
            lambda: self._store.extractive_summary(covered, source_tokens)
        )
        checked = await self._checked(
            reply.strip(), source.text, instructions, f"level {level}", attempts
        )
        if checked is None:
            return None
        text = merge_file_id_footer(checked, transcript.file_ids)
        tokens = self._count(text)
        # The footer is the store's, not the model's: only the text is held to the target.
        said = self._count(checked)
        given = transcript.token_count
        well_shrunk = said * WELL_SHRUNK_DIVISOR <= given and said <= ceiling
        if tokens >= given or (said > target and not well_shrunk):
            attempts.append(
                f"level {level}: {said} tokens of text ({tokens} with its file-id footer) for "
                f"{given} tokens in (target {target}): not smaller than its input or over "
                "the target"
            )
            return None
        if said > target:
            attempts.append(
                f"level {level}: {said} tokens of text for {given} tokens in, over the target "
                f"of {target} but at most 1/{WELL_SHRUNK_DIVISOR} of its input: accepted, "
                "condensation follows"
            )
        self.ledger_sources.append(transcript.text)
        return Candidate(text, tokens, level, "llm", covered, attempts=tuple(attempts))

    def _after_conversation(
        self, instructions: str, transcript: str
    ) -> list[dict[str, Any]] | None:
        """The session's last request with the instruction appended as a user message,
        when the configuration asks for it and the session offers one: a provider then
        reads the conversation from its cache. The span is named by where it ends (the
        opening words of its last message, from ``transcript``); the summary's checks
        against the span's own text stay as they are."""
        if not self._config.compaction.reuse_conversation_prefix:
            return None
        conversation = self.conversation()
        if not conversation:
            return None
        last_entry = transcript[transcript.rfind("[#") :]
        opening = last_entry.partition("\n")[2][:120].strip()
        ask = (
            f"{instructions}\n\nSummarise the conversation above from its first message after "
            "any [summary ...] messages up to and including the message that begins "
            f"{opening!r}. Leave out every newer message and any <context> block."
        )
        return [*conversation, {"role": "user", "content": ask}]

    async def condense(self, summaries: list[_native.SummaryRow], target: int) -> Candidate:
        """One condensed summary replacing ``summaries`` (two or more live ones): the
        model's, or else their sections merged with the newest kept, or else (level 3)
        their texts joined and cut."""
        ids = [row.id for row in summaries]
        file_ids = [file_id for row in summaries for file_id in row.file_ids]
        total = sum(row.token_count for row in summaries)
        attempts: list[str] = []
        if self.model is not None:
            for level in (1, 2) if self._config.compaction.level2_enabled else (1,):
                pieces = [
                    row.text if level == 1 else row.text[:CONDENSE2_SUMMARY_CHARS]
                    for row in summaries
                ]
                instructions = prompts.CONDENSE1 if level == 1 else prompts.CONDENSE2
                try:
                    reply = await complete_text(
                        self.model,
                        [
                            {"role": "system", "content": instructions},
                            {"role": "user", "content": "\n\n---\n\n".join(pieces)},
                        ],
                        llm=self._config.llm,
                        max_tokens=max(target, 1),
                    )
                except Exception as err:
                    attempts.append(f"condense level {level}: the model call failed: {err}")
                    continue
                if not reply.strip():
                    attempts.append(f"condense level {level}: the model returned no text")
                    continue
                sources = "\n\n".join(row.text for row in summaries)
                label = f"condense level {level}"
                checked = await self._checked(reply.strip(), sources, instructions, label, attempts)
                if checked is None:
                    continue
                text = merge_file_id_footer(checked, file_ids)
                tokens = self._count(text)
                # The footer carries every file id forward whatever the target: only the
                # model's own text is held to it.
                if tokens < total and self._count(checked) <= target:
                    return Candidate(
                        text, tokens, level, "llm", summary_ids=ids, attempts=tuple(attempts)
                    )
                attempts.append(f"condense level {level}: {tokens} tokens for {total} tokens in")
        merged = await self._merge(ids, target, total, attempts)
        if merged is not None:
            return merged
        # The round's own target: a fixed size larger than what the goal leaves would
        # keep a small window's view over its soft limit for good.
        limit = self._config.compaction.condense_level3_max_tokens
        limit = target if limit is None else min(target, limit)
        result = await self._native_call(lambda: self._store.condense_truncate(ids, max(limit, 1)))
        return Candidate(
            result.text,
            result.token_count,
            3,
            "truncation",
            summary_ids=ids,
            attempts=tuple(attempts),
        )

    async def _merge(
        self, ids: list[str], target: int, total: int, attempts: list[str]
    ) -> Candidate | None:
        """The built-in condensation: the summaries' sections merged within ``target``,
        the newest items kept; None (with why in ``attempts``) when it does not fit or
        does not shrink them, as when their file-id footer alone is larger."""
        target = max(target, 1)
        result = await self._native_call(lambda: self._store.condense_merge(ids, target))
        if result.token_count <= target and _native.RoundRules.shrinks(result.token_count, total):
            return Candidate(
                result.text,
                result.token_count,
                1,
                "extractive",
                summary_ids=ids,
                attempts=tuple(attempts),
            )
        attempts.append(
            f"condense extractive: {result.token_count} tokens for {total} tokens in "
            f"(target {target})"
        )
        return None
