"""A file's unified diff (git's own hunks) as a syntax-coloured picture, built off the UI
thread: the code of each side highlighted by the file's language (Rich's Pygments lexers,
guessed from the name), added and removed lines on a tinted background, and where each
hunk starts — for the review screen's hunk keys and for a comment's ``path:line``.

Every character passes ``cells.clean`` first: a diff body with escape sequences draws them
as '\ufffd', never obeys them.
"""

from __future__ import annotations

import re
from dataclasses import dataclass, field

from rich.syntax import Syntax
from rich.text import Text

from widgets.cells import clean

HUNK = re.compile(r"^@@ -(\d+)(?:,(\d+))? \+(\d+)(?:,(\d+))? @@")
ADDED, REMOVED = "on #17361f", "on #3d1a1d"
MAX_LINES = 20_000  # lines of one file's diff drawn; past that, a note says how many more


@dataclass(frozen=True)
class Hunk:
    row: int  # the picture's row of its @@ line
    line: int  # the new side's first line number (the old side's for a pure deletion)
    lines: tuple[str, ...] = field(default=())  # its diff lines, as git wrote them (cleaned)


@dataclass(frozen=True)
class FileDiff:
    path: str
    picture: Text
    hunks: tuple[Hunk, ...]


def shown_path(path: str) -> str:
    """A path on one row: newline and tab shown as ``\\n`` and ``\\t``, the rest cleaned."""
    return clean(path.replace("\\", "\\\\").replace("\n", "\\n").replace("\t", "\\t"))


def _lexer(path: str) -> str:
    try:
        return Syntax.guess_lexer(path, code="")
    except Exception:  # noqa: BLE001 — an odd name guesses nothing: plain text
        return "text"


def render(path: str, diff: str, theme: str = "monokai") -> FileDiff:
    """``diff`` (git's unified diff of one file, any text) as a picture and its hunks."""
    raw = diff.splitlines()
    cut = max(len(raw) - MAX_LINES, 0)
    lines = [clean(line).expandtabs(4) for line in raw[:MAX_LINES]]
    body, inside = [], False
    for i, line in enumerate(lines):  # a hunk's lines: after its @@, before the next file
        inside = (inside or line.startswith("@@")) and not line.startswith("diff --git ")
        if inside and line[:1] in (" ", "+", "-"):
            body.append(i)
    code = "\n".join(lines[i][1:] for i in body)
    syntax = Syntax(code, _lexer(path), theme=theme, background_color="default")
    highlighted = syntax.highlight(code).split("\n", allow_blank=True) if body else []
    coloured = dict(zip(body, highlighted))
    picture = Text(no_wrap=True, overflow="ignore", end="")
    hunks: list[Hunk] = []
    current: list[str] = []
    for row, line in enumerate(lines):
        if row:
            picture.append("\n")
        m = HUNK.match(line)
        if m:
            if hunks:
                hunks[-1] = Hunk(hunks[-1].row, hunks[-1].line, tuple(current))
            new_start, new_len = int(m.group(3)), m.group(4)
            start = int(m.group(1)) if new_len == "0" else new_start
            hunks.append(Hunk(row, start))
            current = []
            picture.append(line, style="bold cyan")
            continue
        if hunks and row in coloured:
            current.append(line)
        if row in coloured:
            marker = line[:1]
            style = ADDED if marker == "+" else REMOVED if marker == "-" else ""
            piece = Text(marker, style="bold green" if marker == "+" else "bold red")
            if marker == " ":
                piece = Text(" ")
            piece.append_text(coloured[row])
            if style:
                piece.stylize(style)
            picture.append_text(piece)
        else:
            picture.append(
                line, style="bold" if line.startswith(("diff ", "---", "+++")) else "dim"
            )
    if hunks:
        hunks[-1] = Hunk(hunks[-1].row, hunks[-1].line, tuple(current))
    if cut:
        picture.append(f"\n… {cut} more lines not drawn (captain diff shows them all)", "italic")
    return FileDiff(path, picture, tuple(hunks))


def line_of(hunk: Hunk, offset: int) -> int:
    """The new side's line number ``offset`` rows into ``hunk`` (its @@ row is 0)."""
    number = hunk.line
    for line in hunk.lines[: max(offset - 1, 0)]:
        if not line.startswith("-"):
            number += 1
    return number
