"""Import hygiene: the crew-side path and ``state/`` never load textual, libtmux or
watchfiles, the dependency direction holds, and the wheel ships all three packages."""

from __future__ import annotations

import ast
import json
import os
import subprocess
import sys
import textwrap
import tomllib
from pathlib import Path

import pytest

REPO = Path(__file__).resolve().parents[1]
HEAVY = ("textual", "libtmux", "watchfiles")


def run_python(code: str, *, cwd: Path, env: dict[str, str] | None = None) -> dict:
    """Run ``code`` in a fresh interpreter; it prints one JSON object as its last line."""
    import os

    full_env = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")}
    full_env["PYTHONPATH"] = str(REPO)
    full_env.update(env or {})
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cwd,
        env=full_env,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0, proc.stderr
    assert "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_crew_side_commands_import_no_ui_or_tmux(cli, project: Path):
    recruited = cli("crew", "Jack", "--task", "T", "--owns", "src", "--allow", "edit", "--json")
    assert recruited.code == 0, recruited.err
    env = recruited.json["env"]

    code = """
        import contextlib, io, json, runpy, sys

        HEAVY = ("textual", "libtmux", "watchfiles")
        codes = {}

        def run(name, argv):
            sink = io.StringIO()
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                from captain_tui.cli.main import main
                codes[name] = main(argv)

        # the real entry point first: python -m captain_tui check ...
        sys.argv = ["captain", "check", "Jack", "edit", "src/x.py"]
        try:
            with contextlib.redirect_stdout(io.StringIO()):
                runpy.run_module("captain_tui", run_name="__main__")
        except SystemExit as exc:
            codes["-m check"] = exc.code
        run("check denied", ["check", "Jack", "edit", "elsewhere/x.py"])
        run("inbox", ["inbox", "Jack", "--json"])
        run("ask", ["ask", "Jack", "which one?", "--json"])
        run("done", ["done", "Jack", "--report", "R"])  # refused: the question is pending
        print(json.dumps({"codes": codes,
                          "loaded": sorted(m for m in sys.modules
                                           if m.split(".")[0] in HEAVY)}))
    """
    result = run_python(code, cwd=project, env=env)
    # the commands really ran (so their imports really happened)
    assert result["codes"] == {"-m check": 0, "check denied": 1, "inbox": 0, "ask": 0, "done": 1}, (
        result
    )
    assert result["loaded"] == [], result["loaded"]


def _state_modules() -> list[str]:
    return sorted(
        ".".join(p.relative_to(REPO).with_suffix("").parts)
        for p in (REPO / "state").rglob("*.py")
        if p.stem != "__init__"
    )


def test_every_state_module_imports_no_ui_or_tmux(tmp_path: Path):
    modules = _state_modules()
    assert "state.crew.protocol" in modules and "state.store" in modules
    code = f"""
        import importlib, json, sys
        for name in {modules!r}:
            importlib.import_module(name)
        print(json.dumps({{"loaded": sorted(m for m in sys.modules
                                            if m.split(".")[0] in {HEAVY!r}),
                          "ui": sorted(m for m in sys.modules
                                       if m.split(".")[0] in ("captain_tui", "widgets"))}}))
    """
    result = run_python(code, cwd=tmp_path)
    assert result["loaded"] == []
    assert result["ui"] == [], "state must not import captain_tui or widgets"


def _imported_roots(path: Path) -> set[str]:
    """Top-level packages a file imports anywhere (including inside functions)."""
    tree = ast.parse(path.read_text(), filename=str(path))
    roots = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            roots.update(alias.name.split(".")[0] for alias in node.names)
        elif isinstance(node, ast.ImportFrom) and node.level == 0 and node.module:
            roots.add(node.module.split(".")[0])
    return roots


@pytest.mark.parametrize(
    "package, forbidden",
    [
        ("state", set(HEAVY) | {"captain_tui", "widgets"}),
        ("widgets", {"captain_tui", "libtmux"}),
    ],
)
def test_dependency_direction_in_source(package: str, forbidden: set[str]):
    """Lazy imports inside functions count too: state never reaches up or out."""
    offenders = {}
    for path in sorted((REPO / package).rglob("*.py")):
        bad = _imported_roots(path) & forbidden
        if bad:
            offenders[str(path.relative_to(REPO))] = sorted(bad)
    assert offenders == {}


