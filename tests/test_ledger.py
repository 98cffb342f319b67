"""The session ledger through the public API, on both backends: what compaction
takes out of the view is read into typed items every request carries, a restated
value replaces the old one in the request (the old stays stored), the caller reads,
adds, corrects and removes items, and pins are its rules, keyed by subject."""

from __future__ import annotations

import json
from collections.abc import Callable
from pathlib import Path
from typing import Any

import anyio
import pytest

from conftest import TEST_MODEL
from lossless import Session, ToolPart
from lossless.compaction.ledger_model import LEDGER_PROMPT
from lossless.config import ArenaConfig, CompactionConfig, Config
from lossless.errors import InvalidInputError
from lossless.governance import erase
from lossless.ledger import KINDS, absorb, ledger_caps, ledger_subject
from lossless.testing import Reply
from lossless.testing.conformance import check_request

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

RULES = [
    "If the deploy fails, stop and escalate to the on-call engineer.",
    "Under no circumstances touch the billing tables.",
]
FACTS = ["The vault code is QX7-4411-ZB.", "Budget cap is $500 total. Never exceed it."]
RESTATED = ["Update: the vault code changed to MM2-9031-KT.", "The budget cap is now $750."]
STALE = ["QX7-4411-ZB", "$500"]
LATEST = ["MM2-9031-KT", "$750"]


def _compacting(config_for: Callable[..., Config], **arena: Any) -> Config:
    return config_for(
        compaction=CompactionConfig(
            output_budget=1_000, tail_tokens=200, tail_messages=4, protect_user_turns=1
        ),
        arena=ArenaConfig(**arena),
    )


async def _tool_run(s: Session, calls: int, start: int = 0) -> None:
    """A long run of tool calls after one instruction, as agents make them."""
    for n in range(start, start + calls):
        part = ToolPart(
            "bash",
            f"c{n}",
            {"command": f"grep -rn step{n} src"},
            output=f"src/mod{n}.py:{n}: step{n} " + "match " * 60 + f"\nexit code: {n % 2}",
        )
        await s.record("assistant", [part])


def _request_text(context: Any) -> str:
    return json.dumps(context.messages)


async def test_the_instructions_survive_compaction_in_every_request(
    server: Any, config_for: Callable[..., Config], db: Path | str
) -> None:
    async with Session.open(model=TEST_MODEL, db=db, config=_compacting(config_for)) as s:
        await s.record("user", "Fix the flaky test suite. " + " ".join(RULES + FACTS))
        await _tool_run(s, 12)
        result = await s.compact()
        assert result.status == "completed" and result.ledger is not None, result
        assert result.ledger.added >= 4 and result.ledger.stable_tokens > 0
        context = await s.context()
        check_request(context.messages)
        # Each request reports the ledger's tokens in it.
        assert context.injection is not None
        assert context.injection.ledger_tokens == result.ledger.tokens
        system = context.messages[0]["content"]
        for rule in RULES:
            assert rule in system
        assert "QX7-4411-ZB" in system and "Budget cap is $500 total. Never exceed it." in system
        kinds = {item.kind for item in await s.ledger.items()}
        assert {"rule", "constraint", "fact", "command", "error"} <= kinds
        # The tools' records ride next to the newest user message, not in the system.
        assert "grep -rn step1 src" in _request_text(context)
        assert "grep -rn step1 src" not in system


async def test_a_restated_value_replaces_the_old_one_and_the_old_stays_stored(
    server: Any, config_for: Callable[..., Config], db: Path | str
) -> None:
    async with Session.open(model=TEST_MODEL, db=db, config=_compacting(config_for)) as s:
        await s.record("user", "Reconcile the ledger. " + " ".join(FACTS))
        await _tool_run(s, 8)
        await s.compact()
        await s.record("user", " ".join(RESTATED))
        await _tool_run(s, 12, start=8)
        await s.compact()
        # The ledger shows the latest value as current; summaries of the earlier
        # messages may still quote the old one as what was said then.
        ledger, _ = await s.ledger.render()
        system = (await s.context()).messages[0]["content"]
        assert ledger in system
        for old, new in zip(STALE, LATEST, strict=True):
            assert new in ledger and old not in ledger, (old, new, ledger)
        assert "(replaces: The vault code is ….)" in ledger
        history = await s.ledger.history(ledger_subject(FACTS[0]))
        assert [row.text for row in history] == [
            FACTS[0],
            f"{RESTATED[0]} (replaces: The vault code is ….)",
        ]
        assert history[1].changed and history[1].message_ids


