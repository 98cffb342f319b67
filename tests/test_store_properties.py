"""Properties of a store under random appends, tool updates, prunes and summary commits.

A state machine drives two ``Store`` objects on one file (writes through either, reads
through either, so the view cache must notice the other's writes) and checks after
every step:

- an assembled context never exceeds its budget, its token count is the sum of the view
  items it includes, it is valid OpenAI chat (every ``tool`` message answers a call of
  the assistant message right before it), and it equals what a store without cached
  views assembles, though callers change the dicts they were given;
- with a budget that holds the whole view, every file id that entered the session is
  in the context (raw, in a tombstone, or in a summary's ``[LCM File IDs: ...]`` footer);
- every stored message is reachable exactly once from the view: directly, or through
  one live summary (recursively through condensed summaries, as ``describe`` shows);
- stored messages and parts never change, except tool lifecycle updates and tombstones.
"""

from __future__ import annotations

import itertools
import json
import tempfile
from pathlib import Path
from typing import Any

from hypothesis import event, settings
from hypothesis import strategies as st
from hypothesis.stateful import RuleBasedStateMachine, initialize, invariant, precondition, rule

from lossless import Store
from lossless._native import MARKER_TOKENS
from lossless.testing.conformance import check_request

MODEL = "gpt-4o"
FILE_IDS = [f"file_{n:08x}{'ab' * (n % 5)}" for n in range(1, 13)]
WORDS = [
    "alpha",
    "beta",
    "gamma",
    "delta",
    "build",
    "test",
    "deploy",
    "config",
    "error",
    "retry",
    "cache",
    "index",
]


