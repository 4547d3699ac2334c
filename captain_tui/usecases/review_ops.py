"""Review a crew's change: its shape and diff (``captain_tui.repo.change``), and a comment
on a line or hunk of it, which goes back to the crew as a ``tell`` quoting ``path:line``
and the lines — the assignment stays open."""

from __future__ import annotations

from captain_tui.repo import change as changes
from state.crew import crewlog, protocol
from state.crew.guards import CAPTAIN, Context, check_captain
from state.errors import CaptainError
from state.home import Home
from state.inputs import crew_key, for_terminal
from state.records import Message

QUOTE_LINES = 40  # lines of the diff a comment quotes at most


def _snapshot(home: Home, name: str, ctx: Context, action: str):
    check_captain(ctx, action)
    key = crew_key(name)
    snapshot, _ = crewlog.load(home, key) if home.has_crew(key) else (None, None)
    if snapshot is None:
        raise CaptainError("unknown_crew", f"there is no crew named {name}.")
    return snapshot


def change(home: Home, name: str, *, ctx: Context = CAPTAIN) -> changes.Change:
    """The crew's change now (captain only: the diff can show any file it touched)."""
    return changes.of_crew(_snapshot(home, name, ctx, "diff"))


def change_summary(snapshot) -> dict | None:
    """A crew's change shape for ``wait``'s done and a ``status`` row (whose callers have
    already decided who may see that crew); None when its project is not a repository."""
    return changes.summary_of(snapshot)


def diff_bytes(
    change: changes.Change, paths: list[str] | None = None, *, ctx: Context = CAPTAIN
) -> bytes:
    """The change's unified diff (of ``paths`` only, when given), as raw bytes."""
    check_captain(ctx, "diff")
    return changes.diff_bytes(change, paths)


def comment_text(path: str, line: int | None, quoted: list[str], text: str) -> str:
    """What a review comment says to the crew: where, the lines it is about, the remark."""
    path = for_terminal(path).replace("\n", "\\n")  # a name may hold anything but NUL
    where = f"{path}:{line}" if line is not None else path
    shown = [for_terminal(q) for q in quoted[:QUOTE_LINES]]
    more = len(quoted) - len(shown)
    body = "\n".join(f"> {q}" for q in shown)
    if more > 0:
        body += f"\n> … ({more} more lines)"
    return f"Review comment on {where}:\n{body}\n\n{text.strip()}"


def comment(
    home: Home,
    name: str,
    path: str,
    line: int | None,
    quoted: list[str],
    text: str,
    *,
    ctx: Context = CAPTAIN,
) -> Message:
    """Send a review comment to the crew as a tell on its current assignment (which stays
    open: a comment is mail, not a verdict)."""
    snapshot = _snapshot(home, name, ctx, "tell")
    return protocol.tell(
        home,
        name,
        comment_text(path, line, quoted, text),
        assignment_id=snapshot.assignment.assignment_id,
        ctx=ctx,
    )
