"""Reading panes (captain_tui.runtime.pane_reader): real captures, variants, properties.

The doorbell may ring only on (approval False, composer readable, draft "", not working).
Every test here either checks a real capture reads right or that something that is not a
clearly idle, empty composer never produces that combination.
"""

from __future__ import annotations

import ast
import os
import re
import sys
import textwrap
import unicodedata
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from captain_tui.runtime.pane_reader import Screen, read_screen, strip_ansi

REPO = Path(__file__).resolve().parents[2]
# real captures, in the repository (tests/fixtures/README.md says where they came from)
FIXTURES = Path(os.environ.get("CAPTAIN_FIXTURES", REPO / "tests" / "fixtures" / "screens"))

WAKE = "mail from the captain is waiting; keep working"
DRAFT = "half-written thought about the parser"

# Expected reading of every real capture: (approval, composer_readable, draft, working).
EXPECTED = {
    "claude-code/approval-prompt": (True, False, None, False),
    "claude-code/draft": (False, True, DRAFT, False),
    "claude-code/idle-empty": (False, True, "", False),
    "claude-code/working": (False, True, "", True),
    "codex/draft": (False, True, DRAFT, False),
    "codex/idle-empty": (False, True, "", False),
}
CAPTURES = [f"{name}.{ext}" for name in EXPECTED for ext in ("txt", "ansi")]

# Placeholders Codex rotates through on an empty composer (openai/codex chatwidget).
CODEX_PLACEHOLDERS = [
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
]


# --------------------------------------------------------------------------- helpers


def agent_of(name: str) -> str:
    return "claude" if name.startswith("claude-code") else "codex"


def load(name: str) -> str:
    return (FIXTURES / name).read_text(encoding="utf-8")


def fields(s: Screen) -> tuple:
    return (s.approval, s.composer_readable, s.draft, s.working)


def may_ring(s: Screen) -> bool:
    return (not s.approval) and s.composer_readable and s.draft == "" and not s.working


def norm(text: str | None) -> str | None:
    """Whitespace-insensitive form of a draft: a terminal may wrap a row mid-word."""
    return None if text is None else "".join(text.split())


def assert_reads(s: Screen, expected: tuple) -> None:
    approval, readable, draft, working = expected
    assert (s.approval, s.composer_readable, s.working) == (approval, readable, working), s
    assert norm(s.draft) == norm(draft), s
    assert (s.draft is None) == (not s.composer_readable), s
    assert s.reason and "\n" not in s.reason and "screen reader error" not in s.reason, s


_ESC_TOKEN = re.compile(r"\x1b\[[0-?]*[ -/]*[@-~]|\x1b\][^\x07\x1b]*(?:\x07|\x1b\\)|\x1b[^\[\]]")


def cell_width(ch: str) -> int:
    if unicodedata.combining(ch):
        return 0
    return 2 if unicodedata.east_asian_width(ch) in ("W", "F") else 1


def rewrap(text: str, width: int) -> str:
    """Hard-wrap every line at ``width`` cells, the way a terminal reflows a narrower pane.

    Escape sequences take no cells and stay in order; a wide character that does not fit
    moves to the next row. Plain rows lose their trailing blanks, as capture-pane does.
    """
    ansi = "\x1b" in text
    out: list[str] = []
    for line in text.split("\n"):
        tokens: list[str] = []
        pos = 0
        for m in _ESC_TOKEN.finditer(line):
            tokens.extend(line[pos : m.start()])
            tokens.append(m.group())
            pos = m.end()
        tokens.extend(line[pos:])
        rows, cur, used = [], [], 0
        for tok in tokens:
            w = 0 if tok.startswith("\x1b") else cell_width(tok)
            if used + w > width:
                rows.append("".join(cur))
                cur, used = [], 0
            cur.append(tok)
            used += w
        rows.append("".join(cur))
        out.extend(rows if ansi else [r.rstrip(" ") for r in rows])
    return "\n".join(out)


def pad(text: str, width: int) -> str:
    """Pad plain rows with trailing spaces to ``width`` (capture-pane -N style)."""
    return "\n".join(line + " " * max(0, width - len(line)) for line in text.split("\n"))


def replace_lines(text: str, index: int, new: list[str]) -> str:
    lines = text.split("\n")
    return "\n".join(lines[:index] + new + lines[index + 1 :])


def _reset_first(rows: list[str], ansi: bool) -> list[str]:
    # capture-pane -e only emits colour changes: the row above the composer is a grey
    # rule, so plain rows in an ANSI capture start from a reset as the real ones do.
    if ansi and rows and not rows[0].startswith("\x1b"):
        return ["\x1b[0m" + rows[0]] + rows[1:]
    return rows


def claude_with(composer: list[str], *, ansi: bool = False) -> str:
    """The idle Claude Code capture with its composer line (27) replaced."""
    base = load("claude-code/idle-empty.ansi" if ansi else "claude-code/idle-empty.txt")
    return replace_lines(base, 27, _reset_first(composer, ansi))


def codex_with(composer: list[str], *, ansi: bool = False) -> str:
    """The idle Codex capture with its composer line (26) replaced."""
    base = load("codex/idle-empty.ansi" if ansi else "codex/idle-empty.txt")
    return replace_lines(base, 26, _reset_first(composer, ansi))


