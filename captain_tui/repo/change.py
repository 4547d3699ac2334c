"""A crew's change: everything in its worktree since its base commit.

That is the commits on its branch plus what is not committed yet — modified, deleted and
untracked files (ignored ones excepted) — read without touching the crew's own index: the
working tree is staged into a *temporary* index (``GIT_INDEX_FILE``, a copy of the crew's
so unchanged files are not hashed again) and written as a tree, and every question is
asked of ``base_commit..that tree``. Nothing is committed for the crew (docs/review.md).

Paths are read NUL-separated, never parsed from quoted text. The shape is computed on the
captain's side when it is read (``wait``, ``status``, ``diff``, the cockpit), so the crew's
``done`` stays as fast as it was.
"""

from __future__ import annotations

import contextlib
import os
import shutil
import tempfile
from collections.abc import Iterator
from typing import NamedTuple

from captain_tui.repo import discovery, git
from state.crew.guards import outside_grant
from state.errors import CaptainError

LIST_MAX = 200  # paths a notification lists of each kind; the counts are always whole
DIFF_MAX = git.LIMIT  # bytes of unified diff read for one request
_STATUS = {"A": "added", "M": "modified", "D": "deleted", "T": "typechange"}


# NamedTuples, not dataclasses: importing dataclasses (inspect, ast, dis) and building
# three was ~15 ms of every `status` with a crew in a git project (#28)
class FileChange(NamedTuple):
    path: str  # relative to the repository's top level, exactly as git stores it
    status: str  # added, modified, deleted, typechange
    added: int | None  # None: binary
    removed: int | None
    uncommitted: bool  # differs between the branch's last commit and the working tree
    outside: str | None  # why it lies outside the assignment's --owns; None: inside
    symlink: bool = False

    def as_json(self) -> dict:
        return {
            "path": self.path,
            "status": self.status,
            "added": self.added,
            "removed": self.removed,
            "binary": self.added is None,
            "uncommitted": self.uncommitted,
            "outside_grant": self.outside is not None,
            "why_outside": self.outside,
            "symlink": self.symlink,
        }


class Where(NamedTuple):
    """Where a crew's change is: its worktree and the commit it started from."""

    top: str  # the working tree's top level (the crew's worktree, or the shared checkout)
    base: str  # full sha
    project: str  # the project's top level, for grants (equal to top when shared)
    branch: str | None = None
    shared: bool = False  # no worktree of its own: the shared checkout against its HEAD


class Change(NamedTuple):
    where: Where
    head: str  # the branch's last commit
    tree: str  # the working tree, staged into a temporary index and written as a tree
    commits: int
    rewritten: bool  # the base is no longer an ancestor of the branch (history rewritten)
    files: tuple[FileChange, ...] = ()

    @property
    def lines_added(self) -> int:
        return sum(f.added or 0 for f in self.files)

    @property
    def lines_removed(self) -> int:
        return sum(f.removed or 0 for f in self.files)

    @property
    def outside(self) -> list[str]:
        return [f.path for f in self.files if f.outside is not None]

    @property
    def uncommitted(self) -> list[str]:
        return [f.path for f in self.files if f.uncommitted]

    def summary(self) -> dict:
        """The change's shape, as a notification carries it (lists capped at LIST_MAX)."""
        outside, uncommitted = self.outside, self.uncommitted
        return {
            "base_commit": self.where.base,
            "head": self.head,
            "branch": self.where.branch,
            "worktree": self.where.top,
            "shared_checkout": self.where.shared,
            "files_changed": len(self.files),
            "lines_added": self.lines_added,
            "lines_removed": self.lines_removed,
            "commits": self.commits,
            "history_rewritten": self.rewritten,
            "outside_grant": outside[:LIST_MAX],
            "outside_grant_count": len(outside),
            "uncommitted": uncommitted[:LIST_MAX],
            "uncommitted_count": len(uncommitted),
        }

    def as_json(self) -> dict:
        return self.summary() | {"files": [f.as_json() for f in self.files]}


