"""A throwaway PostgreSQL cluster for tests, from the server binaries on the machine.

:class:`PostgresCluster` runs ``initdb`` and ``pg_ctl`` on a temporary directory and
listens on a free 127.0.0.1 port and on a Unix socket in that directory; stopping it
removes everything. Two roles exist: an administrator that the cluster trusts
(:attr:`PostgresCluster.admin`) and the application's role, which must give its
password (:attr:`PostgresCluster.user`, :attr:`PostgresCluster.password`), as a
deployed server would ask. Each :meth:`PostgresCluster.create_database` makes a fresh
database owned by the application's role::

    with PostgresCluster() as cluster:
        url = cluster.url(cluster.create_database())

With ``tls=True`` the server takes TCP connections over TLS only (``ssl = on``, and
``hostssl`` lines alone in ``pg_hba.conf``), with a certificate for ``localhost``
signed by a certificate authority made for it (:func:`make_certificates`, with the
``openssl`` command); :attr:`PostgresCluster.tls` names the files::

    with PostgresCluster(tls=True) as cluster:
        url = cluster.url(
            cluster.create_database(),
            host="localhost",
            sslmode="verify-full",
            sslrootcert=str(cluster.tls.ca_cert),
        )

The binaries are found through ``LOSSLESS_PG_BINDIR``, then ``pg_config --bindir``,
then Debian's ``/usr/lib/postgresql/<version>/bin``. ``initdb`` refuses to run as
root, so under root the server runs as the ``postgres`` system user (or ``nobody``).
The cluster trades durability for speed (``fsync = off``): it is thrown away. Should
this process die without stopping it, a watchdog shell stops it and removes its files.
"""

from __future__ import annotations

import contextlib
import os
import pwd
import secrets
import shutil
import socket
import subprocess
import tempfile
from collections.abc import Sequence
from dataclasses import dataclass
from pathlib import Path
from types import TracebackType
from typing import Self
from urllib.parse import quote

__all__ = [
    "PostgresCluster",
    "PostgresUnavailableError",
    "TlsFiles",
    "find_bindir",
    "make_certificates",
]

_ADMIN = "lossless_admin"
_USER = "lossless"
# The system users a server started by root may run as, the first that exists.
_SERVER_USERS = ("postgres", "nobody")
_START_TIMEOUT_S = 60
_COMMAND_TIMEOUT_S = 120
_INSTALL_HINT = (
    "the PostgreSQL server binaries (initdb, pg_ctl, postgres) were not found; "
    "scripts/setup installs them as root (apt-get install postgresql), otherwise "
    "install them yourself or point LOSSLESS_PG_BINDIR at their directory"
)


class PostgresUnavailableError(RuntimeError):
    """The server binaries are missing, or the cluster did not start; the message says why."""


def find_bindir() -> Path:
    """The directory of ``initdb``, ``pg_ctl`` and ``postgres``; raises
    :class:`PostgresUnavailableError` when there is none."""
    for candidate in _bindir_candidates():
        if all((candidate / name).is_file() for name in ("initdb", "pg_ctl", "postgres")):
            return candidate
    raise PostgresUnavailableError(_INSTALL_HINT)


def _bindir_candidates() -> list[Path]:
    candidates: list[Path] = []
    if configured := os.environ.get("LOSSLESS_PG_BINDIR"):
        candidates.append(Path(configured))
    if pg_config := shutil.which("pg_config"):
        found = subprocess.run([pg_config, "--bindir"], capture_output=True, text=True, check=False)
        if found.returncode == 0:
            candidates.append(Path(found.stdout.strip()))
    # Debian installs each major version beside the others; the newest first.
    versions = sorted(
        Path("/usr/lib/postgresql").glob("*/bin"),
        key=lambda path: int(path.parent.name) if path.parent.name.isdigit() else 0,
        reverse=True,
    )
    candidates.extend(versions)
    if initdb := shutil.which("initdb"):
        candidates.append(Path(initdb).parent)
    return candidates


@dataclass(frozen=True, slots=True)
class TlsFiles:
    """A certificate authority, and a server's and a client's certificates it signed,
    as PEM files."""

    ca_cert: Path
    ca_key: Path
    server_cert: Path
    server_key: Path
    client_cert: Path
    client_key: Path


