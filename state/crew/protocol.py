"""The assignment protocol: recruit, assign, tell, answer, ask, done, check, inbox, dismiss.

Every function takes the home, the caller's ``Context`` and plain arguments, writes through
the store's rules and raises ``CaptainError`` with a stable code to refuse. Mail is durable
before anything else happens; ringing a pane is the runtime's business, not this module's.
"""

from __future__ import annotations

import contextlib
import os
import shutil
from collections.abc import Callable
from contextlib import ExitStack
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from state.clock import now
from state.crew import budget, crewlog, guards, mailbox, roster, standing
from state.crew.guards import CAPTAIN, Context, Verdict, check_captain
from state.errors import CaptainError
from state.home import Home
from state.ids import ASSIGNMENT, DELIVERY, INCARNATION, MESSAGE, QUESTION, new_id
from state.inputs import (
    bounce_summary,
    check_actions,
    check_owns,
    check_path,
    check_text,
    crew_key,
    is_within,
    normalise_path,
    overlaps,
    resolve_path,
    summarize,
)
from state.records import (
    Asked,
    Assigned,
    AssignmentSpec,
    Bounce,
    BouncedMail,
    BudgetSet,
    CrewSnapshot,
    Dismissed,
    Finished,
    LaunchSpec,
    Message,
    Notification,
    PaneLocator,
    Recruited,
    RingStamp,
    Workspace,
    WorktreeDiscarded,
)
from state.store import encode
from state.vocab import counted, ended
from state.work.crash import crash_point


@dataclass
class Recruit:
    crew: str
    incarnation_id: str
    assignment_id: str
    message_id: str
    env: dict[str, str] = field(default_factory=dict)
    work_id: str | None = None
    queued: bool = False  # every ledger slot was held: the pane starts when one frees


# -- guards: each rule in one place (state.crew.guards, shared with the crew-side fast path) ------

_existing = guards.existing
_live = guards.live
_same_assignment = guards.same_assignment
_crew_identity = guards.crew_identity
_crew_assignment = guards.crew_assignment
_not_done = guards.not_done


def _all_acknowledged(home: Home, key: str, assignment_id: str) -> None:
    owed = mailbox.unacknowledged(home, key, assignment_id)
    if owed:
        first = owed[0]
        raise CaptainError(
            "unacknowledged",
            f"{counted(len(owed), 'notification')} of {assignment_id} "
            f"{'is' if len(owed) == 1 else 'are'} not acknowledged, first "
            f"{first.delivery_id} ({first.status}): {ended(summarize(first.summary)[:200])} "
            f"Acknowledge with captain wait {first.crew} --ack {first.delivery_id}.",
            delivery_id=first.delivery_id,
            status=first.status,
            crew=first.crew,
            summary=first.summary,
            count=len(owed),
        )


def _grant(
    home: Home,
    key: str,
    owns: list[str] | None,
    allow: list[str] | None,
    project_dir: str,
    inherit: AssignmentSpec | None,
) -> tuple[list[str], list[str]]:
    actions = (
        check_actions(allow) if allow is not None else (list(inherit.allow) if inherit else [])
    )
    if owns is None:
        paths = list(inherit.owns) if inherit else []
    else:
        check_owns(owns)
        paths = []
        root = os.path.realpath(project_dir)
        for p in owns:
            n = normalise_path(p, project_dir)
            real = resolve_path(n)
            if real is None:
                raise CaptainError(
                    "invalid_path",
                    f"{p} cannot be resolved (a symlink loop, or a part that cannot be read).",
                )
            if is_within(n, project_dir) and not is_within(real, root):
                raise CaptainError(
                    "invalid_path",
                    f"{p} is inside the project but a symlink "
                    f"takes it to {real}, "
                    "outside it; own the real path instead.",
                )
            # stored where it really is: check grants only what still resolves to it
            if real not in paths:
                paths.append(real)
    for other in home.crew_keys():
        if other == key:
            continue
        snap, _ = crewlog.load(home, other)
        if snap is None or snap.dismissed_at is not None or snap.done_at is not None:
            continue
        for mine in paths:
            for theirs in snap.assignment.owns:
                # a symlink is the same place under another name: compare where both lead
                if any(
                    overlaps(a, b)
                    for a in {mine, os.path.realpath(mine)}
                    for b in {theirs, os.path.realpath(theirs)}
                ):
                    raise CaptainError(
                        "ownership_overlap",
                        f"{mine} overlaps {theirs}, owned by {snap.name} on "
                        f"{snap.assignment.assignment_id}.",
                        crew=snap.name,
                    )
    return paths, actions