def test_wheel_ships_state_captain_tui_and_widgets():
    config = tomllib.loads((REPO / "pyproject.toml").read_text())
    packages = config["tool"]["hatch"]["build"]["targets"]["wheel"]["packages"]
    assert {"state", "captain_tui", "widgets"} <= set(packages)
    for name in ("state", "captain_tui", "widgets"):
        assert (REPO / name / "__init__.py").is_file(), name
    assert config["project"]["scripts"]["captain"] == "captain_tui.cli.main:main"
    deps = " ".join(config["project"]["dependencies"]).lower()
    assert "pydantic" in deps and "platformdirs" in deps


def test_a_crews_commands_never_load_pydantic(cli, project: Path):
    """check, ask, inbox (with mail and without) and the Stop hook run on plain records
    (``state.crew_side.fast``): importing pydantic alone would cost them their start-up budget.
    A record the plain reader cannot vouch for takes the full path, which loads it."""
    recruited = cli("crew", "Jack", "--task", "T", "--owns", "src", "--allow", "edit", "--json")
    assert recruited.code == 0, recruited.err
    env = recruited.json["env"]
    code = """
        import contextlib, io, json, sys
        from captain_tui.cli.main import main

        def run(argv, stdin=""):
            sink = io.StringIO()
            sys.stdin = io.StringIO(stdin)
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(io.StringIO()):
                code = main(argv)
            return code, sink.getvalue()

        out = {"inbox": run(["inbox", "Jack", "--json"]),
               "empty inbox": run(["inbox", "Jack", "--json"]),
               "check": run(["check", "Jack", "edit", "src/x.py"]),
               "check denied": run(["check", "Jack", "edit", "elsewhere/x.py"]),
               "stop": run(["hook", "claude", "Stop"], json.dumps({"session_id": "s"})),
               "ask": run(["ask", "Jack", "which one?", "--json"])}
        out["loaded"] = sorted(m for m in sys.modules if m.split(".")[0] == "pydantic")
        print(json.dumps(out))
    """
    result = run_python(code, cwd=project, env=env)
    assert [m["text"] for m in json.loads(result["inbox"][1])["messages"]] == ["T"]
    assert json.loads(result["empty inbox"][1]) == {"ok": True, "crew": "Jack", "messages": []}
    assert result["check"][0] == 0 and result["check denied"][0] == 1
    assert json.loads(result["stop"][1])["decision"] == "block"  # unfinished, no question
    assert json.loads(result["ask"][1])["question_id"].startswith("q_")
    assert result["loaded"] == [], result["loaded"]

    state = Path(env["CAPTAIN_HOME"]) / "crew" / "jack" / "state.json"
    record = json.loads(state.read_text())
    record["recruited_at"] = record["recruited_at"].replace("Z", "+00:00")  # valid, not ours
    state.write_text(json.dumps(record))
    again = run_python(
        """
        import contextlib, io, json, sys
        from captain_tui.cli.main import main
        with contextlib.redirect_stdout(io.StringIO()) as sink:
            code = main(["check", "Jack", "edit", "src/x.py"])
        print(json.dumps({"code": code, "pydantic": "pydantic" in sys.modules}))
    """,
        cwd=project,
        env=env,
    )
    assert again == {"code": 0, "pydantic": True}


def test_spend_accounting_loads_no_pydantic(tmp_path: Path):
    """``state.crew.spend`` runs in the Stop hooks: measuring and reading a figure load no
    pydantic (and no UI)."""
    from state.home import Home

    Home(tmp_path / "home")  # made here: a new home writes its record through the models
    code = f"""
        import json, sys
        from pathlib import Path
        from state.home import Home
        from state.crew import spend
        home = Home(Path({str(tmp_path / "home")!r}))
        t = Path({str(tmp_path / "t.jsonl")!r})
        t.write_text(json.dumps({{"type": "assistant", "message": {{"id": "m1",
            "model": "claude-sonnet-4-5", "usage": {{"input_tokens": 3,
            "output_tokens": 2}}}}}}) + "\\n")
        got = spend.measure(home, "jack", "asg_1", "claude", str(t))
        again = spend.assignment_spend(home, "jack", "asg_1")
        print(json.dumps({{"turns": [got.turns, again.turns],
                          "loaded": sorted(m for m in sys.modules
                                           if m.split(".")[0] in ("pydantic", *{HEAVY!r}))}}))
    """
    result = run_python(code, cwd=tmp_path)
    assert result == {"turns": [1, 1], "loaded": []}


