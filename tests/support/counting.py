"""Counting what a reader asks of the disk or the database, on the way through to the real
thing: every directory entry ``os.scandir`` hands out (each store listing goes through it),
and every statement the PostgreSQL backend runs (``PostgresBackend.run``, its one way to
the database) with the rows it fetched. Nothing is replaced: each call reaches the real
directory or server."""

from __future__ import annotations

import os


class Entries:
    """``os.scandir``, counting the entries it hands out (``read``)."""

    def __init__(self, monkeypatch) -> None:
        self.read = 0
        real = os.scandir
        counter = self

        class Counted:
            def __init__(self, path=".") -> None:
                self.it = real(path)

            def __iter__(self):
                for entry in self.it:
                    counter.read += 1
                    yield entry

            def __enter__(self):
                return self

            def __exit__(self, *exc) -> None:
                self.it.close()

            def close(self) -> None:
                self.it.close()

        monkeypatch.setattr(os, "scandir", Counted)


class Statements:
    """``PostgresBackend.run``, counting statements and the rows they fetched."""

    def __init__(self, monkeypatch) -> None:
        from state.work.pg_backend import PostgresBackend

        self.statements: list[str] = []
        self.rows = 0
        real = PostgresBackend.run
        counter = self

        def run(backend, sql, params=(), *, fetch=None, wait=True):
            counter.statements.append(sql)
            out = real(backend, sql, params, fetch=fetch, wait=wait)
            if fetch == "all":
                counter.rows += len(out)
            elif fetch == "one" and out is not None:
                counter.rows += 1
            return out

        monkeypatch.setattr(PostgresBackend, "run", run)

    def take(self) -> tuple[int, int]:
        out = (len(self.statements), self.rows)
        self.statements, self.rows = [], 0
        return out
