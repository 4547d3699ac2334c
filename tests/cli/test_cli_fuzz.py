"""Hostile arguments against ``captain_tui.cli.main.main()``, in process, with Hypothesis.

Whatever the argv: no exception escapes ``main``, no traceback is printed, the exit code is
0, 1 or 2, 2 only for usage errors (argparse's message), and every exit 1 carries a stable
``[code]`` from ``state.errors.CODES`` (never the catch-all ``internal_error``, which means
an unexpected exception was swallowed).

Options are passed as ``--opt=value`` before ``--`` and positionals after it, so a value
that starts with ``-`` cannot be a usage error; those examples must never exit 2.
"""

from __future__ import annotations

import io
import json
import math
import os
import re
import shutil
import tempfile
from contextlib import redirect_stderr, redirect_stdout
from pathlib import Path

import pytest
from hypothesis import (
    HealthCheck,
    assume,
    currently_in_test_context,
    event,
    given,
    settings,
)
from hypothesis import strategies as st

from captain_tui.cli.args import wants_json
from captain_tui.cli.main import build_parser, main
from state.errors import CODES

SETTINGS = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])

COMMANDS = [
    "crew",
    "assign",
    "tell",
    "answer",
    "wait",
    "status",
    "dismiss",
    "land",
    "check",
    "ask",
    "done",
    "inbox",
    "work",
    "deliveries",
    "tokens",
    "diff",
]
# the ledger's and tokens' own subcommands, so the fuzzer reaches past `work`/`deliveries`
SUBCOMMANDS = [
    "list",
    "show",
    "cancel",
    "replay",
    "resolve",
    "submit",
    "claim",
    "heartbeat",
    "report",
    "ingest",
    "create",
    "revoke",
]
REAL = "<the real assignment>"  # replaced by the live assignment ID of Jack

# Any character at all, lone surrogates included (argv from a real shell can carry
# surrogateescape'd bytes; in process we go further and allow every code point).
ANY_CHAR = st.characters(exclude_categories=())
# A positional value of exactly "--" trips CPython 3.11's argparse (the value arrives as an
# empty list); that is pinned by test_double_dash_as_a_value below and kept out of the
# strategies so the fuzzers can find anything else.
any_text = st.text(ANY_CHAR, max_size=40).filter(lambda s: s != "--")
# What an environment variable can hold: no NUL, surrogates only in the surrogateescape range.
ENV_CHAR = st.one_of(
    st.characters(exclude_categories=("Cs",), exclude_characters="\x00"),
    st.characters(min_codepoint=0xDC80, max_codepoint=0xDCFF),
)
env_text = st.text(ENV_CHAR, max_size=30)

names = st.one_of(
    st.sampled_from(
        ["Jack", "jack", "JACK", "Nobody", "", "../x", "a" * 33, "Jack\n", "J\x1bck", "-h"]
    ),
    any_text,
)
actions = st.one_of(st.sampled_from(["read", "edit", "build", "delete", "EDIT", ""]), any_text)
paths = st.one_of(
    st.sampled_from(
        ["src/x.py", "src", "/", "..", "src/../../etc", "~", "", "src/\x00x", "src/\udcff"]
    ),
    any_text,
)
texts = st.one_of(
    st.sampled_from(["hello", "", " ", "a\nb\tc", "\x1b[31m", "\x07", "x" * 70_000]), any_text
)
ids = st.one_of(
    st.sampled_from([REAL, "asg_x", "", "..", "../../home", "q_x", "dlv_x", "a/b"]), any_text
)
# Mostly the one real crew, so the fuzzers also reach the paths past name validation.
jack = st.sampled_from(["Jack", "jack", "JACK"])
crew_names = st.integers(0, 3).flatmap(lambda i: names if i == 0 else jack)  # 3 in 4: Jack

REFUSAL = re.compile(r"^captain: \[([a-z_]+)\] ", re.M)


def _event(label: str) -> None:
    if currently_in_test_context():
        event(label)  # shown by --hypothesis-show-statistics: what the fuzzers reached