# --------------------------------------------------------------------------- real captures


def test_every_capture_has_an_expectation():
    on_disk = {
        f"{p.parent.name}/{p.name}"
        for d in ("claude-code", "codex")
        for p in (FIXTURES / d).iterdir()
        if p.suffix in (".txt", ".ansi")
    }
    assert on_disk == set(CAPTURES)


@pytest.mark.parametrize("capture", CAPTURES)
def test_real_capture(capture):
    name = capture.rsplit(".", 1)[0]
    s = read_screen(load(capture), agent_of(name))
    assert_reads(s, EXPECTED[name])
    assert s.draft == EXPECTED[name][2]  # exact, not just whitespace-equal
    assert may_ring(s) == (name in ("claude-code/idle-empty", "codex/idle-empty"))


@pytest.mark.parametrize("name", list(EXPECTED))
def test_ansi_capture_reads_like_plain(name):
    plain = read_screen(load(f"{name}.txt"), agent_of(name))
    ansi = read_screen(load(f"{name}.ansi"), agent_of(name))
    assert fields(ansi) == fields(plain)


@pytest.mark.parametrize("name", list(EXPECTED))
def test_strip_ansi_turns_the_ansi_capture_into_the_plain_one(name):
    stripped = [line.rstrip(" ") for line in strip_ansi(load(f"{name}.ansi")).split("\n")]
    assert stripped == load(f"{name}.txt").split("\n")


@pytest.mark.parametrize("capture", CAPTURES)
def test_real_capture_read_as_another_agent_never_rings(capture):
    text = load(capture)
    others = {"claude": ["codex", "shell"], "codex": ["claude", "shell"]}[agent_of(capture)]
    for agent in others:
        s = read_screen(text, agent)
        assert not may_ring(s), (agent, s)
        assert not s.composer_readable, (agent, s)


def test_strip_ansi_removes_every_kind_of_escape():
    text = (
        "a\x1b[1;38;5;246mb\x1b[0mc\x1b]0;title\x07d\x1b]8;;http://x\x1b\\e\x1bPq#0\x1b\\f"
        "\x1b(Bg\x1b=h\x1b[?25li\x9b31mj\x1b"
    )
    assert strip_ansi(text) == "abcdefghij"
    assert strip_ansi("plain ❯\xa0text") == "plain ❯\xa0text"


# --------------------------------------------------------------------------- narrow panes


@pytest.mark.parametrize("width", [40, 60])
@pytest.mark.parametrize("capture", CAPTURES)
def test_narrow_pane(capture, width):
    name = capture.rsplit(".", 1)[0]
    wrapped = rewrap(load(capture), width)
    assert max(len(strip_ansi(line)) for line in wrapped.split("\n")) <= width
    assert_reads(read_screen(wrapped, agent_of(name)), EXPECTED[name])


@pytest.mark.parametrize("capture", [c for c in CAPTURES if c.endswith(".txt")])
def test_rows_padded_with_trailing_spaces(capture):
    name = capture.rsplit(".", 1)[0]
    width = 120 if "approval" in name else 100
    padded = pad(load(capture), width)
    assert_reads(read_screen(padded, agent_of(name)), EXPECTED[name])
    # padded and then reflowed into a narrower pane: the box rows turn into several rows
    assert_reads(read_screen(rewrap(padded, 40), agent_of(name)), EXPECTED[name])


def test_claude_rules_that_do_not_match_are_not_read():
    text = load("claude-code/idle-empty.txt")
    lines = text.split("\n")
    lines[28] = "─" * 60  # bottom rule redrawn at a new width, top not yet
    s = read_screen("\n".join(lines), "claude")
    assert not s.composer_readable and not may_ring(s)


# --------------------------------------------------------------------------- wrapped drafts


@pytest.mark.parametrize("ansi", [False, True])
def test_claude_wrapped_draft(ansi):
    text = (
        "please look at the parser again, the tokenizer drops the last byte of every "
        "chunk and the tests do not notice because they only feed short inputs"
    )
    rows = textwrap.wrap(text, 98)
    assert len(rows) == 2
    screen = claude_with(["❯\xa0" + rows[0]] + ["  " + r for r in rows[1:]], ansi=ansi)
    s = read_screen(screen, "claude")
    assert_reads(s, (False, True, text, False))
    assert s.draft == "\n".join(rows)
    for width in (40, 60):
        assert_reads(read_screen(rewrap(screen, width), "claude"), (False, True, text, False))


def test_claude_multi_line_draft_with_blank_line():
    s = read_screen(
        claude_with(["❯\xa0first line", "  second line", "", "  fourth line"]), "claude"
    )
    assert s.draft == "first line\nsecond line\n\nfourth line"
    assert not may_ring(s)


def test_claude_draft_whose_first_line_is_empty():
    s = read_screen(claude_with(["❯\xa0", "  the text is on the second line"]), "claude")
    assert s.composer_readable and s.draft.strip() == "the text is on the second line"
    assert not may_ring(s)