def test_the_budget_gate_loads_no_pydantic(cli, project: Path, tmp_path: Path):
    """PreToolUse runs before every tool call: under a budget it measures the transcript
    and says nothing, and at the budget it refuses, once the held notice is said, without
    pydantic (only saying a notice, once per budget amount, pays for the models)."""
    from state.crew import budget, crewlog, spend
    from state.home import Home

    transcript = tmp_path / "t.jsonl"
    line = {
        "type": "assistant",
        "message": {
            "id": "m1",
            "model": "claude-sonnet-4-5",
            "usage": {"input_tokens": 1_000_000, "output_tokens": 2},  # $3.00
        },
    }
    transcript.write_text(json.dumps(line) + "\n")
    envs = {}
    for name, amount in (("Jack", "0.5"), ("Kim", "100")):
        r = cli("crew", name, "--task", "T", "--budget-usd", amount, "--no-launch", "--json")
        assert r.code == 0, r.err
        envs[name] = r.json["env"]
    home = Home(cli.home)
    snapshot, _ = crewlog.load(home, "jack")
    assert snapshot is not None
    measured = spend.measure(home, "jack", snapshot.assignment.assignment_id, "claude", None)
    assert budget.review(home, "jack", snapshot, measured) is None  # nothing read yet
    code = f"""
        import contextlib, io, json, os, sys
        from captain_tui.cli.main import main

        def run(env):
            os.environ.update(env)
            sink = io.StringIO()
            sys.stdin = io.StringIO(json.dumps({{"hook_event_name": "PreToolUse",
                "tool_name": "Bash", "transcript_path": {str(transcript)!r}}}))
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(io.StringIO()):
                main(["hook", "claude", "PreToolUse"])
            return sink.getvalue()

        out = {{"said": run({envs["Kim"]!r})}}
        out["loaded"] = sorted(m for m in sys.modules if m.split(".")[0] == "pydantic")
        print(json.dumps(out))
    """
    result = run_python(code, cwd=project, env=envs["Kim"])
    assert result == {"said": "", "loaded": []}  # $3.00 of $100: nothing to say

    # Jack is over his: the first refusal says the held notice (the models write it) ...
    measured = spend.measure(
        home, "jack", snapshot.assignment.assignment_id, "claude", str(transcript)
    )
    assert measured.cost_usd is not None and measured.cost_usd >= 3.0
    assert budget.review(home, "jack", snapshot, measured) is not None
    # ... and every call after it refuses on plain records
    transcript.write_text(transcript.read_text() + json.dumps(line).replace("m1", "m2") + "\n")
    jack = run_python(code.replace(repr(envs["Kim"]), repr(envs["Jack"])), cwd=project)
    answer = json.loads(jack["said"])["hookSpecificOutput"]
    assert answer["hookEventName"] == "PreToolUse" and answer["permissionDecision"] == "deny"
    assert "budget" in answer["permissionDecisionReason"]
    assert jack["loaded"] == []


# What a captain's everyday command must never load (#28): the cockpit's UI, tmux's
# library, the watcher, the HTTP API, the database driver (a home on files), and captain's
# own tmux runtime while no crew has a pane (here they are recorded only). The mail, the
# one-poll wait, work list and status run on plain records (state.crew_side.captain and
# .status), so they load neither pydantic nor importlib.metadata (the version is read only
# for --version; pydantic's plugin look-up reads it whenever a model is built), nor
# dataclasses (inspect, ast and dis behind it: ~5-10 ms of a cold start). The four besides
# status never parse the ledger's URL either: work list asks only whether anything names a
# database (state.work.naming); status describes the ledger, so it may. status reads the
# landing queue without the land's machinery and, for crew whose project is outside any
# repository (here), neither git's module nor a git process.
CAPTAIN_SIDE_NEVER = (*HEAVY, "fastapi", "uvicorn", "starlette", "psycopg", "captain_tui.runtime")
CAPTAIN_SIDE_PLAIN = ("tell", "answer", "wait --timeout 0", "work list", "status")
PLAIN_NEVER = ("pydantic", "importlib.metadata", "dataclasses", "inspect")
NOT_STATUS_NEVER = ("state.work.location",)
STATUS_NEVER = (
    "captain_tui.repo.landing",
    "captain_tui.repo.git",
    "captain_tui.repo.change",
    "state.work.ledger",
    "state.records",
    "subprocess",
)


