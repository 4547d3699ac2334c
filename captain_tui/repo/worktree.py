"""A crew's own git worktree: made at recruit, kept or removed at dismiss (docs/worktrees.md).

``plan`` decides (reading git only) whether a recruit gets a worktree and what it is: the
project's top level, the branch it has checked out (the base branch; a detached HEAD is
``detached_head``), its commit (the base commit, the work item's ``target_revision``), the
crew's branch ``captain/<crew key>-<assignment short id>`` and the worktree's path under
``[worktree] root`` (default ``<home>/worktrees``, never inside the user's checkout).
``make`` creates it with one ``git worktree add -b``; an existing branch or path of that
name is refused (``branch_exists``, ``worktree_exists``), never reused or overwritten.

``judge`` is the one rule of cleanup: a worktree and its branch may go only when everything
on them is on the base branch already — each commit of the branch is on the base branch, or
its very change is (a rebase or cherry-pick landed it: ``git cherry``) — and the worktree
holds no uncommitted or untracked file (ignored files are not work). Otherwise they are
kept, unless the captain discards them. ``remove`` is idempotent (a worktree deleted by
hand, or pruned, is fine; a branch already gone is fine), so a dismissal killed part way
is finished by running it again.
"""

from __future__ import annotations

import contextlib
import hashlib
import os
import re
import shutil
from dataclasses import dataclass
from pathlib import Path

from captain_tui.repo import git
from state import config
from state.errors import CaptainError
from state.home import Home
from state.records import Workspace
from state.store import WORKTREES
from state.work.crash import crash_point

BRANCH_PREFIX = "captain/"
CHECKOUT_TIMEOUT = 600.0  # seconds: checking out or deleting a whole tree of a big project
_SLUG = re.compile(r"[^A-Za-z0-9._-]+")


def short_id(assignment_id: str) -> str:
    """An assignment ID's short form in names: its last 8 characters, lowercased (the
    random part of a time-ordered ID)."""
    return assignment_id.rsplit("_", 1)[-1][-8:].lower()


def branch_name(key: str, assignment_id: str) -> str:
    return f"{BRANCH_PREFIX}{key}-{short_id(assignment_id)}"


def settings(home: Home) -> tuple[bool, str]:
    """``[worktree] enabled`` and where worktrees live (absolute)."""
    table = home.config().get("worktree", {})
    enabled = config.value(table, "enabled", "worktree")
    root = config.value(table, "root", "worktree")
    where = os.path.expanduser(root) if root else str(Path(home.root) / WORKTREES)
    return bool(enabled), os.path.abspath(where)


def _project_dir_name(home: Home, top: str) -> str:
    """One folder per repository and home under the root: the repository's name (made
    safe) and a hash of its path and the home's, so two checkouts named alike, or two homes
    sharing a ``[worktree] root``, never share one."""
    slug = _SLUG.sub("-", os.path.basename(top)).strip("-.")[:40] or "project"
    both = f"{os.path.realpath(home.root)}\0{top}".encode("utf-8", "surrogateescape")
    return f"{slug}-{hashlib.sha256(both).hexdigest()[:8]}"


def plan(home: Home, project_dir: str, key: str, assignment_id: str) -> Workspace | None:
    """The worktree a recruit in ``project_dir`` gets, or None: worktrees disabled, or the
    project is not in a git work tree. Reads git only; writes nothing."""
    with _advised():
        return _plan(home, project_dir, key, assignment_id)


@contextlib.contextmanager
def _advised():
    """A recruit's git failure says what to do: fix it, or share the checkout."""
    try:
        yield
    except CaptainError as err:
        if err.code != "git_failed" or "--no-worktree" in err.message:
            raise
        raise CaptainError(
            "git_failed",
            f"{err.message.rstrip('.')}. Fix the repository, or pass --no-worktree to share "
            "the checkout.",
            **err.extra,
        ) from None


