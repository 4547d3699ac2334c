"""The crew-side commands' fast path: answers from plain reads, or ``Unsure``.

A crew command runs in an agent's pane on every tool call and every stop. Importing
pydantic and building one model costs ~300 ms on the 2-core machine DESIGN.md budgets for
(its budget is 150 ms for the whole command), so the common, read-only cases are answered
here from the crew's cached snapshot, read by ``state.plain``, with the same rules
(``state.rules``) the protocol applies. Whenever the snapshot is missing, unusual or behind
its events, or mail waits, this raises ``Unsure`` and the caller takes the full path,
which repairs, settles, delivers and quarantines as always. Nothing here writes.
"""

from __future__ import annotations

from types import SimpleNamespace

from state import plain, rules
from state.home import Home
from state.plain import Unsure
from state.rules import Context, Verdict
from state.text import crew_key

__all__ = ["Unsure", "check", "crew", "inbox_is_empty", "no_mail"]


def snapshot(home: Home, key: str) -> SimpleNamespace | None:
    """The crew's current snapshot (None for an unknown crew), only when the cache is
    exactly as new as the events: what ``crewlog.load`` would fold, without folding."""
    if not home.has_crew(key):
        return None
    seqs = home.event_seqs(key)
    found = plain.read(home.store, home.snapshot_path(key), "CrewSnapshot")
    if found is None or not seqs or found.seq != seqs[-1]:
        raise Unsure("the snapshot is missing or not as new as the events")
    return found


def check(home: Home, name: str, action: str, paths: list[str], *,
          assignment_id: str | None, ctx: Context) -> Verdict:
    """``protocol.check`` on the cached snapshot."""
    return rules.check(name, action, paths, lambda key: snapshot(home, key),
                       assignment_id=assignment_id, ctx=ctx)


def crew(home: Home, ctx: Context) -> tuple[str, SimpleNamespace]:
    """This crew process's own live snapshot (a hook's ``_current``), or a refusal."""
    return rules.current_crew(ctx, lambda key: snapshot(home, key))


def no_mail(home: Home, key: str, found: SimpleNamespace) -> None:
    """Return when no mail waits for the crew; ``Unsure`` when some may (the full path
    then delivers it). The assignment's own mail must be there: a recruit or assign killed
    after its event and before that mail leaves a current snapshot and no mail yet."""
    if rules.unread_names(home, key) \
            or not (home.mail_dir(key) / f"{found.assignment.message_id}.json").exists():
        raise Unsure("mail may be waiting")


def inbox_is_empty(home: Home, name: str, ctx: Context) -> None:
    """Return when ``protocol.inbox`` would deliver nothing; its refusals, or ``Unsure``."""
    key = crew_key(name)
    found = rules.existing(name, snapshot(home, key))
    rules.crew_identity(ctx, found)
    no_mail(home, key, found)
