"""The one-statement claim and report (pg_schema's ``captain_claim``, ``captain_report``)
when the database's function is not the one captain's schema made: replaced by hand with one
that answers no row, or dropped and made again answering another shape. Captain says what
is wrong with a stable code and a sentence (``ledger_error``), never ``internal_error``
(was: an ``AssertionError`` for no row, a ``ValueError`` unpacking a row of one column).
Real PostgreSQL (tests/support/postgres.py), nothing replaced in captain."""

from __future__ import annotations

from pathlib import Path

import psycopg
import pytest
from support.ledger_backends import close_backends, open_ledgers

from state.errors import CaptainError
from state.home import Home
from state.work import ledger

CASES = {
    "no row": "CREATE OR REPLACE FUNCTION {fn}({sig}) RETURNS {ret} LANGUAGE sql AS "
    "$$ SELECT NULL::text, NULL::text, NULL::{third}, NULL::text, NULL::text, NULL::text "
    "WHERE false $$",
    "one column": "DROP FUNCTION {fn}({sig}); CREATE FUNCTION {fn}({sig}) RETURNS integer "
    "LANGUAGE sql AS $$ SELECT 1 $$",
}


def _replace(url: str, fn: str, case: str) -> None:
    with psycopg.connect(url, autocommit=True) as db:
        sig, ret = db.execute(
            "SELECT pg_get_function_identity_arguments(%s::regproc), "
            "pg_get_function_result(%s::regproc)",
            (fn, fn),
        ).fetchone()
        third = "text" if fn == "captain_claim" else "integer"
        db.execute(CASES[case].format(fn=fn, sig=sig, ret=ret, third=third))


@pytest.mark.parametrize("case", sorted(CASES))
def test_a_function_changed_by_hand_is_a_ledger_error_not_a_crash(request, tmp_path: Path, case):
    with open_ledgers(request, "postgresql") as made:
        url = made.fresh_url() or ""
        Home(tmp_path)
        (tmp_path / "config.toml").write_text(f'[ledger]\nurl = "{url}"\n')
        home = Home(tmp_path)
        try:
            item = ledger.accept(home, source="chat", input={"text": "x"}, requester="captain:t")
            claimed = ledger.claim(home, item.work_id, holder="w")
            for fn, call in (
                (
                    "captain_report",
                    lambda: ledger.report(home, item.work_id, 1, "succeeded", actor="w"),
                ),
                ("captain_claim", lambda: ledger.claim(home, None, holder="w")),
            ):
                _replace(url, fn, case)
                with pytest.raises(CaptainError) as refused:
                    call()
                assert refused.value.code == "ledger_error", (fn, refused.value)
                assert f"answered {fn} with" in refused.value.message
                assert "changed in the database by hand" in refused.value.message
            assert ledger.get(home, item.work_id) == claimed  # nothing written
        finally:
            close_backends(url)
