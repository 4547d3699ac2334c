"""Landing: one assignment's branch onto its base branch, checked, one at a time per
repository (docs/landing.md).

The order, each step a refusal that leaves the base branch where it was:

1. the repository's turn: an entry in the home's landing queue, then its lock (``queue``);
   a land killed earlier is finished or undone first (``recover``);
2. the user's checkout of the base branch, if any, must be clean (``dirty_checkout``: never
   touched, never stashed);
3. the crew's uncommitted files are committed on its branch (the only write to the crew's
   worktree; recorded on the landed event);
4. the paths changed since the branch left the base, judged by the grant's one rule
   (``state.inputs.grant_problem``; ``outside_grant`` unless allowed with a reason);
5. the result is built without touching any checkout: ``git merge-tree`` (merge), or a
   rebase in the landing worktree, a private detached checkout under the home (rebase);
   ``conflict`` lists the files;
6. ``[review] test_command`` runs in the landing worktree on the result, bounded in time and
   output (``tests_failed`` with its last lines);
7. a journal says what is about to move, then ``git update-ref BASE NEW OLD`` (compare and
   swap: a base that moved meanwhile is ``base_moved``), the crew's branch (rebase), the
   user's checkout brought forward as ``git merge --ff-only`` would, the ``landed`` event on
   the work item, and the journal removed.

A land killed anywhere (SIGKILL) leaves the base at OLD or at NEW, never between; the next
land of the repository (or the same command again) reads the journal and finishes what the
move started, or forgets what never moved.
"""

from __future__ import annotations

import contextlib
import dataclasses
import fcntl
import hashlib
import json
import os
import selectors
import shutil
import signal
import subprocess
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path

from captain_tui.repo import git
from captain_tui.repo.landing_queue import alive as _alive
from captain_tui.repo.landing_queue import queue as queue
from captain_tui.repo.landing_queue import start_time as _start_time
from state.errors import CaptainError
from state.home import Home
from state.ids import new_id
from state.inputs import for_terminal
from state.work import ledger
from state.work.crash import crash_point

MODES = ("merge", "rebase")
SHOWN_PATHS = 20  # paths a refusal lists; the rest are counted
TEST_TAIL_LINES = 20  # the test command's last lines in tests_failed
TEST_OUTPUT_KEPT = 64 * 1024  # bytes of the test command's output kept (its tail)
POLL = 0.05  # seconds between looks at a busy queue


@dataclass(frozen=True)
class Request:
    """One assignment's work to land. Paths are absolute. ``outside`` is the grant's one
    rule (``state.crew.guards.outside_grant`` for the crew): which of the paths (relative to
    the crew's worktree, where they are judged) lie outside what it owns, each with why."""

    project: str  # the repository's top level: the user's checkout
    worktree: str | None  # the crew's own worktree; None: it shares the user's checkout
    branch: str
    base_branch: str
    base_commit: str
    outside: Callable[[list[str]], dict[str, str]]
    crew: str
    assignment_id: str
    work_id: str
    mode: str = "merge"
    test_command: str = ""
    test_timeout: float = 600.0
    wait: float = 600.0  # seconds to wait for the repository's turn
    allow_outside: bool = False
    reason: str | None = None
    operator: str = "captain"


@dataclass(frozen=True)
class Landed:
    commit: str  # what the base branch points at now
    old_base: str
    base_branch: str
    branch: str
    mode: str
    crew_commit: str | None  # the crew's uncommitted files, committed first
    outside_grant: tuple[str, ...]
    files: int  # paths changed by the landing
    checkout: str | None  # the user's checkout brought forward (None: none had the base)
    checkout_problem: str | None = None  # why it could not be brought forward
    tested: bool = False
    recovered: bool = False  # finished from an earlier land's journal

    def as_json(self) -> dict:
        return {
            "commit": self.commit,
            "old_base": self.old_base,
            "base_branch": self.base_branch,
            "branch": self.branch,
            "mode": self.mode,
            "crew_commit": self.crew_commit,
            "outside_grant": list(self.outside_grant),
            "files": self.files,
            "checkout": self.checkout,
            "checkout_problem": self.checkout_problem,
            "tested": self.tested,
            "recovered": self.recovered,
        }


