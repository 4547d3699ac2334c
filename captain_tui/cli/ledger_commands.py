"""``captain ledger ...``: where the work ledger lives, and its PostgreSQL schema.

``captain ledger migrate [--url URL]`` creates or upgrades the schema of a PostgreSQL
ledger (``state.work.postgres``). Without ``--url`` it migrates the database this home is
configured for (``CAPTAIN_LEDGER_URL``, else ``[ledger] url`` in config.toml), and imports
the home's file ledger into it when the files hold one (``state.work.importer``). A URL's
password is never printed: every line shows it as ``***``.
"""

from __future__ import annotations

from captain_tui.cli.args import captain_only, home_of


def _location(args):
    from state.errors import CaptainError
    from state.work.location import ledger_location, parse_url

    if args.url is not None:
        return parse_url(args.url, origin="--url")
    location = ledger_location(home_of(args))
    if not location.postgres:
        raise CaptainError(
            "invalid_argument",
            f"this home's ledger is {location.describe()}, which needs no migration. To "
            "migrate a PostgreSQL ledger, pass --url postgresql://..., set "
            'CAPTAIN_LEDGER_URL, or put url = "postgresql://..." under [ledger] in the '
            "home's config.toml.",
        )
    return location


def cmd_migrate(args, out) -> int:
    from state.work import pg_schema, postgres

    captain_only("ledger migrate")
    location = _location(args)
    done = postgres.migrate(location)
    if done.applied:
        steps = ", ".join(str(v) for v in done.applied)
        human = (
            f"Migrated the ledger at {location.shown} from version {done.from_version} "
            f"to {done.version} (applied step {steps}): schema at version {done.version}."
        )
    else:
        human = (
            f"The ledger at {location.shown} is current; nothing to do: schema at "
            f"version {done.version}."
        )
    imported = _import(args, location)
    payload = {
        "url": location.shown,
        **done.as_json(),
        "latest": pg_schema.LATEST,
        "changed": bool(done.applied) or bool(imported and imported.new_items),
    }
    if imported is not None:
        payload["imported"] = imported.as_json()
        human += f"\nAlso {imported.sentence()}"
    out.ok(payload, human)
    return 0


def _import(args, location):
    """The home's file ledger into the database the home is pointed at (the one explicit
    switch: ``state.work.importer``), when its files hold one; None otherwise. A ``--url``
    that is not the home's own database imports nothing: the home is not moving there."""
    from state.errors import CaptainError
    from state.home import Home
    from state.work import importer, pg_backend
    from state.work.location import ledger_location

    home = home_of(args)
    if not home.root.is_dir() or not importer.held(home):
        return None
    try:
        own = ledger_location(home)
    except CaptainError:
        return None
    if not own.postgres or own.url != location.url:
        return None
    # the files are set aside afterwards: the one write this command makes in the home
    backend = pg_backend.PostgresBackend(location, home.store.reports)
    try:
        return importer.import_files(Home(home.root, reports=home.store.reports), backend)
    finally:
        backend.close()


def add_commands(sub, common, parser_class, **wanted) -> None:
    """Register ``ledger`` (with its own subcommands) on ``sub``."""
    # wanted (main's only, inner): few parsers here, all built
    text = (
        "The work ledger's storage: the file home by default, or a PostgreSQL database "
        "([ledger] url in config.toml, or CAPTAIN_LEDGER_URL)."
    )
    p = sub.add_parser("ledger", help=text, description=text)
    inner = p.add_subparsers(
        dest="ledger_command", metavar="COMMAND", required=True, parser_class=parser_class
    )
    text = (
        "Create or upgrade the PostgreSQL ledger's schema: idempotent, under an advisory "
        "lock (safe to run from two hosts at once). Prints the schema's version. A home "
        "whose own files hold a ledger (it worked on files before) has it imported into "
        "its database in one transaction, checked by counts; the files are then set "
        "aside under ledger-imported/ in the home."
    )
    q = inner.add_parser("migrate", parents=[common], help=text, description=text)
    q.set_defaults(func=cmd_migrate)
    q.add_argument(
        "--url",
        metavar="URL",
        help="postgresql://USER@HOST:PORT/DATABASE (default: CAPTAIN_LEDGER_URL, "
        "else [ledger] url in the home's config.toml). A password here is "
        "visible to other users in the process list: prefer PGPASSWORD or "
        "~/.pgpass",
    )
