"""A grant means what the files are: ``check`` resolves the asked path when it is asked.

Real symlinks and hard links in a real project: a link inside a crew's own directory that
leads to another crew's files or to ``/``, an owned directory swapped for a link after
recruit, ``..`` after a link, a loop, a dangling link out of the project, and a hard link
to another crew's file are all refused; links that stay inside the grant, owning through a
link, and files not created yet are granted. Every case is asked three ways, and all three
must agree: the full path (``protocol.check``), the crew side's fast path
(``state.crew_side.fast``) and the real CLI run in-process as the crew.
"""

from __future__ import annotations

import contextlib
import io
import json
import os
from pathlib import Path

import pytest
from conftest import crew_ctx

from captain_tui.cli.main import main
from state.crew import protocol
from state.crew_side import fast as crew_fast
from state.errors import CaptainError
from state.home import Home


def outcome(fn) -> tuple:
    try:
        verdict = fn()
    except CaptainError as err:
        return ("refused", err.code, err.message)
    return ("verdict", verdict.allowed, verdict.reason)


def _link(project: Path, at: str, to: str) -> None:
    (project / at).parent.mkdir(parents=True, exist_ok=True)
    os.symlink(to, project / at)


def _file(project: Path, at: str, text: str = "x") -> Path:
    (project / at).parent.mkdir(parents=True, exist_ok=True)
    (project / at).write_text(text)
    return project / at


_HELD: list[int] = []  # descriptors a case keeps open while it is asked


def _fd_of_deleted_link(project: Path) -> str:
    """A hard link in my directory to another crew's file, opened and then deleted: only
    ``/proc/PID/fd/N`` leads to the file now."""
    os.link(project / "src/b/secret.py", project / "src/a/hl")
    _HELD.append(os.open(project / "src/a/hl", os.O_WRONLY | os.O_APPEND))
    os.unlink(project / "src/a/hl")
    return f"/proc/{os.getpid()}/fd/{_HELD[-1]}"


def _swap_for_link(project: Path, owned: str, to: str) -> None:
    """After recruit: the owned directory is moved away and a link takes its name."""
    os.rename(project / owned, project / (owned + ".old"))
    os.symlink(to, project / owned)


# name: (setup(project), action, path, granted)
CASES = {
    # links that leave the crew's own directory
    "a link in my directory to another crew's": (
        lambda p: _link(p, "src/a/tob", "../b"),
        "edit",
        "src/a/tob/secret.py",
        False,
    ),
    "the link itself, leading to another crew's": (
        lambda p: _link(p, "src/a/tob", "../b"),
        "delete",
        "src/a/tob/secret.py",
        False,
    ),
    "a link in my directory to /": (
        lambda p: _link(p, "src/a/root", "/"),
        "edit",
        "src/a/root/etc/passwd",
        False,
    ),
    "a file link to another crew's file": (
        lambda p: _link(p, "src/a/pw.py", "../b/secret.py"),
        "edit",
        "src/a/pw.py",
        False,
    ),
    "a dangling link out of the project": (
        lambda p: _link(p, "src/a/new.py", "/nonexistent-captain-test/new.py"),
        "edit",
        "src/a/new.py",
        False,
    ),
    "'..' after a link goes up from where it led": (
        lambda p: (_file(p, "src/b/deep/x"), _link(p, "src/a/tob", "../b/deep")),
        "edit",
        "src/a/tob/../secret.py",
        False,
    ),
    "a symlink loop": (lambda p: _link(p, "src/a/loop", "loop"), "edit", "src/a/loop/x.py", False),
    "a link at the project root into my directory": (
        lambda p: _link(p, "mine.py", "src/a/x.py"),
        "delete",
        "mine.py",
        False,
    ),
    # the owned path itself, changed after recruit
    "my directory swapped for a link to another crew's": (
        lambda p: _swap_for_link(p, "src/a", "b"),
        "edit",
        "src/a/secret.py",
        False,
    ),
    "my directory swapped for a link to /": (
        lambda p: _swap_for_link(p, "src/a", "/"),
        "edit",
        "src/a/etc/passwd",
        False,
    ),
    # hard links
    "a hard link to another crew's file": (
        lambda p: os.link(p / "src/b/secret.py", p / "src/a/secret.py"),
        "edit",
        "src/a/secret.py",
        False,
    ),
    "a hard link within my own directory too": (
        lambda p: (_file(p, "src/a/one.py"), os.link(p / "src/a/one.py", p / "src/a/two.py")),
        "edit",
        "src/a/two.py",
        False,
    ),
    # the kernel's magic links: /proc/PID/fd/N reads as "…/hl (deleted)", a name inside my
    # directory that does not exist, while the kernel follows it to another crew's file
    "a /proc fd link to another crew's file, its hard link deleted": (
        lambda p: _link(p, "src/a/l", _fd_of_deleted_link(p)),
        "edit",
        "src/a/l",
        False,
    ),
    "a link through /proc/self/root": (
        lambda p: _link(p, "src/a/r", "/proc/self/root"),
        "edit",
        "src/a/r/etc/passwd",
        False,
    ),
    # what stays granted
    "a file of mine": (lambda p: _file(p, "src/a/x.py"), "edit", "src/a/x.py", True),
    "a file not created yet, in directories not created yet": (
        None,
        "edit",
        "src/a/new/deeper/file.py",
        True,
    ),
    "my directory itself": (None, "edit", "src/a", True),
    "a link that stays inside my directory": (
        lambda p: (_file(p, "src/a/sub/x.py"), _link(p, "src/a/l.py", "sub/x.py")),
        "edit",
        "src/a/l.py",
        True,
    ),
    "an absolute path inside my directory": (
        lambda p: _file(p, "src/a/x.py"),
        "edit",
        "{project}/src/a/x.py",
        True,
    ),
    "outside, plainly": (None, "edit", "src/b/secret.py", False),
}