def _real(value, info: dict):
    return info["assignment_id"] if value == REAL else value


# -- running main() in process --------------------------------------------------------------


def invoke(argv: list[str]) -> tuple[int, str, str]:
    """Run main(argv) with real text streams (UTF-8, strict, as a terminal would be)."""
    out_b, err_b = io.BytesIO(), io.BytesIO()
    out = io.TextIOWrapper(out_b, encoding="utf-8", errors="strict", write_through=True)
    err = io.TextIOWrapper(err_b, encoding="utf-8", errors="strict", write_through=True)
    with redirect_stdout(out), redirect_stderr(err):
        try:
            code = main(argv)
        except SystemExit as exc:
            code = exc.code
        out.flush()
        err.flush()
    return code, out_b.getvalue().decode("utf-8"), err_b.getvalue().decode("utf-8")


def check_outcome(
    argv: list[str], code, out: str, err: str, *, as_json: bool, usage_possible: bool
) -> str | None:
    """Assert the contract for one run; returns the refusal code on exit 1."""
    where = f"argv={argv!r}\nexit={code!r}\nstdout={out[:2000]!r}\nstderr={err[:2000]!r}"
    assert isinstance(code, int) and code in (0, 1, 2), where
    _event(f"{argv[0] if argv and argv[0] in COMMANDS else 'other'} exit {code}")
    assert "Traceback" not in err and "Traceback" not in out, where
    if code == 2:
        assert usage_possible, "a well-formed command exited 2\n" + where
        if wants_json(argv):  # asked for JSON: one usage refusal on stdout
            error = json.loads(out)["error"]
            assert error["code"] == "usage" and error["usage"].startswith("usage:"), where
            assert err == "", where
        else:
            assert "usage:" in err and "error:" in err, where
        return None
    if code == 1:
        if as_json:
            payload = json.loads(out)
            assert set(payload) == {"ok", "error"} and payload["ok"] is False, where
            refusal = payload["error"]["code"]
            assert isinstance(payload["error"]["message"], str), where
        else:
            found = REFUSAL.search(err)
            assert found, where
            refusal = found.group(1)
        assert refusal in CODES, where
        assert refusal != "internal_error", "an unexpected exception was swallowed\n" + where
        _event(f"refusal {refusal}")
        return refusal
    if as_json and out.strip():
        payload = json.loads(out)
        assert payload.get("ok") is True, where
    return None


# -- homes ----------------------------------------------------------------------------------


@pytest.fixture(scope="module")
def world():
    """Per-test homes (created on first use), cwd in a scratch project, no CAPTAIN_* leak."""
    root = Path(tempfile.mkdtemp(prefix="captain-fuzz-"))
    project = root / "project"
    (project / "src").mkdir(parents=True)
    homes: dict[str, dict] = {}

    def home(label: str, *, with_crew: bool = True, config: str | None = None) -> dict:
        if label in homes:
            return homes[label]
        path = root / f"home-{label}"
        info: dict = {"home": str(path)}
        if with_crew:
            code, out, err = invoke(
                [
                    "crew",
                    f"--home={path}",
                    "--task=the task",
                    "--owns=src",
                    "--allow=edit",
                    "--json",
                    "--",
                    "Jack",
                ]
            )
            assert code == 0, err
            info.update(json.loads(out))
        else:
            code, _, err = invoke(["status", f"--home={path}"])
            assert code == 0, err
        if config is not None:
            (path / "config.toml").write_text(config)
        homes[label] = info
        return info

    with pytest.MonkeyPatch.context() as mp:
        for key in list(os.environ):
            if key.startswith("CAPTAIN_") and key != "CAPTAIN_TMUX_SOCKET":
                mp.delenv(key)  # the run's private tmux server stays: never the user's
        mp.chdir(project)
        mp.setenv("CAPTAIN_HOME", str(root / "home-default"))
        yield home
    shutil.rmtree(root, ignore_errors=True)


