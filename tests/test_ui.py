"""The viewer (`lossless ui`): every request a session hands out is described on its
tape and put together again from the stored rows; the JSON API over a database
written by real sessions (the send path, an own loop, a drop-in loop that forked,
an operator's sub-sessions); who may read; nothing written."""

from __future__ import annotations

import hashlib
import json
import re
import socket
import subprocess
import sys
import time
from collections.abc import Iterator
from pathlib import Path
from typing import Any

import anyio
import httpx
import pytest
from starlette.testclient import TestClient
from typer.testing import CliRunner

from conftest import TEST_MODEL, make_config
from lossless import Session, ToolPart
from lossless.cli import app as cli_app
from lossless.config import CompactionConfig, Config, ModelConfig
from lossless.demo.viewer_sample import PIN, Sample, make_sample
from lossless.events import EventName
from lossless.request_log import PART_NAMES
from lossless.results import BuiltContext
from lossless.store import Store
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec
from lossless.ui import build_app
from lossless.ui.requests import RequestEvent, rebuild_request, request_answered_by

LOCAL = "http://127.0.0.1"
TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "parameters": {"type": "object", "properties": {"path": {"type": "string"}}},
        },
    }
]


@pytest.fixture(scope="module")
def sample(tmp_path_factory: pytest.TempPathFactory) -> Sample:
    return make_sample(tmp_path_factory.mktemp("ui") / "sample.db")


@pytest.fixture(scope="module")
def client(sample: Sample) -> Iterator[TestClient]:
    with TestClient(build_app(sample.db), base_url=LOCAL) as client:
        yield client


def requests_of(db: str | Path, session_id: str) -> list[RequestEvent]:
    store = Store(db, read_only=True)
    rows = store.events_page(session_id, name=EventName.REQUEST_BUILT.value, limit=10_000)
    return [RequestEvent.of(row) for row in rows]


# -- the request_built event and the request put together again ---------------------


def _block_index(context: BuiltContext, block: str) -> int:
    return next(i for i, m in enumerate(context.messages) if m.get("content") == block)


@pytest.mark.anyio
async def test_each_request_of_an_own_loop_is_described_and_put_together_again(
    tmp_path: Path,
) -> None:
    """Every request ``context()`` hands out has its event; rebuilt from it and the
    stored rows, it names the same summaries and messages in the same order, the
    same system message and block, and its parts add up to its tokens."""
    db = tmp_path / "loop.db"
    config = Config(
        model=ModelConfig(context_limit=5_000, max_output_tokens=400),
        compaction=CompactionConfig(output_budget=400, summary_max_tokens=300),
    )
    sent: list[BuiltContext] = []
    async with Session.open(
        model="gpt-4o", db=db, config=config, system_prompt="Be terse."
    ) as session:
        await session.pin("Never deploy on Fridays.")
        await session.set_task("Migrate the payout client.")
        for turn in range(30):
            await session.record("user", f"Step {turn}: " + "check the ledger totals " * 12)
            sent.append(await session.context(tools=TOOLS))
            output = f"payhub/m{turn}.py\n" + "def payout(cents: int) -> int: ...\n" * 30
            await session.record(
                "assistant",
                [f"Reading {turn}.", ToolPart("read_file", f"c{turn}", {"p": turn}, output=output)],
            )
        await session.compaction.wait_for_pending()
        sent.append(await session.context(tools=TOOLS))
        session_id = session.id
    events = requests_of(db, session_id)
    assert len(events) == len(sent)
    store = Store(db, read_only=True)
    assert any(e.summary_ids() for e in events), "the loop compacted"
    for context, event in zip(sent, events, strict=True):
        payload = event.payload
        assert payload["tokens"] == context.tokens
        assert payload["budget"] == context.budget
        assert payload["stable_prefix"] == context.stable_prefix_tokens
        assert payload["omitted"] == context.omitted
        assert sum(payload["parts"][name] for name in PART_NAMES) == context.tokens
        rebuilt = rebuild_request(store, session_id, event)
        kinds = [item["kind"] for item in rebuilt["items"]]
        assert kinds[:2] == ["tools", "system"]
        assert json.loads(rebuilt["items"][0]["text"]) == TOOLS
        system = rebuilt["items"][1]
        assert f"{system['prompt']}\n\n{system['arena']}" == context.messages[0]["content"]
        # The view's items in order: summaries by id, then messages by seq.
        named = []
        for item in rebuilt["items"]:
            if item["kind"] == "summary":
                named.append(item["id"])
            elif item["kind"] == "messages":
                named.extend(message["id"] for message in item["messages"])
        assert named == context.item_ids
        block = next(item["text"] for item in rebuilt["items"] if item["kind"] == "block")
        assert block == context.messages[_block_index(context, block)]["content"]
        for item in rebuilt["items"]:
            if item["kind"] == "summary":
                assert any(item["text"] in str(m.get("content")) for m in context.messages)
    # Texts unchanged since the last request are named, not written again.
    later = [e.payload["texts"] for e in events[1:]]
    assert all("ref" in texts["tools"] for texts in later)
    assert sum("text" in texts.get("stable", {}) for texts in later) < len(later) / 2


