"""``captain tokens create/list/revoke`` and ``captain status`` on a PostgreSQL ledger shared
by two homes (standing for two hosts): the real CLI, ``CAPTAIN_LEDGER_URL`` naming one fresh
ledger in every process (``cli_ledger``). A token made through one home is listed and
revoked through the other, the commands say which ledger keeps the tokens, nothing of them
lands in either home's files, and ``status`` (read-only) reads the shared workspace ID and
mints none. The rules themselves are tests/state/test_tokens.py's, on both stores.
"""

from __future__ import annotations

from pathlib import Path

import pytest
from support.cli import Run, ok

from state.home import Home
from state.work import tokens


@pytest.mark.parametrize("cli_ledger", ["postgresql"], indirect=True)
def test_two_homes_share_the_tokens_and_say_where_they_are(
    cli_ledger, tmp_path: Path, project: Path
):
    from conftest import Cli

    a, b = (Run(Cli(Home(tmp_path / name).root, project)) for name in ("host-a", "host-b"))
    status = ok(a("status", "--json"))
    shown = status["ledger"]["url"]
    assert status["home_exists"] and status["workspace_id"] is None  # a read mints nothing
    assert tokens.store_for(Home(a.home)).workspace() is None

    made = a("tokens", "create", "--role", "member", "--label", "ci")
    assert made.code == 0, made.err
    secret = made.out.split("\n", 1)[0]
    assert (
        f"stored hashed in the PostgreSQL ledger at {shown}, where every home on it "
        "accepts it." in made.out
    )
    token_id = secret.split("_")[1] + "_" + secret.split("_")[2]

    listed = b("tokens", "list")
    assert token_id in listed.out and "live" in listed.out and "ci" in listed.out
    assert f"(Kept in the PostgreSQL ledger at {shown}, shared by every home on it.)" in listed.out
    revoked = b("tokens", "revoke", token_id)
    assert revoked.code == 0, revoked
    assert f"every home on the PostgreSQL ledger at {shown} refuses it from now on" in revoked.out
    [row] = ok(a("tokens", "list", "--json"))["tokens"]
    assert row["token_id"] == token_id and row["revoked_at"] is not None
    assert tokens.verify(Home(a.home), secret) is None
    for host in (a, b):
        assert not (host.home / "tokens").exists()

    minted = tokens.workspace_id(Home(a.home))  # what `captain serve` does on first start
    assert ok(b("status", "--json"))["workspace_id"] == minted
    assert not (b.home / "workspace.json").exists()
