"""Spend measured from an agent's own transcript (state/crew/spend.py): each turn counted
once by its ID, whatever the transcript does (truncated, rewritten, enormous, garbage), and
priced by the table (or config.toml), never with an invented zero."""

from __future__ import annotations

import json
import os
from pathlib import Path

import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from state.crew import spend
from state.errors import CaptainError
from state.home import Home

KEY, AID = "jack", "asg_1"


def claude_line(mid: str, model: str, i: int, o: int, cr: int = 0, cw: int = 0, **extra) -> str:
    return json.dumps(
        {
            "type": "assistant",
            "uuid": f"u-{mid}-{o}",
            "requestId": f"req_{mid}",
            "message": {
                "id": mid,
                "role": "assistant",
                "model": model,
                "content": [{"type": "text", "text": "x" * 40}],
                "usage": {
                    "input_tokens": i,
                    "output_tokens": o,
                    "cache_read_input_tokens": cr,
                    "cache_creation_input_tokens": cw,
                },
            },
            **extra,
        }
    )


def user_line(text: str = "hello") -> str:
    return json.dumps({"type": "user", "message": {"role": "user", "content": text}})


def write(path: Path, lines: list[str], *, newline_at_end: bool = True) -> None:
    path.write_text("\n".join(lines) + ("\n" if newline_at_end else ""))


def append(path: Path, lines: list[str]) -> None:
    with path.open("a") as f:
        f.write("".join(line + "\n" for line in lines))


def tokens(s: spend.Spend) -> tuple[int, int, int, int, int]:
    return (s.input_tokens, s.output_tokens, s.cache_read_tokens, s.cache_write_tokens, s.turns)


SONNET = "claude-sonnet-4-5-20250929"


def sonnet_cost(i: int, o: int, cr: int, cw: int) -> float:
    return round((i * 3.0 + o * 15.0 + cr * 0.30 + cw * 3.75) / 1e6, 6)


def test_nothing_measured_is_zero_turns_and_zero_cost(home: Home):
    got = spend.assignment_spend(home, KEY, AID)
    assert got == spend.Spend(0, 0, 0, 0, 0, 0.0, ())
    assert spend.measure(home, KEY, AID, "claude", None) == got


def test_a_message_written_as_several_lines_is_one_turn(home: Home, tmp_path: Path):
    t = tmp_path / "t.jsonl"
    # one message, three content blocks: three lines with one ID; then a second message
    write(
        t,
        [
            user_line(),
            claude_line("msg_a", SONNET, 11, 7, 100, 20),
            claude_line("msg_a", SONNET, 11, 7, 100, 20),
            claude_line("msg_a", SONNET, 11, 7, 100, 20),
            claude_line("msg_b", SONNET, 13, 9, 200, 0),
        ],
    )
    got = spend.measure(home, KEY, AID, "claude", str(t))
    assert tokens(got) == (24, 16, 300, 20, 2)
    assert got.cost_usd == sonnet_cost(24, 16, 300, 20)
    assert got.unpriced_models == ()
    # measured again with nothing new, and again after the same lines are appended again
    assert spend.measure(home, KEY, AID, "claude", str(t)) == got
    append(t, [claude_line("msg_a", SONNET, 11, 7, 100, 20)])
    assert spend.measure(home, KEY, AID, "claude", str(t)) == got
    assert spend.assignment_spend(home, KEY, AID) == got


def test_reading_is_incremental_and_a_later_line_with_larger_figures_raises_the_turn(
    home: Home, tmp_path: Path
):
    t = tmp_path / "t.jsonl"
    write(t, [claude_line("msg_a", SONNET, 10, 1)])
    assert tokens(spend.measure(home, KEY, AID, "claude", str(t))) == (10, 1, 0, 0, 1)
    record = json.loads((home.root / "spend" / f"{KEY}.json").read_text())
    assert record["sources"][str(t)]["offset"] == t.stat().st_size
    # the streamed message's last line carries its final output count: raised, not added
    append(t, [claude_line("msg_a", SONNET, 10, 42), claude_line("msg_c", SONNET, 5, 3)])
    assert tokens(spend.measure(home, KEY, AID, "claude", str(t))) == (15, 45, 0, 0, 2)


def test_a_truncated_or_rewritten_transcript_counts_no_turn_twice(home: Home, tmp_path: Path):
    t = tmp_path / "t.jsonl"
    lines = [claude_line(f"msg_{n}", SONNET, 10 + n, n + 1) for n in range(6)]
    write(t, lines)
    first = spend.measure(home, KEY, AID, "claude", str(t))
    assert tokens(first) == (75, 21, 0, 0, 6)
    write(t, lines[:2])  # truncated (a compaction, an editor)
    assert spend.measure(home, KEY, AID, "claude", str(t)) == first
    # rewritten longer, the old turns shuffled in among new ones, with a different head
    write(t, [user_line("rewritten"), lines[3], claude_line("msg_new", SONNET, 100, 50), *lines])
    after = spend.measure(home, KEY, AID, "claude", str(t))
    assert tokens(after) == (175, 71, 0, 0, 7)
    # replaced by a new file (new inode) holding the same turns: still counted once
    other = tmp_path / "t2.jsonl"
    write(other, lines)
    os.replace(other, t)
    assert spend.measure(home, KEY, AID, "claude", str(t)) == after


