"""Your past Claude Code and Codex CLI sessions in one searchable database.

Imports every transcript under ``~/.claude/projects`` and ``~/.codex/sessions``
(or the folders given) into ``agents.db``, then searches them for a word and
shows where each hit came from: the agent, the project it ran in, the tool call
whose output matched. Run it again later: only what the agents wrote since is
stored::

    .venv/bin/python examples/import_agent_sessions.py --query "permission denied"
    .venv/bin/python examples/import_agent_sessions.py --claude-code transcripts/ \\
        --codex none --db agents.db --query TIDEWATCH

Then ``lossless --db agents.db show <session>`` or ``lossless --db agents.db mcp``
(so an agent can search its own past sessions).
"""

from __future__ import annotations

import argparse
from pathlib import Path

import anyio

from lossless import Store
from lossless.imports import ImportProgress, ImportResult, import_claude_code, import_codex


def report(step: ImportProgress) -> None:
    """Called after each transcript file."""
    stored = sum(result.stored for result in step.results)
    print(f"[{step.done}/{step.total}] {step.path.name}: {stored} new messages")


async def import_all(claude_code: Path | None, codex: Path | None, db: str) -> list[ImportResult]:
    results: list[ImportResult] = []
    if claude_code is not None:
        # strict=False: a damaged file is reported in its result, the others still import.
        results += await import_claude_code(claude_code, db=db, on_progress=report, strict=False)
    if codex is not None:
        results += await import_codex(codex, db=db, on_progress=report, strict=False)
    return results


def search(db: str, query: str) -> None:
    """Each hit with the header of its session: which agent, where it ran."""
    store = Store(db, read_only=True)
    headers: dict[str, str] = {}
    for hit in store.grep(query, limit=10):
        if hit.session_id not in headers:
            first = store.history(hit.session_id)[0]  # the import's header message
            headers[hit.session_id] = str(first["parts"][0].get("text", ""))
        print(f"\n{hit.session_id}  {headers[hit.session_id]}")
        print("   ", hit.snippet.replace("\n", "\n    "))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--claude-code", default="~/.claude/projects", help="'none' to skip")
    parser.add_argument("--codex", default="~/.codex/sessions", help="'none' to skip")
    parser.add_argument("--db", default="agents.db")
    parser.add_argument("--query", help="a word to search the imported sessions for")
    args = parser.parse_args()

    def folder(value: str) -> Path | None:
        path = Path(value).expanduser()
        return path if value != "none" and path.exists() else None

    results = anyio.run(import_all, folder(args.claude_code), folder(args.codex), args.db)
    for result in results:
        state = f"error: {result.error}" if result.error else f"{result.stored} new"
        print(f"{result.key or result.path}: {state}, {result.already} already stored")
    if args.query and Path(args.db).exists():
        search(args.db, args.query)


if __name__ == "__main__":
    main()
