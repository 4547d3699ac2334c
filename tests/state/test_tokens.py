"""API tokens and the workspace ID (state/work/tokens.py) on both stores: the home's files,
and the PostgreSQL ledger's database (state/work/pg_tokens.py) when the home's ledger is
there (tests/support/ledger_backends.py).

The rules are proved on both (create, verify, list, revoke and its idempotence, the
workspace minted once, a read-only home minting nothing); the files keep their layout, and
a PostgreSQL home keeps none of it on disk. Two homes on one database are one workspace:
a token made through one is accepted by the other, revoked through the other is refused
by the first, and a first use of the workspace by both at once agrees on one ID.
"""

from __future__ import annotations

import inspect
import json
import threading
from pathlib import Path

import pytest
from support.ledger_backends import open_ledgers

from state.errors import CaptainError
from state.home import Home
from state.work import backend, token_store, tokens


def stored_tokens(ledgers, home: Home) -> dict[str, dict]:
    """The tokens as stored, read past captain: the files, or the rows (another host's
    view, on a connection of our own)."""
    if not ledgers.postgres:
        folder = home.root / "tokens"
        found = {p.stem: json.loads(p.read_text()) for p in folder.glob("tok_*.json")}
        return {k: {**v, "revoked": v.get("revoked_at") is not None} for k, v in found.items()}
    url = backend.backend_for(home).location.url
    with ledgers.connect(url) as conn:
        rows = conn.execute(
            "SELECT token_id, role, label, sha256, revoked_at IS NOT NULL FROM api_tokens"
        ).fetchall()
    return {
        r[0]: {"token_id": r[0], "role": r[1], "label": r[2], "sha256": r[3], "revoked": r[4]}
        for r in rows
    }


def test_each_store_implements_the_whole_interface(tmp_path: Path, ledgers) -> None:
    store = tokens.store_for(ledgers.home(tmp_path / "home"))
    assert store.name == backend.backend_for(ledgers.home(tmp_path / "again")).name
    if ledgers.postgres:
        from state.work.pg_tokens import PostgresTokens as expected
    else:
        expected = token_store.FileTokens
    assert type(store) is expected
    for name, value in vars(token_store.TokenStore).items():
        if name.startswith("_") or not inspect.isfunction(value):
            continue
        assert list(inspect.signature(getattr(expected, name)).parameters) == list(
            inspect.signature(value).parameters
        ), name


def test_create_verify_list_revoke(tmp_path: Path, ledgers) -> None:
    home = ledgers.home(tmp_path / "home")
    manager, manager_secret = tokens.create(home, "manager", "ops")
    member, member_secret = tokens.create(home, "member")
    assert manager_secret.startswith(f"cpt_{manager.token_id}_")

    assert tokens.verify(home, manager_secret) == manager
    assert tokens.verify(home, member_secret) == member
    assert tokens.allows(manager, "manager") and not tokens.allows(member, "manager")
    wrong = manager_secret[:-4] + ("AAAA" if not manager_secret.endswith("AAAA") else "BBBB")
    swapped = f"cpt_{member.token_id}_{manager_secret.split('_', 3)[3]}"
    for bad in (
        wrong,
        swapped,
        "cpt_tok_nothere_x",
        "cpt_",
        "Bearer x",
        "",
        None,
        f"cpt_{manager.token_id}",
        manager_secret.replace("cpt_", "xyz_", 1),
    ):
        assert tokens.verify(home, bad) is None, bad

    listed = tokens.records(home)
    assert [t.token_id for t in listed] == sorted([manager.token_id, member.token_id])
    assert {t.token_id: t for t in listed} == {manager.token_id: manager, member.token_id: member}
    stored = stored_tokens(ledgers, home)  # the hash only: never the secret
    assert set(stored) == {manager.token_id, member.token_id}
    assert stored[manager.token_id]["sha256"] == manager.sha256
    assert stored[manager.token_id]["label"] == "ops" and stored[member.token_id]["label"] is None
    assert manager_secret.split("_", 3)[3] not in json.dumps(stored)
    if ledgers.postgres:  # nothing of them in the home's files
        assert not (home.root / "tokens").exists()

    revoked = tokens.revoke(home, member.token_id)
    assert revoked.revoked_at is not None and revoked.token_id == member.token_id
    assert tokens.verify(home, member_secret) is None
    assert tokens.verify(home, manager_secret) == manager  # the other one is untouched
    assert tokens.revoke(home, member.token_id) == revoked  # idempotent: the first time stays
    assert [t.revoked_at for t in tokens.records(home) if t.token_id == member.token_id] == [
        revoked.revoked_at
    ]
    assert stored_tokens(ledgers, home)[member.token_id]["revoked"] is True

    for token_id, code in (
        ("tok_01M8QKC3762GQX170E6ZTSANPV", "unknown_token"),
        ("nope", "unknown_token"),
        ("tok_../x", "unknown_token"),
    ):
        with pytest.raises(CaptainError) as err:
            tokens.revoke(home, token_id)
        assert err.value.code == code
    for role, label in (("admin", None), ("member", "a\nb")):
        with pytest.raises(CaptainError) as err:
            tokens.create(home, role, label)
        assert err.value.code == ("invalid_argument" if role == "admin" else "invalid_text")
    assert len(tokens.records(home)) == 2  # the refusals stored nothing


