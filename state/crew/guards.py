"""Who may act, on which assignment, and what a grant allows: the protocol's guards.

Pure rules over a crew snapshot's attributes, with no pydantic behind them: the protocol
calls them on its models, and the crew-side fast path (``state.crew_side.fast``) on the plain
records it reads, so both refuse with the same code and the same sentence.
"""

from __future__ import annotations

import os
from collections.abc import Callable, Mapping
from typing import Any, Literal, NamedTuple, TypeVar

from state.errors import CaptainError
from state.home import Home
from state.inputs import Resolver, check_actions, crew_key, grant_problem, is_within, summarize
from state.vocab import PATH_ACTIONS, ended

# A crew snapshot as these rules read it: the models' ``CrewSnapshot``, or the fast path's
# plain record of it (``state.crew_side.plain.Rec``, attributes of the same names); S keeps
# which one a caller passed, so what it gets back is what it gave.
Snapshot = Any
S = TypeVar("S")
M = TypeVar("M")  # a message, the model or its plain record, likewise
Role = Literal["captain", "crew"]


class Context(NamedTuple):  # not a dataclass: importing dataclasses costs crew commands ~9 ms
    """Who is calling: the captain, or a crew process (from its CAPTAIN_* environment)."""

    role: Role = "captain"
    crew: str | None = None
    incarnation: str | None = None
    assignment: str | None = None

    @classmethod
    def from_env(cls, env: Mapping[str, str] = os.environ) -> Context:
        """A process with any crew identity (``CAPTAIN_CREW``, ``CAPTAIN_INCARNATION`` or
        ``CAPTAIN_ASSIGNMENT`` set) is a crew, whatever ``CAPTAIN_ROLE`` says: a crew that
        empties its role or sets it to ``captain`` stays a crew. ``CAPTAIN_ROLE=crew`` is a
        crew too; the captain is a process with none of these. Any other role is refused:
        a typo must not hand a crew process the captain's powers."""
        role = env.get("CAPTAIN_ROLE") or "captain"
        if role not in ("captain", "crew"):
            shown = role.encode("unicode_escape", "backslashreplace").decode()[:40]
            raise CaptainError(
                "invalid_role",
                f"CAPTAIN_ROLE is '{shown}'; it must be 'crew' (a crew process, as recruiting "
                "sets it) or unset (the captain).",
            )
        identity = [env.get(k) or None for k in CREW_IDENTITY]
        if role == "captain" and not any(identity):
            return cls()
        return cls("crew", *identity)


CREW_IDENTITY = ("CAPTAIN_CREW", "CAPTAIN_INCARNATION", "CAPTAIN_ASSIGNMENT")


CAPTAIN = Context()


class Verdict(NamedTuple):
    allowed: bool
    reason: str


def check_captain(ctx: Context, command: str) -> None:
    if ctx.role == "crew":
        raise CaptainError(
            "crew_forbidden",
            f"'{command}' is a captain command; crew {ctx.crew or '(unnamed)'} may not run it.",
        )


def existing(name: str, snapshot: S | None) -> S:
    if snapshot is None:
        raise CaptainError("unknown_crew", f"there is no crew named {name}.")
    read: Snapshot = snapshot
    if read.dismissed_at is not None:
        raise CaptainError(
            "crew_dismissed",
            f"{read.name} was dismissed; recruit again with --handoff "
            f"{read.assignment.assignment_id}.",
        )
    return snapshot


def live(snapshot: Snapshot) -> str:
    return f"{snapshot.name}'s live assignment is {snapshot.assignment.assignment_id}"


def same_assignment(snapshot: Snapshot, assignment_id: str) -> None:
    if assignment_id != snapshot.assignment.assignment_id:
        raise CaptainError("stale_assignment", f"{assignment_id} is not current; {live(snapshot)}.")


def crew_identity(ctx: Context, snapshot: Snapshot) -> None:
    """A crew process may act only as itself, in its current incarnation."""
    if ctx.role != "crew":
        return
    if not ctx.crew or not ctx.incarnation:
        missing = "CAPTAIN_CREW" if not ctx.crew else "CAPTAIN_INCARNATION"
        raise CaptainError(
            "missing_context", f"{missing} is not set in this crew environment; {live(snapshot)}."
        )
    if ctx.crew.lower() != snapshot.name.lower():
        raise CaptainError(
            "crew_forbidden",
            f"this process is crew {ctx.crew}; it may not act for {snapshot.name}.",
        )
    if ctx.incarnation != snapshot.incarnation_id:
        # never names the current incarnation: with it, any process could act as this crew
        raise CaptainError(
            "stale_incarnation",
            f"incarnation {ctx.incarnation} is not {snapshot.name}'s current one; "
            f"{live(snapshot)}.",
        )


