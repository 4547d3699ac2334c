"""Reading pi's pane (captain_tui.runtime.pane_reader, agent "pi"): real captures of pi 0.73.1
(tests/fixtures/README.md says where they came from), variants, and a property.

The doorbell may ring only on (approval False, composer readable, draft "", not working):
every test here checks a capture reads right, or that a screen that is not an idle, empty
pi editor never reads that way.
"""

from __future__ import annotations

import os
import re
from pathlib import Path

import pytest
from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from captain_tui.runtime.pane_reader import _scan, read_screen, strip_ansi

REPO = Path(__file__).resolve().parents[2]
FIXTURES = Path(os.environ.get("CAPTAIN_FIXTURES", REPO / "tests" / "fixtures" / "screens"))
PI = FIXTURES / "pi"
RULE = "─" * 120
CLEAR = (False, True, "", False)

# Expected reading of every capture: (approval, composer_readable, draft, working).
EXPECTED = {
    "idle-empty": CLEAR,
    "draft": (False, True, "Please refactor the parser module", False),
    "working": (False, True, "", True),
    # the gate's dialog replaces the editor while the turn (and its spinner) goes on
    "approval-prompt": (True, False, None, True),
    "after-turn": CLEAR,
    "after-approval-denied": CLEAR,  # "Blocked by user" is history; the editor is idle
    "extra-no-extensions-shell-runs-unprompted": CLEAR,
}


def capture(name: str, ext: str) -> str:
    return (PI / f"{name}.{ext}").read_text(encoding="utf-8")


def reading(text: str) -> tuple:
    s = read_screen(text, "pi")
    return (s.approval, s.composer_readable, s.draft, s.working)


def clear(text: str) -> bool:
    return reading(text) == CLEAR


def editor_rows(lines: list[str]) -> tuple[int, int]:
    """(top rule, bottom rule) of the idle capture's editor, found by hand."""
    rules = [i for i, line in enumerate(lines) if strip_ansi(line).startswith("─" * 20)]
    return rules[-2], rules[-1]


def with_editor(text: str, rows: list[str]) -> str:
    """``text`` (an idle capture) with the rows between its editor's rules replaced."""
    lines = text.split("\n")
    top, bottom = editor_rows(lines)
    return "\n".join(lines[: top + 1] + rows + lines[bottom:])


# --------------------------------------------------------------------------- the captures


@pytest.mark.parametrize("ext", ["txt", "ansi"])
@pytest.mark.parametrize("name", sorted(EXPECTED))
def test_each_capture_reads_as_expected(name, ext):
    assert reading(capture(name, ext)) == EXPECTED[name]


def test_captures_are_all_here():
    missing = [
        f"{n}.{e}" for n in EXPECTED for e in ("txt", "ansi") if not (PI / f"{n}.{e}").is_file()
    ]
    assert missing == [], f"missing captures under {PI}: {missing}"


def test_reasons_name_what_holds():
    assert "extension dialog" in read_screen(capture("approval-prompt", "ansi"), "pi").reason
    assert "Working" in read_screen(capture("working", "ansi"), "pi").reason
    assert "refactor" in read_screen(capture("draft", "ansi"), "pi").reason


# --------------------------------------------------------------------------- variants


@pytest.mark.parametrize("ext", ["txt", "ansi"])
def test_a_draft_typed_into_the_idle_editor_is_a_draft(ext):
    typed = "mail from the captain is waiting; keep working"
    row = typed + ("\x1b[7m \x1b[0m" if ext == "ansi" else "")
    assert reading(with_editor(capture("idle-empty", ext), [row])) == (False, True, typed, False)


@pytest.mark.parametrize("ext", ["txt", "ansi"])
def test_a_multi_line_draft_is_every_row(ext):
    screen = with_editor(capture("idle-empty", ext), ["first line", "", "third line"])
    assert reading(screen) == (False, True, "first line\n\nthird line", False)