def _opt(flag: str, value: str | None) -> list[str]:
    return [] if value is None else [f"--{flag}={value}"]


# -- crew side: check, ask, done, inbox ------------------------------------------------------


@SETTINGS
@given(
    command=st.sampled_from(["check", "ask", "done", "inbox"]),
    name=crew_names,
    action=st.one_of(st.just("edit"), actions),
    paths=st.lists(paths, max_size=3),
    text=texts,
    assignment=st.one_of(st.none(), st.none(), ids),
    as_json=st.booleans(),
    context=st.sampled_from(["real", "captain", "random", "no-assignment"]),
    env_values=st.tuples(env_text, env_text, env_text),
)
def test_crew_side_commands_never_crash(
    world, command, name, action, paths, text, assignment, as_json, context, env_values
):
    info = world("crew-side")
    assignment = _real(assignment, info)
    argv = [command, f"--home={info['home']}"] + (["--json"] if as_json else [])
    if command == "check":
        argv += _opt("assignment", assignment) + ["--", name, action, *paths]
    elif command == "ask":
        argv += _opt("assignment", assignment) + ["--", name, text]
    elif command == "done":
        argv += _opt("report", text if paths else None) + _opt("assignment", assignment)
        argv += ["--", name]
    else:
        argv += ["--", name]

    env = {}
    if context == "real":
        env = dict(info["env"])
    elif context == "no-assignment":
        env = {k: v for k, v in info["env"].items() if k != "CAPTAIN_ASSIGNMENT"}
    elif context == "random":
        crew, incarnation, assignment_env = env_values
        env = {
            "CAPTAIN_ROLE": "crew",
            "CAPTAIN_CREW": crew,
            "CAPTAIN_INCARNATION": incarnation,
            "CAPTAIN_ASSIGNMENT": assignment_env,
        }
    env.pop("CAPTAIN_HOME", None)
    with pytest.MonkeyPatch.context() as mp:
        for key, value in env.items():
            mp.setenv(key, value)
        code, out, err = invoke(argv)
    check_outcome(argv, code, out, err, as_json=as_json, usage_possible=False)


# -- captain side: crew, assign, tell, answer, dismiss, land, status -------------------------


@SETTINGS
@given(
    command=st.sampled_from(["crew", "assign", "tell", "answer", "dismiss", "land", "status"]),
    name=crew_names,
    text=texts,
    owns=st.one_of(st.none(), st.lists(paths, max_size=2)),
    allow=st.one_of(st.none(), st.lists(actions, max_size=2)),
    handoff=st.one_of(st.none(), ids),
    assignment=ids,
    question=ids,
    cwd=st.one_of(st.none(), paths),
    as_json=st.booleans(),
)
def test_captain_side_commands_never_crash(
    world, command, name, text, owns, allow, handoff, assignment, question, cwd, as_json
):
    info = world("captain-side")
    handoff, assignment = _real(handoff, info), _real(assignment, info)
    if command == "dismiss" and name.lower() == "jack":
        name = "Jacky"  # keep Jack on the crew so the other commands stay reachable
    argv = [command, f"--home={info['home']}"] + (["--json"] if as_json else [])
    grants = [f"--owns={p}" for p in owns or []] + [f"--allow={a}" for a in allow or []]
    if command == "crew":
        argv += [
            f"--task={text}",
            *grants,
            *_opt("handoff", handoff),
            *_opt("cwd", cwd),
            "--",
            name,
        ]
    elif command == "assign":
        argv += [f"--task={text}", f"--handoff={handoff or assignment}", *grants, "--", name]
    elif command == "tell":
        argv += [f"--assignment={assignment}", "--", name, text]
    elif command == "answer":
        argv += [f"--assignment={assignment}", "--", name, question, text]
    elif command == "dismiss":
        argv += ["--", name]
    elif command == "land":  # hostile names, IDs and reasons: a refusal, never a crash
        argv += [f"--assignment={assignment}", "--allow-outside", f"--reason={text}", "--", name]
    else:
        argv += ["--all"] if handoff is None else []
    code, out, err = invoke(argv)
    check_outcome(argv, code, out, err, as_json=as_json, usage_possible=False)