def crew_assignment(ctx: Context, snapshot: Snapshot, explicit: str | None) -> str:
    """Resolve the assignment a crew-side command is about, and insist it is live."""
    crew_identity(ctx, snapshot)
    assignment_id = explicit or (ctx.assignment if ctx.role == "crew" else None)
    if not assignment_id:
        where = (
            "CAPTAIN_ASSIGNMENT is not set"
            if ctx.role == "crew"
            else "the captain must name the assignment"
        )
        raise CaptainError("missing_context", f"{where}; pass --assignment. {live(snapshot)}.")
    same_assignment(snapshot, assignment_id)
    return assignment_id


def not_done(snapshot: Snapshot) -> None:
    if snapshot.done_at is not None:
        raise CaptainError(
            "assignment_done",
            f"{snapshot.assignment.assignment_id} is done; start the next one with "
            f"captain assign {snapshot.name} --handoff {snapshot.assignment.assignment_id}.",
        )


def grant_frame(snapshot: Snapshot) -> tuple[str, list[str]]:
    """Where the crew's grant is judged: the project directory and the owned paths, or,
    for a crew with its own worktree (docs/worktrees.md), the same places in its worktree.
    Grants are recorded relative to the project (``--owns src`` is the project's ``src``);
    the crew edits its worktree's copy, so that is what a path it names is judged against.
    A path of the user's checkout is outside the worktree, so outside the grant."""
    spec = snapshot.assignment
    space = getattr(snapshot, "workspace", None)
    if space is None:
        return spec.project_dir, list(spec.owns)

    def moved(path: str) -> str:
        if not is_within(path, space.project):
            return path  # owned outside the repository: the same place for every checkout
        rel = os.path.relpath(path, space.project)
        return space.worktree if rel == "." else os.path.join(space.worktree, rel)

    return moved(spec.project_dir), [moved(o) for o in spec.owns]


def grant_verdict(snapshot: Snapshot, action: str, paths: list[str]) -> Verdict:
    """Whether the live assignment grants ``action`` on ``paths`` (a known action)."""
    spec = snapshot.assignment
    if snapshot.done_at is not None:
        return Verdict(False, f"{spec.assignment_id} is done; nothing is granted after done.")
    if action not in spec.allow:
        granted = ", ".join(spec.allow) or "nothing"
        return Verdict(
            False, f"{action} is not granted on {spec.assignment_id} (granted: {granted})."
        )
    if action in PATH_ACTIONS:
        project_dir, owns = grant_frame(snapshot)
        for raw in paths:  # what each path is now, not what it was called
            problem = grant_problem(raw, project_dir, owns, snapshot.name)
            if problem is not None:
                return Verdict(False, problem)
    shown = f" on {', '.join(paths)}" if paths else ""
    return Verdict(True, f"{action}{shown} is granted on {spec.assignment_id}.")


def outside_grant(snapshot: Snapshot, top: str, paths: list[str]) -> dict[str, str]:
    """Which of ``paths`` (relative to the working tree ``top`` the crew's change is in:
    its worktree, or the shared checkout's top level) lie outside the assignment's owned
    paths, each with why: ``grant_verdict``'s rule (``grant_problem`` in ``grant_frame``),
    judged where the files really are, so a symlink in the worktree that leads out of it is
    outside. Judged after ``done`` too: it is about what the change touched, not a grant."""
    project_dir, owns = grant_frame(snapshot)
    found: dict[str, str] = {}
    resolve = Resolver()  # one look at the disk per directory, for the whole change
    for path in paths:
        try:
            raw = os.path.relpath(os.path.join(top, path), project_dir)
            problem = grant_problem(raw, project_dir, owns, snapshot.name, resolve)
        except CaptainError as err:  # a name no grant can name (control characters ...)
            problem = err.message
        if problem is not None:
            found[path] = problem
    return found


def check(
    name: str,
    action: str,
    paths: list[str],
    load: Callable[[str], object],
    *,
    assignment_id: str | None,
    ctx: Context,
) -> Verdict:
    """Validate a grant on the crew ``load(key)`` returns; refusals of the grant itself
    are a Verdict, anything else a ``CaptainError``."""
    key = crew_key(name)
    check_actions([action])
    snapshot = existing(name, load(key))
    crew_assignment(ctx, snapshot, assignment_id)
    return grant_verdict(snapshot, action, paths)


