"""Reading an agent's pane: a pure function from captured text to what the doorbell needs.

``read_screen(text, agent)`` takes what ``tmux capture-pane -p`` (plain) or
``capture-pane -p -e`` (with SGR colour codes) printed and answers four questions:
is a native approval prompt (or any modal we cannot read) up, did we find and understand
the composer, what unsent text is on it, and is the agent mid-turn.

It fails closed. A doorbell may ring only when ``approval`` is False,
``composer_readable`` is True, ``draft == ""`` and ``working`` is False, and every rule
below is written so that only a positively recognised, idle, empty composer produces
that combination. Anything half-drawn, garbled or unfamiliar reads as unreadable.

Per agent kind:

* ``claude`` (Claude Code): the composer is the ``❯`` line directly under a rule of
  ``─`` at column 0, closed by a matching rule below it (rules may be wrapped over
  several lines in a narrow pane); footer lines follow. Continuation lines of a
  multi-line draft sit between the rules (indented rows are new lines of the draft,
  unindented ones a row re-flowed by the terminal). Text after ``❯`` is a draft, except when the
  ANSI capture shows it entirely dim or grey (a suggestion, e.g. ``Try "..."``), with
  Claude's drawn cursor, if any, on its first cell. Working: a spinner line
  (``✽ Embellishing…``) just above the box, or ``esc to interrupt``. Approval:
  permission prompt strings or a numbered option list below the box or, with no box on
  screen, anywhere; a dialog (a rule followed by a title where the box should be) is an
  approval too. A box around a prompt other than ``❯`` (bash mode's ``!``) is unreadable.
* ``codex`` (Codex CLI): the composer is the last line starting with ``›`` that is not
  the pointer of a numbered option list; its placeholder (``Ask Codex to do anything``
  and the other example prompts Codex rotates through) is not a draft: recognised by
  its exact wording in plain text, or as dim text in an ANSI capture, and only with at
  most a short footer under it (a past message in the transcript looks the same). Rows
  right under the ``›`` row, before the blank padding row, belong to the draft. A bare
  ``›`` with nothing after it is not positively empty (Codex always shows a placeholder on an
  empty composer) and reads as unreadable. Approval: Codex's approval overlay strings
  (``Press enter to confirm or esc to cancel``, ``Would you like to run the following
  command?``, ``Allow command?`` ...) or a numbered option list with the ``›`` pointer
  (the start-up "Hooks need review" and "Try new model" screens are such lists). Working:
  ``◦ Working (3s • esc to interrupt)`` in the rows above the composer (the placeholder
  stays on it meanwhile). Checked against Codex 0.169.0 at 100x30 and 120x40.
* ``pi``: the editor is what lies between the last two rules of ``─`` drawn from column 0
  (equal in length), the lower one with at most a short footer (cwd, stats) under it.
  There is no prompt glyph and no placeholder: every visible character between the rules
  is draft (several rows: a multi-line draft; a rule saying ``↑ N more`` / ``↓ N more``: a
  scrolled, so non-empty, draft). One blank row is empty only where the ANSI capture shows
  pi's reverse-video cursor cell at column 0: a cursor further right means typed spaces,
  which is a draft (held like any other); no cursor is unreadable. (A plain capture has no
  cursor, so there a blank row reads empty.) Working: a braille spinner line
  (``⠋ Working...``) just above the editor. Approval: pi has none of its own; an extension
  dialog (``ctx.ui.select`` / ``confirm`` / ``input`` / ``editor``) replaces the editor
  between the rules and shows its key hints (``↑↓ navigate  enter select  escape/ctrl+c
  cancel``, ``enter submit``): any of those reads as an approval.
* anything else (a shell, a simulated agent): the composer is the cursor line when a
  cursor is given, else the last non-blank line; it is readable when it starts with a
  prompt ending in ``$ ``, ``# ``, ``% ``, ``> ``, ``❯ `` or ``› `` (or that glyph at the
  end of the line); the draft is what follows the first such prompt. Working: a braille
  spinner or ``esc to interrupt`` anywhere on screen. Approval: the shared prompt
  strings, a numbered option list or a ``[y/N]``-style question on or below the input
  line, or in the few lines above it when it holds no prompt (a prompt drawn after a
  question means the question was answered).

Start-up dialogs (``DIALOGS``): a Claude Code or Codex screen with no readable composer that
carries every marker of one of the dialogs these CLIs show before their composer (folder
trust; Claude Code's API-key approval; Codex's model-migration notice, hooks review and
login) reads as that dialog: ``dialog``
names it, ``choice`` is the option under its pointer, and it stays a modal (``approval``).

Stdlib only, no I/O: it runs on every doorbell attempt.
"""

from __future__ import annotations

import re
import unicodedata
from dataclasses import dataclass

__all__ = ["DIALOGS", "Dialog", "Screen", "dialog_rule", "read_screen", "strip_ansi"]