# -- the queue: one land at a time per repository ------------------------------------------


def repo_id(project: str) -> str:
    """A repository's name in the home: its top level's real path, hashed."""
    return hashlib.sha256(os.path.realpath(project).encode()).hexdigest()[:16]


def _dir(home: Home, project: str) -> Path:
    return home.store.dir("landing", repo_id(project))


@contextlib.contextmanager
def turn(home: Home, req: Request):
    """The repository's turn: an entry in its queue while waiting, then its lock (flock,
    released by the kernel when the process dies). ``land_busy`` after ``req.wait``."""
    where = _dir(home, req.project)
    queued = home.store.dir("landing", repo_id(req.project), "queue")
    entry_path = queued / f"{new_id('lnd')}.json"
    entry = {
        "project": req.project,
        "crew": req.crew,
        "assignment_id": req.assignment_id,
        "base_branch": req.base_branch,
        "queued_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
        "pid": os.getpid(),
        "started": _start_time(os.getpid()),
        "state": "queued",
    }
    for name in os.listdir(queued):  # entries of lands that died waiting
        old = home.store.read_json(queued / name) if name.endswith(".json") else None
        if old is not None and not _alive(old.get("pid", 0), old.get("started")):
            with contextlib.suppress(FileNotFoundError):
                os.unlink(queued / name)
    home.store.publish(entry_path, json.dumps(entry).encode())
    fd = os.open(where / "lock", os.O_RDWR | os.O_CREAT | os.O_NOFOLLOW, 0o600)
    try:
        deadline = time.monotonic() + req.wait
        while True:
            try:
                fcntl.flock(fd, fcntl.LOCK_EX | fcntl.LOCK_NB)
                break
            except BlockingIOError:
                if time.monotonic() >= deadline:
                    raise CaptainError(
                        "land_busy",
                        f"another land of {req.project} held the repository for "
                        f"{req.wait:g} seconds; nothing was changed. Run captain status to "
                        "see the queue, then land again.",
                    ) from None
                time.sleep(POLL)
        home.store.publish(entry_path, json.dumps({**entry, "state": "landing"}).encode())
        yield where
    finally:
        os.close(fd)
        with contextlib.suppress(FileNotFoundError):
            os.unlink(entry_path)


# -- reading the repository -----------------------------------------------------------------


def _rev(cwd: str, ref: str) -> str | None:
    r = git.run(["rev-parse", "-q", "--verify", ref + "^{commit}"], cwd=cwd, ok=(0, 1, 128))
    return r.text.strip() or None if r.returncode == 0 else None


def _is_ancestor(cwd: str, a: str, b: str) -> bool:
    return git.run(["merge-base", "--is-ancestor", a, b], cwd=cwd, ok=(0, 1)).returncode == 0


def _checkouts(project: str) -> dict[str, list[str]]:
    """Branch -> the worktrees (the user's checkout among them) that have it checked out."""
    r = git.run(["worktree", "list", "--porcelain", "-z"], cwd=project)
    found: dict[str, list[str]] = {}
    path = None
    for line in r.fields():
        if line.startswith("worktree "):
            path = line[len("worktree ") :]
        elif line.startswith("branch refs/heads/") and path is not None:
            found.setdefault(line[len("branch refs/heads/") :], []).append(path)
    return found


def _dirty(cwd: str, untracked: bool) -> list[str]:
    """Paths with changes in a checkout (tracked; untracked too with ``untracked``)."""
    mode = "--untracked-files=all" if untracked else "--untracked-files=no"
    r = git.run(["status", "--porcelain=v1", "-z", mode, "--no-renames"], cwd=cwd)
    return [f[3:] for f in r.fields() if len(f) > 3]