@pytest.mark.parametrize("ansi", [False, True])
def test_codex_wrapped_draft(ansi):
    text = (
        "please look at the parser again, the tokenizer drops the last byte of every "
        "chunk and the tests do not notice because they only feed short inputs"
    )
    rows = textwrap.wrap(text, 96)
    screen = codex_with(["› " + rows[0]] + ["  " + r for r in rows[1:]], ansi=ansi)
    s = read_screen(screen, "codex")
    assert s.draft == "\n".join(rows)
    assert_reads(read_screen(rewrap(screen, 40), "codex"), (False, True, text, False))


def test_codex_draft_starting_with_a_newline():
    s = read_screen(codex_with(["›", "  text on the second line"]), "codex")
    assert s.composer_readable and s.draft.strip() == "text on the second line"
    assert not may_ring(s)


def test_codex_bare_glyph_is_not_positively_empty():
    # Codex always shows a placeholder on an empty composer; a bare › may hide a draft
    # that starts with blank lines.
    s = read_screen(codex_with(["›"]), "codex")
    assert not s.composer_readable and s.draft is None and not may_ring(s)


# --------------------------------------------------------------------------- placeholders


@pytest.mark.parametrize("placeholder", CODEX_PLACEHOLDERS)
def test_codex_placeholder_is_not_a_draft(placeholder):
    assert may_ring(read_screen(codex_with(["› " + placeholder]), "codex"))
    dim = codex_with(["\x1b[1m›\x1b[0m \x1b[2m" + placeholder], ansi=True)
    assert may_ring(read_screen(dim, "codex"))


@pytest.mark.parametrize(
    "typed",
    [
        "Ask Codex to do anything please",
        "Ask Codex",  # a prefix is typed text in plain
        "Check recently modified functions for compat",  # a clipped placeholder, plain
        "explain this codebase",
        "1. fix the parser",
    ],
)
def test_codex_text_that_is_not_exactly_a_placeholder_is_a_draft(typed):
    s = read_screen(codex_with(["› " + typed]), "codex")
    assert s.draft == typed and not may_ring(s)


def test_codex_dim_text_is_a_placeholder_only_in_ansi():
    suggestion = "Check recently modified functions for compat"
    dim = read_screen(codex_with(["\x1b[1m›\x1b[0m \x1b[2m" + suggestion], ansi=True), "codex")
    assert may_ring(dim) and dim.draft == ""
    typed = read_screen(
        codex_with(["\x1b[1m›\x1b[0m\x1b[39m\x1b[49m " + suggestion], ansi=True), "codex"
    )
    assert typed.draft == suggestion and not may_ring(typed)


def test_codex_placeholder_with_a_continuation_line_is_a_draft():
    s = read_screen(codex_with(["› Explain this codebase", "  and then the tests"]), "codex")
    assert s.draft == "Explain this codebase\nand then the tests" and not may_ring(s)


def test_codex_disabled_input_is_unreadable():
    s = read_screen(codex_with(["› Input disabled."]), "codex")
    assert not s.composer_readable and not may_ring(s)


CLAUDE_SUGGESTION = 'Try "fix the flaky test in test_parser.py"'


@pytest.mark.parametrize(
    "dim",
    [
        "\x1b[2m",
        "\x1b[90m",
        "\x1b[38;5;246m",
        "\x1b[38;5;244m",
        "\x1b[38;2;140;140;140m",
        "\x1b[38:5:245m",
    ],
)
@pytest.mark.parametrize("cursor_on_first", [True, False])
def test_claude_dim_suggestion_is_empty_in_ansi_but_a_draft_in_plain(dim, cursor_on_first):
    first, rest = CLAUDE_SUGGESTION[0], CLAUDE_SUGGESTION[1:]
    if cursor_on_first:
        line = f"\x1b[39m❯\xa0\x1b[7m{first}\x1b[27m{dim}{rest}\x1b[39m\x1b[22m"
    else:
        line = f"\x1b[39m❯\xa0{dim}{CLAUDE_SUGGESTION}\x1b[39m\x1b[22m"
    s = read_screen(claude_with([line], ansi=True), "claude")
    assert may_ring(s) and s.draft == "", s
    plain = read_screen(claude_with(["❯\xa0" + CLAUDE_SUGGESTION]), "claude")
    assert plain.draft == CLAUDE_SUGGESTION and not may_ring(plain)
    assert plain.draft == strip_ansi(line)[2:]


