"""What every transcript import shares: reading JSONL lines, walking a directory,
storing one transcript as one session through ``Session.sync``, the typed result.

A source module (:mod:`.claude_code`, :mod:`.codex`) turns a file into
:class:`Transcript` objects (a key, a model, a header, the messages in a format
``record_messages`` takes); this module stores them. See docs/IMPORTS.md.
"""

from __future__ import annotations

import json
import os
from collections import Counter
from collections.abc import AsyncIterator, Callable, Mapping, Sequence
from contextlib import asynccontextmanager
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, Literal

import anyio

from lossless.config import CompactionConfig, Config, ModelConfig
from lossless.errors import (
    FileInputError,
    HistoryDivergedError,
    InvalidInputError,
    MissingFileError,
    TranscriptError,
    UnknownModelError,
)
from lossless.formats import MessageFormat
from lossless.models import resolve_limits_async
from lossless.session import Session, session_for_key

__all__ = [
    "ImportProgress",
    "ImportResult",
    "Line",
    "ProgressCallback",
    "Source",
    "Transcript",
    "read_lines",
    "run_import",
    "transcript_files",
]

Source = Literal["claude-code", "codex"]


@dataclass(frozen=True, slots=True)
class Line:
    """One JSON object of a transcript, with its 1-based line number."""

    number: int
    data: Mapping[str, Any]


@dataclass(slots=True)
class Transcript:
    """One agent session read from a file, ready to store.

    ``messages`` are in ``format``; ``header`` is the text of the first system
    message (where the session ran: project, branch, the agent's own id), built
    only from what the file's first lines say, so it stays the same as the file
    grows and a re-import recognises the stored history.
    """

    path: Path
    key: str
    model: str
    format: MessageFormat
    header: str
    messages: list[dict[str, Any]] = field(default_factory=list)
    skipped: Counter[str] = field(default_factory=Counter)


@dataclass(frozen=True, slots=True)
class ImportResult:
    """What importing one transcript did.

    ``stored`` counts the lossless messages this import added, ``already`` those a
    previous import had stored (a tool call and its result are two messages).
    ``skipped`` counts what was left out by reason (a line type that holds no
    message, a block kind no format carries, a last line still being written);
    ``session_id`` is None when the transcript held no message (nothing stored) or
    could not be read (``error`` says why). When the file no longer extends what an
    earlier import stored (a reply imported while the agent was still writing it
    has grown), the session forked there: ``forked_from`` names the session left,
    which keeps what it had, and the key now names ``session_id``.
    """

    path: Path
    source: Source
    key: str
    model: str
    session_id: str | None
    stored: int
    already: int
    skipped: Mapping[str, int]
    forked_from: str | None = None
    error: str | None = None

    @property
    def lines_skipped(self) -> int:
        """Every line or block left out, whatever the reason."""
        return sum(self.skipped.values())


@dataclass(frozen=True, slots=True)
class ImportProgress:
    """Reported after each file: ``done`` of ``total`` files, and what the file gave."""

    done: int
    total: int
    path: Path
    results: Sequence[ImportResult]


ProgressCallback = Callable[[ImportProgress], None]
Parser = Callable[[Path, list[Line], Counter[str]], list[Transcript]]

#: Limits used for a model litellm's map does not know yet (newer than the
#: installed litellm): the session keeps the transcript's model name.
_FALLBACK_LIMITS: dict[Source, ModelConfig] = {
    # Claude models' standard window and Claude Code's output ceiling.
    "claude-code": ModelConfig(context_limit=200_000, max_output_tokens=64_000),
    # GPT-5 family, as litellm's map gives gpt-5-codex.
    "codex": ModelConfig(context_limit=272_000, max_output_tokens=128_000),
}


def transcript_files(path: str | os.PathLike[str]) -> list[Path]:
    """``path`` itself when it is a file, else every ``*.jsonl`` under it, sorted."""
    root = Path(path)
    if root.is_file():
        return [root]
    if not root.exists():
        raise MissingFileError(f"{root}: no such file or directory")
    if not root.is_dir():
        raise FileInputError(f"{root}: neither a file nor a directory")
    return sorted(found for found in root.rglob("*.jsonl") if found.is_file())


def read_lines(path: Path, skipped: Counter[str]) -> list[Line]:
    """The JSON objects of ``path``, blank lines left out. A line that is not a
    JSON object raises :class:`TranscriptError`, except a last line without its
    newline: the agent is still writing it, and the next import takes it
    (counted in ``skipped`` as ``"partial last line"``)."""
    text = path.read_text(encoding="utf-8", errors="replace")
    raw_lines = text.split("\n")
    lines: list[Line] = []
    for index, raw in enumerate(raw_lines):
        if not raw.strip():
            continue
        try:
            data = json.loads(raw)
        except json.JSONDecodeError as err:
            if index == len(raw_lines) - 1:  # no newline after it: still being written
                skipped["partial last line"] += 1
                continue
            raise TranscriptError(str(path), index + 1, f"not JSON ({err.msg})") from None
        if not isinstance(data, dict):
            raise TranscriptError(str(path), index + 1, "expected a JSON object")
        lines.append(Line(index + 1, data))
    return lines


async def import_config(source: Source, model: str) -> Config:
    """The configuration an imported session is created with. Compaction is off:
    an import is an archive, and summarising it would call the model for every
    transcript (compact later with a session of your own). A model litellm does
    not know keeps its name with the source's usual limits."""
    try:
        await resolve_limits_async(model, ModelConfig())
        limits = ModelConfig()
    except UnknownModelError:
        limits = _FALLBACK_LIMITS[source]
    return Config(model=limits, compaction=CompactionConfig(enabled=False))


