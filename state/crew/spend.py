"""What each assignment cost: tokens read from what the agent itself records, priced by a
dated table (docs/ledger.md "Spend").

Crew-side: this runs inside an agent's Stop hook, so it imports no pydantic and reads
incrementally. Each crew has one record, ``spend/<crew key>.json``, published whole under
the crew's spend lock (never half-written):

- ``sources``: per transcript path, how far it has been read (``offset``), what the file
  was (inode, and a fingerprint of its first bytes: a truncated or rewritten file is read
  again from the start), and what its reader carries between lines (Codex's model);
- ``seen``: a short hash of every turn ID counted, so a turn read twice (a rewritten
  transcript, a line repeated, two hooks at once) is counted once;
- ``recent``: the figures of the newest turns, so a turn whose later line carries larger
  figures (a streamed message written in parts) is raised to them, never added twice;
- ``assignments``: per assignment ID, tokens and turns per model.

Figures are never invented: a line that is not JSON, not an object, or has no usable
usage is skipped; a counted turn whose model has no price makes ``cost_usd`` None (the
tokens are still counted), never zero.

Tokens are kept the way the price table charges them: ``input_tokens`` is input read at
the full price (for OpenAI's figures, ``input_tokens`` less ``cached_input_tokens``),
``cache_read_tokens`` input served from the prompt cache, ``cache_write_tokens`` input
written to it (Anthropic's ``cache_creation_input_tokens``).
"""

from __future__ import annotations

import json
import os
import re
import stat
from collections.abc import Callable, Iterator
from datetime import datetime
from pathlib import Path
from typing import Any, NamedTuple

from state.home import Home
from state.store import loads_json

__all__ = [
    "PRICES",
    "PRICES_DATE",
    "Spend",
    "assignment_spend",
    "measure",
    "price_of",
]

# -- the price table -----------------------------------------------------------------------

# USD per million tokens: (input, output, cache_read, cache_write). The providers' published
# list prices (standard tier; Anthropic's 5-minute cache writes) on PRICES_DATE. A model not
# here has no price: its turns are counted and its cost is None. config.toml overrides or
# adds a model: [prices."model-name"] input = 3.0, output = 15.0, cache_read = 0.3,
# cache_write = 3.75 (state/config.py checks it).
PRICES_DATE = "2025-11-24"
PRICES: dict[str, tuple[float, float, float, float]] = {
    # Anthropic
    "claude-opus-4-5": (5.0, 25.0, 0.50, 6.25),
    "claude-opus-4-1": (15.0, 75.0, 1.50, 18.75),
    "claude-opus-4": (15.0, 75.0, 1.50, 18.75),
    "claude-sonnet-4-5": (3.0, 15.0, 0.30, 3.75),
    "claude-sonnet-4": (3.0, 15.0, 0.30, 3.75),
    "claude-3-7-sonnet": (3.0, 15.0, 0.30, 3.75),
    "claude-haiku-4-5": (1.0, 5.0, 0.10, 1.25),
    "claude-3-5-haiku": (0.80, 4.0, 0.08, 1.0),
    # OpenAI (no charge for cache writes: they are priced as input)
    "gpt-5.1": (1.25, 10.0, 0.125, 1.25),
    "gpt-5.1-codex": (1.25, 10.0, 0.125, 1.25),
    "gpt-5.1-codex-mini": (0.25, 2.0, 0.025, 0.25),
    "gpt-5": (1.25, 10.0, 0.125, 1.25),
    "gpt-5-codex": (1.25, 10.0, 0.125, 1.25),
    "gpt-5-mini": (0.25, 2.0, 0.025, 0.25),
    "gpt-5-nano": (0.05, 0.40, 0.005, 0.05),
    "gpt-4.1": (2.0, 8.0, 0.50, 2.0),
    "gpt-4.1-mini": (0.40, 1.60, 0.10, 0.40),
    "o3": (2.0, 8.0, 0.50, 2.0),
    "o4-mini": (1.10, 4.40, 0.275, 1.10),
}
PRICE_FIELDS = ("input", "output", "cache_read", "cache_write")
# a provider's dated snapshot of a model is priced as the model: claude-sonnet-4-5-20250929
_DATED = re.compile(r"-(?:\d{8}|\d{4}-\d{2}-\d{2})$", re.ASCII)


