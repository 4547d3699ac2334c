"""Identifiers: time-ordered, random, prefixed by kind, never reused."""

from __future__ import annotations

from state import clock

_ALPHABET = "0123456789ABCDEFGHJKMNPQRSTVWXYZ"  # Crockford base32


def _b32(value: int, length: int) -> str:
    out = []
    for _ in range(length):
        value, digit = divmod(value, 32)
        out.append(_ALPHABET[digit])
    return "".join(reversed(out))


def new_id(prefix: str) -> str:
    """``prefix_`` + 10 chars of milliseconds + 16 random chars (80 bits), ULID-style, from
    the clock (``state.clock``), which a test may fix; in order within a process."""
    source = clock.current()
    chosen = source.new_id(prefix)
    if chosen is not None:
        return chosen
    ms, rnd = source.stamp()
    return f"{prefix}_{_b32(ms, 10)}{_b32(rnd, 16)}"


def derive(prefix: str, other_id: str) -> str:
    """An ID of another kind sharing ``other_id``'s time and randomness: derivable, so a
    record made after a crash gets the same ID without a lookup table."""
    return f"{prefix}_{other_id.split('_', 1)[1]}"


# Prefixes, one per kind, so an ID pasted into the wrong place is recognisable.
INCARNATION = "inc"
ASSIGNMENT = "asg"
MESSAGE = "msg"
QUESTION = "q"
DELIVERY = "dlv"
WORK = "wrk"