def test_the_workspace_is_minted_once_and_a_read_only_home_mints_nothing(
    tmp_path: Path, ledgers
) -> None:
    home = ledgers.home(tmp_path / "home")
    looking = Home(home.root, read_only=True)
    assert tokens.workspace_id(looking) is None
    assert tokens.store_for(home).workspace() is None  # the look minted nothing
    assert not (home.root / "workspace.json").exists()

    first = tokens.workspace_id(home)
    assert first.startswith("ws_")
    assert tokens.workspace_id(home) == first == tokens.workspace_id(looking)
    assert tokens.workspace_id(Home(home.root)) == first
    if ledgers.postgres:
        assert not (home.root / "workspace.json").exists()
        with ledgers.connect(backend.backend_for(home).location.url) as conn:
            assert conn.execute("SELECT workspace_id FROM ledger_meta").fetchall() == [(first,)]
    else:
        assert json.loads((home.root / "workspace.json").read_text())["workspace_id"] == first


def _shared_homes(tmp_path: Path, made, n: int = 2) -> list[Home]:
    """``n`` homes (standing for hosts) whose ``[ledger] url`` is one fresh database's."""
    url = made.fresh_url()
    homes = []
    for i in range(n):
        root = tmp_path / f"host-{i}"
        Home(root)
        (root / "config.toml").write_text(f'[ledger]\nurl = "{url}"\n')
        homes.append(Home(root))
    return homes


def test_two_homes_on_one_database_share_tokens_and_workspace(request, tmp_path: Path) -> None:
    with open_ledgers(request, "postgresql") as made:
        a, b = _shared_homes(tmp_path, made)
        record, secret = tokens.create(a, "manager", "shared")
        assert tokens.verify(b, secret) == record  # made through A, accepted by B
        assert tokens.records(b) == tokens.records(a) == [record]
        revoked = tokens.revoke(b, record.token_id)  # revoked through B ...
        assert tokens.verify(a, secret) is None  # ... refused by A at once
        assert tokens.records(a) == [revoked]
        assert tokens.workspace_id(a) == tokens.workspace_id(b)
        assert tokens.workspace_id(Home(a.root, read_only=True)) == tokens.workspace_id(b)


def test_two_first_uses_at_once_agree_on_one_workspace(request, tmp_path: Path) -> None:
    """Several homes on one fresh database ask for the workspace at the same moment (one
    thread each: one connection each): every one gets the same ID, and one row is stored."""
    with open_ledgers(request, "postgresql") as made:
        homes = _shared_homes(tmp_path, made, 4)
        for home in homes:  # connect first, so the race is the INSERTs, not the connects
            assert tokens.store_for(home).workspace() is None
        start = threading.Barrier(len(homes))
        got: list[str] = []

        def first_use(home: Home) -> None:
            store = tokens.store_for(home)
            store.workspace()  # this thread's connection, made before the barrier
            start.wait(timeout=20)
            got.append(tokens.workspace_id(home))

        threads = [threading.Thread(target=first_use, args=(h,)) for h in homes]
        for t in threads:
            t.start()
        for t in threads:
            t.join(timeout=30)
        assert len(got) == len(homes) and len(set(got)) == 1, got
        with made.connect(made.urls[-1]) as conn:
            assert conn.execute("SELECT count(*) FROM ledger_meta").fetchone()[0] == 1