def _plan(home: Home, project_dir: str, key: str, assignment_id: str) -> Workspace | None:
    enabled, root = settings(home)
    if not enabled:
        return None
    top = git.top_level(project_dir)
    if top is None:
        return None
    real_root = os.path.realpath(root)
    if _within(real_root, top):
        raise CaptainError(
            "invalid_config",
            f"worktrees would live in {root}, inside the project {top}: git would see every "
            "crew's files as the project's own. Set [worktree] root in config.toml to a "
            "folder outside it, or pass --no-worktree.",
            key="[worktree] root",
        )
    head = git.run(["symbolic-ref", "--quiet", "HEAD"], cwd=top, ok=(0, 1))
    ref = head.text.strip()
    if head.returncode != 0 or not ref.startswith("refs/heads/"):
        at = git.run(["rev-parse", "--short", "HEAD"], cwd=top, ok=(0, 128)).text.strip()
        raise CaptainError(
            "detached_head",
            f"the project {top} has no branch checked out (a detached HEAD"
            f"{' at ' + at if at else ''}): a crew's work lands on a branch. Check out the "
            "branch it should land on, or pass --no-worktree to share the checkout.",
            project=top,
        )
    base_branch = ref[len("refs/heads/") :]
    commit = git.run(["rev-parse", "--verify", "--quiet", "HEAD^{commit}"], cwd=top, ok=(0, 1))
    if commit.returncode != 0:
        raise CaptainError(
            "git_failed",
            f"the branch {_shown(base_branch)} of {top} has no commit yet, so a crew's "
            "branch has nothing to start from. Make a first commit, or pass --no-worktree.",
            project=top,
        )
    branch = branch_name(key, assignment_id)
    path = os.path.join(real_root, _project_dir_name(home, top), f"{key}-{short_id(assignment_id)}")
    return Workspace(
        project=top,
        worktree=path,
        branch=branch,
        base_branch=base_branch,
        base_commit=commit.text.strip(),
    )


def inside(ws: Workspace, cwd: str) -> str:
    """Where in the worktree a crew recruited from ``cwd`` (a folder of the project)
    starts: the same folder in its own checkout."""
    rel = os.path.relpath(cwd, ws.project)
    if rel == "." or rel.startswith(".."):
        return ws.worktree
    return os.path.join(ws.worktree, rel)


def make(ws: Workspace):
    """Create the worktree on a new branch at the base commit and return its undo (for a
    recruit that fails later). Refuses, having made nothing, when the branch or the path
    already exists. First sweeps what a recruit of this crew killed part way left (below)."""
    with _advised():
        return _make(ws)


def _make(ws: Workspace):
    sweep(ws)
    if _branch_tip(ws) is not None:
        raise CaptainError(
            "branch_exists",
            f"a branch {_shown(ws.branch)} already exists in {ws.project}; captain never "
            "takes over a branch it did not make. Delete or rename it, or pass --no-worktree.",
            branch=ws.branch,
        )
    if os.path.lexists(ws.worktree):
        raise CaptainError(
            "worktree_exists",
            f"{ws.worktree} already exists; captain never checks out over a folder. Move it "
            "away, or pass --no-worktree.",
            worktree=ws.worktree,
        )
    os.makedirs(os.path.dirname(ws.worktree), mode=0o700, exist_ok=True)
    git.run(
        ["worktree", "add", "--quiet", "-b", ws.branch, "--", ws.worktree, ws.base_commit],
        cwd=ws.project,
        timeout=CHECKOUT_TIMEOUT,
        what=f"making the worktree {ws.worktree}",
    )
    return lambda: _take_back(ws)


def _take_back(ws: Workspace) -> None:
    """A failed recruit's undo: its own refusal is what the caller reports; a worktree
    that cannot be removed now is swept by the crew's next recruit (``sweep``)."""
    with contextlib.suppress(CaptainError):
        remove(ws)


@dataclass(frozen=True)
class Fate:
    """What dismissal does with a crew's worktree, and why (for the CLI, --json, a toast)."""

    action: str  # removed | kept | discarded | gone (nothing left to remove)
    reason: str  # a sentence
    commits: int = 0  # commits on the branch not on the base branch
    uncommitted: int = 0  # files changed or untracked in the worktree
    tip: str | None = None  # the branch's commit when judged (None: no branch)

    def as_json(self, ws: Workspace) -> dict:
        return {
            "action": self.action,
            "reason": self.reason,
            "worktree": ws.worktree,
            "branch": ws.branch,
            "base_branch": ws.base_branch,
            "commits": self.commits,
            "uncommitted": self.uncommitted,
            "tip": self.tip,
        }