def _spec(
    task: str,
    paths: list[str],
    actions: list[str],
    project_dir: str,
    handoff: str | None,
    assignment_id: str | None = None,
) -> AssignmentSpec:
    return AssignmentSpec(
        assignment_id=assignment_id or new_id(ASSIGNMENT),
        message_id=new_id(MESSAGE),
        task=task,
        owns=paths,
        allow=actions,
        project_dir=project_dir,
        handoff_of=handoff,
    )


def _locked(home: Home, *keys: str) -> ExitStack:
    """Take locks in one global order: the home, then the crew."""
    stack = ExitStack()
    for key in keys:
        stack.enter_context(home.store.lock("home" if key == "" else guards.lock_name(key)))
    return stack


# -- captain side ---------------------------------------------------------------------------


def crew_env(home: Home, name: str, incarnation: str, assignment_id: str) -> dict[str, str]:
    """What a crew process needs to act as itself."""
    return {
        "CAPTAIN_HOME": str(home.root),
        "CAPTAIN_ROLE": "crew",
        "CAPTAIN_CREW": name,
        "CAPTAIN_INCARNATION": incarnation,
        "CAPTAIN_ASSIGNMENT": assignment_id,
    }


Launch = Callable[[dict[str, str]], tuple[PaneLocator, Callable[[], None]]]