def _listed(paths: list[str]) -> str:
    shown = ", ".join(_one_line(p) for p in paths[:SHOWN_PATHS])
    more = len(paths) - SHOWN_PATHS
    return shown + (f" and {more} more" if more > 0 else "")


def _one_line(path: str) -> str:
    """A name from git, on one line and safe for a terminal (the CLI's rule, with newlines
    and tabs escaped too): it lands inside a refusal's sentence."""
    return for_terminal(path).replace("\n", "\\n").replace("\t", "\\t")


def changed_paths(cwd: str, since: str, tip: str) -> list[str]:
    """The paths ``tip`` changes since ``since`` (NUL-separated, renames as a delete and an
    add, so both names are judged)."""
    r = git.run(["diff", "--name-only", "-z", "--no-renames", since, tip, "--"], cwd=cwd)
    return r.fields()


# -- the steps ------------------------------------------------------------------------------


def _crew_env(req: Request) -> dict[str, str]:
    who = f"{req.crew} (captain land)"
    email = "captain@localhost"
    return {
        "GIT_AUTHOR_NAME": who,
        "GIT_AUTHOR_EMAIL": email,
        "GIT_COMMITTER_NAME": who,
        "GIT_COMMITTER_EMAIL": email,
    }


def commit_uncommitted(req: Request) -> str | None:
    """Commit what the crew left uncommitted in its worktree on its branch; its sha, or None
    when there was nothing. Only the crew's own worktree, only on its branch."""
    if req.worktree is None or not os.path.isdir(req.worktree):
        return None  # none, or removed (a dismissal's --discard): the branch is what lands
    head = git.run(["symbolic-ref", "-q", "HEAD"], cwd=req.worktree, ok=(0, 1)).text.strip()
    if head != f"refs/heads/{req.branch}":
        raise CaptainError(
            "no_worktree",
            f"{req.worktree} is not on {req.branch} (it is on {head or 'a detached HEAD'}); "
            f"check out {req.branch} there, then land again.",
        )
    if not _dirty(req.worktree, untracked=True):
        return None
    git.run(["add", "-A", "--", "."], cwd=req.worktree, what="staging the crew's files")
    message = (
        f"{_crew_subject(req)}\n\n"
        f"Committed by captain land: the files {req.crew} left uncommitted in its worktree."
    )
    git.run(
        ["commit", "-q", "--no-verify", "--allow-empty-message", "-m", message],
        cwd=req.worktree,
        env=_crew_env(req),
        what="committing the crew's files",
    )
    crash_point("land:after-commit")
    return _rev(req.worktree, "HEAD")


def _crew_subject(req: Request) -> str:
    return f"{req.crew}: uncommitted work of {req.assignment_id}"


def _earlier_crew_commit(req: Request, old: str, tip: str) -> str | None:
    """The commit an earlier, killed land made of the crew's files, so it is recorded."""
    r = git.run(["log", "-z", "-n", "100", "--format=%H %s", f"{old}..{tip}"], cwd=req.project)
    for entry in r.fields():
        sha, _, subject = entry.strip().partition(" ")
        if subject == _crew_subject(req):
            return sha
    return None


def _landing_tree(where: Path) -> str:
    return str(where / "tree")


def _drop_landing_tree(req: Request, where: Path, *, killed: bool = False) -> None:
    """Remove the private landing worktree (and, after a ``killed`` land, git's record of
    one whose directory is gone), whatever state it was left in."""
    path = _landing_tree(where)
    if os.path.islink(path) or (os.path.lexists(path) and not os.path.isdir(path)):
        # not the worktree captain made (something the home was given: a link to another
        # crew's worktree, say): only the entry itself goes; git would follow a link and
        # remove, with --force, the worktree it leads to
        os.unlink(path)
    elif os.path.lexists(path):
        git.run(["worktree", "remove", "--force", "--force", path], cwd=req.project, ok=(0, 128))
        shutil.rmtree(path, ignore_errors=True)
    elif not killed:
        return
    listed = git.run(["worktree", "list", "--porcelain", "-z"], cwd=req.project).fields()
    if f"worktree {path}" in listed:  # its directory gone, git's record of it left
        git.run(["worktree", "prune"], cwd=req.project)