def _head(top: str) -> tuple[str, str]:
    """The worktree's index file (absolute) and its branch's last commit: one git process."""
    index, head = git.run(
        ["rev-parse", "--git-path", "index", "--verify", "HEAD^{commit}"], cwd=top
    ).lines()
    return (index if os.path.isabs(index) else os.path.join(top, index)), head


@contextlib.contextmanager
def _staged(top: str, index: str) -> Iterator[dict[str, str]]:
    """The working tree staged into a temporary copy of the crew's index: yields the
    environment (``GIT_INDEX_FILE``) that names it, for as long as the block runs."""
    with tempfile.TemporaryDirectory(prefix="captain-change-") as tmp:
        temp_index = os.path.join(tmp, "index")
        env = {"GIT_INDEX_FILE": temp_index}
        try:
            # copy2: the index's own mtime comes along, so git's racy-clean rule still
            # re-reads a file changed in the same second as the index was written
            shutil.copy2(index, temp_index)
        except OSError:  # no index yet (a fresh worktree): start from the branch's commit
            git.run(["read-tree", "HEAD"], cwd=top, env=env)
        git.run(["add", "--all", "--", "."], cwd=top, env=env)
        yield env


def _rev_counts(top: str, base: str, head: str) -> tuple[int, int]:
    """(commits only the base has: the branch was rewritten under it, the branch's own
    commits), from ``base...head``; no git at all when the branch is still at its base."""
    if head == base:
        return 0, 0
    lost, commits = map(
        int,
        git.run(["rev-list", "--count", "--left-right", f"{base}...{head}"], cwd=top).text.split(),
    )
    return lost, commits


def _files(snapshot, top: str, fields: list[str], dirty: set[str] | None) -> tuple[FileChange, ...]:
    """The files of a change from git's ``-z --raw --numstat`` listing of base -> working
    tree (``fields``), each marked uncommitted when it is in ``dirty`` (None: all are, the
    branch being at its base) and judged against the assignment's grant."""
    pairs: list[tuple[str, str]] = []
    counts: dict[str, tuple[int | None, int | None]] = {}
    i = 0
    while i < len(fields):  # the raw entries (":modes shas status", path), then numstat
        if fields[i].startswith(":"):
            pairs.append((fields[i], fields[i + 1]))
            i += 2
            continue
        plus, minus, path = fields[i].split("\t", 2)  # "-": a binary file
        counts[path] = (
            None if plus == "-" else int(plus),
            None if minus == "-" else int(minus),
        )
        i += 1
    paths = [path for _, path in pairs]
    outside = outside_grant(snapshot, top, paths)
    files = []
    for meta, path in pairs:
        old_mode, new_mode, _, _, letter = meta.lstrip(":").split(" ")
        added, removed = counts.get(path, (None, None))
        files.append(
            FileChange(
                path=path,
                status=_STATUS.get(letter[:1], "modified"),
                added=added,
                removed=removed,
                uncommitted=dirty is None or path in dirty,
                outside=outside.get(path),
                symlink="120000" in (old_mode, new_mode),
            )
        )
    return tuple(files)


_LISTING = ("-r", "-z", "--no-renames")


def compute(where: Where, snapshot) -> Change:
    """The change in ``where`` of the crew ``snapshot`` (its assignment's grant), with the
    working tree written as a tree for its diff (``diff_bytes``). Six git processes
    whatever the change's size (four when the branch is at its base): what ``done`` ->
    diff on screen waits for."""
    top = where.top
    index, head = _head(top)
    with _staged(top, index) as env:
        tree = git.run(["write-tree"], cwd=top, env=env).text.strip()
    lost, commits = _rev_counts(top, where.base, head)
    listing = ["diff-tree", *_LISTING]
    fields = git.run([*listing, "--raw", "--numstat", where.base, tree], cwd=top).fields()
    dirty = None
    if head != where.base:
        dirty = set(git.run([*listing, "--name-only", head, tree], cwd=top).fields())
    files = _files(snapshot, top, fields, dirty)
    return Change(where, head, tree, commits, lost > 0, files)


