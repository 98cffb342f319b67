"""Shared fixtures: the local OpenAI-compatible server and a Config pointing litellm at it."""

from __future__ import annotations

import os
import sqlite3
import subprocess
import sys
import textwrap

# litellm fetches its model price map over the network at import unless told otherwise;
# the machines running these tests have no internet.
os.environ["LITELLM_LOCAL_MODEL_COST_MAP"] = "True"

from collections.abc import AsyncIterator, Callable, Iterable, Iterator, Sequence
from pathlib import Path
from typing import Any

import pytest

from lossless.config import CompactionConfig, Config, LLMConfig, ModelConfig
from lossless.testing import LocalLLMServer
from lossless.testing.postgres import PostgresCluster, find_bindir

# Any name works with the local server; "openai/" routes litellm to an
# OpenAI-compatible endpoint. The name is not in litellm's model map, so the limits
# come from the config overrides below.
TEST_MODEL = "openai/lossless-test"
CONTEXT_LIMIT = 32_000
MAX_OUTPUT_TOKENS = 1_000


@pytest.fixture
def anyio_backend() -> str:
    return "asyncio"


@pytest.fixture
def server() -> Iterator[LocalLLMServer]:
    with LocalLLMServer() as srv:
        yield srv


def make_config(server: LocalLLMServer, **sections: Any) -> Config:
    """A Config for ``server``: model limits overridden, fast retries, short timeout.

    Keyword arguments replace whole sections or top-level fields (``compaction=...``,
    ``doom_loop_threshold=...``); ``llm_overrides`` updates single LLM fields.
    """
    llm_overrides: dict[str, Any] = sections.pop("llm_overrides", {})
    llm_values: dict[str, Any] = {
        "api_base": server.base_url,
        "api_key": "test",
        "timeout_s": 5.0,
        "num_retries": 1,
        "retry_backoff_s": 0.01,
    }
    llm = LLMConfig(**{**llm_values, **llm_overrides})
    values: dict[str, Any] = {
        # Exact counts: tests of the calibration turn it on themselves.
        "model": ModelConfig(
            context_limit=CONTEXT_LIMIT, max_output_tokens=MAX_OUTPUT_TOKENS, token_correction=1.0
        ),
        "llm": llm,
        "compaction": CompactionConfig(output_budget=1_000),
    }
    values.update(sections)
    # The local server stands in for every provider, hosted ones included: requests
    # are rendered as for them unless a test chooses a profile (``auto`` would pick
    # the alternating one for a server behind an ``api_base``).
    model = values["model"]
    if "profile" not in model.model_fields_set:
        values["model"] = model.model_copy(update={"profile": "default"})
    return Config(**values)


@pytest.fixture
def config(server: LocalLLMServer) -> Config:
    return make_config(server)


BACKENDS = ("sqlite", "postgres")


def pytest_generate_tests(metafunc: pytest.Metafunc) -> None:
    """Runs each test of a ``both_backends`` module (or class) that uses the database
    once on a SQLite file and once on a PostgreSQL database, unless it is marked
    ``sqlite_only`` with the reason it depends on the file."""
    if "database" not in metafunc.fixturenames:
        return
    if metafunc.definition.get_closest_marker("both_backends") is None:
        return
    only = metafunc.definition.get_closest_marker("sqlite_only")
    if only is not None:
        if not (only.args or only.kwargs.get("reason")):
            raise pytest.UsageError(f"{metafunc.definition.nodeid}: sqlite_only needs a reason")
        return
    metafunc.parametrize("database", BACKENDS, indirect=True, ids=BACKENDS)


@pytest.fixture
def database(request: pytest.FixtureRequest, tmp_path: Path) -> Path | str:
    """Where this test stores its sessions: a SQLite file by default, or, for the
    ``postgres`` run of a ``both_backends`` test, the URL of a fresh database that
    already has the schema."""
    if getattr(request, "param", "sqlite") == "sqlite":
        return tmp_path / "lossless.db"
    return str(request.getfixturevalue("postgres_schema_url"))


@pytest.fixture
def db(database: Path | str) -> Path | str:
    return database


@pytest.fixture(scope="session")
def postgres_cluster() -> Iterator[PostgresCluster]:
    """One throwaway PostgreSQL cluster for the whole test session, started the first
    time a test asks for it."""
    with PostgresCluster() as cluster:
        yield cluster