# -- wait: timeouts in and out of range, random acks -----------------------------------------


def _valid_seconds(text: str) -> bool:
    try:
        value = float(text)
    except ValueError:
        return False
    return math.isfinite(value) and value >= 0


timeouts = st.one_of(
    st.sampled_from(
        [
            "0",
            "-0",
            "-1",
            "nan",
            "NaN",
            "inf",
            "-inf",
            "1e309",
            "1e-320",
            "1_0",
            " 5 ",
            "0x10",
            "",
            "abc",
            "१",
        ]
    ),
    st.floats(allow_nan=True, allow_infinity=True).map(repr),
    st.integers(min_value=-(10**30), max_value=10**30).map(str),
    any_text,
)


@SETTINGS
@given(timeout=timeouts, as_json=st.booleans(), use_all=st.booleans())
def test_wait_timeout_values(world, timeout, as_json, use_all):
    # an unknown crew refuses before any waiting, so any valid timeout returns at once
    info = world("wait-unknown", with_crew=False)
    argv = ["wait", f"--home={info['home']}", f"--timeout={timeout}"]
    argv += ["--json"] if as_json else []
    argv += ["--", "Nobody"]
    code, out, err = invoke(argv)
    if _valid_seconds(timeout):
        refusal = check_outcome(argv, code, out, err, as_json=as_json, usage_possible=False)
        assert code == 1 and refusal == "unknown_crew", (argv, code, out, err)
    else:
        assert code == 2, (argv, code, out, err)
        check_outcome(argv, code, out, err, as_json=as_json, usage_possible=True)


@SETTINGS
@given(
    timeout=st.floats(min_value=0, max_value=0.02),
    ack=st.one_of(st.none(), ids),
    name=st.sampled_from(["Jack", "jack", None]),
    as_json=st.booleans(),
)
def test_wait_on_a_real_crew(world, timeout, ack, name, as_json):
    info = world("wait-real")
    ack = _real(ack, info)
    argv = ["wait", f"--home={info['home']}", f"--timeout={timeout!r}", *_opt("ack", ack)]
    argv += ["--json"] if as_json else []
    argv += ["--all"] if name is None else ["--", name]
    code, out, err = invoke(argv)
    refusal = check_outcome(argv, code, out, err, as_json=as_json, usage_possible=False)
    if code == 1:
        assert refusal in {"unknown_delivery", "unacknowledged"}, (argv, out, err)
    elif as_json:
        payload = json.loads(out)
        assert payload["status"] == "timeout" and payload["delivery_id"] is None, payload


# -- anything at all ------------------------------------------------------------------------

FLAGS = [
    "--json",
    "--all",
    "--timeout",
    "--ack",
    "--task",
    "--owns",
    "--allow",
    "--handoff",
    "--assignment",
    "--report",
    "--cwd",
    "--no-launch",
    "--",
    "-h",
    "--state",
    "--source",
    "--limit",
    "--after",
    "--generation",
    "--to",
    "--reason",
    "--outcome",
    "--endpoint",
    "--delivery-id",
    "--role",
    "wrk_0",
    "whd_0",
]
tokens = st.one_of(
    st.sampled_from(COMMANDS + SUBCOMMANDS + FLAGS + ["Jack", "0", "src", "edit"]), any_text
)


# Commands that run until a person quits: the cockpit (no command), the demo, watch, serve.
INTERACTIVE = (None, "demo", "watch", "serve")


def _interactive(argv: list[str]) -> bool:
    sink = io.StringIO()
    with redirect_stdout(sink), redirect_stderr(sink):
        try:
            return getattr(build_parser().parse_args(argv), "command", None) in INTERACTIVE
        except SystemExit:
            return False  # a usage error: exits 2 without running anything


