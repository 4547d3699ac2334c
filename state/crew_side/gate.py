"""The budget's gate before a tool call when the crew has no budget: decided from the
smallest read, with nothing imported but ``json``.

Claude Code and Codex run ``captain hook AGENT PreToolUse`` before every tool call, and pi's
extension ``captain hook pi budget`` (``GATES``), whether the assignment has a budget or
not: the hook stays installed because a budget can be set at any time (``captain tell NAME
--budget-usd``). Without one the gate has nothing to say, yet the whole hook cost each
tool call ~90 ms of captain's start (docs/budgets.md). ``unbudgeted`` answers from the
crew's events folder listing and its snapshot (``crew/<key>/state.json``) alone, and only
when it is sure: the calling process is a crew, its snapshot is as new as its events
(``state.crew_side.fast.snapshot``'s test), it is the live incarnation, and its
``budget_usd`` is null. Anything else — a budget, a snapshot behind its events (a budget
being set right now), an unusual name, folder or file — is "not sure", and the full hook
(``captain_tui.agents.hooks``) decides as always: it measures, refuses at the budget, says
the notices, repairs what is behind and notes on stderr what is wrong.
"""

from __future__ import annotations

import os
import stat

TYPE_CHECKING = False  # typing's import (and collections') would cost the gate a few ms
if TYPE_CHECKING:
    from collections.abc import Mapping

# (agent, event) of every hook that is the budget's gate (``agents.hooks.HANDLERS`` runs
# the full gate for exactly these; a test holds the two together)
GATES = frozenset({("claude", "PreToolUse"), ("codex", "PreToolUse"), ("pi", "budget")})

# ``state.inputs.NAME_RE`` without ``re`` (its import alone is most of what this saves)
_FIRST = frozenset("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz")
_REST = _FIRST | frozenset("0123456789_-")
_MAX_NAME = 32
MAX_INPUT = 16 * 1024 * 1024  # what any hook reads of its stdin at most (agents.hooks)
_MAX_SNAPSHOT = 1024 * 1024  # state.store.MAX_RECORD_BYTES: a larger one is not ours


def unbudgeted(env: Mapping[str, str]) -> bool:
    """True only when the calling crew's current assignment surely has no budget (see the
    module's docstring); False whenever that is not certain from the smallest read."""
    if env.get("CAPTAIN_ROLE") != "crew":
        return False
    name, incarnation, root = (
        env.get(k) for k in ("CAPTAIN_CREW", "CAPTAIN_INCARNATION", "CAPTAIN_HOME")
    )
    if not (name and incarnation and root) or not _is_name(name):
        return False
    key = name.lower()  # state.inputs.crew_key
    crew = os.path.join(root, "crew", key)
    try:
        if not all(
            stat.S_ISDIR(os.lstat(path).st_mode)  # a link anywhere is the store's to refuse
            for path in (os.path.join(root, "crew"), crew, os.path.join(crew, "events"))
        ):
            return False
        newest = _newest_seq(os.listdir(os.path.join(crew, "events")))
        if newest is None:
            return False
        data = _read_snapshot(os.path.join(crew, "state.json"))
    except (OSError, ValueError, RecursionError):  # RecursionError: JSON nested past reason
        return False
    return (
        isinstance(data, dict)
        and type(data.get("seq")) is int
        and data["seq"] == newest
        and isinstance(data.get("name"), str)
        and data["name"].lower() == key
        and data.get("incarnation_id") == incarnation
        and data.get("dismissed_at", "") is None
        and "budget_usd" in data
        and data["budget_usd"] is None
    )


def _is_name(name: str) -> bool:
    return len(name) <= _MAX_NAME and name[0] in _FIRST and all(c in _REST for c in name)


def _newest_seq(names: list[str]) -> int | None:
    """The newest event's number (``state.store.SEQ_NAME``), or None: no event, or a
    ``.json`` name that is not an event's, which the store quarantines on the full path."""
    newest = None
    for name in names:
        if name.startswith(".") or not name.endswith(".json"):
            continue  # a writer's temp file, or not a record: the store skips these too
        stem = name[: -len(".json")]
        if not (stem.isascii() and stem.isdigit()):
            return None
        if not (len(stem) == 8 or (9 <= len(stem) <= 20 and stem[0] != "0")):
            return None
        newest = max(newest or 0, int(stem))
    return newest


def _read_snapshot(path: str) -> object:
    import json

    fd = os.open(path, os.O_RDONLY | os.O_NOFOLLOW | os.O_CLOEXEC)
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode) or info.st_size > _MAX_SNAPSHOT:
            raise ValueError("not a snapshot captain wrote")
        data = os.read(fd, _MAX_SNAPSHOT + 1)
    finally:
        os.close(fd)
    return json.loads(data)