def test_requests_of_send_and_respond_and_of_sync_are_described(sample: Sample) -> None:
    """The session's own model turn and the drop-in ``sync`` write the event too:
    one per reply on the send path, one per ``sync`` call, the fork's on its tape."""
    store = Store(sample.db, read_only=True)
    replies = [
        e
        for e in store.events_page(sample.agent, name=EventName.MESSAGE_CREATED.value, limit=9_999)
        if json.loads(e.payload_json).get("role") == "assistant"
    ]
    agent = requests_of(sample.db, sample.agent)
    assert len(agent) == len(replies) > 50
    assert len(requests_of(sample.db, sample.own_loop)) == 12
    assert len(requests_of(sample.db, sample.synced)) == 7
    assert len(requests_of(sample.db, sample.fork)) == 1
    # The send path's figures are the reply's.
    created = json.loads(replies[-1].payload_json)
    assert agent[-1].payload["tokens"] == created["request_tokens"]
    assert agent[-1].payload["stable_prefix"] == created["stable_prefix_tokens"]


def test_a_reply_finds_the_request_it_answered(sample: Sample) -> None:
    store = Store(sample.db, read_only=True)
    events = requests_of(sample.db, sample.agent)
    replies = [r for r in store.history(sample.agent) if r.role == "assistant"]
    for reply, expected in zip(replies, events, strict=True):
        found = request_answered_by(store, sample.agent, reply.seq)
        assert found is not None and found.seq == expected.seq
        assert found.newest_seq < reply.seq
    first = request_answered_by(store, sample.agent, 1)
    assert first is not None and first.seq == events[0].seq