def test_captain_side_commands_import_only_what_they_use(cli, project: Path):
    """status (two crew), tell, answer, wait --timeout 0 and work list, each in a fresh
    interpreter as ``python -m captain_tui`` runs it: each really ran, and none loaded
    what it does not use (a later change that imports one at the top of a module fails
    here, not slowly in the bench)."""
    crews = []
    for name, owns in (("Jack", "src/a"), ("Bo", "src/b")):
        done = cli(
            "crew", name, "--task", "T", "--owns", owns, "--allow", "edit", "--json", "--no-launch"
        )
        assert done.code == 0, done.err
        crews.append(done.json)
    jack, bo = crews
    asked = cli("ask", "Bo", "which way?", "--json", env=bo["env"])
    assert asked.code == 0, asked.err
    question = asked.json["question_id"]
    commands = {
        "status": ["status"],
        "tell": ["tell", "Jack", "one more thing", "--assignment", jack["assignment_id"]],
        "answer": ["answer", "Bo", question, "this way", "--assignment", bo["assignment_id"]],
        "wait --timeout 0": ["wait", "Jack", "--timeout", "0"],
        "work list": ["work", "list"],
    }
    code = """
        import contextlib, io, json, runpy, sys

        sys.argv = ["captain", *json.loads(sys.argv[1])]
        sink = io.StringIO()
        try:
            with contextlib.redirect_stdout(sink), contextlib.redirect_stderr(sink):
                runpy.run_module("captain_tui", run_name="__main__")
        except SystemExit as exc:
            code = exc.code
        print(json.dumps({"code": code, "out": sink.getvalue(), "loaded": sorted(sys.modules)}))
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")}
    env.update(PYTHONPATH=str(REPO), CAPTAIN_HOME=str(cli.home))
    loaded = {}
    for name, argv in commands.items():
        proc = subprocess.run(
            [sys.executable, "-c", textwrap.dedent(code), json.dumps(argv)],
            cwd=project,
            env=env,
            capture_output=True,
            text=True,
            timeout=60,
        )
        assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
        result = json.loads(proc.stdout.strip().splitlines()[-1])
        assert result["code"] == 0, (name, result["out"])
        never = CAPTAIN_SIDE_NEVER + (PLAIN_NEVER if name in CAPTAIN_SIDE_PLAIN else ())
        never += STATUS_NEVER if name == "status" else NOT_STATUS_NEVER
        loaded[name] = [
            m for m in result["loaded"] if any(m == n or m.startswith(n + ".") for n in never)
        ]
        if name == "status":
            assert "Jack" in result["out"] and "Bo" in result["out"], result["out"]
        elif name == "tell":
            assert result["out"].startswith("Queued msg_"), result["out"]
        elif name == "answer":
            assert result["out"].startswith(f"Answered {question}"), result["out"]
        elif name == "wait --timeout 0":
            assert result["out"].startswith("timeout: nothing from Jack"), result["out"]
        else:
            assert jack["work_id"] in result["out"] and bo["work_id"] in result["out"]
    assert loaded == {name: [] for name in commands}, loaded
    # and the records they wrote are the models' own: the full path reads them back
    unread = cli("inbox", "Jack", "--json", env=jack["env"])
    assert [m["text"] for m in unread.json["messages"]] == ["T", "one more thing"], unread.out
    answered = cli("inbox", "Bo", "--json", env=bo["env"])
    assert [m["text"] for m in answered.json["messages"]] == ["T", "this way"], answered.out
    owed = cli("wait", "Bo", "--timeout", "0", "--json")
    assert owed.json["status"] == "timeout", owed.out  # the answer acknowledged the question


def test_every_command_builds_only_its_own_parser_and_the_same_one():
    """``main.COMMANDS`` names every command the whole parser has (a command missing from
    it would build every parser, slower), and a command's own parser is the whole
    parser's: the same options, usage and help."""
    from captain_tui.cli.main import COMMANDS, EXTENSIONS, build_parser
    from captain_tui.cli.work_commands import GROUPS  # built one command at a time (below)

    def commands(parser):
        (sub,) = [a for a in parser._actions if a.dest == "command"]
        return sub.choices

    whole = commands(build_parser())
    assert set(whole) == COMMANDS
    for name in sorted(COMMANDS):
        own = commands(build_parser(name))
        module = EXTENSIONS.get(name)
        beside = {n for n, m in EXTENSIONS.items() if module and m == module}
        assert set(own) == ({name} if name in GROUPS else {name} | beside), name
        assert own[name].format_help() == whole[name].format_help(), name


