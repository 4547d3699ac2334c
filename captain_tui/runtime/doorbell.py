"""The doorbell: type a short notice into a crew's pane, only when every gate is clear (a
shell's line editor is never typed into: the notice is printed on its terminal instead).

The mail is already durable before anything here runs, so no outcome of a ring can lose a
message: a gate that holds is not an error (the next attempt tries again), a pane that is
confirmed gone bounces the mail, and text is never typed over a person's draft.
"""

from __future__ import annotations

import os
import re
import time
import unicodedata
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime, timedelta
from typing import TYPE_CHECKING, Literal, get_args

from captain_tui.agents.kinds import APPROVAL_BY_HOOK, COMPOSERS, HOOKED, WAKE_LINE
from captain_tui.runtime import pane_reader as screens
from captain_tui.runtime import pane_tty
from captain_tui.runtime.tmux import ALIVE, GONE, PaneInfo, Tmux
from state.clock import now
from state.crew import crewlog, guards, mailbox, notify, protocol
from state.errors import CaptainError
from state.home import Home
from state.records import CrewSnapshot, Message, PaneLocator, RingStamp
from state.store import encode
from state.vocab import counted

if TYPE_CHECKING:
    from captain_tui.runtime.death_watch import Snapshots

Gate = Literal[  # what holds a ring back
    "approval_prompt",
    "human_draft",
    "unreadable_composer",
    "not_quiescent",
    "launch_grace",
    "cooldown",
    "tmux_unavailable",
    "queued",
]
GATES: tuple[Gate, ...] = get_args(Gate)
Rung = Literal["rang", "held", "bounced", "nothing"]  # a ring's outcome, when there was mail
Action = Literal[Rung, "skipped"]  # skipped: the crew has no live pane
# seconds after launch before the first ring
LAUNCH_GRACE = {"claude": 6.0, "codex": 6.0, "pi": 6.0}
DEFAULT_GRACE = 1.0
COOLDOWN = timedelta(seconds=5)  # between two rings of one crew
QUIET_CERTAIN = 2.0  # window activity older than this: quiet without sampling
QUIET_SAMPLE = 0.25  # otherwise two captures this far apart must be identical
HELD_NOTICE_AFTER = timedelta(seconds=300)
LANDED_WAIT = 1.5  # how long typed text may take to appear on the composer
SUBMIT_WAIT = 2.0
BODY_LIMIT = 1000


@dataclass(frozen=True)
class Outcome:
    crew: str
    action: Action
    gate: Gate | None = None
    detail: str = ""


def inbox_line(name: str) -> str:
    return f"Mail from the captain is waiting: run captain inbox {name} to read it."


_INERT = re.compile(r"[A-Za-z0-9 _-]*")


def notice(name: str) -> str:
    """What a shell or any other program is rung with: a comment of letters, digits, spaces
    and the crew name (itself letters, digits, '_' and '-'). Nothing in it is special to any
    shell: no quote, no '$', no backtick, no separator, no glob, no '!' — so a shell that
    does not take '#' as a comment (zsh by default, bash without interactive_comments)
    looks for a command named '#' and runs nothing. No byte of mail is ever typed there, and
    this is typed only where the kernel edits the line (``_ring_terminal``)."""
    words = f"mail from the captain is waiting run captain inbox {name} to read it"
    if not _INERT.fullmatch(words):  # a name the recruit rules would have refused
        words = "mail from the captain is waiting run captain inbox to read it"
    return "# " + words


def _flat(text: str) -> str:
    return " ".join(text.split())


def ring_text(snapshot: CrewSnapshot, stamp: RingStamp, unread: list[Message]) -> str:
    """Hook-delivered crew: the wake line. An agent composer we read: the body and the inbox
    line first, then the line. Anything else (a shell, a program): the inert notice."""
    if snapshot.agent in HOOKED:
        return WAKE_LINE
    if snapshot.agent not in COMPOSERS:
        return notice(snapshot.name)
    if stamp.body_landed:
        return inbox_line(snapshot.name)
    body = " | ".join(_flat(m.text) for m in unread)
    if len(body) > BODY_LIMIT:
        body = body[: BODY_LIMIT - 1] + "…"
    new = [m.assignment_id for m in unread if m.kind == "assignment"]
    which = (
        f" It is assignment {new[-1]}: pass --assignment {new[-1]} to captain done and captain ask."
        if new
        else ""
    )
    return (
        f"Mail from the captain: {body} — run captain inbox {snapshot.name} to read it "
        f"all and mark it read.{which}"
    )


