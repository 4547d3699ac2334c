"""pi and Codex crews against hostile input: what the project directory holds, what an agent
sends a hook, and how much mail piles up. Each test proved a hole before its fix.

The screen reader's hostile screens are tests/runtime/test_pane_reader_hostile.py.
"""

from __future__ import annotations

import io
import json
import os
import re
import shlex
import subprocess
import tomllib
from pathlib import Path

import pytest

from captain_tui.agents import codex, pi
from captain_tui.agents.hooks import run_hook
from captain_tui.agents.kinds import captain_command
from state.crew import notify, protocol
from state.home import Home
from state.inputs import MAX_TEXT_BYTES

REPO = Path(__file__).resolve().parents[2]
EXTENSION = (REPO / "captain_tui" / "agents" / "pi_extension.ts").read_text("utf-8")


def hook(env, agent: str, event: str, stdin, out=None) -> str:
    out = out if out is not None else io.StringIO()
    stream = io.StringIO(stdin) if isinstance(stdin, str) else stdin
    assert run_hook(agent, event, None, stream, out, env) == 0
    return out.getvalue()


# -- the project directory may not supply captain's code ------------------------------------


def _hostile_project(project: Path) -> Path:
    """A project (which the agent can write) holding packages named like captain's own."""
    marker = project / "PWNED"
    for package in ("state", "captain_tui"):
        (project / package).mkdir(exist_ok=True)
        (project / package / "__init__.py").write_text(
            f"open({str(marker)!r}, 'w').write({package!r})\n", "utf-8"
        )
    return marker


def _env(jack) -> dict[str, str]:
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")}
    env.update(jack.env)
    env.pop("PYTHONPATH", None)  # as in a crew pane: captain is installed, not on a path
    return env


def test_codex_hooks_run_from_the_project_never_import_the_projects_code(
    home: Home, jack, project: Path
):
    # Codex runs its hooks in the session's cwd, outside its sandbox; `python -m` puts the
    # cwd first on sys.path, so a `state/` the sandboxed model wrote would run unsandboxed.
    marker = _hostile_project(project)
    for value in codex.hook_args(captain_command())[1::2]:
        for event, groups in tomllib.loads(value)["hooks"].items():
            if event == "state":
                continue
            command = groups[0]["hooks"][0]["command"]
            proc = subprocess.run(
                ["/bin/sh", "-c", command],
                cwd=project,
                env=_env(jack),
                input=json.dumps({"hook_event_name": event}),
                capture_output=True,
                text=True,
                timeout=60,
            )
            assert proc.returncode == 0, proc.stderr
            assert not marker.exists(), f"the project's {marker.read_text()!r} ran"
    assert notify.wait(home, "Jack", timeout=0) is not None  # captain's own hook did run