@dataclass(frozen=True)
class Screen:
    approval: bool  # a native approval prompt, or any modal we cannot read, is up
    composer_readable: bool  # we found the composer (input line) and understood it
    draft: str | None  # unsent text on the composer: "" when empty; None when not readable
    working: bool  # the agent is mid-turn (spinner, "esc to interrupt", ...)
    reason: str  # one short sentence: why (shown to the captain when a gate holds)
    dialog: str | None = None  # a start-up dialog (``DIALOGS``' id) fills the screen
    choice: str | None = None  # that dialog's option under the pointer (❯ / ›), if any


# --------------------------------------------------------------------------- escapes

# One regex for every escape sequence a terminal capture may hold: CSI (7- and 8-bit),
# OSC up to BEL/ST (an unterminated one stops at the end of its line), DCS/SOS/PM/APC
# strings, two-character and nF escapes (``ESC ( B``, ``ESC =``), and a lone ESC.
_ESCAPE = re.compile(
    r"""
      (?:\x1b\[|\x9b)(?P<params>[0-?]*)[ -/]*(?P<final>[@-~])
    | (?:\x1b\]|\x9d)[^\x07\x1b\x9c\n]*(?:\x07|\x1b\\|\x9c)?
    | (?:\x1b[PX^_]|[\x90\x98\x9e\x9f])[^\x1b\x9c\n]*(?:\x1b\\|\x9c)?
    | \x1b[ -/]*[0-~]
    | \x1b
    """,
    re.VERBOSE,
)
_HAS_ESCAPE = re.compile(r"[\x1b\x90\x98\x9b\x9d\x9e\x9f]")

# Control characters left after stripping (C0 but newline, DEL, C1) become U+FFFD, so a
# stray byte reads as text (a draft, never an empty composer) and never as blank.
_SANITIZE = {c: "\ufffd" for c in [*range(0x00, 0x0A), *range(0x0B, 0x20), *range(0x7F, 0xA0)]}

_DIM = 1  # the cell is faint (SGR 2) or drawn in a mid grey
_REV = 2  # the cell is reverse video (Claude Code draws its cursor this way)


def strip_ansi(text: str) -> str:
    """Remove CSI, OSC, DCS/SOS/PM/APC and other escape sequences from ``text``."""
    return _ESCAPE.sub("", text)


def _int(p: str) -> int:
    if p == "":
        return 0
    return int(p) if p.isdigit() else -1


def _grey(args: list[str]) -> bool:
    """Is a ``38;5;N`` / ``38;2;R;G;B`` colour a mid grey (how TUIs draw placeholder text)?"""
    if not args:
        return False
    if args[0] == "5" and len(args) >= 2:
        n = _int(args[1])
        return n == 8 or n in (59, 102, 145) or 240 <= n <= 250
    if args[0] == "2" and len(args) >= 4:
        r, g, b = (_int(a) for a in args[-3:])
        if min(r, g, b) < 0 or max(r, g, b) > 255:
            return False
        return max(r, g, b) - min(r, g, b) <= 20 and 80 <= max(r, g, b) <= 200
    return False


def _sgr(params: str, faint: bool, grey: bool, rev: bool) -> tuple[bool, bool, bool]:
    if params[:1] in ("<", "=", ">", "?"):
        return faint, grey, rev  # private-mode sequences are not SGR
    parts = params.split(";")
    i, n = 0, len(parts)
    while i < n:
        p = parts[i]
        if ":" in p:  # ITU form: 38:5:N, 38:2::R:G:B, 4:3 ...
            sub = p.split(":")
            if _int(sub[0]) == 38:
                grey = _grey(sub[1:2] + [x for x in sub[2:] if x])
            i += 1
            continue
        code = _int(p)
        if code == 0:
            faint = grey = rev = False
        elif code == 2:
            faint = True
        elif code == 22:
            faint = False
        elif code == 7:
            rev = True
        elif code == 27:
            rev = False
        elif 30 <= code <= 37 or code == 39:
            grey = False
        elif 90 <= code <= 97:
            grey = code == 90
        elif code in (38, 48, 58):
            mode = parts[i + 1] if i + 1 < n else ""
            width = 3 if mode == "5" else 5 if mode == "2" else 1
            if code == 38:
                grey = _grey(parts[i + 1 : i + width])
            i += width
            continue
        i += 1
    return faint, grey, rev


def _scan(text: str) -> tuple[list[str], list[bytes] | None]:
    """Split a capture into plain lines and, for an ANSI capture, per-cell style flags.

    SGR state carries across lines, as ``capture-pane -e`` only emits changes.
    """
    if not _HAS_ESCAPE.search(text):
        return text.translate(_SANITIZE).split("\n"), None
    chunks: list[str] = []
    flags = bytearray()
    faint = grey = rev = False
    flag = 0
    pos = 0
    for m in _ESCAPE.finditer(text):
        if m.start() > pos:
            chunk = text[pos : m.start()]
            chunks.append(chunk)
            flags.extend(bytes((flag,)) * len(chunk))
        pos = m.end()
        if m.group("final") == "m":
            faint, grey, rev = _sgr(m.group("params"), faint, grey, rev)
            flag = (_DIM if faint or grey else 0) | (_REV if rev else 0)
    if pos < len(text):
        chunk = text[pos:]
        chunks.append(chunk)
        flags.extend(bytes((flag,)) * len(chunk))
    plain = "".join(chunks).translate(_SANITIZE)
    lines = plain.split("\n")
    styles: list[bytes] = []
    start = 0
    for line in lines:
        styles.append(bytes(flags[start : start + len(line)]))
        start += len(line) + 1
    return lines, styles


