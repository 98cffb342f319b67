"""Coding agents' transcripts in: Claude Code and Codex CLI sessions as lossless
sessions, tool calls, results and reasoning kept, so ``lossless grep``, ``show``
and ``mcp`` reach a person's past agent sessions.

::

    from lossless.imports import import_claude_code, import_codex

    results = await import_claude_code("~/.claude/projects", db="agents.db")
    results = await import_codex("~/.codex/sessions", db="agents.db")

Each transcript is one session, named by a key (``claude-code:<sessionId>``,
``codex:<id>``), and stored with ``Session.sync``: importing a file again stores
nothing, importing it after it grew stores the new part. See docs/IMPORTS.md.
"""

from __future__ import annotations

import os
from pathlib import Path

from lossless.config import Config
from lossless.imports import claude_code, codex
from lossless.imports._common import (
    ImportProgress,
    ImportResult,
    ProgressCallback,
    Source,
    run_import,
)

__all__ = [
    "ImportProgress",
    "ImportResult",
    "ProgressCallback",
    "Source",
    "import_claude_code",
    "import_codex",
]


async def import_claude_code(
    path: str | os.PathLike[str],
    *,
    db: str | os.PathLike[str] = "lossless.db",
    config: Config | None = None,
    on_progress: ProgressCallback | None = None,
    strict: bool = True,
) -> list[ImportResult]:
    """Imports Claude Code transcripts: one ``.jsonl`` file, or every one under a
    directory (``~/.claude/projects``). A sub-agent's lines become a session of
    their own. Returns one :class:`ImportResult` per session, in file order.

    ``config`` is what a new session is created with (default: compaction off,
    see docs/IMPORTS.md); ``on_progress`` is called after each file. A line that
    is not a JSON object raises :class:`~lossless.errors.TranscriptError` naming
    the file and line, with nothing of that file stored; with ``strict=False`` the
    file's result carries the error and the import goes on with the next file.
    """
    return await run_import(
        _expanded(path),
        source="claude-code",
        parse=claude_code.parse,
        db=db,
        config=config,
        on_progress=on_progress,
        strict=strict,
    )


async def import_codex(
    path: str | os.PathLike[str],
    *,
    db: str | os.PathLike[str] = "lossless.db",
    config: Config | None = None,
    on_progress: ProgressCallback | None = None,
    strict: bool = True,
) -> list[ImportResult]:
    """Imports Codex CLI rollouts: one ``rollout-*.jsonl`` file, or every
    ``.jsonl`` under a directory (``~/.codex/sessions``). Arguments and errors as
    :func:`import_claude_code`."""
    return await run_import(
        _expanded(path),
        source="codex",
        parse=codex.parse,
        db=db,
        config=config,
        on_progress=on_progress,
        strict=strict,
    )


def _expanded(path: str | os.PathLike[str]) -> Path:
    return Path(path).expanduser()