def make_certificates(
    directory: Path, *, hostname: str = "localhost", client: str = _USER
) -> TlsFiles:
    """Makes, in ``directory``, a certificate authority, a server certificate for
    ``hostname`` alone (its only subject alternative name) and a client certificate
    for the role ``client`` (its common name), valid for two days. Elliptic-curve
    keys (P-256): made in milliseconds."""
    directory.mkdir(parents=True, exist_ok=True)
    files = TlsFiles(
        ca_cert=directory / "ca.crt",
        ca_key=directory / "ca.key",
        server_cert=directory / "server.crt",
        server_key=directory / "server.key",
        client_cert=directory / "client.crt",
        client_key=directory / "client.key",
    )
    key = ["-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:prime256v1", "-nodes"]
    _openssl(
        ["req", "-x509", *key, "-keyout", str(files.ca_key), "-out", str(files.ca_cert)],
        ["-days", "2", "-subj", f"/CN=lossless test CA {secrets.token_hex(4)}"],
        ["-addext", "basicConstraints=critical,CA:TRUE"],
        ["-addext", "keyUsage=critical,keyCertSign,cRLSign"],
    )
    signed = (
        (files.server_cert, files.server_key, hostname, f"DNS:{hostname}", "serverAuth"),
        (files.client_cert, files.client_key, client, None, "clientAuth"),
    )
    for cert, private, name, alt_name, usage in signed:
        request = cert.with_suffix(".csr")
        _openssl(
            ["req", *key, "-keyout", str(private), "-out", str(request)],
            ["-subj", f"/CN={name}"],
        )
        extensions = cert.with_suffix(".ext")
        extensions.write_text(
            (f"subjectAltName = {alt_name}\n" if alt_name else "")
            + "basicConstraints = CA:FALSE\n"
            + "keyUsage = critical, digitalSignature, keyEncipherment\n"
            + f"extendedKeyUsage = {usage}\n",
            encoding="utf-8",
        )
        _openssl(
            ["x509", "-req", "-in", str(request), "-CA", str(files.ca_cert)],
            ["-CAkey", str(files.ca_key), "-CAcreateserial", "-days", "2"],
            ["-extfile", str(extensions), "-out", str(cert)],
        )
    for path in (files.ca_key, files.server_key, files.client_key):
        path.chmod(0o600)
    return files


def _openssl(*args: Sequence[str]) -> None:
    command = shutil.which("openssl")
    if command is None:
        raise PostgresUnavailableError("the openssl command makes the test certificates")
    done = subprocess.run(
        [command, *(arg for group in args for arg in group)],
        capture_output=True,
        text=True,
        check=False,
        timeout=_COMMAND_TIMEOUT_S,
    )
    if done.returncode != 0:
        raise PostgresUnavailableError(f"openssl failed: {done.stderr.strip()}")


def _free_port() -> int:
    with socket.socket(socket.AF_INET, socket.SOCK_STREAM) as probe:
        probe.bind(("127.0.0.1", 0))
        port: int = probe.getsockname()[1]
        return port


def _server_user() -> str | None:
    """The unprivileged user to run the server as, or None to run it as this one."""
    if os.geteuid() != 0:
        return None
    for name in _SERVER_USERS:
        with contextlib.suppress(KeyError):
            pwd.getpwnam(name)
            return name
    raise PostgresUnavailableError(
        "initdb refuses to run as root and neither of the users "
        f"{', '.join(_SERVER_USERS)} exists to run the server as"
    )


