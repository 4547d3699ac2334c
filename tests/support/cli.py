"""Reading the real CLI's answers in tests: one success, one refusal, each checked whole."""

from __future__ import annotations

import json

from state.errors import CODES


def ok(result) -> dict:
    """Exit 0 and one ``{"ok": true, ...}`` object on stdout; returns it."""
    assert result.code == 0, (result.code, result.out[:2000], result.err[:2000])
    payload = json.loads(result.out)
    assert payload.get("ok") is True, payload
    return payload


def refused(result, code: str) -> dict:
    """Exit 1 and stdout exactly ``{"ok": false, "error": {"code", "message", ...}}`` with
    ``code`` (a stable one) and a sentence; returns the error."""
    assert result.code == 1, (result.code, result.out[:2000], result.err[:2000])
    payload = json.loads(result.out)
    assert set(payload) == {"ok", "error"} and payload["ok"] is False, payload
    error = payload["error"]
    assert isinstance(error, dict) and error["code"] == code, error
    assert code in CODES, code
    assert isinstance(error["message"], str) and error["message"].strip(), error
    return error