def price_of(home: Home | None, model: str) -> tuple[float, float, float, float] | None:
    """USD per million tokens for ``model``: config.toml's ``[prices."model"]`` first, then
    the shipped table; the exact name, then without a date suffix. None: no price."""
    overrides: dict[str, Any] = {}
    if home is not None:
        found = home.config().get("prices")
        overrides = found if isinstance(found, dict) else {}
    for name in (model, _DATED.sub("", model)):
        row = overrides.get(name)
        if isinstance(row, dict):
            shipped = PRICES.get(name)
            # a field left out of the override keeps the table's figure (none: no price)
            values = []
            for i, field in enumerate(PRICE_FIELDS):
                got = row.get(field, shipped[i] if shipped else None)
                if got is None:
                    return None
                values.append(float(got))
            return (values[0], values[1], values[2], values[3])
        if name in PRICES:
            return PRICES[name]
    return None


# -- the figures ---------------------------------------------------------------------------

_COUNTS = ("input", "output", "cache_read", "cache_write")


class Spend(NamedTuple):  # not a dataclass: importing dataclasses costs a cold start ~5-10 ms
    """What was measured for one assignment. ``cost_usd`` is None when any counted turn's
    model has no price; 0.0 only when no turn was measured."""

    input_tokens: int
    output_tokens: int
    cache_read_tokens: int
    cache_write_tokens: int
    turns: int
    cost_usd: float | None
    unpriced_models: tuple[str, ...]


NOTHING = Spend(0, 0, 0, 0, 0, 0.0, ())


def _spend(home: Home | None, models: object) -> Spend:
    """An assignment's per-model figures, summed and priced."""
    if not isinstance(models, dict) or not models:
        return NOTHING
    sums = [0, 0, 0, 0]
    turns = 0
    cost: float | None = 0.0
    unpriced: list[str] = []
    for model, row in sorted(models.items()):
        if not isinstance(row, dict):
            continue
        counts = [_count(row.get(k)) for k in _COUNTS]
        n = _count(row.get("turns"))
        if not n:
            continue
        turns += n
        for i, c in enumerate(counts):
            sums[i] += c
        price = price_of(home, model)
        if price is None:
            unpriced.append(model)
            cost = None
        elif cost is not None:
            cost += sum(c * p for c, p in zip(counts, price, strict=True)) / 1_000_000
    if cost is not None:
        cost = round(cost, 6)
    return Spend(sums[0], sums[1], sums[2], sums[3], turns, cost, tuple(unpriced))


def _count(value: object) -> int:
    """A token count as stored or as an agent wrote it: a whole number >= 0, else 0."""
    if isinstance(value, bool) or not isinstance(value, int) or value < 0:
        return 0
    return min(value, 10**15)  # no agent spends more in one turn; garbage stays bounded


# -- the crew's record ---------------------------------------------------------------------

SEEN_MAX = 20_000  # turn hashes kept per crew (17 bytes each in the record)
RECENT_MAX = 64  # newest turns whose figures are kept, to raise a turn written in parts
MODELS_MAX = 32  # per assignment; more distinct model names than this is garbage
MODEL_MAX = 100  # characters of a model name kept
SOURCES_MAX = 16  # transcripts followed per crew (the newest kept)
# Bytes of transcript read per call (the rest next time): a turn's own lines are far
# fewer; catching up on a long transcript costs a few turns' hooks ~0.1 s each at most.
READ_MAX = 8 * 1024 * 1024
# A longer line is skipped unread (a tool call writing a huge file; its message's other
# lines carry the same ID and usage). Below READ_MAX, or such a line could never be read.
LINE_MAX = 4 * 1024 * 1024
HEAD = 256  # bytes of a transcript's start that say it is the same file
# The record's size at most, as a share of what the store reads back (MAX_RECORD_BYTES,
# 1 MiB): the turn hashes take ~400 KB of it, each assignment ~150 bytes a model.
RECORD_SHARE = 0.75
# Lines parsed per call (the rest next time): a line naming a usage word costs json.loads;
# a turn writes a few such lines, so a hook catches up within a call or two, and a file of
# a million lines that merely name the words costs each call ~10-30 ms, not seconds.
PARSE_MAX = 2_000


def _path(home: Home, key: str, *, create: bool) -> Path:
    return home.store.dir("spend", create=create) / f"{key}.json"