async def test_a_german_session_keeps_its_rules_and_the_newest_value(
    server: Any, config_for: Callable[..., Config], db: Path | str
) -> None:
    async with Session.open(model=TEST_MODEL, db=db, config=_compacting(config_for)) as s:
        await s.record(
            "user",
            "Wir arbeiten heute am Zahlungsmodul. Niemals direkt auf den Hauptzweig pushen. "
            "Der Tresorcode ist QX7-4411-ZB.",
        )
        await _tool_run(s, 8)
        await s.compact()
        await s.record("user", "Aktualisierung: der Tresorcode ist jetzt MM2-9031-KT.")
        await _tool_run(s, 12, start=8)
        await s.compact()
        items = {item.text: item for item in await s.ledger.items()}
        assert items["Niemals direkt auf den Hauptzweig pushen."].kind == "rule"
        # An ordinary sentence whose nouns are capitalised states no value.
        assert not [text for text in items if "Zahlungsmodul" in text]
        system = (await s.context()).messages[0]["content"]
        assert "MM2-9031-KT" in system and "QX7-4411-ZB" not in system
        assert len(await s.ledger.history(ledger_subject("Der Tresorcode ist QX7-4411-ZB."))) == 2


async def test_the_same_holds_through_send(
    server: Any, config_for: Callable[..., Config], db: Path | str
) -> None:
    async with Session.open(model=TEST_MODEL, db=db, config=_compacting(config_for)) as s:
        server.enqueue(Reply(text="On it."))
        await s.send("Tidy the repository. " + " ".join(RULES + FACTS))
        await _tool_run(s, 12)
        await s.compact()
        server.enqueue(Reply(text="Done."))
        await s.send("Carry on.")
        sent = json.dumps(server.requests_to("chat")[-1]["messages"])
        for rule in RULES:
            assert rule in sent
        assert "QX7-4411-ZB" in sent


async def test_the_caller_reads_adds_corrects_and_removes_items(
    server: Any, config_for: Callable[..., Config], db: Path | str
) -> None:
    async with Session.open(model=TEST_MODEL, db=db, config=_compacting(config_for)) as s:
        await s.record("user", "Start.")
        added = await s.ledger.add("Invoices are due within 30 days.", kind="constraint")
        assert added.added == 1 and added.rendered
        subject = ledger_subject("Invoices are due within 30 days.")
        await s.ledger.correct(subject, "Invoices are due within 45 days.")
        items = await s.ledger.items("constraint")
        assert [item.text for item in items] == ["Invoices are due within 45 days."]
        assert items[0].changed and items[0].origin == "caller"
        system = (await s.context()).messages[0]["content"]
        assert "45 days" in system and "30 days" not in system
        assert await s.ledger.remove(subject)
        assert not await s.ledger.remove(subject)
        assert "45 days" not in (await s.context()).messages[0]["content"]
        assert [row.removed for row in await s.ledger.history(subject)] == [False, False, True]
        before = await s.ledger.history()
        for bad in (
            lambda: s.ledger.add("", kind="fact"),
            lambda: s.ledger.add("x", kind="rumour"),  # type: ignore[arg-type]
            lambda: s.ledger.correct("no such subject", "y"),
            lambda: s.ledger.remove(""),
        ):
            with pytest.raises(InvalidInputError):
                await bad()
        assert await s.ledger.history() == before


async def test_pins_are_rules_keyed_by_subject(
    server: Any, config_for: Callable[..., Config], db: Path | str
) -> None:
    async with Session.open(model=TEST_MODEL, db=db, config=_compacting(config_for)) as s:
        await s.record("user", "Start.")
        first = await s.pin("The refund limit is $200.")
        second = await s.pin("The refund limit is $350.")
        other = await s.pin("Never email customers on weekends.")
        assert first == second != other
        system = (await s.context()).messages[0]["content"]
        assert "$350" in system and "$200" not in system and "weekends" in system
        pinned = [item for item in await s.ledger.items("rule") if item.origin == "pin"]
        assert {item.text for item in pinned} == {
            "The refund limit is $350.",
            "Never email customers on weekends.",
        }
        assert await s.ledger.remove(pinned[0].subject)
        assert len(await s.ledger.items("rule")) == 1


async def test_over_its_cap_the_ledger_keeps_rules_and_says_what_it_left_out(
    server: Any, config_for: Callable[..., Config], db: Path | str
) -> None:
    config = _compacting(config_for, ledger_tokens=120)
    async with Session.open(model=TEST_MODEL, db=db, config=config) as s:
        facts = " ".join(
            f"Server {n} runs at host-{n}.internal on port {8000 + n}." for n in range(30)
        )
        await s.record("user", f"Audit the fleet. {RULES[1]} {facts}")
        await _tool_run(s, 10)
        result = await s.compact()
        assert result.ledger is not None and result.ledger.left_out.get("fact", 0) > 0
        assert result.ledger.stable_tokens <= 120
        system = (await s.context()).messages[0]["content"]
        assert RULES[1] in system and "Left out for room:" in system
        assert len(await s.ledger.items("fact")) == 30


