"""Approval requests: an agent's permission prompt, held open for the captain's decision.

The rule of the seed stands: a notification never approves, waiting never approves, and
nothing is ever typed into a pane to answer a prompt. An approval is given only by the
agent's own hook returning a decision, and only when the captain wrote one for that very
request in time. Everything else — no decision before ``[crew] approval_timeout``, an error,
a captain that died mid-decision, a hook the agent killed — leaves the agent's own prompt to
appear in the pane, as without captain (fail open to the native prompt, never to allow).

Records (docs/store.md rules: create-once, atomic, bounded, bad ones quarantined), per crew
key under ``approvals/<key>/``:

- ``<request_id>.json``: the request (``Request``), written once by the crew's hook;
- ``decisions/<request_id>.json``: the captain's decision, written once (a second decision
  is ``approval_decided``);
- ``outcomes/<request_id>.json``: how the hook ended (``decided``, ``expired``,
  ``answered_in_pane``), written once by the hook. A request with an outcome is closed: a
  decision arriving after it is refused (``approval_closed``) and recorded as ``late``.

Decision and outcome are both written under the crew's approval lock, so exactly one of "the
captain decided in time" and "the hook gave up" happens. Each request and its end is also an
event on the assignment's work item (``approval_requested`` / ``approval_decided``), with the
command as a fingerprint and a bounded, escaped excerpt only.
"""

from __future__ import annotations

import hashlib
import os
import time
from collections.abc import Callable
from contextlib import AbstractContextManager
from dataclasses import dataclass
from datetime import datetime, timedelta
from pathlib import Path
from typing import Literal

from pydantic import Field

from state.clock import now
from state.crew.guards import Snapshot
from state.errors import CaptainError
from state.home import Home
from state.ids import new_id
from state.inputs import crew_key, for_terminal
from state.records import Record
from state.store import encode

APPROVAL = "apr"
EXCERPT_MAX = 200  # characters of the command or file shown anywhere (escaped)
TOOL_MAX = 64
REASON_MAX = 2000  # characters of a deny reason
POLL_SECONDS = 0.02  # how often a held hook looks for its decision (one stat)
DECISIONS = ("allow", "allow_session", "deny")
# how a request ended, as recorded on the work item: a decision, or why there was none
ENDINGS = (*DECISIONS, "expired", "answered_in_pane", "late")


class Request(Record):
    request_id: str
    crew: str
    incarnation_id: str
    assignment_id: str
    agent: str = Field(max_length=16)
    tool: str = Field(max_length=TOOL_MAX)
    excerpt: str = Field(max_length=EXCERPT_MAX + 1)  # escaped, cut with "…"
    fingerprint: str = Field(max_length=64)  # sha256 of the whole command/input, hex
    session_allowed: bool  # the agent can take "allow for this session"
    created_at: datetime
    expires_at: datetime
    # the hook process holding it (pid and /proc start time): a decision for a request
    # whose hook is gone reaches no one, so it is refused, never reported as given
    hook_pid: int | None = None
    hook_started: str | None = None


class Decision(Record):
    request_id: str
    crew: str
    decision: Literal["allow", "allow_session", "deny"]
    reason: str = Field(default="", max_length=REASON_MAX)
    actor: str = Field(max_length=64)
    decided_at: datetime


class Outcome(Record):
    request_id: str
    crew: str
    outcome: Literal["decided", "expired", "answered_in_pane"]
    at: datetime


# -- layout -----------------------------------------------------------------------------------


def _dir(home: Home, key: str, *sub: str) -> Path:
    return home.store.dir("approvals", key, *sub)


def prepare(home: Home, key: str) -> None:
    """Make the crew's approval folders when its agent starts: a watcher (the cockpit)
    sees the files of a folder that already exists, where a folder made together with its
    first file can hide that file from inotify until the next rescan."""
    for sub in ("decisions", "outcomes"):
        _dir(home, key, sub)


