"""The event bus: inline sync handlers, async handlers as tasks, errors contained, the tape."""

from __future__ import annotations

import json
import logging
from pathlib import Path
from typing import Any

import anyio
import anyio.lowlevel
import pytest

from conftest import TEST_MODEL
from lossless import Store
from lossless.config import Config
from lossless.events import Event, EventBus, EventName
from lossless.testing import LocalLLMServer, Reply

pytestmark = pytest.mark.anyio


class Tape:
    """An in-memory stand-in for the store's event table."""

    def __init__(self, fail: bool = False) -> None:
        self.rows: list[tuple[str, str, dict[str, Any]]] = []
        self.fail = fail

    def append_event(self, session_id: str, name: str, payload_json: str) -> int:
        if self.fail:
            raise OSError("disk full")
        self.rows.append((session_id, name, json.loads(payload_json)))
        return len(self.rows)


# -- names ----------------------------------------------------------------------------


def test_event_names_are_an_enum_of_distinct_strings() -> None:
    values = [name.value for name in EventName]
    assert len(values) == len(set(values))
    assert all(value == value.lower() and " " not in value for value in values)
    assert EventName("doom_loop_detected") is EventName.DOOM_LOOP_DETECTED
    assert EventName.LLM_RETRY == "llm_retry"  # a StrEnum compares equal to its value
    with pytest.raises(ValueError):
        EventName("not_an_event")


# -- delivery -------------------------------------------------------------------------


def test_sync_handlers_run_inline_in_subscription_order() -> None:
    bus = EventBus()
    seen: list[tuple[str, EventName]] = []
    bus.subscribe(lambda event: seen.append(("first", event.name)))
    bus.subscribe(lambda event: seen.append(("second", event.name)))
    event = bus.publish(EventName.MESSAGE_CREATED, "ses_1", message_id="msg_1")
    # Delivered before publish returned, in order.
    assert seen == [("first", EventName.MESSAGE_CREATED), ("second", EventName.MESSAGE_CREATED)]
    assert event == Event(EventName.MESSAGE_CREATED, "ses_1", {"message_id": "msg_1"})


def test_subscription_by_name_filters_and_wildcard_gets_everything() -> None:
    bus = EventBus()
    retries: list[Event] = []
    everything: list[Event] = []
    bus.subscribe(retries.append, EventName.LLM_RETRY)
    bus.subscribe(everything.append)
    bus.publish(EventName.MESSAGE_CREATED, "ses_1")
    bus.publish(EventName.LLM_RETRY, "ses_1", attempt=1)
    assert [event.name for event in retries] == [EventName.LLM_RETRY]
    assert retries[0].payload == {"attempt": 1}
    assert [event.name for event in everything] == [EventName.MESSAGE_CREATED, EventName.LLM_RETRY]


def test_unsubscribe_stops_delivery() -> None:
    bus = EventBus()
    seen: list[Event] = []
    unsubscribe = bus.subscribe(seen.append)
    bus.publish(EventName.SESSION_CREATED, "ses_1")
    unsubscribe()
    unsubscribe()  # twice is harmless
    bus.publish(EventName.SESSION_CLOSED, "ses_1")
    assert [event.name for event in seen] == [EventName.SESSION_CREATED]


def test_a_failing_sync_handler_is_logged_and_never_reaches_the_publisher(
    caplog: pytest.LogCaptureFixture,
) -> None:
    bus = EventBus()
    after: list[Event] = []

    def broken(event: Event) -> None:
        raise RuntimeError("handler bug")

    bus.subscribe(broken)
    bus.subscribe(after.append)
    with caplog.at_level(logging.ERROR, logger="lossless.events"):
        bus.publish(EventName.TOOL_UPDATED, "ses_1", call_id="c1")
    assert len(after) == 1, "a handler after the failing one still runs"
    failures = [record for record in caplog.records if record.name == "lossless.events"]
    assert len(failures) == 1
    assert failures[0].exc_info is not None and "handler bug" in str(failures[0].exc_info[1])


