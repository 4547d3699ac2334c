"""The crew's use cases: recruit, assign, acknowledge, dismiss and the jump to a crew's pane
(``mail_ops``: tell, answer and the doorbell right after mail).

Each function checks the caller's role (``ctx``), writes through ``state`` (the rules live
there), does the tmux part through ``captain_tui.runtime``, and returns what happened as data.
"""

from __future__ import annotations

import os
from dataclasses import dataclass

from captain_tui.repo import worktree
from captain_tui.runtime import launch
from captain_tui.runtime.tmux import check_session
from state.crew import budget, crewlog, guards, notify, protocol
from state.crew.guards import CAPTAIN, Context
from state.errors import CaptainError
from state.home import Home
from state.ids import ASSIGNMENT, new_id
from state.inputs import MAX_COMMAND_BYTES, check_path, check_text, crew_key
from state.records import Agent, BouncedMail, PaneLocator, Workspace
from state.work import ledger
from state.work.crash import crash_point

# -- crew -----------------------------------------------------------------------------------


@dataclass(frozen=True)
class Recruitment:
    """What ``recruit`` is asked for: the CLI's flags and the cockpit's form alike."""

    name: str
    task: str
    agent: Agent | None = None  # None: a shell, or "program" with a command
    command: str | None = None  # any program (hookless)
    owns: tuple[str, ...] = ()
    allow: tuple[str, ...] = ()
    handoff: str | None = None
    cwd: str | None = None
    socket: str | None = None
    session: str = "captain"
    launch: bool = True  # False: record only (--no-launch); the person starts the process
    worktree: bool = True  # False: share the checkout (--no-worktree); docs/worktrees.md
    budget_usd: float | str | None = None  # None: [crew] budget_usd (docs/budgets.md)


@dataclass(frozen=True)
class Recruited:
    crew: str
    agent: Agent
    incarnation_id: str
    assignment_id: str
    message_id: str
    work_id: str | None
    queued: bool  # every ledger slot was held: the pane opens when one frees
    pane: PaneLocator | None
    env: dict[str, str]
    workspace: Workspace | None = None  # its own worktree; None: it shares the checkout
    cwd: str | None = None  # where its pane starts


def _check_recruitment(req: Recruitment) -> None:
    """What a recruit stores besides the task and grants (protocol checks those): each
    bounded before a window opens or anything is written."""
    if req.cwd:
        check_path(req.cwd, "--cwd directory")
    if req.command:
        check_text(req.command, "command", limit=MAX_COMMAND_BYTES)
    if req.socket:
        check_path(req.socket, "tmux socket")
    ledger.check_name(req.session, "tmux session")
    check_session(req.session)  # one tmux keeps as given
    if req.budget_usd is not None:
        budget.check_amount(req.budget_usd)


def recruit(home: Home, req: Recruitment, *, ctx: Context = CAPTAIN) -> Recruited:
    guards.check_captain(ctx, "crew")  # the role first, before any argument is judged
    _check_recruitment(req)
    home.config()  # invalid_config before a pane is started or anything is written
    if req.cwd and not os.path.isdir(os.path.expanduser(req.cwd)):
        raise CaptainError(
            "invalid_path",
            f"--cwd {req.cwd} is not a directory: a crew works in an existing directory.",
        )
    cwd = os.path.realpath(os.path.expanduser(req.cwd or "."))
    # a command is a program of its own: no agent's hooks or composer apply to it
    agent = "program" if req.command else (req.agent or "shell")
    if agent == "program" and not req.command:
        raise CaptainError("invalid_argument", "a program crew needs a command to run.")
    key = crew_key(req.name)
    assignment_id = new_id(ASSIGNMENT)
    # its own worktree (docs/worktrees.md), planned from git before anything is written: a
    # handoff carries on in the worktree its dismissal kept, else a new one is made
    space = kept = _kept_worktree(home, key, req) if req.worktree else None
    if req.worktree and space is None:
        space = worktree.plan(home, cwd, key, assignment_id)
    pane_cwd = worktree.inside(space, cwd) if space else cwd
    start = later = None
    if req.launch:
        start = launch.launcher(
            home,
            name=req.name,
            key=key,
            agent=agent,
            program=req.command,
            socket=req.socket,
            session=req.session,
            cwd=pane_cwd,
        )
        later = launch.later(
            program=req.command, cwd=pane_cwd, socket=req.socket, session=req.session
        )
        check_path(later.socket, "tmux socket")  # resolved: it may come from the environment
    r = protocol.recruit(
        home,
        req.name,
        req.task,
        owns=list(req.owns) or None,
        allow=list(req.allow) or None,
        handoff=req.handoff,
        cwd=cwd,
        agent=agent,
        ctx=ctx,
        launch=start,
        later=later,
        assignment_id=assignment_id,
        workspace=space,
        prepare=(lambda: _made(space)) if space and not kept else None,
        budget_usd=None if req.budget_usd is None else budget.check_amount(req.budget_usd),
    )
    snapshot, _ = crewlog.load(home, key)
    return Recruited(
        r.crew,
        agent,
        r.incarnation_id,
        r.assignment_id,
        r.message_id,
        r.work_id,
        r.queued,
        snapshot.pane if snapshot else None,
        r.env,
        space,
        pane_cwd,
    )