@pytest.mark.parametrize(
    "line",
    [
        # typed text in the default colour, cursor after it (the real draft capture's shape)
        f"\x1b[39m❯\xa0{CLAUDE_SUGGESTION}\x1b[7m",
        # grey text but Claude's cursor sits after it: typed, not a suggestion
        f"\x1b[39m❯\xa0\x1b[38;5;246m{CLAUDE_SUGGESTION}\x1b[7m \x1b[27m",
        # only part of the text is dim
        '\x1b[39m❯\xa0Try \x1b[2m"fix the flaky test"\x1b[22m',
        # near-white and near-black are ordinary text colours, not placeholder grey
        f"\x1b[39m❯\xa0\x1b[38;5;231m{CLAUDE_SUGGESTION}",
        f"\x1b[39m❯\xa0\x1b[38;5;236m{CLAUDE_SUGGESTION}",
        f"\x1b[39m❯\xa0\x1b[38;2;0;0;0m{CLAUDE_SUGGESTION}",
        # dim was switched off (SGR 22 / 0) before the text
        f"\x1b[39m❯\xa0\x1b[2m\x1b[22m{CLAUDE_SUGGESTION}",
        f"\x1b[39m❯\xa0\x1b[2m\x1b[0m{CLAUDE_SUGGESTION}",
        # the cursor cell is on the first character but the rest is normal
        f"\x1b[39m❯\xa0\x1b[7mT\x1b[27m{CLAUDE_SUGGESTION[1:]}",
    ],
)
def test_claude_text_that_ansi_does_not_show_dim_is_a_draft(line):
    s = read_screen(claude_with([line], ansi=True), "claude")
    assert s.draft == CLAUDE_SUGGESTION or s.draft == strip_ansi(line)[2:], s
    assert not may_ring(s)


# --------------------------------------------------------------------------- the wake line


@pytest.mark.parametrize(
    "text", [WAKE, "mail from the captain", "mail from the captain is waiting;"]
)
def test_wake_line_on_the_composer_is_a_draft(text):
    for screen, agent in [
        (claude_with(["❯\xa0" + text]), "claude"),
        (claude_with([f"\x1b[39m❯\xa0{text}\x1b[7m"], ansi=True), "claude"),
        (codex_with(["› " + text]), "codex"),
        (codex_with([f"\x1b[1m›\x1b[0m\x1b[39m\x1b[49m {text}"], ansi=True), "codex"),
        (f"user@host:~$ {text}\n", "shell"),
        (f"› {text}\n", "generic"),
    ]:
        s = read_screen(screen, agent)
        assert s.composer_readable and s.draft == text, (agent, s)
        assert not may_ring(s)


def test_wake_line_wrapped_in_a_narrow_pane_is_still_the_wake_line():
    # tmux re-flows "❯ mail from the captain is waiting; keep| working" into two rows; the
    # unindented second row is the same line continued.
    s = read_screen(rewrap(claude_with(["❯\xa0" + WAKE]), 40), "claude")
    assert s.draft == WAKE and not may_ring(s)
    # Claude Code's own wrap indents the second row: a new line of the draft.
    s = read_screen(
        claude_with(["❯\xa0mail from the captain is waiting; keep", "  working"]), "claude"
    )
    assert s.draft == "mail from the captain is waiting; keep\nworking" and not may_ring(s)


# --------------------------------------------------------------------------- half-drawn screens

HALF_DRAWN = {
    "empty": "",
    "newlines": "\n" * 30,
    "blanks": " \n\xa0\n   \n",
    "only-rules": ("─" * 100 + "\n") * 3,
    "rule-prompt-rule-no-space": "─" * 100 + "\n❯x\n" + "─" * 100 + "\n",
    "latin1-bytes": bytes(range(256)).decode("latin-1"),
    "controls": "".join(map(chr, range(0, 32))) * 3,
    "escapes-only": "\x1b[2J\x1b[H\x1b[?25l\x1b]0;claude\x07\x1b[0m\n\x1b[K\n",
    "replacement-chars": "\ufffd" * 200,
    "lone-prompt": "❯ \n",
    "half-csi": "❯ \x1b[",
}


@pytest.mark.parametrize(
    "case,agent",
    [
        (case, agent)
        for case in HALF_DRAWN
        for agent in ("claude", "codex", "shell")
        # a bare prompt is half a Claude screen but a whole shell screen (tested below)
        if not (agent == "shell" and case in ("lone-prompt", "half-csi"))
    ],
)
def test_half_drawn_screen_holds(case, agent):
    s = read_screen(HALF_DRAWN[case], agent)
    assert not may_ring(s), s
    assert "screen reader error" not in s.reason
    if agent in ("claude", "codex"):
        assert not s.composer_readable and s.draft is None


@pytest.mark.parametrize("case", ["lone-prompt", "half-csi"])
def test_a_bare_prompt_is_a_prompt_for_a_generic_agent(case):
    # What is half a Claude screen is a complete shell prompt: the generic rules apply.
    assert may_ring(read_screen(HALF_DRAWN[case], "shell"))


@pytest.mark.parametrize("cut", range(24, 31))
def test_claude_screen_cut_off_around_the_composer(cut):
    # The capture stops somewhere in the composer box / footer: readable only once both
    # rules are there.
    lines = load("claude-code/idle-empty.txt").split("\n")[:cut]
    s = read_screen("\n".join(lines), "claude")
    if cut >= 29:
        assert may_ring(s)
    else:
        assert not may_ring(s) and not s.composer_readable


def test_claude_composer_not_at_the_bottom_is_not_empty():
    lines = load("claude-code/idle-empty.txt").split("\n")
    lines[29:] = [f"  footer line {i}" for i in range(12)]
    s = read_screen("\n".join(lines), "claude")
    assert not may_ring(s)


# --------------------------------------------------------------------------- approval prompts


def _claude_approval_100() -> list[str]:
    return rewrap(load("claude-code/approval-prompt.txt"), 100).split("\n")


