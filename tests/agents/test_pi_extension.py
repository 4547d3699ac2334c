"""captain's pi extension as written into a home (captain_tui.agents.pi), and the pi hooks
failing open. The live behaviour is tests/agents/test_pi_captain.py."""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
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


# -- the extension's tool_call gate, run by node as pi runs it ------------------------------

FAKE_CAPTAIN = r"""
for last; do :; done
# the budget's gate runs first on every call (its own hook): no budget here, nothing said
if [ "$last" = budget ]; then
  cat > /dev/null
  [ "$MODE" = over ] && echo '{"block": true, "reason": "budget reached: B-1"}'
  exit 0
fi
n=$(cat "$STATE/count" 2>/dev/null || echo 0); echo $((n + 1)) > "$STATE/count"
cat > "$STATE/stdin"
case "$MODE" in
  allow) echo '{"decision": "allow"}' ;;
  deny) echo '{"decision": "deny", "reason": "The captain denied this: R-1"}' ;;
  session) echo '{"decision": "allow_session"}' ;;
  garbage) printf 'not json {\n{"decision": "allow"}\n' ;;
  crash) echo '{"decision": "allo'; exit 3 ;;
  hang) exec sleep 30 ;;
  held) trap 'echo TERM > "$STATE/term"; kill $!; exit 0' TERM; sleep 30 >/dev/null & wait ;;
esac
"""

# Loads the extension with pi's own loader (jiti) and calls its tool_call handler, as pi's
# runner does, once per case; prints what each returned and what the dialog was asked.
DRIVER = r"""
const { createJiti } = require(process.env.JITI);
const fs = require("node:fs");
(async () => {
  const mod = await createJiti(__filename).import(process.env.EXT);
  const on = {};
  (mod.default || mod)({ on: (event, f) => (on[event] = f) });
  const out = [];
  for (const c of JSON.parse(fs.readFileSync(process.env.CASES, "utf8"))) {
    process.env.MODE = c.mode;
    fs.rmSync(process.env.STATE + "/count", { force: true });
    const asked = [];
    const ctx = c.ui === null ? { hasUI: false } : {
      hasUI: true,
      ui: { confirm: async (title, message) => { asked.push([title, message]); return c.ui; } },
    };
    if (c.mode === "held") {  // the person interrupts the turn (Escape) while it is held
      const stop = new AbortController();
      setTimeout(() => stop.abort(), 300);
      ctx.signal = stop.signal;
    }
    let result;
    try {
      result = await on.tool_call({ toolName: c.tool, toolCallId: "t1", input: c.input }, ctx);
    } catch (e) {
      result = { threw: String(e) };
    }
    let runs = 0;
    try { runs = Number(fs.readFileSync(process.env.STATE + "/count", "utf8")); } catch {}
    out.push({ result: result === undefined ? null : result, asked, runs });
  }
  process.stdout.write(JSON.stringify(out));
})();
"""


def _jiti() -> Path | None:
    """pi's own TypeScript loader, next to the pi the live tests run."""
    from support.pi import pi_available, pi_binary

    if pi_available():
        return None
    for parent in Path(pi_binary()).resolve().parents:
        if parent.name == "node_modules":
            found = parent / "jiti"
            return found if (found / "package.json").exists() else None
    return None


def test_a_gated_call_is_never_allowed_without_the_captains_decision(tmp_path):
    """Every way the hook can fail (nothing said, garbage, a crash mid-line, killed at the
    gate's time) leaves the call to pi's confirm dialog, and with no UI blocks it: only the
    hook's decision allows. A turn interrupted while the call is held blocks it and tells
    the hook (SIGTERM: it closes the request as answered in the pane). "Allow for this
    session" lets the tool's later calls through without the hook; an ungated tool never
    runs it; what the dialog shows is escaped. A call past the budget is refused by the
    budget's gate before it is ever held."""
    jiti = _jiti()
    if jiti is None:
        pytest.skip("pi (and its jiti loader) is not installed here")
    state = tmp_path / "state"
    state.mkdir()
    script = tmp_path / "captain.sh"
    script.write_text(FAKE_CAPTAIN)
    ext = tmp_path / "captain-pi.ts"
    ext.write_text(pi.extension_text(["/bin/sh", str(script)], ["bash", "Write"], 1), "utf-8")
    driver = tmp_path / "driver.cjs"
    driver.write_text(DRIVER)
    hostile = "rm -rf build\x1b]0;owned\x07\u202e\U000e0041 " + "x" * 500
    bash = {"command": "make"}
    cases = [
        ("read", {"path": "a"}, "allow", True),  # ungated: no hook
        ("bash", bash, "allow", None),
        ("bash", bash, "deny", None),
        ("bash", bash, "", None),  # nothing said, no UI: blocked
        ("bash", bash, "", False),  # the person says No
        ("bash", bash, "garbage", True),  # the person says Yes
        ("bash", bash, "crash", None),
        ("bash", bash, "hang", None),  # killed at the gate's time (1 s)
        ("bash", bash, "held", True),  # the turn interrupted: the hook is told (SIGTERM)
        ("bash", {"command": hostile}, "", False),
        ("write", {"path": "x.md", "content": "hi"}, "session", None),
        ("write", {"path": "y.md", "content": "again"}, "deny", None),  # the session's: no hook
        ("bash", bash, "crash", True),  # allowed for the session: write only
        ("bash", bash, "over", True),  # past the budget: refused before any hold
    ]
    (tmp_path / "cases.json").write_text(
        json.dumps([{"tool": t, "input": i, "mode": m, "ui": u} for t, i, m, u in cases])
    )
    env = {
        "PATH": os.environ["PATH"],
        "JITI": str(jiti),
        "EXT": str(ext),
        "CASES": str(tmp_path / "cases.json"),
        "STATE": str(state),
        "HOME": str(tmp_path),
    }
    done = subprocess.run(
        ["node", str(driver)], capture_output=True, text=True, timeout=60, env=env, cwd=tmp_path
    )
    assert done.returncode == 0, done.stderr
    got = json.loads(done.stdout)
    blocked = {"block": True, "reason": pi_text("NO_ANSWER")}
    no = {"block": True, "reason": "Blocked by the person at the pane."}
    assert [(g["result"], g["runs"], len(g["asked"])) for g in got] == [
        (None, 0, 0),
        (None, 1, 0),
        ({"block": True, "reason": "The captain denied this: R-1"}, 1, 0),
        (blocked, 1, 0),
        (no, 1, 1),
        (None, 1, 1),
        (blocked, 1, 0),
        (blocked, 1, 0),
        ({"block": True, "reason": "The turn was interrupted before the captain answered."}, 1, 0),
        (no, 1, 1),
        (None, 1, 0),
        (None, 0, 0),
        (None, 1, 1),
        ({"block": True, "reason": "budget reached: B-1"}, 0, 0),
    ]
    assert json.loads((state / "stdin").read_text()) == {
        "hook_event_name": "tool_call",
        "tool_name": "bash",
        "tool_input": bash,
    }
    assert (state / "term").read_text() == "TERM\n"  # so it closes the request
    title, message = got[4]["asked"][0]
    assert title == "Allow bash? (the captain did not answer)" and message == "make"
    _, message = got[9]["asked"][0]
    assert message.startswith("rm -rf build\\u{1b}]0;owned\\u{7}\\u{202e}\\u{e0041} xxx")
    assert len(message) == 200 and message.endswith("…")


def pi_text(name: str) -> str:
    """A string constant of the extension's template."""
    m = re.search(rf"^const {name} =\s*\"([^\"]*)\";$", pi.template(), re.MULTILINE)
    assert m, name
    return m.group(1)