def _dangerous(argv: list[str]) -> bool:
    """Args we must not fuzz: a --home anywhere on disk, a long real wait, or a command
    that runs until a person quits."""
    if _interactive(argv):
        return True
    for i, arg in enumerate(argv):
        if arg.startswith("--ho"):
            return True
        if arg.startswith("--t") and (
            arg.partition("=")[2] or (argv[i + 1] if i + 1 < len(argv) else "")
        ):
            value = arg.partition("=")[2] or argv[i + 1]
            try:
                if float(value) > 0.05:
                    return True
            except ValueError:
                pass
    return False


def _json_mode(argv: list[str]) -> bool:
    """Whether argparse reads --json as the flag (not, say, as a positional after --)."""
    sink = io.StringIO()
    with redirect_stdout(sink), redirect_stderr(sink):
        try:
            return bool(getattr(build_parser().parse_args(argv), "json", False))
        except SystemExit:
            return False


@SETTINGS
@given(
    argv=st.one_of(
        st.lists(tokens, max_size=7),
        st.tuples(st.sampled_from(COMMANDS), st.lists(tokens, max_size=6)).map(
            lambda t: [t[0], *t[1]]
        ),
    )
)
def test_any_argv_never_crashes(world, argv):
    assume(not _dangerous(argv))
    assume(argv.count("--") <= 1)  # see test_double_dash_as_a_value
    # the home's default wait is 0 s, so a bare 'wait --all' polls once instead of a day
    info = world("anything", with_crew=True, config="[crew]\nwait_timeout = 0\n")
    with pytest.MonkeyPatch.context() as mp:
        mp.setenv("CAPTAIN_HOME", info["home"])
        code, out, err = invoke(list(argv))
    check_outcome(argv, code, out, err, as_json=_json_mode(list(argv)), usage_possible=True)


# -- the home itself ------------------------------------------------------------------------


@SETTINGS
@given(
    suffix=st.one_of(
        st.sampled_from(["", "..", " ", "\n", "\x1b[2J", "-", "\udcff", "\udc80x", "é"]),
        st.text(ENV_CHAR.filter(lambda c: c != "/"), max_size=20),
    ),
    via_env=st.booleans(),
)
def test_hostile_home_paths(world, suffix, via_env):
    # What a real argv or environment can carry: no NUL, and surrogates only in the
    # surrogateescape range (U+DC80..U+DCFF) that undecodable bytes map to.
    info = world("home-paths", with_crew=False)
    base = Path(info["home"]).parent / "homes"
    base.mkdir(exist_ok=True)
    target = os.path.join(str(base), "h" + suffix)  # never escapes base: no '/' in suffix
    argv = ["status", "--json"]
    with pytest.MonkeyPatch.context() as mp:
        if via_env:
            try:
                mp.setenv("CAPTAIN_HOME", target)
            except (ValueError, UnicodeEncodeError):
                assume(False)  # an environment cannot hold that
        else:
            argv.append(f"--home={target}")
        code, out, err = invoke(argv)
    check_outcome(argv, code, out, err, as_json=True, usage_possible=False)


# -- known edge: "--" as a value --------------------------------------------------------------


@pytest.mark.parametrize(
    "argv",
    [
        ["ask", "Jack", "--", "--"],
        ["tell", "--assignment=asg_x", "--", "Jack", "--"],
        ["check", "--", "Jack", "edit", "--"],
    ],
    ids=["ask", "tell", "check"],
)
def test_double_dash_as_a_value(world, argv):
    """``captain tell Jack --assignment A -- --`` sends the text "--" (or is a usage error);
    it must never reach the catch-all as an unexpected exception."""
    info = world("double-dash")
    argv = [argv[0], f"--home={info['home']}", *argv[1:]]
    env = {k: v for k, v in info["env"].items() if k != "CAPTAIN_HOME"}
    with pytest.MonkeyPatch.context() as mp:
        if argv[0] != "tell":
            for key, value in env.items():
                mp.setenv(key, value)
        code, out, err = invoke(argv)
    check_outcome(argv, code, out, err, as_json=False, usage_possible=True)
