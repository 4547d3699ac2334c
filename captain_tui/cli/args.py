"""What every command reads from its arguments and environment: the home, the caller, and
the parser that answers a usage error with one line and exit 2 (never a traceback)."""

from __future__ import annotations

import argparse
import math
import sys
from collections.abc import Collection
from pathlib import Path
from typing import overload

from captain_tui.cli.out import printable

# Commands that only read open the home read-only: nothing is created, swept or moved, not
# even the home, so they work on a read-only disk and leave a home that is not there absent.
READ_ONLY = frozenset(
    {
        "status",
        "approvals",
        "work list",
        "work show",
        "deliveries list",
        "deliveries show",
        "tokens list",
        "ledger migrate",
    }
)


def command_of(args) -> str:
    """``status``, ``work list``...: the command and its subcommand, as typed."""
    sub = getattr(args, f"{args.command}_command", None)
    return f"{args.command} {sub}" if sub else args.command


def home_of(args):
    """The home ``--home`` names, else ``$CAPTAIN_HOME``, else the user state directory:
    one ``Home`` per command, kept on ``args`` (so its ledger is resolved once for the
    whole command, ``state.work.backend.handle_of``); ``main`` closes it at the end."""
    from state.home import Home, default_home

    home = getattr(args, "opened_home", None)
    if home is None:
        home = Home(
            Path(check_home(args.home)) if args.home is not None else default_home(),
            read_only=command_of(args) in READ_ONLY,
            reports=getattr(args, "reports", None),  # main's: printed as warnings
        )
        args.opened_home = home
    return home


@overload
def check_home(value: str) -> str: ...
@overload
def check_home(value: None) -> None: ...
def check_home(value: str | None) -> str | None:
    """``--home ''`` is a mistake, not a request for the default home."""
    if value is not None and not value.strip():
        from state.errors import CaptainError

        raise CaptainError(
            "invalid_home",
            "--home is empty; name the home's directory, or leave --home out for the default one.",
        )
    return value


# Options whose values name things (a tmux session or socket, a holder, a label, a
# directory, a program): they must be text. Undecodable bytes arrive as lone surrogates.
NAMED = (
    "session",
    "socket",
    "holder",
    "label",
    "home",
    "main_home",
    "cwd",
    "program",
    "endpoint",
    "owns",
    "source_delivery_id",
    "url",
)


def check_named(args) -> None:
    from state.errors import CaptainError
    from state.inputs import has_surrogate

    for dest in NAMED:
        value = getattr(args, dest, None)
        for item in value if isinstance(value, list) else [value]:
            if isinstance(item, str) and has_surrogate(item):
                flag = "--" + (
                    "home"
                    if dest == "main_home"
                    else "command"
                    if dest == "program"
                    else dest.replace("_", "-")
                )
                raise CaptainError("invalid_argument", f"{flag} is not valid UTF-8 text.")


def caller():
    """Who is calling: the captain, or the crew whose ``CAPTAIN_*`` environment this is."""
    from state.crew.guards import Context

    return Context.from_env()


def viewer(home) -> str | None:
    """Whose records this caller may see: None (everyone's) for the captain, else the
    calling crew's key once its identity holds (``guards.own_view``)."""
    from state.crew.guards import own_view
    from state.crew_side import door

    return own_view(caller(), lambda key: door.load(home, key))


def captain_only(command: str) -> None:
    """Refuse ``command`` to a crew process (``crew_forbidden``)."""
    from state.crew.guards import check_captain

    check_captain(caller(), command)


def seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a number of seconds >= 0")
    return value


class UsageError(SystemExit):
    """A command line argparse cannot take: exit 2. ``main`` says it, as one line after the
    usage on stderr, or with ``--json`` as a ``usage`` refusal on stdout (``say``)."""

    def __init__(self, parser: argparse.ArgumentParser, message: str) -> None:
        super().__init__(2)
        self.parser = parser
        self.message = message

    def say(self, as_json: bool) -> int:
        if as_json:
            from captain_tui.cli.out import Out
            from state.errors import CaptainError

            usage = " ".join(self.parser.format_usage().split())
            Out(True).refuse(CaptainError("usage", self.message, usage=usage))
        else:
            self.parser.print_usage(sys.stderr)
            print(
                f"{self.parser.prog}: error: {printable(self.message)}",  # echoes argv
                file=sys.stderr,
            )
        return 2


def wants_json(argv: list[str]) -> bool:
    """Whether the command line asks for JSON (``--json`` before any ``--``), read without
    argparse: a command line argparse refuses is still answered in the form asked for."""
    return "--json" in (argv[: argv.index("--")] if "--" in argv else argv)


class Parser(argparse.ArgumentParser):
    def error(self, message: str):  # usage errors: exit 2, one clear line, no traceback
        raise UsageError(self, message)

    def _check_value(self, action: argparse.Action, value) -> None:
        """An unknown command names the nearest known one (``stauts``: did you mean
        ``status``?); any other unknown choice too."""
        choices = action.choices
        if choices is None or value in choices:
            return
        import difflib  # only on this error: the crew-side path starts fast

        names = [str(c) for c in choices]
        near = difflib.get_close_matches(str(value), names, n=1, cutoff=0.6)
        hint = f"; did you mean {near[0]!r}?" if near else ""
        what = "command" if isinstance(choices, dict) else "choice"  # subcommands: a dict
        raise argparse.ArgumentError(
            action, f"unknown {what} {value!r}{hint} (choose from {', '.join(names)})"
        )


def left_out(name: str, wanted: str | None, names: Collection[str]) -> bool:
    """Whether the parser of command ``name`` is left out of this run's: the command line
    runs ``wanted``, another of ``names`` (the commands beside ``name``). A word that is none
    of them (a typo, ``-h``) gets them all, so its error or help lists every one."""
    return wanted in names and name != wanted


class Skipped:
    """Stands in for the parser of a command that is not being run (``left_out``): what is
    added to it goes nowhere. Building every command's parser costs a crew-side command
    ~40 ms, and ``captain work list`` ~10 ms for the work commands beside it."""

    def add_argument(self, *args, **kwargs) -> None:
        pass

    def add_mutually_exclusive_group(self, **kwargs) -> Skipped:
        return self


class Version(argparse.Action):
    """``--version``: the installed package's version, read only when asked for
    (``importlib.metadata`` costs every other command ~40 ms of its start)."""

    def __init__(
        self, option_strings, dest=argparse.SUPPRESS, default=argparse.SUPPRESS, help=None
    ):
        super().__init__(
            option_strings,
            dest=dest,
            default=default,
            nargs=0,
            help=help or "show program's version number and exit",
        )

    def __call__(self, parser, namespace, values, option_string=None) -> None:
        from captain_tui.cli.out import PROG

        parser._print_message(f"{PROG} {version()}\n", sys.stdout)
        parser.exit()


def version() -> str:
    """The installed package's version; said plainly when captain runs uninstalled."""
    from importlib import metadata

    try:
        return metadata.version("captain-tui")
    except metadata.PackageNotFoundError:
        return "(version unknown: not installed as a package)"