async def test_async_handlers_run_as_tasks_in_the_task_group() -> None:
    seen: list[Event] = []
    started = anyio.Event()

    async def handler(event: Event) -> None:
        started.set()
        await anyio.lowlevel.checkpoint()
        seen.append(event)

    async with anyio.create_task_group() as tg:
        bus = EventBus(spawner=tg)
        bus.subscribe(handler)
        bus.publish(EventName.COMPACTION_TRIGGERED, "ses_1", view_tokens=10)
        assert not started.is_set(), "an async handler must not run inline"
        with anyio.fail_after(2):
            await started.wait()
    assert [event.payload for event in seen] == [{"view_tokens": 10}]


async def test_a_failing_async_handler_is_logged_and_the_task_group_survives(
    caplog: pytest.LogCaptureFixture,
) -> None:
    survivors: list[Event] = []

    async def broken(event: Event) -> None:
        await anyio.lowlevel.checkpoint()
        raise RuntimeError("async handler bug")

    async def fine(event: Event) -> None:
        await anyio.sleep(0.01)
        survivors.append(event)

    with caplog.at_level(logging.ERROR, logger="lossless.events"):
        async with anyio.create_task_group() as tg:
            bus = EventBus(spawner=tg)
            bus.subscribe(broken)
            bus.subscribe(fine)
            bus.publish(EventName.LLM_FAILED, "ses_1")
    assert len(survivors) == 1, "a sibling handler was cancelled by the failure"
    assert any("async handler bug" in str(r.exc_info[1]) for r in caplog.records if r.exc_info)


def test_async_handler_without_a_task_group_is_skipped_with_a_warning(
    caplog: pytest.LogCaptureFixture,
) -> None:
    called: list[Event] = []

    async def handler(event: Event) -> None:
        called.append(event)

    bus = EventBus()
    bus.subscribe(handler)
    with caplog.at_level(logging.WARNING, logger="lossless.events"):
        bus.publish(EventName.SESSION_CLOSED, "ses_1")
    assert called == []
    assert any("no task group" in record.getMessage() for record in caplog.records)


# -- the tape -------------------------------------------------------------------------


def test_every_event_goes_to_the_tape_before_handlers_run() -> None:
    tape = Tape()
    bus = EventBus(tape=tape)
    tape_size_seen_by_handler: list[int] = []
    bus.subscribe(lambda event: tape_size_seen_by_handler.append(len(tape.rows)))
    bus.publish(EventName.DOOM_LOOP_DETECTED, "ses_9", tool="read", repeats=3)
    bus.publish(EventName.SESSION_CLOSED, "ses_9")
    assert tape.rows == [
        ("ses_9", "doom_loop_detected", {"tool": "read", "repeats": 3}),
        ("ses_9", "session_closed", {}),
    ]
    assert tape_size_seen_by_handler == [1, 2]


def test_payloads_that_are_not_json_are_stored_as_text() -> None:
    tape = Tape()
    bus = EventBus(tape=tape)
    bus.publish(EventName.COMPACTION_COMPLETED, "ses_1", path=Path("/var/x"), ids={"a"})
    assert tape.rows[0][2] == {"path": "/var/x", "ids": "{'a'}"}


def test_a_failing_tape_is_logged_and_handlers_still_run(caplog: pytest.LogCaptureFixture) -> None:
    bus = EventBus(tape=Tape(fail=True))
    seen: list[Event] = []
    bus.subscribe(seen.append)
    with caplog.at_level(logging.ERROR, logger="lossless.events"):
        bus.publish(EventName.MESSAGE_CREATED, "ses_1")
    assert len(seen) == 1
    assert any("could not persist" in record.getMessage() for record in caplog.records)


def test_the_native_store_is_a_tape(tmp_path: Path) -> None:
    store = Store(tmp_path / "events.db")
    session_id = store.create_session("gpt-4o")
    bus = EventBus(tape=store.native)
    bus.publish(EventName.LLM_RETRY, session_id, attempt=1, reason="InternalServerError")
    bus.publish(EventName.LLM_RETRY, session_id, attempt=2, reason="Timeout")
    rows = store.events(session_id)
    assert [row["name"] for row in rows] == ["llm_retry", "llm_retry"]
    assert [json.loads(row["payload_json"])["attempt"] for row in rows] == [1, 2]
    assert rows[0]["seq"] < rows[1]["seq"]