def _load(home: Home, key: str, *, create: bool = False) -> dict[str, Any]:
    """The crew's spend record; an empty one when absent. One that is not a JSON object is
    quarantined by the store (and measuring starts again)."""
    found = home.store.read_json(_path(home, key, create=create))
    return found if found is not None else {}


def assignment_spend(home: Home, key: str, assignment_id: str) -> Spend:
    """What has been measured for this crew's assignment so far (one small file read)."""
    try:
        record = _load(home, key)
    except Exception:  # noqa: BLE001 - a figure is never worth a refusal
        return NOTHING
    assignments = record.get("assignments")
    if not isinstance(assignments, dict):
        return NOTHING
    entry = assignments.get(assignment_id)
    return _spend(home, entry.get("models") if isinstance(entry, dict) else None)


def measure(
    home: Home,
    key: str,
    assignment_id: str,
    agent: str,
    source: str | None,
    *,
    previous: tuple[str, datetime] | None = None,
) -> Spend:
    """Read what the agent recorded in ``source`` since the last call, count each new turn
    once (by its ID) for ``assignment_id``, and return the assignment's total. Never raises
    on what the transcript holds: it counts what it can and moves on.

    ``previous``: the assignment this one was handed off from and when this one began. A
    turn the agent stamped before that moment is the previous assignment's (the last model
    call of a turn in which the crew said ``done``, measured only after the next assignment
    was given): it is never charged to this one or its budget."""
    reader = READERS.get(agent)
    if source and reader is not None:
        try:
            with home.store.lock(f"spend-{key}"):
                record = _load(home, key, create=True)
                record["schema"] = 1
                if _read_source(record, Path(source), reader, assignment_id, previous, agent):
                    home.store.publish(
                        _path(home, key, create=True), _encoded(record, assignment_id)
                    )
        except Exception:  # noqa: BLE001 - a figure is never worth failing a hook
            pass  # nothing published: the record is as it was, the next call tries again
    return assignment_spend(home, key, assignment_id)


