"""Recall over the Model Context Protocol: any MCP client (an IDE, another agent)
can list a database's sessions, search them, and read back what compaction took out
of view.

``lossless mcp --db agent.db`` serves these tools over stdio (or, with ``--http``,
streamable HTTP on 127.0.0.1):

- ``sessions``: every session of the file, newest first;
- ``grep``: full-text (ranked) or regex search, over one session or all;
- ``describe``: a session's summary DAG, or one summary's subtree;
- ``expand``: a summary's source messages within a token budget.

Every answer is JSON text of bounded size, so a client's model can call them
freely. The server needs the ``mcp`` package (``pip install 'lossless[mcp]'``).
"""

from __future__ import annotations

import json
import os
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import anyio

from lossless.errors import InvalidInputError, LosslessError, StoreError
from lossless.store import Store, database_path

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["MAX_DESCRIBE_NODES", "MAX_GREP_HITS", "build_server", "serve"]

MAX_GREP_HITS = 50
MAX_DESCRIBE_NODES = 200
MAX_EXPAND_TOKENS = 20_000
_SNIPPET_CHARS = 400
_SUMMARY_TEXT_CHARS = 600

_INSTRUCTIONS = (
    "Search and read back the full history of agent sessions stored by lossless, "
    "including what compaction summarised out of the model's view. Find with grep, "
    "then expand the covering summary to read the original messages."
)


def _import_mcp() -> tuple[type[MCPServer], type[Exception]]:
    try:
        from mcp.server.mcpserver import MCPServer
        from mcp.server.mcpserver.exceptions import ToolError
    except ImportError as err:
        raise StoreError(
            "the MCP server needs the mcp package: pip install 'lossless[mcp]'"
        ) from err
    return MCPServer, ToolError


def open_database(db: str | os.PathLike[str]) -> Store:
    """The database the server reads; it must exist (serving never creates one)."""
    path = database_path(db)
    if path == ":memory:" or not os.path.exists(path):
        raise StoreError(f"{path}: no such database file")
    return Store(path)


def build_server(db: str | os.PathLike[str]) -> MCPServer:
    """An MCP server answering recall tools over the database at ``db``."""
    server_class, tool_error = _import_mcp()
    store = open_database(db)
    server = server_class("lossless", instructions=_INSTRUCTIONS)

    async def call(func: Any, *args: Any, **kwargs: Any) -> str:
        # Native calls release the interpreter; a worker thread keeps the server's
        # event loop answering while one runs.
        # A bad argument or an unknown id is the caller's to fix: the answer is an
        # error result the client's model reads, not a crash of the server.
        try:
            answer = await anyio.to_thread.run_sync(partial(func, *args, **kwargs))
        except LosslessError as err:
            raise tool_error(f"{type(err).__name__}: {err}") from err
        return json.dumps(answer, ensure_ascii=False)

    @server.tool()
    async def sessions() -> str:
        """Every session in the database, newest first: id, model, creation time
        (ms since the epoch), stored messages and summaries."""
        return await call(_sessions, store)

    @server.tool()
    async def grep(
        query: str,
        session_id: str | None = None,
        mode: Literal["text", "regex"] = "text",
        limit: int = 10,
    ) -> str:
        """Search stored messages, tool results and summaries. Text mode ranks
        matches; regex mode scans. Each hit names the live summary that covers it
        now (expand that summary to read the original)."""
        return await call(_grep, store, query, session_id, mode, limit)

    @server.tool()
    async def describe(target: str) -> str:
        """The summary DAG of a session (a ``ses_…`` id) or of one summary (``sum_…``):
        what each summary covers, its level, depth and size."""
        return await call(_describe, store, target)

    @server.tool()
    async def expand(summary_id: str, max_tokens: int = 4_000) -> str:
        """The original messages behind a summary, oldest first, within
        ``max_tokens`` (at most 20,000); says how many did not fit."""
        return await call(_expand, store, summary_id, max_tokens)

    return server


def serve(
    db: str | os.PathLike[str],
    *,
    transport: Literal["stdio", "streamable-http"] = "stdio",
    port: int = 8765,
) -> None:
    """Serve the recall tools over ``db`` until the client goes away (stdio) or the
    process is stopped (HTTP, on 127.0.0.1 only)."""
    server = build_server(db)
    if transport == "stdio":
        server.run("stdio")
    else:
        server.run("streamable-http", host="127.0.0.1", port=port)


def _bounded(field: str, value: int, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{field}: expected an integer, got {type(value).__name__}")
    if not low <= value <= high:
        raise InvalidInputError(f"{field}: must be between {low} and {high}")
    return value


def _cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _sessions(store: Store) -> list[dict[str, Any]]:
    rows = sorted(store.sessions(), key=lambda row: row["created_at"], reverse=True)
    keys = ("id", "model", "created_at", "messages", "summaries")
    return [{key: row[key] for key in keys if key in row} for row in rows]


def _grep(
    store: Store, query: str, session_id: str | None, mode: str, limit: int
) -> list[dict[str, Any]]:
    limit = _bounded("limit", limit, 1, MAX_GREP_HITS)
    if mode not in ("text", "regex"):
        raise InvalidInputError(f"mode: expected 'text' or 'regex', got {mode!r}")
    hits = store.grep(query, session_id=session_id, mode=mode, limit=limit)  # type: ignore[arg-type]
    return [{**hit, "snippet": _cut(str(hit["snippet"]), _SNIPPET_CHARS)} for hit in hits]


def _describe(store: Store, target: str) -> dict[str, Any]:
    if target.startswith("sum_"):
        rows = store.describe(summary_id=target)
    else:
        rows = store.describe(session_id=target)
    nodes = [
        {
            "id": row["id"],
            "kind": row["kind"],
            "level": row["level"],
            "depth": row["depth"],
            "span_start_seq": row["span_start_seq"],
            "span_end_seq": row["span_end_seq"],
            "message_count": row["message_count"],
            "token_count": row["token_count"],
            "live": row["live"],
            "text": _cut(str(row["text"]), _SUMMARY_TEXT_CHARS),
        }
        for row in rows[:MAX_DESCRIBE_NODES]
    ]
    return {"nodes": nodes, "left_out": max(0, len(rows) - MAX_DESCRIBE_NODES)}


def _expand(store: Store, summary_id: str, max_tokens: int) -> dict[str, Any]:
    max_tokens = _bounded("max_tokens", max_tokens, 1, MAX_EXPAND_TOKENS)
    return store.expand(summary_id, max_tokens=max_tokens)
