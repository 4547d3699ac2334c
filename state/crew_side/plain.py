"""Read and write records without pydantic, or say that only the models may judge them.

The crew-side fast path (``state.crew_side.fast``) uses this instead of the pydantic models,
whose import alone is most of a crew command's start-up budget. Reading accepts a strict
subset of what the models accept, with the same meaning: every key the shape names
(``state.crew_side.shapes``, derived from the models) and nothing else, exact JSON types, datetimes
exactly as the models write them. Anything else raises ``Unsure`` and the caller falls back
to the models, which validate, quarantine and report as always: this module never refuses,
repairs or quarantines a record, it only declines to vouch for one. Writing produces the
models' bytes exactly (a test compares them), so a record does not say which path wrote it.
"""

from __future__ import annotations

import json
import math
import re
from datetime import datetime, timedelta
from pathlib import Path
from types import SimpleNamespace
from typing import Any

from state.crew_side.shapes import EVENTS, SHAPES
from state.store import Quarantined, Store, loads_json

# The models write UTC as Z, other offsets as +HH:MM, microseconds only when not zero.
_DATETIME = re.compile(
    r"\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.(?!000000)\d{6})?"
    r"(?:Z|[+-](?!00:00)\d\d:\d\d)"
)


class Unsure(Exception):
    """The plain reader cannot vouch for this record: ask the models."""


class Rec(SimpleNamespace):
    """A record read plainly: the models' attribute names, and the JSON it was read from."""

    def model_dump(self, mode: str = "json", by_alias: bool = True) -> dict[str, Any]:
        """What ``model.model_dump(mode="json", by_alias=True)`` returns for it."""
        assert mode == "json" and by_alias
        dumped: dict[str, Any] = json.loads(json.dumps(self._json))
        return dumped


def stamp(value: datetime) -> str:
    """A datetime as the models write it."""
    offset = value.utcoffset()
    if offset is None:
        raise ValueError("captain writes only aware datetimes")
    text = value.replace(tzinfo=None).isoformat()
    if not offset:
        return text + "Z"
    sign, offset = ("-", -offset) if offset < timedelta(0) else ("+", offset)
    hours, rest = divmod(int(offset.total_seconds()), 3600)
    if rest % 60:
        raise ValueError("an offset with seconds is not written by captain")
    return f"{text}{sign}{hours:02d}:{rest // 60:02d}"


def _pairs(pairs: list[tuple[str, object]]) -> dict[str, object]:
    out = dict(pairs)
    if len(out) != len(pairs):
        raise Unsure("a key appears twice")
    return out


def _value(value: Any, kind: Any) -> tuple[Any, Any]:  # JSON in, by a shape's kind
    """(python value, canonical JSON value) of one field, or ``Unsure``."""
    if kind == "str":
        if type(value) is str:
            return value, value
    elif kind == "int":
        if type(value) is int:
            return value, value
    elif kind == "float":  # as pydantic reads it: a whole number too, written back as float
        if type(value) in (int, float) and math.isfinite(value):
            return float(value), float(value)
    elif kind == "bool":
        if type(value) is bool:
            return value, value
    elif kind == "datetime":
        if type(value) is str and _DATETIME.fullmatch(value):
            try:
                return datetime.fromisoformat(value), value
            except ValueError:
                pass
    elif kind[0] == "int>=":
        if type(value) is int and value >= kind[1]:
            return value, value
    elif kind[0] == "str<=":
        if type(value) is str and len(value) <= kind[1]:
            return value, value
    elif kind[0] == "lit":
        if any(type(value) is type(v) and value == v for v in kind[1:]):
            return value, value
    elif kind[0] == "opt":
        return (None, None) if value is None else _value(value, kind[1])
    elif kind[0] == "list":
        if type(value) is list:
            pairs = [_value(v, kind[1]) for v in value]
            return [p for p, _ in pairs], [j for _, j in pairs]
    elif kind[0] == "model":
        record = parse(value, kind[1])
        return record, record._json
    raise Unsure(f"{value!r} is not a plain {kind!r}")


def parse(data: Any, shape: str) -> Rec:
    """A validated record as attributes (the models' attribute names), or ``Unsure``."""
    fields = SHAPES[shape]
    if type(data) is not dict or len(data) != len(fields):
        raise Unsure(f"not exactly the fields of {shape}")
    attrs: dict[str, Any] = {}
    canonical: dict[str, Any] = {}
    try:
        for key, attr, kind in fields:
            attrs[attr], canonical[key] = _value(data[key], kind)
    except KeyError:
        raise Unsure(f"not exactly the fields of {shape}") from None
    return Rec(**attrs, _json=canonical)


def parse_event(data: Any) -> Rec:
    """A crew event of any type (the models' union on ``type``)."""
    kind = data.get("type") if type(data) is dict else None
    shape = EVENTS.get(kind) if isinstance(kind, str) else None
    if shape is None:
        raise Unsure("not a crew event")
    return parse(data, shape)


def read(store: Store, path: Path, shape: str) -> Rec | None:
    """The record at ``path`` (None when absent), read by the store's rules; ``Unsure`` when
    anything about it is unusual (the models then decide, and quarantine if they must).
    ``shape`` "event" reads any crew event."""
    try:
        data = store.read_bytes(path)
    except Quarantined as why:
        raise Unsure(str(why)) from None
    if data is None:
        return None
    if b"\\u" in data:
        raise Unsure("escaped characters (the models judge lone surrogates)")
    try:
        value = loads_json(data.decode("utf-8"), object_pairs_hook=_pairs)
    except (UnicodeDecodeError, ValueError) as exc:
        raise Unsure(f"not UTF-8 JSON ({exc})") from None
    return parse_event(value) if shape == "event" else parse(value, shape)


# -- writing ------------------------------------------------------------------------------


_TYPES: dict[str, Any] = {
    "str": str,
    "int": int,
    "float": float,
    "bool": bool,
    "int>=": int,
    "str<=": str,
}


def _dump(value: Any, kind: Any) -> Any:
    name = kind if isinstance(kind, str) else kind[0]
    if name == "float":
        # JSON libraries spell some floats differently (pydantic 0.00001, json 1e-05): only
        # those both spell alike are written here — 0 and 1e-4 <= |x| < 1e16 (a budget's
        # amount, a price); any other is a bug in the caller, never a different byte
        if type(value) is not float or not (value == 0 or 1e-4 <= abs(value) < 1e16):
            raise ValueError(f"plain writes no float {value!r} (the models' bytes may differ)")
        return value
    if name == "datetime":
        return stamp(value)
    if name == "opt":
        return None if value is None else _dump(value, kind[1])
    if name == "list":
        return [_dump(v, kind[1]) for v in value]
    if name == "model":
        return dump(value, kind[1])
    if name == "lit":
        good = any(type(value) is type(v) and value == v for v in kind[1:])
    else:
        good = (
            type(value) is _TYPES[name]
            and not (name == "int>=" and value < kind[1])
            and not (name == "str<=" and len(value) > kind[1])
        )
    if not good:
        raise ValueError(f"{value!r} is not a {kind!r}: a bug in the caller")
    return value


def dump(record: object, shape: str) -> dict[str, Any]:
    """``record`` (anything with the shape's attributes) as the models' JSON object."""
    return {key: _dump(getattr(record, attr), kind) for key, attr, kind in SHAPES[shape]}


def encode(record: object, shape: str) -> bytes:
    """The bytes ``state.store.encode`` writes for the same record."""
    return (
        json.dumps(dump(record, shape), ensure_ascii=False, separators=(",", ":")).encode() + b"\n"
    )