def _lock(home: Home, key: str, request_id: str) -> AbstractContextManager[None]:  # noqa: ARG001
    # per crew, not per request: lock files are never deleted, and a request's is held
    # for a few milliseconds
    return home.store.lock(f"approval-{key}")


def _path(home: Home, key: str, request_id: str, sub: str | None = None) -> Path:
    return (_dir(home, key, sub) if sub else _dir(home, key)) / f"{request_id}.json"


def _check_id(request_id: str, name: str) -> str:
    if not (
        isinstance(request_id, str)
        and request_id.startswith(APPROVAL + "_")
        and 4 < len(request_id) <= 64
        and request_id[4:].isalnum()
        and request_id.isascii()
    ):
        raise CaptainError(
            "unknown_approval",
            f"{for_terminal(str(request_id))[:80]!s} is not an approval request of {name} "
            "(apr_...). captain approvals lists the open ones.",
        )
    return request_id


# -- what a request shows -------------------------------------------------------------------


def fingerprint(text: str) -> str:
    return hashlib.sha256(text.encode("utf-8", "surrogatepass")).hexdigest()


def excerpt(text: str) -> str:
    """One line of at most ``EXCERPT_MAX`` characters, every control, bidi or tag character
    escaped: what a hostile repository's model wrote is shown, never obeyed."""
    line = " ".join(for_terminal(text).split())
    return line if len(line) <= EXCERPT_MAX else line[: EXCERPT_MAX - 1] + "…"


def _started(pid: int) -> str | None:
    """A process's start time (/proc/PID/stat field 22): with its pid, names it once."""
    try:
        with open(f"/proc/{pid}/stat", "rb") as f:
            return f.read().rsplit(b")", 1)[1].split()[19].decode()
    except (OSError, IndexError, UnicodeDecodeError):
        return None


def hook_alive(request: Request) -> bool:
    """Whether the hook holding ``request`` still runs (True when the request does not say
    which process holds it)."""
    if request.hook_pid is None or request.hook_started is None:
        return True
    return _started(request.hook_pid) == request.hook_started


# -- the hook's side --------------------------------------------------------------------------


def open_request(
    home: Home,
    snapshot: Snapshot,
    *,
    agent: str,
    tool: str,
    command: str,
    session_allowed: bool,
    timeout: float,
) -> Request:
    """Record one request for the crew ``snapshot`` is (its live incarnation)."""
    key = crew_key(snapshot.name)
    at = now()
    request = Request(
        request_id=new_id(APPROVAL),
        crew=snapshot.name,
        incarnation_id=snapshot.incarnation_id,
        assignment_id=snapshot.assignment.assignment_id,
        agent=agent[:16],
        tool=excerpt(tool)[:TOOL_MAX] or "a tool",
        excerpt=excerpt(command),
        fingerprint=fingerprint(command),
        session_allowed=session_allowed,
        created_at=at,
        expires_at=at + timedelta(seconds=timeout),
        hook_pid=os.getpid(),
        hook_started=_started(os.getpid()),
    )
    # on the record first: a decision (which needs the request file) always comes after it
    _record(home, request, "approval_requested", actor=request.crew)
    home.store.create_once(_path(home, key, request.request_id), encode(request))
    return request


def await_decision(
    home: Home,
    request: Request,
    *,
    deadline: float,
    gone: Callable[[], bool] = lambda: False,
    sleep: Callable[[float], None] = time.sleep,
) -> Decision | None:
    """Hold until the captain decides (its decision), ``deadline`` (monotonic) passes or
    ``gone()`` says the agent ended the hook (None, and the request is closed as
    ``expired`` or ``answered_in_pane``). Waiting is one ``stat`` per ``POLL_SECONDS``:
    the hook does no work while it waits."""
    key = crew_key(request.crew)
    decided = _path(home, key, request.request_id, "decisions")
    while True:
        if gone():
            return close(home, request, "answered_in_pane")
        if os.path.lexists(decided) or time.monotonic() >= deadline:
            return close(home, request)
        sleep(POLL_SECONDS)


