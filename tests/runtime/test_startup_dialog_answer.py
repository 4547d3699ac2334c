"""Answering a start-up dialog for a crew sends keys only while the pane shows exactly that
dialog (``captain_tui/runtime/dialogs.py``), in real tmux on a private socket.

The crew is recruited through the real CLI as ``--agent claude`` / ``--agent codex``, the
agent on its PATH being a small program that draws a REAL capture of that agent's dialog
(``tests/fixtures/screens``), moves its pointer on ``Down`` as the agent does, and logs
every key it receives. So the tests can say what reached the program, byte for byte:

- the trust dialog: ``Down`` (pointer from "No, exit" to "Yes, I trust this folder"), then
  ``Enter``; nothing else, and the crew's ``blocked`` clears;
- a dialog that changes under the first key: refused (``dialog_changed``), ``Enter`` never
  sent;
- a dialog only a person answers (Codex's model migration): refused (``dialog_not_safe``),
  no key sent; the crew is still ``blocked: model migration``;
- a pane in tmux's copy mode (a key would go to tmux, not the agent): refused, no key sent.
"""

from __future__ import annotations

import json
import os
import sys
from pathlib import Path

import pytest
from support.cli import ok_clean
from support.tmux import needs_tmux, poll

from captain_tui import usecases
from captain_tui.runtime import dialogs
from state.crew.rules import CAPTAIN
from state.errors import CaptainError
from state.home import Home

pytestmark = needs_tmux

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


def _recruit(cli, tmux, tmp_path: Path, agent: str, screen: str, mode: str = "follow"):
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


def _keys(log: Path) -> list[str]:
    return [json.loads(line) for line in log.read_text().splitlines()]


def _state(home: Home) -> tuple[str, str | None]:
    (row,) = usecases.status(home).crew
    return row["state"], row["dialog"]


def _blocked(home: Home, dialog: str) -> None:
    poll(lambda: dialogs.probe(home, "jack") == dialog, what=f"the {dialog} dialog")
    assert _state(home) == ("blocked", dialog)


def test_trust_is_down_then_enter_and_nothing_else(cli, tmux, tmp_path):
    home, log = _recruit(cli, tmux, tmp_path, "claude", "claude-code-2.1.332/folder-trust.txt")
    _blocked(home, "folder_trust")
    done = dialogs.answer(home, "Jack", "folder_trust", ctx=CAPTAIN)
    assert done.cleared and done.option == "Yes, I trust this folder"
    assert _keys(log) == ["Down", "Enter"]
    assert _state(home) == ("assigned", None)


def test_a_dialog_that_changes_under_the_first_key_gets_no_enter(cli, tmux, tmp_path):
    home, log = _recruit(
        cli, tmux, tmp_path, "claude", "claude-code-2.1.332/folder-trust.txt", "vanish"
    )
    _blocked(home, "folder_trust")
    with pytest.raises(CaptainError) as err:
        dialogs.answer(home, "Jack", "folder_trust", ctx=CAPTAIN)
    assert err.value.code == "dialog_changed"
    assert _keys(log) == ["Down"]


def test_a_dialog_only_a_person_answers_is_refused_with_no_key(cli, tmux, tmp_path):
    home, log = _recruit(
        cli, tmux, tmp_path, "codex", "codex-0.169-120x40/extra-onboarding-model-migration.txt"
    )
    _blocked(home, "model_migration")
    with pytest.raises(CaptainError) as err:
        dialogs.answer(home, "Jack", ctx=CAPTAIN)
    assert err.value.code == "dialog_not_safe"
    assert "jump to the pane" in err.value.message
    with pytest.raises(CaptainError) as err:  # asked for another dialog than the one up
        dialogs.answer(home, "Jack", "folder_trust", ctx=CAPTAIN)
    assert err.value.code == "dialog_changed"
    assert _keys(log) == []
    assert _state(home) == ("blocked", "model_migration")


def test_a_pane_in_copy_mode_gets_no_key(cli, tmux, tmp_path):
    home, log = _recruit(cli, tmux, tmp_path, "codex", "codex-0.169-120x40/extra-folder-trust.txt")
    _blocked(home, "folder_trust")
    (row,) = usecases.status(home).crew
    tmux.tmux("copy-mode", "-t", row["pane"]["pane_id"])
    with pytest.raises(CaptainError) as err:
        dialogs.answer(home, "Jack", "folder_trust", ctx=CAPTAIN)
    assert err.value.code == "no_dialog"
    tmux.tmux("send-keys", "-t", row["pane"]["pane_id"], "-X", "cancel")
    assert _keys(log) == []
    done = dialogs.answer(home, "Jack", "folder_trust", ctx=CAPTAIN)  # out of it: answered
    assert done.cleared and _keys(log) == ["Enter"]
