"""What the command line prints: for people, or one JSON object for programs.

Anything that came from someone else (a crew's text, an ID a person typed) is printed
through here, so a control character reaches the terminal escaped, never obeyed.
"""

from __future__ import annotations

import json
import re
import sys

from state.errors import CaptainError

PROG = "captain"
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def printable(text: str) -> str:
    """A refusal is one line: any control character a person typed into an ID is shown
    escaped, never sent to the terminal (no escape sequences, no forged lines)."""
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode(), text)


class Out:
    """Prints for people, or one JSON object for programs."""

    def __init__(self, as_json: bool) -> None:
        self.json = as_json

    def ok(self, payload: dict, human: str) -> None:
        if self.json:
            print(json.dumps({"ok": True, **payload}, ensure_ascii=False), flush=True)
        else:
            print(human, flush=True)

    def refuse(self, err: CaptainError) -> None:
        if self.json:
            print(json.dumps({"ok": False, "error": err.as_json()}, ensure_ascii=False),
                  flush=True)
            return
        print(f"{PROG}: [{err.code}] {printable(err.message)}", file=sys.stderr, flush=True)
        for message in err.extra.get("messages", []):
            print(message_block(message), flush=True)


def when(stamp) -> str:
    return str(stamp).replace("T", " ")[:19] if stamp else "-"


def message_block(m: dict) -> str:
    head = f"── {m['message_id']}  {m['kind']}  {when(m['queued_at'])}"
    if m.get("question_id"):
        head += f"  (answers {m['question_id']})"
    body = "\n".join("   " + line for line in m["text"].splitlines() or [""])
    return f"{head}\n{body}"


def table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)