@pytest.mark.parametrize("ansi", [False, True])
def test_claude_approval_at_100x30_bottom_anchored(ansi):
    name = "claude-code/approval-prompt." + ("ansi" if ansi else "txt")
    lines = rewrap(load(name), 100).split("\n")
    last = max(i for i, l in enumerate(lines) if strip_ansi(l).strip())
    window = lines[last - 29 : last + 1]
    s = read_screen("\n".join(window), "claude")
    assert s.approval and not s.composer_readable and not may_ring(s), s


@pytest.mark.parametrize("cut", range(0, 30))
def test_claude_approval_at_100x30_cut_off_at_the_bottom(cut):
    lines = _claude_approval_100()
    rule = next(i for i, l in enumerate(lines) if l.startswith("─"))
    last = max(i for i, l in enumerate(lines) if l.strip())
    end = min(rule + cut, last)
    window = lines[max(0, end - 29) : end + 1]
    s = read_screen("\n".join(window), "claude")
    assert not may_ring(s), s
    if end > rule + 1:  # the dialog's title (and more) is on screen
        assert s.approval, s


@pytest.mark.parametrize("prompt", ["! ls -la", "!", "& run in background", "> "])
def test_claude_composer_in_a_mode_we_do_not_know_is_unreadable_not_a_dialog(prompt):
    s = read_screen(claude_with([prompt]), "claude")
    assert not s.composer_readable and not s.approval and not may_ring(s), s
    assert "prompt we do not know" in s.reason


def test_claude_approval_text_in_the_transcript_above_a_live_composer_is_not_a_prompt():
    lines = load("claude-code/idle-empty.txt").split("\n")
    lines[6:10] = [" Do you want to proceed?", " ❯ 1. Yes", "   2. No", " Esc to cancel"]
    s = read_screen("\n".join(lines), "claude")
    assert not s.approval and may_ring(s)


def test_claude_choice_list_below_the_composer_is_an_approval():
    lines = load("claude-code/idle-empty.txt").split("\n")
    lines[29:] = ["", " ❯ 1. Yes", "   2. No", ""]
    s = read_screen("\n".join(lines), "claude")
    assert s.approval and not may_ring(s)


def codex_modal(
    *,
    history: str = "rebuild the release",
    title: str = "Would you like to run the following command?",
    footer: str = "Press enter to confirm or esc to cancel",
) -> list[str]:
    """A Codex command-approval overlay at 100x30, as the public sources describe it."""
    top = [
        "",
        "  >_ OpenAI Codex (v0.169.0)",
        "     /tmp/cxwork",
        "",
        f"› {history}",
        "",
        "• I'll rebuild the release from scratch.",
        "",
    ]
    modal = [
        "",
        f"  {title}",
        "",
        "  Reason: rebuild the release",
        "",
        "  $ rm -rf build && make release",
        "",
        "› 1. Yes, proceed (y)",
        "  2. Yes, and don't ask again for commands that start with `rm -rf build` (p)",
        "  3. No, and tell Codex what to do differently (esc)",
        "",
        f"  {footer}",
    ]
    return top + [""] * (30 - len(top) - len(modal)) + modal


def codex_modal_ansi(lines: list[str]) -> str:
    out = []
    for line in lines:
        if line.startswith("› 1."):
            line = "\x1b[36m\x1b[1m› 1. Yes, proceed\x1b[0m\x1b[2m (y)\x1b[0m"
        elif line.startswith("  Would") or line.startswith("  Allow"):
            line = "  \x1b[1m" + line[2:] + "\x1b[0m"
        elif line.startswith("  Press") or line.startswith("  ↑"):
            line = "  \x1b[2m" + line[2:] + "\x1b[0m"
        elif line.startswith("› "):
            line = "\x1b[48;5;237m\x1b[1m›\x1b[22m " + line[2:] + "\x1b[49m"
        out.append(line)
    return "\n".join(out)


@pytest.mark.parametrize(
    "variant",
    [
        {},
        {"title": "Allow command?"},
        {"title": "Would you like to make the following edits?"},
        {"history": "Explain this codebase"},  # a past message equal to a placeholder
        {"footer": "↑/↓ to move"},  # footer wording we do not know
    ],
)
@pytest.mark.parametrize("ansi", [False, True])
def test_codex_approval_modal(variant, ansi):
    lines = codex_modal(**variant)
    text = codex_modal_ansi(lines) if ansi else "\n".join(lines)
    s = read_screen(text, "codex")
    assert s.approval and not s.composer_readable and s.draft is None and not may_ring(s), s
    for width in (40, 60):
        assert not may_ring(read_screen(rewrap(text, width), "codex"))


@pytest.mark.parametrize("keep", range(1, 13))
def test_codex_approval_modal_cut_off_at_the_bottom(keep):
    lines = codex_modal(history="Explain this codebase")
    first_modal = next(i for i, l in enumerate(lines) if "Would you like" in l)
    window = lines[: first_modal + keep]
    s = read_screen("\n".join(window), "codex")
    assert s.approval and not may_ring(s), s


