"""Start-up dialogs: a crew whose agent sits at a screen it shows before its composer (folder
trust, an API key, a model migration, hooks review, a login) is ``blocked: <dialog>``, not
idle; and the one answer captain gives for it where that answer is safe.

**Seeing it.** ``probe`` reads the crew's pane (the screen reader, ``pane_reader.DIALOGS``:
one rule per dialog) and keeps what it saw in the doorbell's stamp (``RingStamp.dialog``),
which ``status``, ``wait`` and the cockpit read: the crew's state is ``blocked``
(``state.crew.standing``) while it is there, and clears the moment a probe sees it gone. Its
first sighting raises one ``blocked`` notification, which ``wait`` returns. The runners
(``captain wait``, ``watch``, the cockpit) probe every ``PROBE_EVERY`` seconds, on the same
clock as the death probe: one ``capture-pane`` per Claude Code or Codex crew (no other agent
shows one) until its agent is first seen at its composer, past its start-up dialogs.

**Answering it.** ``answer`` chooses a dialog's safe option (``Dialog.safe``: trusting the
crew's own project directory) and nothing else; a dialog without one is refused
(``dialog_not_safe``: a person answers it at the pane). These dialogs take no text and
offer no other way in (no flag or file reaches an agent already showing one), so the answer
is keys: ``Down`` to move the pointer to the option, ``Enter`` to choose it. A key is sent
only right after a fresh capture shows exactly that dialog, with the pointer where the next
key expects it, the pane alive and not in a tmux mode (copy mode would take the key); after
each key the screen is read again, and anything else (the dialog gone, another one, the
pointer elsewhere) stops it there (``dialog_changed``), nothing more sent. This is not
typing over a draft: a start-up dialog replaces the composer — there is no draft to type
over, no line a key could be added to, and ``Down`` only moves a pointer; the one key that
acts, ``Enter``, is sent only while the pointer is on the safe option.
"""

from __future__ import annotations

import time
from dataclasses import dataclass

from captain_tui.runtime import doorbell
from captain_tui.runtime import pane_reader as screens
from captain_tui.runtime.death_watch import PROBE_EVERY, Snapshots
from captain_tui.runtime.tmux import ALIVE, Tmux
from state.clock import now
from state.crew import crewlog, notify
from state.crew.guards import Context, check_captain
from state.errors import CaptainError
from state.home import Home
from state.inputs import crew_key
from state.records import CrewSnapshot
from state.vocab import dialog_title, quoted

__all__ = ["PROBE_EVERY", "Answered", "answer", "probe", "record"]

AGENTS = frozenset(d.agent for d in screens.DIALOGS)  # the agents that show any
MOVES = 3  # at most this many Down presses to reach the safe option
KEY_WAIT = 2.0  # how long a moved pointer may take to show
CLEAR_WAIT = 10.0  # how long the dialog may take to go after the answer


def next_step(snapshot: CrewSnapshot, dialog_id: str) -> str:
    """What the captain can do about it, in a sentence."""
    rule = screens.dialog_rule(snapshot.agent, dialog_id)
    if rule is not None and rule.safe:
        return (
            f"press u on {snapshot.name} in the cockpit's Crew panel to choose "
            f"{quoted(rule.safe)}, or jump to the pane (enter) and answer it there."
        )
    return "jump to the pane (enter in the cockpit) and answer it there."


def record(
    home: Home, snapshot: CrewSnapshot, dialog: str | None, *, composer: bool = False
) -> None:
    """Keep ``dialog`` (None: none) as what the crew's pane shows; its first sighting raises
    one ``blocked`` notification. ``composer``: the agent's composer is on screen (it is
    past its start-up dialogs: ``probe`` stops looking)."""
    key = crew_key(snapshot.name)
    with home.store.lock(f"ring-{key}"):
        stamp = doorbell._stamp(home, key, snapshot)
        seen = stamp.composer_seen or composer
        if stamp.dialog == dialog and stamp.composer_seen == seen:
            return
        doorbell._save(home, key, stamp.model_copy(update=dict(dialog=dialog, composer_seen=seen)))
        if stamp.dialog == dialog:
            return
    if dialog is not None:
        notify.signal(
            home,
            snapshot.name,
            "blocked",
            f"{snapshot.name} is blocked: its agent sits at its start-up "
            f"{dialog_title(dialog)} dialog and does nothing until it is answered; "
            + next_step(snapshot, dialog),
            at=now(),
            incarnation_id=snapshot.incarnation_id,
        )


def _watched(snapshot: CrewSnapshot | None) -> bool:
    return (
        snapshot is not None
        and snapshot.dismissed_at is None
        and snapshot.done_at is None
        and snapshot.pane is not None
        and snapshot.agent in AGENTS
    )


