"""Recall: grep, describe and expand over a compacted session, and the recall tools."""

from __future__ import annotations

import json
from collections.abc import AsyncIterator
from pathlib import Path

import pytest

from lossless import errors
from lossless.config import Config, LLMConfig, ModelConfig
from lossless.demo._config import demo_config
from lossless.demo.trajectory import RECALL_FACT, RECALL_QUERY, RECALL_TURN, generate_trajectory
from lossless.parts import ToolPart
from lossless.recall import describe, expand, grep, group_by_summary, read
from lossless.session import Session
from lossless.testing import LocalLLMServer, Reply, ToolCallSpec

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.both_backends,
]


@pytest.fixture
async def compacted(database: Path | str) -> AsyncIterator[Session]:
    """A session of 240 replayed turns, compacted several times."""
    session = await Session.create(model="gpt-4o", db=database, config=demo_config(None))
    for turn in generate_trajectory(turns=240):
        await session.record(turn.role, list(turn.parts))
    await session.compaction.wait_for_pending()
    yield session
    await session.close()


async def test_grep_finds_a_compacted_fact_and_its_covering_summary(compacted: Session) -> None:
    hits = grep(RECALL_QUERY, session=compacted)
    message_hits = [hit for hit in hits if hit.owner_kind == "message"]
    assert len(message_hits) == 1
    hit = message_hits[0]
    assert hit.covering_summary_id is not None
    assert "quartz" in hit.snippet.lower()
    live = {row["id"] for row in compacted.store.live_summaries(compacted.id)}
    assert hit.covering_summary_id in live
    expansion = expand(hit.covering_summary_id, max_tokens=10_000_000, db=compacted)
    assert any(
        RECALL_FACT in message.text and message.seq == RECALL_TURN for message in expansion.messages
    )
    assert expansion.omitted_messages == 0


async def test_a_question_finds_the_fact_with_its_leaf_and_covering_summaries(
    compacted: Session,
) -> None:
    hits = grep("Which codename did the quartz herons get?", session=compacted, limit=10)
    top = hits[0]
    assert top.owner_kind == "message" and "[quartz]" in top.snippet.lower()
    assert top.leaf_summary_id is not None and top.covering_summary_id is not None
    leaf = describe(top.leaf_summary_id, db=compacted)[0]
    assert leaf.kind == "leaf" and leaf.span_start_seq <= RECALL_TURN <= leaf.span_end_seq
    groups = group_by_summary(hits)
    assert sum(len(group) for group in groups.values()) == len(hits)
    assert next(iter(groups)) == top.covering_summary_id
    for covering, group in groups.items():
        assert all(hit.covering_summary_id == covering for hit in group)
        assert [hit.rank for hit in group] == sorted(hit.rank for hit in group)
    # Summaries rank beside messages, at most a quarter of the page while messages match.
    live = compacted.store.live_summaries(compacted.id)
    words = " ".join(str(live[0]["text"]).split()[:12])
    page = grep(words, session=compacted, limit=8)
    shown = [hit for hit in page if hit.owner_kind == "summary"]
    assert len(page) == 8 and 1 <= len(shown) <= 2, [hit.owner_kind for hit in page]
    assert any(hit.owner_id in {row["id"] for row in live} for hit in shown)


async def test_query_syntax_requires_phrases_and_plus_words(compacted: Session) -> None:
    assert grep('"quartz heron"', session=compacted)
    assert not grep('"heron quartz"', session=compacted)
    strict = grep("+quartz tests", session=compacted)
    assert strict and all("[quartz]" in hit.snippet.lower() for hit in strict)
    # A question of only stopwords still searches.
    assert grep("what is it", session=compacted)
    with pytest.raises(errors.InvalidInputError, match="unbalanced"):
        grep('the "quartz heron', session=compacted)
    with pytest.raises(errors.InvalidInputError, match="more than 32"):
        grep("+word " * 40, session=compacted)
    # A pasted page searches its first 32 distinct words.
    assert grep("quartz " + " ".join(f"w{i}" for i in range(500)), session=compacted)
    for nothing in ("", "   ", '""', "+"):
        with pytest.raises(errors.InvalidInputError, match="no words"):
            grep(nothing, session=compacted)


async def test_regex_grep_and_whole_database_grep(compacted: Session, database: Path | str) -> None:
    regex_hits = grep(r"quartz-h[a-z]+", session=compacted, mode="regex")
    assert any(RECALL_FACT in hit.snippet for hit in regex_hits)
    everywhere = grep(RECALL_QUERY, db=database)
    assert {hit.session_id for hit in everywhere} == {compacted.id}


async def test_expand_respects_its_budget_and_says_what_it_left_out(compacted: Session) -> None:
    summary = compacted.store.live_summaries(compacted.id)[0]
    small = expand(summary["id"], max_tokens=300, db=compacted)
    assert small.tokens <= 300
    assert small.omitted_messages == small.total_messages - len(small.messages) > 0
    assert "left out" in small.note
    seqs = [message.seq for message in small.messages]
    assert seqs == sorted(seqs)