def recruit(
    home: Home,
    name: str,
    task: str,
    *,
    owns: list[str] | None = None,
    allow: list[str] | None = None,
    handoff: str | None = None,
    cwd: str | None = None,
    agent: str = "shell",
    ctx: Context = CAPTAIN,
    launch: Launch | None = None,
    later: LaunchSpec | None = None,
    assignment_id: str | None = None,
    workspace: Workspace | None = None,
    prepare: Callable[[], Callable[[], object]] | None = None,
    budget_usd: float | None = None,
) -> Recruit:
    """Record a new crew and its first assignment.

    ``launch`` (the tmux runtime) is called with the crew's environment once every rule has
    passed, still under the locks, and returns the pane's locator and an undo. Only a
    launched crew is recorded, and a crew whose record cannot be written is not left
    running: nothing is ever half-recruited.

    The assignment is a work item. When every ledger slot is held, the crew is recorded
    with ``later`` (how to launch it) and its item waits in the queue; the runner's
    dispatch launches it when a slot frees (``Recruit.queued``).

    ``workspace`` (the crew's own git worktree, docs/worktrees.md) is recorded on the
    event; ``prepare`` makes it, under the locks once every rule has passed and before the
    pane starts, and returns its undo, which a recruit that fails later runs.

    ``budget_usd``: the assignment's budget (docs/budgets.md); None takes ``[crew]
    budget_usd``, which may be none.
    """
    from state.work import ledger  # not at import: crew-side commands skip it
    from state.work import settle as ledger_settle

    check_captain(ctx, "crew")
    key = crew_key(name)
    check_text(task, "task")
    budget_usd = _budget(home, budget_usd)
    project_dir = check_path(os.path.abspath(cwd or os.getcwd()), "project directory")
    with _locked(home, "", key):
        snapshot = crewlog.open_locked(home, key)
        inherit = None
        if snapshot is not None and snapshot.dismissed_at is None:
            raise CaptainError(
                "crew_exists", f"{snapshot.name} is already on the crew ({_live(snapshot)})."
            )
        if snapshot is not None:
            last = snapshot.assignment.assignment_id
            if handoff is None:
                raise CaptainError(
                    "crew_dismissed",
                    f"{snapshot.name} was dismissed; to recruit that name again pass "
                    f"--handoff {last}.",
                    handoff=last,
                    crew=snapshot.name,
                    task=snapshot.assignment.task,
                )
            if handoff != last:
                raise CaptainError(
                    "handoff_mismatch",
                    f"{handoff} is not {snapshot.name}'s last assignment ({last}).",
                )
            _all_acknowledged(home, key, last)
            inherit = snapshot.assignment
        elif handoff is not None:
            raise CaptainError(
                "handoff_mismatch", f"{name} has no earlier assignment to hand off from."
            )
        paths, actions = _grant(home, key, owns, allow, project_dir, inherit)
        spec = _spec(task, paths, actions, project_dir, handoff, assignment_id)
        incarnation = new_id(INCARNATION)
        env = crew_env(home, name, incarnation, spec.assignment_id)
        seq = (snapshot.seq + 1) if snapshot else 1
        undo, wrote, taken = None, False, False
        unmake = prepare() if prepare is not None else None
        if unmake is not None:
            undo = unmake
        try:
            with ledger.capacity_transaction(home):
                try:
                    free = ledger.has_free_slot(home)
                    if launch is not None and free:
                        pane, close = launch(env)
                        undo = _both(close, unmake)
                    else:
                        pane = None
                    event = Recruited(
                        seq=seq,
                        at=now(),
                        actor="captain",
                        name=name,
                        incarnation_id=incarnation,
                        agent=agent,
                        assignment=spec,
                        pane=pane,
                        launch=later if launch is not None and not free else None,
                        workspace=workspace,
                        budget_usd=budget_usd,
                    )
                    wrote = True
                    crewlog.append(home, key, snapshot, event)
                    crash_point("recruit:after-crew")
                    if free:
                        ledger.claim_held(
                            home,
                            ledger_settle.work_id(spec.assignment_id),
                            locator=pane,
                            holder=ledger_settle.holder_for(pane is not None),
                        )
                except BaseException:
                    taken = True  # under the ledger's lock: no dispatch sees the item
                    _take_back(home, key, seq, spec, undo, wrote=wrote)
                    raise
        except BaseException:
            if not taken:  # the commit itself failed (PostgreSQL: the item is not there)
                _take_back(home, key, seq, spec, undo, wrote=wrote)
            raise
    return Recruit(
        name,
        incarnation,
        spec.assignment_id,
        spec.message_id,
        env,
        work_id=ledger_settle.work_id(spec.assignment_id),
        queued=launch is not None and not free,
    )


def _both(first: Callable[[], object], then: Callable[[], object] | None) -> Callable[[], None]:
    """An undo of two parts (the pane, then the worktree it ran in)."""

    def undo() -> None:
        try:
            first()
        finally:
            if then is not None:
                then()

    return undo


def _take_back(
    home: Home,
    key: str,
    seq: int,
    spec: AssignmentSpec,
    undo: Callable[[], object] | None,
    *,
    wrote: bool,
) -> None:
    """A recruit or an assign that failed part way (a full disk: ``store_error``) takes
    back all it wrote, so nothing of it is left for anyone to see: the pane, the work item
    (files; PostgreSQL rolls it back), the task's mail, the event and a snapshot that
    folded it (a reader folds the events again). Deletions need no free space, and the
    paths are named here, never made (``Home``'s would create missing folders). A process
    killed part way is the other case: the next writer settles its event forward."""
    from state.work import ledger
    from state.work import settle as ledger_settle

    if undo is not None:
        undo()
    if not wrote:
        return
    ledger.discard_unrecorded(home, ledger_settle.work_id(spec.assignment_id))
    crew_dir, mail_dir = Path(home.root, "crew", key), Path(home.root, "mail", key)
    with contextlib.suppress(FileNotFoundError):
        os.unlink(mail_dir / f"{spec.message_id}.json")
    with contextlib.suppress(FileNotFoundError):
        os.unlink(crew_dir / "events" / f"{seq:08d}.json")  # Home.event_path's name
    if seq == 1:  # a new crew: none of it stays, its folders neither
        with contextlib.suppress(FileNotFoundError):
            shutil.rmtree(crew_dir)
        with contextlib.suppress(OSError):  # only when empty
            os.rmdir(mail_dir)
    else:  # the snapshot may have folded the event: a cache, rebuilt from the events
        with contextlib.suppress(FileNotFoundError):
            os.unlink(crew_dir / "state.json")


