"""Recall's module API: what it reads (a path, a Store, a Session), reading whole
messages a page at a time, and expansions centred on a message or a query."""

from __future__ import annotations

import json
import os
from collections.abc import AsyncIterator, Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import pytest

from lossless import Store, errors
from lossless.parts import FileRefPart, ToolPart
from lossless.recall import describe, expand, grep, read, run_recall_tool
from lossless.recall.tools import ANSWER_TOKENS
from lossless.session import Session

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

MESSAGES = 120
LEAF = 20
RARE_AT = 77  # the index of the one message that says "vermilion kestrel"
LONG_OUTPUT = "\n".join(f"line {n}: settle_invoice(rate={n * 7}) ok" for n in range(600))


@dataclass
class Fixture:
    path: Path | str
    session_id: str
    other_id: str
    root: str
    ids: list[str]


def _text(index: int) -> str:
    if index == RARE_AT:
        return "The release codename is vermilion kestrel; keep it quiet."
    return f"Step {index}: checked the ledger module and wrote down what changed."


def _parts(index: int) -> Any:
    if index == 41:
        return [
            "reading it",
            ToolPart(
                "read_file",
                "call_41",
                {"path": "ledger.py"},
                output=LONG_OUTPUT,
                status="error",
                error="exit status 2",
            ),
            FileRefPart("file_0a1b2c3d", "ledger.py", "python", 900, "the ledger module"),
        ]
    return _text(index)


@pytest.fixture
def data(database: Path | str) -> Fixture:
    """A database outside the working directory: a session of 120 messages under
    six leaf summaries condensed into one, and a second session."""
    path = database
    store = Store(path)
    sid = store.create_session("gpt-4o")
    ids = [
        store.append(sid, "user" if i % 2 == 0 else "assistant", _parts(i))["id"]
        for i in range(MESSAGES + 4)
    ]
    native = store.native
    leaves = []
    for start in range(0, MESSAGES, LEAF):
        chunk = ids[start : start + LEAF]
        leaves.append(native.commit_summary(sid, f"steps {start}+", 1, chunk, [])["summary_id"])
    root = native.commit_summary(sid, "all the steps", 3, [], leaves)["summary_id"]
    other = store.create_session("gpt-4o")
    store.append(other, "user", "Another vermilion note in another session.")
    return Fixture(path, sid, other, root, ids)


