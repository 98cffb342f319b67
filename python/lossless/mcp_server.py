"""Recall over the Model Context Protocol: any MCP client (an IDE, another agent)
can list a database's sessions, search them, and read back what compaction took out
of view.

``lossless mcp --db agent.db`` serves these tools over stdio (or, with ``--http``,
streamable HTTP on 127.0.0.1):

- ``sessions``: every session of the file, newest first;
- ``grep``: a question or words (ranked), or a regex, over one session or all;
- ``describe``: a session's summary DAG, or one summary's subtree;
- ``expand``: a summary's source messages within a token budget, centred on a
  message or on the best match of a query when asked, with cursors to page on;
- ``read``: one stored message written out whole, a page at a time; an image's or
  a document's id shows the image or document itself.

Every answer is JSON text of bounded size (with the image or document itself when
one is read by id), so a client's model can call them freely. The server needs the
``mcp`` package (``pip install 'lossless[mcp]'``).
"""

from __future__ import annotations

import base64
import json
import os
from dataclasses import asdict
from functools import partial
from typing import TYPE_CHECKING, Any, Literal

import anyio

from lossless import recall
from lossless._http_auth import BearerAuth, is_loopback
from lossless.errors import DatabaseNotFoundError, InvalidInputError, LosslessError, StoreError
from lossless.parts import MediaPart
from lossless.recall.tools import MEDIA_ID, media_facts
from lossless.store import Store, database_path

if TYPE_CHECKING:
    from mcp.server.mcpserver import MCPServer

__all__ = ["MAX_DESCRIBE_NODES", "MAX_GREP_HITS", "build_server", "serve"]

MAX_GREP_HITS = 50
MAX_DESCRIBE_NODES = 200
MAX_EXPAND_TOKENS = 20_000
MAX_READ_TOKENS = 20_000
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
    """The database the server reads, opened read-only: serving never creates,
    migrates or writes a file."""
    path = database_path(db)
    if path == ":memory:" or not os.path.exists(path):
        raise DatabaseNotFoundError(f"{path}: no such database file")
    return Store(path, read_only=True)


def build_server(db: str | os.PathLike[str]) -> MCPServer:
    """An MCP server answering recall tools over the database at ``db``."""
    server_class, tool_error = _import_mcp()
    import mcp_types as types

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
    async def expand(
        summary_id: str,
        max_tokens: int = 4_000,
        around: str | None = None,
        query: str | None = None,
        before: str | None = None,
        after: str | None = None,
    ) -> str:
        """The original messages behind a summary within ``max_tokens`` (at most
        20,000): the oldest first, or centred on ``around`` (a message id, such as a
        grep hit's) or on the best match of ``query``; ``before`` / ``after`` (the
        cursors an answer gives) page to older / newer messages. Says how many
        messages lie on each side of the window."""
        focus = {"around": around, "query": query, "before": before, "after": after}
        return await call(_expand, store, summary_id, max_tokens, focus)

    @server.tool()
    async def read(message_id: str, max_tokens: int = 4_000, cursor: int | None = None) -> Any:
        """One stored message written out whole (its text, every tool call's input,
        output and error, file references), a page of at most ``max_tokens`` at a
        time; pass ``next_cursor`` back as ``cursor`` for the next page. Given an
        image's or a document's id (``image_…``, ``document_…``, as a reference line
        names it) it shows that image or document itself, beside what it is."""
        if MEDIA_ID.fullmatch(message_id):
            facts = await call(_media_facts, store, message_id)
            part = await anyio.to_thread.run_sync(partial(recall.read_media, message_id, db=store))
            return [types.TextContent(type="text", text=facts), *_media_content(part)]
        return await call(_read, store, message_id, max_tokens, cursor)

    def _media_content(part: MediaPart) -> list[Any]:
        """The image or document itself as MCP content: an image as image content, a
        PDF as an embedded resource of its bytes; an image known by URL alone, none."""
        if part.data is None:
            return []
        data = base64.b64encode(part.data).decode()
        media_type = part.media_type or "application/octet-stream"
        if part.media_kind == "image":
            return [types.ImageContent(type="image", data=data, mime_type=media_type)]
        resource = types.BlobResourceContents(
            uri=f"lossless://{part.media_id}", mime_type=media_type, blob=data
        )
        return [types.EmbeddedResource(type="resource", resource=resource)]

    return server


