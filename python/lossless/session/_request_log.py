"""Every request a session hands out is described on its event tape
(``request_built``), so the request can be put together again later: what the model
saw at turn N. The description names stored rows instead of copying them; see
:mod:`lossless.request_log` for its shape and docs/UI.md for the reasons.
"""

from __future__ import annotations

import json
from functools import partial
from typing import Any

from lossless import _native
from lossless._writes import write_now_or_in_thread
from lossless.arena import ArenaEntry
from lossless.arena._plan import Planned
from lossless.config import ZONES
from lossless.events import Event, EventName
from lossless.formats import MessageFormat
from lossless.request_log import PAYLOAD_VERSION, ItemRef, pruned_part_ids, seq_runs
from lossless.results import AnyContext, BuiltContext
from lossless.session._base import SessionBase, log
from lossless.session._request_parts import _Request, _RequestParts

__all__ = ["RequestLog"]

# Blocks remembered by their text, to name the event that carried each: an earlier
# block is one of the last few requests' blocks (decision 114 keeps them until a
# summary changes the view), so a short memory holds every one still sent.
_KEPT_BLOCKS = 64
# Where a recalled or external hit goes: such entries are planned, never stored.
_TRANSIENT_ZONES = {"recall:": "memory_recall", "external:": "rag_external"}


