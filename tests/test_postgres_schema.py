"""Preparing the lossless schema on a real PostgreSQL server, and its typed errors."""

from __future__ import annotations

import socket

import pytest

from lossless.errors import (
    AccessDeniedError,
    ImmutableRowError,
    InvalidInputError,
    NotADatabaseError,
    SchemaVersionError,
    StoreError,
)
from lossless.store import prepare_postgres
from lossless.testing.postgres import PostgresCluster

SCHEMA_VERSION = 15


def _database(url: str) -> str:
    return url.rsplit("/", 1)[1]


def test_a_new_database_gets_the_schema_once(
    postgres_cluster: PostgresCluster, postgres_url: str
) -> None:
    assert prepare_postgres(postgres_url) == SCHEMA_VERSION
    assert prepare_postgres(postgres_url) == SCHEMA_VERSION
    database = _database(postgres_url)
    assert postgres_cluster.psql("SELECT version FROM lossless_schema", database) == str(
        SCHEMA_VERSION
    )
    tables = postgres_cluster.psql(
        "SELECT count(*) FROM pg_tables WHERE schemaname = 'public'", database
    )
    assert int(tables) >= 20


def test_stored_rows_refuse_changes_from_any_client(
    postgres_cluster: PostgresCluster, postgres_url: str
) -> None:
    prepare_postgres(postgres_url)
    database = _database(postgres_url)
    postgres_cluster.psql(
        "INSERT INTO sessions (id, model, created_at, config) VALUES ('ses_1', 'm', 1, '{}')",
        database,
    )
    with pytest.raises(Exception, match="lossless: append-only"):
        postgres_cluster.psql("DELETE FROM sessions", database)
    with pytest.raises(Exception, match="lossless: append-only"):
        postgres_cluster.psql("UPDATE sessions SET model = 'other'", database)
    assert postgres_cluster.psql("SELECT model FROM sessions", database) == "m"
    # The error class the store's own writes would meet.
    assert issubclass(ImmutableRowError, StoreError)


def test_wrong_credentials_are_an_access_error_without_the_password(
    postgres_cluster: PostgresCluster, postgres_url: str
) -> None:
    url = postgres_cluster.url(_database(postgres_url), password="hunter2-wrong")
    with pytest.raises(AccessDeniedError) as raised:
        prepare_postgres(url)
    assert isinstance(raised.value, PermissionError)
    text = str(raised.value)
    assert "password authentication failed" in text
    assert "hunter2-wrong" not in text and postgres_cluster.password not in text
    assert f"{postgres_cluster.user}:***@127.0.0.1" in text


def test_an_unreachable_server_is_a_store_error_naming_the_url() -> None:
    with socket.socket() as probe:
        probe.bind(("127.0.0.1", 0))
        port = probe.getsockname()[1]
    with pytest.raises(StoreError) as raised:
        prepare_postgres(f"postgresql://app:s3cret-pw@127.0.0.1:{port}/lossless")
    text = str(raised.value)
    assert f"postgresql://app:***@127.0.0.1:{port}/lossless" in text
    assert "s3cret-pw" not in text


def test_a_database_of_another_application_is_refused(
    postgres_cluster: PostgresCluster, postgres_url: str
) -> None:
    database = _database(postgres_url)
    postgres_cluster.psql("CREATE TABLE invoices (id int)", database)
    with pytest.raises(NotADatabaseError, match="another application"):
        prepare_postgres(postgres_url)
    assert postgres_cluster.psql("SELECT to_regclass('sessions') IS NULL", database) == "t"


def test_a_schema_written_by_a_newer_lossless_is_refused(
    postgres_cluster: PostgresCluster, postgres_url: str
) -> None:
    prepare_postgres(postgres_url)
    postgres_cluster.psql("UPDATE lossless_schema SET version = 42", _database(postgres_url))
    with pytest.raises(SchemaVersionError, match="schema version 42 is newer"):
        prepare_postgres(postgres_url)


@pytest.mark.parametrize("url", ["lossless.db", "host=127.0.0.1 dbname=x", 7])
def test_what_is_not_a_postgresql_url_is_invalid_input(url: object) -> None:
    with pytest.raises(InvalidInputError):
        prepare_postgres(url)  # type: ignore[arg-type]