def test_garbage_lines_are_skipped_and_the_rest_counted(home: Home, tmp_path: Path):
    t = tmp_path / "t.jsonl"
    garbage = [
        "{not json",
        '"usage"',
        "[1, 2, 3]",
        json.dumps({"type": "assistant", "message": "usage"}),
        json.dumps({"type": "assistant", "message": {"id": 5, "model": SONNET, "usage": {}}}),
        json.dumps({"type": "assistant", "message": {"id": "m", "model": SONNET, "usage": 7}}),
        claude_line("msg_neg", SONNET, -5, True),  # nonsense counts are no figures
        claude_line("msg_float", SONNET, 1.5, "9"),  # type: ignore[arg-type]
        claude_line("msg_syn", "<synthetic>", 0, 0),
        "\x00\xff" * 50,
        "[" * 100_000 + "usage",  # deeper than the JSON parser goes
    ]
    raw = "\n".join([claude_line("msg_ok1", SONNET, 10, 5), *garbage, ""])
    t.write_bytes(raw.encode("utf-8", "surrogateescape") + b"\xff\xfe usage \x80\n")
    append(t, [claude_line("msg_ok2", SONNET, 20, 6)])
    got = spend.measure(home, KEY, AID, "claude", str(t))
    assert tokens(got) == (30, 11, 0, 0, 2)
    # a figure no agent could report is bounded, not trusted into a float overflow
    append(t, [claude_line("msg_huge", SONNET, 10**400, 1)])
    huge = spend.measure(home, KEY, AID, "claude", str(t))
    assert huge.turns == 3 and huge.input_tokens <= 30 + 10**15
    assert huge.cost_usd is not None


def test_an_enormous_transcript_is_read_in_bounded_steps(home: Home, tmp_path: Path, monkeypatch):
    monkeypatch.setattr(spend, "READ_MAX", 256 * 1024)
    monkeypatch.setattr(spend, "LINE_MAX", 64 * 1024)
    t = tmp_path / "t.jsonl"
    blob = json.dumps({"type": "user", "message": {"content": "y" * (1024 * 1024)}})
    lines = [claude_line("msg_1", SONNET, 1, 1), blob, claude_line("msg_2", SONNET, 2, 2)]
    # an enormous line holding a fake usage record is never parsed (it is no usage record)
    lines.append(claude_line("msg_fake", SONNET, 999, 999) + " " * (200 * 1024))
    lines.append(claude_line("msg_3", SONNET, 3, 3))
    write(t, lines)
    seen = []
    for _ in range(20):
        got = spend.measure(home, KEY, AID, "claude", str(t))
        seen.append(got.turns)
        if got.turns == 3:
            break
    assert tokens(got) == (6, 6, 0, 0, 3)
    assert seen[0] == 1  # the first call read only its share
    assert len(seen) > 3


def test_a_last_line_without_its_newline_is_counted_once_and_read_again_whole(
    home: Home, tmp_path: Path
):
    t = tmp_path / "t.jsonl"
    whole = claude_line("msg_a", SONNET, 10, 1)
    write(t, [whole], newline_at_end=False)
    assert spend.measure(home, KEY, AID, "claude", str(t)).turns == 1
    with t.open("a") as f:
        f.write("\n")
    assert spend.measure(home, KEY, AID, "claude", str(t)).turns == 1
    # half a line, then the rest: counted when whole
    half = claude_line("msg_b", SONNET, 20, 2)
    with t.open("a") as f:
        f.write(half[:50])
    assert spend.measure(home, KEY, AID, "claude", str(t)).turns == 1
    with t.open("a") as f:
        f.write(half[50:] + "\n")
    assert tokens(spend.measure(home, KEY, AID, "claude", str(t))) == (30, 3, 0, 0, 2)


def test_a_model_missing_from_the_table_gives_tokens_and_no_cost(home: Home, tmp_path: Path):
    t = tmp_path / "t.jsonl"
    write(t, [claude_line("msg_a", SONNET, 10, 1), claude_line("msg_b", "claude-next-9", 7, 3)])
    got = spend.measure(home, KEY, AID, "claude", str(t))
    assert tokens(got) == (17, 4, 0, 0, 2)
    assert got.cost_usd is None
    assert got.unpriced_models == ("claude-next-9",)