def current_crew(ctx: Context, load: Callable[[str], S | None]) -> tuple[str, S]:
    """The calling crew process's own live snapshot, from its environment: a refusal for
    an unknown, dismissed or stale incarnation. Returns (key, snapshot)."""
    key = crew_key(ctx.crew or "")  # no CAPTAIN_CREW: crew_key refuses the empty name
    snapshot = load(key)
    if snapshot is None:
        raise CaptainError("unknown_crew", f"there is no crew named {ctx.crew}.")
    read: Snapshot = snapshot
    if read.dismissed_at is not None:
        raise CaptainError("crew_dismissed", f"{read.name} was dismissed.")
    crew_identity(ctx, snapshot)
    return key, snapshot


def own_view(ctx: Context, load: Callable[[str], object | None]) -> str | None:
    """Whose records a caller may see: everyone's for the captain (None); for a crew
    process, its own crew's key only, and only once its identity holds (its name and its
    current incarnation), so a crew name typed into the environment shows nothing."""
    if ctx.role != "crew":
        return None
    if not ctx.crew:
        raise CaptainError(
            "missing_context",
            "CAPTAIN_CREW is not set in this crew environment; a crew sees only its own records.",
        )
    return current_crew(ctx, load)[0]


def own_item(viewer: str | None, item_crew: str | None, what: str) -> None:
    """A crew may see a record (a work item) only when it is its own."""
    if viewer is not None and (item_crew or "").lower() != viewer:
        raise CaptainError(
            "crew_forbidden", f"{what} is not this crew's; a crew sees only its own records."
        )


# -- the crew side's turns, whichever records back them -----------------------------------
#
# ``state.crew.protocol`` passes functions over the models and ``state.crew_side.fast`` over
# plain records: the order of the checks, and so which refusal a caller sees, is this one.

ASK_PENDING = (
    "is still waiting for an answer; one question at a time. Stop and wait for the answer mail."
)
DONE_PENDING = "is not answered yet; wait for the answer mail, act on it, then run done again."


def lock_name(key: str) -> str:
    """The crew lock: every writer of a crew's records holds it."""
    return f"crew-{key}"


def crew_turn(
    home: Home,
    key: str,
    name: str,
    ctx: Context,
    assignment_id: str | None,
    pending_hint: str,
    open_locked: Callable[[Home, str], S | None],
) -> tuple[S, str]:
    """The crew, acting as itself on its live, unfinished assignment with no question
    pending (caller holds the crew lock). Returns (snapshot, assignment ID)."""
    snapshot = existing(name, open_locked(home, key))
    assignment_id = crew_assignment(ctx, snapshot, assignment_id)
    not_done(snapshot)
    pending = pending_question(home, key, snapshot)
    if pending is not None:
        raise CaptainError(
            "question_pending",
            f"{pending.question_id} {pending_hint}",
            question_id=pending.question_id,
        )
    return snapshot, assignment_id


def tell_turn(
    home: Home,
    key: str,
    name: str,
    text: str,
    assignment_id: str,
    open_locked: Callable[[Home, str], S | None],
    last_message: Callable[[Home, str, str], Any],
) -> S:
    """The captain's ``tell`` may go ahead (caller holds the crew lock): the crew exists, on
    that assignment, not finished, and the text does not repeat its last message."""
    snapshot = existing(name, open_locked(home, key))
    same_assignment(snapshot, assignment_id)
    not_done(snapshot)
    last = last_message(home, key, assignment_id)
    if last is not None and last.text == text:
        raise CaptainError(
            "duplicate_message",
            f"that text repeats the last message on {assignment_id} ({last.message_id}); "
            "nothing was sent.",
            message_id=last.message_id,
        )
    return snapshot


def answer_turn(
    home: Home,
    key: str,
    name: str,
    question_id: str,
    assignment_id: str,
    open_locked: Callable[[Home, str], S | None],
) -> S:
    """The captain's ``answer`` may go ahead (caller holds the crew lock): ``question_id``
    is the crew's question on that assignment, not answered yet."""
    snapshot = existing(name, open_locked(home, key))
    same_assignment(snapshot, assignment_id)
    question = snapshot.question  # type: ignore[attr-defined]
    if question is None or question.question_id != question_id:
        pending = pending_question(home, key, snapshot)
        hint = (
            f"its pending question is {pending.question_id}"
            if pending
            else "it has no pending question"
        )
        raise CaptainError(
            "unknown_question",
            f"{question_id} is not {snapshot.name}'s question on {assignment_id}; {hint}.",  # type: ignore[attr-defined]
        )
    if is_answered(home, key, question_id):
        raise CaptainError(
            "question_answered",
            f"{question_id} was already answered; use captain tell to add more.",
        )
    return snapshot