def test_codex_unknown_modal_under_a_placeholder_like_history_line_holds():
    lines = [
        "",
        "  >_ OpenAI Codex (v0.169.0)",
        "",
        "› Explain this codebase",
        "",
        "• Sure.",
        "",
        "  Select a theme",
        "",
        "  Pick how code is highlighted.",
        "",
        "    dark",
        "    light",
        "    solarized",
        "",
        "  enter to pick, q to leave",
    ]
    s = read_screen("\n".join(lines), "codex")
    assert not may_ring(s), s


def test_codex_trust_dialog_is_a_modal():
    lines = [
        "",
        "  Do you trust the contents of this directory?",
        "",
        "› 1. Yes, continue",
        "  2. No, quit",
        "",
        "  Press enter to continue",
    ]
    s = read_screen("\n".join(lines), "codex")
    assert s.approval and not may_ring(s)


@pytest.mark.parametrize(
    "spinner,footer,working",
    [
        ("✽ Embellishing…", "  ⏸ manual mode on", True),  # spinner alone
        ("", "  ⏸ manual mode on · esc to interrupt", True),  # footer alone
        ("✻ Thinking… (3s · ↑ 1.2k tokens · esc to interrupt)", "  ⏸ manual mode on", True),
        ("· Pondering…", "", True),
        ("* Working...", "", True),
        ("✢ Cooking…", "", True),
        ("✻ Worked for 1m 3s", "  ⏸ manual mode on", False),  # a finished turn's summary
        ("", "  ⏸ manual mode on", False),
    ],
)
def test_claude_working_signals(spinner, footer, working):
    lines = load("claude-code/working.txt").split("\n")
    lines[24], lines[29] = spinner, footer
    s = read_screen("\n".join(lines), "claude")
    assert s.working == working and s.draft == "", s
    assert may_ring(s) == (not working)


def test_codex_working_line_above_the_composer():
    lines = load("codex/idle-empty.txt").split("\n")
    lines[24] = "• Working (12s • esc to interrupt)"
    s = read_screen("\n".join(lines), "codex")
    assert s.working and s.draft == "" and not may_ring(s)
    lines[24] = "◦ Working (3s)"
    assert read_screen("\n".join(lines), "codex").working


# --------------------------------------------------------------------------- generic agents


@pytest.mark.parametrize(
    "line,draft",
    [
        ("user@host:~/work$", ""),
        ("user@host:~/work$ ", ""),
        ("user@host:~/work$ ls -la", "ls -la"),
        ("root@box:/# ", ""),
        ("host% ", ""),
        (">>> ", ""),
        (">>> print(1)", "print(1)"),
        ("❯ ", ""),
        ("❯", ""),
        ("› ", ""),
        ("›\xa0hello", "hello"),
        ("postgres=> select 1;", "select 1;"),
        ("$ echo $ HOME", "echo $ HOME"),
        (f"› {WAKE}", WAKE),
    ],
)
def test_generic_prompt(line, draft):
    s = read_screen(f"some output\n{line}\n\n", "shell")
    assert s.composer_readable and s.draft == draft, s
    assert may_ring(s) == (draft == "")


@pytest.mark.parametrize(
    "line",
    [
        "Downloading... 45%",
        "</html>",
        "no prompt on this line",
        "Proceed? [y/N] ",
    ],
)
def test_generic_line_without_a_prompt_is_unreadable(line):
    s = read_screen(f"{line}\n", "shell")
    assert not s.composer_readable and s.draft is None and not may_ring(s)


def test_generic_uses_the_cursor_line():
    text = "build ok\n$ \n-- status: 3 jobs --\n"
    assert not read_screen(text, "shell").composer_readable  # last line has no prompt
    assert may_ring(read_screen(text, "shell", cursor=(2, 1)))
    s = read_screen("$ make\nmaking...\n", "shell", cursor=(7, 0))
    assert s.draft == "make" and not may_ring(s)


@pytest.mark.parametrize("cursor", [(3, 0), (0, 99), (-1, 0), (0, -1), ("x", 0), (1,), None])
def test_generic_cursor_that_does_not_fit_the_prompt_holds(cursor):
    text = "user@host:~$\n"
    s = read_screen(text, "shell", cursor=cursor)
    if cursor is None:
        assert may_ring(s)
    else:
        assert not may_ring(s) and not s.composer_readable, s


@pytest.mark.parametrize(
    "screen",
    [
        "⠋ compiling\n$ ",
        "thinking... (esc to interrupt)\n❯ ",
    ],
)
def test_generic_working(screen):
    s = read_screen(screen, "shell")
    assert s.working and s.draft == "" and not may_ring(s)


@pytest.mark.parametrize(
    "screen",
    [
        "Remove build/? [y/N] ",
        "Overwrite? (y/n) > ",
        " Do you want to proceed?\n ❯ 1. Yes\n   2. No\n\n Esc to cancel\n",
        "Allow command?\n  rm -rf build\n› 1. Yes\n  2. No\n",
    ],
)
def test_generic_approval(screen):
    s = read_screen(screen, "shell")
    assert s.approval and not may_ring(s), s


SIMULATED_QUESTION = [
    "simulated crew jack — type a message",
    "› /approve",
    "Allow command?  rm -rf build/",
    "  1. Yes",
    "  2. No",
    "Press enter to confirm or esc to cancel",
]


