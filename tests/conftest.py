"""Shared fixtures: a private home per test, and the real CLI run as a subprocess."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest
from hypothesis import settings

from state.crew.guards import Context
from state.home import Home

REPO = Path(__file__).resolve().parents[1]

# The shared fixtures, for every test module without an import: PostgreSQL (pg_server,
# pg_url), the ledger on both backends (ledger_backend, ledgers, cli_ledger) and where the
# cockpit runs (private_config, plain_terminal: a cockpit module asks with usefixtures),
# a recruited crew (jack); and the order the workers take the files in (support/order.py).
pytest_plugins = [
    "support.postgres",
    "support.ledger_backends",
    "support.cockpit_env",
    "support.crew",
    "support.order",
]

# Hypothesis tries the same examples on every run, so no test passes or fails by luck (a
# state machine that must reach a refusal reaches it every time). A run that explores anew
# is opt-in: `.venv/bin/pytest --hypothesis-profile=explore` (a test's own settings win).
settings.register_profile("deterministic", derandomize=True)
settings.register_profile("explore", derandomize=False)
settings.load_profile("deterministic")


def _user_world() -> dict[str, object]:
    """What a user's own captain lives in: the default tmux socket and the default home.
    A test run must leave both exactly as it found them."""
    import platformdirs

    from captain_tui.runtime.tmux import DEFAULT_SOCKET, socket_path_for

    socket = Path(socket_path_for(DEFAULT_SOCKET))
    home = platformdirs.user_state_path("captain")
    tmux = shutil.which("tmux")
    alive = (
        bool(tmux)
        and socket.exists()
        and subprocess.run(
            [tmux, "-S", str(socket), "list-sessions"], capture_output=True
        ).returncode
        == 0
    )

    def seen(path: Path):
        try:
            st = path.stat()
        except FileNotFoundError:
            return None
        return (st.st_ino, st.st_mtime_ns)

    return {
        "default tmux socket " + str(socket): (seen(socket), alive),
        "default home " + str(home): seen(home),
    }


@pytest.fixture(scope="session", autouse=True)
def users_world_untouched():
    """Fail the run if any test started a tmux server on the default ``captain`` socket or
    wrote into the default home: those are where a user's real crews live."""
    before = _user_world()
    yield
    after = _user_world()
    touched = [what for what in before if before[what] != after[what]]
    assert not touched, f"the tests touched the user's world: {touched}"


@pytest.fixture(scope="session", autouse=True)
def private_tmux_server(users_world_untouched):
    """Every crew any test recruits lands on a tmux server of this run's own, never on the
    developer's: ``CAPTAIN_TMUX_SOCKET`` is the documented override. Killed at the end."""
    path = f"/tmp/tmux-{os.getuid()}/captain-tests-{os.getpid()}"
    os.environ["CAPTAIN_TMUX_SOCKET"] = path
    yield path
    tmux = shutil.which("tmux")
    if tmux:
        subprocess.run([tmux, "-S", path, "kill-server"], capture_output=True)
    Path(path).unlink(missing_ok=True)


@pytest.fixture
def tmux():
    """A tmux server on a private socket of this test's own, killed afterwards."""
    from support.tmux import PrivateTmux

    server = PrivateTmux()
    yield server
    server.kill()


@pytest.fixture
def home(tmp_path: Path) -> Home:
    return Home(tmp_path / "home")


@pytest.fixture
def project(tmp_path: Path) -> Path:
    path = tmp_path / "project"
    (path / "src").mkdir(parents=True)
    return path


def crew_ctx(recruit) -> Context:
    """The Context a crew process gets from the env that recruiting printed."""
    return Context.from_env(recruit.env)


@dataclass
class Result:
    code: int
    out: str
    err: str

    @property
    def json(self) -> dict:
        return json.loads(self.out)


class Cli:
    """Runs ``python -m captain_tui`` for real, as the captain or as a crew process."""

    def __init__(self, home: Path, cwd: Path) -> None:
        self.home = home
        self.cwd = cwd

    def env(self, extra: dict[str, str] | None = None) -> dict[str, str]:
        from support.ledger_backends import process_env  # a plugin: imported by pytest first

        env = {
            k: v
            for k, v in os.environ.items()
            if not k.startswith("CAPTAIN_") or k == "CAPTAIN_TMUX_SOCKET"
        }
        env["CAPTAIN_HOME"] = str(self.home)
        env["PYTHONPATH"] = str(REPO)
        env.update(process_env())  # CAPTAIN_LEDGER_URL on a test's PostgreSQL ledger
        env.update(extra or {})
        return env

    def __call__(
        self,
        *args: str,
        env: dict[str, str] | None = None,
        timeout: float = 60,
        stdin: str | None = None,
    ) -> Result:
        proc = subprocess.run(
            [sys.executable, "-m", "captain_tui", *args],
            cwd=self.cwd,
            env=self.env(env),
            capture_output=True,
            text=True,
            timeout=timeout,
            input=stdin,
        )
        return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def cli(tmp_path: Path, project: Path) -> Cli:
    return Cli(tmp_path / "home", project)


def pytest_terminal_summary(terminalreporter) -> None:
    """The lines a test asks to be shown however its output was captured (the stress runs'
    summaries, with their kill and violation counts): ``("summary", line)`` in its
    ``user_properties``, which pytest-xdist carries back from its workers too."""
    lines = [
        value
        for key in ("passed", "failed")
        for report in terminalreporter.stats.get(key, [])
        if getattr(report, "when", None) == "call"
        for name, value in getattr(report, "user_properties", ())
        if name == "summary"
    ]
    if lines:
        terminalreporter.write_sep("=", "summaries")
        for line in lines:
            terminalreporter.write_line(line)