def assign(
    home: Home,
    name: str,
    task: str,
    *,
    handoff: str,
    owns: list[str] | None = None,
    allow: list[str] | None = None,
    ctx: Context = CAPTAIN,
    budget_usd: float | None = None,
) -> AssignmentSpec:
    """The crew's next assignment, once its last is done and acknowledged. ``budget_usd``:
    its budget; None takes ``[crew] budget_usd`` (a budget never carries over)."""
    from state.work import ledger  # not at import: crew-side commands skip it
    from state.work import settle as ledger_settle

    check_captain(ctx, "assign")
    key = crew_key(name)
    check_text(task, "task")
    budget_usd = _budget(home, budget_usd)
    with _locked(home, "", key):
        snapshot = _existing(name, crewlog.open_locked(home, key))
        current = snapshot.assignment
        if handoff != current.assignment_id:
            raise CaptainError(
                "handoff_mismatch",
                f"--handoff {handoff} is not {snapshot.name}'s current assignment "
                f"({current.assignment_id}); pass that exact ID.",
            )
        if snapshot.done_at is None:
            raise CaptainError(
                "assignment_active",
                f"{current.assignment_id} is not done yet; {snapshot.name} finishes it with "
                "captain done before it can be handed off.",
            )
        _all_acknowledged(home, key, current.assignment_id)
        paths, actions = _grant(home, key, owns, allow, current.project_dir, current)
        spec = _spec(task, paths, actions, current.project_dir, handoff)
        seq = snapshot.seq + 1
        wrote, taken = False, False
        try:
            with ledger.capacity_transaction(home):
                try:
                    wrote = True
                    snapshot = crewlog.append(
                        home,
                        key,
                        snapshot,
                        Assigned(
                            seq=seq,
                            at=now(),
                            actor="captain",
                            assignment=spec,
                            budget_usd=budget_usd,
                        ),
                    )
                    ledger_settle.claim_if_free(home, spec.assignment_id, snapshot.pane)
                except BaseException:
                    taken = True  # under the ledger's lock: no dispatch sees the item
                    _take_back(home, key, seq, spec, None, wrote=wrote)
                    raise
        except BaseException:
            if not taken:  # the commit itself failed (PostgreSQL)
                _take_back(home, key, seq, spec, None, wrote=wrote)
            raise
    return spec


def _budget(home: Home, amount: float | None) -> float | None:
    """The budget a new assignment starts with: the one given, else the config's."""
    return budget.check_amount(amount) if amount is not None else budget.default(home)


def set_budget(
    home: Home, name: str, amount: float, *, assignment_id: str, ctx: Context = CAPTAIN
) -> CrewSnapshot:
    """Set the current assignment's budget (``tell --budget-usd``). A budget raised past
    the spend releases the crew: its ``held`` notices of this assignment are acknowledged,
    and the next tool call runs. A budget at or under the spend holds it at once."""
    check_captain(ctx, "tell")
    key = crew_key(name)
    amount = budget.check_amount(amount)
    with _locked(home, key):
        snapshot = _existing(name, crewlog.open_locked(home, key))
        _same_assignment(snapshot, assignment_id)
        _not_done(snapshot)
        if snapshot.budget_usd != amount:
            snapshot = crewlog.append(
                home,
                key,
                snapshot,
                BudgetSet(
                    seq=snapshot.seq + 1,
                    at=now(),
                    actor="captain",
                    assignment_id=assignment_id,
                    budget_usd=amount,
                ),
            )
        from state.crew import spend

        measured = spend.assignment_spend(home, key, assignment_id)
        if budget.review(home, key, snapshot, measured, locked=True) is None:
            held = set(budget.held_notices(home, key, assignment_id))
            for n in mailbox.unacknowledged(home, key, assignment_id):
                if n.delivery_id in held:
                    mailbox.write_ack(home, key, n)
    return snapshot