def _add_landing_tree(req: Request, where: Path, commit: str) -> str:
    _drop_landing_tree(req, where)
    path = _landing_tree(where)
    git.run(
        ["worktree", "add", "-q", "--detach", "--force", path, commit],
        cwd=req.project,
        what="making the landing worktree",
    )
    return path


def _conflict(req: Request, files: list[str]) -> CaptainError:
    return CaptainError(
        "conflict",
        f"{req.branch} does not {req.mode} cleanly onto {req.base_branch}: "
        f"{len(files)} file(s) conflict ({_listed(files)}). Nothing was moved. Have "
        f"{req.crew} bring {req.branch} up to date with {req.base_branch} and resolve them "
        "(or do it in its worktree), then land again.",
        files=files[:1000],
        branch=req.branch,
        base_branch=req.base_branch,
    )


def build(req: Request, where: Path, old: str, tip: str) -> str:
    """The commit the base branch would move to; ``conflict`` when there is none."""
    message = f"Land {req.branch} ({req.crew}, {req.assignment_id}) onto {req.base_branch}"
    if req.mode == "merge":
        r = git.run(
            ["merge-tree", "--write-tree", "-z", "--name-only", "--no-messages", old, tip],
            cwd=req.project,
            ok=(0, 1),
            what="merging",
        )
        fields = r.fields()
        if r.returncode == 1:
            files = sorted(set(f for f in fields[1:] if f))
            raise _conflict(req, files)
        tree = fields[0].strip()
        commit = git.run(
            ["commit-tree", tree, "-p", old, "-p", tip, "-m", message],
            cwd=req.project,
            env=_crew_env(req) | {"GIT_AUTHOR_NAME": req.operator},
            what="making the merge commit",
        )
        return commit.text.strip()
    path = _add_landing_tree(req, where, tip)
    r = git.run(
        ["-c", "rebase.autoStash=false", "rebase", "--no-autosquash", "-q", old],
        cwd=path,
        ok=(0, 1, 128),
        env=_crew_env(req),
        what="rebasing",
    )
    if r.returncode != 0:
        files = git.run(["diff", "--name-only", "-z", "--diff-filter=U"], cwd=path).fields()
        git.run(["rebase", "--abort"], cwd=path, ok=(0, 1, 128))
        _drop_landing_tree(req, where)
        if not files:
            raise CaptainError(
                "git_failed", f"rebasing {req.branch} onto {req.base_branch} failed: {r.stderr}"
            )
        raise _conflict(req, sorted(set(files)))
    rebased = _rev(path, "HEAD")
    if rebased is None:
        raise CaptainError("git_failed", f"rebasing {req.branch} left no commit checked out.")
    return rebased