@asynccontextmanager
async def _session_for(
    transcript: Transcript, source: Source, db: str | os.PathLike[str], config: Config | None
) -> AsyncIterator[Session]:
    """The session the transcript's key names, with the model and configuration it
    was created with, or a new one named by the key."""
    found = await session_for_key(db, transcript.key)
    if found is None:
        # Created and named in one transaction: two imports at once agree on one session.
        new = Session.open(
            model=transcript.model,
            db=db,
            key=transcript.key,
            config=config or await import_config(source, transcript.model),
        )
        async with new as session:
            yield session
        return
    async with await Session.load(found, db=db) as session:
        yield session


async def store_transcript(
    transcript: Transcript, source: Source, db: str | os.PathLike[str], config: Config | None
) -> ImportResult:
    """Stores what of ``transcript`` is not stored yet (``Session.sync``)."""
    if not transcript.messages:
        return _result(transcript, source, None, 0, 0)
    async with _session_for(transcript, source, db, config) as session:
        started_as = session.id
        # Seqs number a session's messages from 1.
        before = session.store.newest_seq(session.id)
        history, system = _with_header(transcript)
        await _sync_by_turn(session, history, transcript.format, system)
        after = session.store.newest_seq(session.id)
        if session.id == started_as:
            return _result(transcript, source, session, after - before, before)
        # Forked: the messages up to the fork point are the ones it shares.
        fork = session.store.fork_of(session.id)
        shared = fork.fork_seq if fork is not None else 0
        return _result(transcript, source, session, after - shared, shared, started_as)


async def _sync_by_turn(
    session: Session, history: list[dict[str, Any]], format: MessageFormat, system: str | None
) -> None:
    """Syncs ``history`` one user turn at a time. A session forks only where a sync
    call began, so a rewind (a new prompt) forks at that prompt and shares the turns
    before it. A turn stored already raises (the stored history goes on past it):
    a digest compare, skipped."""
    for end in _turn_ends(history, format):
        try:
            await session.sync(history[:end], format=format, system=system, on_change="raise")
        except HistoryDivergedError as err:
            if err.index >= end:  # this part is stored whole
                continue
            await session.sync(history[:end], format=format, system=system, on_change="fork")


def _turn_ends(messages: list[dict[str, Any]], format: MessageFormat) -> list[int]:
    """The ends of the history's user turns: before each prompt (a user message
    that is not only tool results), and the end."""
    ends = [index for index, message in enumerate(messages) if index and _prompt(message, format)]
    return [*ends, len(messages)]


def _prompt(message: Mapping[str, Any], format: MessageFormat) -> bool:
    if format == "responses":
        return message.get("type") == "message" and message.get("role") == "user"
    content = message.get("content")
    if message.get("role") != "user":
        return False
    return isinstance(content, str) or any(
        isinstance(block, Mapping) and block.get("type") != "tool_result" for block in content or ()
    )


def _with_header(transcript: Transcript) -> tuple[list[dict[str, Any]], str | None]:
    """The messages to sync and the system text apart (Anthropic's place for it)."""
    if transcript.format == "anthropic":
        return transcript.messages, transcript.header
    header = {"type": "message", "role": "system", "content": transcript.header}
    return [header, *transcript.messages], None


def _result(
    transcript: Transcript,
    source: Source,
    session: Session | None,
    stored: int,
    already: int,
    forked_from: str | None = None,
) -> ImportResult:
    """The result of ``transcript`` stored in ``session`` (None: nothing stored),
    with the model the session was created with."""
    return ImportResult(
        path=transcript.path,
        source=source,
        key=transcript.key,
        model=session.model if session is not None else transcript.model,
        session_id=session.id if session is not None else None,
        stored=stored,
        already=already,
        skipped=dict(transcript.skipped),
        forked_from=forked_from,
    )


async def _stored(
    transcript: Transcript,
    source: Source,
    db: str | os.PathLike[str],
    config: Config | None,
    strict: bool,
) -> ImportResult:
    """:func:`store_transcript`; when not ``strict``, a transcript the session
    refuses (content no format can carry) is reported in its result instead."""
    try:
        return await store_transcript(transcript, source, db, config)
    except InvalidInputError as err:
        if strict:
            raise
        return _failed(transcript.path, source, err, key=transcript.key)


def _failed(path: Path, source: Source, err: InvalidInputError, key: str = "") -> ImportResult:
    return ImportResult(
        path=path,
        source=source,
        key=key,
        model="",
        session_id=None,
        stored=0,
        already=0,
        skipped={},
        error=str(err),
    )


def _parse(path: Path, parse: Parser) -> list[Transcript]:
    skipped: Counter[str] = Counter()
    lines = read_lines(path, skipped)
    return parse(path, lines, skipped)


async def run_import(
    path: str | os.PathLike[str],
    *,
    source: Source,
    parse: Parser,
    db: str | os.PathLike[str],
    config: Config | None,
    on_progress: ProgressCallback | None,
    strict: bool,
) -> list[ImportResult]:
    """Imports every transcript file at ``path``, one file at a time: a file is
    read whole (and refused whole when malformed) before anything of it is stored."""
    # Reading and parsing a file (megabytes for a long session) runs off the loop.
    files = await anyio.to_thread.run_sync(transcript_files, path)
    results: list[ImportResult] = []
    for done, file in enumerate(files, start=1):
        try:
            transcripts = await anyio.to_thread.run_sync(_parse, file, parse)
        except TranscriptError as err:
            if strict:
                raise
            file_results = [_failed(file, source, err)]
        else:
            file_results = [
                await _stored(transcript, source, db, config, strict) for transcript in transcripts
            ]
        results.extend(file_results)
        if on_progress is not None:
            on_progress(ImportProgress(done, len(files), file, file_results))
    return results