def _write_mail(
    home: Home,
    key: str,
    snapshot: CrewSnapshot,
    kind: str,
    text: str,
    message_id: str,
    question_id: str | None = None,
) -> Message:
    message = Message(
        message_id=message_id,
        crew=snapshot.name,
        incarnation_id=snapshot.incarnation_id,
        assignment_id=snapshot.assignment.assignment_id,
        kind=kind,
        text=text,
        question_id=question_id,
        queued_at=now(),
    )
    home.store.create_once(home.mail_dir(key) / f"{message_id}.json", encode(message))
    return message


def tell(
    home: Home, name: str, text: str, *, assignment_id: str, ctx: Context = CAPTAIN
) -> Message:
    check_captain(ctx, "tell")
    key = crew_key(name)
    check_text(text, "message")
    with _locked(home, key):
        snapshot = guards.tell_turn(
            home, key, name, text, assignment_id, crewlog.open_locked, mailbox.last_message
        )
        return _write_mail(home, key, snapshot, "tell", text, new_id(MESSAGE))


def answer(
    home: Home,
    name: str,
    question_id: str,
    text: str,
    *,
    assignment_id: str,
    ctx: Context = CAPTAIN,
) -> Message:
    check_captain(ctx, "answer")
    key = crew_key(name)
    check_text(text, "answer")
    with _locked(home, key):
        snapshot = guards.answer_turn(
            home, key, name, question_id, assignment_id, crewlog.open_locked
        )
        message = _write_mail(
            home,
            key,
            snapshot,
            "answer",
            text,
            guards.answer_id(question_id),
            question_id=question_id,
        )
        # The answer is the captain's response to `asked`: it acknowledges that notification,
        # so ask -> answer -> done -> next task needs no separate acknowledgement (README).
        for n in mailbox.unacknowledged(home, key, snapshot.assignment.assignment_id):
            if n.status == "asked" and n.question_id == question_id:
                mailbox.write_ack(home, key, n)
        return message


def dismiss(
    home: Home,
    name: str,
    *,
    reason: str = "crew dismissed",
    ctx: Context = CAPTAIN,
    stopped: bool | None = None,
    actor: str = "captain",
    worktree: str | None = None,
    worktree_tip: str | None = None,
) -> list[BouncedMail]:
    """Retire the crew; its unread mail bounces, each with a ``bounced`` notification.

    ``worktree`` is what the caller decided for the crew's own worktree (removed, kept,
    discarded, gone: docs/worktrees.md), recorded here before the caller acts on it.

    ``stopped`` is the runtime's word on the crew's pane (True: confirmed closed). The
    assignment's work item is cancelled only on a confirmed stop; otherwise it goes to
    needs_reconciliation, never to cancelled on a guess.
    """
    from state.work import ledger  # not at import: crew-side commands skip it
    from state.work import settle as ledger_settle

    check_captain(ctx, "dismiss")
    ledger.check_shown(reason)  # refused before anything is written
    key = crew_key(name)
    with _locked(home, key):
        snapshot = _existing(name, crewlog.open_locked(home, key))
        bounced = crewlog.unread_bounces(home, key, snapshot)  # what settling will bounce
        # The work item before the crew's record: killed in between, the crew is still
        # live and dismissing it again finishes the job (cancel is idempotent). The other
        # order left a dismissed crew whose item stayed running, which nothing revisits.
        work_id = ledger_settle.work_id(snapshot.assignment.assignment_id)
        if ledger.exists(home, work_id):
            ledger.cancel(home, work_id, actor=actor, reason=reason, stop=lambda attempt: stopped)
        crash_point("dismiss:after-work")
        crewlog.append(
            home,
            key,
            snapshot,
            Dismissed(
                seq=snapshot.seq + 1,
                at=now(),
                actor="captain",
                assignment_id=snapshot.assignment.assignment_id,
                reason=reason,
                bounced=[],
                worktree=worktree,
                worktree_tip=worktree_tip,
            ),
        )
        crash_point("dismiss:after-crew")
    return bounced