def run_tests(req: Request, where: Path, commit: str) -> None:
    """``[review] test_command`` in the landing worktree checked out at ``commit``: its own
    process group, killed whole at ``test_timeout``; the last lines kept for the refusal."""
    path = _landing_tree(where)
    if not os.path.isdir(path) or _rev(path, "HEAD") != commit:
        path = _add_landing_tree(req, where, commit)
    env = {k: v for k, v in os.environ.items() if not k.startswith("CAPTAIN_")}
    env.update(CAPTAIN_LAND_BRANCH=req.branch, CAPTAIN_LAND_BASE=req.base_branch)
    proc = subprocess.Popen(
        ["/bin/sh", "-c", req.test_command],
        cwd=path,
        env=env,
        stdin=subprocess.DEVNULL,
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        start_new_session=True,
    )
    assert proc.stdout is not None  # stdout=PIPE
    tail = bytearray()
    deadline = time.monotonic() + req.test_timeout
    timed_out = False
    with selectors.DefaultSelector() as sel:
        sel.register(proc.stdout, selectors.EVENT_READ)
        while True:
            left = deadline - time.monotonic()
            if left <= 0:
                timed_out = True
                break
            if not sel.select(min(left, 1.0)):
                continue
            chunk = os.read(proc.stdout.fileno(), 65536)
            if not chunk:
                break
            tail.extend(chunk)
            del tail[:-TEST_OUTPUT_KEPT]
    if timed_out:
        with contextlib.suppress(OSError):
            os.killpg(proc.pid, signal.SIGKILL)
    status = proc.wait()
    with contextlib.suppress(OSError):
        os.killpg(proc.pid, signal.SIGKILL)  # whatever it left running in its group
    proc.stdout.close()
    if status == 0 and not timed_out:
        return
    lines = tail.decode("utf-8", "replace").splitlines()[-TEST_TAIL_LINES:]
    said = (
        f"did not finish within {req.test_timeout:g} seconds and was stopped"
        if timed_out
        else f"exited with status {status}"
    )
    raise CaptainError(
        "tests_failed",
        f"the test command ({req.test_command}) {said} on the result of landing "
        f"{req.branch} onto {req.base_branch}; nothing was moved. Its last lines:\n"
        + "\n".join(lines),
        lines=lines,
        exit_status=None if timed_out else status,
    )


def _bring_forward(checkout: str, old: str, new: str, killed: bool) -> str | None:
    """A checkout whose branch just moved from ``old`` to ``new``: its index and files follow
    as ``git merge --ff-only`` would (a two-tree ``read-tree -m -u``, which refuses to
    overwrite a change). None, or why not."""
    if killed:  # perhaps already done by the land that was killed
        at_new = git.run(["diff-index", "--cached", "--quiet", new, "--"], cwd=checkout, ok=(0, 1))
        if at_new.returncode == 0:
            return None
    r = git.run(["read-tree", "-m", "-u", old, new], cwd=checkout, ok=(0, 128), what="updating")
    if r.returncode == 0:
        return None
    return (
        f"{checkout} has {new[:12]} checked out but its files are still those of {old[:12]} "
        f"({git.command_line(('read-tree',))} said: {' '.join(r.stderr.split())[:300]}); "
        f"look at git status there, then git reset --keep HEAD"
    )


# -- the journal: what a killed land was moving ---------------------------------------------


def _journal_path(where: Path) -> Path:
    return where / "journal.json"


def _finish(home: Home, req: Request, where: Path, j: dict, *, killed: bool = False) -> Landed:
    """Everything after the base moved to ``j['new']``: the crew's branch (rebase), the
    user's checkout, the ledger, the journal and the landing worktree. Each step can run
    again (``killed``: after a land that was killed part way)."""
    new, old = j["new"], j["old"]
    problem = None
    if j["mode"] == "rebase" and _rev(req.project, f"refs/heads/{req.branch}") == j["tip"]:
        # the crew's branch becomes what landed, so it is inside the base from now on
        git.run(
            ["update-ref", "-m", "captain land", f"refs/heads/{req.branch}", new, j["tip"]],
            cwd=req.project,
        )
        crash_point("land:after-branch")
    checkouts = _checkouts(req.project)
    if j["mode"] == "rebase":
        for checkout in checkouts.get(req.branch, []):  # the crew's worktree
            problem = _bring_forward(checkout, j["tip"], new, killed) or problem
    for checkout in checkouts.get(req.base_branch, []):
        problem = _bring_forward(checkout, old, new, killed) or problem
    crash_point("land:after-checkout")
    ledger.landed(
        home,
        j["work_id"],
        commit=new,
        base_branch=req.base_branch,
        operator=j["operator"],
        crew_commit=j.get("crew_commit"),
        outside_grant=j.get("outside_grant") or None,
        reason=j.get("reason"),
    )
    crash_point("land:after-ledger")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(_journal_path(where))
    _drop_landing_tree(req, where, killed=killed)
    users = checkouts.get(req.base_branch, [])
    return Landed(
        commit=new,
        old_base=old,
        base_branch=req.base_branch,
        branch=req.branch,
        mode=j["mode"],
        crew_commit=j.get("crew_commit"),
        outside_grant=tuple(j.get("outside_grant") or ()),
        files=j.get("files", 0),
        checkout=users[0] if users else None,
        checkout_problem=problem,
        tested=bool(j.get("tested")),
    )


