"""Tenants on one PostgreSQL database: with row-level security on, a store opened
for one tenant cannot read, find, erase or write another's rows, through the
library or through raw SQL on its own connection; the same key, image and text may
be stored by both."""

from __future__ import annotations

import subprocess
from pathlib import Path

import pytest

from conftest import TEST_MODEL
from lossless import Session, Store, grep
from lossless.errors import InvalidInputError, SessionNotFoundError
from lossless.governance import erase
from lossless.parts import MediaPart
from lossless.store import enable_tenants, tenant_url
from lossless.testing import small_window
from lossless.testing.postgres import PostgresCluster
from test_media import png

pytestmark = pytest.mark.anyio

SECRET = "halibut-orchard-5512"


def _psql(cluster: PostgresCluster, url: str, sql: str) -> subprocess.CompletedProcess[str]:
    """``sql`` on the application role's own connection to ``url`` (not the
    superuser's, which row-level security does not hold)."""
    psql = str(cluster.bindir / "psql")
    return subprocess.run(
        [psql, "-X", "-q", "-A", "-t", "-d", url, "-c", sql],
        capture_output=True,
        text=True,
        check=False,
        timeout=60,
    )


async def test_two_tenants_on_one_database_never_see_each_other(
    postgres_cluster: PostgresCluster, postgres_schema_url: str
) -> None:
    enable_tenants(postgres_schema_url)
    enable_tenants(postgres_schema_url)  # again: nothing changes
    acme, globex = (tenant_url(postgres_schema_url, name) for name in ("acme", "globex"))
    image = png(8, 8, seed=3)
    ids = {}
    for url, word in ((acme, "acme"), (globex, "globex")):
        async with Session.open(
            model=TEST_MODEL, db=url, config=small_window(), key="support-thread"
        ) as s:
            await s.record("user", f"{word} says {SECRET}")
            await s.record("user", [MediaPart(data=image, media_type="image/png")])
            ids[word] = s.id
    a, g = Store(acme), Store(globex)
    assert [row.id for row in a.sessions()] == [ids["acme"]]
    assert [row.id for row in g.sessions()] == [ids["globex"]]
    assert {hit.session_id for hit in grep(SECRET, db=a)} == {ids["acme"]}
    assert {hit.session_id for hit in grep(SECRET, db=g)} == {ids["globex"]}
    with pytest.raises(SessionNotFoundError):
        await Session.load(ids["acme"], db=globex, config=small_window())
    with pytest.raises(SessionNotFoundError):
        erase(g, session=ids["acme"])
    # Raw SQL on a tenant's own connection: its rows only, and no write for another.
    count = _psql(postgres_cluster, globex, "SELECT count(*) FROM messages")
    assert count.stdout.strip() == "2", count
    texts = _psql(postgres_cluster, globex, "SELECT string_agg(body, ' ') FROM parts")
    assert "globex" in texts.stdout and "acme" not in texts.stdout
    forged = _psql(
        postgres_cluster,
        globex,
        "INSERT INTO sessions (id, model, created_at, config, tenant) "
        "VALUES ('ses_forged', 'm', 0, '{}', 'acme')",
    )
    assert forged.returncode != 0 and "row-level security" in forged.stderr
    # Erasing one tenant's session leaves the other's, image included.
    erase(a, session=ids["acme"])
    assert a.sessions() == [] and [row.id for row in g.sessions()] == [ids["globex"]]
    async with Session.open(model=TEST_MODEL, db=globex, session_id=ids["globex"]) as s:
        assert len(s.history()) == 2


def test_a_tenant_url_names_one_tenant(tmp_path: Path) -> None:
    url = "postgresql://app:secret@127.0.0.1:5432/agents?sslmode=require"
    tenant = tenant_url(url, "acme-eu")
    assert "sslmode=require" in tenant and "lossless.tenant%3Dacme-eu" in tenant
    assert tenant_url(tenant, "globex").count("lossless.tenant") == 1
    for bad in ("", "a b", "x" * 129, "semi;colon"):
        with pytest.raises(InvalidInputError):
            tenant_url(url, bad)
    with pytest.raises(InvalidInputError):
        tenant_url(str(tmp_path / "agents.db"), "acme")
