"""The viewer (`lossless ui`): every request a session hands out is described on its
tape and put together again from the stored rows."""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from lossless import Session, ToolPart
from lossless.config import CompactionConfig, Config, ModelConfig
from lossless.demo.viewer_sample import Sample, make_sample
from lossless.events import EventName
from lossless.request_log import PART_NAMES
from lossless.results import BuiltContext
from lossless.store import Store
from lossless.ui.requests import RequestEvent, rebuild_request, request_answered_by

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
