"""Connecting to a PostgreSQL ledger, and migrating its schema (``captain ledger migrate``).

The only module that imports psycopg, and only inside functions: importing ``state.*``
never loads a driver, so a home that never configures a database needs none installed.
Every failure becomes a refusal with a stable code and a sentence that names the host and
port tried, with the URL's password redacted (``LedgerLocation.shown``/``scrub``):

- ``postgres_not_installed``: psycopg is missing (``install_hint``: captain is installed
  from its checkout, not from an index, so the hint names the checkout's extra);
- ``ledger_unreachable``: no connection (refused, timed out, authentication, no database);
- ``invalid_ledger_url``: libpq could not read the URL after all;
- ``ledger_error``: the database refused a statement (e.g. no right to create tables).
"""

from __future__ import annotations

from types import ModuleType
from typing import TYPE_CHECKING, Any

from state.errors import CaptainError
from state.store import Reports
from state.work import pg_schema
from state.work.location import LedgerLocation

if TYPE_CHECKING:  # for the checker only: at run time psycopg loads in ``driver``
    from datetime import tzinfo

    import psycopg
    from psycopg.adapt import Loader

    # a connection and a cursor, as the ledger's modules hold them (they import no psycopg)
    Conn = psycopg.Connection[Any]
    Cursor = psycopg.Cursor[Any]

CONNECT_TIMEOUT = 10  # seconds per host libpq tries
DRIVER = "psycopg[binary]>=3.2,<4"  # pyproject.toml's postgres extra


def install_hint() -> str:
    """How to install the driver into the Python captain runs on. captain is installed
    from its checkout (the package is on no index), so ``pip install 'captain-tui[...]'``
    would find nothing: name the checkout's extra when captain runs from one, and the
    driver itself in every case."""
    import shlex
    import sys
    from pathlib import Path

    python = shlex.quote(sys.executable)
    hint = f"{python} -m pip install {shlex.quote(DRIVER)}"
    checkout = Path(__file__).resolve().parents[2]
    if (checkout / "pyproject.toml").is_file():
        extra = shlex.quote(f"{checkout}[postgres]")
        hint = f"{python} -m pip install -e {extra} (captain's checkout), or {hint}"
    return hint


def driver() -> ModuleType:
    """psycopg, or the refusal that says how to install it."""
    try:
        import psycopg
    except ImportError:
        raise CaptainError(
            "postgres_not_installed",
            "the ledger is on PostgreSQL, but its driver (psycopg 3) is not installed in "
            f"captain's Python: {install_hint()}",
        ) from None
    return psycopg


def _first_lines(text: object) -> str:
    joined = "; ".join(line.strip() for line in str(text).strip().splitlines() if line.strip())
    return joined.rstrip(".?! ") or "no reason given"


def connect(
    location: LedgerLocation, *, timeout: float = CONNECT_TIMEOUT, reports: Reports | None = None
) -> Conn:
    """An open psycopg connection (not autocommit) to ``location``'s database; ``reports``
    hears of a stored time it cannot hold (``_read_any_timestamp``)."""
    if not location.postgres or not location.url:
        raise CaptainError(
            "invalid_argument", f"the ledger is {location.describe()}, not a PostgreSQL database."
        )
    psycopg = driver()
    try:
        conn: Conn = psycopg.connect(
            location.url, connect_timeout=max(1, int(timeout)), application_name="captain"
        )
        _read_any_timestamp(conn, reports if reports is not None else Reports())
        return conn
    except psycopg.ProgrammingError as exc:  # libpq could not parse what we let through
        raise CaptainError(
            "invalid_ledger_url",
            f"libpq could not read the ledger URL {location.shown}: "
            f"{location.scrub(_first_lines(exc))}.",
        ) from None
    except psycopg.Error as exc:
        raise unreachable(location, exc) from None
    except (UnicodeError, ValueError) as exc:  # a host name libpq's lookup cannot encode
        raise CaptainError(
            "invalid_ledger_url",
            f"the ledger URL {location.shown} names a host that cannot be "
            f"looked up: {location.scrub(_first_lines(exc))}.",
        ) from None


def _read_any_timestamp(conn: Conn, reports: Reports) -> None:
    """A stored time Python cannot hold (``infinity``, a year past 9999: a row damaged past
    captain) is read as the nearest one it can, and said once, instead of failing the whole
    query: one damaged row must not take ``tokens list``, ``deliveries list`` or the
    workspace down with it (docs/ledger.md, "A corrupted row")."""
    from datetime import datetime, timezone

    from psycopg.types.datetime import TimestampLoader, TimestamptzLoader

    def clamped(base: type[Loader], tz: tzinfo | None) -> type[Loader]:
        class Clamped(base):  # type: ignore[valid-type, misc]  # a base chosen at run time
            def load(self, data: Any) -> Any:
                try:
                    return super().load(data)
                except driver().DataError:
                    low = bytes(data).lstrip().startswith(b"-")
                    shown = bytes(data)[:40].decode("ascii", "replace")
                    reports.once(
                        f"timestamp {shown}",
                        f"ledger timestamp {shown!r}",
                        "is out of the range captain reads (a row damaged "
                        "past captain); shown as the year "
                        f"{1 if low else 9999}, the row is otherwise served",
                    )
                    value = datetime.min if low else datetime.max
                    return value.replace(tzinfo=tz)

        return Clamped

    conn.adapters.register_loader("timestamptz", clamped(TimestamptzLoader, timezone.utc))
    conn.adapters.register_loader("timestamp", clamped(TimestampLoader, None))


def unreachable(location: LedgerLocation, exc: BaseException) -> CaptainError:
    tried = ", ".join(location.targets) or "the default socket"
    return CaptainError(
        "ledger_unreachable",
        f"could not connect to the ledger at {location.shown} (tried {tried}): "
        f"{location.scrub(_first_lines(exc))}. Check that the server is running and "
        "reachable from this host, and the user, password and database name.",
        url=location.shown,
    )


def refused(location: LedgerLocation, exc: BaseException) -> CaptainError:
    """A statement the database refused, as a ``ledger_error`` naming its SQLSTATE."""
    state = getattr(exc, "sqlstate", None) or "unknown"
    return CaptainError(
        "ledger_error",
        f"the ledger's database at {location.shown} refused: "
        f"{location.scrub(_first_lines(exc))} (SQLSTATE {state}).",
        url=location.shown,
        sqlstate=state,
    )


def migrate(location: LedgerLocation) -> pg_schema.Migrated:
    """Create or upgrade the schema at ``location`` (``pg_schema.migrate``)."""
    psycopg = driver()
    conn = connect(location)
    try:
        return pg_schema.migrate(conn)
    except psycopg.Error as exc:
        if conn.broken:  # the server went away mid-way: rolled back, nothing changed
            raise unreachable(location, exc) from None
        raise refused(location, exc) from None
    finally:
        conn.close()