def _stamp(home: Home, key: str, snapshot: CrewSnapshot) -> RingStamp:
    stamp = read_stamp(home, key)
    if stamp is None or stamp.incarnation_id != snapshot.incarnation_id:
        stamp = RingStamp(crew=snapshot.name, incarnation_id=snapshot.incarnation_id)
    return stamp


read_stamp = protocol.ring_stamp


def _save(home: Home, key: str, stamp: RingStamp) -> None:
    home.store.publish(home.ring_stamp_path(key), encode(stamp))


def _pane(snapshot: CrewSnapshot) -> PaneLocator:
    """The pane of a crew being rung: only a crew with one is (else the ring is ``skipped``)."""
    assert snapshot.pane is not None
    return snapshot.pane


def _draft_is(screen_draft: str | None, typed: str | None) -> bool:
    if not screen_draft or not typed:
        return False
    return _flat(screen_draft) == _flat(typed)


def _squash(text: str) -> str:
    """Whitespace-free text: a long line wrapped by the terminal still matches itself."""
    return "".join(text.split())


def _copies(capture: str, text: str) -> int:
    return _squash(screens.strip_ansi(capture)).count(_squash(text))


def _look(tmux: Tmux, snapshot: CrewSnapshot, info: PaneInfo) -> tuple[str, screens.Screen]:
    """One capture of the crew's pane (with colours) and what the screen reader makes of it."""
    capture = tmux.capture(_pane(snapshot), ansi=True)
    return capture, screens.read_screen(capture, snapshot.agent, cursor=info.cursor)


def _poll(
    tmux: Tmux,
    snapshot: CrewSnapshot,
    until: Callable[[screens.Screen, str], bool],
    seconds: float,
) -> screens.Screen | None:
    """Re-read the pane until ``until(screen, capture)`` holds; None on timeout or loss."""
    deadline = time.monotonic() + seconds
    while True:
        info = tmux.pane(_pane(snapshot))
        if info.state != ALIVE:
            return None
        capture, seen = _look(tmux, snapshot, info)
        if until(seen, capture):
            return seen
        if time.monotonic() >= deadline:
            return None
        time.sleep(0.05)


def _hold(
    home: Home,
    key: str,
    snapshot: CrewSnapshot,
    stamp: RingStamp,
    gate: Gate,
    oldest: Message,
    at: datetime,
    detail: str,
) -> Outcome:
    """Record that ``gate`` holds the mail. The clock belongs to the oldest held message: it
    starts when that message was first held (by any gate) and neither newer mail nor a gate
    flipping restarts it, so steady mail cannot postpone the 300 s notice forever. When the
    oldest is read another way, the next one's clock is the later of the old clock and the
    time it arrived (the hold was continuous)."""
    since = stamp.held_since
    if since is None:
        since = at
    elif stamp.held_head != oldest.message_id:
        since = max(since, oldest.queued_at)
    stamp = stamp.model_copy(update=dict(gate=gate, held_head=oldest.message_id, held_since=since))
    if (
        gate == "human_draft"
        and at - since >= HELD_NOTICE_AFTER
        and stamp.held_notified != oldest.message_id
    ):
        notify.signal(
            home,
            snapshot.name,
            "held",
            f"mail for {snapshot.name} ({oldest.message_id}, the oldest held) has "
            f"been held since {since:%H:%M:%S} UTC, now behind a human draft on its "
            "composer; it lands when the draft is sent or cleared.",
            at=at,
            message_id=oldest.message_id,
            incarnation_id=snapshot.incarnation_id,
        )
        stamp = stamp.model_copy(update=dict(held_notified=oldest.message_id))
    _save(home, key, stamp.model_copy(update=dict(checked_at=at)))
    return Outcome(snapshot.name, "held", gate, detail)


