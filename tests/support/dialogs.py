"""A stand-in for an agent at its start-up dialog, in real tmux: the crew is recruited
through the real CLI as ``--agent claude`` / ``--agent codex``, the program on its PATH
drawing a REAL capture of that agent's dialog (``tests/fixtures/screens``), moving its
pointer on ``Down`` as the agent does (or, ``mode="vanish"``, drawing something else), and
logging every key it receives as a JSON line."""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

from state.home import Home
from support.cli import ok_clean

SCREENS = Path(__file__).resolve().parents[1] / "fixtures" / "screens"

# Draws a capture, moves its pointer on Down (or, FAKE_MODE=vanish, draws something else),
# logs each key as a JSON line, and on Enter draws a prompt.
FAKE = r"""
import json, os, sys, termios, tty
lines = [l.rstrip() for l in open(os.environ["FAKE_SCREEN"]).read().splitlines()]
log = open(os.environ["FAKE_LOG"], "a")
mode = os.environ.get("FAKE_MODE", "follow")
def draw(rows):
    sys.stdout.write("\x1b[H\x1b[2J" + "\r\n".join(rows)); sys.stdout.flush()
def pointer_down(rows):
    out = list(rows)
    idx = [i for i, r in enumerate(rows) if r.lstrip().startswith(("❯ ", "› "))]
    if len(idx) == 1:
        i = idx[0]
        lead = rows[i][: len(rows[i]) - len(rows[i].lstrip())]
        glyph = rows[i].lstrip()[0]
        out[i] = lead + "  " + rows[i].lstrip()[2:]
        out[i + 1] = lead + glyph + " " + rows[i + 1].lstrip()
    return out
fd = sys.stdin.fileno()
tty.setraw(fd)
draw(lines)
while True:
    data = os.read(fd, 16)
    if not data:
        break
    key = {b"\x1b[B": "Down", b"\x1bOB": "Down", b"\r": "Enter"}.get(data, data.decode("latin-1"))
    log.write(json.dumps(key) + "\n"); log.flush()
    if key == "Down":
        lines = ["nothing to see here"] if mode == "vanish" else pointer_down(lines)
        draw(lines)
    elif key == "Enter":
        draw(["answered", "$ "])
"""


def recruit_at_dialog(cli, tmux, tmp_path: Path, agent: str, screen: str, mode: str = "follow"):
    bindir = tmp_path / "bin"
    bindir.mkdir(exist_ok=True)
    fake = bindir / agent
    fake.write_text(f"#!{sys.executable}\n{FAKE}")
    fake.chmod(0o755)
    log = tmp_path / "keys.jsonl"
    log.touch()
    # the captures are as wide as the panes they came from
    tmux.tmux("start-server", ";", "set-option", "-g", "default-size", "200x50", check=False)
    env = {
        "PATH": f"{bindir}{os.pathsep}{os.environ['PATH']}",
        "FAKE_SCREEN": str(SCREENS / screen),
        "FAKE_LOG": str(log),
        "FAKE_MODE": mode,
    }
    ok_clean(
        cli(
            "crew",
            "Jack",
            "--task",
            "tidy",
            "--agent",
            agent,
            "--socket",
            tmux.socket,
            "--no-worktree",
            "--json",
            env=env,
        )
    )
    return Home(cli.home), log


def keys_received(log: Path) -> list[str]:
    return [json.loads(line) for line in log.read_text().splitlines()]
