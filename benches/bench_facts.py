"""200 facts planted in a 5,000-message agent session with default compaction, each
asked for as a question: how many `grep` puts in its top 5 and how many are read
back (in the active context, or in `expand(covering, around=hit, max_tokens=4,000)`).
Target: 200 of 200. The timed figure is 20 questions' greps."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import anyio
import pytest

from lossless.recall import grep
from lossless.session import Session
from lossless.testing.facts import check_facts, fact_session, record_facts


@pytest.mark.benchmark(group="recall-facts")
@pytest.mark.timeout(900)
def test_planted_facts_are_found_and_read_back(benchmark: Any, record: Any, tmp_path: Path) -> None:
    turns, facts = fact_session(5_000, 200, seed=23)
    outcome: dict[str, Any] = {}

    async def main() -> None:
        async with Session.open(model="gpt-4o", db=tmp_path / "facts.db") as session:
            planted = await record_facts(session, turns, facts)
            report = check_facts(session, planted)
            questions = [fact.question for fact in planted]
            # The timed part: one question's grep, as an agent asks it.
            outcome["grep"] = lambda: [grep(q, session=session, limit=5) for q in questions[:20]]
            benchmark.pedantic(outcome["grep"], rounds=3, iterations=1)
            outcome["report"] = report
            outcome["summaries"] = len(session.store.live_summaries(session.id))

    anyio.run(main)
    report = outcome["report"]
    print(
        f"\nplanted facts: {report.found} of 200 in grep's top 5, {report.read_back} read back "
        f"({report.in_context} still in context); {outcome['summaries']} live summaries"
    )
    record(
        benchmark,
        "planted facts, 20 questions (5,000 messages)",
        target="200 of 200 found and read back",
        found=report.found,
        read_back=report.read_back,
    )
    assert report.found == report.read_back == 200, report.failures[:5]