def _encoded(record: dict[str, Any], keep: str) -> bytes:
    """The record as published, at most RECORD_SHARE of MAX_RECORD_BYTES: past it, the
    oldest assignments' figures are dropped (never ``keep``'s, the one being measured; each
    is on its attempt in the ledger), then the oldest turn hashes. A record the store would
    not read back would be quarantined, and every transcript read again from its start,
    its turns counted twice."""

    def dump() -> bytes:
        return json.dumps(record, separators=(",", ":")).encode()

    from state import store

    limit = int(store.MAX_RECORD_BYTES * RECORD_SHARE)
    data = dump()
    assignments = record.get("assignments")
    if len(data) > limit and isinstance(assignments, dict):
        excess = len(data) - limit
        for aid in list(assignments):
            if excess <= 0:
                break
            if aid != keep:
                excess -= len(json.dumps({aid: assignments.pop(aid)}, separators=(",", ":")))
        data = dump()
    seen = record.get("seen")
    while len(data) > limit and isinstance(seen, list) and seen:
        del seen[: max(1, len(seen) // 2)]
        data = dump()
    return data


def measure_current(home: Home, key: str, snapshot: Any, agent: str, source: str | None) -> Spend:
    """``measure`` for the crew's current assignment (``snapshot``: the crew's, a model or
    the fast path's plain record), a turn stamped before it began going to the one it was
    handed off from. The hooks' one way in."""
    current = snapshot.assignment
    handoff = getattr(current, "handoff_of", None)
    began = getattr(snapshot, "assigned_at", None)
    previous = (handoff, began) if handoff and isinstance(began, datetime) else None
    return measure(home, key, current.assignment_id, agent, source, previous=previous)


CATCH_UP_CALLS = 32  # measure calls at dismissal, each bounded by READ_MAX and PARSE_MAX


def catch_up(home: Home, key: str, snapshot: Any) -> Spend:
    """Every transcript the crew's hooks have named, read to its end for its current
    assignment (``measure_current``): called by the captain once the crew's pane is closed
    at dismissal, so the turn its Stop hook never measured (a crew dismissed mid-turn) is
    counted. Returns the assignment's figure; never raises."""
    try:
        sources = _load(home, key).get("sources")
    except Exception:  # noqa: BLE001 - a figure is never worth a refusal
        sources = None
    calls = CATCH_UP_CALLS  # in all: a record naming many huge files costs a bounded time
    for path, state in (sources if isinstance(sources, dict) else {}).items():
        agent = state.get("agent") if isinstance(state, dict) else None
        if isinstance(path, str) and isinstance(agent, str) and agent in READERS:
            while calls > 0:
                calls -= 1
                before = _offset_of(home, key, path)
                measure_current(home, key, snapshot, agent, path)
                if _offset_of(home, key, path) == before:
                    break
    return assignment_spend(home, key, snapshot.assignment.assignment_id)


def _offset_of(home: Home, key: str, path: str) -> object:
    try:
        sources = _load(home, key).get("sources")
    except Exception:  # noqa: BLE001
        return None
    state = sources.get(path) if isinstance(sources, dict) else None
    return state.get("offset") if isinstance(state, dict) else None


# -- reading a transcript ------------------------------------------------------------------


class Turn(NamedTuple):
    """One model call: its ID, model and figures (input, output, cache read, cache write),
    and when the agent stamped it (its line's ``timestamp``, None when it has none)."""

    turn_id: str
    model: str
    counts: tuple[int, int, int, int]
    at: object = None


# an agent's reader: one parsed line (and what it carries between lines) -> its turns
Reader = Callable[[dict[str, Any], dict[str, Any]], Iterator["Turn"]]


def _fingerprint(data: bytes) -> str:
    try:  # the C module itself: hashlib would load OpenSSL first (~10 ms of a hook's budget)
        from _blake2 import blake2b
    except ImportError:  # pragma: no cover - an interpreter without it
        from hashlib import blake2b
    return blake2b(data, digest_size=8).hexdigest()


def _read_source(
    record: dict[str, Any],
    path: Path,
    reader: Reader,
    assignment_id: str,
    previous: tuple[str, datetime] | None = None,
    agent: str = "",
) -> bool:
    """Read ``path`` from where this crew left it into ``record``; True when it changed."""
    try:
        fd = os.open(path, os.O_RDONLY | os.O_NONBLOCK)
    except (OSError, ValueError):
        return False  # not there (yet), or not ours to read: nothing measured
    try:
        st = os.fstat(fd)
        if not stat.S_ISREG(st.st_mode):
            return False
        sources = record.get("sources")
        if not isinstance(sources, dict):
            sources = record["sources"] = {}
        name = str(path)
        was = sources.get(name)
        state: dict[str, Any] = dict(was) if isinstance(was, dict) else {}
        head = os.pread(fd, HEAD, 0)
        offset = state.get("offset")
        if (
            not isinstance(offset, int)
            or isinstance(offset, bool)
            or offset < 0
            or offset > st.st_size  # truncated
            or state.get("inode") != st.st_ino
            or state.get("head") != _fingerprint(head[: min(HEAD, max(offset, 0))])
        ):
            # new, truncated or rewritten: from the start (counted turns stay counted)
            offset, state = 0, {"inode": st.st_ino}
        if offset == st.st_size and was is not None:
            return False
        kept = state.get("carry")
        carry: dict[str, Any] = kept if isinstance(kept, dict) else {}
        skipping = state.get("skipping") is True
        counted = _Counter(record, assignment_id, previous)
        end = offset
        parsed = 0
        for line, end, skipping in _lines(fd, offset, st.st_size, skipping):
            if line is not None:
                for turn in _turns(reader, line, carry):
                    counted.add(turn)
                parsed += 1
                if parsed >= PARSE_MAX:
                    break  # the rest next call, from just after this line
        counted.trim()
        state.update(
            offset=end,
            inode=st.st_ino,
            head=_fingerprint(os.pread(fd, min(HEAD, end), 0)),
            carry=carry,
            skipping=skipping,
            agent=agent,  # whose record it is: read again at dismissal (``catch_up``)
        )
        sources.pop(name, None)
        sources[name] = state  # newest last
        while len(sources) > SOURCES_MAX:
            sources.pop(next(iter(sources)))
        return True
    finally:
        os.close(fd)


def _lines(
    fd: int, offset: int, size: int, skipping: bool
) -> Iterator[tuple[bytes | None, int, bool]]:
    """The lines from ``offset`` worth parsing (``_WORDS``), at most READ_MAX bytes read:
    each such line (None for one too long to be a usage record, never kept whole), the
    offset to resume from after it, and whether that offset is inside such a line
    (``skipping``: its rest is skipped too). Lines naming none of the words are passed over
    by a regular expression, never visited one by one in Python: a transcript of millions of
    tiny lines costs a hook a scan, not a loop (``None`` items say how far it got)."""
    limit = min(size, offset + READ_MAX)
    pos = offset
    buf = bytearray()
    while pos < limit:
        chunk = os.pread(fd, min(1 << 20, limit - pos), pos)
        if not chunk:
            break
        pos += len(chunk)
        buf += chunk
        base = pos - len(buf)  # the file offset of buf[0]
        begin = 0
        if skipping:  # the rest of an overlong line, up to its newline
            nl = buf.find(b"\n")
            if nl < 0:
                buf.clear()
                yield None, pos, True
                continue
            begin, skipping = nl + 1, False
            yield None, base + begin, False
        last = buf.rfind(b"\n")  # lines after it are not whole yet
        while begin <= last and (found := _WORDS.search(buf, begin, last)) is not None:
            start = buf.rfind(b"\n", begin, found.start()) + 1 or begin
            nl = buf.find(b"\n", found.end())
            line = bytes(buf[start:nl]) if nl - start <= LINE_MAX else None
            begin = nl + 1
            yield line, base + begin, False
        if begin <= last:
            begin = last + 1  # whole lines naming no word: passed over
            yield None, base + begin, False
        del buf[:begin]
        if len(buf) > LINE_MAX:
            skipping = True
            buf.clear()
            yield None, pos, True
    if buf and not skipping and pos >= size:
        # the last line, whole but for its newline: counted now (its turn ID keeps it
        # once), and the offset left before it, so a line still being written is read
        # whole next time
        yield bytes(buf), pos - len(buf), False


# a line holding none of these carries no figure and no model for any reader
_WORTH_PARSING = (b'"usage"', b'"token_count"', b'"turn_context"', b'"session_meta"')
_WORDS = re.compile(b"|".join(re.escape(w) for w in _WORTH_PARSING))


def _turns(reader: Reader, line: bytes, carry: dict[str, Any]) -> list[Turn]:
    if not any(word in line for word in _WORTH_PARSING):
        return []  # most lines are tool output: never parsed
    try:
        data = loads_json(line)
    except ValueError:
        return []
    if not isinstance(data, dict):
        return []
    try:
        return list(reader(data, carry))
    except Exception:  # noqa: BLE001 - an odd record is skipped, never fatal
        return []


class _Counter:
    """Adds turns to one assignment of a crew's record, each turn ID once."""

    def __init__(
        self,
        record: dict[str, Any],
        assignment_id: str,
        previous: tuple[str, datetime] | None = None,
    ) -> None:
        self.previous = previous
        seen = record.get("seen")
        self.seen: list[str] = (
            [s for s in seen if isinstance(s, str)] if isinstance(seen, list) else []
        )
        self.known = set(self.seen)
        recent = record.get("recent")
        self.recent: dict[str, Any] = recent if isinstance(recent, dict) else {}
        assignments = record.get("assignments")
        if not isinstance(assignments, dict):
            assignments = {}
        self.assignments = assignments
        self._models(assignment_id)
        self.assignment_id = assignment_id
        record["seen"], record["recent"], record["assignments"] = (
            self.seen,
            self.recent,
            assignments,
        )

    def _models(self, assignment_id: str) -> dict[str, Any]:
        entry = self.assignments.get(assignment_id)
        if not isinstance(entry, dict) or not isinstance(entry.get("models"), dict):
            entry = self.assignments[assignment_id] = {"models": {}}
        models: dict[str, Any] = entry["models"]
        return models

    def _owner(self, turn: Turn) -> str:
        """The assignment a turn is charged to: the previous one when the agent stamped it
        before this one began, else this one."""
        if self.previous is None or not isinstance(turn.at, str):
            return self.assignment_id
        try:
            at = datetime.fromisoformat(turn.at[:40])
        except ValueError:
            return self.assignment_id
        if at.tzinfo is None:
            return self.assignment_id  # no zone: no moment to compare
        previous_id, began = self.previous
        return previous_id if at < began else self.assignment_id

    def add(self, turn: Turn) -> None:
        counts = tuple(_count(c) for c in turn.counts)
        if not any(counts):
            return  # no figures: nothing spent (and no ID taken)
        model = turn.model[:MODEL_MAX] or "unknown"
        mark = _fingerprint(turn.turn_id.encode("utf-8", "surrogatepass"))
        if mark in self.known:
            before = self.recent.get(mark)
            if not isinstance(before, list) or len(before) != 6:
                return  # counted long ago: never again
            # the same turn written again with larger figures: raise it to them
            aid, was_model = before[0], before[1]
            old = [_count(c) for c in before[2:]]
            grown = [max(o, c) for o, c in zip(old, counts, strict=True)]
            if grown == old:
                return
            entry = self.assignments.get(aid)
            models = entry.get("models") if isinstance(entry, dict) else None
            row = models.get(was_model) if isinstance(models, dict) else None
            if isinstance(row, dict):
                for k, o, g in zip(_COUNTS, old, grown, strict=True):
                    row[k] = _count(row.get(k)) + g - o
            self.recent[mark] = [aid, was_model, *grown]
            return
        owner = self._owner(turn)
        models = self._models(owner)
        row = models.get(model)
        if not isinstance(row, dict):
            if len(models) >= MODELS_MAX:
                return
            row = models[model] = {k: 0 for k in (*_COUNTS, "turns")}
        for k, c in zip(_COUNTS, counts, strict=True):
            row[k] = _count(row.get(k)) + c
        row["turns"] = _count(row.get("turns")) + 1
        self.known.add(mark)
        self.seen.append(mark)  # trimmed to SEEN_MAX once per call (``trim``)
        self.recent[mark] = [owner, model, *counts]
        while len(self.recent) > RECENT_MAX:
            self.recent.pop(next(iter(self.recent)))

    def trim(self) -> None:
        """The oldest turn hashes past SEEN_MAX forgotten: once per call, not per turn (a
        slice of the list per turn made a call reading many turns quadratic)."""
        if len(self.seen) > SEEN_MAX:
            del self.seen[: len(self.seen) - SEEN_MAX]


# -- the agents' records -------------------------------------------------------------------


def claude_turns(data: dict[str, Any], carry: dict[str, Any]) -> Iterator[Turn]:
    """Claude Code's transcript: an assistant line's ``message`` has ``id``, ``model`` and
    ``usage``; one message written as several lines (one per content block) is one turn."""
    if data.get("type") != "assistant":
        return
    message = data.get("message")
    if not isinstance(message, dict):
        return
    usage = message.get("usage")
    model = message.get("model")
    if not isinstance(usage, dict) or not isinstance(model, str) or model == "<synthetic>":
        return
    turn_id = message.get("id") or data.get("requestId") or data.get("uuid")
    if not isinstance(turn_id, str) or not turn_id:
        return
    yield Turn(
        "claude:" + turn_id,
        model,
        (
            _count(usage.get("input_tokens")),
            _count(usage.get("output_tokens")),
            _count(usage.get("cache_read_input_tokens")),
            _count(usage.get("cache_creation_input_tokens")),
        ),
        data.get("timestamp"),
    )


def codex_turns(data: dict[str, Any], carry: dict[str, Any]) -> Iterator[Turn]:
    """Codex's session record (its rollout JSONL, the hooks' ``transcript_path``): the model
    from ``turn_context``, each model call's figures from an ``event_msg`` of type
    ``token_count`` (``info.last_token_usage``). A token_count carries no ID of its own; its
    running total (``info.total_token_usage``) names it, so one repeated is counted once."""
    payload = data.get("payload")
    if not isinstance(payload, dict):
        return
    kind = data.get("type")
    if kind == "session_meta" and isinstance(payload.get("id"), str):
        carry["session"] = payload["id"][:100]
        return
    if kind == "turn_context" and isinstance(payload.get("model"), str):
        carry["model"] = payload["model"][:MODEL_MAX]
        return
    if kind != "event_msg" or payload.get("type") != "token_count":
        return
    info = payload.get("info")
    if not isinstance(info, dict):
        return
    last, total = info.get("last_token_usage"), info.get("total_token_usage")
    if not isinstance(last, dict) or not isinstance(total, dict):
        return
    cached = _count(last.get("cached_input_tokens"))
    marks = ":".join(
        str(_count(total.get(k)))
        for k in ("input_tokens", "cached_input_tokens", "output_tokens", "total_tokens")
    )
    model = carry.get("model")
    yield Turn(
        f"codex:{carry.get('session', '')}:{marks}",
        model if isinstance(model, str) else "unknown",
        (
            max(0, _count(last.get("input_tokens")) - cached),  # cached is part of input
            _count(last.get("output_tokens")),
            cached,
            0,
        ),
        data.get("timestamp"),
    )


def pi_turns(data: dict[str, Any], carry: dict[str, Any]) -> Iterator[Turn]:
    """pi's session file (the extension passes ``session_file``): each ``message`` entry has
    its own ``id``; an assistant message has ``model`` and ``usage`` (``input``, ``output``,
    ``cacheRead``, ``cacheWrite``)."""
    if data.get("type") != "message":
        return
    message = data.get("message")
    entry_id = data.get("id")
    if not isinstance(message, dict) or not isinstance(entry_id, str) or not entry_id:
        return
    usage, model = message.get("usage"), message.get("model")
    if message.get("role") != "assistant" or not isinstance(usage, dict):
        return
    yield Turn(
        "pi:" + entry_id,
        model if isinstance(model, str) else "unknown",
        (
            _count(usage.get("input")),
            _count(usage.get("output")),
            _count(usage.get("cacheRead")),
            _count(usage.get("cacheWrite")),
        ),
        data.get("timestamp"),
    )


READERS = {"claude": claude_turns, "codex": codex_turns, "pi": pi_turns}


# -- sums, for status and the cockpit ----------------------------------------------------------


def total(figures: list[Spend]) -> Spend:
    """Several figures as one: tokens and turns added; the cost None when any is None."""
    costs = [f.cost_usd for f in figures]
    unpriced = sorted({m for f in figures for m in f.unpriced_models})
    return Spend(
        sum(f.input_tokens for f in figures),
        sum(f.output_tokens for f in figures),
        sum(f.cache_read_tokens for f in figures),
        sum(f.cache_write_tokens for f in figures),
        sum(f.turns for f in figures),
        None if any(c is None for c in costs) else round(sum(c or 0.0 for c in costs), 6),
        tuple(unpriced),
    )


def crew_spend(home: Home, key: str) -> dict[str, Spend]:
    """Every assignment's figure for this crew, by assignment ID (one small file read)."""
    try:
        record = _load(home, key)
    except Exception:  # noqa: BLE001 - a figure is never worth a refusal
        return {}
    assignments = record.get("assignments")
    if not isinstance(assignments, dict):
        return {}
    return {
        aid: _spend(home, entry.get("models"))
        for aid, entry in assignments.items()
        if isinstance(aid, str) and isinstance(entry, dict)
    }


def as_json(figure: Spend) -> dict[str, Any]:
    """A figure as status --json and the API say it."""
    return {
        "cost_usd": figure.cost_usd,
        "input_tokens": figure.input_tokens,
        "output_tokens": figure.output_tokens,
        "cache_read_tokens": figure.cache_read_tokens,
        "cache_write_tokens": figure.cache_write_tokens,
        "turns": figure.turns,
        "unpriced_models": list(figure.unpriced_models),
    }


def from_json(data: dict[str, Any]) -> Spend:
    """``as_json``'s figure back."""
    return Spend(
        data["input_tokens"],
        data["output_tokens"],
        data["cache_read_tokens"],
        data["cache_write_tokens"],
        data["turns"],
        data["cost_usd"],
        tuple(data["unpriced_models"]),
    )


def shown(figure: Spend | None) -> str:
    """A figure in a few characters: ``$1.23``, ``$0.24``, ``$0.0042`` (below a cent only),
    ``—`` (nothing measured), ``? 12k tok`` (tokens, no price)."""
    if figure is None or not figure.turns:
        return "—"
    if figure.cost_usd is None:
        tokens = (
            figure.input_tokens
            + figure.output_tokens
            + figure.cache_read_tokens
            + figure.cache_write_tokens
        )
        return f"? {_short(tokens)} tok"
    cost = figure.cost_usd
    if cost >= 0.01 or cost == 0:  # cents, as a column of them reads
        return f"${cost:.2f}"
    if cost < 0.0001:
        return "<$0.0001"
    digits = f"{cost:.4f}".rstrip("0")  # cents, and fractions of one to four places
    return "$" + digits + "0" * max(0, 2 - len(digits.split(".")[1]))


def _short(n: int) -> str:
    for unit, size in (("M", 1_000_000), ("k", 1_000)):
        if n >= size:
            return f"{n / size:.1f}{unit}".replace(".0", "")
    return str(n)