def probe(home: Home, key: str, snapshots: Snapshots | None = None) -> str | None:
    """Read one crew's pane and record the start-up dialog on it (None: none). A pane tmux
    cannot be asked about changes nothing; a dead one shows no dialog. A crew whose agent
    was seen at its composer, and at no dialog since, is past start-up: not read again.
    ``snapshots``: a runner's cache (its history is not parsed again while unchanged)."""
    snapshot = snapshots.get(home, key) if snapshots else crewlog.load(home, key)[0]
    if not _watched(snapshot):
        return None
    assert snapshot is not None and snapshot.pane is not None  # _watched said so
    stamp = doorbell.read_stamp(home, key)
    if (
        stamp is not None
        and stamp.incarnation_id == snapshot.incarnation_id
        and stamp.composer_seen
        and stamp.dialog is None
    ):
        return None
    try:
        tmux = Tmux(snapshot.pane.socket)
        info = tmux.pane(snapshot.pane)
        if info.state != ALIVE:
            return None
        seen = None if info.dead else doorbell._look(tmux, snapshot, info)[1]
    except CaptainError:
        return None
    dialog = seen.dialog if seen is not None else None
    record(home, snapshot, dialog, composer=seen is not None and seen.composer_readable)
    return dialog


@dataclass(frozen=True)
class Answered:
    crew: str
    dialog: str  # its id
    option: str  # the option chosen, as drawn
    cleared: bool  # the dialog was gone from the screen afterwards


def _read(tmux: Tmux, snapshot: CrewSnapshot) -> screens.Screen | None:
    """A fresh reading of the pane, or None when no key could reach the agent now (the pane
    gone or dead, or in a tmux mode)."""
    pane = snapshot.pane
    assert pane is not None  # only a watched crew's pane is read
    info = tmux.pane(pane)
    if info.state != ALIVE or info.dead or tmux.in_mode(pane) is not False:
        return None
    return doorbell._look(tmux, snapshot, info)[1]


def _until(tmux: Tmux, snapshot: CrewSnapshot, done, seconds: float) -> screens.Screen | None:
    deadline = time.monotonic() + seconds
    while True:
        seen = _read(tmux, snapshot)
        if seen is None or done(seen) or time.monotonic() >= deadline:
            return seen
        time.sleep(0.05)


def _changed(name: str, what: str) -> CaptainError:
    return CaptainError(
        "dialog_changed",
        f"{name}'s screen changed while captain was answering its start-up dialog ({what}); "
        "nothing more was sent. Jump to the pane and look.",
    )


def answer(home: Home, name: str, dialog: str | None = None, *, ctx: Context) -> Answered:
    """Choose the safe option of the start-up dialog on ``name``'s pane (``dialog``: only
    if it is that one). Refused, nothing sent, when the pane shows no start-up dialog
    (``no_dialog``), one captain does not answer (``dialog_not_safe``) or another than
    ``dialog`` (``dialog_changed``)."""
    check_captain(ctx, "answer a start-up dialog")
    key = crew_key(name)
    snapshot, _ = crewlog.load(home, key)
    if snapshot is None:
        raise CaptainError("unknown_crew", f"there is no crew named {name}.")
    if not _watched(snapshot):
        raise CaptainError(
            "no_dialog", f"{snapshot.name} is not an agent captain sees start-up dialogs of."
        )
    pane = snapshot.pane
    assert pane is not None  # _watched said so
    try:
        tmux = Tmux(pane.socket)
        seen = _read(tmux, snapshot)
        if seen is None or seen.dialog is None:
            raise CaptainError(
                "no_dialog",
                f"{snapshot.name}'s pane shows no start-up dialog now (or tmux cannot reach "
                "it, or it is in copy mode): nothing was sent.",
            )
        if dialog is not None and seen.dialog != dialog:
            raise _changed(snapshot.name, f"it shows the {dialog_title(seen.dialog)} dialog")
        rule = screens.dialog_rule(snapshot.agent, seen.dialog)
        if rule is None or rule.safe is None:
            raise CaptainError(
                "dialog_not_safe",
                f"{snapshot.name}'s agent is at its start-up {dialog_title(seen.dialog)} "
                "dialog, which only a person answers: jump to the pane and answer it there.",
            )
        for _ in range(MOVES):
            if seen.choice == rule.safe:
                break
            before = seen.choice
            tmux.send_key(pane, "Down")
            seen = _until(tmux, snapshot, lambda s: s.choice != before, KEY_WAIT)
            if seen is None or seen.dialog != rule.id:
                raise _changed(snapshot.name, "the dialog is gone")
        if seen.choice != rule.safe:
            raise _changed(snapshot.name, f"the pointer is not on {quoted(rule.safe)}")
        tmux.send_key(pane, "Enter")
        after = _until(tmux, snapshot, lambda s: s.dialog != rule.id, CLEAR_WAIT)
    except CaptainError as err:
        if err.code in ("no_dialog", "dialog_changed", "dialog_not_safe"):
            raise
        raise CaptainError("tmux_unavailable", err.message) from err
    cleared = after is not None and after.dialog != rule.id
    if after is not None:
        record(home, snapshot, after.dialog, composer=after.composer_readable)
    return Answered(snapshot.name, rule.id, rule.safe, cleared)
