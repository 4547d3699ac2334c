"""What the surfaces say the same way: a dismissal's consequences, and a failing store.

The CLI and the cockpit word results themselves; a sentence both say lives here once.
"""

from __future__ import annotations

from state.errors import CaptainError
from state.vocab import counted


def dismissal_words(d, *, place: str = "pane") -> str:
    """A ``Dismissal`` in a sentence's tail: what bounced, whether the crew's ``place`` (the
    CLI's "pane", the cockpit's "window") is gone; "" when there is nothing to add."""
    extra = f"; {counted(len(d.bounced), 'unread message')} bounced" if d.bounced else ""
    gone = {
        True: f"; its {place} is closed",
        False: f"; its {place} could NOT be confirmed closed",
        None: "",
    }[d.pane_stopped]
    fate = f"; {d.fate.reason.rstrip('.')}" if d.fate is not None else ""
    return extra + gone + fate


def workspace_words(space) -> str:
    """A recruit's worktree in a sentence's tail ("" when it shares the checkout)."""
    if space is None:
        return ""
    return (
        f"\nIts worktree: {space.worktree} on branch {space.branch}, from "
        f"{space.base_branch} at {space.base_commit[:12]}."
    )


def store_error(exc: OSError) -> CaptainError:
    """An operating-system failure under a command (a full disk, a file it may not read)
    as the refusal every surface shows: ``store_error``, with what failed and where."""
    return CaptainError("store_error", f"{exc.strerror or exc} ({exc.filename or 'home'}).")


def change_words(s: dict) -> list[str]:
    """A change's shape (``repo.change``'s summary) as its parts: the counts first, then what
    needs the captain's eye (not committed, outside ``--owns``, history rewritten). The CLI
    joins them with "; ", the review screen with " · "."""
    parts = [
        f"{s['files_changed']} files, +{s['lines_added']} -{s['lines_removed']}, "
        f"{s['commits']} commits"
    ]
    if s["uncommitted_count"]:
        parts.append(f"{s['uncommitted_count']} not committed")
    if s["outside_grant_count"]:
        parts.append(f"{s['outside_grant_count']} OUTSIDE --owns")
    if s["history_rewritten"]:
        parts.append("the branch's history was rewritten since its base")
    return parts