# --------------------------------------------------------------------------- shared helpers

_BLANK = " \xa0"
_SPINNER_BRAILLE = frozenset("⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏")
_ESC_TO_INTERRUPT = re.compile(r"esc to interrupt", re.IGNORECASE)

# Strings that only appear on a native approval / permission / question modal.
_APPROVAL = re.compile(
    r"do you want to proceed\?"
    r"|do you want to (?:make this edit|create|allow|run|overwrite|delete)\b"
    r"|would you like to (?:run the following command|make the following edits"
    r"|grant these permissions|proceed)"
    r"|allow command\?|needs your approval|requires approval|waiting for approval"
    r"|press enter to|enter to confirm|esc to cancel|tab to amend|enter to select"
    r"|↑/↓ to navigate|do you trust the (?:files|contents)|press enter to continue"
    r"|enter to submit answer|yes, proceed|no, and tell codex|yes, and don't ask again"
    r"|approve once|always allow",
    re.IGNORECASE,
)
_YES_NO = re.compile(
    r"\[\s*y(?:es)?\s*/\s*n(?:o)?\s*\]|\(\s*y(?:es)?\s*/\s*n(?:o)?\s*\)", re.IGNORECASE
)
_POINTED_OPTION = re.compile(r"[ \xa0]*[❯›>▶▸→][ \xa0]*\d{1,2}[.)][ \xa0]+\S")
_NUMBERED = re.compile(r"[ \xa0]*(?:[❯›>▶▸→][ \xa0]*)?\d{1,2}[.)][ \xa0]+\S")


def _blank(line: str) -> bool:
    return line.strip(_BLANK) == ""


def _rstrip(line: str) -> str:
    return line.rstrip(_BLANK)


def _join_rows(first: str, rows: list[str]) -> str:
    """The text of a composer from its first row (after the prompt) and the rows under it.

    A row indented like the text (two blanks) starts a new line of the draft: the agent
    wrapped it or the person typed a newline. An unindented row is the same line
    continued by the terminal re-flowing a narrower pane, so it is joined without a
    break. Trailing blanks are dropped from each row and trailing empty lines at the end.
    """
    out = [_rstrip(first)]
    for row in rows:
        if _blank(row):
            out.append("\n")
        elif row[:2].strip(_BLANK) == "" and len(row) >= 2:
            out.append("\n" + _rstrip(row[2:]))
        else:
            out.append(_rstrip(row))
    return "".join(out).rstrip(_BLANK + "\n")


def _short(text: str, limit: int = 48) -> str:
    text = " ".join(text.split())
    return text if len(text) <= limit else text[: limit - 1] + "…"


def _last_nonblank(lines: list[str]) -> int | None:
    for i in range(len(lines) - 1, -1, -1):
        if not _blank(lines[i]):
            return i
    return None


def _option_list(lines: list[str], start: int = 0, end: int | None = None) -> int | None:
    """Index of a pointer line (``❯ 1. Yes``) with another numbered option next to it."""
    end = len(lines) if end is None else end
    for i in range(start, end):
        if _POINTED_OPTION.match(lines[i]):
            for j in range(max(start, i - 3), min(end, i + 4)):
                if j != i and _NUMBERED.match(lines[j]):
                    return i
    return None


def _pointer_of_list(lines: list[str], i: int) -> bool:
    """Is lines[i] the pointer line of a numbered choice list (``› 1. Yes`` + ``  2. No``)?"""
    if not _POINTED_OPTION.match(lines[i]):
        return False
    return any(
        _NUMBERED.match(lines[j]) for j in range(max(0, i - 3), min(len(lines), i + 4)) if j != i
    )


def _approval_in(lines: list[str]) -> str | None:
    """Why these lines look like an approval prompt / modal, or None."""
    for line in lines:
        m = _APPROVAL.search(line)
        if m:
            return f'an approval prompt is up ("{_short(line.strip(_BLANK), 60)}")'
    i = _option_list(lines)
    if i is not None:
        return f'a numbered choice is waiting for an answer ("{_short(lines[i].strip(_BLANK))}")'
    return None