@pytest.mark.parametrize("ext", ["txt", "ansi"])
def test_empty_rows_typed_with_shift_enter_are_a_draft(ext):
    approval, readable, draft, _ = reading(with_editor(capture("idle-empty", ext), ["", ""]))
    assert (approval, readable) == (False, True) and draft


def test_a_draft_of_spaces_shows_by_the_cursor_and_is_a_draft():
    # pi draws its cursor as one reverse-video cell: after three typed spaces it is at col 3
    screen = with_editor(capture("idle-empty", "ansi"), ["   \x1b[7m \x1b[0m"])
    assert reading(screen) == (False, True, "   ", False)


def test_an_ansi_editor_row_without_a_cursor_is_unreadable():
    screen = with_editor(capture("idle-empty", "ansi"), ["\x1b[39m \x1b[0m"])
    assert reading(screen)[1] is False


def test_a_scrolled_editor_is_a_draft_even_when_its_visible_rows_are_blank():
    text = capture("idle-empty", "txt")
    lines = text.split("\n")
    top, bottom = editor_rows(lines)
    lines[top] = "─── ↑ 3 more " + "─" * 107
    s = read_screen("\n".join(lines), "pi")
    assert s.composer_readable and s.draft


@pytest.mark.parametrize("ext", ["txt", "ansi"])
def test_a_draft_while_working_is_both(ext):
    screen = with_editor(capture("working", ext), ["steer: also the tests"])
    assert reading(screen) == (False, True, "steer: also the tests", True)


@pytest.mark.parametrize(
    "hint",
    ["↑↓ navigate  enter select  escape/ctrl+c cancel", "enter submit  escape/ctrl+c cancel"],
)
def test_any_extension_dialog_in_the_editor_is_an_approval(hint):
    screen = with_editor(capture("idle-empty", "txt"), [" Name the branch:", "", f" {hint}"])
    approval, readable, draft, _ = reading(screen)
    assert approval and not readable and draft is None


@pytest.mark.parametrize("ext", ["txt", "ansi"])
@pytest.mark.parametrize(
    "cut", ["bottom rule", "top rule", "footer and bottom rule", "everything below the top rule"]
)
def test_a_half_drawn_editor_is_never_clear(ext, cut):
    lines = capture("idle-empty", ext).split("\n")
    top, bottom = editor_rows(lines)
    if cut == "bottom rule":
        lines = lines[:bottom] + lines[bottom + 1 :]
    elif cut == "top rule":
        lines = lines[:top] + lines[top + 1 :]
    elif cut == "footer and bottom rule":
        lines = lines[:bottom]
    else:
        lines = lines[: top + 1]
    assert not clear("\n".join(lines))


def test_rules_of_different_lengths_are_unreadable():
    lines = capture("idle-empty", "txt").split("\n")
    _, bottom = editor_rows(lines)
    lines[bottom] = "─" * 80
    assert reading("\n".join(lines))[1] is False


def test_a_long_tail_under_the_editor_is_not_a_footer():
    lines = capture("idle-empty", "txt").split("\n")
    _, bottom = editor_rows(lines)
    lines[bottom + 1 : bottom + 1] = [f"line {i} printed under the editor" for i in range(12)]
    assert not clear("\n".join(lines))


def test_an_old_empty_editor_in_the_transcript_does_not_hide_the_real_one():
    # a rule-blank-rule block higher up (e.g. pasted into the transcript) is not the editor
    draft = with_editor(capture("idle-empty", "txt"), ["the real draft"])
    lines = draft.split("\n")
    lines[1:1] = [RULE, "", RULE]
    assert reading("\n".join(lines)) == (False, True, "the real draft", False)


@pytest.mark.parametrize(
    "garbage",
    [
        "",
        "\n\n\n",
        "─" * 120,
        "\x1b[7m \x1b[0m",
        "garbage\x00\x1b[31mred" + "\n" * 20,
        "\n".join([RULE, "", RULE]) + "\n" + "x\n" * 20,
        " pi v0.73.1\n escape interrupt",
    ],
)
def test_garbage_is_never_clear(garbage):
    assert not clear(garbage)


