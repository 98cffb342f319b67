"""A session on a PostgreSQL URL, end to end through the public API and the local
model server: turns, tool results, the assembled context, a compaction round,
recall from a second worker, and the same on SQLite for comparison."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from conftest import TEST_MODEL
from lossless import Store, ToolPart, recall
from lossless.config import Config
from lossless.errors import AccessDeniedError
from lossless.session import Session
from lossless.store import database_path
from lossless.testing import LocalLLMServer
from test_compaction import LIMITS, compaction, stuff

pytestmark = [
    pytest.mark.anyio,
    pytest.mark.filterwarnings("ignore::UserWarning"),
    pytest.mark.both_backends,
]


async def test_a_session_turn_path_works_on_both_backends(
    server: LocalLLMServer, config: Config, database: Path | str
) -> None:
    async with await Session.create(
        model=TEST_MODEL, db=database, config=config, system_prompt="Be brief."
    ) as session:
        result = await session.send("where is the ledger module?")
        assert result.text == "ack: where is the ledger module?"
        call = ToolPart("grep", "call_1", {"pattern": "ledger"}, status="pending")
        await session.record("assistant", [call])
        await session.update_tool("call_1", status="completed", output="src/ledger.py:12")
        context = session.build_context()
        assert "src/ledger.py:12" in str(context)
        first = [(m.role, m.status) for m in session.history()]
        assert first == [
            ("user", "complete"),
            ("assistant", "complete"),
            ("assistant", "complete"),
        ]

    # A second worker loads the session and sees every turn; recall finds them.
    async with await Session.load(session.id, db=database, config=config) as loaded:
        assert len(loaded.history()) == 3
        hits = recall.grep("ledger", db=database, session=session.id)
        assert {hit.owner_id for hit in hits} >= {loaded.history()[0].id}
        regex = recall.grep(r"src/\w+\.py", db=database, mode="regex")
        assert len(regex) == 1 and "src/ledger.py" in regex[0].snippet


async def test_a_compaction_round_on_both_backends(
    config_for: Callable[..., Config], database: Path | str
) -> None:
    config = config_for(model=LIMITS, compaction=compaction())
    async with await Session.create(model=TEST_MODEL, db=database, config=config) as session:
        stuff(session, 20)
        before = session.view_tokens()
        outcome = await session.compact()
        assert outcome.status == "completed", outcome.reason
        assert session.view_tokens() < before
        assert session.view_tokens() <= session.budget.soft_limit
        assert len(session.history()) == 40, "nothing stored is lost"
        leaf = session.store.describe(session.id)[-1]
        assert leaf["kind"] == "leaf"


def test_a_url_passes_through_and_its_password_stays_hidden(postgres_url: str) -> None:
    assert database_path(postgres_url) == postgres_url
    store = Store(postgres_url)
    assert store.create_session(TEST_MODEL).startswith("ses_")
    user, _, rest = postgres_url.partition("://")[2].partition(":")
    password = rest.split("@", 1)[0]
    wrong = postgres_url.replace(f":{password}@", ":not-the-password@")
    with pytest.raises(AccessDeniedError) as refused:
        Store(wrong)
    assert "not-the-password" not in str(refused.value)
    assert user


def test_the_cli_reads_a_postgres_database_named_by_url(postgres_url: str) -> None:
    from typer.testing import CliRunner

    from lossless.cli import app

    store = Store(postgres_url)
    session_id = store.create_session(TEST_MODEL)
    store.append(session_id, "user", "the ledger refund is settled")
    runner = CliRunner()
    env = {"LOSSLESS_DB": postgres_url, "NO_COLOR": "1", "COLUMNS": "200"}
    listed = runner.invoke(app, ["sessions"], env=env)
    assert listed.exit_code == 0, listed.output
    assert session_id in listed.stdout
    found = runner.invoke(app, ["grep", "refund"], env=env)
    assert found.exit_code == 0, found.output
    assert "no matches" not in found.stdout
    assert "the ledger refund is settled" in found.stdout, found.stdout
    stats = runner.invoke(app, ["stats"], env=env)
    assert stats.exit_code == 0, stats.output
    assert "file size" not in stats.stdout
    password = postgres_url.split("://", 1)[1].split("@", 1)[0].split(":", 1)[1]
    for result in (listed, found, stats):
        assert password not in result.stdout