def judge(ws: Workspace, *, discard: bool = False, crew: str = "NAME") -> Fate:
    """The cleanup rule (this module's docstring), read from git; changes nothing."""
    if not os.path.isdir(ws.project):
        return Fate("kept", f"the project {ws.project} is gone; nothing was touched.")
    tip = _branch_tip(ws)
    present = _registered(ws)
    if tip is None and not present and not os.path.lexists(ws.worktree):
        return Fate("gone", f"the worktree {ws.worktree} and branch {_shown(ws.branch)} are gone.")
    on_disk = os.path.lexists(ws.worktree)
    if on_disk and not present and not discard:
        return Fate(
            "kept",
            f"{ws.worktree} is no longer a worktree git knows, so what is in it cannot be "
            f"judged: it and the branch {_shown(ws.branch)} were kept. Look at it, then "
            f"remove it with captain dismiss {crew} --discard.",
            tip=tip,
        )
    commits = _commits_off_base(ws, tip) if tip is not None else 0
    uncommitted = _uncommitted(ws) if present and os.path.isdir(ws.worktree) else 0
    things = (
        f"the worktree {ws.worktree} and branch {_shown(ws.branch)}"
        if on_disk
        else f"the branch {_shown(ws.branch)} (its worktree folder is already gone)"
    )
    if discard:
        lost = _loss(commits, uncommitted)
        return Fate(
            "discarded",
            f"{things} {'were' if on_disk else 'was'} discarded"
            + (f" with {lost}" if lost else "")
            + (f"; the branch was at {tip[:12]}" if tip and commits else "")
            + ".",
            commits,
            uncommitted,
            tip,
        )
    if commits or uncommitted:
        return Fate(
            "kept",
            f"{things} {'were' if on_disk else 'was'} kept: "
            f"{_loss(commits, uncommitted)} not on {_shown(ws.base_branch)}. Land it, or "
            f"remove them with captain dismiss {crew} --discard.",
            commits,
            uncommitted,
            tip,
        )
    what = "landed on" if tip is not None and tip != ws.base_commit else "nothing new since"
    return Fate(
        "removed",
        f"{things} {'were' if on_disk else 'was'} removed ({what} {_shown(ws.base_branch)}).",
        tip=tip,
    )


def sweep(ws: Workspace) -> list[str]:
    """Remove the worktrees a recruit of the same crew (same home, project and crew key)
    made and never recorded, because it was killed between ``git worktree add`` and its
    record: a sibling folder ``<key>-*`` under the same project folder, on its own branch
    ``captain/<key>-*``. Called under the crew's lock, after every rule has passed, so no
    live crew of that key has a worktree there; an earlier incarnation's kept worktree has
    work on it, and ``judge`` keeps it. A worktree whose creation was killed (git's
    ``initializing`` lock) is removed whatever it holds: nothing ran in it. Returns the
    paths removed."""
    folder = os.path.dirname(ws.worktree)
    key = os.path.basename(ws.worktree).rsplit("-", 1)[0]
    if not os.path.isdir(ws.project):
        return []
    removed = []
    for path, (branch, locked) in _listing(ws.project).items():
        if os.path.dirname(path) != folder or path == ws.worktree or branch is None:
            continue
        name = os.path.basename(path)
        if name.rsplit("-", 1)[0] != key or branch != f"{BRANCH_PREFIX}{name}":
            continue
        orphan = Workspace(
            project=ws.project,
            worktree=path,
            branch=branch,
            base_branch=ws.base_branch,
            base_commit=ws.base_commit,
        )
        if locked == "initializing" or judge(orphan).action == "removed":
            remove(orphan)
            removed.append(path)
    return removed


def remove(ws: Workspace) -> None:
    """Remove the worktree and the branch, whatever is left of them (idempotent): a folder
    deleted by hand, a registration pruned, a branch already deleted."""
    if _registered(ws):
        git.run(
            ["worktree", "remove", "--force", "--force", "--", ws.worktree],
            cwd=ws.project,
            timeout=CHECKOUT_TIMEOUT,
            ok=(0, 128),
            what=f"removing the worktree {ws.worktree}",
        )
    # a registration whose folder is gone (deleted by hand), or a folder git no longer knows
    git.run(["worktree", "prune"], cwd=ws.project, what="pruning worktrees")
    if os.path.lexists(ws.worktree) and not _registered(ws):
        shutil.rmtree(ws.worktree, ignore_errors=True)
    crash_point("worktree:before-branch")
    if _branch_tip(ws) is not None:
        git.run(
            ["branch", "-D", "--", ws.branch],
            cwd=ws.project,
            ok=(0, 1),
            what=f"deleting the branch {_shown(ws.branch)}",
        )
    parent = os.path.dirname(ws.worktree)
    try:
        os.rmdir(parent)  # the project's folder under the root, once it holds no worktree
    except OSError:
        pass
    if leftover(ws):  # never say removed what is still there
        raise CaptainError(
            "git_failed",
            f"the worktree {ws.worktree} or the branch {_shown(ws.branch)} is still there "
            "after removing it (git refused, or a file could not be deleted).",
        )