def test_config_prices_override_and_add_models(home: Home, tmp_path: Path):
    t = tmp_path / "t.jsonl"
    write(t, [claude_line("msg_a", SONNET, 1000, 100), claude_line("msg_b", "my-model", 10, 20)])
    (home.root / "config.toml").write_text(
        '[prices."my-model"]\ninput = 1.0\noutput = 2.0\ncache_read = 0.1\ncache_write = 1.5\n'
        '[prices."claude-sonnet-4-5"]\ninput = 6.0\n'  # the rest stay the table's
    )
    got = spend.measure(home, KEY, AID, "claude", str(t))
    assert got.unpriced_models == ()
    assert got.cost_usd == round((1000 * 6.0 + 100 * 15.0 + 10 * 1.0 + 20 * 2.0) / 1e6, 6)
    assert spend.PRICES_DATE and spend.price_of(None, "my-model") is None


@pytest.mark.parametrize(
    "text",
    [
        '[prices."m"]\ninput = -1\n',
        '[prices."m"]\noutput = inf\n',
        '[prices."m"]\ncache_read = "cheap"\n',
        '[prices."m"]\ninput = true\n',
        "prices = 3\n",
        "[prices]\nm = 3\n",
        '[prices."' + "m" * 101 + '"]\ninput = 1\n',
    ],
)
def test_a_price_that_does_not_fit_is_invalid_config(tmp_path: Path, text: str):
    home = Home(tmp_path / "h")
    (home.root / "config.toml").write_text(text)
    with pytest.raises(CaptainError) as err:
        home.config()
    assert err.value.code == "invalid_config"
    assert "prices" in err.value.message


def test_turns_go_to_the_assignment_measured_for(home: Home, tmp_path: Path):
    t = tmp_path / "t.jsonl"
    write(t, [claude_line("msg_a", SONNET, 10, 1)])
    spend.measure(home, KEY, "asg_1", "claude", str(t))
    append(t, [claude_line("msg_b", SONNET, 20, 2)])
    second = spend.measure(home, KEY, "asg_2", "claude", str(t))
    assert tokens(second) == (20, 2, 0, 0, 1)
    assert tokens(spend.assignment_spend(home, KEY, "asg_1")) == (10, 1, 0, 0, 1)


def test_unreadable_sources_and_records_never_raise(home: Home, tmp_path: Path):
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)  # no writer: a read would block forever
    sources = (str(tmp_path / "absent.jsonl"), str(tmp_path), "/dev/null", "\x00bad", str(fifo))
    for source in sources:
        assert spend.measure(home, KEY, AID, "claude", source).turns == 0
    assert spend.measure(home, KEY, AID, "unknown-agent", str(tmp_path)).turns == 0
    record = home.root / "spend" / f"{KEY}.json"
    record.write_text("[not an object")
    assert spend.assignment_spend(home, KEY, AID).turns == 0
    t = tmp_path / "t.jsonl"
    write(t, [claude_line("msg_a", SONNET, 10, 1)])
    assert spend.measure(home, KEY, AID, "claude", str(t)).turns == 1
    record.write_text(json.dumps({"sources": 5, "seen": {"x": 1}, "assignments": []}))
    assert spend.measure(home, KEY, AID, "claude", str(t)).turns == 1


def codex_lines(model: str, calls: list[tuple[int, int, int]]) -> list[str]:
    """A Codex rollout: session_meta, turn_context, then one token_count per model call
    (input including cached, cached, output) with its running total."""
    lines = [
        json.dumps({"type": "session_meta", "payload": {"id": "sess-1", "cwd": "/x"}}),
        json.dumps({"type": "turn_context", "payload": {"model": model, "cwd": "/x"}}),
    ]
    total = [0, 0, 0]
    for i, c, o in calls:
        total = [total[0] + i, total[1] + c, total[2] + o]
        usage = lambda a, b, d: {  # noqa: E731
            "input_tokens": a,
            "cached_input_tokens": b,
            "output_tokens": d,
            "reasoning_output_tokens": 0,
            "total_tokens": a + d,
        }
        info = {"total_token_usage": usage(*total), "last_token_usage": usage(i, c, o)}
        lines.append(
            json.dumps({"type": "event_msg", "payload": {"type": "token_count", "info": info}})
        )
        lines.append(json.dumps({"type": "response_item", "payload": {"type": "message"}}))
    return lines


def test_codex_rollout_each_call_once_and_cached_input_priced_as_cache(home: Home, tmp_path):
    t = tmp_path / "rollout.jsonl"
    lines = codex_lines("gpt-5-codex", [(100, 40, 7), (200, 150, 9)])
    # Codex repeats a token_count (rate-limit updates): the same running total, one call
    write(t, [*lines, lines[-2]])
    got = spend.measure(home, KEY, AID, "codex", str(t))
    assert tokens(got) == (110, 16, 190, 0, 2)
    assert got.cost_usd == round((110 * 1.25 + 16 * 10.0 + 190 * 0.125) / 1e6, 6)
    write(t, lines)  # rewritten: nothing new
    assert spend.measure(home, KEY, AID, "codex", str(t)) == got