def test_another_agents_capture_is_never_a_clear_pi_editor():
    for path in FIXTURES.glob("*/*"):
        if path.parent.name != "pi" and path.suffix in (".txt", ".ansi"):
            assert not clear(path.read_text(encoding="utf-8")), path


# --------------------------------------------------------------------------- the property

_SPINNER = " ⠋ Working..."
_LINES = st.sampled_from(
    [
        "",
        " ",
        RULE,
        "─" * 60,
        "─── ↑ 2 more " + "─" * 107,
        _SPINNER,
        " → Yes",
        "   No",
        " ↑↓ navigate  enter select  escape/ctrl+c cancel",
        "\x1b[7m \x1b[0m",
        " \x1b[7m \x1b[0m",
        "\x1b[0m",
        "\x1b[7m",
        "Please refactor",
        "/home/u/agentlb/work-pi",
        "❯ ",
        "› ",
    ]
)
_CHARS = st.sampled_from(list(" x─⠋→\x1b[7m\x1b[0m\xa0\t\u200b"))


@st.composite
def _mutated(draw):
    name = draw(st.sampled_from(sorted(EXPECTED)))
    lines = capture(name, draw(st.sampled_from(["txt", "ansi"]))).split("\n")
    for _ in range(draw(st.integers(1, 4))):
        op = draw(st.sampled_from(["insert", "delete", "edit", "truncate"]))
        i = draw(st.integers(0, max(0, len(lines) - 1)))
        if op == "insert":
            lines.insert(i, draw(_LINES))
        elif op == "delete" and lines:
            del lines[i]
        elif op == "edit" and lines:
            line = lines[i]
            at = draw(st.integers(0, len(line)))
            cut = draw(st.integers(0, 3))
            lines[i] = line[:at] + draw(_CHARS) + line[at + cut :]
        elif op == "truncate":
            lines = lines[:i]
    return "\n".join(lines)


def _is_idle_empty_editor(text: str) -> bool:
    """The oracle, stricter than the reader and written apart from it: the last two
    full-length rules, equal, one blank row between them holding exactly one
    reverse-video cell at column 0 (ANSI) or nothing (plain), at most a short footer of
    plain text under them, no dialog hint anywhere under the upper rule, no spinner."""
    lines, styles = _scan(text)
    rules = [
        i
        for i, line in enumerate(lines)
        if len(line.rstrip(" \xa0")) >= 10 and set(line.rstrip(" \xa0")) == {"─"}
    ]
    if len(rules) < 2:
        return False
    top, bottom = rules[-2:]
    if bottom != top + 2 or lines[top].rstrip(" \xa0") != lines[bottom].rstrip(" \xa0"):
        return False
    if lines[top + 1].strip(" \xa0") != "":
        return False
    if styles is not None:
        revs = [c for c, f in enumerate(styles[top + 1]) if f & 2]
        if revs != [0]:
            return False
    tail = [line for line in lines[bottom + 1 :] if line.strip(" \xa0")]
    if len(tail) > 8 or any(
        re.search(r"navigate|enter (select|submit)|cancel|more ─", line) for line in tail
    ):
        return False
    return not any(
        line.lstrip(" \xa0")[:1] in "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏" and line.strip(" \xa0")
        for line in lines[max(0, top - 6) : top]
    )


@settings(max_examples=300, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(screen=_mutated())
def test_never_clear_unless_the_editor_is_exactly_idle_and_empty(screen):
    s = read_screen(screen, "pi")
    if s.composer_readable and s.draft == "" and not s.approval and not s.working:
        assert _is_idle_empty_editor(screen), s
    if s.draft == "":
        assert s.composer_readable  # an empty draft is only ever read off a readable editor


@settings(max_examples=150, deadline=None)
@given(
    typed=st.text(min_size=1, max_size=80).filter(lambda t: t.strip(" \xa0") != ""),
    ext=st.sampled_from(["txt", "ansi"]),
)
def test_anything_typed_into_the_idle_editor_is_never_empty(typed, ext):
    screen = with_editor(capture("idle-empty", ext), typed.split("\n"))
    assert not clear(screen)
