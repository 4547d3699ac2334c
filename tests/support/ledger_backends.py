"""The ledger's suites on both backends: a home whose work ledger is its files, or one whose
``[ledger] url`` names a fresh, migrated PostgreSQL ledger (tests/support/postgres.py).

``ledger_backend`` is parametrized ``files`` / ``postgresql``; a test asks ``ledgers`` for
as many fresh ledgers as it needs (``ledgers.home(path)`` makes a home on one). On
PostgreSQL the test gets one database of its own; each fresh ledger in it is a schema of
its own (``search_path`` in the URL's ``options``), migrated by ``captain ledger migrate``'s
code, so a Hypothesis run that makes forty homes makes forty schemas, not forty databases.
Every connection the backend opened is closed before the database is dropped.

Use: ask for ``ledgers`` (or ``cli_ledger``): tests/conftest.py registers this module and
support.postgres (whose ``pg_server`` ``ledgers`` asks for only on PostgreSQL) with
``pytest_plugins``.

The real CLI and server on both backends: ``cli_ledger`` (files unless a test is marked
``ON_BOTH``, i.e. parametrized ``files`` / ``postgresql`` indirectly) puts a fresh, migrated
ledger's URL in ``CAPTAIN_LEDGER_URL`` for the test's own process (``monkeypatch``) and for
every CLI or server process it starts (``process_env``, which the ``cli`` fixture's ``Cli``
and support/api.py's ``cli_env`` add: they drop the developer's own ``CAPTAIN_*`` variables,
so a real ledger is never reached by accident).
"""

from __future__ import annotations

import contextlib
import itertools
from pathlib import Path
from urllib.parse import quote

import pytest

from state.home import Home

BACKENDS = ("files", "postgresql")


class Ledgers:
    """Fresh ledgers of one kind for one test."""

    def __init__(self, kind: str, server=None, dbname: str | None = None) -> None:
        self.kind = kind
        self.server = server
        self.dbname = dbname
        self.urls: list[str] = []
        self._n = itertools.count(1)

    @property
    def postgres(self) -> bool:
        return self.kind == "postgresql"

    def fresh_url(self) -> str | None:
        """A new, empty, migrated ledger's URL (None on files: the home is the ledger)."""
        if not self.postgres:
            return None
        import psycopg

        from state.work import pg_schema

        schema = f"ledger_{next(self._n)}"
        base = self.server.url(self.dbname)
        with psycopg.connect(base, autocommit=True) as conn:
            conn.execute(f'CREATE SCHEMA "{schema}"')
        url = f"{base}?options={quote(f'-csearch_path={schema}', safe='')}"
        with psycopg.connect(url) as conn:
            pg_schema.migrate(conn)
        self.urls.append(url)
        return url

    def config(self, url: str | None) -> str:
        """The ``[ledger] url`` line for config.toml ("" on files)."""
        return f'url = "{url}"\n' if url else ""

    def home(self, root: Path, extra: str = "") -> Home:
        """A home at ``root`` on a fresh ledger; ``extra`` goes in its ``[ledger]`` table."""
        url = self.fresh_url()
        home = Home(root)  # makes the home before anything is written into it
        if not (url or extra):
            return home
        (root / "config.toml").write_text(f"[ledger]\n{self.config(url)}{extra}")
        return Home(root)  # config.toml is read once per Home: start from the file

    def forget(self, url: str | None) -> None:
        """Close the backend's connections to ``url`` (a run's ledger is done with)."""
        if url:
            close_backends(url)

    def connect(self, url: str):
        """An independent connection (not the backend's): what another host would see."""
        import psycopg

        return psycopg.connect(url, autocommit=True)


def close_backends(url: str | None = None) -> None:
    """End the connections of every PostgreSQL ledger backend this process holds (those on
    ``url`` only, with one): before the database they use is dropped or copied. No module
    keeps a list of them (each ``Home``'s ledger handle owns its own), so the garbage
    collector's list of live objects is asked."""
    import gc

    from state.work.pg_backend import PostgresBackend

    for obj in gc.get_objects():
        if isinstance(obj, PostgresBackend) and (url is None or obj.location.url == url):
            obj.close()


@pytest.fixture(params=BACKENDS)
def ledger_backend(request) -> str:
    return request.param


@contextlib.contextmanager
def open_ledgers(request, kind: str):
    """``Ledgers`` of ``kind``; on PostgreSQL in a database of their own, dropped (every
    connection the backend opened closed first) when the block ends."""
    if kind == "files":
        yield Ledgers("files")
        return
    server = request.getfixturevalue("pg_server")
    name = server.create_database()
    made = Ledgers("postgresql", server, name)
    try:
        yield made
    finally:
        close_backends()
        server.drop_database(name)


@pytest.fixture
def ledgers(request, ledger_backend):
    with open_ledgers(request, ledger_backend) as made:
        yield made


# -- the real CLI and server on a backend -------------------------------------------------------

LEDGER_ENV = "CAPTAIN_LEDGER_URL"
_PROCESS_ENV: dict[str, str] = {}
ON_BOTH = pytest.mark.parametrize("cli_ledger", BACKENDS, indirect=True)


def process_env() -> dict[str, str]:
    """What every real CLI or server process gets on top of its environment: the ledger's
    URL while a test runs on PostgreSQL (``cli_ledger``), else nothing."""
    return dict(_PROCESS_ENV)


@pytest.fixture
def cli_ledger(request, monkeypatch):
    """The test's ledger: None on files (the home is the ledger), else a fresh, migrated
    PostgreSQL ledger's URL, in ``CAPTAIN_LEDGER_URL`` here and in every process started."""
    kind = getattr(request, "param", "files")
    with open_ledgers(request, kind) as made:
        url = made.fresh_url()
        if url is None:
            yield None
            return
        monkeypatch.setenv(LEDGER_ENV, url)
        _PROCESS_ENV[LEDGER_ENV] = url
        try:
            yield url
        finally:
            _PROCESS_ENV.pop(LEDGER_ENV, None)


def stored_input_and_details(root: Path, url: str | None, work_id: str) -> tuple[str, list[str]]:
    """What the ledger stored for ``work_id``, read past captain (so a test can show that
    an answer leaves it out): the input's text and every event detail. From the home's
    files, or from the rows on a connection of our own, as another host would read them."""
    if url is None:
        item = root / "work" / work_id
        return (
            (item / "input.json").read_text(),
            [p.read_text() for p in (item / "events").iterdir()],
        )
    import psycopg

    with psycopg.connect(url) as conn:
        [(stored,)] = conn.execute(
            "SELECT input FROM work_inputs WHERE work_id = %s", (work_id,)
        ).fetchall()
        details = [
            bytes(d).decode()
            for (d,) in conn.execute(
                "SELECT detail FROM work_events WHERE work_id = %s AND detail IS NOT NULL",
                (work_id,),
            )
        ]
    return bytes(stored).decode(), details