async def test_reading_again_adds_nothing_and_an_erased_message_leaves_the_ledger(
    server: Any, config_for: Callable[..., Config], db: Path | str
) -> None:
    async with Session.open(model=TEST_MODEL, db=db, config=_compacting(config_for)) as s:
        said = await s.record("user", "Rotate the keys. The vault code is QX7-4411-ZB.")
        await _tool_run(s, 10)
        await s.compact()
        assert "QX7-4411-ZB" in _request_text(await s.context())
        read = await s.ledger.history()
        # The same messages read again: the mark says they were, so nothing is added.
        caps = ledger_caps(s.config.arena, s.budget.usable)
        again = await anyio.to_thread.run_sync(absorb, s.store, s.id, caps)
        assert (again.added, again.changed, again.removed) == (0, 0, 0)
        assert await s.ledger.history() == read
        erase(s, message=said.message_id, by="owner")
        assert not [i for i in await s.ledger.items() if "QX7" in i.text]
        assert "QX7-4411-ZB" not in _request_text(await s.context())
        assert not [row for row in await s.ledger.history() if "QX7" in row.text]


async def test_a_summarisation_model_adds_checked_items_and_the_built_in_ones_stand(
    server: Any, config_for: Callable[..., Config], db: Path | str
) -> None:
    answer = {
        "items": [
            {"kind": "constraint", "subject": "refund limit", "text": "Refunds stop at $90."},
            # Invented: the messages hold no such value.
            {"kind": "fact", "subject": "vault code", "text": "The vault code is ZZ9-0000."},
            {"kind": "rumour", "subject": "x", "text": "Nothing."},
        ]
    }

    def responder(request: dict[str, Any]) -> Reply:
        if request["messages"][0]["content"] == LEDGER_PROMPT:
            return Reply(text=json.dumps(answer))
        return Reply(text="## Goal\nReconcile the refunds.\n\n## Completed\n- ran the tools")

    server.responder = responder
    compaction = CompactionConfig(
        model="openai/lossless-summary",
        output_budget=1_000,
        tail_tokens=200,
        tail_messages=4,
        protect_user_turns=1,
    )
    config = config_for(compaction=compaction)
    async with Session.open(model=TEST_MODEL, db=db, config=config) as s:
        await s.record("user", "Reconcile the refunds. Refunds stop at $90. " + FACTS[0])
        await _tool_run(s, 12)
        await s.record("user", "Carry on.")
        await _tool_run(s, 4, start=12)
        result = await s.compact()
        assert result.summary_ids and result.ledger is not None
        items = {item.text: item for item in await s.ledger.items()}
        stated = await s.ledger.history("refund limit")
        assert [(item.kind, item.origin) for item in stated] == [("constraint", "model")]
        assert "The vault code is QX7-4411-ZB." in items
        assert not any("ZZ9-0000" in text for text in items)
        assert not any(item.kind not in KINDS for item in items.values())
        asked = [r for r in server.requests if r["messages"][0]["content"] == LEDGER_PROMPT]
        assert asked and asked[0]["response_format"]["type"] == "json_schema"


async def test_a_model_answer_that_is_no_ledger_changes_nothing_the_rules_found(
    server: Any, config_for: Callable[..., Config], db: Path | str
) -> None:
    def responder(request: dict[str, Any]) -> Reply:
        if request["messages"][0]["content"] == LEDGER_PROMPT:
            return Reply(text="Sure! Here are the items: none.")
        return Reply(text="## Goal\nReconcile the refunds.\n\n## Completed\n- ran the tools")

    server.responder = responder
    compaction = CompactionConfig(
        model="openai/lossless-summary", output_budget=1_000, tail_tokens=200, tail_messages=4
    )
    async with Session.open(model=TEST_MODEL, db=db, config=config_for(compaction=compaction)) as s:
        await s.record("user", "Reconcile the refunds. " + " ".join(RULES + FACTS))
        await _tool_run(s, 12)
        await s.record("user", "Carry on.")
        await _tool_run(s, 4, start=12)
        result = await s.compact()
        assert result.status == "completed" and result.ledger is not None
        items = await s.ledger.items()
        assert {item.origin for item in items} == {"extracted"}
        assert RULES[0] in (await s.context()).messages[0]["content"]