def usable(ws: Workspace) -> bool:
    """Whether the worktree is still there to carry on in: a folder git lists as a
    worktree, on the crew's branch."""
    if not os.path.isdir(ws.project) or not os.path.isdir(ws.worktree):
        return False
    listed = registered_worktrees(ws.project)
    return listed.get(ws.worktree) == ws.branch


def leftover(ws: Workspace) -> bool:
    """Whether anything of the worktree or branch is still there (or git cannot say)."""
    if not os.path.isdir(ws.project):
        return False
    try:
        return os.path.lexists(ws.worktree) or _registered(ws) or _branch_tip(ws) is not None
    except CaptainError:
        return True


# -- reading git ---------------------------------------------------------------------------


def _branch_tip(ws: Workspace) -> str | None:
    r = git.run(
        ["rev-parse", "--verify", "--quiet", f"refs/heads/{ws.branch}^{{commit}}"],
        cwd=ws.project,
        ok=(0, 1),
    )
    return r.text.strip() or None if r.returncode == 0 else None


def _listing(project: str) -> dict[str, tuple[str | None, str | None]]:
    """``git worktree list``: each worktree's path -> (its branch or None when detached,
    why it is locked or None)."""
    out = git.run(["worktree", "list", "--porcelain", "-z"], cwd=project).fields()
    found: dict[str, list] = {}
    path = None
    for field in out:
        if field.startswith("worktree "):
            path = field[len("worktree ") :]
            found[path] = [None, None]
        elif path is None:
            continue
        elif field.startswith("branch "):
            ref = field[len("branch ") :]
            found[path][0] = ref[len("refs/heads/") :] if ref.startswith("refs/heads/") else ref
        elif field == "locked" or field.startswith("locked "):
            found[path][1] = field[len("locked ") :] or "locked"
    return {p: (b, lock) for p, (b, lock) in found.items()}


def registered_worktrees(project: str) -> dict[str, str | None]:
    """``git worktree list``: each worktree's path -> its branch (None: detached)."""
    return {path: branch for path, (branch, _) in _listing(project).items()}


def _registered(ws: Workspace) -> bool:
    listed = registered_worktrees(ws.project)
    return ws.worktree in listed or os.path.realpath(ws.worktree) in {
        os.path.realpath(p) for p in listed
    }


def _commits_off_base(ws: Workspace, tip: str) -> int:
    """Commits reachable from the crew's branch and not from the base branch (all of them
    when the base branch is gone: nothing shows they landed)."""
    base = git.run(
        ["rev-parse", "--verify", "--quiet", f"refs/heads/{ws.base_branch}^{{commit}}"],
        cwd=ws.project,
        ok=(0, 1),
    )
    ends = [tip] if base.returncode != 0 else [tip, "--not", base.text.strip()]
    counted = int(git.run(["rev-list", "--count", *ends, "--"], cwd=ws.project).text or 0)
    if counted == 0 or base.returncode != 0:
        return counted
    # landed by a rebase or a cherry-pick: the same changes under other commits. git cherry
    # marks each commit of the branch whose patch the base already has with "-"
    cherry = git.run(["cherry", base.text.strip(), tip], cwd=ws.project)
    return sum(1 for line in cherry.lines() if line.startswith("+"))


def _uncommitted(ws: Workspace) -> int:
    """Files changed, staged or untracked in the worktree (ignored files are not work)."""
    r = git.run(
        ["status", "--porcelain=v1", "-z", "--untracked-files=all", "--no-renames"],
        cwd=ws.worktree,
        what=f"reading the worktree {ws.worktree}",
    )
    return len(r.fields())


def _loss(commits: int, uncommitted: int) -> str:
    parts = []
    if commits:
        parts.append(f"{commits} commit{'s' if commits != 1 else ''}")
    if uncommitted:
        parts.append(f"{uncommitted} uncommitted file{'s' if uncommitted != 1 else ''}")
    return " and ".join(parts)


def _within(path: str, top: str) -> bool:
    return path == top or path.startswith(top.rstrip("/") + "/")


def _shown(text: str) -> str:
    """A name from git, safe inside a sentence (no control characters)."""
    return "".join(c if c.isprintable() else f"\\x{ord(c):02x}" for c in text)