class RequestLog(SessionBase):
    """How a session writes the ``request_built`` event of each request it hands out."""

    async def _log_request(
        self,
        context: AnyContext,
        planned: Planned | None,
        request: _Request,
        format: MessageFormat,
    ) -> None:
        """Describes ``context`` on the tape. The write is made on the loop when it
        need not wait (tens of microseconds), else in a worker thread; a failure is
        logged and never disturbs the turn."""
        try:
            payload, texts = self._describe_request(context, planned, request, format)
            payload_json = json.dumps(payload, separators=(",", ":"))
            seq = await write_now_or_in_thread(
                partial(
                    self._store.append_event,
                    self.id,
                    EventName.REQUEST_BUILT.value,
                    payload_json,
                )
            )
        except Exception:
            log.exception("could not record the request of session %s", self.id)
            return
        state = self._request_log
        for kind, text in texts.items():
            state.texts[kind] = (text, seq)
            if kind == "block":
                state.blocks[text] = seq
                state.blocks.move_to_end(text)
                while len(state.blocks) > _KEPT_BLOCKS:
                    state.blocks.popitem(last=False)
        self.events.deliver(Event(EventName.REQUEST_BUILT, self.id, payload))

    def _describe_request(
        self,
        context: AnyContext,
        planned: Planned | None,
        request: _Request,
        format: MessageFormat,
    ) -> tuple[dict[str, Any], dict[str, str]]:
        """The event's payload, and the texts it writes out (by kind)."""
        parts = request.parts
        stats = self._store.view_stats(self.id)
        ids = context.item_ids
        newest_user = request.newest_user_id
        # The earlier blocks placed (as ``_RequestParts.earlier_placed`` places them).
        earlier = [block for block in parts.earlier if block[0] != newest_user and block[0] in ids]
        items, summary_tokens, newest, pruned = self._layout(
            context, request, stats.version, earlier, format
        )
        earlier_tokens = sum(tokens for _, _, tokens in earlier)
        arena_system = parts.system_tokens - self._system_tokens if parts.system else 0
        history = (
            context.tokens
            - parts.tool_tokens
            - parts.system_tokens
            - parts.block_tokens
            - earlier_tokens
            - summary_tokens
        )
        written: dict[str, str] = {}
        stable = _stable_text(parts.system, self.system_prompt)
        texts = {
            kind: self._text_ref(kind, text, written)
            for kind, text in (("tools", parts.tools), ("stable", stable), ("block", parts.block))
            if text
        }
        payload: dict[str, Any] = {
            "v": PAYLOAD_VERSION,
            "format": format,
            "profile": self.profile,
            "seq": newest,
            "tokens": context.tokens,
            "budget": context.budget,
            "usable": self.budget.usable,
            "soft": self.budget.soft_limit,
            "window": self.budget.context_limit,
            "view": stats.tokens,
            "stable_prefix": context.stable_prefix_tokens,
            "omitted": context.omitted,
            "parts": {
                "tools": parts.tool_tokens,
                "system": self._system_tokens if self.system_prompt else 0,
                "arena_system": arena_system,
                "summaries": summary_tokens,
                "history": history,
                "block": parts.block_tokens,
                "earlier_blocks": earlier_tokens,
            },
            # Copies: the kept layout is never shared with a handler of the event.
            "items": [_copy(item) for item in items],
            "pruned": list(pruned),
            "texts": texts,
        }
        if planned is not None:
            zones, entries = self._arena_of(planned, parts)
            payload["ledger"] = planned.raw.ledger_tokens
            payload["zones"] = zones
            payload["arena"] = [list(entry) for entry in entries]
        return payload, written

    def _layout(
        self,
        context: AnyContext,
        request: _Request,
        version: int,
        earlier: list[tuple[str, str, int]],
        format: MessageFormat,
    ) -> tuple[list[ItemRef], int, int, list[str]]:
        """The request's items, its summaries' tokens, the newest message and the
        pruned outputs: read from the view once, and kept while the view (its
        version) and what the request took of it are the same, which is every turn
        of a tool loop between two writes that change the view."""
        state = self._request_log
        key = (
            version,
            format,
            request.newest_user_id,
            bool(request.parts.block),
            tuple((user_id, text) for user_id, text, _ in earlier),
        )
        kept = state.layout
        if kept is not None and kept[0] == key and kept[1] == context.item_ids:
            return kept[2]
        view = {row.id: row for row in self._store.view_items(self.id)}
        ids = set(context.item_ids)
        summary_tokens = sum(
            row.tokens for row in view.values() if row.kind == "summary" and row.id in ids
        )
        items = self._item_refs(context, request, view, earlier)
        newest = max((row.seq for row in view.values() if row.kind == "message"), default=0)
        layout = (items, summary_tokens, newest, pruned_part_ids(_sent_messages(context)))
        state.layout = (key, list(context.item_ids), layout)
        return layout

    def _text_ref(self, kind: str, text: str, written: dict[str, str]) -> dict[str, Any]:
        """``{"ref": seq}`` naming the event that last carried ``text``, or the text
        itself (noted in ``written``) when it changed since."""
        carried = self._request_log.texts.get(kind)
        if carried is not None and carried[0] == text:
            return {"ref": carried[1]}
        written[kind] = text
        return {"text": text}

    def _item_refs(
        self,
        context: AnyContext,
        request: _Request,
        view: dict[str, _native.ViewItemRow],
        earlier: list[tuple[str, str, int]],
    ) -> list[ItemRef]:
        """The request in order, as references: tool definitions, the system
        message, summaries, the left-out line, runs of messages, and the blocks
        after the user messages they follow."""
        parts = request.parts
        chosen, marker_at = self._chosen(context, view)
        # The blocks, by the item they follow ("" is the left-out line; None, the end).
        after: dict[str | None, list[ItemRef]] = {}
        for user_id, text, _ in earlier:
            after.setdefault(user_id, []).append(["earlier", self._block_ref(text)])
        if parts.block:
            after.setdefault(request.newest_user_id, []).append(["block"])
        items: list[ItemRef] = []
        if parts.tools:
            items.append(["tools"])
        if parts.system:
            items.append(["system"])
        run: list[int] = []

        def flush() -> None:
            items.extend(["m", first, last] for first, last in seq_runs(run))
            run.clear()

        for position, (kind, item_id, seq) in enumerate(chosen):
            if position == marker_at:
                flush()
                items.append(["marker", context.omitted])
                items.extend(after.pop("", []))
            if kind == "summary":
                flush()
                items.append(["s", item_id])
            else:
                run.append(seq)
            if item_id in after:
                flush()
                items.extend(after.pop(item_id))
        flush()
        if marker_at == len(chosen):
            items.append(["marker", context.omitted])
            items.extend(after.pop("", []))
        for rest in after.values():
            items.extend(rest)
        return items

    def _chosen(
        self, context: AnyContext, view: dict[str, _native.ViewItemRow]
    ) -> tuple[list[tuple[str, str, int]], int | None]:
        """The request's view items as ``(kind, id, seq)``, in order, and where the
        left-out line stands among them (None: nowhere), by the core's rule
        (``marker_position`` in rust/core/src/context/request.rs)."""
        if any(item_id not in view for item_id in context.item_ids):
            # A compaction changed the view since the request was assembled: the
            # items as the request named them, the line before the first message.
            chosen = [
                ("summary", item_id, 0)
                if item_id.startswith("sum_")
                else ("message", item_id, self._store.message_seq(self.id, item_id))
                for item_id in context.item_ids
            ]
            first = next((i for i, (kind, _, _) in enumerate(chosen) if kind == "message"), None)
            return chosen, first if context.omitted else None
        rows = list(view.values())
        included = set(context.item_ids)
        indices = [index for index, row in enumerate(rows) if row.id in included]
        chosen = [(rows[i].kind, rows[i].id, rows[i].seq) for i in indices]
        if not rows:
            return chosen, None
        expected, last_gap = 0, None
        for position, index in enumerate(indices):
            if index != expected:
                last_gap = position
            expected = index + 1
        if len(indices) < len(rows) and expected < len(rows):
            return chosen, len(indices)
        if last_gap is not None:
            return chosen, last_gap
        lead = next((p for p, i in enumerate(indices) if rows[i].role != "system"), None)
        if lead is None:
            return chosen, len(indices)
        lead_row = rows[indices[lead]]
        opens_otherwise = lead_row.kind == "message" and lead_row.role != "user"
        return chosen, lead if opens_otherwise else None

    def _block_ref(self, text: str) -> dict[str, Any]:
        """An earlier block: the event that sent it, else the text itself."""
        seq = self._request_log.blocks.get(text)
        return {"ref": seq} if seq is not None else {"text": text}

    def _arena_of(
        self, planned: Planned, parts: _RequestParts
    ) -> tuple[dict[str, list[int]], list[list[Any]]]:
        """The plan's zones (``[accepted, cap]`` where there was demand) and injected
        entries as ``[zone, key, version]``. The entries are read once while the
        keys injected and the texts they render to stay the same: a plan's
        generation moves every turn (the controller counts turns), its entries
        only when one is written. (An entry written again with the same text keeps
        the version of its earlier row here: the request held the same words.)"""
        zones = {
            name: [zone.accepted, zone.cap]
            for name, zone in planned.report.zones.items()
            if zone.accepted or zone.demand
        }
        state = self._request_log
        key = (tuple(planned.report.injected), parts.system, parts.block)
        if state.arena[0] == key:
            return zones, state.arena[1]
        # A key names an entry within its zone ("ledger" is in truth and in
        # task_state): the plan injects zones in order, so a key's entries are
        # taken in zone order as the key comes again.
        live: dict[str, list[ArenaEntry]] = {}
        for entry in sorted(self.arena.entries(), key=lambda entry: ZONES.index(entry.zone)):
            live.setdefault(entry.key, []).append(entry)
        entries: list[list[Any]] = []
        for name in planned.report.injected:
            found = live.get(name)
            if found:
                entry = found.pop(0)
                entries.append([entry.zone, name, entry.seq])
                continue
            zone = next((z for p, z in _TRANSIENT_ZONES.items() if name.startswith(p)), None)
            entries.append([zone, name, None])
        state.arena = (key, entries)
        return zones, entries


def _copy(item: ItemRef) -> ItemRef:
    """An item reference with its own lists and dicts."""
    return [dict(part) if isinstance(part, dict) else part for part in item]


def _stable_text(system: str, prompt: str | None) -> str:
    """The arena's part of a system message: what follows the system prompt."""
    if not prompt:
        return system
    if system == prompt:
        return ""
    return system[len(prompt) + 2 :] if system.startswith(prompt + "\n\n") else system


def _sent_messages(context: AnyContext) -> list[Any]:
    """The messages or items of ``context``, in whichever format it is."""
    if isinstance(context, BuiltContext):
        return context.messages
    items = getattr(context, "messages", None)
    if items is None:
        items = getattr(context, "input", None)
    return list(items or [])
