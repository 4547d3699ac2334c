"""A real PostgreSQL server for the tests: a throwaway cluster, one fresh database per test.

The server is ``CAPTAIN_TEST_PG_URL`` when set (a role that may CREATE DATABASE), else a
cluster started here from the installed server binaries (Debian's ``postgresql`` package:
``/usr/lib/postgresql/<version>/bin``; ``.ci/install-agents`` installs it when missing).
``initdb`` refuses root, so as root the cluster's programs run as the ``postgres`` user
(``runuser``) in a temporary directory that user owns. It listens on 127.0.0.1 on a free
port and on a unix socket in that directory, trusts local connections (a password in a URL
is accepted and ignored), and runs with fsync off. It is started once per test run, on
first use, and stopped (``pg_ctl stop -m immediate``) and deleted when the run ends.

Without server binaries (or psycopg) the fixtures skip with the reason; with
``CAPTAIN_TEST_PG_REQUIRED=1`` (``.ci/run`` sets it) they fail instead: in CI these tests
must run.

Use: ask for ``pg_server`` or ``pg_url`` (tests/conftest.py registers this module with
``pytest_plugins``; not a second ``conftest.py``, which would shadow tests/conftest.py).
"""

from __future__ import annotations

import atexit
import glob
import os
import pwd
import shutil
import socket
import subprocess
import tempfile
import uuid
from pathlib import Path
from urllib.parse import urlsplit

import pytest

ENV_URL = "CAPTAIN_TEST_PG_URL"
ENV_REQUIRED = "CAPTAIN_TEST_PG_REQUIRED"
SERVER_USER = "postgres"  # the OS user the programs run as when we are root; the superuser


def server_bindir() -> Path | None:
    """The newest installed server's bin directory (it holds initdb, pg_ctl, postgres)."""
    found = sorted(
        glob.glob("/usr/lib/postgresql/*/bin/initdb"),
        key=lambda p: int(Path(p).parts[-3]) if Path(p).parts[-3].isdigit() else 0,
    )
    if found:
        return Path(found[-1]).parent
    initdb = shutil.which("initdb")
    return Path(initdb).parent if initdb else None


def _free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


PREFIX = "captain-pg-"
OWNER = "owner"  # in a cluster's directory: the pid and start time of the run that made it


def _started(pid: int) -> str | None:
    """When process ``pid`` started (its clock ticks since boot), or None when it is gone:
    a pid alone could be a newer process's."""
    try:
        stat = Path(f"/proc/{pid}/stat").read_text()
    except OSError:
        return None
    return stat.rsplit(")", 1)[1].split()[19]


def reap_orphans(bindir: Path, tmp: str | None = None) -> list[Path]:
    """Stop and remove the clusters whose run is gone: a run killed (SIGKILL, a CI
    timeout) never reached its atexit, and its server would run on. Only a cluster that
    names its run (``owner``) and whose run is not alive is touched; another live run's
    never is. Returns what was reaped."""
    reaped = []
    for root in Path(tmp or tempfile.gettempdir()).glob(PREFIX + "*"):
        try:
            pid, started = (root / OWNER).read_text().split()
        except (OSError, ValueError):
            continue  # not ours to judge (no owner written)
        if _started(int(pid)) == started:
            continue  # its run is alive
        if (root / "data" / "postmaster.pid").exists():
            as_server = ["runuser", "-u", SERVER_USER, "--"] if os.geteuid() == 0 else []
            subprocess.run(
                [*as_server, str(bindir / "pg_ctl"), "-D", str(root / "data")]
                + ["-m", "immediate", "-w", "-t", "30", "stop"],
                capture_output=True,
                timeout=60,
                cwd="/",
            )
        shutil.rmtree(root, ignore_errors=True)
        reaped.append(root)
    return reaped


