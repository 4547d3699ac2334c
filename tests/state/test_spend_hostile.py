"""A transcript shaped to make the crew's hooks slow (state/crew/spend.py): a PreToolUse
hook measures the spend on EVERY tool call of Claude Code and Codex, so what one call may
cost is bounded by the shape of no file: millions of tiny lines, millions of lines that look
like usage records, hundreds of thousands of real-looking turns. Each is still read to its
end over later calls, and a real turn after the garbage is counted."""

from __future__ import annotations

import json
import time
from pathlib import Path

import pytest

from state.crew import spend
from state.home import Home

KEY, AID = "jack", "asg_1"
SONNET = "claude-sonnet-4-5"
# one measure() may cost this much wall time on a loaded 2-core runner (the crew-side
# budget is 150 ms; before the bound, each of these shapes cost 3-16 s per call)
CALL_MAX_S = 1.0


def real_turn(mid: str, i: int) -> bytes:
    message = {"id": mid, "model": SONNET, "usage": {"input_tokens": i, "output_tokens": 0}}
    return json.dumps({"type": "assistant", "message": message}).encode() + b"\n"


SHAPES = {
    # 4 M lines of two bytes: no line is worth parsing, but each one was visited in Python
    "tiny lines": b"x\n" * (4 * 1024 * 1024),
    # a million lines naming "usage", none of them JSON
    "usage words": b'"usage"\n' * 1_000_000,
    # half a million JSON lines with an empty usage
    "empty usages": b'{"type":"assistant","message":{"usage":{}}}\n' * 500_000,
    # 200,000 distinct turns of one token each (each one is counted)
    "many turns": b"".join(
        b'{"type":"assistant","message":{"id":"m%d","model":"x","usage":{"input_tokens":1}}}\n' % n
        for n in range(200_000)
    ),
}


@pytest.mark.parametrize("shape", list(SHAPES))
def test_no_transcript_makes_one_hook_call_slow(home: Home, tmp_path: Path, shape: str):
    t = tmp_path / "t.jsonl"
    t.write_bytes(SHAPES[shape])
    offsets = [0]
    for call in range(3):
        began = time.perf_counter()
        spend.measure(home, KEY, AID, "claude", str(t))
        took = time.perf_counter() - began
        assert took < CALL_MAX_S, f"call {call} took {took:.2f} s on {shape}"
        offsets.append(_offset(home, t))
    # each call got somewhere (it is bounded, not stuck), or to the end
    size = t.stat().st_size
    assert all(b > a or b == size for a, b in zip(offsets, offsets[1:], strict=False)), offsets


def test_a_turn_behind_a_long_run_of_lookalike_lines_is_counted_once(home: Home, tmp_path: Path):
    t = tmp_path / "t.jsonl"
    garbage = b'"usage"\n' * (3 * spend.PARSE_MAX) + b"x\n" * 100_000
    t.write_bytes(garbage + real_turn("msg_real", 1000) + garbage + real_turn("msg_2", 10))
    for _ in range(20):
        got = spend.measure(home, KEY, AID, "claude", str(t))
        if _offset(home, t) == t.stat().st_size:
            break
    assert (got.input_tokens, got.turns) == (1010, 2)
    assert spend.measure(home, KEY, AID, "claude", str(t)).turns == 2


def test_many_turns_in_one_call_keep_the_newest_hashes(home: Home, tmp_path: Path):
    """Turns past SEEN_MAX in one call: the oldest hashes are forgotten, the newest kept, and
    a turn read again is not counted again."""
    t = tmp_path / "t.jsonl"
    n = spend.SEEN_MAX + 500
    t.write_bytes(b"".join(real_turn(f"m{i}", 1).rstrip(b"\n") + b"\n" for i in range(n)))
    for _ in range(n // spend.PARSE_MAX + 2):
        got = spend.measure(home, KEY, AID, "claude", str(t))
    assert got.turns == n
    seen = _record(home)["seen"]
    assert len(seen) == spend.SEEN_MAX
    # the newest turn, written again, is counted once
    with t.open("ab") as f:
        f.write(real_turn(f"m{n - 1}", 1))
    assert spend.measure(home, KEY, AID, "claude", str(t)).turns == n


def _record(home: Home) -> dict:
    return json.loads((home.store.dir("spend", create=False) / f"{KEY}.json").read_bytes())


def _offset(home: Home, t: Path) -> int:
    return _record(home).get("sources", {}).get(str(t), {}).get("offset", 0)


def test_a_recorder_that_read_an_older_figure_never_lowers_the_attempts(home: Home, project: Path):
    """Two turns' detached recorders racing: the one started by the first Stop read its
    figure, the one started by the second wrote the larger figure, then the first wrote.
    The attempt keeps the larger figure (a figure only grows), both ledger events stay
    true, and a figure that did grow (a streamed turn raised, a new turn) is still put."""
    from support.crew import hire

    from state.crew.spend import Spend
    from state.work import ledger, spent

    jack = hire(home, project, "Jack", "Write the docs")
    older = Spend(100, 10, 0, 0, 1, 0.00045, ())
    newer = Spend(300, 30, 0, 0, 2, 0.00135, ())
    assert spent.record(home, jack.assignment_id, newer, actor="Jack")
    assert not spent.record(home, jack.assignment_id, older, actor="Jack")  # the stale one
    attempt = ledger.get(home, jack.work_id).attempts[-1]
    assert (attempt.turns, attempt.input_tokens, attempt.cost_usd) == (2, 300, 0.00135)
    raised = Spend(300, 45, 0, 0, 2, 0.00158, ())  # the same turns, one raised
    assert spent.record(home, jack.assignment_id, raised, actor="Jack")
    assert ledger.get(home, jack.work_id).attempts[-1].output_tokens == 45


def test_the_crews_record_never_outgrows_what_the_store_reads(
    home: Home, tmp_path: Path, monkeypatch
):
    """A long-lived crew, or one whose transcripts name many models, grows its spend record
    one assignment at a time. Past what the store reads (1 MiB) the record would be
    quarantined and measuring would start again: every transcript read from its start, its
    turns counted a second time for the assignment at hand. The record is kept under that
    size (the oldest assignments' figures dropped: the ledger keeps each on its attempt),
    and the current assignment's figure is never counted twice."""
    from state import store

    monkeypatch.setattr(store, "MAX_RECORD_BYTES", 128 * 1024)  # 1 MiB: the same, 8x slower
    t = tmp_path / "t.jsonl"
    for a in range(40):
        lines = [
            json.dumps(
                {
                    "type": "assistant",
                    "message": {
                        "id": f"m{a}.{m}",
                        "model": f"model-{m:02d}-" + "x" * 88,
                        "usage": {"input_tokens": 1},
                    },
                }
            ).encode()
            + b"\n"
            for m in range(spend.MODELS_MAX)
        ]
        with t.open("ab") as f:
            f.write(b"".join(lines))
        got = spend.measure(home, KEY, f"asg_{a}", "claude", str(t))
        assert got.turns == spend.MODELS_MAX, (a, got.turns)
    path = home.store.dir("spend", create=False) / f"{KEY}.json"
    assert path.stat().st_size <= store.MAX_RECORD_BYTES
    # read again: nothing counted twice, the newest assignments' figures kept
    assert spend.measure(home, KEY, "asg_39", "claude", str(t)).turns == spend.MODELS_MAX
    assert spend.assignment_spend(home, KEY, "asg_38").turns == spend.MODELS_MAX
