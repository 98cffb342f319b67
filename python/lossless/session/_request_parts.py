"""What a request is made of, as a provider's prompt cache sees it."""

from __future__ import annotations

from collections import OrderedDict
from dataclasses import dataclass, field
from typing import Any

from lossless import _native
from lossless.prompt_cache import CacheHints

# Blocks sent with earlier user messages: (the user message's id, the block, its
# tokens), oldest first.
_EarlierBlocks = tuple[tuple[str, str, int], ...]


@dataclass(frozen=True, slots=True)
class _RequestParts:
    """What a request is made of besides its view items: the parts a compaction
    leaves as they were, so its cost can be told by assembling the view again."""

    tools: str
    tool_tokens: int
    system: str
    system_tokens: int
    block: str
    block_tokens: int
    merged: bool
    history_budget: int
    #: Blocks sent with earlier user messages, kept where they were sent: (the user
    #: message's id, the block, its tokens), oldest first.
    earlier: _EarlierBlocks = ()

    def earlier_placed(self, items: _native.ItemUnits) -> list[tuple[int, int, str, int]]:
        """The earlier blocks whose user message is in ``items`` and is not the newest
        one: (its item index, its message index, the block, its tokens)."""
        placed = []
        for message_id, text, tokens in self.earlier:
            place = items.user_place(message_id)
            if place is not None and message_id != items.newest_user_id:
                placed.append((place[0], place[1], text, tokens))
        return placed

    def print_of(self, items: _native.ItemUnits) -> _native.RequestPrint:
        """The print of a request of these parts and the view items ``items``."""
        return _native.RequestPrint(
            items,
            self.tools,
            self.tool_tokens,
            self.system,
            self.system_tokens,
            self.block,
            self.block_tokens,
            self.merged,
            [(item, text, tokens) for item, _, text, tokens in self.earlier_placed(items)],
        )


@dataclass(frozen=True, slots=True)
class _Request:
    """An assembled request as a provider's cache sees it, and where its stable
    parts end."""

    parts: _RequestParts
    print: _native.RequestPrint
    hints: CacheHints
    #: What the arena's block was planned for (see ``Session._block_stamp``).
    stamp: tuple[int, int, int, int]
    #: The view item holding the newest user message, which the block follows.
    newest_user_id: str | None


@dataclass(slots=True)
class RequestLogState:
    """What the session remembers between two request events: the event that last
    carried each text (so an unchanged one is named, not written again), and the
    arena entries' versions of the last plan."""

    #: Per text kind: (the text, the seq of the event that carried it).
    texts: dict[str, tuple[str, int]] = field(default_factory=dict)
    #: Block texts to the seq of the event that carried them, newest last.
    blocks: OrderedDict[str, int] = field(default_factory=OrderedDict)
    #: (what the plan's entries were read for, its entries as ``[zone, key,
    #: version]``).
    arena: tuple[tuple[Any, ...], list[list[Any]]] = ((), [])
    #: What the last description read from the view, with what it depends on:
    #: (key, the request's item ids, (items, summary tokens, newest seq, pruned)).
    layout: tuple[tuple[Any, ...], list[str], tuple[list[Any], int, int, list[str]]] | None = None

    def reset(self) -> None:
        """Forget everything: the session goes on as another (a fork), whose tape
        holds none of the texts named so far."""
        self.texts.clear()
        self.blocks.clear()
        self.arena = ((), [])
        self.layout = None
