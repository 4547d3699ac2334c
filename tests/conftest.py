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

from state.crew.rules import Context
from state.home import Home

REPO = Path(__file__).resolve().parents[1]


@pytest.fixture(scope="session", autouse=True)
def private_tmux_server():
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
        env = {k: v for k, v in os.environ.items()
               if not k.startswith("CAPTAIN_") or k == "CAPTAIN_TMUX_SOCKET"}
        env["CAPTAIN_HOME"] = str(self.home)
        env["PYTHONPATH"] = str(REPO)
        env.update(extra or {})
        return env

    def __call__(self, *args: str, env: dict[str, str] | None = None, timeout: float = 60,
                 stdin: str | None = None) -> Result:
        proc = subprocess.run([sys.executable, "-m", "captain_tui", *args], cwd=self.cwd,
                              env=self.env(env), capture_output=True, text=True,
                              timeout=timeout, input=stdin)
        return Result(proc.returncode, proc.stdout, proc.stderr)


@pytest.fixture
def cli(tmp_path: Path, project: Path) -> Cli:
    return Cli(tmp_path / "home", project)
