"""What the command line prints: for people, or one JSON object for programs.

Everything printed goes through here, and anything that came from someone else (a crew's
text, a hook's summary, a label, a holder, an ID a person typed) reaches the terminal
escaped, never obeyed: ``state.inputs.for_terminal`` is the one rule, for human lines and
inside JSON strings alike.
"""

from __future__ import annotations

import json
import sys

from state.errors import CaptainError
from state.inputs import for_terminal

PROG = "captain"


def printable(text: str) -> str:
    """One line (a refusal, a warning): ``shown`` with newlines and tabs escaped too, so
    nothing a person typed into an ID can forge a second line."""
    return shown(text).replace("\n", "\\n").replace("\t", "\\t")


def shown(text: str) -> str:
    """Lines for people: what a terminal would obey is shown escaped."""
    return for_terminal(text)


def json_line(payload: dict) -> str:
    """One JSON object on one line, UTF-8 kept readable; what a terminal would obey is
    written as a JSON escape (``\\u001b``), so the line is safe to show and still the same
    JSON to a program."""
    # json.dumps of the one character: \u001b, or a surrogate pair for a character past
    # U+FFFF (a tag character), so the line still decodes to the exact text
    return for_terminal(
        json.dumps(payload, ensure_ascii=False), replace=lambda m: json.dumps(m.group())[1:-1]
    )


class Out:
    """Prints for people, or one JSON object for programs."""

    def __init__(self, as_json: bool) -> None:
        self.json = as_json

    def ok(self, payload: dict, human: str) -> None:
        if self.json:
            print(json_line({"ok": True, **payload}), flush=True)
        else:
            print(shown(human), flush=True)

    def partial(self, payload: dict, human: str, err: CaptainError) -> None:
        """A read that answered in part: what it could read, and the refusal that stopped
        the rest (``ok`` false with the error in JSON; the refusal on stderr for people)."""
        if self.json:
            print(json_line({"ok": False, **payload, "error": err.as_json()}), flush=True)
            return
        print(shown(human), flush=True)
        print(f"{PROG}: [{err.code}] {printable(err.message)}", file=sys.stderr, flush=True)

    def refuse(self, err: CaptainError) -> None:
        if self.json:
            print(json_line({"ok": False, "error": err.as_json()}), flush=True)
            return
        print(f"{PROG}: [{err.code}] {printable(err.message)}", file=sys.stderr, flush=True)
        for message in err.extra.get("messages", []):
            print(shown(message_block(message)), flush=True)


def when(stamp) -> str:
    return str(stamp).replace("T", " ")[:19] if stamp else "-"


def message_block(m: dict) -> str:
    head = f"── {m['message_id']}  {m['kind']}  {when(m['queued_at'])}"
    if m.get("question_id"):
        head += f"  (answers {m['question_id']})"
    if m["kind"] == "assignment":  # CAPTAIN_ASSIGNMENT names the first task only
        head += (
            f"\n   assignment {m['assignment_id']}: pass --assignment "
            f"{m['assignment_id']} to captain done and captain ask"
        )
    body = "\n".join("   " + line for line in m["text"].splitlines() or [""])
    return f"{head}\n{body}"


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