def discard_worktree(
    home: Home, name: str, *, tip: str | None, ctx: Context = CAPTAIN
) -> CrewSnapshot:
    """Record that a dismissed crew's kept worktree is discarded (``dismiss --discard``
    after the dismissal kept it), before the caller removes it."""
    check_captain(ctx, "dismiss")
    key = crew_key(name)
    with _locked(home, key):
        snapshot = crewlog.open_locked(home, key)
        if snapshot is None:
            raise CaptainError("unknown_crew", f"there is no crew named {name}.")
        if snapshot.dismissed_at is None or snapshot.worktree != "kept":
            return snapshot
        return crewlog.append(
            home,
            key,
            snapshot,
            WorktreeDiscarded(seq=snapshot.seq + 1, at=now(), actor="captain", tip=tip),
        )


def bounce(home: Home, name: str, reason: str) -> list[Bounce]:
    """Mark every unread message of a live crew bounced (its pane or server is confirmed
    gone), each with a ``bounced`` notification naming the message and why.

    The bounce record carries its delivery ID, so a bouncer killed between the two writes
    is completed by the next one: undeliverable mail is reported, never parked.
    """
    key = crew_key(name)
    out = []
    with _locked(home, key):
        snapshot = _existing(name, crewlog.open_locked(home, key))
        for m in mailbox.unread(home, key, snapshot):
            record = Bounce(
                message_id=m.message_id,
                crew=snapshot.name,
                delivery_id=new_id(DELIVERY),
                reason=reason,
                bounced_at=now(),
            )
            home.store.create_once(
                home.bounces_dir(key) / f"{m.message_id}.json",
                encode(record),
                same=lambda old, new: True,
            )
            out.append(record)
        by_id = {m.message_id: m for m in mailbox.messages(home, key, snapshot.incarnation_id)}
        for record in home.store.records(home.bounces_dir(key), Bounce):
            mail = by_id.get(record.message_id)
            path = home.notifications_dir(key) / f"{record.delivery_id}.json"
            if mail is None or path.exists():
                continue
            n = Notification(
                delivery_id=record.delivery_id,
                status="bounced",
                crew=snapshot.name,
                assignment_id=mail.assignment_id,
                queued_at=mail.queued_at,
                created_at=record.bounced_at,
                message_id=mail.message_id,
                summary=bounce_summary(mail.message_id, record.reason, mail.text),
            )
            home.store.create_once(path, encode(n), same=lambda old, new: True)
    return out


# -- crew side ------------------------------------------------------------------------------


def _crew_turn(
    home: Home, key: str, name: str, ctx: Context, assignment_id: str | None, pending_hint: str
) -> tuple[CrewSnapshot, str]:
    """The crew, acting as itself on its live, unfinished assignment with no question
    pending (caller holds the crew lock)."""
    return guards.crew_turn(home, key, name, ctx, assignment_id, pending_hint, crewlog.open_locked)


def ask(
    home: Home, name: str, text: str, *, assignment_id: str | None = None, ctx: Context = CAPTAIN
) -> Asked:
    key = crew_key(name)
    check_text(text, "question")
    with _locked(home, key):
        snapshot, assignment_id = _crew_turn(
            home, key, name, ctx, assignment_id, guards.ASK_PENDING
        )
        last = mailbox.last_message(home, key, assignment_id)
        event = Asked(
            seq=snapshot.seq + 1,
            at=now(),
            actor=_actor(ctx),
            assignment_id=assignment_id,
            question_id=new_id(QUESTION),
            delivery_id=new_id(DELIVERY),
            text=text,
            queued_at=last.queued_at if last else None,
        )
        crewlog.append(home, key, snapshot, event)
    return event