# -- on a session ---------------------------------------------------------------------


async def test_session_events_are_all_on_the_tape_in_order(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    from lossless import ToolPart
    from lossless.errors import LLMError
    from lossless.session import Session

    published: list[Event] = []
    session = await Session.create(model=TEST_MODEL, db=db, config=config)
    session.events.subscribe(published.append)
    async with session:
        await session.record("user", "run the tool")
        await session.record(
            "assistant", [ToolPart("ls", "call_x", {"path": "."}, status="pending")]
        )
        await session.update_tool("call_x", status="running")
        await session.update_tool("call_x", status="completed", output="a.txt")
        await session.send("and now?")
        server.enqueue(Reply(status=500), Reply(text="recovered"))
        await session.send("retry please")
        server.enqueue(Reply(status=503), Reply(status=503))
        with pytest.raises(LLMError):
            await session.send("this one fails")

    tape = session.store.events(session.id)
    assert tape[0]["name"] == "session_created"
    assert [row["name"] for row in tape[1:]] == [event.name.value for event in published]
    assert [json.loads(row["payload_json"]) for row in tape[1:]] == [
        json.loads(json.dumps(event.payload, default=str)) for event in published
    ]
    names = [event.name for event in published]
    for expected in (
        EventName.MESSAGE_CREATED,
        EventName.TOOL_UPDATED,
        EventName.LLM_RETRY,
        EventName.STREAM_INCOMPLETE,
        EventName.LLM_FAILED,
        EventName.SESSION_CLOSED,
    ):
        assert expected in names, expected
    assert names[-1] is EventName.SESSION_CLOSED
    assert [
        event.payload["status"] for event in published if event.name is EventName.TOOL_UPDATED
    ] == [
        "running",
        "completed",
    ]


async def test_session_runs_async_handlers_in_its_task_group(session: Any) -> None:
    seen: list[Event] = []
    delivered = anyio.Event()

    async def handler(event: Event) -> None:
        await anyio.lowlevel.checkpoint()
        seen.append(event)
        delivered.set()

    session.events.subscribe(handler, EventName.MESSAGE_CREATED)
    result = await session.record("user", "hello")
    with anyio.fail_after(2):
        await delivered.wait()
    assert seen[0].payload == {"message_id": result.message_id, "role": "user"}


async def test_async_handlers_still_pending_finish_before_close_returns(
    config: Config, db: Path
) -> None:
    from lossless.session import Session

    finished: list[EventName] = []

    async def slow(event: Event) -> None:
        await anyio.sleep(0.05)
        finished.append(event.name)

    session = await Session.create(model=TEST_MODEL, db=db, config=config)
    session.events.subscribe(slow, EventName.MESSAGE_CREATED)
    await session.record("user", "hello")
    await session.close()
    assert finished == [EventName.MESSAGE_CREATED]


async def test_a_failing_handler_does_not_break_a_send(
    session: Any, caplog: pytest.LogCaptureFixture
) -> None:
    def broken(event: Event) -> None:
        raise RuntimeError("subscriber bug")

    async def broken_async(event: Event) -> None:
        raise RuntimeError("async subscriber bug")

    session.events.subscribe(broken)
    session.events.subscribe(broken_async)
    with caplog.at_level(logging.ERROR, logger="lossless.events"):
        result = await session.send("hello")
        await anyio.sleep(0.01)
    assert result.text == "ack: hello"
    assert [message.status for message in session.history()] == ["complete", "complete"]
    messages = [str(record.exc_info[1]) for record in caplog.records if record.exc_info]
    assert "subscriber bug" in messages
    assert "async subscriber bug" in messages


async def test_loading_a_session_appends_to_the_same_tape(config: Config, db: Path) -> None:
    from lossless.session import Session

    async with await Session.create(model=TEST_MODEL, db=db, config=config) as session:
        await session.record("user", "hello")
    async with await Session.load(session.id, db=db, config=config) as loaded:
        pass
    names = [row["name"] for row in loaded.store.events(session.id)]
    assert names == [
        "session_created",
        "message_created",
        "session_closed",
        "session_loaded",
        "session_closed",
    ]
    assert Store(db).events(session.id) == loaded.store.events(session.id)