async def test_describe_returns_an_acyclic_dag_covering_every_compacted_message(
    compacted: Session,
) -> None:
    nodes = describe(compacted)
    by_id = {node.id: node for node in nodes}
    live = [node for node in nodes if node.live]
    assert live
    covered: list[str] = []

    def walk(node_id: str, seen: frozenset[str]) -> None:
        assert node_id not in seen, "cycle in the summary DAG"
        node = by_id[node_id]
        if node.source_kind == "summary":
            for child in node.sources:
                assert not by_id[child].live
                walk(child, seen | {node_id})
        else:
            covered.extend(node.sources)

    for node in live:
        walk(node.id, frozenset())
    assert len(covered) == len(set(covered))
    assert sum(node.message_count for node in live) == len(covered)
    subtree = describe(live[0].id, db=compacted.store.path)
    assert subtree[0].id == live[0].id


async def test_bad_recall_input_gets_typed_errors(compacted: Session) -> None:
    with pytest.raises(errors.InvalidInputError, match="regular expression"):
        grep("(", session=compacted, mode="regex")
    with pytest.raises(errors.InvalidInputError, match="no words"):
        grep("!!! ...", session=compacted)
    with pytest.raises(errors.SummaryNotFoundError):
        expand("sum_missing", db=compacted)
    with pytest.raises(KeyError):
        describe("sum_missing", db=compacted.store.path)
    with pytest.raises(errors.SessionNotFoundError):
        grep("anything", session="ses_missing", db=compacted.store.path)
    # Each checked once, where it is owned: the type by the binding, the value by the core.
    for limit, words in [(0, "at least 1"), (-3, "at least 1"), (True, "got bool")]:
        with pytest.raises(errors.InvalidInputError, match=f"limit: .*{words}"):
            grep("anything", session=compacted, limit=limit)
    node = describe(db=compacted.store.path)[0]
    with pytest.raises(errors.InvalidInputError, match="max_tokens: must be at least 1"):
        expand(node.id, db=compacted, max_tokens=0)
    with pytest.raises(errors.InvalidInputError, match="max_tokens: expected an integer"):
        read(node.sources[0], db=compacted, max_tokens=2.5)  # type: ignore[arg-type]


def _last_tool_part(session: Session) -> ToolPart:
    """The newest stored tool call of the session."""
    calls = [
        part
        for message in session.history()
        for part in message.parts
        if isinstance(part, ToolPart)
    ]
    assert calls, "no tool call was stored"
    return calls[-1]


@pytest.fixture
async def chat(database: Path | str) -> AsyncIterator[tuple[Session, LocalLLMServer]]:
    with LocalLLMServer() as server:
        config = Config(
            model=ModelConfig(context_limit=32_000, max_output_tokens=2_000),
            llm=LLMConfig(api_base=server.base_url, api_key="test", num_retries=0),
        )
        session = await Session.create(model="openai/recaller", db=database, config=config)
        await session.record(
            "user", "Remember: the deploy key rotates every 17 days, codename saffron-otter."
        )
        await session.record("assistant", "Noted.")
        yield session, server
        await session.close()


async def test_recall_tools_are_answered_by_the_session(
    chat: tuple[Session, LocalLLMServer],
) -> None:
    session, server = chat
    server.enqueue(
        Reply(
            tool_calls=[ToolCallSpec(name="lossless_grep", arguments={"query": "saffron otter"})]
        ),
        Reply(text="The codename is saffron-otter."),
    )
    result = await session.send("What was the codename?", tools="recall")
    assert result.text == "The codename is saffron-otter."
    first, second = server.requests[-2:]
    assert {tool["function"]["name"] for tool in first["tools"]} >= {
        "lossless_grep",
        "lossless_expand",
    }
    tool_messages = [message for message in second["messages"] if message["role"] == "tool"]
    assert tool_messages and "saffron" in tool_messages[-1]["content"]
    answered = _last_tool_part(session)
    assert answered.status == "completed"
    answer = json.loads(answered.output or "{}")
    assert answer["hits"][0]["owner_kind"] == "message"
    assert answer["note"] == "complete"


async def test_a_bad_recall_call_is_stored_as_a_tool_error(
    chat: tuple[Session, LocalLLMServer],
) -> None:
    session, server = chat
    server.enqueue(
        Reply(
            tool_calls=[ToolCallSpec(name="lossless_expand", arguments={"summary_id": "sum_nope"})]
        ),
        Reply(text="That summary does not exist."),
    )
    result = await session.send("Expand sum_nope.", tools="recall")
    assert result.text == "That summary does not exist."
    answered = _last_tool_part(session)
    assert answered.status == "error"
    assert "sum_nope" in (answered.error or "")


def test_expand_restores_pruned_tool_output(database: Path | str) -> None:
    from lossless import Store

    store = Store(database)
    sid = store.create_session("gpt-4o")
    original = "def settle(ledger):\n    return ledger.close()\n" * 40
    store.append(sid, "user", "read the settlement module")
    store.append(
        sid, "assistant", [ToolPart("read_file", "call_1", {"path": "settle.py"}, output=original)]
    )
    for turn in range(3):
        store.append(sid, "user", f"next step {turn}")
        store.append(sid, "assistant", "done")
    native = store.native
    pruned = native.prune(sid, 0, 0, [], 2)
    assert pruned["pruned_parts"] == 1
    context = "\n".join(str(m.get("content")) for m in store.assemble(sid, 100_000)[0])
    assert original not in context
    span = native.compaction_span(sid)
    summary = native.commit_summary(sid, "earlier work", 1, span.message_ids, [])
    expansion = store.expand(summary["summary_id"], max_tokens=100_000)
    assert any(original in message["text"] for message in expansion["messages"])