def pi_line(entry_id: str, model: str, i: int, o: int, cr: int = 0, cw: int = 0) -> str:
    usage = {"input": i, "output": o, "cacheRead": cr, "cacheWrite": cw, "totalTokens": i + o}
    message = {"role": "assistant", "model": model, "usage": usage, "content": []}
    return json.dumps({"type": "message", "id": entry_id, "parentId": None, "message": message})


def test_pi_session_each_entry_once(home: Home, tmp_path):
    t = tmp_path / "session.jsonl"
    user = json.dumps({"type": "message", "id": "u1", "message": {"role": "user", "content": "x"}})
    write(t, [user, pi_line("e1", "claude-haiku-4-5", 10, 4, 2, 1), pi_line("e1", "x", 10, 4)])
    append(t, [pi_line("e2", "claude-haiku-4-5", 20, 6)])
    got = spend.measure(home, KEY, AID, "pi", str(t))
    assert tokens(got) == (30, 10, 2, 1, 2)
    assert got.cost_usd == round((30 * 1.0 + 10 * 5.0 + 2 * 0.10 + 1 * 1.25) / 1e6, 6)


def test_hooks_measuring_at_once_count_each_turn_once(home: Home, tmp_path: Path):
    """Four processes (as hooks of one crew would be) measure one transcript at once, while
    it grows: every turn counts once (the turn IDs do it; the crew's spend lock keeps one
    measurement from undoing another's)."""
    import subprocess
    import sys

    t = tmp_path / "t.jsonl"
    write(t, [claude_line(f"msg_{n}", SONNET, 10, 1) for n in range(50)])
    code = (
        "import sys\n"
        "from pathlib import Path\n"
        "from state.home import Home\n"
        "from state.crew import spend\n"
        "home = Home(Path(sys.argv[1]))\n"
        "for _ in range(20):\n"
        "    spend.measure(home, 'jack', 'asg_1', 'claude', sys.argv[2])\n"
    )
    procs = [
        subprocess.Popen([sys.executable, "-c", code, str(home.root), str(t)]) for _ in range(4)
    ]
    append(t, [claude_line(f"msg_{n}", SONNET, 10, 1) for n in range(50, 80)])
    assert [p.wait(timeout=60) for p in procs] == [0, 0, 0, 0]
    got = spend.measure(home, KEY, AID, "claude", str(t))
    assert tokens(got) == (800, 80, 0, 0, 80)


@settings(max_examples=25, derandomize=True, deadline=None)
@given(
    garbage=st.lists(st.binary(max_size=300), max_size=8),
    cuts=st.lists(st.integers(min_value=0, max_value=4000), max_size=4),
    repeats=st.lists(st.integers(min_value=0, max_value=5), max_size=6),
)
def test_garbage_cuts_and_repeats_never_inflate_the_figure(
    tmp_path_factory, garbage, cuts, repeats
):
    """Six turns, garbage lines between them, some turns written again, the file measured
    at arbitrary cut points as it is written: the figure is the six turns, once each."""
    home = Home(tmp_path_factory.mktemp("h"))
    t = home.root.parent / f"{home.root.name}.jsonl"
    turns = [claude_line(f"msg_{n}", SONNET, 100 + n, 10 + n).encode() + b"\n" for n in range(6)]
    body = b""
    for n, line in enumerate(turns):
        body += line
        if n < len(garbage):
            body += garbage[n].replace(b"\n", b" ") + b"\n"
    for r in repeats:
        body += turns[r]
    written = 0
    for cut in sorted(c % (len(body) + 1) for c in cuts):
        with t.open("ab") as f:
            f.write(body[written:cut])
        written = max(written, cut)
        spend.measure(home, KEY, AID, "claude", str(t))
    with t.open("ab") as f:
        f.write(body[written:])
    got = spend.measure(home, KEY, AID, "claude", str(t))
    assert tokens(got) == (615, 75, 0, 0, 6)


def test_a_figure_is_shown_in_cents_and_below_a_cent_only_in_fractions():
    def figure(cost, turns=1):
        return spend.Spend(10, 5, 0, 0, turns, cost, () if cost is not None else ("m",))

    assert spend.shown(figure(0.2356)) == "$0.24"  # a column of cents, not of 4 places
    assert spend.shown(figure(1.8)) == "$1.80"
    assert spend.shown(figure(0.0042)) == "$0.0042"
    assert spend.shown(figure(0.00001)) == "<$0.0001"
    assert spend.shown(figure(0.0, turns=0)) == "—"
    assert spend.shown(figure(None)) == "? 15 tok"
