"""What reaches the caller when the PostgreSQL server fails a worker mid-way: the
connection ended while a write waits inside its transaction, and a session opened
on a server that cannot be reached or refuses the credentials. Each is a typed error
of ``lossless.errors`` naming the URL without its password, and nothing of the
failed write is stored."""

from __future__ import annotations

import socket
import threading
import time

import pytest

from conftest import TEST_MODEL, make_config
from lossless import Store
from lossless.errors import AccessDeniedError, LosslessError, StoreError
from lossless.session import Session
from lossless.testing import LocalLLMServer
from lossless.testing.postgres import PostgresCluster

pytestmark = [pytest.mark.filterwarnings("ignore::UserWarning")]


def _database(url: str) -> str:
    return url.rsplit("/", 1)[1]


def _waiting_backend(cluster: PostgresCluster, database: str) -> str:
    """The pid of the store's connection once it waits for a lock, inside its write."""
    deadline = time.monotonic() + 10
    while time.monotonic() < deadline:
        pid = cluster.psql(
            "SELECT pid FROM pg_stat_activity WHERE application_name = 'lossless' "
            f"AND datname = '{database}' AND wait_event_type = 'Lock'",
        )
        if pid:
            return pid
        time.sleep(0.02)
    raise AssertionError("the write never waited on the held lock")


def test_a_connection_ended_inside_a_write_is_a_store_error_and_writes_nothing(
    postgres_cluster: PostgresCluster, postgres_url: str
) -> None:
    database = _database(postgres_url)
    password = postgres_cluster.password
    store = Store(postgres_url)
    session_id = store.create_session(TEST_MODEL)
    store.append(session_id, "user", "the first turn is stored")
    # Another client holds the search backlog's table, which an append writes after
    # its message and parts: the append waits there, inside its transaction, until
    # its connection is ended under it.
    holder = threading.Thread(
        target=postgres_cluster.psql,
        args=(
            "BEGIN; LOCK TABLE search_backlog IN SHARE ROW EXCLUSIVE MODE; "
            "SELECT pg_sleep(3); ROLLBACK;",
            database,
        ),
    )
    holder.start()
    outcome: list[BaseException | None] = []

    def append() -> None:
        try:
            store.append(session_id, "user", "the second turn is cut off")
            outcome.append(None)
        except BaseException as err:
            outcome.append(err)

    writer = threading.Thread(target=append)
    # The holder's lock first, then the append that meets it.
    time.sleep(0.3)
    writer.start()
    pid = _waiting_backend(postgres_cluster, database)
    postgres_cluster.psql(f"SELECT pg_terminate_backend({pid})")
    writer.join(timeout=10)
    holder.join(timeout=10)
    (err,) = outcome
    assert isinstance(err, StoreError), repr(err)
    text = str(err)
    assert f"{postgres_cluster.user}:***@127.0.0.1" in text
    assert password not in text
    stored = postgres_cluster.psql(
        "SELECT count(*), count(*) FILTER (WHERE seq > 1) FROM messages", database
    )
    assert stored == "1|0", "the cut-off append left rows behind"
    parts = postgres_cluster.psql("SELECT count(*) FROM parts", database)
    assert parts == "1"
    # The store's next call fails the same typed way; a new connection goes on.
    with pytest.raises(StoreError) as again:
        store.append(session_id, "user", "on the ended connection")
    assert password not in str(again.value)
    Store(postgres_url).append(session_id, "user", "the second turn, again")
    assert postgres_cluster.psql("SELECT count(*) FROM messages", database) == "2"


async def _open_session(url: str, server: LocalLLMServer) -> None:
    async with await Session.create(model=TEST_MODEL, db=url, config=make_config(server)):
        pass


@pytest.mark.anyio
async def test_a_session_on_a_server_it_cannot_use_fails_typed_without_the_password(
    postgres_cluster: PostgresCluster, postgres_url: str, server: LocalLLMServer
) -> None:
    database = _database(postgres_url)
    wrong = postgres_cluster.url(database, password="not-the-secret-pw")
    with pytest.raises(AccessDeniedError) as refused:
        await _open_session(wrong, server)
    assert "not-the-secret-pw" not in str(refused.value)
    assert f"{postgres_cluster.user}:***@" in str(refused.value)
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    unreachable = f"postgresql://app:s3cret-pw@127.0.0.1:{port}/lossless"
    with pytest.raises(StoreError) as missing:
        await _open_session(unreachable, server)
    assert isinstance(missing.value, LosslessError)
    assert f"postgresql://app:***@127.0.0.1:{port}/lossless" in str(missing.value)
    assert "s3cret-pw" not in str(missing.value)
    # Neither attempt wrote anything.
    tables = postgres_cluster.psql(
        "SELECT count(*) FROM pg_tables WHERE tablename = 'sessions'", database
    )
    assert tables == "0"