def _queued(home: Home, snapshot: CrewSnapshot) -> bool:
    """An assignment handed over while every ledger slot was held waits to be claimed."""
    from state.work import settle as ledger_settle

    return ledger_settle.is_queued(home, snapshot.assignment.assignment_id)


def ring(home: Home, name: str, *, at: datetime | None = None) -> Outcome:
    """One doorbell attempt for one crew. Only one process rings a crew at a time."""
    key = name.lower()
    with home.store.lock(f"ring-{key}"):
        return _ring_locked(home, key, at or now())


def _ring_locked(home: Home, key: str, at: datetime) -> Outcome:
    snapshot, _ = crewlog.load(home, key)
    if snapshot is None or snapshot.pane is None or not guards.ringable(snapshot):
        return Outcome(key, "skipped", detail="no live pane")
    stamp = _stamp(home, key, snapshot)
    unread = mailbox.unread(home, key, snapshot)
    if not unread:
        if stamp.gate is not None or stamp.held_since is not None:
            _save(
                home,
                key,
                stamp.model_copy(
                    update=dict(gate=None, held_since=None, held_head=None, checked_at=at)
                ),
            )
        return Outcome(snapshot.name, "nothing")
    head = unread[-1].message_id
    if stamp.head == head and stamp.landed:
        return Outcome(snapshot.name, "nothing", detail=f"{head} was already rung")

    def hold(gate: Gate, detail: str) -> Outcome:
        return _hold(home, key, snapshot, stamp, gate, unread[0], at, detail)

    try:
        tmux = Tmux(snapshot.pane.socket)
        info = tmux.pane(_pane(snapshot))
    except CaptainError as err:
        return hold("tmux_unavailable", err.message)
    if info.state == GONE or info.dead:
        reason = "its agent exited" if info.dead else "its tmux pane is gone"
        if info.state == GONE and tmux.server_alive() is False:
            reason = "its tmux server is gone"
        bounced = protocol.bounce(home, snapshot.name, reason)
        _save(home, key, stamp.model_copy(update=dict(gate=None, held_since=None, checked_at=at)))
        return Outcome(
            snapshot.name, "bounced", detail=f"{counted(len(bounced), 'message')}: {reason}"
        )
    if info.state != ALIVE:
        return hold("tmux_unavailable", "tmux did not say whether the pane is there")

    if _queued(home, snapshot):
        return hold("queued", "its assignment waits for a free ledger slot")
    grace = LAUNCH_GRACE.get(snapshot.agent, DEFAULT_GRACE)
    if (at - (snapshot.launched_at or snapshot.recruited_at)).total_seconds() < grace:
        return hold("launch_grace", f"the agent started less than {grace:.0f} s ago")
    if stamp.rung_at is not None and at - stamp.rung_at < COOLDOWN:
        return hold("cooldown", "rung less than 5 s ago")
    try:
        capture, seen = _look(tmux, snapshot, info)
        # An approval prompt first: its blinking bullet would otherwise make the gate flip
        # to not_quiescent and back, and status would show the wrong gate and start time.
        if seen.approval:
            return hold("approval_prompt", seen.reason)
        # window_activity has one-second steps: when it is recent, watch the screen itself
        if info.activity is None or time.time() - info.activity < QUIET_CERTAIN:
            time.sleep(QUIET_SAMPLE)
            again = tmux.capture(_pane(snapshot), ansi=True)
            if again != capture:
                return hold("not_quiescent", "the pane is still printing")
    except CaptainError as err:
        return hold("tmux_unavailable", err.message)
    if seen.working:
        return hold("not_quiescent", seen.reason)
    if snapshot.agent not in COMPOSERS:
        return _ring_terminal(home, key, snapshot, stamp, head, at, tmux, info, capture, seen, hold)
    if not seen.composer_readable:
        return hold("unreadable_composer", seen.reason)

    if seen.draft and stamp.landed is False and stamp.typed and _draft_is(seen.draft, stamp.typed):
        # our own earlier ring is still on the composer: submit it, never type it again
        text = stamp.typed
    elif seen.draft:
        return hold("human_draft", "someone is typing on the composer")
    else:
        text = ring_text(snapshot, stamp, unread)
    # Landed means one more copy of the text on screen than before (an earlier ring of the
    # same line may still show in the transcript), or the composer reading exactly it.
    before = _copies(capture, text)
    if not _draft_is(seen.draft, text):
        tmux.send_literal(_pane(snapshot), text)
    landed = (
        _poll(
            tmux,
            snapshot,
            lambda s, cap: _draft_is(s.draft, text) or _copies(cap, text) > before,
            LANDED_WAIT,
        )
        is not None
    )
    if landed:
        tmux.send_enter(_pane(snapshot))
        submitted = _poll(
            tmux,
            snapshot,
            lambda s, cap: s.working or s.draft == "" or not _draft_is(s.draft, text),
            SUBMIT_WAIT,
        )
        landed = submitted is not None
    body = stamp.body_landed or (landed and snapshot.agent not in HOOKED)
    _save(
        home,
        key,
        stamp.model_copy(
            update=dict(
                head=head,
                rung_at=at,
                landed=landed,
                typed=text,
                body_landed=body,
                gate=None,
                held_since=None,
                held_head=None,
                checked_at=at,
            )
        ),
    )
    return Outcome(snapshot.name, "rang", detail="landed" if landed else "typed; not confirmed")