def serve(
    db: str | os.PathLike[str],
    *,
    transport: Literal["stdio", "streamable-http"] = "stdio",
    host: str = "127.0.0.1",
    port: int = 8765,
    token: str | None = None,
) -> None:
    """Serve the recall tools over ``db`` until the client goes away (stdio) or the
    process is stopped (HTTP).

    Over HTTP the server binds ``host`` (127.0.0.1 by default). With a ``token``
    (or ``LOSSLESS_MCP_TOKEN``) every request must carry ``Authorization: Bearer
    <token>``; an address other than a loopback one is refused without a token, as
    the tools read every stored session. The tools only read, on any address."""
    server = build_server(db)
    if transport == "stdio":
        server.run("stdio")
        return
    token = token or os.environ.get("LOSSLESS_MCP_TOKEN") or None
    if token is None and not is_loopback(host):
        raise InvalidInputError(
            f"serving on {host} needs a bearer token (--token or LOSSLESS_MCP_TOKEN): "
            "the tools read every stored session"
        )
    import uvicorn

    app: Any = server.streamable_http_app(host=host)
    if token is not None:
        app = BearerAuth(app, token)
    uvicorn.run(app, host=host, port=port, log_level="warning")


def _bounded(field: str, value: int, low: int, high: int) -> int:
    if isinstance(value, bool) or not isinstance(value, int):
        raise InvalidInputError(f"{field}: expected an integer, got {type(value).__name__}")
    if not low <= value <= high:
        raise InvalidInputError(f"{field}: must be between {low} and {high}")
    return value


def _cut(text: str, chars: int) -> str:
    return text if len(text) <= chars else text[: chars - 1] + "…"


def _sessions(store: Store) -> list[dict[str, Any]]:
    rows = sorted(store.sessions(), key=lambda row: row.created_at, reverse=True)
    return [dict(row) for row in rows]


def _grep(
    store: Store, query: str, session_id: str | None, mode: str, limit: int
) -> list[dict[str, Any]]:
    limit = _bounded("limit", limit, 1, MAX_GREP_HITS)
    hits = recall.grep(query, db=store, session=session_id, mode=mode, limit=limit)  # type: ignore[arg-type]
    return [{**asdict(hit), "snippet": _cut(hit.snippet, _SNIPPET_CHARS)} for hit in hits]


def _describe(store: Store, target: str) -> dict[str, Any]:
    nodes = recall.describe(target, db=store)
    shown = [
        {
            **{key: value for key, value in asdict(node).items() if key not in ("sources", "text")},
            "sources": len(node.sources),
            "text": _cut(node.text, _SUMMARY_TEXT_CHARS),
        }
        for node in nodes[:MAX_DESCRIBE_NODES]
    ]
    return {"nodes": shown, "left_out": max(0, len(nodes) - MAX_DESCRIBE_NODES)}


def _expand(
    store: Store, summary_id: str, max_tokens: int, focus: dict[str, str | None]
) -> dict[str, Any]:
    max_tokens = _bounded("max_tokens", max_tokens, 1, MAX_EXPAND_TOKENS)
    return asdict(recall.expand(summary_id, db=store, max_tokens=max_tokens, **focus))


def _media_facts(store: Store, media_id: str) -> dict[str, Any]:
    return media_facts(recall.read_media(media_id, db=store))


def _read(store: Store, message_id: str, max_tokens: int, cursor: int | None) -> dict[str, Any]:
    max_tokens = _bounded("max_tokens", max_tokens, 1, MAX_READ_TOKENS)
    return asdict(recall.read(message_id, db=store, max_tokens=max_tokens, cursor=cursor))