class PostgresCluster:
    """A PostgreSQL cluster in a temporary directory, for the length of a ``with`` block."""

    admin = _ADMIN
    """The superuser, trusted without a password (on the socket and on 127.0.0.1)."""
    user = _USER
    """The application's role: it owns the databases made for tests, and logs in with
    :attr:`password` only."""
    client_cert_database = "tls_client_cert"
    """On a cluster with ``tls=True``, the database (create it) the application's role
    reaches only with its client certificate (``sslcert``, ``sslkey``: the files of
    :attr:`tls`) besides its password."""

    def __init__(self, *, bindir: Path | None = None, tls: bool = False) -> None:
        self.bindir = bindir if bindir is not None else find_bindir()
        self.password = secrets.token_hex(12)
        self._tls = tls
        self._tls_files: TlsFiles | None = None
        self.port = 0
        self._root: Path | None = None
        self._run_as = _server_user()
        self._counter = 0
        self._watchdog: subprocess.Popen[bytes] | None = None

    # -- lifecycle ---------------------------------------------------------------------

    def start(self) -> None:
        """Creates the cluster, starts the server and waits until it accepts connections."""
        root = Path(tempfile.mkdtemp(prefix="lossless-pg-"))
        self._root = root
        try:
            (root / "socket").mkdir()
            if self._run_as is not None:
                entry = pwd.getpwnam(self._run_as)
                for path in (root, root / "socket"):
                    os.chown(path, entry.pw_uid, entry.pw_gid)
            self._server_command(
                "initdb",
                [
                    *("-D", str(self.data_dir), "-U", _ADMIN, "-A", "trust", "-E", "UTF8"),
                    *("--no-locale", "--no-sync", "--no-instructions"),
                ],
            )
            if self._tls:
                self._make_certificates()
            self._configure()
            self._watch()
            self._start_server()
            self._add_user()
        except BaseException:
            self.stop()
            raise

    def stop(self) -> None:
        """Stops the server (fast shutdown: open connections are ended) and removes its
        directory. Safe to call twice."""
        root, self._root = self._root, None
        if root is None:
            return
        try:
            if (root / "data" / "postmaster.pid").exists():
                self._server_command(
                    "pg_ctl", ["-D", str(root / "data"), "-m", "fast", "-w", "stop"], root=root
                )
        finally:
            shutil.rmtree(root, ignore_errors=True)
            if self._watchdog is not None:
                self._watchdog.kill()
                self._watchdog.wait()
                self._watchdog = None

    def __enter__(self) -> Self:
        self.start()
        return self

    def __exit__(
        self,
        exc_type: type[BaseException] | None,
        exc: BaseException | None,
        tb: TracebackType | None,
    ) -> None:
        self.stop()

    # -- where it listens --------------------------------------------------------------

    @property
    def root(self) -> Path:
        if self._root is None:
            raise PostgresUnavailableError("the cluster is not running")
        return self._root

    @property
    def data_dir(self) -> Path:
        return self.root / "data"

    @property
    def socket_dir(self) -> Path:
        """The directory of the server's Unix socket (``.s.PGSQL.<port>``)."""
        return self.root / "socket"

    @property
    def tls(self) -> TlsFiles:
        """The certificate files of a cluster started with ``tls=True``."""
        if self._tls_files is None:
            raise PostgresUnavailableError("the cluster was not started with tls=True")
        return self._tls_files

    def url(
        self,
        database: str,
        *,
        password: str | None = None,
        host: str = "127.0.0.1",
        **params: str,
    ) -> str:
        """The application role's URL of ``database`` over TCP, with its password (or
        ``password`` instead, to try a wrong one) and query ``params`` (``sslmode``,
        ``sslrootcert``). A ``host`` other than 127.0.0.1 is the name TLS checks the
        certificate against; the connection still goes to 127.0.0.1 (``hostaddr``)."""
        secret = self.password if password is None else password
        if host != "127.0.0.1":
            params = {"hostaddr": "127.0.0.1", **params}
        query = "&".join(f"{key}={quote(value, safe='/')}" for key, value in params.items())
        url = f"postgresql://{_USER}:{secret}@{host}:{self.port}/{database}"
        return f"{url}?{query}" if query else url

    def admin_url(self, database: str) -> str:
        """The superuser's URL of ``database`` over the Unix socket (trusted)."""
        return f"postgresql://{_ADMIN}@/{database}?host={self.socket_dir}&port={self.port}"

    # -- databases ---------------------------------------------------------------------

    def create_database(self, name: str | None = None, *, template: str | None = None) -> str:
        """Creates a database owned by the application's role, empty or a copy of
        ``template`` (see :meth:`seal_template`); returns its name."""
        if name is None:
            self._counter += 1
            name = f"test_{os.getpid()}_{self._counter}"
        source = f' TEMPLATE "{template}"' if template is not None else ""
        self.psql(f'CREATE DATABASE "{name}" OWNER "{_USER}"{source}')
        return name

    def seal_template(self, name: str) -> None:
        """Makes ``name`` a template that takes no more connections, ending those still
        open: PostgreSQL copies a database only while nobody is connected to it."""
        self.psql(f'ALTER DATABASE "{name}" WITH IS_TEMPLATE true ALLOW_CONNECTIONS false')
        self.psql(
            "SELECT count(pg_terminate_backend(pid)) FROM pg_stat_activity "
            f"WHERE datname = '{name}'"
        )

    def drop_database(self, name: str) -> None:
        """Drops ``name``, ending any connection still open to it."""
        self.psql(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')

    def psql(self, sql: str, database: str = "postgres") -> str:
        """Runs ``sql`` as the superuser and returns psql's unaligned output."""
        command = [str(self.bindir / "psql"), "-X", "-q", "-A", "-t", "-v", "ON_ERROR_STOP=1"]
        command += ["-h", str(self.socket_dir), "-p", str(self.port), "-U", _ADMIN]
        command += ["-d", database, "-c", sql]
        if not Path(command[0]).is_file():
            command[0] = shutil.which("psql") or "psql"
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            check=False,
            timeout=_COMMAND_TIMEOUT_S,
            cwd=self.root,
        )
        if done.returncode != 0:
            raise PostgresUnavailableError(f"psql failed on {sql!r}: {done.stderr.strip()}")
        return done.stdout.strip()

    # -- set-up steps ------------------------------------------------------------------

    def _configure(self) -> None:
        settings = {
            "listen_addresses": "'127.0.0.1'",
            "unix_socket_directories": f"'{self.socket_dir}'",
            # Throwaway data: no flushes, so a test suite's databases cost no disk waits.
            "fsync": "off",
            "synchronous_commit": "off",
            "full_page_writes": "off",
            "max_connections": "200",
            "log_min_messages": "warning",
        }
        if self._tls_files is not None:
            settings["ssl"] = "on"
            settings["ssl_cert_file"] = f"'{self._tls_files.server_cert}'"
            settings["ssl_key_file"] = f"'{self._tls_files.server_key}'"
            settings["ssl_ca_file"] = f"'{self._tls_files.ca_cert}'"
        with (self.data_dir / "postgresql.conf").open("a", encoding="utf-8") as conf:
            conf.writelines(f"{key} = {value}\n" for key, value in settings.items())
        # First match wins: the application's role always gives its password. With
        # TLS, TCP connections without it match no line: the server refuses them.
        tcp = "hostssl" if self._tls_files is not None else "host"
        certified = (
            f"hostssl {self.client_cert_database} {_USER} 127.0.0.1/32 scram-sha-256 "
            "clientcert=verify-full\n"
            if self._tls_files is not None
            else ""
        )
        hba = (
            certified + f"local all {_USER} scram-sha-256\n"
            f"{tcp} all {_USER} 127.0.0.1/32 scram-sha-256\n"
            "local all all trust\n"
            f"{tcp} all all 127.0.0.1/32 trust\n"
        )
        (self.data_dir / "pg_hba.conf").write_text(hba, encoding="utf-8")

    def _make_certificates(self) -> None:
        """The CA and the server's certificate, the key readable by the server's user
        alone (the server refuses a key others may read)."""
        files = make_certificates(self.root / "tls")
        if self._run_as is not None:
            entry = pwd.getpwnam(self._run_as)
            for path in (
                files.server_cert.parent,
                files.server_cert,
                files.server_key,
                files.ca_cert,
            ):
                os.chown(path, entry.pw_uid, entry.pw_gid)
        self._tls_files = files

    def _start_server(self) -> None:
        # A port free now may be taken before the server binds it: try a few.
        for attempt in range(3):
            self.port = _free_port()
            try:
                self._server_command(
                    "pg_ctl",
                    [
                        *("-D", str(self.data_dir), "-l", str(self.root / "server.log")),
                        *("-o", f"-p {self.port}", "-t", str(_START_TIMEOUT_S), "-w", "start"),
                    ],
                )
                return
            except PostgresUnavailableError:
                if attempt == 2:
                    raise

    def _watch(self) -> None:
        """Stops the server and removes its directory if this process dies without
        stopping it (killed, or a test run cut short): a shell that outlives it."""
        pg_ctl = f"'{self.bindir / 'pg_ctl'}'"
        if self._run_as is not None:
            pg_ctl = f"runuser -u {self._run_as} -- {pg_ctl}"
        script = (
            f"while kill -0 {os.getpid()} 2>/dev/null; do sleep 0.5; done; "
            f"[ -e '{self.data_dir}/postmaster.pid' ] && "
            f"{pg_ctl} -D '{self.data_dir}' -m immediate -w stop; rm -rf '{self.root}'"
        )
        self._watchdog = subprocess.Popen(
            ["sh", "-c", script],
            cwd=self.root,
            stdin=subprocess.DEVNULL,
            stdout=subprocess.DEVNULL,
            stderr=subprocess.DEVNULL,
            start_new_session=True,
        )

    def _add_user(self) -> None:
        self.psql(f"CREATE ROLE \"{_USER}\" LOGIN PASSWORD '{self.password}'")

    def _server_command(self, name: str, args: Sequence[str], *, root: Path | None = None) -> None:
        command = [str(self.bindir / name), *args]
        if self._run_as is not None:
            command = ["runuser", "-u", self._run_as, "--", *command]
        done = subprocess.run(
            command,
            capture_output=True,
            text=True,
            check=False,
            timeout=_COMMAND_TIMEOUT_S,
            # The server's user may not be able to enter the caller's directory.
            cwd=root or self.root,
        )
        if done.returncode != 0:
            log = (root or self.root) / "server.log"
            tail = log.read_text(encoding="utf-8", errors="replace")[-2000:] if log.exists() else ""
            raise PostgresUnavailableError(
                f"{name} failed ({done.returncode}): {done.stderr.strip()}\n{tail}".strip()
            )