def _still(before, now, text: str) -> bool:
    """The line is still the kernel's and read by the same shell as when the notice was
    typed: a program started in between would take Enter as its answer."""
    return now is not None and now.takes(text) and now.foreground == before.foreground


def _ring_terminal(
    home: Home,
    key: str,
    snapshot: CrewSnapshot,
    stamp: RingStamp,
    head: str,
    at: datetime,
    tmux: Tmux,
    info: PaneInfo,
    capture: str,
    seen: screens.Screen,
    hold: Callable[[Gate, str], Outcome],
) -> Outcome:
    """A shell or any other program: the notice, typed only where the kernel edits the
    line (``pane_tty``), else printed on the terminal. Nothing typed is ever left behind:
    a typed notice that is not seen exactly where it was typed is erased again."""
    text = notice(snapshot.name)
    mode = pane_tty.line_mode(info.tty, info.pid)
    if mode is None:
        return hold("unreadable_composer", "captain could not ask the pane's terminal")

    def rang(landed: bool, typed: str | None, detail: str) -> Outcome:
        _save(
            home,
            key,
            stamp.model_copy(
                update=dict(
                    head=head,
                    rung_at=at,
                    landed=landed,
                    typed=typed,
                    body_landed=False,
                    gate=None,
                    held_since=None,
                    held_head=None,
                    checked_at=at,
                )
            ),
        )
        return Outcome(snapshot.name, "rang", detail=detail)

    if not mode.takes(text):
        # A line editor (any keymap), a full-screen program, a terminal that does not echo:
        # what a key does there is unknown, so nothing is typed. Printing is inert anywhere,
        # but would scribble over a full-screen program's screen.
        if info.alternate:
            return hold("unreadable_composer", "a full-screen program holds the terminal")
        lines = screens.strip_ansi(capture).split("\n")
        x, y = info.cursor or (1, 0)
        fresh = x == 0 and 0 <= y < len(lines) and not lines[y].strip()
        before = _rows_reading(tmux, snapshot, text)
        if not pane_tty.show_line(info.tty, info.pid, text, fresh=fresh):
            return hold("not_quiescent", "the pane's terminal takes no output now")
        shown = _wait(lambda: _rows_reading(tmux, snapshot, text) > before, LANDED_WAIT)
        return rang(True, None, "printed" if shown else "printed; not seen on screen yet")

    if not seen.composer_readable:
        return hold("unreadable_composer", seen.reason)
    if seen.draft and stamp.landed is False and stamp.typed and _draft_is(seen.draft, stamp.typed):
        tmux.send_enter(_pane(snapshot))  # our own ring, seen whole after its check ran out
        landed = _submitted(tmux, snapshot, stamp.typed)
        return rang(landed, stamp.typed, "landed" if landed else "typed; not confirmed")
    if seen.draft:
        return hold("human_draft", "someone is typing on the composer")
    lines = screens.strip_ansi(capture).split("\n")
    assert info.cursor is not None  # tmux reports the cursor of every live pane
    x, y = info.cursor
    prompt = lines[y] if 0 <= y < len(lines) else ""
    tmux.send_literal(_pane(snapshot), text)
    if _wait(lambda: _typed_at(tmux, snapshot, prompt, x, y, text), LANDED_WAIT) and _still(
        mode, pane_tty.line_mode(info.tty, info.pid), text
    ):
        tmux.send_enter(_pane(snapshot))
        landed = _submitted(tmux, snapshot, text)
        return rang(landed, text, "landed" if landed else "typed; not confirmed")
    # Not where it was typed (someone typed at the same moment, or the program drew over
    # it): take it back with the terminal's own erase character, one per character typed,
    # so no text of captain's is left on the line to read as a person's draft.
    tmux.send_bytes(_pane(snapshot), mode.erase * len(text))
    erased = _poll(tmux, snapshot, lambda s, cap: s.draft == "", LANDED_WAIT) is not None
    return rang(
        False,
        None,
        "typed, not seen where it was typed; "
        + ("erased" if erased else "erase sent, not confirmed"),
    )