def test_generic_question_holds_until_a_new_prompt_is_drawn_after_it():
    waiting = "\n".join(SIMULATED_QUESTION) + "\n"
    s = read_screen(waiting, "shell", cursor=(len(SIMULATED_QUESTION[-1]) + 1, 5))
    assert s.approval and not may_ring(s), s
    answered = "\n".join(SIMULATED_QUESTION[:-1] + [SIMULATED_QUESTION[-1] + " y", "›"]) + "\n"
    s = read_screen(answered, "shell", cursor=(2, 6))
    assert not s.approval and may_ring(s), s
    # the program then hides its prompt for a while: unreadable, but no longer a question
    hidden = answered.replace("\n›\n", "\n› /noprompt 2\n(composer hidden)\n\n")
    s = read_screen(hidden, "shell", cursor=(0, 8))
    assert not s.approval and not s.composer_readable and not may_ring(s), s


def test_generic_choice_list_under_the_cursor_is_an_approval():
    screen = "Pick one:\n› 1. keep going\n  2. stop\n"
    s = read_screen(screen, "shell", cursor=(2, 1))
    assert s.approval and not may_ring(s), s


# --------------------------------------------------------------------------- purity


def test_module_is_pure_stdlib():
    source = REPO / "captain_tui" / "runtime" / "pane_reader.py"
    tree = ast.parse(source.read_text(encoding="utf-8"))
    imported = set()
    for node in ast.walk(tree):
        if isinstance(node, ast.Import):
            imported.update(a.name.split(".")[0] for a in node.names)
        elif isinstance(node, ast.ImportFrom):
            imported.add((node.module or "").split(".")[0])
    assert imported - {"__future__"} <= set(sys.stdlib_module_names), imported
    assert not {"subprocess", "os", "libtmux", "socket"} & imported


# --------------------------------------------------------------------------- properties

_SAFE_ESCAPES = [
    "\x1b[0m",
    "\x1b[m",
    "\x1b[1m",
    "\x1b[22m",
    "\x1b[31m",
    "\x1b[39m",
    "\x1b[4m",
    "\x1b[7m",
    "\x1b[27m",
    "\x1b[38;5;196m",
    "\x1b[38;5;231m",
    "\x1b[48;5;237m",
    "\x1b[49m",
    "\x1b[38;2;255;255;255m",
    "\x1b[1;38;5;174m",
    "\x1b[2J",
    "\x1b[H",
    "\x1b[3;4H",
    "\x1b[K",
    "\x1b[?25l",
    "\x1b[?25h",
    "\x1b]0;✳ claude\x07",
    "\x1b]8;;https://example.com\x1b\\",
    "\x1b(B",
    "\x1b=",
    "\x1bPq#0;2;0;0;0\x1b\\",
    "\x9b0m",
]
_DIM_ESCAPES = [
    "\x1b[2m",
    "\x1b[90m",
    "\x1b[38;5;246m",
    "\x1b[38;2;128;128;128m",
    "\x1b[38:5:244m",
    "\x1b[0;2m",
]

_base_char = st.characters(exclude_categories=("Cs",)).filter(
    lambda c: c != "\x1b" and not "\x80" <= c <= "\x9f"
)
_glyph_lines = st.sampled_from(
    [
        "─" * 100,
        "─" * 40,
        "─" * 3,
        "─",
        "❯",
        "❯ ",
        "❯\xa0",
        "❯\xa0 ",
        "› Ask Codex to do anything",
        "› Explain this codebase",
        "›",
        "› hello",
        "  gpt-5 default · /tmp/cxwork",
        "  ? for shortcuts",
        "✽ Embellishing…",
        "  ⏸ manual mode on · esc to interrupt",
        " Do you want to proceed?",
        " ❯ 1. Yes",
        "   2. No",
        " Esc to cancel · Tab to amend",
        "  Press enter to confirm or esc to cancel",
        "› 1. Yes, proceed (y)",
        "user@host:~$",
        "$ ls",
        "$",
        "⠋ loading",
        "",
        "   ",
        "\xa0",
        "Input disabled.",
        "> ",
        "45%",
        "# ",
    ]
)
_line = st.one_of(
    _glyph_lines,
    st.text(alphabet=_base_char, max_size=24),
    st.builds(lambda s: "❯\xa0" + s, st.text(alphabet=_base_char, max_size=12)),
    st.builds(lambda s: "› " + s, st.text(alphabet=_base_char, max_size=12)),
    st.builds(lambda s: "$ " + s, st.text(alphabet=_base_char, max_size=12)),
)


@st.composite
def _screens(draw):
    """Random screens: free-form lines, or a real capture with random edits."""
    if draw(st.booleans()) and (FIXTURES / "claude-code").is_dir():
        name = draw(st.sampled_from([f"{n}.txt" for n in EXPECTED]))
        lines = load(name).split("\n")
        for _ in range(draw(st.integers(0, 4))):
            op = draw(st.sampled_from(["replace", "delete", "insert"]))
            i = draw(st.integers(0, max(0, len(lines) - 1)))
            if op == "delete" and lines:
                del lines[i]
            elif op == "insert":
                lines.insert(i, draw(_line))
            elif lines:
                lines[i] = draw(_line)
    else:
        lines = draw(st.lists(_line, max_size=30))
    return "\n".join(lines)


