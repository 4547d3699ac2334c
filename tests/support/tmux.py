"""Real tmux on a private socket, and the simulated crew in it, for the doorbell tests."""

from __future__ import annotations

import json
import os
import shutil
import subprocess
import sys
import time
import uuid
from pathlib import Path

import pytest

from captain_tui.runtime.tmux import socket_path_for
from support.cli import ok_clean

TMUX = shutil.which("tmux")
needs_tmux = pytest.mark.skipif(TMUX is None, reason="tmux is not installed (.ci/run installs it)")


def poll(predicate, timeout: float = 10.0, interval: float = 0.05, what: str = "condition"):
    """Return the first truthy value of ``predicate()``; fail after ``timeout`` seconds."""
    deadline = time.monotonic() + timeout
    while True:
        value = predicate()
        if value:
            return value
        if time.monotonic() >= deadline:
            raise AssertionError(f"timed out after {timeout} s waiting for {what}")
        time.sleep(interval)


class PrivateTmux:
    """A tmux server of our own (``-L captain-test-...``); killed at teardown."""

    def __init__(self) -> None:
        self.name = f"captain-test-{os.getpid()}-{uuid.uuid4().hex[:8]}"
        self.socket = socket_path_for(self.name)

    def tmux(self, *args: str, check: bool = True) -> subprocess.CompletedProcess:
        return subprocess.run(
            [TMUX, "-S", self.socket, *args],
            capture_output=True,
            text=True,
            check=check,
            timeout=10,
        )

    def capture(self, pane: str) -> str:
        return self.tmux("capture-pane", "-p", "-t", pane).stdout

    def type(self, pane: str, text: str) -> None:
        """Keys a person types: literal text, no Enter."""
        self.tmux("send-keys", "-t", pane, "-l", "--", text)

    def key(self, pane: str, *keys: str) -> None:
        self.tmux("send-keys", "-t", pane, *keys)

    def kill(self) -> None:
        self.tmux("kill-server", check=False)
        Path(self.socket).unlink(missing_ok=True)  # a killed server can leave its socket


def hostile(trap: Path) -> str:
    """Mail that creates trap/1..9 if any shell ever runs any part of it."""
    t = str(trap)
    return (
        f"fix it; touch {t}/1 && touch {t}/2 || touch {t}/2b | touch {t}/3 "
        f"$(touch {t}/4) `touch {t}/5` > {t}/6 >> {t}/6b < /etc/hostname "
        f"!! !-1 'touch {t}/7' \"$(touch {t}/8)\" ${{IFS}}x\ntouch {t}/9\n"
        f"& touch {t}/10 &"
    )


SLEEPER = "sh -c 'sleep 300'"  # a crew's agent that only waits: its pane stays up


def recruit_into(
    cli, tmux: PrivateTmux, name: str, task: str, *extra: str, command: str = SLEEPER
) -> dict:
    """A crew recruited through the real CLI (the ``cli`` fixture) into ``tmux``, its agent
    ``command``; its ``--json`` answer (exit 0, ok, no traceback)."""
    return ok_clean(
        cli(
            "crew",
            name,
            "--task",
            task,
            "--command",
            command,
            "--socket",
            tmux.socket,
            "--json",
            *extra,
        )
    )


class SimLog:
    """What the simulated crew received: one JSON line per line it read."""

    def __init__(self, path: Path) -> None:
        self.path = path

    def lines(self, kind: str = "line") -> list[str]:
        if not self.path.exists():
            return []
        out = []
        for raw in self.path.read_text().splitlines():
            entry = json.loads(raw)
            if entry["kind"] == kind:
                out.append(entry["text"])
        return out


def sim_command(log: Path) -> str:
    return f"{sys.executable} -m captain_tui.cockpit.simcrew --log {log}"
