"""The throwaway PostgreSQL cluster of the test suite: real server, real roles."""

from __future__ import annotations

import signal
import socket
import subprocess
import sys
import time
from pathlib import Path

import pytest

from lossless.testing.postgres import PostgresCluster, PostgresUnavailableError, find_bindir


def _psql(cluster: PostgresCluster, url: str, sql: str) -> subprocess.CompletedProcess[str]:
    return subprocess.run(
        [str(cluster.bindir / "psql"), "-X", "-A", "-t", "-d", url, "-c", sql],
        capture_output=True,
        text=True,
        timeout=60,
        check=False,
    )


def test_a_fresh_database_is_empty_and_owned_by_the_application_role(
    postgres_cluster: PostgresCluster, postgres_url: str
) -> None:
    done = _psql(
        postgres_cluster,
        postgres_url,
        "SELECT current_user, pg_get_userbyid(datdba), "
        "(SELECT count(*) FROM pg_tables WHERE schemaname = 'public') "
        "FROM pg_database WHERE datname = current_database()",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == f"{postgres_cluster.user}|{postgres_cluster.user}|0"


def test_the_application_role_can_create_tables_in_its_database(
    postgres_cluster: PostgresCluster, postgres_url: str
) -> None:
    done = _psql(
        postgres_cluster,
        postgres_url,
        "CREATE TABLE t (x int); INSERT INTO t VALUES (7); SELECT x FROM t",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip().splitlines()[-1] == "7"


def test_a_wrong_password_is_refused(postgres_cluster: PostgresCluster, postgres_url: str) -> None:
    database = postgres_url.rsplit("/", 1)[1]
    done = _psql(postgres_cluster, postgres_cluster.url(database, password="wrong"), "SELECT 1")
    assert done.returncode != 0
    assert "password authentication failed" in done.stderr


def test_the_administrator_is_trusted_on_the_unix_socket(
    postgres_cluster: PostgresCluster,
) -> None:
    assert (postgres_cluster.socket_dir / f".s.PGSQL.{postgres_cluster.port}").exists()
    done = _psql(
        postgres_cluster,
        postgres_cluster.admin_url("postgres"),
        f"SELECT rolsuper FROM pg_roles WHERE rolname = '{postgres_cluster.admin}'",
    )
    assert done.returncode == 0, done.stderr
    assert done.stdout.strip() == "t"


def test_each_database_made_is_a_new_one(postgres_cluster: PostgresCluster) -> None:
    first, second = postgres_cluster.create_database(), postgres_cluster.create_database()
    try:
        assert first != second
        _psql(postgres_cluster, postgres_cluster.url(first), "CREATE TABLE only_here (x int)")
        listed = _psql(
            postgres_cluster,
            postgres_cluster.url(second),
            "SELECT count(*) FROM pg_tables WHERE tablename = 'only_here'",
        )
        assert listed.stdout.strip() == "0"
    finally:
        postgres_cluster.drop_database(first)
        postgres_cluster.drop_database(second)
    names = postgres_cluster.psql("SELECT datname FROM pg_database").split()
    assert first not in names and second not in names


def test_stopping_a_cluster_ends_the_server_and_removes_its_files() -> None:
    cluster = PostgresCluster()
    with cluster:
        root, port = cluster.root, cluster.port
        assert (root / "data" / "PG_VERSION").exists()
        with socket.create_connection(("127.0.0.1", port), timeout=5):
            pass
    assert not root.exists()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", port), timeout=5):
        pass
    with pytest.raises(PostgresUnavailableError, match="not running"):
        _ = cluster.root
    cluster.stop()


def test_the_binaries_named_by_the_environment_come_first(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    found = find_bindir()
    monkeypatch.setenv("LOSSLESS_PG_BINDIR", str(found))
    assert find_bindir() == found
    # A directory without the binaries is passed over for the machine's own.
    monkeypatch.setenv("LOSSLESS_PG_BINDIR", "/nonexistent")
    assert find_bindir() == found


def test_a_cluster_whose_process_is_killed_is_stopped_and_removed(tmp_path: Path) -> None:
    child = subprocess.Popen(
        [
            sys.executable,
            "-c",
            "import sys, time\n"
            "from lossless.testing.postgres import PostgresCluster\n"
            "cluster = PostgresCluster()\n"
            "cluster.start()\n"
            "print(cluster.root, cluster.port, flush=True)\n"
            "time.sleep(600)\n",
        ],
        stdout=subprocess.PIPE,
        text=True,
        cwd=tmp_path,
    )
    assert child.stdout is not None
    root, port = child.stdout.readline().split()
    with socket.create_connection(("127.0.0.1", int(port)), timeout=5):
        pass
    child.send_signal(signal.SIGKILL)
    child.wait(timeout=30)
    deadline = time.monotonic() + 60
    while Path(root).exists() and time.monotonic() < deadline:
        time.sleep(0.1)
    assert not Path(root).exists()
    with pytest.raises(OSError), socket.create_connection(("127.0.0.1", int(port)), timeout=5):
        pass