def filler(size: int, seed: int) -> str:
    words = [WORDS[(seed + i * 7) % len(WORDS)] for i in range(size // 6 + 1)]
    return " ".join(words)[:size]


sizes = st.one_of(st.integers(0, 80), st.integers(80, 2_000), st.integers(2_000, 9_000))
maybe_file_id = st.one_of(st.none(), st.sampled_from(FILE_IDS))


@st.composite
def text_parts(draw: st.DrawFn) -> dict[str, Any]:
    size, seed, file_id = draw(sizes), draw(st.integers(0, 99)), draw(maybe_file_id)
    text = filler(size, seed)
    if file_id:
        text = f"{text} see {file_id}"
    return {"kind": "text", "text": text}


@st.composite
def tool_parts(draw: st.DrawFn) -> dict[str, Any]:
    status = draw(
        st.sampled_from(["completed", "completed", "completed", "pending", "running", "error"])
    )
    output: str | None = None
    error: str | None = None
    if status == "completed" or (status == "running" and draw(st.booleans())):
        output = filler(draw(sizes), draw(st.integers(0, 99)))
        if (file_id := draw(maybe_file_id)) is not None:
            output = f"{output}\nwrote {file_id}"
    if status == "error" or (status == "completed" and draw(st.booleans())):
        error = f"failed on {draw(st.sampled_from(FILE_IDS))}"
    arguments: dict[str, Any] = {"q": draw(st.sampled_from(WORDS))}
    if (file_id := draw(maybe_file_id)) is not None:
        arguments["file"] = file_id
    return {
        "kind": "tool",
        "name": draw(st.sampled_from(["read_file", "run_tests", "grep", "keep_me"])),
        "input": json.dumps(arguments),
        "output": output,
        "status": status,
        "error": error,
    }


@st.composite
def file_ref_parts(draw: st.DrawFn) -> dict[str, Any]:
    return {
        "kind": "file_ref",
        "file_id": draw(st.sampled_from(FILE_IDS)),
        "path": f"docs/{draw(st.sampled_from(WORDS))}.md",
        "file_type": "markdown",
        "token_count": draw(st.integers(0, 50_000)),
        "summary": filler(draw(st.integers(0, 300)), 3),
    }


part = st.one_of(text_parts(), tool_parts(), file_ref_parts())
turn = st.tuples(
    st.sampled_from(["user", "user", "assistant", "assistant", "assistant", "system"]),
    st.lists(part, min_size=1, max_size=3),
)


def content_of(messages: list[dict[str, Any]]) -> str:
    """Every string a model would read: contents, tool names and arguments."""
    pieces = []
    for message in messages:
        pieces.append(message.get("content") or "")
        for call in message.get("tool_calls", []):
            pieces.append(call["function"]["name"])
            pieces.append(call["function"]["arguments"])
    return "\n".join(pieces)


def is_marker(message: dict[str, Any]) -> bool:
    """Whether ``message`` is the lead marker of an assembly."""
    content = message.get("content") or ""
    return message["role"] == "user" and (
        content.startswith("[the conversation begins") or "earlier messages are left out" in content
    )


def check_chat_format(messages: list[dict[str, Any]]) -> None:
    pending: list[str] = []
    for message in messages:
        assert message["role"] in {"system", "user", "assistant", "tool"}
        if message["role"] == "tool":
            assert pending, "a tool message must answer a call of the message before it"
            assert message["tool_call_id"] == pending.pop(0)
            continue
        assert not pending, "every tool call is answered right after its message"
        if "tool_calls" in message:
            assert message["role"] == "assistant"
            pending = [call["id"] for call in message["tool_calls"]]
            assert pending
        else:
            assert isinstance(message["content"], str)
    assert not pending


class StoreMachine(RuleBasedStateMachine):
    def __init__(self) -> None:
        super().__init__()
        self.tmp = tempfile.TemporaryDirectory()
        self.path = path = Path(self.tmp.name) / "store.db"
        self.stores = [Store(path), Store(path)]
        self.sid = self.stores[0].create_session(MODEL)
        # What was stored: message id -> parts as appended (wire dicts), in order.
        self.expected: dict[str, list[dict[str, Any]]] = {}
        self.roles: dict[str, str] = {}
        self.open_calls: dict[str, str] = {}  # call_id -> status, for pending/running calls
        self.calls = itertools.count()

    def teardown(self) -> None:
        event(f"messages stored: {len(self.expected) // 5 * 5}+")
        self.tmp.cleanup()

    def store(self, which: int) -> Store:
        return self.stores[which % 2]

    # --- rules -------------------------------------------------------------------

    @initialize(turns=st.lists(turn, min_size=2, max_size=12))
    def history(self, turns: list[tuple[str, list[dict[str, Any]]]]) -> None:
        self.do_append(0, "user", [{"kind": "text", "text": "start the task"}])
        for index, (role, parts) in enumerate(turns):
            self.do_append(index, role, parts)

    @rule(which=st.integers(0, 1), turns=st.lists(turn, min_size=1, max_size=4))
    def append(self, which: int, turns: list[tuple[str, list[dict[str, Any]]]]) -> None:
        for role, parts in turns:
            self.do_append(which, role, parts)

    def do_append(self, which: int, role: str, parts: list[dict[str, Any]]) -> None:
        parts = [dict(part) for part in parts]
        for part in parts:
            if part["kind"] == "tool":
                part["call_id"] = f"call_{next(self.calls)}"
        before = self.store(which).view_stats(self.sid)["tokens"]
        result = self.store(which).native.append_message(self.sid, role, parts)
        self.expected[result["id"]] = [dict(part) for part in parts]
        self.roles[result["id"]] = role
        for part in parts:
            if part["kind"] == "tool" and part["status"] in ("pending", "running"):
                self.open_calls[part["call_id"]] = part["status"]
        assert (
            self.store(which + 1).view_stats(self.sid)["tokens"] == before + result["token_count"]
        )

    @precondition(lambda self: bool(self.open_calls))
    @rule(data=st.data(), which=st.integers(0, 1))
    def update_tool(self, data: st.DataObject, which: int) -> None:
        call_id = data.draw(st.sampled_from(sorted(self.open_calls)))
        status = data.draw(st.sampled_from(["running", "completed", "error"]))
        part = next(
            p for parts in self.expected.values() for p in parts if p.get("call_id") == call_id
        )
        output = error = None
        if status == "completed" and part["output"] is None:
            output = filler(data.draw(sizes), 5) + f" {data.draw(st.sampled_from(FILE_IDS))}"
        if status == "error":
            error = "crashed"
        self.store(which).native.update_tool(self.sid, call_id, status, output=output, error=error)
        event(f"tool call moved to {status}")
        part["status"] = status
        part["output"] = part["output"] if output is None else output
        part["error"] = error
        if status == "running":
            self.open_calls[call_id] = status
        else:
            del self.open_calls[call_id]

    @rule(
        which=st.integers(0, 1),
        protect_tokens=st.sampled_from([0, 200, 2_000, 40_000]),
        minimum_tokens=st.sampled_from([0, 100, 20_000]),
        turns=st.integers(0, 3),
    )
    def prune(self, which: int, protect_tokens: int, minimum_tokens: int, turns: int) -> None:
        store = self.store(which)
        before = store.view_stats(self.sid)["tokens"]
        result = store.native.prune(self.sid, protect_tokens, minimum_tokens, ["keep_me"], turns)
        after = self.store(which + 1).view_stats(self.sid)["tokens"]
        assert before - after == result["tokens_saved"] >= 0
        if result["pruned_parts"]:
            event("tool outputs pruned")
            assert result["tokens_saved"] >= minimum_tokens

    @rule(
        which=st.integers(0, 1),
        count=st.integers(1, 30),
        target_tokens=st.integers(50, 3_000),
        extractive=st.booleans(),
        turns=st.integers(0, 2),
    )
    def commit_leaf(
        self, which: int, count: int, target_tokens: int, extractive: bool, turns: int
    ) -> None:
        native = self.store(which).native
        span = native.compaction_span(self.sid, turns)
        ids = span.message_ids[:count]
        if not ids:
            return
        summarise = native.extractive_summary if extractive else native.truncate_summary
        summary = summarise(ids, target_tokens)
        committed = native.commit_summary(self.sid, summary["text"], 3, ids, [], span.view_version)
        event("leaf summary committed")
        assert committed["messages_covered"] == len(ids)
        assert committed["tokens_before"] == span.view_tokens
        assert committed["tokens_after"] == self.store(which + 1).view_stats(self.sid)["tokens"]

    @rule(which=st.integers(0, 1), count=st.integers(2, 4), max_tokens=st.integers(50, 1_000))
    def condense(self, which: int, count: int, max_tokens: int) -> None:
        native = self.store(which).native
        live = [row["id"] for row in native.live_summaries(self.sid)][:count]
        if len(live) < 2:
            return
        version = native.view_stats(self.sid)["version"]
        text = native.condense_truncate(live, max_tokens)["text"]
        committed = native.commit_summary(self.sid, text, 3, [], live, version)
        event("summaries condensed")
        assert committed["summary_id"] in [row["id"] for row in native.live_summaries(self.sid)]

    @rule(which=st.integers(0, 1), fraction=st.floats(0, 1.2), extra=st.integers(-5, 5))
    def assemble(self, which: int, fraction: float, extra: int) -> None:
        store = self.store(which)
        items = store.native.view_items(self.sid)
        total = sum(item["tokens"] for item in items)
        budget = int(total * fraction) + extra
        messages, tokens, ids, omitted = store.assemble(self.sid, budget)
        assert tokens <= max(budget, 0)
        by_id = {item["id"]: item for item in items}
        # A lead marker (no view item) costs what it reserves: its line, and the
        # file-id footer of what was left out.
        marker = tokens - sum(by_id[item_id]["tokens"] for item_id in ids)
        assert marker == 0 or marker >= MARKER_TOKENS
        assert (marker > 0) == any(is_marker(message) for message in messages)
        assert omitted == len(items) - len(ids)
        # Included items keep view order. The newest user message (the instruction)
        # is included unless it alone outgrows what the marker leaves; the other
        # included messages are one unbroken newest tail.
        order = [item["id"] for item in items]
        assert ids == sorted(ids, key=order.index)
        message_ids = [item["id"] for item in items if item["kind"] == "message"]
        included = [item_id for item_id in ids if by_id[item_id]["kind"] == "message"]
        users = [item["id"] for item in items if item["role"] == "user"]
        instruction = users[-1] if users else None
        if instruction is not None and instruction not in included:
            # Left out only when it does not fit beside a marker. With file ids in the
            # session, the marker that keeping it needs carries the ids of whatever
            # else is then left out, and may be larger than the one this assembly
            # got: file ids never leave the context, so they take precedence.
            fits_plain = by_id[instruction]["tokens"] <= budget - marker
            assert not fits_plain or store.file_ids(self.sid), (budget, ids)
        rest = [item_id for item_id in message_ids if item_id != instruction]
        tail = [item_id for item_id in included if item_id != instruction]
        assert tail == rest[len(rest) - len(tail) :]
        if not included and message_ids and budget >= MARKER_TOKENS:
            # Messages were left out, so a marker took its share. (With less room than
            # a marker, the context opens at a user message instead, and messages
            # before it are left out though they fit.)
            summaries = sum(by_id[i]["tokens"] for i in ids if by_id[i]["kind"] == "summary")
            assert by_id[message_ids[-1]]["tokens"] > budget - summaries - marker
        if marker > MARKER_TOKENS:
            # A marker that carries ids carries every id left out of the context.
            text = content_of(messages)
            for file_id in store.file_ids(self.sid):
                assert file_id in text, f"{file_id} fell out of the context"
        check_chat_format(messages)
        if messages:
            check_request(messages)
        # The cached view and renderings serve what a store without them assembles,
        # though the caller changes the dicts it was given, nested ones included.
        assert (messages, tokens, ids, omitted) == Store(self.path).assemble(self.sid, budget)
        for message in messages:
            message["content"] = "changed by the caller"
            for call in message.get("tool_calls", []):
                call["id"] = "changed"
                call["function"]["arguments"] = "changed"

    # --- invariants ----------------------------------------------------------------

    @invariant()
    def whole_view_holds_every_file_id(self) -> None:
        for store in self.stores:
            total = store.view_stats(self.sid)["tokens"]
            messages, tokens, _, omitted = store.assemble(self.sid, total + MARKER_TOKENS)
            assert omitted == 0 and tokens in (total, total + MARKER_TOKENS)
            check_chat_format(messages)
            if messages:
                check_request(messages)
            text = content_of(messages)
            for file_id in store.file_ids(self.sid):
                assert file_id in text, f"{file_id} fell out of the context"

    @invariant()
    def every_message_is_reachable_exactly_once(self) -> None:
        store = self.stores[1]
        nodes = {node["id"]: node for node in store.describe(self.sid)}
        reached: list[str] = []

        def leaves(summary_id: str) -> None:
            node = nodes[summary_id]
            for source in node["sources"]:
                if node["source_kind"] == "summary":
                    assert not nodes[source]["live"]
                    assert nodes[source]["superseded_by"] == summary_id
                    leaves(source)
                else:
                    reached.append(source)

        for item in store.native.view_items(self.sid):
            if item["kind"] == "message":
                reached.append(item["id"])
                continue
            assert nodes[item["id"]]["live"]
            start = len(reached)
            leaves(item["id"])
            covered = reached[start:]
            assert nodes[item["id"]]["message_count"] == len(covered)
            # expand gives the same messages back, oldest first.
            expanded = store.expand(item["id"], max_tokens=10**9)
            assert [m["id"] for m in expanded["messages"]] == sorted(
                covered, key=list(self.expected).index
            )
            assert expanded["omitted_messages"] == 0
        assert sorted(reached) == sorted(self.expected)
        assert len(reached) == len(set(reached))
        live_in_view = {
            i["id"] for i in store.native.view_items(self.sid) if i["kind"] == "summary"
        }
        assert live_in_view == {node_id for node_id, node in nodes.items() if node["live"]}

    @invariant()
    def stored_content_is_unchanged_except_tombstones(self) -> None:
        history = self.stores[0].history(self.sid)
        assert [row["id"] for row in history] == list(self.expected)
        assert [row["seq"] for row in history] == list(range(1, len(history) + 1))
        for row in history:
            assert row["role"] == self.roles[row["id"]]
            for stored, appended in zip(row["parts"], self.expected[row["id"]], strict=True):
                if stored["compacted"]:
                    assert stored["kind"] == "tool"
                    assert stored["status"] == "completed"
                    assert stored["name"] != "keep_me"
                for key, value in appended.items():
                    assert stored[key] == value, (key, stored, appended)


StoreMachine.TestCase.settings = settings(max_examples=30, stateful_step_count=20, deadline=None)
test_store_state_machine = StoreMachine.TestCase