def close(home: Home, request: Request, outcome: str | None = None) -> Decision | None:
    """End the request from the hook's side, once: with the captain's decision if there is
    one (``decided``), else ``outcome`` (default ``expired``). Under the approval lock, so
    a decision and a closing never both win."""
    key = crew_key(request.crew)
    with _lock(home, key, request.request_id):
        if _path(home, key, request.request_id, "outcomes").exists():
            return None
        decision = _decision_of(home, request)
        ended = Outcome(
            request_id=request.request_id,
            crew=request.crew,
            outcome="decided" if decision is not None else (outcome or "expired"),
            at=now(),
        )
        home.store.create_once(_path(home, key, request.request_id, "outcomes"), encode(ended))
    if decision is None:
        _record(home, request, "approval_decided", actor=request.crew, decision=ended.outcome)
    return decision


def _decision_of(home: Home, request: Request) -> Decision | None:
    """The decision filed under ``request``'s name, if it is one for this very request: a
    decision naming another request or crew (copied or linked there: the captain's
    ``decide`` never writes one) is no answer; it is quarantined, so the agent's own
    prompt takes the request. (A decision a same-uid process forges for this request
    whole cannot be told from the captain's: docs/design.md, "Trust model".)"""
    path = _path(home, crew_key(request.crew), request.request_id, "decisions")
    decision = home.store.read(path, Decision)
    if decision is not None and (
        decision.request_id != request.request_id or decision.crew.lower() != request.crew.lower()
    ):
        home.store.quarantine(path, f"is a decision for {decision.request_id}, not this request")
        return None
    return decision


# -- the captain's side -----------------------------------------------------------------------


def _request_at(home: Home, key: str, request_id: str) -> Request | None:
    """The request filed as ``approvals/<key>/<request_id>.json``, if it is that very
    request of that crew: one planted in another crew's folder or under another name
    (a copy of a real request with a harmless excerpt) is no request, never listed."""
    request = home.store.read(_path(home, key, request_id), Request)
    if request is None or request.request_id != request_id or request.crew.lower() != key:
        return None
    return request


def load(home: Home, name: str, request_id: str) -> Request:
    key = crew_key(name)
    _check_id(request_id, name)
    request = _request_at(home, key, request_id)
    if request is None:
        raise CaptainError(
            "unknown_approval",
            f"{request_id} is not an approval request of {name}. captain approvals lists "
            "the open ones.",
        )
    return request