def _wait(until: Callable[[], bool], seconds: float) -> bool:
    deadline = time.monotonic() + seconds
    while True:
        if until():
            return True
        if time.monotonic() >= deadline:
            return False
        time.sleep(0.05)


def _rows_reading(tmux: Tmux, snapshot: CrewSnapshot, text: str) -> int:
    """How many rows of the pane (wrapped rows joined) read exactly ``text``."""
    out = tmux.run("capture-pane", "-p", "-J", "-t", _pane(snapshot).pane_id, check=False).stdout
    return sum(1 for row in out.split("\n") if row.rstrip() == text)


def _cols(text: str) -> int:
    return sum(
        0 if unicodedata.combining(c) else 2 if unicodedata.east_asian_width(c) in "WF" else 1
        for c in text
    )


def _typed_at(tmux: Tmux, snapshot: CrewSnapshot, prompt: str, x: int, y: int, text: str) -> bool:
    """The typed text reads, from the cursor it was typed at, exactly as typed: the row
    before it unchanged (the prompt) and the text after it, wrapped at the pane's width
    (and scrolled up when it ran past the bottom). A prompt ending in the notice's own
    glyph (a root ``#``) cannot pass for it: the prompt's part is compared separately."""
    info = tmux.pane(_pane(snapshot))
    if info.state != ALIVE or not info.width or not info.height:
        return False
    lines = tmux.capture(_pane(snapshot)).split("\n")
    head = prompt.rstrip()
    head += " " * max(0, x - _cols(head))
    if _cols(head) != x:
        return False
    total = x + len(text)
    rows = max(1, -(-total // info.width))
    y0 = min(y, info.height - rows)
    if y0 < 0 or y0 + rows > len(lines):
        return False
    got = lines[y0 : y0 + rows]
    joined = "".join(r + " " * max(0, info.width - _cols(r)) for r in got[:-1]) + got[-1]
    return joined.rstrip() == (head + text).rstrip()


def _submitted(tmux: Tmux, snapshot: CrewSnapshot, text: str) -> bool:
    return (
        _poll(
            tmux,
            snapshot,
            lambda s, cap: s.working or s.draft == "" or not _draft_is(s.draft, text),
            SUBMIT_WAIT,
        )
        is not None
    )


def ring_all(home: Home, quiet: dict | None = None) -> list[Outcome]:
    """One attempt for every crew. ``quiet`` is the caller's memory between rounds (a
    runner's): a crew whose last attempt had nothing to do (no live pane, no unread mail,
    or its newest mail already rung) is not attempted again while none of the files that
    attempt read has changed, for up to ``QUIET_RECHECK``. New mail, a receipt, a crew
    event or a stamp changes its directory's (or file's) mtime, so it is rung in the same
    round as before; a held ring is never remembered, so it is retried every round."""
    out = []
    clock = time.monotonic()
    keys = home.crew_keys()
    for key in keys:
        sig = _signature(home, key) if quiet is not None else None
        if quiet is not None and sig is not None:
            seen = quiet.get(key)
            if seen is not None and seen[0] == sig and clock < seen[1]:
                out.append(seen[2])
                continue
        try:
            outcome = ring(home, key)
        except CaptainError as err:
            outcome = Outcome(key, "held", "tmux_unavailable", err.message)
        out.append(outcome)
        if quiet is not None:
            if sig is not None and outcome.action in ("nothing", "skipped"):
                quiet[key] = (sig, clock + QUIET_RECHECK, outcome)
            else:
                quiet.pop(key, None)
    if quiet:
        for gone in quiet.keys() - set(keys):
            del quiet[gone]
    return out


QUIET_RECHECK = 30.0  # a remembered crew is attempted again after this long regardless
RACY_NS = 1_000_000_000  # an mtime this recent may hide a second change in the same tick


def _signature(home: Home, key: str) -> tuple[tuple[int, int, int] | None, ...] | None:
    """What a "nothing to do" attempt read, as (inode, mtime, size) of each place: the
    crew's history and snapshot, its mail, receipts and bounces, and its ring stamp.
    Records are created once (a new name changes the directory's mtime) and snapshots are
    replaced (a new inode). None when anything changed too recently to trust its mtime."""
    root = str(home.root)
    places = (
        f"{root}/crew/{key}",
        f"{root}/crew/{key}/events",
        f"{root}/crew/{key}/state.json",
        f"{root}/mail/{key}",
        f"{root}/receipts/{key}",
        f"{root}/bounces/{key}",
        f"{root}/doorbell/{key}.json",
    )
    recent = time.time_ns() - RACY_NS
    sig: list[tuple[int, int, int] | None] = []
    for place in places:
        try:
            st = os.lstat(place)
        except FileNotFoundError:
            sig.append(None)
            continue
        except OSError:
            return None
        if st.st_mtime_ns >= recent:
            return None
        sig.append((st.st_ino, st.st_mtime_ns, st.st_size))
    return tuple(sig)


def check_approval(
    home: Home, name: str, snapshots: Snapshots | None = None, looked: dict | None = None
) -> bool:
    """Crews whose hooks report no approvals (all but ``APPROVAL_BY_HOOK``): look for a
    modal on their pane (raised once per appearance as ``awaiting_approval``).
    ``snapshots``: a runner's cache (its history is not parsed again while unchanged).
    ``looked``: a runner's memory of panes seen without a modal; such a pane is not
    captured again while its window shows no activity since (nothing was drawn on it:
    its screen is the one read). Activity comes in one-second steps, so a look within
    ``QUIET_CERTAIN`` seconds of the last activity is not remembered."""
    key = name.lower()
    snapshot = snapshots.get(home, key) if snapshots else crewlog.load(home, key)[0]
    if (
        snapshot is None
        or snapshot.dismissed_at
        or snapshot.pane is None
        or snapshot.agent in APPROVAL_BY_HOOK
    ):
        return False
    try:
        tmux = Tmux(snapshot.pane.socket)
        info = tmux.pane(_pane(snapshot))
        if info.state != ALIVE:
            return False
        mark = (snapshot.incarnation_id, snapshot.pane.pane_id, info.activity)
        if looked is not None and info.activity is not None and looked.get(key) == mark:
            return False  # nothing drawn since a look that found no modal
        _, seen = _look(tmux, snapshot, info)
    except CaptainError:
        return False
    if looked is not None:
        quiet = info.activity is not None and time.time() - info.activity >= QUIET_CERTAIN
        if quiet and not seen.approval:
            looked[key] = mark
        else:
            looked.pop(key, None)
    with home.store.lock(f"ring-{key}"):
        stamp = _stamp(home, key, snapshot)
        if not seen.approval:
            if stamp.approval_seen:
                _save(home, key, stamp.model_copy(update=dict(approval_seen=False)))
            return False
        if not stamp.approval_seen:
            notify.signal(
                home,
                snapshot.name,
                "awaiting_approval",
                f"{snapshot.name} is waiting at an approval prompt: {seen.reason}",
                at=now(),
                incarnation_id=snapshot.incarnation_id,
            )
            _save(home, key, stamp.model_copy(update=dict(approval_seen=True)))
        return True