@pytest.fixture
def postgres_url(postgres_cluster: PostgresCluster) -> Iterator[str]:
    """The URL of a fresh, empty database for this test, dropped afterwards."""
    name = postgres_cluster.create_database()
    yield postgres_cluster.url(name)
    postgres_cluster.drop_database(name)


@pytest.fixture(scope="session")
def postgres_schema_template(postgres_cluster: PostgresCluster) -> str:
    """A database holding the store's schema and nothing else, made once: copying it is
    cheaper than creating the schema (tables, triggers, functions) for every test."""
    from lossless import Store

    name = postgres_cluster.create_database("lossless_schema_template")
    Store(postgres_cluster.url(name))
    postgres_cluster.seal_template(name)
    return name


@pytest.fixture
def postgres_schema_url(
    postgres_cluster: PostgresCluster, postgres_schema_template: str
) -> Iterator[str]:
    """The URL of a fresh database with the current schema and no sessions, dropped
    afterwards."""
    name = postgres_cluster.create_database(template=postgres_schema_template)
    yield postgres_cluster.url(name)
    postgres_cluster.drop_database(name)


@pytest.fixture
def config_for(server: LocalLLMServer) -> Callable[..., Config]:
    """Build a variant of the default test config: ``config_for(compaction=...)``."""
    return lambda **sections: make_config(server, **sections)


@pytest.fixture
async def session(config: Config, db: Path) -> AsyncIterator[Any]:
    from lossless.session import Session

    async with await Session.create(model=TEST_MODEL, db=db, config=config) as sess:
        yield sess


def sql_rows(database: Path | str, sql: str) -> list[tuple[str, ...]]:
    """Runs ``sql`` on a test's database from outside the library (sqlite3 on a file,
    psql on a URL) and returns its rows, each value as text (NULL as ""). For reads:
    the sqlite3 module closes its connection when done, and, not seeing the locks of
    the store's own SQLite library, may reset the log that store still uses."""
    if isinstance(database, Path):
        with sqlite3.connect(database, isolation_level=None) as conn:
            rows = conn.execute(sql).fetchall()
        return [tuple("" if value is None else str(value) for value in row) for row in rows]
    options = ["-X", "-q", "-A", "-t", "-F", "\x1f", "-v", "ON_ERROR_STOP=1"]
    done = subprocess.run(
        [str(find_bindir() / "psql"), *options, "-d", database, "-c", sql],
        capture_output=True,
        text=True,
        check=True,
        timeout=60,
    )
    return [tuple(line.split("\x1f")) for line in done.stdout.splitlines() if line]


def view_coverage(
    rows: Callable[[str], Iterable[Sequence[Any]]], session_id: str
) -> dict[str, int]:
    """How many times each complete message of ``session_id`` is in its view: itself,
    or under a live summary (through any depth of summaries). ``rows`` runs a query
    on the database from outside the library."""
    edges: dict[str, list[tuple[str, str]]] = {}
    for summary_id, source_id, kind in rows(
        "SELECT summary_id, source_id, source_kind FROM summary_sources"
    ):
        edges.setdefault(summary_id, []).append((source_id, kind))
    counts = {
        row[0]: 0
        for row in rows(
            f"SELECT id FROM messages WHERE session_id = '{session_id}' AND status = 'complete'"
        )
    }

    def walk(summary_id: str) -> Iterator[str]:
        for source_id, kind in edges.get(summary_id, ()):
            if kind == "message":
                yield source_id
            else:
                yield from walk(source_id)

    for kind, item_id in rows(
        f"SELECT kind, item_id FROM context_items WHERE session_id = '{session_id}'"
    ):
        for message_id in [item_id] if kind == "message" else list(walk(item_id)):
            counts[message_id] = counts.get(message_id, 0) + 1
    return counts


def run_python(code: str, cwd: Path) -> subprocess.CompletedProcess[str]:
    """Runs ``code`` (dedented) in a fresh interpreter in ``cwd``, output captured."""
    env = {**os.environ, "LITELLM_LOCAL_MODEL_COST_MAP": "True"}
    return subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        env=env,
        capture_output=True,
        text=True,
        timeout=120,
    )
