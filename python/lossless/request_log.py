"""What a ``request_built`` event holds: a compact description of one request a
session built and handed out, from which the request can be put together again
with the session's stored rows (see docs/UI.md, "What a request event holds").

The payload is written by the session (``lossless.session._request_log``) and read
by the viewer (``lossless.ui``); this module is the one place its shape is named.

A request is not copied into its event. It is described:

- sizes: ``tokens`` (the whole request), ``budget`` (what it may hold), ``usable``,
  ``soft`` and ``window`` (the view's budget, the soft threshold, the model's
  window), ``view`` (the view's tokens at build time), ``stable_prefix`` (tokens
  repeating the previous request), ``omitted`` (view items left out);
- ``parts``: the tokens of each part of the request (see :data:`PART_NAMES`),
  which add up to ``tokens``; ``ledger`` and ``zones`` the arena's share;
- ``items``: the request in order, as references to stored rows (see
  :data:`ItemRef`): summaries by id, runs of message seqs, the line that says what
  was left out, and where the arena's blocks stand;
- ``pruned``: the tool outputs that went out as a one-line marker;
- ``arena``: the arena entries injected, ``[zone, key, version]``;
- ``texts``: what no stored row holds (the arena's rendered text, the tool
  definitions), written in the first request that sends it and named by that
  event's seq in the requests after it (``{"text": ...}`` or ``{"ref": seq}``).
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Iterator, Mapping, Sequence
from typing import Any, Final

__all__ = [
    "PART_NAMES",
    "PAYLOAD_VERSION",
    "TEXT_KINDS",
    "ItemRef",
    "pruned_part_ids",
    "seq_runs",
]

#: The payload's version: a reader refuses a payload of a newer one.
PAYLOAD_VERSION: Final = 1

#: The parts of a request, in the order they stand in it: tool definitions, the
#: system prompt, the arena's part of the system message (identity, pinned facts,
#: the ledger's rules), summaries, raw history (with the left-out line and inline
#: attachments), the arena's ``<context>`` block, and blocks of earlier user turns.
PART_NAMES: Final = (
    "tools",
    "system",
    "arena_system",
    "summaries",
    "history",
    "block",
    "earlier_blocks",
)

#: Texts a request carries that no stored row holds.
TEXT_KINDS: Final = ("tools", "stable", "block")

#: One element of ``items``: ``["tools"]``, ``["system"]``, ``["s", summary_id]``,
#: ``["marker", omitted]``, ``["m", first_seq, last_seq]``, ``["block", after_seq]``
#: (``after_seq`` None: at the end), ``["earlier", after_seq, ref]``.
ItemRef = list[Any]

# How the core writes a pruned tool output in a request (rust/core/src/parts/tool.rs,
# ``tombstone_marker``). Only the head of an output is looked at.
_PRUNED_HEAD: Final = "[output of tool '"
_PRUNED_PART: Final = re.compile(
    r"pruned from context; recover it with expand or grep, part (\S+?)[;\]]"
)
_HEAD_CHARS: Final = 600


def seq_runs(seqs: Iterable[int]) -> Iterator[tuple[int, int]]:
    """Consecutive seqs as ``(first, last)`` runs, in the order given."""
    first = last = None
    for seq in seqs:
        if last is not None and seq == last + 1:
            last = seq
            continue
        if first is not None and last is not None:
            yield first, last
        first = last = seq
    if first is not None and last is not None:
        yield first, last


def pruned_part_ids(request: Sequence[Any]) -> list[str]:
    """The part ids of the tool outputs ``request`` sends pruned, in order.

    ``request`` is a list of Chat Completions messages, Anthropic turns or
    Responses items: tool results are looked for where each format puts them, and
    only their head is read, so the scan costs little whatever the outputs' size."""
    found: list[str] = []
    for item in request:
        if not isinstance(item, Mapping):
            continue
        role = item.get("role")
        if role == "tool":  # Chat Completions, the common case, read at once
            content = item.get("content")
            if isinstance(content, str) and content.startswith(_PRUNED_HEAD):
                match = _PRUNED_PART.search(content, 0, _HEAD_CHARS)
                if match:
                    found.append(match.group(1))
            continue
        if role in ("assistant", "system"):
            continue
        for text in _tool_texts(item):
            if text.startswith(_PRUNED_HEAD):
                match = _PRUNED_PART.search(text, 0, _HEAD_CHARS)
                if match:
                    found.append(match.group(1))
    return found


def _tool_texts(item: Mapping[str, Any]) -> Iterator[str]:
    """The texts of the tool results in one message or item of any format."""
    if item.get("role") == "tool":  # Chat Completions
        content = item.get("content")
        if isinstance(content, str):
            yield content
        return
    if item.get("type") == "function_call_output":  # Responses
        output = item.get("output")
        if isinstance(output, str):
            yield output
        return
    content = item.get("content")  # Anthropic: tool_result blocks of a user turn
    if item.get("role") != "user" or not isinstance(content, list):
        return
    for block in content:
        if isinstance(block, Mapping) and block.get("type") == "tool_result":
            inner = block.get("content")
            if isinstance(inner, str):
                yield inner
            elif isinstance(inner, list):
                for part in inner:
                    if isinstance(part, Mapping) and isinstance(part.get("text"), str):
                        yield part["text"]
