"""captain's pi extension as written into a home (captain_tui.agents.pi), and the pi hooks
failing open. The live behaviour is tests/agents/test_pi_captain.py."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
from pathlib import Path

import pytest

from captain_tui.agents import pi
from captain_tui.agents.hooks import run_hook
from captain_tui.agents.kinds import WAKE_LINE
from state.home import Home

HOSTILE = [
    '/opt/it\'s "here"/python',
    "-m",
    "captain_tui",
    "`rm -rf /`",
    "$(id)",
    '"]; process.exit(1); //',
    "*/ require('x') /*",
    "line\nbreak",
    "\u2028\u2029",
    "</script>",
    "\\",
    "ünï ✓",
]


def _literal(text: str) -> str:
    m = re.search(r"^const CAPTAIN: string\[\] = (.*);$", text, re.MULTILINE)
    assert m, "the CAPTAIN line is missing"
    return m.group(1)


def _const(text: str, name: str):
    m = re.search(rf"^const {name}: [a-z\[\]]+ = (.*);$", text, re.MULTILINE)
    assert m, f"the {name} line is missing"
    return m.group(1)


def test_the_argv_is_one_ascii_json_literal_whatever_it_holds():
    text = pi.extension_text(HOSTILE)
    literal = _literal(text)
    assert json.loads(literal) == HOSTILE
    assert literal.isascii() and "\n" not in literal
    assert pi.MARKER not in text
    # nothing else in the template changed
    back = text.replace(literal, pi.MARKER)
    for marker, name in ((pi.GATED_MARKER, "GATED"), (pi.GATE_TIMEOUT_MARKER, "GATE_TIMEOUT_MS")):
        back = back.replace(f"= {_const(text, name)};", f"= {marker};")
    assert back == pi.template()


def test_the_gated_tools_and_their_time_are_the_homes_settings(tmp_path, monkeypatch):
    """``[crew] pi_approval_tools`` (none by default) and ``approval_timeout`` plus the
    grace are written into the crew's extension when its pi starts, as JSON literals."""
    bindir = tmp_path / "bin"
    bindir.mkdir()
    (bindir / "pi").write_text("#!/bin/sh\n")
    (bindir / "pi").chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    home = Home(tmp_path / "home")
    path = Path(shlex.split(pi.command(home, "jack"))[2])
    assert json.loads(_const(path.read_text("utf-8"), "GATED")) == []  # pi as without captain
    (home.root / "config.toml").write_text(
        '[crew]\npi_approval_tools = ["bash", "Write", "edit"]\napproval_timeout = 100\n'
    )
    text = Path(shlex.split(pi.command(Home(home.root), "jack"))[2]).read_text("utf-8")
    assert json.loads(_const(text, "GATED")) == ["bash", "edit", "write"]
    assert json.loads(_const(text, "GATE_TIMEOUT_MS")) == (100 + 1 + 15) * 1000


@pytest.mark.parametrize("bad", [[], [""], ["ok", ""], [1]])
def test_a_bad_argv_is_refused(bad):
    with pytest.raises(ValueError):
        pi.extension_text(bad)


def test_command_runs_pi_with_the_crews_extension_and_the_wake_line(tmp_path, monkeypatch):
    bindir = tmp_path / "bin"
    bindir.mkdir()
    fake = bindir / "pi"
    fake.write_text("#!/bin/sh\n")
    fake.chmod(0o755)
    monkeypatch.setenv("PATH", f"{bindir}{os.pathsep}{os.environ['PATH']}")
    home = Home(tmp_path / "home")
    argv = shlex.split(pi.command(home, "jack"))
    path = Path(argv[2])
    assert argv == [str(fake), "-e", str(path), WAKE_LINE]
    assert path == home.store.dir("agents", "jack") / "captain-pi.ts"
    assert json.loads(_literal(path.read_text("utf-8")))[1:] == ["-P", "-m", "captain_tui"]


def test_pi_without_pi_on_path_is_a_clear_refusal(tmp_path, monkeypatch):
    from state.errors import CaptainError

    monkeypatch.setenv("PATH", str(tmp_path))
    with pytest.raises(CaptainError) as err:
        pi.command(Home(tmp_path / "home"), "jack")
    assert err.value.code == "agent_not_found"


@pytest.mark.parametrize("event", ["before_agent_start", "agent_end", "turn_end"])
@pytest.mark.parametrize(
    "stdin", ["", "not json", "[]", json.dumps({"hook_event_name": "before_agent_start"})]
)
def test_pi_hooks_fail_open_outside_a_crew(event, stdin, capsys):
    out = io.StringIO()
    assert run_hook("pi", event, None, io.StringIO(stdin), out, {}) == 0
    assert out.getvalue() == ""  # nothing the extension would inject
    assert "failed open" in capsys.readouterr().err
