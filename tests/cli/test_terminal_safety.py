"""Nothing stored reaches the captain's terminal raw: what a terminal would obey is escaped.

Text in the home was written by others — a hook's summary of what an agent said, a worker's
holder name, a token's label, a requester, a cancel's or replay's reason, a webhook's
delivery id and event — and the CLI prints it. Hypothesis writes every
kind of hostile text into those records (C0 and C1 controls, ESC/OSC/CSI sequences that
set a window title or clear the screen, bidi overrides that reverse a command, lone
surrogates) and runs the commands that print them, for people and as JSON: nothing in
``state.inputs.TERMINAL_UNSAFE`` reaches stdout or stderr, and the JSON still parses to the
very same text.
"""

from __future__ import annotations

import contextlib
import io
import json
import tempfile
from pathlib import Path

from hypothesis import HealthCheck, given, settings
from hypothesis import strategies as st

from captain_tui.cli.main import main
from state.clock import now
from state.crew import notify, protocol
from state.errors import CaptainError
from state.home import Home
from state.inputs import TERMINAL_UNSAFE, summarize
from state.work import deliveries, ledger, replay, tokens

SEQUENCES = [
    "\x1b]0;owned\x07",
    "\x1b[2J\x1b[H",
    "\x1b[8m",
    "\x9b31m",
    "\x1bP+q\x1b\\",
    "\u202eexe.txt",
    "\u2066rm -rf\u2069",
    "\r",
    "\x08\x08",
    "\ud800",
    "\x00",
]
hostile = st.lists(
    st.one_of(
        st.sampled_from(SEQUENCES),
        st.text(alphabet=st.characters(max_codepoint=0x2070), max_size=6),
    ),
    min_size=1,
    max_size=6,
).map("".join)


def run(home: Home, *argv: str) -> tuple[str, str]:
    out, err = io.StringIO(), io.StringIO()
    with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
        main([*argv, "--home", str(home.root)])
    return out.getvalue(), err.getvalue()


def plant(home: Home, text: str) -> dict[str, str]:
    """The hostile text in every record a command below prints, where the record takes it
    (a record that refuses it at intake is protected there)."""
    # first: this Home believes a later change only once the file is still (docs/store.md)
    (home.root / "config.toml").write_text('[endpoints.gh]\nsecret = "s"\n')
    jack = protocol.recruit(home, "Jack", "a task", cwd=str(home.root))
    planted = {}
    with contextlib.suppress(CaptainError):
        if notify.signal(
            home,
            "Jack",
            "awaiting_approval",
            "permission prompt: " + text,
            at=now(),
            incarnation_id=jack.incarnation_id,
        ):
            planted["summary"] = text
    try:
        item = ledger.accept(home, source="chat", input={"text": "x"}, requester="r:" + text)
        planted["requester"] = text
    except CaptainError:
        item = ledger.accept(home, source="chat", input={"text": "x"}, requester="r")
    with contextlib.suppress(CaptainError):
        ledger.claim(home, item.work_id, holder="h:" + text)
        planted["holder"] = text
    with contextlib.suppress(CaptainError):
        tokens.create(home, "member", "label:" + text)
        planted["label"] = text
    planted["work_id"] = item.work_id
    other = ledger.accept(home, source="chat", input={"text": "y"}, requester="r")
    planted["cancelled"] = other.work_id
    with contextlib.suppress(CaptainError):  # a cancel's reason is shown in work show
        ledger.cancel(home, other.work_id, actor="captain", reason="why: " + text)
        planted["reason"] = text
    with contextlib.suppress(CaptainError):  # a replay's reason too
        again = replay.replay(home, other.work_id, actor="captain", reason="again: " + text)
        planted["replay"] = again.work_id
    try:
        got = deliveries.ingest(home, "gh", "src:" + text, b"{}", event="push:" + text)
        planted["source_id"] = text
    except CaptainError:
        got = deliveries.ingest(home, "gh", "src", b"{}", event="push")
    planted["delivery_id"] = got.delivery.delivery_id
    return planted


@settings(max_examples=60, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(text=hostile)
def test_nothing_a_terminal_would_obey_is_printed(text):
    with tempfile.TemporaryDirectory() as tmp:
        home = Home(Path(tmp) / "home")
        planted = plant(home, text)
        # wait first as JSON (it delivers the notification once), then as a person (refused
        # as unacknowledged, and the refusal quotes the notification)
        delivered, _ = run(home, "wait", "Jack", "--timeout", "0", "--json")
        commands = [
            ("wait", "Jack", "--timeout", "0"),
            ("status",),
            ("work", "list"),
            ("work", "show", planted["work_id"]),
            ("work", "show", planted["cancelled"]),
            ("tokens", "list"),
            ("deliveries", "list"),
            ("deliveries", "show", planted["delivery_id"]),
        ]
        if "replay" in planted:
            commands.append(("work", "show", planted["replay"]))
        outputs = [(("wait", "--json"), delivered, "")]
        for argv in commands:
            for as_json in (False, True):
                out, err = run(home, *argv, *(["--json"] if as_json else []))
                outputs.append(((*argv, as_json), out, err))
                if as_json and out.strip():
                    json.loads(out.split("\n")[0])  # one valid JSON object per line
        for argv, out, err in outputs:
            for stream in (out, err):
                assert not TERMINAL_UNSAFE.search(stream), (argv, stream)
        # the JSON carries what was stored: escaped for the terminal, not changed
        if "summary" in planted:
            got = json.loads(delivered)
            assert got["summary"] == summarize("permission prompt: " + text)


def test_a_title_setting_summary_is_shown_escaped_in_wait():
    """The example: an ESC sequence in a hook's summary would set the captain's window
    title when ``captain wait`` printed it."""
    with tempfile.TemporaryDirectory() as tmp:
        home = Home(Path(tmp) / "home")
        jack = protocol.recruit(home, "Jack", "a task", cwd=tmp)
        notify.signal(
            home,
            "Jack",
            "awaiting_approval",
            "Bash: \x1b]0;pwned\x07ls \u202e",
            at=now(),
            incarnation_id=jack.incarnation_id,
        )
        out, _ = run(home, "wait", "Jack", "--timeout", "0")
        assert "\x1b" not in out and "\x07" not in out and "\u202e" not in out
        assert "\\x1b]0;pwned\\x07ls \\u202e" in out


def test_a_usage_error_echoes_argv_escaped(tmp_path):
    """argparse quotes what was typed back ("unrecognized arguments: ..."): a pasted ESC
    sequence is shown escaped, not obeyed."""
    err = io.StringIO()
    with contextlib.redirect_stderr(err), contextlib.suppress(SystemExit):
        main(["status", "\x1b]0;pwned\x07", "--home", str(tmp_path / "home")])
    assert "unrecognized arguments: \\x1b]0;pwned\\x07" in err.getvalue()
    assert not TERMINAL_UNSAFE.search(err.getvalue())
