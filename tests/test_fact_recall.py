"""200 facts planted in a 5,000-message agent session with default compaction: each
is found by grep in the top 5 when asked as a question, and its text is in the
active context or in the focused expansion of the summary that covers it."""

from __future__ import annotations

from pathlib import Path

import pytest

from lossless.session import Session
from lossless.testing.facts import check_facts, fact_session, record_facts

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.both_backends,
]


@pytest.mark.timeout(600)
async def test_every_planted_fact_is_found_and_read_back(database: Path | str) -> None:
    turns, facts = fact_session(5_000, 200, seed=11)
    async with Session.open(model="gpt-4o", db=database) as session:
        planted = await record_facts(session, turns, facts)
        summaries = session.store.live_summaries(session.id)
        assert summaries, "compaction ran"
        report = check_facts(session, planted)
    assert report.failures == [], report.failures[:10]
    assert report.found == report.read_back == 200
    assert report.in_context < 200, "most facts were compacted out of view"