def _insert(text: str, inserts: list[tuple[int, str]]) -> str:
    """Insert whole escape sequences at positions of the base text (never inside another)."""
    cuts = sorted((pos % (len(text) + 1), esc) for pos, esc in inserts)
    out, prev = [], 0
    for p, esc in cuts:
        out += [text[prev:p], esc]
        prev = p
    return "".join(out) + text[prev:]


def _blank(line: str) -> bool:
    return line.strip(" \xa0") == ""


def _rule_ish(line: str) -> bool:
    return "─" in line and set(line) <= {"─", " ", "\xa0"}


def _oracle(plain: str, agent: str, dim: bool) -> bool:
    """Does ``plain`` really hold an empty composer line for ``agent``?

    ``dim`` allows the text on that line to be a placeholder drawn dim (the capture has
    a dim/grey escape somewhere).
    """
    lines = plain.split("\n")
    if agent == "claude":
        for i in range(1, len(lines)):
            if not re.match(r"❯(?:[ \xa0]|$)", lines[i]) or not _rule_ish(lines[i - 1]):
                continue
            if not dim and not _blank(lines[i][1:]):
                continue
            for j in range(i + 1, len(lines)):
                if _rule_ish(lines[j]):
                    return True
                if not dim and not _blank(lines[j]):
                    break
        return False
    if agent == "codex":
        for line in lines:
            m = re.match(r"›[ \xa0](.*)\Z", line)
            if m and (
                m.group(1).rstrip(" \xa0") in CODEX_PLACEHOLDERS or (dim and not _blank(m.group(1)))
            ):
                return True
        return False
    nonblank = [line for line in lines if not _blank(line)]
    return bool(nonblank) and nonblank[-1].rstrip(" \xa0")[-1:] in set("$#%>❯›")


_AGENTS = st.sampled_from(["claude", "codex", "shell"])
_PROPERTY = settings(
    max_examples=150,
    deadline=None,
    suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large],
)


@_PROPERTY
@given(
    base=_screens(),
    agent=_AGENTS,
    inserts=st.lists(st.tuples(st.integers(0, 10**6), st.sampled_from(_SAFE_ESCAPES)), max_size=12),
)
def test_property_escapes_that_are_not_dim_change_nothing(base, agent, inserts):
    plain = read_screen(base, agent)
    coloured = read_screen(_insert(base, inserts), agent)
    assert coloured == plain


@_PROPERTY
@given(
    base=_screens(),
    agent=_AGENTS,
    inserts=st.lists(
        st.tuples(st.integers(0, 10**6), st.sampled_from(_SAFE_ESCAPES + _DIM_ESCAPES)), max_size=12
    ),
)
def test_property_only_a_real_empty_composer_rings(base, agent, inserts):
    text = _insert(base, inserts)
    s = read_screen(text, agent)
    assert (s.draft is None) == (not s.composer_readable)
    assert s.reason and "\n" not in s.reason and "screen reader error" not in s.reason
    if may_ring(s):
        dim = any(esc in _DIM_ESCAPES for _, esc in inserts)
        assert _oracle(base, agent, dim), (agent, s)


_anything = st.text(max_size=600)
_junk_escape = st.builds(
    lambda p, f: "\x1b[" + p + f,
    st.text(alphabet="0123456789;:?<>=", max_size=8),
    st.sampled_from(list("mHJKlhABCD@~") + ["", "\n"]),
)


@_PROPERTY
@given(
    text=st.one_of(_anything, _screens()),
    agent=st.sampled_from(["claude", "codex", "shell", "", "pi", "Claude", "CODEX", "bash"]),
    inserts=st.lists(
        st.tuples(
            st.integers(0, 10**6),
            st.one_of(st.sampled_from(_SAFE_ESCAPES + _DIM_ESCAPES), _junk_escape),
        ),
        max_size=10,
    ),
    cursor=st.one_of(st.none(), st.tuples(st.integers(-5, 200), st.integers(-5, 60))),
)
def test_property_any_text_never_raises_and_fails_closed(text, agent, inserts, cursor):
    text = _insert(text, inserts)
    s = read_screen(text, agent, cursor=cursor)
    assert isinstance(s, Screen)
    assert isinstance(s.approval, bool) and isinstance(s.working, bool)
    assert isinstance(s.composer_readable, bool)
    assert (s.draft is None) == (not s.composer_readable)
    assert s.reason and "\n" not in s.reason and "screen reader error" not in s.reason
    if may_ring(s):
        kind = agent.lower() if agent.lower() in ("claude", "codex") else "shell"
        plain = strip_ansi(text)
        if kind == "shell" and cursor is not None:
            plain = "\n".join(plain.split("\n")[: cursor[1] + 1])
        assert _oracle(plain, kind, dim=True), (kind, s)


def test_every_real_capture_is_in_the_repository():
    """A clone has the captures: a missing one fails here instead of skipping the tests."""
    missing = [name for name in CAPTURES if not (FIXTURES / name).is_file()]
    assert missing == [], f"missing captures under {FIXTURES}: {missing}"