def done(
    home: Home,
    name: str,
    report: str | None,
    *,
    assignment_id: str | None = None,
    ctx: Context = CAPTAIN,
) -> Finished:
    """Finish the assignment. Unread mail refuses it; the refusal carries that mail, and
    ``err.after_report()`` (called once the caller has shown it) writes its receipts."""
    from state.work import (
        settle as ledger_settle,  # not at import: crew-side commands skip it
    )

    key = crew_key(name)
    if report is None or not report.strip():
        raise CaptainError(
            "report_required", "done needs --report: say what changed and how it was checked."
        )
    check_text(report, "report")
    with _locked(home, key):
        snapshot, assignment_id = _crew_turn(
            home, key, name, ctx, assignment_id, guards.DONE_PENDING
        )
        waiting = mailbox.unread(home, key, snapshot)
        if waiting:
            err = CaptainError(
                "unread_mail",
                f"{counted(len(waiting), 'unread message')} came in; "
                f"{'it is' if len(waiting) == 1 else 'they are'} shown here and now "
                "counted as read. Act on them, then run done again.",
                messages=[m.model_dump(mode="json", by_alias=True) for m in waiting],
            )
            err.after_report = lambda: mailbox.mark_read(home, key, waiting, "done")
            raise err
        ledger_settle.check_reportable(home, assignment_id)
        last = mailbox.last_message(home, key, assignment_id)
        event = Finished(
            seq=snapshot.seq + 1,
            at=now(),
            actor=_actor(ctx),
            assignment_id=assignment_id,
            delivery_id=new_id(DELIVERY),
            report=report,
            queued_at=last.queued_at if last else None,
        )
        crewlog.append(home, key, snapshot, event)
    return event


def check(
    home: Home,
    name: str,
    action: str,
    paths: list[str],
    *,
    assignment_id: str | None = None,
    ctx: Context = CAPTAIN,
) -> Verdict:
    """Validate a grant; executes nothing. Refusals of the grant itself are a Verdict."""
    return guards.check(
        name,
        action,
        paths,
        lambda key: crewlog.load(home, key)[0],
        assignment_id=assignment_id,
        ctx=ctx,
    )


def inbox(
    home: Home,
    name: str,
    *,
    deliver: Callable[[list[Message]], None],
    ctx: Context = CAPTAIN,
    via: str = "inbox",
) -> list[Message]:
    """Hand queued mail (oldest first) to ``deliver``; receipts only after it returns."""
    return guards.inbox(
        home,
        name,
        deliver=deliver,
        ctx=ctx,
        via=via,
        open_locked=crewlog.open_locked,
        unread=mailbox.unread,
        mark_read=mailbox.mark_read,
    )


def _actor(ctx: Context) -> str:
    return "crew" if ctx.role == "crew" else "captain"


def ring_stamp(home: Home, key: str) -> RingStamp | None:
    """The doorbell's memory of this crew (``doorbell/<key>.json``), None when it has none;
    read here so that what shows it (``status``, ``wait``) need not import the doorbell."""
    return home.store.read(home.ring_stamp_path(key), RingStamp)


def _snapshot(home: Home, key: str) -> CrewSnapshot | None:
    return crewlog.load(home, key)[0]


# how ``status`` and ``wait``'s hints read a crew through the models (state.crew.roster; the
# plain readers are state.crew_side.status's)
READERS = roster.Readers(
    snapshot=_snapshot,
    unread=mailbox.unread,
    notifications=mailbox.notifications,
    ring_stamp=ring_stamp,
)


def crew_state(home: Home, key: str) -> standing.CrewState | None:
    """One crew's state now (None: no such crew), as ``status`` shows it."""
    return roster.crew_state(home, key, READERS)


def crew_status(home: Home, include_dismissed: bool = False) -> list[dict[str, Any]]:
    """One row per crew for ``status``: who, on what, and what it waits on."""
    return [found.row for found in roster.rows(home, include_dismissed, READERS)]
