"""What the session ledger costs a compaction round: a 1,000-message agent session
(tool calls with 1-6 KB outputs, user messages stating rules, limits and values) is
recorded once without the ledger, then compacted once (``compact()``) on fresh
copies, with the ledger on and off: with it, the round reads every message
compaction has taken out of the view so far (about all of them) into the ledger,
folds and renders it, in the round's own transaction.

Printed: the median round with and without the ledger over five copies, and the
ledger's share. The reading alone in the core, per 1,000 messages, is
``cargo bench -p lossless-core --bench ledger``.
"""

from __future__ import annotations

import os

os.environ.setdefault("LITELLM_LOCAL_MODEL_COST_MAP", "True")

import shutil
import statistics
import time
from pathlib import Path

import anyio
import pytest

from lossless.config import ArenaConfig, Config, ModelConfig
from lossless.session import Session
from lossless.testing.canaries import canary_session

MODEL = "gpt-4o"
MESSAGES = 1_000
COPIES = 5


def _config(ledger: bool) -> Config:
    return Config(model=ModelConfig(context_limit=128_000), arena=ArenaConfig(ledger=ledger))


async def _record(db: Path) -> str:
    canaries = canary_session(11, messages=MESSAGES)
    # Recorded without the ledger: the timed round with it reads every message
    # compaction has taken out of the view, about all of them.
    async with Session.open(model=MODEL, db=db, config=_config(False)) as session:
        for step in canaries.steps:
            await session.record_messages(step)
        # Background rounds of its own soft limit are done before the copies.
        await session.compaction.wait_for_pending()
        return session.id


async def _round(db: Path, session_id: str, ledger: bool) -> tuple[float, int]:
    async with Session.open(
        model=MODEL, db=db, config=_config(ledger), session_id=session_id
    ) as session:
        started = time.perf_counter()
        await session.compact()
        seconds = time.perf_counter() - started
        await session.compaction.wait_for_pending()
        # Counted in the ledger, not in the result: under load a round the session
        # starts by itself can read the messages first.
        return seconds, len(await session.ledger.items())


@pytest.mark.timeout(600)
def test_a_round_with_and_without_the_ledger(tmp_path: Path) -> None:
    source = tmp_path / "source.db"
    session_id = anyio.run(_record, source)
    timings: dict[bool, list[float]] = {True: [], False: []}
    added = 0
    for copy in range(COPIES):
        for ledger in (True, False):
            db = tmp_path / f"copy-{copy}-{ledger}.db"
            shutil.copy(source, db)
            seconds, items = anyio.run(_round, db, session_id, ledger)
            timings[ledger].append(seconds)
            added = max(added, items)
    on, off = (statistics.median(timings[flag]) for flag in (True, False))
    print(
        f"\ncompact() over {MESSAGES:,} messages: {on * 1e3:.1f} ms with the ledger "
        f"({added} live items), {off * 1e3:.1f} ms without; the ledger adds "
        f"{(on - off) * 1e3:.1f} ms ({(on - off) / off:.0%})"
    )
    assert added > 0, "the round read items into the ledger"