def _dim_only(lines: list[str], styles: list[bytes] | None, region: list[tuple[int, int]]) -> bool:
    """True when an ANSI capture positively shows the text in ``region`` as placeholder.

    ``region`` lists (line, first column) spans. Every non-blank cell must be dim/grey,
    except the first one when it is under a reverse-video cursor; a reverse-video cell
    anywhere else (a cursor after the text) means typed text.
    """
    if styles is None:
        return False
    cells: list[tuple[int, int, int]] = []
    revs: list[tuple[int, int]] = []
    for li, col in region:
        row, flags = lines[li], styles[li]
        for c in range(col, len(row)):
            f = flags[c] if c < len(flags) else 0
            if f & _REV:
                revs.append((li, c))
            if row[c] not in _BLANK:
                cells.append((li, c, f))
    if not cells:
        return False
    first = cells[0]
    allowed = {(first[0], first[1]), region[0]}
    if any(r not in allowed for r in revs):
        return False
    rest = cells[1:] if first[2] & _REV else cells
    return bool(rest) and all(f & _DIM for _, _, f in rest)


def _width(text: str) -> int:
    w = 0
    for ch in text:
        if unicodedata.combining(ch) or ch in "\u200b\u200c\u200d\u2060\ufeff":
            continue
        w += 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1
    return w


def _held(reason: str, *, working: bool = False) -> Screen:
    return Screen(
        approval=False, composer_readable=False, draft=None, working=working, reason=reason
    )


def _verdict(
    name: str,
    *,
    approval: str | None,
    draft: str | None,
    unreadable: str | None,
    working: str | None,
    empty_note: str = "",
) -> Screen:
    """Assemble a Screen; the reason names the first thing that holds the doorbell."""
    readable = unreadable is None and draft is not None
    if approval:
        reason = f"{name}: {approval}"
    elif not readable:
        reason = f"{name}: {unreadable or 'the composer could not be read'}"
    elif working:
        reason = f"{name} is mid-turn ({working})"
        if draft:
            reason += f'; the composer also holds "{_short(draft)}"'
    elif draft:
        reason = f'{name}: the composer holds an unsent draft ("{_short(draft)}")'
    else:
        reason = f"{name} is idle with an empty composer{empty_note}"
    return Screen(
        approval=bool(approval),
        composer_readable=readable,
        draft=draft if readable else None,
        working=bool(working),
        reason=reason,
    )


# At most this many non-blank lines may follow a composer we call empty: a footer, never
# a modal or more transcript.
_MAX_FOOTER = 8
# Spinner / status lines are looked for this many lines above the composer.
_STATUS_WINDOW = 12


# --------------------------------------------------------------------------- Claude Code

_CLAUDE_SPINNER = re.compile(r"[ \xa0]*[·✢✳✶✻✽*][ \xa0]+\w[\w'’ -]*(?:…|\.\.\.)")


def _is_rule(line: str) -> bool:
    s = _rstrip(line)
    return bool(s) and s[0] == "─" and s.strip("─") == ""


def _claude_working(lines: list[str]) -> str | None:
    for line in lines:
        if _CLAUDE_SPINNER.match(line):
            return f'spinner "{_short(line.strip(_BLANK), 40)}"'
    for line in lines:
        if _ESC_TO_INTERRUPT.search(line):
            return '"esc to interrupt" on screen'
    return None


def _rule_groups(lines: list[str]) -> list[tuple[int, int, int]]:
    """(first line, last line, number of ─) of each run of rule lines."""
    groups: list[tuple[int, int, int]] = []
    i = 0
    while i < len(lines):
        if _is_rule(lines[i]):
            j = i
            while j + 1 < len(lines) and _is_rule(lines[j + 1]):
                j += 1
            groups.append((i, j, sum(lines[x].count("─") for x in range(i, j + 1))))
            i = j + 1
        else:
            i += 1
    return groups


def _claude_without_box(lines: list[str]) -> tuple[str | None, str]:
    """(approval reason or None, unreadable reason) when no ❯ composer box is on screen."""
    approval = _approval_in(lines)
    unreadable = "no composer on screen (the ❯ line between two rules)"
    if approval:
        return approval, unreadable
    groups = _rule_groups(lines)
    for (_, end, count), (start, _, count2) in zip(groups, groups[1:]):
        inside = [l for l in lines[end + 1 : start] if not _blank(l)]
        if count == count2 and inside and start - end - 1 <= 10:
            # two matching rules around something: the composer, in a mode we do not read
            # (bash mode's "!", a prompt glyph we have not seen, ...)
            seen = _short(inside[0].strip(_BLANK))
            return None, f'the composer shows a prompt we do not know ("{seen}")'
    for line in lines:
        if line[:1] in ("╭", "╰", "┌", "└"):
            return "a dialog box is drawn where the composer should be", unreadable
    for _, end, _ in groups:
        j = end + 1
        while j < len(lines) and _blank(lines[j]):
            j += 1
        if j < len(lines) and not lines[j].startswith("❯"):
            title = _short(lines[j].strip(_BLANK))
            return f'a dialog ("{title}") is drawn where the composer should be', unreadable
    return None, unreadable


