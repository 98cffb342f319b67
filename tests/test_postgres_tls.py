"""PostgreSQL over TLS: a throwaway cluster that takes TCP connections over TLS only,
with a certificate for ``localhost`` signed by a CA made for the test. Every
connection goes to 127.0.0.1; a URL's host name is what the certificate is checked
against."""

from __future__ import annotations

from collections.abc import Iterator
from pathlib import Path

import pytest

from conftest import TEST_MODEL, make_config
from lossless import Session, Store
from lossless.errors import AccessDeniedError, InvalidInputError, StoreError, TlsError
from lossless.recall import grep
from lossless.testing import LocalLLMServer
from lossless.testing.postgres import PostgresCluster, make_certificates


@pytest.fixture(scope="module")
def cluster() -> Iterator[PostgresCluster]:
    with PostgresCluster(tls=True) as started:
        yield started


@pytest.fixture
def database(cluster: PostgresCluster) -> Iterator[str]:
    name = cluster.create_database()
    yield name
    cluster.drop_database(name)


def connections_over_tls(cluster: PostgresCluster, database: str) -> list[str]:
    """Whether each connection of the application's role to ``database`` uses TLS."""
    rows = cluster.psql(
        "SELECT ssl FROM pg_stat_ssl JOIN pg_stat_activity USING (pid) "
        f"WHERE usename = '{cluster.user}' AND datname = '{database}'"
    )
    return rows.split()


@pytest.mark.anyio
async def test_verify_full_with_the_right_root_stores_and_reads_a_session(
    cluster: PostgresCluster, database: str, server: LocalLLMServer
) -> None:
    url = cluster.url(
        database, host="localhost", sslmode="verify-full", sslrootcert=str(cluster.tls.ca_cert)
    )
    async with Session.open(model=TEST_MODEL, db=url, config=make_config(server)) as session:
        await session.record("user", "The settlement batch runs at 02:00 UTC.")
        await session.record("assistant", "Noted: settlement at 02:00 UTC.")
        # The session's two connections, both encrypted.
        assert connections_over_tls(cluster, database) == ["t", "t"]
        session_id = session.id
    store = Store(url)
    assert [m.role for m in store.history(session_id)] == ["user", "assistant"]
    hits = grep("settlement", db=store)
    assert {hit.session_id for hit in hits} == {session_id}


@pytest.mark.parametrize("mode", ["require", "prefer", "allow", None])
def test_require_prefer_and_allow_encrypt_without_checking(
    cluster: PostgresCluster, database: str, mode: str | None
) -> None:
    params = {"sslmode": mode} if mode is not None else {}
    store = Store(cluster.url(database, **params))
    assert store.sessions() == []
    assert connections_over_tls(cluster, database) == ["t"]


def test_verify_full_against_another_host_name_is_a_tls_error(
    cluster: PostgresCluster, database: str
) -> None:
    # The certificate names localhost only; the URL names the server by address.
    url = cluster.url(database, sslmode="verify-full", sslrootcert=str(cluster.tls.ca_cert))
    with pytest.raises(TlsError) as refused:
        Store(url)
    text = str(refused.value)
    assert "certificate does not verify: IP address mismatch" in text
    assert cluster.password not in text
    assert f"{cluster.user}:***@127.0.0.1" in text
    # verify-ca checks the chain only: the same URL connects.
    Store(url.replace("verify-full", "verify-ca"))


def test_verify_ca_with_another_authority_is_a_tls_error(
    cluster: PostgresCluster, database: str, tmp_path: Path
) -> None:
    stranger = make_certificates(tmp_path / "other")
    for mode in ("verify-ca", "verify-full", "require"):
        url = cluster.url(
            database, host="localhost", sslmode=mode, sslrootcert=str(stranger.ca_cert)
        )
        with pytest.raises(TlsError, match="issuer is not a root of sslrootcert") as refused:
            Store(url)
        assert cluster.password not in str(refused.value)
        assert isinstance(refused.value, StoreError)


def test_disable_against_a_tls_only_server_says_so(cluster: PostgresCluster, database: str) -> None:
    with pytest.raises(AccessDeniedError, match="TLS only") as refused:
        Store(cluster.url(database, sslmode="disable"))
    text = str(refused.value)
    assert "no encryption" in text
    assert cluster.password not in text and f"{cluster.user}:***@" in text


def test_a_plain_server_keeps_working_and_refuses_require(
    postgres_cluster: PostgresCluster, postgres_url: str
) -> None:
    # The suite's own cluster speaks no TLS: the default mode connects in the clear.
    assert Store(postgres_url).sessions() == []
    with pytest.raises(TlsError, match="server does not support TLS") as refused:
        Store(f"{postgres_url}?sslmode=require")
    assert postgres_cluster.password not in str(refused.value)


def test_bad_tls_parameters_are_refused_before_connecting(
    cluster: PostgresCluster, database: str, tmp_path: Path
) -> None:
    with pytest.raises(InvalidInputError, match="sslmode=strict is not one of") as refused:
        Store(cluster.url(database, sslmode="strict"))
    assert cluster.password not in str(refused.value)
    missing = tmp_path / "missing.pem"
    with pytest.raises(InvalidInputError, match="sslrootcert"):
        Store(cluster.url(database, sslmode="verify-ca", sslrootcert=str(missing)))
    garbage = tmp_path / "garbage.pem"
    garbage.write_text("not a certificate\n")
    with pytest.raises(InvalidInputError, match="not a PEM file of certificates"):
        Store(cluster.url(database, sslmode="verify-ca", sslrootcert=str(garbage)))


def test_a_client_certificate_is_presented_where_the_server_asks_for_one(
    cluster: PostgresCluster,
) -> None:
    name = cluster.create_database(cluster.client_cert_database)
    try:
        roots = {"sslrootcert": str(cluster.tls.ca_cert)}
        bare = cluster.url(name, host="localhost", sslmode="verify-full", **roots)
        with pytest.raises(AccessDeniedError, match="certificate"):
            Store(bare)
        certified = cluster.url(
            name,
            host="localhost",
            sslmode="verify-full",
            sslcert=str(cluster.tls.client_cert),
            sslkey=str(cluster.tls.client_key),
            **roots,
        )
        assert Store(certified).sessions() == []
    finally:
        cluster.drop_database(name)