def _kept_worktree(home: Home, key: str, req: Recruitment) -> Workspace | None:
    """The worktree a dismissed crew's dismissal kept, for a recruit that hands off from
    its last assignment (protocol.recruit checks the handoff itself): still a worktree git
    knows, on its branch."""
    if req.handoff is None:
        return None
    previous, _ = crewlog.load(home, key)
    if previous is None or previous.dismissed_at is None or previous.worktree != "kept":
        return None
    if previous.assignment.assignment_id != req.handoff or previous.workspace is None:
        return None
    return previous.workspace if worktree.usable(previous.workspace) else None


def _made(space: Workspace):
    undo = worktree.make(space)
    crash_point("recruit:after-worktree")
    return undo


def assign(
    home: Home,
    name: str,
    task: str,
    *,
    handoff: str,
    owns: list[str] | None = None,
    allow: list[str] | None = None,
    ctx: Context = CAPTAIN,
    budget_usd: float | str | None = None,
):
    guards.check_captain(ctx, "assign")  # the role first, before any argument is judged
    return protocol.assign(
        home,
        name,
        task,
        handoff=handoff,
        owns=owns or None,
        allow=allow or None,
        ctx=ctx,
        budget_usd=None if budget_usd is None else budget.check_amount(budget_usd),
    )


def acknowledge(home: Home, name: str, delivery_id: str, *, ctx: Context = CAPTAIN) -> None:
    notify.acknowledge(home, name, delivery_id, ctx=ctx)


@dataclass(frozen=True)
class Dismissal:
    crew: str
    assignment_id: str | None
    bounced: tuple[BouncedMail, ...]
    pane_stopped: bool | None  # True closed (confirmed), False not confirmed, None: no pane
    workspace: Workspace | None = None  # the crew's own worktree, if it had one
    fate: worktree.Fate | None = None  # what became of it (docs/worktrees.md)
    finished_earlier: bool = False  # the crew was already dismissed: only its worktree's
    #                                 cleanup was finished (or discarded) now

    def as_json(self) -> dict:
        """The shape the CLI's ``--json`` and the HTTP API answer with."""
        return {
            "crew": self.crew,
            "assignment_id": self.assignment_id,
            "bounced": [b.message_id for b in self.bounced],
            "pane_stopped": self.pane_stopped,
            "worktree": (
                self.fate.as_json(self.workspace) if self.fate and self.workspace else None
            ),
        }


def _last_spend(home: Home, snapshot) -> None:
    """The crew's pane is closed: what its agent recorded since its last Stop hook (a crew
    dismissed mid-turn) is measured and put on its attempt, before the dismissal settles
    it. Never refuses: a figure is never worth a failed dismissal."""
    from state.crew import spend
    from state.work import spent

    try:
        key = crew_key(snapshot.name)
        assignment_id = snapshot.assignment.assignment_id
        before = spend.assignment_spend(home, key, assignment_id)
        after = spend.catch_up(home, key, snapshot)
        if after != before:
            spent.record(home, assignment_id, after, actor="captain")
    except Exception:  # noqa: BLE001
        pass


def dismiss(
    home: Home,
    name: str,
    *,
    ctx: Context = CAPTAIN,
    reason: str = "crew dismissed",
    actor: str = "captain",
    discard: bool = False,
) -> Dismissal:
    """Close the crew's window first, then retire it: unread mail bounces, and its work item
    is cancelled on a confirmed stop (needs reconciliation otherwise). Its own worktree and
    branch go only when nothing on them is lost (``worktree.judge``) or ``discard`` says
    so; the decision is recorded on the dismissal before it is carried out, so a dismissal
    killed part way is finished by running it again."""
    guards.check_captain(ctx, "dismiss")
    ledger.check_shown(reason)  # every refusal before the pane is touched
    snapshot, _ = crewlog.load(home, crew_key(name))
    if snapshot is not None and snapshot.dismissed_at is not None:
        done = _finish_cleanup(home, name, snapshot, discard, ctx)
        if done is not None:
            return done
        # nothing left to clean: dismissing again is refused as always (crew_dismissed)
    space = snapshot.workspace if snapshot is not None else None
    stopped = None
    if snapshot is not None and snapshot.dismissed_at is None:
        stopped = launch.close_pane(snapshot.pane)
        _last_spend(home, snapshot)
    shown = snapshot.name if snapshot else name
    fate = _judged(space, discard, shown) if space is not None else None
    bounced = protocol.dismiss(
        home,
        name,
        ctx=ctx,
        stopped=stopped,
        reason=reason,
        actor=actor,
        worktree=fate.action if fate else None,
        worktree_tip=fate.tip if fate else None,
    )
    if space is not None and fate is not None and fate.action in ("removed", "discarded"):
        crash_point("dismiss:before-worktree")
        fate = _removed(space, fate, shown)
    return Dismissal(
        snapshot.name if snapshot else name,
        snapshot.assignment.assignment_id if snapshot else None,
        tuple(bounced),
        stopped,
        space,
        fate,
    )