def _read_claude(lines: list[str], styles: list[bytes] | None) -> Screen:
    name = "Claude Code"
    n = len(lines)
    box = None
    for i in range(n - 1, 0, -1):
        line = lines[i]
        if not line.startswith("❯") or (len(line) > 1 and line[1] not in _BLANK):
            continue
        if _is_rule(lines[i - 1]):
            box = i
            break
    if box is None:
        approval, unreadable = _claude_without_box(lines)
        return _verdict(
            name,
            approval=approval,
            draft=None,
            working=_claude_working(lines),
            unreadable=unreadable,
        )
    i = box
    top = i - 1
    while top > 0 and _is_rule(lines[top - 1]):
        top -= 1
    j = i + 1
    while j < n and not _is_rule(lines[j]):
        j += 1
    status = lines[max(0, top - _STATUS_WINDOW) : top]
    if j >= n:
        return _verdict(
            name,
            approval=_approval_in(lines[i:]),
            draft=None,
            working=_claude_working(status + lines[i + 1 :]),
            unreadable="the composer box is not closed (half-drawn screen?)",
        )
    k = j
    while k + 1 < n and _is_rule(lines[k + 1]):
        k += 1
    tail = lines[k + 1 :]
    approval = _approval_in(tail)
    if approval is None and _pointer_of_list(lines[i:j], 0):
        approval = "a numbered choice list is drawn where the composer should be"
    working = _claude_working(status + tail)
    if sum(l.count("─") for l in lines[top:i]) != sum(l.count("─") for l in lines[j : k + 1]):
        return _verdict(
            name,
            approval=approval,
            draft=None,
            working=working,
            unreadable="the rules around the composer do not match (half-drawn or resizing)",
        )

    content = lines[i:j]
    draft = _join_rows(content[0][2:], content[1:])
    note = ""
    if draft and _dim_only(lines, styles, [(i, 2)] + [(li, 0) for li in range(i + 1, j)]):
        draft, note = "", " (only a dim suggestion is shown)"
    if draft == "" and sum(1 for l in tail if not _blank(l)) > _MAX_FOOTER:
        return _verdict(
            name,
            approval=approval,
            draft=None,
            working=working,
            unreadable="the composer is not at the bottom of the screen",
        )
    return _verdict(
        name, approval=approval, draft=draft, unreadable=None, working=working, empty_note=note
    )


# --------------------------------------------------------------------------- Codex

# Placeholders Codex shows (dim) on an empty composer.
_CODEX_PLACEHOLDERS = frozenset(
    {
        "Ask Codex to do anything",
        "Explain this codebase",
        "Summarize recent commits",
        "Implement {feature}",
        "Find and fix a bug in @filename",
        "Write tests for @filename",
        "Improve documentation in @filename",
        "Run /review on my current changes",
        "Use /skills to list available skills",
        "Check recently modified functions for compatibility",
        "How many files have been modified?",
        "Will this algorithm scale well?",
    }
)
# Under an empty composer Codex draws a padding row and a footer of one or two lines
# (a few more when tmux has re-wrapped them in a narrow pane).
_CODEX_MAX_FOOTER = 4
_CODEX_PROMPT = re.compile(r"›(?:[ \xa0]|$)")
_CODEX_WORKING = re.compile(r"[ \xa0]*(?:[•◦·][ \xa0]*)?Working[ \xa0]*\(")


def _codex_working(lines: list[str]) -> str | None:
    for line in lines:
        if _ESC_TO_INTERRUPT.search(line) or _CODEX_WORKING.match(line):
            return f'"{_short(line.strip(_BLANK), 40)}"'
    return None


def _read_codex(lines: list[str], styles: list[bytes] | None) -> Screen:
    name = "Codex"
    n = len(lines)
    c = None
    for i in range(n - 1, -1, -1):
        if _CODEX_PROMPT.match(lines[i]):
            c = i
            break
    if c is not None and (
        _pointer_of_list(lines, c)
        or (_POINTED_OPTION.match(lines[c]) and _approval_in(lines[max(0, c - _STATUS_WINDOW) : c]))
    ):
        c = None  # the › is the pointer of a choice list, not the composer
    if c is None:
        return _verdict(
            name,
            approval=_approval_in(lines),
            draft=None,
            working=_codex_working(lines),
            unreadable="no composer on screen (the › line)",
        )
    # Rows of a multi-line draft follow the › row directly; a blank padding row
    # separates the composer from the footer.
    j = c + 1
    while j < n and not _blank(lines[j]):
        j += 1
    cont = lines[c + 1 : j]
    tail = lines[j:]
    approval = _approval_in(tail)
    working = _codex_working(lines[max(0, c - _STATUS_WINDOW) : c] + tail)
    first = _rstrip(lines[c][2:] if len(lines[c]) > 1 else "")
    joined = _join_rows(first, cont)

    if first == "":
        if joined:
            return _verdict(name, approval=approval, draft=joined, unreadable=None, working=working)
        return _verdict(
            name,
            approval=approval,
            draft=None,
            working=working,
            unreadable="the composer shows neither text nor its placeholder",
        )
    if first == "Input disabled.":
        return _verdict(
            name,
            approval=approval,
            draft=None,
            working=working,
            unreadable="Codex has disabled its input",
        )
    # Codex draws the placeholder dim: where the capture shows dim text at all, the same
    # words in the normal colour were typed (a draft, or the transcript's echo of one).
    # Only a capture without dim (plain, or colour off), which cannot tell them apart,
    # falls back on the wording.
    if styles is not None and any(f & _DIM for row in styles for f in set(row)):
        placeholder = _dim_only(lines, styles, [(c, 2)])
    else:
        placeholder = first in _CODEX_PLACEHOLDERS
    if placeholder and not cont:
        # Codex draws its composer at the bottom: one padding row, then a short footer.
        # A placeholder-looking line with more under it is a past message in the
        # transcript (Codex prints user messages with the same ›) above something else.
        if sum(1 for l in tail if not _blank(l)) > _CODEX_MAX_FOOTER:
            return _verdict(
                name,
                approval=approval,
                draft=None,
                working=working,
                unreadable="the placeholder line is not at the bottom of the screen "
                "(a transcript line above something else?)",
            )
        return _verdict(
            name,
            approval=approval,
            draft="",
            unreadable=None,
            working=working,
            empty_note=f' (placeholder "{_short(first, 40)}")',
        )
    return _verdict(name, approval=approval, draft=joined, unreadable=None, working=working)


