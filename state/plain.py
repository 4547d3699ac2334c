"""Read a record without pydantic, or say that only the full path may judge it.

The crew-side fast path (``state.crew_fast``) reads a crew's snapshot with this instead of
the pydantic models, whose import alone is most of a crew command's start-up budget. It
accepts a strict subset of what the models accept, with the same meaning: every key the
shape names (``state.shapes``, derived from the models) and nothing else, exact JSON types,
datetimes in the form captain writes. Anything else raises ``Unsure`` and the caller falls
back to the models, which validate, quarantine and report as always. So this module never
refuses, repairs or quarantines a record: it only declines to vouch for one.
"""

from __future__ import annotations

import json
import re
from datetime import datetime
from pathlib import Path
from types import SimpleNamespace

from state.shapes import SHAPES
from state.store import Quarantined, Store

_DATETIME = re.compile(r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d{1,6})?(?:Z|[+-]\d\d:\d\d)")


class Unsure(Exception):
    """The plain reader cannot vouch for this record: ask the models."""


def _pairs(pairs: list[tuple[str, object]]) -> dict:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise Unsure("a key appears twice")
    return out


def _value(value, kind):
    if kind == "str":
        if type(value) is str:
            return value
    elif kind == "int":
        if type(value) is int:
            return value
    elif kind == "datetime":
        if type(value) is str and _DATETIME.fullmatch(value):
            try:
                return datetime.fromisoformat(value)
            except ValueError:
                pass
    elif kind[0] == "lit":
        if any(type(value) is type(v) and value == v for v in kind[1:]):
            return value
    elif kind[0] == "opt":
        return None if value is None else _value(value, kind[1])
    elif kind[0] == "list":
        if type(value) is list:
            return [_value(v, kind[1]) for v in value]
    elif kind[0] == "model":
        return parse(value, kind[1])
    raise Unsure(f"{value!r} is not a plain {kind!r}")


def parse(data, shape: str) -> SimpleNamespace:
    """A validated record as attributes (the models' attribute names), or ``Unsure``."""
    fields = SHAPES[shape]
    if type(data) is not dict or len(data) != len(fields):
        raise Unsure(f"not exactly the fields of {shape}")
    try:
        return SimpleNamespace(**{attr: _value(data[key], kind) for key, attr, kind in fields})
    except KeyError:
        raise Unsure(f"not exactly the fields of {shape}") from None


def read(store: Store, path: Path, shape: str) -> SimpleNamespace | None:
    """The record at ``path`` (None when absent), read by the store's rules; ``Unsure`` when
    anything about it is unusual (the models then decide, and quarantine if they must)."""
    try:
        data = store.read_bytes(path)
    except Quarantined as why:
        raise Unsure(str(why)) from None
    if data is None:
        return None
    if b"\\u" in data:
        raise Unsure("escaped characters (the models judge lone surrogates)")
    try:
        value = json.loads(data.decode("utf-8"), object_pairs_hook=_pairs)
    except (UnicodeDecodeError, ValueError) as exc:
        raise Unsure(f"not UTF-8 JSON ({exc})") from None
    return parse(value, shape)