def ringable(snapshot: Snapshot | None) -> bool:
    """Whether the doorbell has a pane to ring for this crew: recorded, not dismissed,
    launched (a crew recorded with --no-launch, or waiting for a ledger slot, has none)."""
    return snapshot is not None and snapshot.dismissed_at is None and snapshot.pane is not None


# -- wait: each notification handed out once ---------------------------------------------------


def scope(home: Home, name: str | None) -> list[str]:
    """The crew keys a ``wait`` watches: every crew's, or the named one's (it must exist)."""
    if name is None:
        return home.crew_keys()
    key = crew_key(name)
    if not home.has_crew(key):
        raise CaptainError("unknown_crew", f"there is no crew named {name}.")
    return [key]


def take(
    home: Home,
    keys: list[str],
    notifications: Callable[[Home, str], list[M]],
    mark_returned: Callable[[Home, str, M], bool],
) -> M | None:
    """Hand out the oldest notification not yet returned, or refuse while one is owed.
    Every record is read before anything is written (the fast path's ``Unsure`` comes
    first); ``mark_returned`` writes the returned mark once and says whether it did."""
    store = home.store
    candidates: list[tuple[str, Any]] = []
    for key in keys:
        acked = set(store.names(home.acks_dir(key)))
        handed = set(store.names(home.returned_dir(key)))
        for n in notifications(home, key):
            n_: Any = n
            if n_.delivery_id in acked:
                continue
            if n_.delivery_id in handed:
                raise CaptainError(
                    "unacknowledged",
                    f"{n_.delivery_id} ({n_.status}) from {n_.crew} was returned and not "
                    f"acknowledged: {ended(summarize(n_.summary)[:200])} Run captain wait "
                    f"{n_.crew} --ack {n_.delivery_id}.",
                    delivery_id=n_.delivery_id,
                    status=n_.status,
                    summary=n_.summary,
                )
            candidates.append((key, n))
    candidates.sort(key=lambda kn: (kn[1].created_at, kn[1].delivery_id))
    for key, n in candidates:
        with store.lock(f"wait-{key}"):  # the one waiter that marks it returned gets it
            if not (home.returned_dir(key) / f"{n.delivery_id}.json").exists():
                mark_returned(home, key, n)
                return n
    return None


def inbox(
    home: Home,
    name: str,
    *,
    deliver: Callable[[list[M]], None],
    ctx: Context,
    via: str,
    open_locked: Callable[[Home, str], S | None],
    unread: Callable[[Home, str, S], list[M]],
    mark_read: Callable[[Home, str, list[M], str], None],
) -> list[M]:
    """Hand queued mail (oldest first) to ``deliver``; receipts only after it returns, for
    what the list holds then: a ``deliver`` that can take only the oldest part cuts the
    list in place (``del batch[n:]``) and the rest stays unread."""
    key = crew_key(name)
    with home.store.lock(lock_name(key)):  # so a dismissal cannot bounce what is being read
        snapshot = existing(name, open_locked(home, key))
        crew_identity(ctx, snapshot)
        waiting = unread(home, key, snapshot)
        deliver(waiting)
        mark_read(home, key, waiting, via)
    return waiting


# -- mail a crew has not read, and the question it waits on ---------------------------------


def unread_names(home: Home, key: str) -> list[str]:
    """Names of a crew's mail with neither a receipt nor a bounce (any incarnation's).

    Receipts and bounces are named after their message, so read mail is skipped by name and
    nothing is parsed (the doorbell asks this of every crew, every round)."""
    store = home.store
    done = set(store.names(home.receipts_dir(key))) | set(store.names(home.bounces_dir(key)))
    return [name for name in store.names(home.mail_dir(key)) if name not in done]


def unacknowledged(
    home: Home, key: str, notifications: list[Any], assignment_id: str | None = None
) -> list[Any]:
    """Of a crew's ``notifications`` (models or plain records), those without an ack (on
    ``assignment_id`` only, when given): acks are named after their delivery."""
    done = set(home.store.names(home.acks_dir(key)))
    return [
        n
        for n in notifications
        if n.delivery_id not in done and (assignment_id is None or n.assignment_id == assignment_id)
    ]


def answer_id(question_id: str) -> str:
    """An answer's message ID is derived from its question: one answer, exactly once."""
    return f"msg_{question_id}"


def is_answered(home: Home, key: str, question_id: str) -> bool:
    return (home.mail_dir(key) / f"{answer_id(question_id)}.json").exists()


def pending_question(home: Home, key: str, snapshot: Snapshot) -> Any:
    q = snapshot.question
    return q if q is not None and not is_answered(home, key, q.question_id) else None