# --------------------------------------------------------------------------- pi


# pi's editor scrolled: its top (bottom) rule says how many rows are hidden above (below)
_PI_MORE = re.compile(r"─── [↑↓] \d+ more ─*")
# The key hints of pi's extension dialogs (select, confirm, input, editor), which replace
# the editor between its rules: "↑↓ navigate  enter select  escape/ctrl+c cancel".
_PI_DIALOG = re.compile(
    r"↑↓ navigate|\benter (?:select|submit)\b|escape/ctrl\+c cancel", re.IGNORECASE
)
_PI_STATUS_WINDOW = 6  # pi's loader sits just above the editor, a blank row between


def _pi_rule(line: str) -> str | None:
    """``"rule"`` for a rule of ─ from column 0, ``"more"`` for a scrolled editor's rule."""
    s = _rstrip(line)
    if len(s) >= 10 and s.strip("─") == "":
        return "rule"
    if _PI_MORE.fullmatch(s):
        return "more"
    return None


def _pi_dialog(lines: list[str]) -> str | None:
    for line in lines:
        if _PI_DIALOG.search(line):
            return f'an extension dialog is up ("{_short(line.strip(_BLANK), 60)}")'
    return None


def _pi_working(lines: list[str]) -> str | None:
    for line in lines:
        s = line.lstrip(_BLANK)
        if s[:1] in _SPINNER_BRAILLE:  # any spinner frame first: busy, whatever follows
            return f'spinner "{_short(s, 40)}"'
    return None


def _pi_empty_row(row: str, flags: bytes | None) -> str | None:
    """The draft a blank single-row editor holds: "" when the cursor cell (reverse video)
    is at column 0, spaces up to the cursor when it is further right; None when the ANSI
    capture shows no cursor on it. A plain capture has no cursor: blank reads empty."""
    if flags is None:
        return ""
    revs = [c for c, f in enumerate(flags) if f & _REV]
    if len(revs) != 1:
        return None
    return " " * revs[0]


def _read_pi(lines: list[str], styles: list[bytes] | None) -> Screen:
    name = "pi"
    last = _last_nonblank(lines)
    if last is None:
        return _held(f"{name}: the pane is blank")
    # The editor's bottom rule has at most a short footer (cwd, stats) under it.
    bottom = None
    seen = 0
    for i in range(last, -1, -1):
        if _pi_rule(lines[i]):
            bottom = i
            break
        if not _blank(lines[i]):
            seen += 1
            if seen > _MAX_FOOTER:
                break
    top = None
    if bottom is not None:
        top = next((i for i in range(bottom - 1, -1, -1) if _pi_rule(lines[i])), None)
    if bottom is None or top is None:
        return _verdict(
            name,
            approval=_pi_dialog(lines),
            draft=None,
            working=None,
            unreadable="no editor on screen (two ─ rules with a short footer under them)",
        )
    rows = lines[top + 1 : bottom]
    working = _pi_working(lines[max(0, top - _PI_STATUS_WINDOW) : top])

    approval = _pi_dialog(rows) or _pi_dialog(lines[bottom + 1 :])
    if approval:
        return _verdict(
            name,
            approval=approval,
            draft=None,
            working=working,
            unreadable="an extension dialog replaces the editor",
        )
    top_kind, bottom_kind = _pi_rule(lines[top]), _pi_rule(lines[bottom])
    if top_kind == bottom_kind == "rule" and _rstrip(lines[top]) != _rstrip(lines[bottom]):
        return _verdict(
            name,
            approval=None,
            draft=None,
            working=working,
            unreadable="the rules around the editor differ (half-drawn?)",
        )
    text = "\n".join(_rstrip(r) for r in rows).strip("\n")
    if "more" in (top_kind, bottom_kind):
        draft: str | None = text or "\n"  # rows hidden above or below: never empty
    elif text:
        draft = text
    elif len(rows) != 1:
        draft = "\n" * max(1, len(rows) - 1)  # empty lines typed (shift+enter)
    else:
        draft = _pi_empty_row(rows[0], styles[top + 1] if styles is not None else None)
        if draft is None:
            return _verdict(
                name,
                approval=None,
                draft=None,
                working=working,
                unreadable="the editor shows no cursor",
            )
    # The top rule is only the nearest one: a draft row of ─ as wide as the pane looks the
    # same, and the "editor" under it is then the draft's tail. So an editor read as empty
    # must be the only pair of rules from column 0 (pi draws its transcript one column in);
    # with another rule above it, the real top rule may be that one. (A draft is a draft
    # either way: the doorbell holds.)
    if draft == "" and any(_pi_rule(lines[i]) for i in range(top)):
        return _verdict(
            name,
            approval=None,
            draft=None,
            working=working,
            unreadable="another rule above the editor (a draft holding a rule?)",
        )
    return _verdict(name, approval=None, draft=draft, unreadable=None, working=working)


