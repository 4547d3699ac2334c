"""``land``: one done assignment's branch onto its base branch, checked and serialized per
repository (``captain_tui.repo.landing``; docs/landing.md), and ``landing_queue``, what is
waiting, for ``status`` and the cockpit.

The rules of who may land what are here, once, for the CLI and the cockpit: the captain
only; the crew's current assignment, done, with a worktree of its own; ``--allow-outside``
only with a reason. A conflict can be told to the crew, as its next assignment on the same
branch (``assign --handoff``): a done assignment takes no ``tell``.
"""

from __future__ import annotations

from dataclasses import dataclass

from captain_tui.repo import landing as repo_landing
from state.crew import crewlog, guards
from state.crew.guards import CAPTAIN, Context
from state.errors import CaptainError
from state.home import Home
from state.inputs import check_text, crew_key
from state.work import ledger


@dataclass(frozen=True)
class Landing:
    crew: str
    assignment_id: str
    work_id: str
    landed: repo_landing.Landed

    def as_json(self) -> dict:
        return {
            "crew": self.crew,
            "assignment_id": self.assignment_id,
            "work_id": self.work_id,
            **self.landed.as_json(),
        }


def land(
    home: Home,
    name: str,
    *,
    assignment_id: str,
    allow_outside: bool = False,
    reason: str | None = None,
    tell: bool = False,
    operator: str = "captain",
    ctx: Context = CAPTAIN,
) -> Landing:
    """Land ``assignment_id`` of crew ``name``; a ``CaptainError`` says why not (nothing
    moved). With ``tell``, a ``conflict`` is also told to the crew (``told`` in the error)."""
    guards.check_captain(ctx, "land")
    if allow_outside and not (reason and reason.strip()):
        raise CaptainError(
            "invalid_argument",
            "--allow-outside needs --reason: why paths outside the grant may land (recorded).",
        )
    if reason is not None:
        check_text(reason, "reason")
    key = crew_key(name)
    snapshot, _ = crewlog.load(home, key)
    if snapshot is None:
        raise CaptainError("unknown_crew", f"there is no crew named {name}.")
    spec = snapshot.assignment
    if spec.assignment_id != assignment_id:
        raise CaptainError(
            "stale_assignment",
            f"{assignment_id} is not {snapshot.name}'s current assignment "
            f"({spec.assignment_id}); land names the assignment whose work is on the branch.",
            current=spec.assignment_id,
        )
    if snapshot.done_at is None:
        raise CaptainError(
            "not_done",
            f"{assignment_id} is not done yet; {snapshot.name} finishes it with captain done "
            "before its work can land.",
        )
    space = snapshot.workspace
    if space is None:
        raise CaptainError(
            "no_worktree",
            f"{snapshot.name} works in the shared checkout (no worktree of its own), so there "
            "is no branch of its own to land; its edits are already in your checkout.",
        )
    req = repo_landing.Request(
        project=space.project,
        worktree=space.worktree,
        branch=space.branch,
        base_branch=space.base_branch,
        base_commit=space.base_commit,
        outside=lambda paths: guards.outside_grant(snapshot, space.worktree, paths),
        crew=snapshot.name,
        assignment_id=assignment_id,
        work_id=ledger.work_id_for_assignment(assignment_id),
        mode=home.setting("review", "land"),
        test_command=home.setting("review", "test_command"),
        test_timeout=home.setting("review", "test_timeout"),
        wait=home.setting("review", "land_wait"),
        allow_outside=allow_outside,
        reason=reason if allow_outside else None,
        operator=operator,
    )
    try:
        landed = repo_landing.land(home, req)
    except CaptainError as err:
        if err.code == "conflict" and tell:
            err.extra["told"] = _tell_conflict(home, snapshot, err)
        raise
    return Landing(snapshot.name, assignment_id, req.work_id, landed)


def _tell_conflict(home: Home, snapshot, err: CaptainError) -> dict:
    """Tell the crew which files conflict. Its assignment is done (land asks for that), and
    a done assignment takes no ``tell``, so the files come as its next assignment on the
    same worktree and branch (``assign --handoff``), whose own done lands the fix. What was
    sent, or why not (its notifications not acknowledged, for one)."""
    from captain_tui.usecases import crew_ops as crew_cases

    files = err.extra.get("files") or []
    shown = "\n".join(f"  {f}" for f in files[:50])
    more = f"\n  ... and {len(files) - 50} more" if len(files) > 50 else ""
    base = err.extra.get("base_branch")
    text = (
        f"captain land: your branch {err.extra.get('branch')} does not apply cleanly onto "
        f"{base}. Bring it up to date with {base} (git merge {base}, or rebase), resolve "
        f"these files, commit, then say done:\n{shown}{more}"
    )
    current = snapshot.assignment.assignment_id
    try:
        spec = crew_cases.assign(home, snapshot.name, text, handoff=current)
    except CaptainError as refused:
        return {"kind": None, "refused": refused.as_json()}
    from captain_tui.usecases.mail_ops import ring

    ring(home, snapshot.name)
    return {"kind": "assignment", "assignment_id": spec.assignment_id}


def landing_queue(home: Home, *, ctx: Context = CAPTAIN) -> list[dict]:
    """Lands running, waiting, or interrupted (finished by the next land of that
    repository), oldest first: the captain's to see (``status`` shows a crew none)."""
    guards.check_captain(ctx, "the landing queue")
    return repo_landing.queue(home)