def _sha(value: object) -> bool:
    return type(value) is str and len(value) in (40, 64) and value.isalnum() and value.islower()


def _text(value: object) -> bool:
    return type(value) is str


def _maybe(check: Callable[[object], bool]) -> Callable[[object], bool]:
    return lambda value: value is None or check(value)


# what a journal holds as _land writes it: anything else is not one (a hand edit, a bad
# restore), and is set aside as any bad record rather than handed to git or the ledger
_JOURNAL: dict[str, Callable[[object], bool]] = {
    "old": _sha,
    "new": _sha,
    "tip": _maybe(_sha),
    "crew_commit": _maybe(_sha),
    "mode": lambda v: v in MODES,
    "branch": _text,
    "base_branch": _text,
    "crew": _text,
    "assignment_id": _text,
    "work_id": _text,
    "worktree": _maybe(_text),
    "operator": _maybe(_text),
    "reason": _maybe(_text),
    "outside_grant": _maybe(lambda v: type(v) is list and all(type(p) is str for p in v)),
    "files": lambda v: v is None or (type(v) is int and v >= 0),
    "tested": lambda v: v is None or type(v) is bool,
}


def _journal(home: Home, where: Path) -> dict | None:
    """The journal of a killed land, or None: absent, or not one as a land writes it (the
    store reports and sets it aside, as any bad record: a field of another type reached
    git or the ledger and failed the land with ``internal_error``)."""
    journal = home.store.read_json(_journal_path(where))
    if journal is None or all(check(journal.get(k)) for k, check in _JOURNAL.items()):
        return journal
    home.store.quarantine(_journal_path(where), "is not a landing journal")
    return None


def recover(home: Home, req: Request, where: Path) -> Landed | None:
    """A journal left by a killed land of this repository: finished when its base moved
    (returned when it was this assignment's), forgotten when it did not."""
    journal = _journal(home, where)
    if journal is None:
        _drop_landing_tree(req, where)  # a land killed before its journal made one
        return None
    base = _rev(req.project, f"refs/heads/{journal['base_branch']}")
    moved = (
        base is not None
        and base != journal["old"]
        and _is_ancestor(req.project, journal["new"], base)
    )
    if not moved:
        with contextlib.suppress(FileNotFoundError):
            os.unlink(_journal_path(where))
        _drop_landing_tree(req, where, killed=True)
        return None
    theirs = dataclasses.replace(
        req,
        worktree=journal.get("worktree"),
        branch=journal["branch"],
        base_branch=journal["base_branch"],
        crew=journal["crew"],
        assignment_id=journal["assignment_id"],
        work_id=journal["work_id"],
    )
    done = _finish(home, theirs, where, journal, killed=True)
    if journal["work_id"] != req.work_id:
        return None
    return dataclasses.replace(done, recovered=True)


# -- land -----------------------------------------------------------------------------------