def test_a_work_command_builds_only_its_own_parser_and_the_same_one():
    """``captain work list`` (and each work and deliveries command) builds only its own
    parser, not the dozen beside it; ``work_commands.GROUPS`` names every one the whole
    parser has, and each is the whole parser's: the same options, usage and help. A word
    that is none of them (a typo, ``-h``) gets them all, so its error lists them."""
    from captain_tui.cli.main import build_parser
    from captain_tui.cli.work_commands import GROUPS

    def commands(parser, dest):
        (sub,) = [a for a in parser._actions if a.dest == dest]
        return sub.choices

    whole = commands(build_parser(), "command")
    for group, names in GROUPS.items():
        assert tuple(commands(whole[group], f"{group}_command")) == names, group
        for name in names:
            own = commands(build_parser(group, name), "command")
            assert set(own) == {group}, (group, name)  # not the other group either
            inner = commands(own[group], f"{group}_command")
            assert set(inner) == {name}, (group, name)
            assert (
                inner[name].format_help()
                == commands(whole[group], f"{group}_command")[name].format_help()
            ), (group, name)
        for word in ("bogus", "-h", None):
            inner = commands(
                commands(build_parser(group, word), "command")[group], f"{group}_command"
            )
            assert tuple(inner) == names, (group, word)


# What the budget's gate must not load before a tool call when the crew has no budget: it
# decides from the crew's events listing and snapshot alone (state.crew_side.gate), before
# the parser, the hooks, the home's classes, typing or pathlib are imported.
NO_BUDGET_GATE_NEVER = (
    "argparse",
    "typing",
    "pathlib",
    "pydantic",
    "captain_tui.agents",
    "captain_tui.cli.args",
    "captain_tui.cli.captain_commands",
    "state.home",
    "state.store",
    "state.crew",
)


def test_the_gate_of_a_crew_without_a_budget_imports_nothing_else(cli, project: Path):
    """``captain hook claude PreToolUse`` (and Codex's) runs before every tool call; with no
    budget it answers (nothing) having imported none of ``NO_BUDGET_GATE_NEVER``, in a
    fresh interpreter as ``python -m captain_tui`` runs it. With a budget the full gate
    runs (and imports what it needs), so this tells the two apart."""
    envs = {}
    for name, owns, budget in (("Jack", "src/a", []), ("Kim", "src/b", ["--budget-usd", "9"])):
        done = cli("crew", name, "--task", "T", "--owns", owns, "--json", "--no-launch", *budget)
        assert done.code == 0, done.err
        envs[name] = done.json["env"]
    code = """
        import contextlib, io, json, runpy, sys

        sys.argv = ["captain", "hook", "claude", "PreToolUse"]
        sys.stdin = io.TextIOWrapper(io.BytesIO(b'{"tool_name": "Bash"}'))
        sink = io.StringIO()
        try:
            with contextlib.redirect_stdout(sink):
                runpy.run_module("captain_tui", run_name="__main__")
        except SystemExit as exc:
            code = exc.code
        print(json.dumps({"code": code, "out": sink.getvalue(), "loaded": sorted(sys.modules)}))
    """
    loaded = {}
    for name, env in envs.items():
        result = run_python(code, cwd=project, env=env)
        assert result["code"] == 0 and result["out"] == "", result
        loaded[name] = [
            m
            for m in result["loaded"]
            if any(m == n or m.startswith(n + ".") for n in NO_BUDGET_GATE_NEVER)
        ]
    assert loaded["Jack"] == [], loaded["Jack"]
    assert "captain_tui.agents.hooks" in loaded["Kim"]  # a budget: the full gate decided