# --------------------------------------------------------------------------- generic

_PROMPT_GLYPHS = frozenset("$#%>❯›")


def _prompt_end(line: str) -> int | None:
    """Index of the glyph that ends the first shell-style prompt on ``line``."""
    for k, ch in enumerate(line):
        if ch not in _PROMPT_GLYPHS:
            continue
        if k + 1 < len(line) and line[k + 1] not in _BLANK:
            continue
        if ch == "%" and k > 0 and line[k - 1].isdigit():
            continue  # "45%": a percentage, not a zsh prompt
        if ch == ">" and "<" in line[:k]:
            continue  # "<div>": markup, not a prompt
        return k
    return None


def _read_generic(lines: list[str], cursor: tuple[int, int] | None) -> Screen:
    name = "the program in the pane"
    working = None
    for line in lines:
        if _SPINNER_BRAILLE.intersection(line):
            working = "a spinner is on screen"
            break
        if _ESC_TO_INTERRUPT.search(line):
            working = '"esc to interrupt" on screen'
            break
    x = None
    if cursor is not None:
        try:
            x, y = int(cursor[0]), int(cursor[1])
        except (TypeError, ValueError, IndexError):
            return _held(
                f"{name}: the cursor position {cursor!r} is not usable", working=bool(working)
            )
        if not 0 <= y < len(lines) or x < 0:
            return _held(
                f"{name}: the cursor ({x}, {y}) is outside the captured screen",
                working=bool(working),
            )
        idx = y
    else:
        last = _last_nonblank(lines)
        if last is None:
            return _held(f"{name}: the pane is blank", working=bool(working))
        idx = last
    line = lines[idx]
    k = None if _blank(line) else _prompt_end(line)
    # A prompt the program drew after a question means the question was answered: text
    # above a readable prompt is history. Without a prompt, look a few lines up.
    start = idx
    if k is None:
        start = max(0, idx - 6)
        for r in range(idx - 1, start - 1, -1):
            if (
                not _blank(lines[r])
                and _prompt_end(lines[r]) is not None
                and not _pointer_of_list(lines, r)
            ):
                start = r + 1  # questions above an earlier prompt were answered
                break
    region = lines[start:]
    approval = _approval_in(region)
    if approval is None:
        for row in region:
            if _YES_NO.search(row):
                approval = f'a yes/no question is waiting ("{_short(row.strip(_BLANK))}")'
                break
    if approval is None and _pointer_of_list(lines, idx):
        approval = f'a numbered choice is waiting for an answer ("{_short(line.strip(_BLANK))}")'
    if _blank(line):
        return _verdict(
            name,
            approval=approval,
            draft=None,
            working=working,
            unreadable="the cursor is on a blank line (no prompt)",
        )
    if k is None:
        return _verdict(
            name,
            approval=approval,
            draft=None,
            working=working,
            unreadable="no prompt ending in $ # % > ❯ › on the input line "
            f'("{_short(line.strip(_BLANK))}")',
        )
    draft = _rstrip(line[k + 2 :])
    if draft == "" and x is not None and x < _width(line[: k + 1]):
        return _verdict(
            name,
            approval=approval,
            draft=None,
            working=working,
            unreadable="the cursor sits inside the prompt, not after it",
        )
    return _verdict(name, approval=approval, draft=draft, unreadable=None, working=working)


# --------------------------------------------------------------------------- start-up dialogs


@dataclass(frozen=True)
class Dialog:
    """A screen an agent shows before its composer, that only a person's answer gets past.

    ``id`` is stable (``status --json``'s ``dialog``; its words, ``blocked: <title>``, are
    ``state.vocab.DIALOG_TITLES``'). It is recognised only when every one of ``markers``
    is on screen, no composer is (a transcript quoting the words is not the dialog), and
    exactly one line carries a pointer (``❯`` / ``›``), on one of ``options`` (text quoted
    in another modal, say an approval prompt's command, is not the dialog: that modal's own
    pointer is on its own option). ``safe`` is the option
    the captain may choose for the crew (the words of that option as drawn); None: only
    a person at the pane answers it.
    """

    id: str  # state.vocab.DIALOG_TITLES' key
    agent: str  # the reader kind it belongs to: claude | codex
    markers: tuple[str, ...]  # plain substrings, all required
    options: tuple[str, ...]  # its options as drawn (Codex numbers them: "1. " dropped)
    safe: str | None = None