def test_a_request_event_is_small(sample: Sample) -> None:
    """Texts are written once: a request that changed none is a description of
    references, not a copy (a few hundred bytes for tens of messages)."""
    store = Store(sample.db, read_only=True)
    rows = store.events_page(sample.agent, name=EventName.REQUEST_BUILT.value, limit=9_999)
    plain = [
        r for r in rows if all("ref" in t for t in json.loads(r.payload_json)["texts"].values())
    ]
    assert plain
    sizes = sorted(len(row.payload_json) for row in plain)
    assert sizes[len(sizes) // 2] < 2_000, sizes


# -- the JSON API -------------------------------------------------------------------


def test_sessions_are_listed_newest_first_with_their_lineage(
    client: TestClient, sample: Sample
) -> None:
    listed = client.get("/api/sessions").json()["sessions"]
    ids = [row["id"] for row in listed]
    assert ids == sorted(
        ids, key=lambda i: next(r["created_at"] for r in listed if r["id"] == i), reverse=True
    )
    by_id = {row["id"]: row for row in listed}
    assert by_id[sample.fork]["fork_of"]["id"] == sample.synced
    assert all(by_id[child]["parent"] == sample.agent for child in sample.children)
    agent = by_id[sample.agent]
    assert agent["messages"] > 100 and agent["summaries"] >= 1 and agent["view_tokens"] > 0
    detail = client.get(f"/api/sessions/{sample.agent}").json()
    assert sorted(child["id"] for child in detail["children"]) == sorted(sample.children)
    assert detail["request"]["tokens"] <= detail["request"]["budget"]
    assert detail["budget"]["usable"] > 0
    fork = client.get(f"/api/sessions/{sample.fork}").json()
    assert fork["fork_of"][0]["id"] == sample.synced
    assert [f["id"] for f in client.get(f"/api/sessions/{sample.synced}").json()["forks"]] == [
        sample.fork
    ]


def test_the_timeline_pages_from_the_newest_and_marks_each_message(
    client: TestClient, sample: Sample
) -> None:
    page = client.get(f"/api/sessions/{sample.agent}/messages?limit=40").json()
    newest = page["newest_seq"]
    seqs = [m["seq"] for m in page["messages"]]
    assert seqs == list(range(newest - 39, newest + 1))
    assert page["has_older"] and not page["has_newer"]
    states = {m["state"] for m in page["messages"]}
    assert "request" in states
    # Walk back to the start: older pages are compacted, under live summaries.
    first = page["first_seq"]
    marks: dict[int, dict[str, Any]] = {m["seq"]: m for m in page["messages"]}
    while first > 1:
        older = client.get(f"/api/sessions/{sample.agent}/messages?before={first}&limit=100")
        body = older.json()
        marks.update({m["seq"]: m for m in body["messages"]})
        first = body["first_seq"]
    assert sorted(marks) == list(range(1, newest + 1))
    compacted = [m for m in marks.values() if m["state"] == "compacted"]
    assert compacted and all(m["summary_id"].startswith("sum_") for m in compacted)
    live = {
        root["id"] for root in client.get(f"/api/sessions/{sample.agent}/summaries").json()["roots"]
    }
    assert {m["summary_id"] for m in compacted} <= live
    parts = [p for m in marks.values() for p in m["parts"]]
    assert any(p["kind"] == "tool" and p["pruned"] for p in parts)
    assert any(p["kind"] == "reasoning" for p in parts)
    image = next(p for p in parts if p["kind"] == "media")
    assert image["src"] == f"/api/media/{sample.image_id}"
    served = client.get(image["src"])
    assert served.status_code == 200 and served.headers["content-type"] == "image/png"
    media = Store(sample.db, read_only=True).native.read_media(sample.image_id)
    assert media is not None and served.content == media[1]


def test_pages_around_and_after_a_seq_and_one_message_whole(
    client: TestClient, sample: Sample
) -> None:
    around = client.get(f"/api/sessions/{sample.agent}/messages?around=30&limit=11").json()
    assert [m["seq"] for m in around["messages"]] == list(range(25, 36))
    after = client.get(f"/api/sessions/{sample.agent}/messages?after=5&limit=3").json()
    assert [m["seq"] for m in after["messages"]] == [6, 7, 8]
    capped = client.get(f"/api/sessions/{sample.agent}/messages?limit=100000").json()
    assert len(capped["messages"]) <= 500
    long = max(
        (m for m in capped["messages"] for p in m["parts"] if p.get("output_cut")),
        key=lambda m: m["seq"],
    )
    whole = client.get(f"/api/sessions/{sample.agent}/messages/{long['id']}").json()
    assert all(not p.get("output_cut") for p in whole["parts"])
    bad = client.get(f"/api/sessions/{sample.agent}/messages?before=x")
    assert bad.status_code == 400 and "before" in bad.json()["error"]
    both = client.get(f"/api/sessions/{sample.agent}/messages?before=9&after=2")
    assert both.status_code == 400


def test_a_fork_shows_its_parents_messages_then_its_own(client: TestClient, sample: Sample) -> None:
    page = client.get(f"/api/sessions/{sample.fork}/messages").json()
    owners = [m["session_id"] for m in page["messages"]]
    assert owners[0] == sample.synced and owners[-1] == sample.fork
    assert "v3 API" in page["messages"][-1]["parts"][0]["text"]


def test_a_request_at_a_turn_with_its_parts_against_the_budget(
    client: TestClient, sample: Sample
) -> None:
    events = requests_of(sample.db, sample.agent)
    compacted = next(e for e in events if e.summary_ids() and e.payload["pruned"])
    reply_seq = compacted.newest_seq + 1
    body = client.get(f"/api/sessions/{sample.agent}/requests/at/{reply_seq}").json()
    assert body["event_seq"] == compacted.seq
    assert body == client.get(f"/api/sessions/{sample.agent}/requests/{compacted.seq}").json()
    assert sum(body["parts"].values()) == body["tokens"] <= body["budget"]
    kinds = [item["kind"] for item in body["items"]]
    assert kinds[0] == "system" and "summary" in kinds and "messages" in kinds
    assert "block" in kinds
    system = body["items"][0]
    assert PIN in system["arena"] and system["prompt"]
    assert body["zones"]["truth"][0] > 0 and body["ledger"] >= 0
    assert any(entry[1].startswith("pin:") for entry in body["arena"])
    tools = [
        part
        for item in body["items"]
        if item["kind"] == "messages"
        for message in item["messages"]
        for part in message["parts"]
        if part["kind"] == "tool"
    ]
    assert {p["id"] for p in tools if p["pruned"]} == set(body["pruned"])
    # Pruned since, and sent whole then: the request shows it as it was sent.
    now = Store(sample.db, read_only=True)
    later_pruned = [
        p
        for p in tools
        if not p["pruned"]
        and any(
            q["id"] == p["id"] and q["compacted"]
            for m in now.history(sample.agent)
            for q in m.parts
        )
    ]
    assert all(p["output"] for p in later_pruned)
    before, after = body["previous"], body["next"]
    assert before is not None and after is not None
    assert client.get(f"/api/sessions/{sample.agent}/requests/{after}").json()["previous"] == (
        compacted.seq
    )
    missing = client.get(f"/api/sessions/{sample.agent}/requests/1")
    assert missing.status_code == 404


def test_the_chart_series_holds_every_request_and_the_compactions(
    client: TestClient, sample: Sample
) -> None:
    body = client.get(f"/api/sessions/{sample.agent}/requests").json()
    requests = body["requests"]
    assert len(requests) == len(requests_of(sample.db, sample.agent))
    assert all(r["tokens"] <= r["budget"] and r["soft"] < r["usable"] for r in requests)
    assert any(r["stable_prefix"] > 0 for r in requests)
    assert len([c for c in body["compactions"] if c["summary_ids"]]) == sample.compactions
    assert all(
        c["tokens_after"] < c["tokens_before"] for c in body["compactions"] if c["summary_ids"]
    )
    page = client.get(f"/api/sessions/{sample.agent}/requests?limit=5").json()
    assert [r["event_seq"] for r in page["requests"]] == [r["event_seq"] for r in requests[-5:]]
    assert page["has_older"]


def test_the_dag_opens_down_to_the_original_messages(client: TestClient, sample: Sample) -> None:
    roots = client.get(f"/api/sessions/{sample.agent}/summaries").json()["roots"]
    assert roots and all(root["live"] for root in roots)
    seen_messages = 0
    stack = [root["id"] for root in roots]
    while stack:
        node = client.get(f"/api/sessions/{sample.agent}/summaries/{stack.pop()}").json()
        assert node["text"]
        if node["source_kind"] == "summary":
            stack.extend(child["id"] for child in node["children"])
        else:
            seqs = [m["seq"] for m in node["messages"]]
            assert seqs and node["first_seq"] <= min(seqs) and max(seqs) <= node["last_seq"]
            seen_messages += len(seqs)
    assert seen_messages > 20
    assert client.get(f"/api/sessions/{sample.agent}/summaries/sum_nope").status_code == 404


def test_search_hits_open_the_message_in_the_timeline(client: TestClient, sample: Sample) -> None:
    hits = client.get(f"/api/search?q=quartz+heron&session={sample.agent}").json()["hits"]
    message = next(h for h in hits if h["owner_kind"] == "message")
    assert message["seq"] is not None and message["covering_summary_id"]
    page = client.get(f"/api/sessions/{sample.agent}/messages?around={message['seq']}").json()
    found = next(m for m in page["messages"] if m["id"] == message["owner_id"])
    assert found["state"] == "compacted" and sample.fact in json.dumps(found["parts"])
    everywhere = client.get("/api/search?q=quartz+heron").json()["hits"]
    assert {h["session_id"] for h in everywhere} >= {sample.agent, sample.own_loop}
    assert client.get("/api/search?q=").status_code == 400
    assert client.get("/api/search?q=x&mode=fuzzy").status_code == 400
    assert client.get("/api/search?q=x&session=ses_nope").status_code == 404


def test_unknown_ids_are_404_json(client: TestClient) -> None:
    for path in (
        "/api/sessions/ses_nope",
        "/api/sessions/ses_nope/messages",
        "/api/sessions/ses_nope/requests",
        "/api/sessions/ses_nope/summaries",
        "/api/sessions/ses_nope/since",
        "/api/media/image_00000000000000000000000000000000",
        "/api/nothing",
    ):
        answer = client.get(path)
        assert answer.status_code == 404, path
        assert answer.headers["content-type"] == "application/json"
        assert answer.json()["error"], path


def test_new_requests_and_messages_appear_while_another_process_writes(
    sample: Sample, tmp_path: Path
) -> None:
    """The viewer reads what a session writes after it started: the ``since``
    endpoint names the new events, the newest page and the marks follow."""
    import shutil

    db = tmp_path / "live.db"
    shutil.copy(sample.db, db)
    with TestClient(build_app(db), base_url=LOCAL) as client:
        before = client.get(f"/api/sessions/{sample.own_loop}").json()
        last = before["newest_event"]
        assert (
            client.get(f"/api/sessions/{sample.own_loop}/since?event={last}").json()["events"] == []
        )

        async def write() -> None:
            async with await Session.load(sample.own_loop, db=db) as session:
                await session.record("user", "One more module, please.")
                await session.context()

        anyio.run(write)
        news = client.get(f"/api/sessions/{sample.own_loop}/since?event={last}").json()
        names = [event["name"] for event in news["events"]]
        assert "message_created" in names and "request_built" in names
        assert news["newest_seq"] == before["newest_seq"] + 1
        page = client.get(f"/api/sessions/{sample.own_loop}/messages?limit=3").json()
        assert page["messages"][-1]["parts"][0]["text"] == "One more module, please."
        assert page["messages"][-1]["state"] == "request"
        assert page["request"]["event_seq"] > before["request"]["event_seq"]


def test_reading_writes_nothing_and_no_route_writes(sample: Sample, tmp_path: Path) -> None:
    import shutil

    db = tmp_path / "read.db"
    shutil.copy(sample.db, db)
    digest = hashlib.sha256(db.read_bytes()).hexdigest()
    with TestClient(build_app(db), base_url=LOCAL) as client:
        for path in (
            "/api/sessions",
            f"/api/sessions/{sample.agent}",
            f"/api/sessions/{sample.agent}/messages",
            f"/api/sessions/{sample.agent}/requests",
            f"/api/sessions/{sample.agent}/summaries",
            "/api/search?q=quartz",
        ):
            assert client.get(path).status_code == 200
            for method in ("POST", "PUT", "DELETE", "PATCH"):
                assert client.request(method, path).status_code == 405, (method, path)
    assert hashlib.sha256(db.read_bytes()).hexdigest() == digest
    assert not Path(f"{db}-wal").exists() or Path(f"{db}-wal").stat().st_size == 0


# -- who may read -------------------------------------------------------------------


def test_without_a_token_only_loopback_names_are_answered(sample: Sample) -> None:
    with TestClient(build_app(sample.db), base_url="http://attacker.example") as client:
        assert client.get("/api/sessions").status_code == 400
    with TestClient(build_app(sample.db), base_url="http://localhost:8766") as client:
        assert client.get("/api/sessions").status_code == 200


def test_a_token_is_taken_as_a_bearer_header_or_once_in_the_address(sample: Sample) -> None:
    token = "s3cret-token"
    app = build_app(sample.db, token=token)
    with TestClient(app, base_url="http://viewer.internal") as client:
        refused = client.get("/api/sessions")
        assert refused.status_code == 401 and refused.json()["error"]
        assert (
            client.get("/api/sessions", headers={"authorization": "Bearer nope"}).status_code == 401
        )
        bearer = {"authorization": f"Bearer {token}"}
        assert client.get("/api/sessions", headers=bearer).status_code == 200
        opened = client.get(f"/?token={token}&x=1", follow_redirects=False)
        assert opened.status_code == 303 and opened.headers["location"] == "/?x=1"
        cookie = opened.headers["set-cookie"]
        assert "HttpOnly" in cookie and "SameSite=Strict" in cookie
        # The client keeps the cookie: later requests need nothing else.
        assert client.get("/api/sessions").status_code == 200
        assert client.get("/?token=wrong", follow_redirects=False).status_code == 200


def test_another_address_needs_a_token(sample: Sample) -> None:
    result = CliRunner().invoke(cli_app, ["--db", sample.db, "ui", "--host", "0.0.0.0"])
    assert result.exit_code == 1
    assert "needs a token" in result.output
    missing = CliRunner().invoke(cli_app, ["--db", "/nonexistent/x.db", "ui"])
    assert missing.exit_code == 1 and "no database" in missing.output
    helped = CliRunner().invoke(cli_app, ["ui", "--help"])
    assert helped.exit_code == 0 and "--token" in helped.output


def test_the_command_serves_the_database_on_loopback(sample: Sample) -> None:
    # `lossless --db FILE ui` as the demo tells a person to run it: a process of its
    # own, serving over HTTP until stopped.
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    command = [sys.executable, "-m", "lossless", "--db", str(sample.db), "ui", "--port", str(port)]
    server = subprocess.Popen(command, stdout=subprocess.PIPE, stderr=subprocess.STDOUT, text=True)
    try:
        assert server.stdout is not None
        banner = server.stdout.readline()
        assert f"http://127.0.0.1:{port}/" in banner, banner
        sessions = _get_when_up(f"http://127.0.0.1:{port}/api/sessions")
        assert sample.agent in {row["id"] for row in sessions["sessions"]}
    finally:
        server.terminate()
        server.wait(timeout=10)


def _get_when_up(url: str) -> Any:
    for _ in range(100):
        try:
            return httpx.get(url, timeout=5).raise_for_status().json()
        except httpx.TransportError:
            time.sleep(0.1)
    raise AssertionError(f"nothing answered at {url}")


# -- the page -----------------------------------------------------------------------


def test_the_page_and_its_files_load_nothing_from_elsewhere(client: TestClient) -> None:
    page = client.get("/")
    assert page.status_code == 200 and page.headers["content-type"].startswith("text/html")
    policy = page.headers["content-security-policy"]
    assert "default-src 'none'" in policy and "script-src 'self'" in policy
    assets = re.findall(r'(?:src|href)="([^"]+)"', page.text)
    assert assets and all(a.startswith(("/static/", "#")) for a in assets), assets
    prefix = next(a for a in assets if a.endswith("/app.js")).removesuffix("app.js")
    from importlib import resources

    static = resources.files("lossless.ui").joinpath("static")
    for entry in static.iterdir():
        served = client.get(f"{prefix}{entry.name}")
        assert "immutable" in served.headers["cache-control"]
        assert served.status_code == 200, entry.name
        # The SVG namespace names a kind of element; nothing is fetched from it.
        text = served.text.replace("http://www.w3.org/2000/svg", "")
        assert not re.search(r"(?:https?:)?//[a-z0-9-]+\.[a-z0-9.-]+", text), entry.name
        assert "innerHTML" not in text and "eval(" not in text, entry.name
        assert 'import("http' not in text


def test_the_page_s_files_are_package_data() -> None:
    """What the wheel ships: maturin packs every file under python/lossless, the
    page's files among them."""
    from importlib import resources

    static = resources.files("lossless.ui").joinpath("static")
    names = {entry.name for entry in static.iterdir()}
    assert {"index.html", "app.css", "app.js"} <= names


def test_on_postgres_the_viewer_reads_a_session_the_same_way(
    postgres_schema_url: str, server: LocalLLMServer
) -> None:
    async def run() -> str:
        async with Session.open(
            model=TEST_MODEL, db=postgres_schema_url, config=make_config(server)
        ) as session:
            server.enqueue(Reply(text="Reading.", tool_calls=[ToolCallSpec("read_file", {})]))
            result = await session.send("Read the payout client.")
            await session.update_tool(result.tool_calls[0].call_id, status="completed", output="ok")
            server.enqueue(Reply(text="Done."))
            await session.respond()
            return session.id

    session_id = anyio.run(run)
    with TestClient(build_app(postgres_schema_url), base_url=LOCAL) as client:
        assert [s["id"] for s in client.get("/api/sessions").json()["sessions"]] == [session_id]
        page = client.get(f"/api/sessions/{session_id}/messages").json()
        assert [m["role"] for m in page["messages"]] == ["user", "assistant", "assistant"]
        assert [m["state"] for m in page["messages"]] == ["request", "request", "new"]
        request = client.get(f"/api/sessions/{session_id}/requests/at/3").json()
        assert [
            m["seq"] for i in request["items"] if i["kind"] == "messages" for m in i["messages"]
        ] == [1, 2]
        assert client.get(f"/api/sessions/{session_id}/requests").json()["requests"]
