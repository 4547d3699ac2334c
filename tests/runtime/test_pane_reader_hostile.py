"""The pane reader against screens built to look like an idle, empty composer when a person's
draft (or a dialog) is up: real pi 0.73.1 and Codex 0.169.0 captures, altered. Each case
read as clear (the doorbell would type) before its fix.
"""

from __future__ import annotations

import os
from pathlib import Path

import pytest

from captain_tui.runtime.pane_reader import read_screen

REPO = Path(__file__).resolve().parents[2]
SCREENS = Path(os.environ.get("CAPTAIN_FIXTURES", REPO / "tests" / "fixtures" / "screens"))
RULE = "─" * 120


def load(agent_dir: str, name: str, ext: str) -> str:
    return (SCREENS / agent_dir / f"{name}.{ext}").read_text(encoding="utf-8")


def reads_empty(text: str, agent: str) -> bool:
    s = read_screen(text, agent)
    return s.composer_readable and s.draft == ""


# -- Codex: a typed line with the placeholder's wording -------------------------------------

DIM_PLACEHOLDER = "\x1b[2mAsk Codex to do anything"


@pytest.mark.parametrize(
    "typed", ["Explain this codebase", "Ask Codex to do anything", "Write tests for @filename"]
)
def test_codex_typed_text_worded_like_a_placeholder_is_a_draft(typed):
    # In a colour capture the placeholder is dim; the same words in the normal colour were
    # typed (by the person, or a ring that did not submit) and are a draft.
    base = load("codex-0.169-120x40", "idle-empty", "ansi")
    assert base.count(DIM_PLACEHOLDER) == 1 and reads_empty(base, "codex")
    screen = base.replace(DIM_PLACEHOLDER, "\x1b[0m" + typed)
    s = read_screen(screen, "codex")
    assert not (s.composer_readable and s.draft == ""), s
    assert s.draft == typed


def test_codex_dim_placeholder_still_reads_empty_and_plain_falls_back_on_wording():
    for ext in ("ansi", "txt"):
        assert reads_empty(load("codex-0.169-120x40", "idle-empty", ext), "codex")


# -- pi: a draft row that is a rule ---------------------------------------------------------


def _pi_editor(ext: str) -> tuple[list[str], int]:
    lines = load("pi", "idle-empty", ext).split("\n")
    tops = [i for i, line in enumerate(lines) if line.endswith(RULE)]
    assert len(tops) == 2 and tops[1] == tops[0] + 2, tops
    return lines, tops[0]


@pytest.mark.parametrize("ext", ["ansi", "txt"])
@pytest.mark.parametrize(
    "draft",
    [["", RULE], [RULE], ["notes", "", RULE], ["", RULE, "", RULE]],
    ids=["blank-then-rule", "rule", "text-blank-rule", "two-rules"],
)
def test_pi_draft_holding_a_pane_wide_rule_is_never_empty(ext, draft):
    # The person's draft (pasted text) holds a row of ─ exactly as wide as pi's rules, the
    # cursor on an empty row under it: that row and the real bottom rule look like an
    # empty editor, but the draft above it would be sent with whatever is typed.
    lines, top = _pi_editor(ext)
    pen = "\x1b[39m" if ext == "ansi" else ""
    rows = [pen + r for r in draft]
    screen = "\n".join(lines[: top + 1] + rows + lines[top + 1 :])
    assert reads_empty("\n".join(lines), "pi")
    s = read_screen(screen, "pi")
    assert not (s.composer_readable and s.draft == ""), s


@pytest.mark.parametrize("ext", ["ansi", "txt"])
def test_pi_real_captures_still_read_as_before(ext):
    for name in ("idle-empty", "after-turn", "after-approval-denied"):
        assert reads_empty(load("pi", name, ext), "pi"), name
    assert read_screen(load("pi", "approval-prompt", ext), "pi").approval
    assert read_screen(load("pi", "draft", ext), "pi").draft == "Please refactor the parser module"