def summarize(where: Where, snapshot, known: tuple[str, str] | None = None) -> dict:
    """``compute(where, snapshot).summary()``, with fewer git processes (tests hold them
    equal): no tree is written, the staged index itself is compared with the base and
    with the branch's last commit (``diff-index --cached``, plumbing like ``diff-tree``:
    no user's diff settings). Five git processes, three when the branch is at its base;
    one fewer when ``known`` already holds its index and head (``_heads``)."""
    top = where.top
    index, head = known or _head(top)
    listing = ["diff-index", "--cached", *_LISTING]
    with _staged(top, index) as env:
        fields = git.run([*listing, "--raw", "--numstat", where.base], cwd=top, env=env).fields()
        dirty = None
        if head != where.base:
            dirty = set(git.run([*listing, "--name-only", head], cwd=top, env=env).fields())
    lost, commits = _rev_counts(top, where.base, head)
    files = _files(snapshot, top, fields, dirty)
    return Change(where, head, "", commits, lost > 0, files).summary()


def diff_bytes(change: Change, paths: list[str] | None = None, *, limit: int = DIFF_MAX) -> bytes:
    """The unified diff of the change (of ``paths`` only, when given): raw bytes, for the
    caller to escape for its terminal; a diff over ``limit`` bytes is refused whole
    (``git_failed``), never shown cut (``--stat`` still lists it)."""
    args = ["--literal-pathspecs", "diff-tree", "-r", "-p", "--no-renames", "--no-color"]
    args += [change.where.base, change.tree]
    if paths:
        args += ["--", *paths]
    return git.run(args, cwd=change.where.top, limit=limit, what="reading the change's diff").stdout


def refuse_no_repo(name: str) -> CaptainError:
    return CaptainError(
        "no_change",
        f"{name} works in a directory that is not a git repository, so captain cannot "
        "show its change; recruit it in a git project to review what it changed.",
    )


def where_of(snapshot) -> Where | None:
    """Where ``snapshot``'s change is: its worktree since its base commit; without one (a
    crew recruited with --no-worktree) the shared checkout's uncommitted work against its
    HEAD; None when its project is not a git repository."""
    if not discovery.may_have_change(snapshot):  # status asks this first, without git
        return None
    workspace = getattr(snapshot, "workspace", None)
    if workspace is not None:
        return Where(
            top=workspace.worktree,
            base=workspace.base_commit,
            project=workspace.project,
            branch=workspace.branch,
        )
    project_dir = snapshot.assignment.project_dir
    if not os.path.isdir(project_dir):
        return None
    top = git.top_level(project_dir)
    if top is None:
        return None
    try:
        head = git.run(["rev-parse", "--verify", "HEAD^{commit}"], cwd=top).text.strip()
    except CaptainError:
        return None  # a repository without a commit yet: nothing to compare with
    return Where(top=top, base=head, project=top, shared=True)


def of_crew(snapshot) -> Change:
    """The change of a crew (refused when its project is not a git repository)."""
    where = where_of(snapshot)
    if where is None:
        raise refuse_no_repo(snapshot.name)
    return compute(where, snapshot)


def summary_of(snapshot, known: tuple[str, str] | None = None) -> dict | None:
    """A crew's change shape for a notification or a status row; None when there is none
    to show (not a git project), and ``{"error": ...}`` when git could not say."""
    where = where_of(snapshot)
    if where is None:
        return None
    try:
        return summarize(where, snapshot, known)
    except CaptainError as err:
        return {"error": err.as_json()}