class Cluster:
    """A throwaway cluster in its own temporary directory, naming the run that made it
    (``reap_orphans`` stops it if that run is killed)."""

    def __init__(self, bindir: Path) -> None:
        self.bindir = bindir
        self.root = Path(tempfile.mkdtemp(prefix=PREFIX))
        (self.root / OWNER).write_text(f"{os.getpid()} {_started(os.getpid())}\n")
        self.data = self.root / "data"
        self.socket_dir = self.root / "socket"
        self.log = self.root / "server.log"
        self.port = 0
        self.running = False
        self.as_server: list[str] = []
        if os.geteuid() == 0:
            entry = pwd.getpwnam(SERVER_USER)
            self.as_server = ["runuser", "-u", SERVER_USER, "--"]
            os.chown(self.root, entry.pw_uid, entry.pw_gid)

    def _own(self, path: Path) -> None:
        if self.as_server:
            entry = pwd.getpwnam(SERVER_USER)
            os.chown(path, entry.pw_uid, entry.pw_gid)

    def _run(self, *argv: str, timeout: float = 60) -> subprocess.CompletedProcess:
        return subprocess.run(
            [*self.as_server, *argv], capture_output=True, text=True, timeout=timeout, cwd=self.root
        )

    def start(self) -> Cluster:
        result = self._run(
            str(self.bindir / "initdb"),
            "-D",
            str(self.data),
            "-U",
            SERVER_USER,
            "-A",
            "trust",
            "-E",
            "UTF8",
            "--no-locale",
            "--no-sync",
            "--no-instructions",
        )
        if result.returncode != 0:
            raise RuntimeError(f"initdb failed: {result.stderr.strip()}")
        self.socket_dir.mkdir(mode=0o700)
        self._own(self.socket_dir)
        for attempt in range(5):
            self.port = _free_port()
            settings = {
                "listen_addresses": "'127.0.0.1'",
                "port": str(self.port),
                "unix_socket_directories": f"'{self.socket_dir}'",
                "fsync": "off",
                "synchronous_commit": "off",
                "full_page_writes": "off",
                "max_connections": "100",
                "shared_buffers": "32MB",
                "log_min_messages": "warning",
                "logging_collector": "off",
            }
            conf = "".join(f"{k} = {v}\n" for k, v in settings.items())
            auto = self.data / "postgresql.auto.conf"
            auto.write_text(conf)
            self._own(auto)
            result = self._run(
                str(self.bindir / "pg_ctl"),
                "-D",
                str(self.data),
                "-l",
                str(self.log),
                "-w",
                "-t",
                "30",
                "start",
            )
            if result.returncode == 0:
                self.running = True
                return self
        raise RuntimeError(
            f"pg_ctl start failed: {result.stdout.strip()} "
            f"{result.stderr.strip()} {self.log_tail()}"
        )

    def log_tail(self) -> str:
        try:
            return self.log.read_text()[-2000:]
        except OSError:
            return ""

    def url(self, dbname: str = "postgres") -> str:
        return f"postgresql://{SERVER_USER}@127.0.0.1:{self.port}/{dbname}"

    def postmaster_pid(self) -> int | None:
        try:
            return int((self.data / "postmaster.pid").read_text().split()[0])
        except (OSError, ValueError, IndexError):
            return None

    def stop(self) -> None:
        if self.running:
            self._run(
                str(self.bindir / "pg_ctl"),
                "-D",
                str(self.data),
                "-m",
                "immediate",
                "-w",
                "-t",
                "30",
                "stop",
            )
            self.running = False
        shutil.rmtree(self.root, ignore_errors=True)


class Server:
    """What the fixtures hand out: an admin URL, and one per new database."""

    def __init__(self, admin_url: str, cluster: Cluster | None = None) -> None:
        self.admin_url = admin_url
        self.cluster = cluster

    def url(self, dbname: str) -> str:
        return urlsplit(self.admin_url)._replace(path=f"/{dbname}").geturl()

    def create_database(self) -> str:
        import psycopg

        name = f"captain_test_{uuid.uuid4().hex[:12]}"
        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'CREATE DATABASE "{name}" TEMPLATE template0')
        return name

    def drop_database(self, name: str) -> None:
        import psycopg

        with psycopg.connect(self.admin_url, autocommit=True) as conn:
            conn.execute(f'DROP DATABASE IF EXISTS "{name}" WITH (FORCE)')


def why_not() -> str | None:
    """Why no PostgreSQL server can be had here, or None when one can."""
    try:
        import psycopg  # noqa: F401
    except ImportError:
        return "psycopg is not installed (pip install -e '.[test]' brings it)"
    if os.environ.get(ENV_URL):
        return None
    if server_bindir() is None:
        return (
            "no PostgreSQL server binaries (Debian: apt-get install postgresql; "
            ".ci/install-agents does it) and CAPTAIN_TEST_PG_URL is not set"
        )
    if os.geteuid() == 0:
        try:
            pwd.getpwnam(SERVER_USER)
        except KeyError:
            return f"running as root and there is no {SERVER_USER!r} user for initdb"
        if shutil.which("runuser") is None:
            return "running as root and runuser is not available to run initdb as postgres"
    return None


_SERVER: Server | None = None
_FAILED: str | None = None


def _stop_cluster() -> None:
    global _SERVER
    if _SERVER is not None and _SERVER.cluster is not None:
        _SERVER.cluster.stop()
    _SERVER = None


def server(config=None) -> Server:
    """The run's one server, started on first use; skips (or fails) with the reason."""
    global _SERVER, _FAILED
    if _SERVER is not None:
        return _SERVER
    reason = _FAILED or why_not()
    if reason is None:
        if os.environ.get(ENV_URL):
            _SERVER = Server(os.environ[ENV_URL])
            return _SERVER
        reap_orphans(server_bindir())  # a killed run's cluster would run on for ever
        cluster = Cluster(server_bindir())
        try:
            cluster.start()
        except (RuntimeError, OSError, subprocess.SubprocessError) as exc:
            cluster.stop()
            reason = _FAILED = f"a throwaway PostgreSQL cluster did not start: {exc}"
        else:
            _SERVER = Server(cluster.url(), cluster)
            atexit.register(_stop_cluster)  # even if the run ends some other way
            if config is not None:
                config.add_cleanup(_stop_cluster)
            return _SERVER
    if os.environ.get(ENV_REQUIRED) == "1":
        pytest.fail(
            f"PostgreSQL tests must run here ({ENV_REQUIRED}=1), but {reason}", pytrace=False
        )
    pytest.skip(f"PostgreSQL tests skipped: {reason}")


@pytest.fixture(scope="session")
def pg_server(request) -> Server:
    """The run's PostgreSQL server (shared by every module that imports this fixture)."""
    return server(request.config)


@pytest.fixture
def pg_url(pg_server: Server):
    """The URL of a fresh, empty database of this test's own, dropped afterwards."""
    name = pg_server.create_database()
    yield pg_server.url(name)
    pg_server.drop_database(name)