def _finish_cleanup(
    home: Home, name: str, snapshot, discard: bool, ctx: Context
) -> Dismissal | None:
    """A dismissed crew's worktree: finish the removal its dismissal recorded (killed part
    way), or discard what it kept when asked. None: nothing to do."""
    space = snapshot.workspace
    if space is None or not worktree.leftover(space):
        return None
    decided = snapshot.worktree
    if decided == "kept" and not discard:
        raise CaptainError(
            "crew_dismissed",
            f"{snapshot.name} was dismissed and its worktree {space.worktree} and branch "
            f"{space.branch} were kept; remove them with captain dismiss {snapshot.name} "
            f"--discard, or recruit the name again with --handoff "
            f"{snapshot.assignment.assignment_id}.",
            worktree=space.worktree,
            branch=space.branch,
        )
    if decided not in ("kept", "discarded", "removed"):
        return None
    # judged again for a removal: never remove work done since
    fate = _judged(space, decided != "removed", snapshot.name)
    if fate.action not in ("removed", "discarded"):  # work on it now, or git failing
        return Dismissal(snapshot.name, None, (), None, space, fate, True)
    if decided == "kept":
        protocol.discard_worktree(home, name, tip=fate.tip, ctx=ctx)
    crash_point("dismiss:before-worktree")
    fate = _removed(space, fate, snapshot.name)
    return Dismissal(snapshot.name, snapshot.assignment.assignment_id, (), None, space, fate, True)


def _judged(space: Workspace, discard: bool, crew: str) -> worktree.Fate:
    """``worktree.judge``; git failing (the repository moved or broken) keeps everything
    and says why: a crew is dismissed whatever state its repository is in."""
    try:
        return worktree.judge(space, discard=discard, crew=crew)
    except CaptainError as err:
        return worktree.Fate(
            "kept",
            f"the worktree {space.worktree} and branch {space.branch} were left as they are: "
            f"{err.message.rstrip('.')}.",
        )


def _removed(space: Workspace, fate: worktree.Fate, crew: str) -> worktree.Fate:
    """Carry out a recorded removal; git failing part way is said, and running the
    dismissal again finishes it."""
    try:
        worktree.remove(space)
    except CaptainError as err:
        return worktree.Fate(
            fate.action,
            f"{fate.reason.rstrip('.')}, but not all of it could be removed yet: "
            f"{err.message.rstrip('.')}. Run captain dismiss {crew} again to finish.",
            fate.commits,
            fate.uncommitted,
            fate.tip,
        )
    return fate


@dataclass(frozen=True)
class Attach:
    """A jump the cockpit cannot make itself: what the person runs to reach the pane."""

    command: str  # tmux -S SOCKET attach -t PANE
    reason: str  # another_tmux: the cockpit is not on the pane's server; no_client: it is,
    #              but no terminal is attached to that server to switch
    sentence: str


def jump(pane: PaneLocator, env=None, *, ctx: Context = CAPTAIN) -> Attach | None:
    """Switch this tmux client to the crew's pane (None: done). When that cannot be done
    (the caller is outside tmux, inside another tmux server, or on the pane's server with
    no terminal attached to it) returns how to attach instead."""
    from captain_tui.runtime.tmux import Tmux

    guards.check_captain(ctx, "jump")

    env = os.environ if env is None else env
    inside = env.get("TMUX", "").split(",")[0]
    command = launch.attach_command(pane)
    if inside and os.path.realpath(inside) == os.path.realpath(pane.socket):
        if Tmux(pane.socket).switch_to(pane):
            return None
        return Attach(
            command,
            "no_client",
            f"No terminal is attached to the tmux server {pane.socket}, so there "
            f"is no client to switch; attach one from another terminal: {command}",
        )
    return Attach(
        command,
        "another_tmux",
        f"The pane is on another tmux server ({pane.socket}); attach to it from "
        f"another terminal: {command}",
    )