@pytest.fixture
def crews(home: Home, project: Path):
    (project / "src" / "a").mkdir()
    _file(project, "src/b/secret.py", "Gibbs's")
    jack = protocol.recruit(
        home, "Jack", "T", owns=["src/a"], allow=["edit", "delete"], cwd=str(project)
    )
    protocol.recruit(home, "Gibbs", "T", owns=["src/b"], allow=["edit"], cwd=str(project))
    return jack


def cli_check(jack, project: Path, monkeypatch, args: list[str]) -> tuple[int, dict]:
    """``captain check`` run in-process as Jack's own process would run it."""
    for k, v in jack.env.items():
        monkeypatch.setenv(k, v)
    monkeypatch.chdir(project)
    out = io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(io.StringIO()):
        code = main(["check", "Jack", *args, "--json"])
    return code, json.loads(out.getvalue())


@pytest.mark.parametrize("case", list(CASES))
def test_check_resolves_the_path_when_it_is_asked(home, project, crews, monkeypatch, case):
    setup, action, path, granted = CASES[case]
    path = path.format(project=project)
    if setup is not None:
        setup(project)
    ctx = crew_ctx(crews)
    full = outcome(lambda: protocol.check(home, "Jack", action, [path], ctx=ctx))
    fast = outcome(
        lambda: crew_fast.check(home, "Jack", action, [path], assignment_id=None, ctx=ctx)
    )
    assert fast == full
    assert full[:2] == ("verdict", granted), full
    code, payload = cli_check(crews, project, monkeypatch, [action, path])
    if granted:
        assert code == 0 and payload["allowed"] is True, payload
    else:
        assert code == 1 and payload["error"]["code"] == "grant_denied", payload
        assert payload["error"]["message"] == full[2]
        assert path in full[2]


def test_refusals_say_where_the_path_leads(home, project, crews):
    ctx = crew_ctx(crews)
    _link(project, "src/a/tob", "../b")
    led = protocol.check(home, "Jack", "edit", ["src/a/tob/secret.py"], ctx=ctx)
    assert f"leads to {project}/src/b/secret.py" in led.reason
    os.link(project / "src/b/secret.py", project / "src/a/hard.py")
    hard = protocol.check(home, "Jack", "edit", ["src/a/hard.py"], ctx=ctx)
    assert "2 names (hard links)" in hard.reason
    _swap_for_link(project, "src/a", "b")
    swapped = protocol.check(home, "Jack", "edit", ["src/a/x.py"], ctx=ctx)
    assert f"now leads to {project}/src/b" in swapped.reason


def test_owning_through_a_link_is_owning_where_it_leads(home, project):
    """``--owns srclink`` (-> src/a) is stored where it leads: both names are granted."""
    (project / "src" / "a").mkdir()
    _link(project, "srclink", "src/a")
    r = protocol.recruit(home, "Jack", "T", owns=["srclink"], allow=["edit"], cwd=str(project))
    ctx = crew_ctx(r)
    for path in ("srclink/x.py", "src/a/x.py"):
        full = outcome(
            lambda p=path: protocol.check(home, "Jack", "edit", [p], assignment_id=None, ctx=ctx)
        )
        fast = outcome(
            lambda p=path: crew_fast.check(home, "Jack", "edit", [p], assignment_id=None, ctx=ctx)
        )
        assert full == fast and full[:2] == ("verdict", True), full