# Every start-up dialog captain recognises, one rule each (seen on the real CLIs: the
# captures are in tests/fixtures/screens, and tests/agents brings each trust dialog up).
DIALOGS: tuple[Dialog, ...] = (
    Dialog(
        "folder_trust",
        "claude",
        ("Accessing workspace:", "Yes, I trust this folder", "No, exit", "Enter to confirm"),
        ("No, exit", "Yes, I trust this folder"),
        safe="Yes, I trust this folder",
    ),
    Dialog(
        "api_key",
        "claude",
        ("Detected a custom API key", "Do you want to use this API key?", "Enter to confirm"),
        ("Yes", "No (recommended)"),
    ),
    Dialog(
        "folder_trust",
        "codex",
        ("Trust this folder?", "1. Trust and continue"),
        # what Codex 0.169 can offer under it (its binary's strings), by context
        (
            "Trust and continue",
            "Open restricted",
            "Open existing task",
            "Back to Agent Command Center",
            "Keep current directory",
        ),
        safe="Trust and continue",
    ),
    Dialog(
        "model_migration",
        "codex",
        ("1. Try new model", "2. Use existing model"),
        ("Try new model", "Use existing model"),
    ),
    Dialog(
        "hooks_review",
        "codex",
        ("Hooks need review", "Trust all and continue"),
        ("Review hooks", "Trust all and continue", "Continue without trusting (hooks won't run)"),
    ),
    Dialog(
        "login",
        "codex",
        ("Welcome to Codex", "Sign in with ChatGPT", "Press enter to continue"),
        ("Sign in with ChatGPT", "Sign in with Device Code", "Sign in another way"),
    ),
)


def dialog_rule(kind: str, dialog_id: str) -> Dialog | None:
    """The rule for ``dialog_id`` on an agent of ``kind`` (claude, codex ...)."""
    return next((d for d in DIALOGS if d.agent == _kind(kind) and d.id == dialog_id), None)


_POINTER = re.compile(r"[ \xa0]*[❯›>][ \xa0]+(?:\d{1,2}\.[ \xa0]+)?(?P<option>\S.*)")


def _dialog_in(lines: list[str], kind: str) -> tuple[Dialog, str] | None:
    """The start-up dialog on these lines, and the option its one pointer is on."""
    text = "\n".join(lines)
    pointed = [_rstrip(m.group("option")) for m in map(_POINTER.match, lines) if m]
    if len(pointed) != 1:
        return None
    for rule in DIALOGS:
        if (
            rule.agent == kind
            and pointed[0] in rule.options
            and all(m in text for m in rule.markers)
        ):
            return rule, pointed[0]
    return None


def _with_dialog(screen: Screen, lines: list[str], kind: str) -> Screen:
    """A screen with no readable composer that shows a start-up dialog: say which one. It
    stays a modal (``approval``): nothing rings into it."""
    if screen.composer_readable:
        return screen
    found = _dialog_in(lines, kind)
    if found is None:
        return screen
    dialog, choice = found
    name = {"claude": "Claude Code", "codex": "Codex"}[kind]
    return Screen(
        approval=True,
        composer_readable=False,
        draft=None,
        working=False,
        reason=f"{name} is at its start-up {dialog.id.replace('_', ' ')} dialog",
        dialog=dialog.id,
        choice=choice,
    )


# --------------------------------------------------------------------------- entry point


def _kind(agent: str) -> str:
    a = str(agent or "").strip().lower()
    if a.startswith("claude"):
        return "claude"
    if a.startswith("codex"):
        return "codex"
    if a == "pi":
        return "pi"
    return "generic"


def read_screen(text: str, agent: str, *, cursor: tuple[int, int] | None = None) -> Screen:
    """Read a captured pane (plain or with ANSI) for an agent kind: claude, codex or generic.

    ``cursor`` is the pane cursor (x, y) from tmux, y indexing the captured lines; only
    the generic reader uses it. Never raises: an internal error reads as unreadable.
    """
    try:
        if isinstance(text, (bytes, bytearray)):
            text = bytes(text).decode("utf-8", errors="replace")
        lines, styles = _scan(text)
        kind = _kind(agent)
        if all(_blank(line) for line in lines):
            return _held("the pane is blank (nothing drawn yet)")
        if kind == "claude":
            return _with_dialog(_read_claude(lines, styles), lines, kind)
        if kind == "codex":
            return _with_dialog(_read_codex(lines, styles), lines, kind)
        if kind == "pi":
            return _read_pi(lines, styles)
        return _read_generic(lines, cursor)
    except Exception as exc:  # noqa: BLE001 - fail closed on anything unforeseen
        return _held(f"screen reader error: {type(exc).__name__}: {exc}")
