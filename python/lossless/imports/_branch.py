"""The active branch of a Claude Code transcript.

Each line names its parent (``parentUuid``), so a file is a tree: a rewind
leaves the rewound lines where they are and goes on from an earlier line. The
conversation is the path from the newest message line back to a root, as Claude
Code reads it on ``--resume``, with two corrections that path alone misses:

- parallel tool calls: the lines of one reply (sharing ``message.id``) hang off
  each other and each call's result hangs off its own call's line, so all but
  the last result are siblings of the path; a reply's lines and the results of
  its calls are taken in with it;
- ``/compact``: the boundary line starts a new root (``parentUuid`` null) and
  names the line before it in ``logicalParentUuid``; the walk follows that.

A line without a ``parentUuid`` member follows the line before it. When the walk
meets a parent the file does not hold (a line written elsewhere), nothing is
left out: the file is read in order, as before branches existed.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from lossless.imports._common import Line

__all__ = ["off_branch"]

_MESSAGES = ("user", "assistant")


def off_branch(lines: list[Line]) -> set[int]:
    """Line numbers of the message lines (of ``lines``, one session's, in file
    order) that are not on the conversation's active branch."""
    parents: dict[str, str | None] = {}
    by_uuid: dict[str, Line] = {}
    previous: str | None = None
    for line in lines:
        uuid = line.data.get("uuid")
        if not isinstance(uuid, str):
            continue
        parents[uuid] = _parent(line.data, previous)
        by_uuid[uuid] = line
        previous = uuid
    leaf = next((line for line in reversed(lines) if line.data.get("type") in _MESSAGES), None)
    if leaf is None or not isinstance(leaf.data.get("uuid"), str):
        return set()
    path = _walk(leaf.data["uuid"], parents)
    if path is None:
        return set()
    kept = _with_siblings(path, lines)
    return {
        line.number
        for line in lines
        if line.data.get("type") in _MESSAGES
        and isinstance(line.data.get("uuid"), str)
        and line.data["uuid"] not in kept
    }


def _parent(data: Mapping[str, Any], previous: str | None) -> str | None:
    if "parentUuid" not in data:
        return previous
    parent = data["parentUuid"]
    if parent is None and isinstance(data.get("logicalParentUuid"), str):
        return str(data["logicalParentUuid"])  # a compact boundary
    return parent if isinstance(parent, str) else None


def _walk(leaf: str, parents: dict[str, str | None]) -> set[str] | None:
    """The uuids from ``leaf`` back to a root; None when a parent is missing."""
    path: set[str] = set()
    current: str | None = leaf
    while current is not None and current not in path:
        if current not in parents:
            return None
        path.add(current)
        current = parents[current]
    return path


def _with_siblings(path: set[str], lines: list[Line]) -> set[str]:
    """``path`` with the other lines of its replies and their calls' results."""
    replies = {_reply_id(line.data) for line in lines if line.data.get("uuid") in path} - {None}
    kept = set(path)
    calls: set[str] = set()
    for line in lines:
        if _reply_id(line.data) in replies:
            kept.add(str(line.data.get("uuid")))
            calls.update(_ids(line.data, "tool_use", "id"))
    for line in lines:
        answered = _ids(line.data, "tool_result", "tool_use_id")
        if line.data.get("type") == "user" and answered and answered <= calls:
            kept.add(str(line.data.get("uuid")))
    return kept


def _reply_id(data: Mapping[str, Any]) -> str | None:
    message = data.get("message")
    if data.get("type") != "assistant" or not isinstance(message, Mapping):
        return None
    reply_id = message.get("id")
    return reply_id if isinstance(reply_id, str) else None


def _ids(data: Mapping[str, Any], kind: str, field: str) -> set[str]:
    message = data.get("message")
    content = message.get("content") if isinstance(message, Mapping) else None
    if not isinstance(content, list):
        return set()
    return {
        str(block[field])
        for block in content
        if isinstance(block, Mapping) and block.get("type") == kind and field in block
    }
