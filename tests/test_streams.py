"""A streamed reply is never lost: cancellation, exceptions and kills keep what streamed,
and only the process streaming a reply (or a successor once it is gone) closes it."""

from __future__ import annotations

import os
import signal
import subprocess
import sys
import textwrap
from pathlib import Path

import anyio
import pytest

from conftest import TEST_MODEL, make_config
from lossless import Session, TextPart
from lossless.config import Config
from lossless.testing import LocalLLMServer, Reply

pytestmark = [pytest.mark.anyio, pytest.mark.both_backends]

# 600 words, streamed three words a chunk: 200 chunks.
REPLY = " ".join(f"word{index}" for index in range(600))


def streaming(delay_s: float) -> Reply:
    return Reply(text=REPLY, chunk_delay_s=delay_s)


def stored_reply(session: Session) -> tuple[str, str, str | None]:
    """The last assistant message: its status, text and finish reason."""
    message = [m for m in session.history() if m.role == "assistant"][-1]
    return message.status, message.text, message.usage.get("finish_reason")


async def test_a_cancelled_send_keeps_what_reached_the_caller(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    server.enqueue(streaming(0.01))
    received: list[str] = []

    async with Session.open(model=TEST_MODEL, db=db, config=config) as session:
        with anyio.CancelScope() as scope:

            def collect(part: object) -> None:
                assert isinstance(part, TextPart)
                if not received:
                    # A timeout, as agent loops set one, counted from the first text.
                    scope.deadline = anyio.current_time() + 0.5
                received.append(part.text)

            await session.send("write at length", on_part=collect)
        assert scope.cancelled_caught
        status, text, reason = stored_reply(session)
    seen = "".join(received)
    assert seen, "text reached the caller before the timeout"
    assert status == "incomplete" and reason == "cancelled"
    # The stored text holds everything the caller saw (the checkpoint is updated
    # before a delta is handed over), and at most the one delta in flight beyond it.
    assert text.startswith(seen) and REPLY.startswith(text)
    assert len(text) - len(seen) <= len(" word000 word000 word000")


async def test_an_interrupt_during_a_stream_keeps_what_streamed(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    server.enqueue(streaming(0.0))
    chunks = 0

    def interrupt(part: object) -> None:
        nonlocal chunks
        chunks += 1
        if chunks == 20:
            raise KeyboardInterrupt

    async with Session.open(model=TEST_MODEL, db=db, config=config) as session:
        with pytest.raises(KeyboardInterrupt):
            await session.send("write at length", on_part=interrupt)
        status, text, _ = stored_reply(session)
    assert status == "incomplete"
    assert REPLY.startswith(text) and len(text.split()) >= 57


async def test_a_reply_is_checkpointed_while_it_streams(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    server.enqueue(streaming(0.01))
    seen: list[int] = []
    async with Session.open(model=TEST_MODEL, db=db, config=config) as session:

        async def watch(part: object) -> None:
            streams = session.store.streams(session.id)
            if streams:
                seen.append(streams[0]["chars"])

        result = await session.send("write at length", on_part=watch)
        assert result.text == REPLY
        assert session.store.streams(session.id) == [], "a finished reply keeps no checkpoint"
    # Checkpoints every 0.25 s over a stream of about 2 s: the stored text grew.
    assert len(set(seen)) >= 3 and seen == sorted(seen)


_CHILD = textwrap.dedent(
    """
    import os, sys, anyio
    os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"
    from lossless import Session
    from lossless.config import Config

    config = Config.model_validate_json(sys.argv[3])

    async def main() -> None:
        async with Session.open(model=sys.argv[2], db=sys.argv[1], config=config) as session:
            print(session.id, flush=True)
            seen = []

            def report(part) -> None:
                seen.append(part.text)
                print(len("".join(seen)), flush=True)

            await session.send("write at length", on_part=report)
            print("done", flush=True)

    anyio.run(main)
    """
)


def _child(db: Path, config: Config) -> subprocess.Popen[str]:
    return subprocess.Popen(
        [sys.executable, "-c", _CHILD, str(db), TEST_MODEL, config.model_dump_json()],
        stdout=subprocess.PIPE,
        text=True,
        cwd=Path(__file__).resolve().parent.parent,
    )


def _read_until(child: subprocess.Popen[str], chars: int) -> str:
    """The child's session id, once it reported ``chars`` characters streamed."""
    assert child.stdout is not None
    session_id = child.stdout.readline().strip()
    while True:
        line = child.stdout.readline().strip()
        assert line, "the child ended early"
        if line != "done" and int(line) >= chars:
            return session_id


async def test_a_killed_stream_keeps_its_last_checkpoint(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    server.enqueue(streaming(0.01))
    child = _child(db, config)
    try:
        session_id = _read_until(child, 1_000)
        # Streaming goes on; a checkpoint of at least these 1,000 characters is due
        # within the checkpoint interval.
        await anyio.sleep(config.store.checkpoint_interval_s * 3)
        os.kill(child.pid, signal.SIGKILL)
    finally:
        child.wait()
    async with Session.open(model=TEST_MODEL, db=db, session_id=session_id) as session:
        status, text, reason = stored_reply(session)
        assert status == "incomplete" and reason == "interrupted"
        assert REPLY.startswith(text) and len(text) >= 1_000
        assert session.store.streams(session.id) == []


async def test_a_second_process_leaves_a_live_stream_to_its_owner(
    server: LocalLLMServer, config: Config, db: Path
) -> None:
    server.enqueue(streaming(0.005))
    child = _child(db, config)
    try:
        session_id = _read_until(child, 200)
        async with Session.open(model=TEST_MODEL, db=db, session_id=session_id) as session:
            assert [row["chars"] >= 0 for row in session.store.streams(session.id)] == [True]
        assert child.stdout is not None
        assert child.stdout.read().strip().endswith("done")
    finally:
        child.wait()
    assert child.returncode == 0
    async with Session.open(model=TEST_MODEL, db=db, session_id=session_id) as session:
        assert stored_reply(session) == ("complete", REPLY, "stop")


async def test_a_stream_on_another_host_is_closed_once_it_is_stale(
    server: LocalLLMServer, db: Path
) -> None:
    config = make_config(server)
    async with Session.open(model=TEST_MODEL, db=db, config=config) as session:
        native = session.store
        message_id = native.begin_message(session.id, "assistant", None, "elsewhere:1:abcd")
        native.checkpoint_message(message_id, "elsewhere:1:abcd", "half a reply")
        session_id = session.id
    async with Session.open(model=TEST_MODEL, db=db, session_id=session_id) as session:
        assert [row["message_id"] for row in session.store.streams(session_id)] == [message_id]
    stale = config.model_copy(
        update={"store": config.store.model_copy(update={"stream_stale_s": 0.001})}
    )
    await anyio.sleep(0.01)
    async with Session.open(
        model=TEST_MODEL, db=db, session_id=session_id, config=stale
    ) as session:
        assert session.store.streams(session_id) == []
        assert stored_reply(session) == ("incomplete", "half a reply", "interrupted")