def decide(
    home: Home, name: str, request_id: str, decision: str, reason: str, *, actor: str
) -> Decision:
    """Write the captain's decision for one request of crew ``name``, once, while its hook
    still holds it. A second decision is ``approval_decided``; one for a request its hook
    already let go (expired, answered in the pane) is ``approval_closed`` and is recorded
    on the work item as ``late``: it changes nothing."""
    if decision not in DECISIONS:
        raise CaptainError(
            "invalid_argument",
            f"{decision!r} is not a decision; use one of {', '.join(DECISIONS)}.",
        )
    request = load(home, name, request_id)
    if decision == "allow_session" and not request.session_allowed:
        raise CaptainError(
            "invalid_argument",
            f"{request.crew}'s agent ({request.agent}) cannot take 'allow for this session'; "
            "use --allow or --deny.",
        )
    if decision == "deny" and not reason.strip():
        raise CaptainError("invalid_argument", "a denial needs a --reason; the agent is told it.")
    key = crew_key(request.crew)
    late = None
    hook_gone = False
    with _lock(home, key, request_id):
        there = _decision_of(home, request)
        if there is not None:
            raise CaptainError(
                "approval_decided",
                f"{request_id} was already decided ({there.decision}, "
                f"{there.decided_at:%H:%M:%S}); a request is decided once.",
            )
        ended = home.store.read(_path(home, key, request_id, "outcomes"), Outcome)
        if ended is None and now() >= request.expires_at:
            ended = Outcome(request_id=request_id, crew=request.crew, outcome="expired", at=now())
        elif ended is None and not hook_alive(request):
            # killed without closing it (SIGKILL): the agent's own prompt took it; closed
            # here, so it leaves the list and the record says how it ended
            gone = Outcome(request_id=request_id, crew=request.crew, outcome="expired", at=now())
            home.store.create_once(_path(home, key, request_id, "outcomes"), encode(gone))
            ended = gone
            hook_gone = True
        if ended is not None:
            late = ended
        else:
            made = Decision(
                request_id=request_id,
                crew=request.crew,
                decision=decision,
                reason=reason,
                actor=actor,
                decided_at=now(),
            )
            home.store.create_once(_path(home, key, request_id, "decisions"), encode(made))
    if late is not None:
        if hook_gone:  # the hook's own end, which it never wrote
            _record(home, request, "approval_decided", actor=request.crew, decision="expired")
        _record(home, request, "approval_decided", actor=actor, decision="late", reason=reason)
        why = (
            "its hook ended without an answer"
            if hook_gone
            else "it expired"
            if late.outcome == "expired"
            else "it was answered in the pane"
        )
        raise CaptainError(
            "approval_closed",
            f"{request_id} is closed: {why} at {late.at:%H:%M:%S}, so the agent's own prompt "
            "took it. Your decision is recorded as late and changes nothing.",
        )
    _record(home, request, "approval_decided", actor=actor, decision=decision, reason=reason)
    _acknowledge(home, key, request_id)
    return made


def _acknowledge(home: Home, key: str, request_id: str) -> None:
    """The decision is the response to the request's ``awaiting_approval``, as an answer
    is to an ``asked``: it acknowledges it, so no ``--ack`` is owed for it."""
    from state.crew import mailbox

    for n in mailbox.unacknowledged(home, key):
        if n.request_id == request_id:
            mailbox.write_ack(home, key, n)


@dataclass(frozen=True)
class Open:
    request: Request
    decided: Decision | None  # decided, and the hook has not picked it up yet


def open_requests(home: Home, name: str | None = None) -> list[Open]:
    """Requests whose hook still holds them (no outcome, not past their time), oldest first."""
    keys = [crew_key(name)] if name else home.crew_keys()
    out = []
    at = now()
    for key in keys:
        folder = home.store.dir("approvals", key, create=False)
        if not folder.is_dir():
            continue
        for rid in home.store.names(folder):
            if (folder / "outcomes" / f"{rid}.json").exists():
                continue
            request = _request_at(home, key, rid)
            if request is None or request.expires_at <= at or not hook_alive(request):
                continue
            decided = (folder / "decisions" / f"{rid}.json").exists()
            out.append(
                Open(request, home.store.read(folder / "decisions" / f"{rid}.json", Decision))
                if decided
                else Open(request, None)
            )
    out.sort(key=lambda o: (o.request.created_at, o.request.request_id))
    return out


# -- on the record ----------------------------------------------------------------------------


def _record(
    home: Home,
    request: Request,
    type_: str,
    *,
    actor: str,
    reason: str | None = None,
    **fields: object,
) -> None:
    """The request's event on its assignment's work item; a ledger that cannot take it now
    never changes the decision (the request records above are the truth)."""
    from state.work import ledger

    try:
        ledger.note(
            home,
            ledger.work_id_for_assignment(request.assignment_id),
            type_,
            actor=actor,
            request_id=request.request_id,
            tool=request.tool,
            excerpt=request.excerpt,
            fingerprint=request.fingerprint,
            reason=excerpt(reason)[:EXCERPT_MAX] if reason else None,
            **fields,
        )
    except CaptainError:
        pass