@pytest.fixture
def cwd(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> Path:
    here = tmp_path / "cwd"
    here.mkdir()
    monkeypatch.chdir(here)
    return here


@pytest.fixture
async def opened(data: Fixture) -> AsyncIterator[Session]:
    session = await Session.load(data.session_id, db=data.path)
    yield session
    await session.close()


def _calls(fx: Fixture) -> dict[str, Callable[[Any], object]]:
    return {
        "grep": lambda db: grep("+vermilion +kestrel", db=db),
        "describe": lambda db: describe(db=db),
        "expand": lambda db: expand(fx.root, db=db, around=fx.ids[RARE_AT], max_tokens=300),
        "read": lambda db: read(fx.ids[RARE_AT], db=db),
    }


async def test_each_call_reads_a_path_a_store_or_a_session_and_writes_nothing_here(
    data: Fixture, cwd: Path, opened: Session
) -> None:
    targets: dict[str, Any] = {
        "path": data.path,
        "text path": str(data.path),
        "Store": Store(data.path, read_only=True),
        "Session": opened,
    }
    for target_name, target in targets.items():
        found = {name: call(target) for name, call in _calls(data).items()}
        hits = found["grep"]
        assert isinstance(hits, list) and len(hits) == 1, target_name
        assert hits[0].owner_id == data.ids[RARE_AT]
        nodes = found["describe"]
        assert isinstance(nodes, list) and {node.id for node in nodes if node.live} == {data.root}
        expansion = found["expand"]
        assert data.ids[RARE_AT] in [m.id for m in getattr(expansion, "messages", [])]
        page = found["read"]
        assert "vermilion kestrel" in getattr(page, "text", "")
    assert os.listdir(cwd) == []


@pytest.mark.sqlite_only("a path naming no file")
def test_a_missing_path_is_a_typed_error_and_creates_nothing(data: Fixture, cwd: Path) -> None:
    assert isinstance(data.path, Path)
    missing = data.path.parent / "absent" / "agent.db"
    for name, call in _calls(data).items():
        with pytest.raises(errors.DatabaseNotFoundError, match="absent") as raised:
            call(missing)
        assert isinstance(raised.value, FileNotFoundError), name
    with pytest.raises(errors.DatabaseNotFoundError):
        Store(missing, read_only=True)
    assert not missing.parent.exists()
    assert os.listdir(cwd) == []


def test_a_path_read_is_opened_read_only(data: Fixture) -> None:
    store = Store(data.path, read_only=True)
    assert store.read_only and not Store(data.path).read_only
    with pytest.raises(errors.StoreError):
        store.create_session("gpt-4o")


def test_a_path_in_the_place_of_an_id_is_refused(data: Fixture, cwd: Path) -> None:
    with pytest.raises(errors.InvalidInputError, match="db="):
        grep("ledger", session=str(data.path))
    with pytest.raises(errors.InvalidInputError, match="db="):
        describe(str(data.path))
    with pytest.raises(errors.InvalidInputError, match="name the database"):
        grep("ledger", session=data.session_id)
    with pytest.raises(errors.InvalidInputError, match="db:"):
        expand(data.root, db=42)  # type: ignore[arg-type]
    assert os.listdir(cwd) == []


def test_grep_searches_every_session_of_a_file_or_one(data: Fixture) -> None:
    everywhere = grep("vermilion", db=data.path)
    assert {hit.session_id for hit in everywhere} == {data.session_id, data.other_id}
    one = grep("vermilion", db=data.path, session=data.other_id)
    assert {hit.session_id for hit in one} == {data.other_id}
    with pytest.raises(errors.SessionNotFoundError):
        grep("vermilion", db=data.path, session="ses_missing")


def test_describe_one_session_one_summary_or_the_whole_file(data: Fixture) -> None:
    assert len(describe(data.session_id, db=data.path)) == MESSAGES // LEAF + 1
    subtree = describe(data.root, db=data.path)
    assert subtree[0].id == data.root and len(subtree) == MESSAGES // LEAF + 1
    assert len(describe(db=data.path)) == MESSAGES // LEAF + 1
    assert describe(db=data.path, session=data.other_id) == []


def test_read_writes_out_every_field_of_a_message(data: Fixture) -> None:
    page = read(data.ids[41], db=data.path, max_tokens=100_000)
    assert page.next_cursor is None and page.cursor == 0
    assert page.parts == 3 and page.status == "complete"
    for expected in (
        "reading it",
        "read_file (id call_41, error)",
        '"path": "ledger.py"',
        "line 599: settle_invoice",
        "exit status 2",
        "file_0a1b2c3d",
        "the ledger module",
    ):
        assert expected in page.text


def test_read_pages_through_a_long_message_exactly_once(data: Fixture) -> None:
    whole = read(data.ids[41], db=data.path, max_tokens=100_000).text
    pages = []
    cursor: int | None = 0
    while cursor is not None:
        page = read(data.ids[41], db=data.path, max_tokens=500, cursor=cursor)
        assert 0 < page.tokens <= 500
        assert page.cursor == cursor
        pages.append(page.text)
        cursor = page.next_cursor
    assert len(pages) > 3
    assert "".join(pages) == whole


def test_read_refuses_unknown_ids_and_bad_cursors(data: Fixture) -> None:
    with pytest.raises(errors.NotFoundError, match="msg_missing"):
        read("msg_missing", db=data.path)
    with pytest.raises(errors.InvalidInputError, match="cursor"):
        read(data.ids[3], db=data.path, cursor=10**9)
    with pytest.raises(errors.InvalidInputError, match="cursor"):
        read(data.ids[3], db=data.path, cursor=-1)
    with pytest.raises(errors.InvalidInputError, match="max_tokens"):
        read(data.ids[3], db=data.path, max_tokens=0)


def _seqs(expansion: Any) -> list[int]:
    return [message.seq for message in expansion.messages]


def test_expand_around_centres_the_window_and_counts_each_side(data: Fixture) -> None:
    focus = data.ids[RARE_AT]
    window = expand(data.root, db=data.path, around=focus, max_tokens=200)
    seqs = _seqs(window)
    assert window.focus_id == focus
    assert seqs == list(range(seqs[0], seqs[-1] + 1))
    centre = RARE_AT + 1
    assert seqs[0] < centre < seqs[-1]
    assert abs((centre - seqs[0]) - (seqs[-1] - centre)) <= 1
    assert window.messages_before == seqs[0] - 1
    assert window.messages_before + len(seqs) + window.messages_after == MESSAGES
    assert window.omitted_messages == MESSAGES - len(seqs)
    assert window.tokens <= 200


def _ids(expansion: Any) -> list[str]:
    """The messages a page shows; a page whose one message is over the budget shows
    none and names it as both cursors (read it instead)."""
    if not expansion.messages:
        assert expansion.before_cursor == expansion.after_cursor
        return [expansion.before_cursor]
    return [message.id for message in expansion.messages]


def test_expand_cursors_page_both_ways_over_leaf_boundaries(data: Fixture) -> None:
    start = expand(data.root, db=data.path, around=data.ids[RARE_AT], max_tokens=200)
    seen = _ids(start)
    page = start
    while page.after_cursor is not None:
        page = expand(data.root, db=data.path, after=page.after_cursor, max_tokens=200)
        seen += [i for i in _ids(page) if i != seen[-1]]
    assert page.messages_after == 0
    page = start
    while page.before_cursor is not None:
        page = expand(data.root, db=data.path, before=page.before_cursor, max_tokens=200)
        seen = [i for i in _ids(page) if i != seen[0]] + seen
    assert page.messages_before == 0
    assert seen == data.ids[:MESSAGES]


def test_expand_query_centres_on_the_best_match(data: Fixture) -> None:
    window = expand(data.root, db=data.path, query="codename kestrel", max_tokens=100)
    assert window.focus_id == data.ids[RARE_AT]
    assert data.ids[RARE_AT] in [m.id for m in window.messages]
    nothing = expand(data.root, db=data.path, query="xylophone", max_tokens=100)
    assert nothing.focus_id is None and _seqs(nothing)[0] == 1
    assert "no source message matched" in nothing.note


def test_expand_without_focus_is_oldest_first_and_says_how_to_page(data: Fixture) -> None:
    window = expand(data.root, db=data.path, max_tokens=100)
    assert _seqs(window)[0] == 1 and window.messages_before == 0
    assert window.before_cursor is None and window.after_cursor == window.messages[-1].id
    assert f"after={window.after_cursor}" in window.note


def test_expand_refuses_bad_focus(data: Fixture) -> None:
    with pytest.raises(errors.InvalidInputError, match="at most one"):
        expand(data.root, db=data.path, around=data.ids[3], query="ledger")
    with pytest.raises(errors.InvalidInputError, match="not a source"):
        expand(data.root, db=data.path, around=data.ids[MESSAGES + 1])
    with pytest.raises(errors.InvalidInputError, match="no words"):
        expand(data.root, db=data.path, query="!!!")
    with pytest.raises(errors.SummaryNotFoundError):
        expand("sum_missing", db=data.path)


def test_a_message_over_the_budget_leaves_an_empty_window_that_points_at_read(
    data: Fixture,
) -> None:
    window = expand(data.root, db=data.path, around=data.ids[41], max_tokens=50)
    assert window.messages == [] and window.tokens == 0
    assert window.messages_before == 41 and window.messages_after == MESSAGES - 42
    assert window.before_cursor == window.after_cursor == data.ids[41]
    assert "read it" in window.note


async def test_the_recall_tools_read_and_expand_within_their_bound(opened: Session) -> None:
    ids = [message.id for message in opened.history()]
    root = next(node.id for node in describe(opened) if node.live)
    expanded = json.loads(
        run_recall_tool(
            opened,
            "lossless_expand",
            json.dumps({"summary_id": root, "around": ids[RARE_AT], "max_tokens": 10**6}),
        )
    )
    assert ids[RARE_AT] in [m["id"] for m in expanded["messages"]]
    assert expanded["after_cursor"] is None or expanded["messages_after"] > 0
    page = json.loads(run_recall_tool(opened, "lossless_read", json.dumps({"message_id": ids[41]})))
    assert page["next_cursor"] is not None and page["cursor"] == 0
    assert len(page["text"]) < len(LONG_OUTPUT)
    described = json.loads(run_recall_tool(opened, "lossless_describe", "{}"))
    assert described["summaries"][0]["id"] == root and described["note"] == "complete"
    assert ANSWER_TOKENS >= 1000


async def test_the_recall_tools_do_not_read_another_session(data: Fixture, opened: Session) -> None:
    other_message = grep("another", db=data.path, session=data.other_id)[0].owner_id
    with pytest.raises(errors.NotFoundError):
        run_recall_tool(opened, "lossless_read", json.dumps({"message_id": other_message}))


@pytest.mark.sqlite_only("a read-only reader on PostgreSQL indexes the queue (decision 148)")
def test_a_read_only_grep_finds_rows_not_yet_indexed_and_leaves_them_queued(
    data: Fixture,
) -> None:
    reader = Store(data.path, read_only=True)
    queued = reader.native.search_backlog()
    assert queued > 0  # the newest rows wait for the index
    newest = data.ids[-1]
    # A phrase is required: only the newest message holds it.
    assert [hit["owner_id"] for hit in reader.grep(f'"Step {MESSAGES + 3}"')] == [newest]
    regex_hits = reader.grep(r"Step 12[0-9]:", mode="regex")
    assert regex_hits[0]["owner_id"] == newest
    assert reader.native.search_backlog() == queued
    read_only = [hit["owner_id"] for hit in reader.grep("ledger module", limit=200)]
    writable = [hit["owner_id"] for hit in Store(data.path).grep("ledger module", limit=200)]
    assert sorted(read_only) == sorted(writable)


def test_expand_keeps_seq_order_when_a_later_leaf_sits_inside_an_earlier_one(
    database: Path | str,
) -> None:
    store = Store(database)
    sid = store.create_session("gpt-4o")
    ids = []
    for i in range(12):
        parts: Any = f"message {i} about the ledger"
        if i == 3:  # still running when the first leaf is cut: it stays in the view
            parts = [ToolPart("run_tests", "call_3", {"path": "tests/"}, status="running")]
        ids.append(store.append(sid, "user" if i % 2 == 0 else "assistant", parts)["id"])
    native = store.native
    first = [ids[i] for i in (0, 1, 2, 4, 5, 6, 7, 8)]
    leaf = native.commit_summary(sid, "first", 3, first, [])["summary_id"]
    native.update_tool(sid, "call_3", "completed", "12 passed")
    second = [ids[3], ids[9]]
    later = native.commit_summary(sid, "second", 3, second, [])["summary_id"]
    root = native.commit_summary(sid, "both", 3, [], [leaf, later])["summary_id"]
    everything = expand(root, db=store)
    assert [m.id for m in everything.messages] == ids[:10]
    seen: list[str] = []
    page = expand(root, db=store, max_tokens=40)
    seen += _ids(page)
    while page.after_cursor is not None:
        page = expand(root, db=store, after=page.after_cursor, max_tokens=40)
        seen += _ids(page)
    assert seen == ids[:10]
    around = expand(root, db=store, around=ids[3], max_tokens=60)
    assert around.messages_before + len(around.messages) + around.messages_after == 10
    assert around.messages_before == [m.id for m in everything.messages].index(
        around.messages[0].id
    )


@pytest.mark.sqlite_only("a read-only reader indexes the queue in a temporary table (decision 148)")
def test_a_read_only_reader_sees_rows_queued_after_its_last_search(tmp_path: Path) -> None:
    path = tmp_path / "live.db"
    writer = Store(path)
    sid = writer.create_session("gpt-4o")
    writer.append(sid, "user", "the first note mentions a cobalt lantern")
    reader = Store(path, read_only=True)
    assert [hit["snippet"] for hit in reader.grep("+cobalt")] == [
        "the first note mentions a [cobalt] lantern"
    ]
    # Queued, not yet indexed: the reader's own index of the queue is rebuilt.
    writer.append(sid, "assistant", "a second cobalt note arrived later")
    assert len(reader.grep("+cobalt")) == 2
    assert reader.native.search_backlog() > 0
