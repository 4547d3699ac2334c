"""The webhook door's two signature schemes, and what each one covers.

``github`` (GitHub's own): ``X-Hub-Signature-256: sha256=<hex HMAC-SHA256 of the raw
body>``. GitHub signs the body and nothing else: ``X-GitHub-Delivery`` and
``X-GitHub-Event`` are not covered and there is no timestamp. So a captured request could be
re-sent under a new delivery id or another event name; the door therefore takes such an
endpoint's body as once-only (``deliveries.ingest(body_once=True)``).

``captain`` (v2): ``X-Captain-Signature: t=<unix seconds>,v2=<hex HMAC-SHA256 of
"<t>\\n<X-Captain-Delivery>\\n<X-Captain-Event>\\n" + raw body>`` — the header values as
sent, an absent event as empty. It covers the time, the delivery id and the event, so a
re-sent request is either the same delivery (a duplicate) or refused. The v1 format (time
and body only) is refused with a sentence saying so.
"""

from __future__ import annotations

import hashlib
import hmac
import re
import time
from dataclasses import dataclass

TOLERANCE = 300  # seconds a captain-style timestamp may be off the server's clock
STAMP = re.compile(r"[0-9]{1,12}")  # ASCII only: int() takes "١٢" and refuses 5,000 digits
HEADERS = {
    "github": ("x-hub-signature-256", "x-github-delivery", "x-github-event"),
    "captain": ("x-captain-signature", "x-captain-delivery", "x-captain-event"),
}


@dataclass(frozen=True)
class Verdict:
    ok: bool
    source_id: str | None  # what the delivery id header says (signed or not)
    event: str | None
    why: str  # when not ok: a sentence for the sender
    binds_delivery: bool  # the signature covers the delivery id and the event


def check(config: dict, headers, body: bytes, now: float | None = None) -> Verdict:
    """Judge one request against its endpoint's scheme (``signature``, default github).
    ``headers`` is a Starlette ``Headers``: values are the sent bytes read as Latin-1."""
    scheme = "captain" if config.get("signature") == "captain" else "github"
    secret = config["secret"].encode()
    names = HEADERS[scheme]
    source_id = headers.get(names[1]) or None
    event = headers.get(names[2]) or None
    if unsigned(config, headers):  # known from the head: the door never reads the body
        return Verdict(
            False,
            source_id,
            event,
            f"{_shown(names[0])} is missing (the body was not read)",
            scheme == "captain",
        )
    repeated = [n for n in names if len(headers.getlist(n)) > 1]
    if repeated:  # two values: which one was signed, which one recorded?
        return Verdict(
            False,
            source_id,
            event,
            f"{_shown(repeated[0])} is sent more than once",
            scheme == "captain",
        )
    if scheme == "github":
        expected = "sha256=" + hmac.new(secret, body, hashlib.sha256).hexdigest()
        ok = hmac.compare_digest(_raw(headers.get(names[0], "")), expected.encode())
        return Verdict(
            ok,
            source_id,
            event,
            "X-Hub-Signature-256 does not match the body",
            binds_delivery=False,
        )
    ok, why = _captain(
        secret,
        headers.get(names[0], ""),
        source_id,
        event,
        body,
        time.time() if now is None else now,
    )
    return Verdict(ok, source_id, event, why, binds_delivery=True)


def unsigned(config: dict, headers) -> bool:
    """Whether the request carries no signature header at all for its endpoint's scheme:
    then it is refused on its head, and its body is never read."""
    scheme = "captain" if config.get("signature") == "captain" else "github"
    return not headers.get(HEADERS[scheme][0])


def _captain(
    secret: bytes, value: str, source_id: str | None, event: str | None, body: bytes, now: float
) -> tuple[bool, str]:
    parts: dict[str, str] = {}
    for item in value.split(","):
        key, sep, text = item.strip().partition("=")
        if sep:
            parts.setdefault(key, text)
    if "v2" not in parts:
        if "v1" in parts:
            return False, (
                "X-Captain-Signature v1 (time and body only) is no longer accepted: "
                "sign v2, which also covers X-Captain-Delivery and X-Captain-Event"
            )
        return False, "X-Captain-Signature is missing or has no t=...,v2=... in it"
    stamp = parts.get("t", "")
    if not STAMP.fullmatch(stamp):
        return False, "X-Captain-Signature's t= is not a time in whole Unix seconds"
    if abs(now - int(stamp)) > TOLERANCE:
        return False, (
            f"X-Captain-Signature's t= is more than {TOLERANCE} s from the server's clock"
        )
    expected = _digest(secret, stamp, source_id or "", event, body)
    if not hmac.compare_digest(_raw(parts["v2"]), expected.encode()):
        return False, ("X-Captain-Signature does not match the time, delivery id, event and body")
    return True, ""


def _digest(secret: bytes, stamp: str, delivery: str, event: str | None, body: bytes) -> str:
    signed = f"{stamp}\n{delivery}\n{event or ''}\n".encode("latin-1") + body
    return hmac.new(secret, signed, hashlib.sha256).hexdigest()


def _raw(text: str) -> bytes:
    return text.encode("latin-1")  # the bytes as sent (Starlette decodes headers as Latin-1)


def _shown(name: str) -> str:
    return "-".join(p.capitalize() for p in name.split("-")).replace("Github", "GitHub")