def land(home: Home, req: Request) -> Landed:
    """Land ``req.branch`` onto ``req.base_branch`` (the steps in the module's docstring)."""
    if req.mode not in MODES:
        raise CaptainError("invalid_config", f"[review] land is {req.mode!r}: merge or rebase.")
    with turn(home, req) as where:
        finished = recover(home, req, where)
        if finished is not None:
            return finished
        item = ledger.load(home, req.work_id)
        if item is not None and item.landing is not None:
            raise CaptainError(
                "already_landed",
                f"{req.assignment_id} already landed on {item.landing.base_branch} at "
                f"{item.landing.commit[:12]}; an assignment lands once.",
                commit=item.landing.commit,
            )
        old = _rev(req.project, f"refs/heads/{req.base_branch}")
        if old is None:
            raise CaptainError(
                "nothing_to_land",
                f"{req.project} has no branch {req.base_branch} to land onto; nothing was changed.",
            )
        checkouts = _checkouts(req.project).get(req.base_branch, [])
        _refuse_dirty(checkouts, req)
        crew_commit = commit_uncommitted(req)
        tip = _rev(req.project, f"refs/heads/{req.branch}")
        if tip is None:
            raise CaptainError(
                "nothing_to_land",
                f"there is no branch {req.branch} in {req.project}; nothing was changed.",
            )
        crew_commit = crew_commit or _earlier_crew_commit(req, old, tip)
        fork = git.run(["merge-base", old, tip], cwd=req.project, ok=(0, 1)).text.strip()
        if fork == tip:
            raise CaptainError(
                "nothing_to_land",
                f"{req.branch} has nothing that {req.base_branch} does not already hold; "
                "nothing was changed.",
                commit=old,
            )
        paths = changed_paths(req.project, fork or req.base_commit, tip)
        outside = sorted(req.outside(paths))  # judged in the worktree, at the branch's tip
        if outside and not req.allow_outside:
            raise CaptainError(
                "outside_grant",
                f"{req.branch} changes {len(outside)} path(s) outside what {req.crew} owns "
                f"({_listed(outside)}). Nothing was moved. Land anyway with --allow-outside "
                "--reason TEXT (recorded), or have the crew undo them.",
                paths=outside[:1000],
                count=len(outside),
            )
        tested = bool(req.test_command.strip())
        try:
            new = build(req, where, old, tip)
            crash_point("land:after-build")
            if tested:
                run_tests(req, where, new)
                crash_point("land:after-tests")
        except BaseException:
            _drop_landing_tree(req, where)  # a refusal leaves no landing worktree
            raise
        journal = {
            "project": req.project,
            "worktree": req.worktree,
            "crew": req.crew,
            "assignment_id": req.assignment_id,
            "work_id": req.work_id,
            "branch": req.branch,
            "base_branch": req.base_branch,
            "queued_at": time.strftime("%Y-%m-%dT%H:%M:%SZ", time.gmtime()),
            "mode": req.mode,
            "old": old,
            "new": new,
            "tip": tip,
            "crew_commit": crew_commit,
            "outside_grant": outside,
            "reason": req.reason,
            "operator": req.operator,
            "files": len(paths),
            "tested": tested,
        }
        home.store.publish(_journal_path(where), json.dumps(journal).encode())
        crash_point("land:after-journal")
        if tested or req.mode == "rebase":  # it took a while: look again before the move
            _refuse_dirty(checkouts, req)
        moved = git.run(
            [
                "update-ref",
                "-m",
                f"captain land {req.assignment_id}",
                f"refs/heads/{req.base_branch}",
                new,
                old,
            ],
            cwd=req.project,
            ok=(0, 1, 128),
        )
        if moved.returncode != 0:
            with contextlib.suppress(FileNotFoundError):
                os.unlink(_journal_path(where))
            _drop_landing_tree(req, where)
            raise CaptainError(
                "base_moved",
                f"{req.base_branch} moved while {req.branch} was being landed; nothing was "
                "moved. Land again.",
            )
        crash_point("land:after-base")
        return _finish(home, req, where, journal)


def _refuse_dirty(checkouts: list[str], req: Request) -> None:
    for checkout in checkouts:
        if checkout == req.worktree:
            continue
        dirty = _dirty(checkout, untracked=False)
        if dirty:
            raise CaptainError(
                "dirty_checkout",
                f"{checkout} has {req.base_branch} checked out with uncommitted changes "
                f"({_listed(dirty)}); captain never touches or stashes them. Commit or stash "
                "them yourself, then land again.",
                checkout=checkout,
                paths=dirty[:1000],
            )


__all__ = ["Landed", "Request", "land", "queue", "recover", "repo_id"]