def test_the_pi_extensions_argv_never_imports_the_projects_code(home: Home, jack, project: Path):
    marker = _hostile_project(project)
    literal = re.search(
        r"^const CAPTAIN: string\[\] = (.*);$", pi.extension_text(captain_command()), re.MULTILINE
    ).group(1)
    argv = [*json.loads(literal), "hook", "pi", "agent_end"]
    proc = subprocess.run(
        argv,
        cwd=project,
        env=_env(jack),
        capture_output=True,
        text=True,
        input=json.dumps({"last_assistant_text": "done"}),
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert not marker.exists(), f"the project's {marker.read_text()!r} ran"
    assert notify.wait(home, "Jack", timeout=0).status == "idle"


# -- hook input -----------------------------------------------------------------------------


class EndlessStdin(io.TextIOBase):
    """An agent that never stops writing: only a bounded read() returns."""

    def readable(self) -> bool:
        return True

    def read(self, size: int | None = -1) -> str:
        if size is None or size < 0:
            raise AssertionError("the hook read its whole stdin, unbounded")
        return "x" * size


@pytest.fixture(autouse=True)
def native_prompt_at_once(home: Home):
    """These tests are about the notice a permission prompt raises: the hook does not hold
    the prompt for a decision here (``[crew] approval_timeout = 0``; holding is
    tests/agents/test_approvals.py's)."""
    (home.root / "config.toml").write_text("[crew]\napproval_timeout = 0\n")


@pytest.mark.parametrize(
    ("agent", "event"), [("pi", "agent_end"), ("codex", "Stop"), ("codex", "PermissionRequest")]
)
def test_hook_stdin_is_read_bounded(home: Home, jack, capsys, agent, event):
    assert hook(dict(jack.env), agent, event, EndlessStdin()) == ""
    err = capsys.readouterr().err
    assert "failed open" in err and "unbounded" not in err
    assert notify.wait(home, "Jack", timeout=0) is None


@pytest.mark.parametrize(
    ("agent", "event"),
    [
        ("pi", "agent_end"),
        ("pi", "before_agent_start"),
        ("codex", "Stop"),
        ("codex", "PermissionRequest"),
    ],
)
@pytest.mark.parametrize(
    "named",
    ["\x1b]0;owned\x07\x1b[2J" + "A" * 200_000, "\u202eevil\u2066" * 5000],
    ids=["escapes", "bidi"],
)
def test_failure_notes_are_one_bounded_terminal_safe_line(jack, capsys, agent, event, named):
    # stderr of a hook reaches the agent's screen (Codex shows it); whatever the agent
    # sent, the note is one short line with nothing a terminal would obey
    stdin = json.dumps({"hook_event_name": named}, ensure_ascii=False)
    assert hook(dict(jack.env), agent, event, stdin) == ""
    err = capsys.readouterr().err
    assert err.endswith("\n") and err.count("\n") == 1
    assert len(err) <= 1200
    assert not re.search("[\x00-\x08\x0b-\x1f\x7f-\x9f\u202a-\u202e\u2066-\u2069]", err)


def test_pi_mail_line_fits_what_the_extension_reads_and_the_rest_stays_unread(home: Home, jack):
    # The extension keeps MAX_OUTPUT characters of the hook's output; a longer line is cut,
    # is not JSON, and pi gets nothing -- while captain has written every receipt.
    limit = (
        int(
            re.search(r"const MAX_OUTPUT = ([0-9* ]+);", EXTENSION)
            .group(1)
            .replace(" ", "")
            .replace("*", " ")
            .split()[0]
        )
        * 1024
        * 1024
    )
    texts = [f"part {i}: " + "\u202e" * ((MAX_TEXT_BYTES - 16) // 3) for i in range(12)]
    told = [protocol.tell(home, "Jack", t, assignment_id=jack.assignment_id) for t in texts]
    env = dict(jack.env)
    delivered: list[str] = []
    for _ in range(len(told) + 2):
        out = hook(
            env,
            "pi",
            "before_agent_start",
            json.dumps({"hook_event_name": "before_agent_start", "prompt": "go"}),
        )
        if not out:
            break
        assert out.count("\n") == 1 and len(out) < limit
        delivered.append(json.loads(out)["message"])
    ids = [jack.message_id] + [m.message_id for m in told]
    text = "\n".join(delivered)
    assert len(delivered) > 1  # it took several prompts: one never held all of it
    for mid in ids:
        assert text.count(mid) == 1  # every message once, none lost, none twice
        assert (home.receipts_dir("jack") / f"{mid}.json").exists()
    for part in delivered:
        assert part.startswith("Mail from the captain") and "Protocol:" in part


def test_pi_extension_sends_a_bounded_last_assistant_text():
    # agent_end's input is the whole last reply; the hook reads a bounded stdin, so the
    # extension cuts the text (never the JSON) to fit
    from captain_tui.agents.hooks import MAX_INPUT

    for field in ("prompt", "last_assistant_text", "stop_reason", "error_message"):
        assert re.search(
            rf"{field}[:=,]? *clip\(", EXTENSION.replace("const prompt = ", "prompt: ")
        ), field
    size = re.search(r"const MAX_TEXT = ([0-9* ]+);", EXTENSION).group(1)
    units = eval(size, {"__builtins__": {}})  # noqa: S307 - a product of integer literals
    # JSON.stringify writes at most 6 characters (\u001b) per UTF-16 unit of a field
    assert 4 * 6 * units + 1024 < MAX_INPUT


# -- generated code and config --------------------------------------------------------------

HOSTILE_PATH = (
    '/opt/it\'s "q" `id` ${HOME} $(id) */ \\ \u2028\u2029 ünï ✓ \x7f \t' + "/long" * 200 + "/python"
)


def test_codex_command_line_round_trips_a_hostile_captain_path(monkeypatch):
    monkeypatch.setattr(codex, "require", lambda program, agent: "/usr/bin/codex")
    monkeypatch.setattr(codex, "captain_command", lambda: [HOSTILE_PATH, "-m", "captain_tui"])
    argv = shlex.split(codex.command())
    assert argv[:4] == ["/usr/bin/codex", *codex.BASE_ARGS]
    hooks: dict = {}
    for flag, value in zip(argv[4::2], argv[5::2], strict=True):
        assert flag == "-c"
        hooks.update(tomllib.loads(value)["hooks"])
    trusted = {}
    for event, label in codex.EVENTS.items():
        command = hooks[event][0]["hooks"][0]["command"]
        assert shlex.split(command) == [HOSTILE_PATH, "-m", "captain_tui", "hook", "codex", event]
        timeout = hooks[event][0]["hooks"][0]["timeout"]
        trusted[codex.hook_key(label)] = {
            "trusted_hash": codex.trusted_hash(label, command, timeout)
        }
    assert hooks["state"] == trusted  # trust for captain's two hooks, and nothing else


def test_lone_surrogates_in_captains_path_are_refused_not_passed_on():
    # an undecodable byte in the path (surrogateescape) cannot be written into JSON/TOML as
    # the same path: refused when the crew starts, not a pi that silently never hears mail
    from captain_tui.agents.kinds import captain_argv

    with pytest.raises(ValueError):
        captain_argv(["/opt/\udcff/python", "-m", "captain_tui"])
    with pytest.raises(ValueError):
        pi.extension_text(["/opt/\udcff/python"])
    with pytest.raises(ValueError):
        codex.hook_args(["/opt/\udcff/python"])