def _linked(top: str) -> tuple[str, str, str] | None:
    """(its repository's common git directory, its id there, its index file) of the linked
    worktree at ``top``, read from its ``.git`` file as git reads it; None when it is not
    plainly one (git itself is then asked, crew by crew)."""
    try:
        with open(os.path.join(top, ".git"), "rb") as f:
            said = f.read(4097)
        gitdir = said.removeprefix(b"gitdir: ").rstrip().decode("utf-8", "surrogateescape")
        gitdir = os.path.join(top, gitdir)  # a relative one is relative to the worktree
        with open(os.path.join(gitdir, "commondir"), "rb") as f:
            common = f.read(4097).rstrip().decode("utf-8", "surrogateescape")
    except (OSError, ValueError):  # no such file, a directory, a NUL in a path
        return None
    common = os.path.realpath(os.path.join(gitdir, common))
    name = os.path.basename(os.path.normpath(gitdir))
    plain = len(said) <= 4096 and said.startswith(b"gitdir: ") and "\n" not in gitdir
    if not plain or os.path.realpath(os.path.join(common, "worktrees", name)) != (
        os.path.realpath(gitdir)
    ):
        return None
    return common, name, os.path.join(gitdir, "index")


_SHA = frozenset("0123456789abcdef")


def _heads(snapshots: list) -> dict[int, tuple[str, str]]:
    """Index file and head commit of each crew (by position) whose worktree is a linked
    worktree of a repository shared with other crews: one ``git rev-parse`` for all of a
    repository's (``worktrees/<id>/HEAD``), not one each. A repository git will not
    answer for all at once is left out (each crew then asks for itself)."""
    shared: dict[str, list[tuple[int, str, str]]] = {}
    for i, snapshot in enumerate(snapshots):
        workspace = getattr(snapshot, "workspace", None)
        linked = _linked(workspace.worktree) if workspace is not None else None
        if linked is not None:
            common, name, index = linked
            shared.setdefault(common, []).append((i, name, index))
    known: dict[int, tuple[str, str]] = {}
    for common, crews in shared.items():
        if len(crews) < 2:
            continue
        asked = [f"worktrees/{name}/HEAD^{{commit}}" for _, name, _ in crews]
        try:
            answer = git.run(["rev-parse", *asked], cwd=common, ok=(0, 128))
        except CaptainError:
            continue
        said = answer.lines()
        if (
            answer.returncode != 0
            or len(said) != len(crews)
            or not all(len(h) >= 40 and set(h) <= _SHA for h in said)
        ):
            continue
        for (i, _, index), head in zip(crews, said, strict=True):
            known[i] = (index, head)
    return known


WORKERS = 4  # crews whose change is read at once: git's processes overlap python's waits


def summaries_of(snapshots: list) -> list[dict | None]:
    """``summary_of`` of each crew, in order, read by up to ``WORKERS`` threads at once
    (``status`` with twenty crew in worktrees ran their hundred git processes one after
    another), the heads of crews sharing a repository asked of git at once (``_heads``).
    Each thread runs in a copy of the caller's context, so a memo the caller holds
    (``git.one_look_per_directory``) is theirs too."""
    found: list[dict | None] = [None] * len(snapshots)
    if len(snapshots) <= 1:
        return [summary_of(s) for s in snapshots]
    import contextvars
    import threading

    known = _heads(snapshots)
    context = contextvars.copy_context()
    left = iter(range(len(snapshots)))
    take = threading.Lock()
    failed: list[BaseException] = []  # raised in the caller, as if read one by one

    def work() -> None:
        while not failed:
            with take:
                i = next(left, None)
            if i is None:
                return
            try:
                found[i] = summary_of(snapshots[i], known.get(i))
            except BaseException as exc:  # noqa: BLE001 - handed to the caller whole
                failed.append(exc)

    threads = [
        threading.Thread(target=context.copy().run, args=(work,), name=f"change-{n}", daemon=True)
        for n in range(min(WORKERS, len(snapshots)))
    ]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    if failed:
        raise failed[0]
    return found
