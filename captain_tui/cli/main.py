"""The ``captain`` command line: the parser, and ``main`` turning every outcome into an exit.

Captain-side commands are ``captain_tui.cli.captain_commands`` (and ``work_commands``,
``ledger_commands``, ``serve``); the crew's own are ``captain_tui.cli.crew_commands``. The
crew-side path (check, ask, done, inbox) builds only its own parser and imports only
``state``: it runs inside agent panes on every tool call, so it must start fast and never
pull in textual or libtmux.

Nothing is imported here at the top but ``os`` and ``sys``: the budget's gate before each
of an agent's tool calls starts here too, and with no budget it answers before anything
else is imported (``state.crew_side.gate``); each path imports what it uses.
"""

from __future__ import annotations

import os
import sys

TYPE_CHECKING = False  # typing's own import costs every command a few ms (it loads re)
if TYPE_CHECKING:
    import argparse
    from collections.abc import Sequence

    from captain_tui.cli.args import Skipped
    from captain_tui.cli.out import Out

CREW_SIDE = frozenset({"check", "ask", "done", "inbox"})
# the commands each extension module adds: build_parser imports one only for its own
EXTENSIONS = {
    "work": "work_commands",
    "deliveries": "work_commands",
    "serve": "serve",
    "tokens": "serve",
    "ledger": "ledger_commands",
    "diff": "review_commands",
}
# every command's name: one being run gets only its own parser (a test holds this to the
# whole parser's; a name missing here would get the whole parser, slower but the same)
COMMANDS = (
    CREW_SIDE
    | EXTENSIONS.keys()
    | {
        "crew",
        "assign",
        "tell",
        "answer",
        "wait",
        "approvals",
        "approve",
        "demo",
        "watch",
        "status",
        "dismiss",
        "land",
        "hook",
    }
)
_SINGLE_POSITIONALS = ("name", "message", "question", "question_id", "action")


def build_parser(only: str | None = None, inner: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or with ``only`` the parser that can run that one command (the
    others are left out: their names are then unknown, so pass only a command's name); of
    a command with commands of its own (``work``), ``inner`` names the one being run, the
    word after it (``list``), and only its parser is built when it is one of them."""
    import argparse

    from captain_tui.cli import captain_commands, crew_commands
    from captain_tui.cli.args import Parser, Skipped, Version, left_out, seconds
    from captain_tui.cli.out import PROG
    from state.vocab import BUDGET_MAX_USD, BUDGET_MIN_USD

    common = argparse.ArgumentParser(add_help=False)
    common.add_argument(
        "--home",
        metavar="DIR",
        help="the captain home (default: $CAPTAIN_HOME, else the user state dir)",
    )
    common.add_argument("--json", action="store_true", help="print one JSON object")

    parser = Parser(
        prog=PROG,
        description="Run a crew of coding agents from one cockpit. "
        "With no command, open the cockpit.",
        epilog="Crew-side commands (check, ask, done, inbox) read CAPTAIN_* from "
        "the crew's environment. See README.md for the protocol.",
    )
    parser.add_argument(
        "--home",
        dest="main_home",
        metavar="DIR",
        help="with no command: open the cockpit on this home",
    )
    parser.add_argument("--version", action=Version)
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=Parser)

    def add(name: str, help_text: str, func) -> argparse.ArgumentParser | Skipped:
        if left_out(name, only, COMMANDS):
            return Skipped()
        # typeshed wants parents of the subparsers' class (Parser); argparse takes any parser
        p = sub.add_parser(name, parents=[common], help=help_text, description=help_text)  # type: ignore[list-item]
        p.set_defaults(func=func)
        return p

    def grants(p, inherit: bool) -> None:
        tail = " (omitted: inherit from the handoff)" if inherit else ""
        p.add_argument(
            "--owns",
            action="append",
            metavar="PATH",
            help="a path this crew owns (at most 32, each at most 4096 bytes); repeatable" + tail,
        )
        p.add_argument(
            "--allow",
            action="append",
            metavar="ACTION",
            help="a granted action (read, search, edit, test, build, format, commit, "
            "version, delete); repeatable" + tail,
        )

    def budget(p, what: str) -> None:
        p.add_argument(
            "--budget-usd",
            metavar="AMOUNT",
            help=f"{what}, in US dollars from {BUDGET_MIN_USD} to {BUDGET_MAX_USD:,.0f}. When "
            "the measured spend reaches 80 %% of it the captain is told; at 100 %% the "
            "agent's tool calls are refused and the crew is held (docs/budgets.md)",
        )

    p = add("crew", "Recruit a crew member with its first assignment.", captain_commands.cmd_crew)
    p.add_argument("name", metavar="NAME")
    p.add_argument("--task", required=True, metavar="TEXT", help="the first assignment")
    grants(p, inherit=True)
    p.add_argument(
        "--handoff", metavar="ID", help="re-recruit a dismissed name: its last assignment ID"
    )
    p.add_argument("--cwd", metavar="DIR", help="the project directory (default: here)")
    p.add_argument(
        "--agent",
        choices=("claude", "codex", "pi", "shell"),
        help="what runs in the pane (default: shell; claude, codex and pi get captain's hooks)",
    )
    p.add_argument(
        "--command",
        dest="program",
        metavar="CMD",
        help="run this program instead (hookless; at most 8 KiB)",
    )
    p.add_argument(
        "--socket",
        metavar="NAME|PATH",
        help="tmux server (default: $CAPTAIN_TMUX_SOCKET, the current tmux, else 'captain')",
    )
    p.add_argument(
        "--session",
        default="captain",
        metavar="NAME",
        help="tmux session for crew windows (default: captain)",
    )
    p.add_argument(
        "--no-launch",
        action="store_true",
        help="record the crew only; start its process yourself with the printed env",
    )
    p.add_argument(
        "--no-worktree",
        action="store_true",
        help="share the project's checkout instead of a worktree of its own on its own "
        "branch (the default in a git project unless [worktree] enabled = false; "
        "docs/worktrees.md)",
    )
    budget(p, "the first assignment's budget (default: [crew] budget_usd, else none)")

    p = add(
        "assign",
        "Start the next assignment after acknowledged completion.",
        captain_commands.cmd_assign,
    )
    p.add_argument("name", metavar="NAME")
    p.add_argument("--task", required=True, metavar="TEXT")
    p.add_argument("--handoff", required=True, metavar="ID", help="the finished assignment's ID")
    grants(p, inherit=True)
    budget(p, "this assignment's budget (default: [crew] budget_usd, else none)")

    p = add(
        "tell",
        "Append a follow-up message to the crew's active assignment, or set its budget.",
        captain_commands.cmd_tell,
    )
    p.add_argument("name", metavar="NAME")
    p.add_argument("message", metavar="MESSAGE", nargs="?", help="(optional with --budget-usd)")
    p.add_argument("--assignment", required=True, metavar="ID")
    budget(
        p,
        "the assignment's new budget; raised past the spend, it releases a crew held by "
        "its budget (its next tool call runs)",
    )

    p = add("answer", "Answer the crew's pending question.", captain_commands.cmd_answer)
    p.add_argument("name", metavar="NAME")
    p.add_argument("question_id", metavar="QUESTION_ID")
    p.add_argument("message", metavar="MESSAGE")
    p.add_argument("--assignment", required=True, metavar="ID")

    p = add(
        "wait",
        "Wait for the next notification from a crew (returned once; then --ack).",
        captain_commands.cmd_wait,
    )
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("name", nargs="?", metavar="NAME")
    who.add_argument("--all", action="store_true", help="any crew")
    p.add_argument(
        "--timeout",
        type=seconds,
        metavar="SECONDS",
        help="give up after this long (0 polls once; default [crew] wait_timeout, 86400)",
    )
    p.add_argument("--ack", metavar="DELIVERY_ID", help="acknowledge this delivery first")

    p = add(
        "approvals",
        "List the approval requests crews' agents hold open for you, oldest first.",
        captain_commands.cmd_approvals,
    )
    p.add_argument("name", nargs="?", metavar="NAME", help="one crew's only")

    p = add(
        "approve",
        "Decide one approval request: the agent's hook answers with it (once, while the "
        "request is open; otherwise the agent's own prompt stays).",
        captain_commands.cmd_approve,
    )
    p.add_argument("name", metavar="NAME")
    p.add_argument("request_id", metavar="REQUEST_ID")
    how = p.add_mutually_exclusive_group(required=True)
    how.add_argument("--allow", dest="decision", action="store_const", const="allow")
    how.add_argument(
        "--allow-session",
        dest="decision",
        action="store_const",
        const="allow_session",
        help="allow, and the same for the rest of the agent's session (Claude Code, pi)",
    )
    how.add_argument(
        "--deny", dest="decision", action="store_const", const="deny", help="needs --reason"
    )
    p.add_argument(
        "--reason", default="", metavar="TEXT", help="why; a denial's reason is told to the agent"
    )

    p = add(
        "demo",
        "Try captain: three simulated crew in a private tmux, and the cockpit.",
        captain_commands.cmd_demo,
    )
    p.add_argument("--keep", action="store_true", help="keep the demo home afterwards")

    add(
        "watch",
        "Ring doorbells, check panes, purge expired webhook bodies and print each "
        "new notification as a JSON line, until interrupted.",
        captain_commands.cmd_watch,
    )

    p = add(
        "status",
        "List the crew and what each is waiting on, and which ledger is in "
        "use (exit 1 when it cannot be used).",
        captain_commands.cmd_status,
    )
    p.add_argument("--all", action="store_true", help="include dismissed crew")

    p = add(
        "dismiss",
        "Retire a crew member; its unread mail bounces. Its worktree and branch are removed "
        "when everything on them has landed (or nothing was done), else kept and said so.",
        captain_commands.cmd_dismiss,
    )
    p.add_argument("name", metavar="NAME")
    p.add_argument(
        "--discard",
        action="store_true",
        help="remove the crew's worktree and branch even with work not on the base branch "
        "(recorded on the crew's log); also removes what an earlier dismissal kept",
    )

    p = add(
        "land",
        "Land a done assignment's branch onto its base branch: one land at a time per "
        "repository, merged or rebased per [review] land, [review] test_command run on the "
        "result, the base moved only if all passed (docs/landing.md).",
        captain_commands.cmd_land,
    )
    p.add_argument("name", metavar="NAME")
    p.add_argument("--assignment", required=True, metavar="ID", help="the done assignment")
    p.add_argument(
        "--allow-outside",
        action="store_true",
        help="land even paths outside the crew's --owns (needs --reason; recorded)",
    )
    p.add_argument("--reason", metavar="TEXT", help="why, with --allow-outside (recorded)")
    p.add_argument(
        "--tell",
        action="store_true",
        help="on a conflict, hand the crew the files as its next assignment (same branch)",
    )

    p = add(
        "check",
        "Crew: is ACTION on PATHs granted, judged by what each path is now "
        "(links followed)? Executes nothing; exit 0 yes, 1 no.",
        crew_commands.cmd_check,
    )
    p.add_argument("name", metavar="NAME")
    p.add_argument("action", metavar="ACTION")
    p.add_argument("paths", nargs="*", metavar="PATH")
    p.add_argument("--assignment", metavar="ID")

    p = add("ask", "Crew: ask the captain one question, then stop.", crew_commands.cmd_ask)
    p.add_argument("name", metavar="NAME")
    p.add_argument("question", metavar="QUESTION")
    p.add_argument("--assignment", metavar="ID")

    p = add("done", "Crew: finish the assignment with a report.", crew_commands.cmd_done)
    p.add_argument("name", metavar="NAME")
    p.add_argument("--report", metavar="TEXT", help="what changed and how it was checked")
    p.add_argument("--assignment", metavar="ID")

    p = add(
        "inbox",
        "Crew: print unread mail oldest first, then mark it read (run by the "
        "captain: a peek that marks nothing read).",
        crew_commands.cmd_inbox,
    )
    p.add_argument("name", metavar="NAME")

    # run by agent CLIs and tmux, dispatched before argparse (main); here for --help only
    p = add(
        "hook",
        "Run by the crew's agent CLI and its tmux window, never by people: "
        "delivers mail, records turns, spend and deaths, and refuses tool calls past an "
        "assignment's budget. Always exits 0 (fails open).",
        None,
    )
    p.add_argument("agent", metavar="AGENT", help="claude | codex | pi | tmux")
    p.add_argument("event", metavar="EVENT", help="the hook event (e.g. Stop, notify, pane-died)")
    p.add_argument(
        "payload", nargs="?", metavar="PAYLOAD", help="the event's JSON (else read from stdin)"
    )

    from importlib import import_module

    for module in dict.fromkeys(EXTENSIONS.values()):  # in the order --help lists them
        if only is None or EXTENSIONS.get(only) == module:
            import_module(f"captain_tui.cli.{module}").add_commands(
                sub, common, Parser, only=only, inner=inner
            )
    return parser


def _warn(path: str, reason: str, moved: bool) -> None:
    """A file in the home the store moved to quarantine, or reports and leaves alone (a
    broken config.toml); said as it happens, so a long-running ``serve`` says it too."""
    from captain_tui.cli.out import PROG, printable

    line = (
        (
            f"{PROG}: warning: quarantined {printable(path)}: {printable(reason)} "
            "(see quarantine/ in the home)"
        )
        if moved
        else f"{PROG}: warning: {printable(path)} {printable(reason)}"
    )
    try:
        print(line, file=sys.stderr, flush=True)
    except (OSError, ValueError):
        pass  # stderr gone: the warning must not fail the read that found the file


def _cockpit(home_arg: str | None) -> int:
    """``captain`` alone: the cockpit on the home."""
    from pathlib import Path

    from captain_tui.cli.args import caller, check_home
    from captain_tui.cli.out import Out
    from state.crew.guards import check_captain
    from state.errors import CaptainError
    from state.home import Home, default_home

    try:
        check_captain(caller(), "the cockpit")  # a crew process never opens it
        home = Home(Path(check_home(home_arg)) if home_arg is not None else default_home())
        home.config()  # invalid_config: said here, before the screen is taken
    except CaptainError as err:
        Out(False).refuse(err)
        return 1
    from captain_tui.cockpit.app import run_cockpit

    return run_cockpit(home)


def _hook(argv: list[str]) -> int:
    """``captain hook AGENT EVENT [PAYLOAD]``, run by agent CLIs, never by people.

    Outside argparse on purpose: a hook fails open. Whatever goes wrong, the agent gets
    exit 0 (for Claude Code, exit 2 would block it) and a line on stderr.
    """
    try:
        if _gate_open(argv):
            return 0
        if argv[:1] == ["tmux"]:  # a crew window's pane-died hook (runtime/death_watch.py)
            from captain_tui.runtime.death_watch import run_hook as tmux_hook

            return tmux_hook(argv[1:], os.environ)
        from captain_tui.agents.hooks import run_hook

        agent = argv[0] if argv else ""
        event = argv[1] if len(argv) > 1 else ""
        payload = argv[2] if len(argv) > 2 else None
        return run_hook(agent, event, payload, sys.stdin, sys.stdout, os.environ)
    except BaseException as exc:  # noqa: BLE001 - fail open, always
        try:
            from captain_tui.cli.out import PROG

            print(f"{PROG}: hook failed open: {type(exc).__name__}: {exc}", file=sys.stderr)
        except Exception:  # noqa: BLE001
            pass
        return 0


def _gate_open(argv: list[str]) -> bool:
    """The budget's gate before a tool call (``captain hook claude PreToolUse``...) when
    the crew surely has no budget: nothing to say, decided from the smallest read before
    anything else is imported (``state.crew_side.gate``). What the agent sent on stdin is
    read first all the same (the full gate reads at most ``MAX_HOOK_INPUT``), so its write
    never meets a closed pipe. False (whatever went wrong here too): the full hook decides."""
    try:
        from state.crew_side.gate import GATES, MAX_INPUT, unbudgeted

        if tuple(argv[:2]) not in GATES or not unbudgeted(os.environ):
            return False
    except Exception:  # noqa: BLE001 - never a reason to skip the full gate
        return False
    try:
        stream = getattr(sys.stdin, "buffer", None)
        if len(argv) < 3 and stream is not None and not stream.isatty():
            stream.read(MAX_INPUT + 1)
    except (OSError, ValueError):
        pass  # nothing to read: nothing was owed
    return True


# A reader that closed its end of our stdout (``captain status --json | head -c 300``):
# the command ends quietly with the status a shell shows for a program SIGPIPE ended
# (128 + 13), as ``cat`` or ``ls`` would; whatever the command wrote to the home it wrote
# in full before printing, so nothing is half-written.
CLOSED_STDOUT = 141


def main(argv: Sequence[str] | None = None) -> int:
    """Run one command and return its exit status (``CLOSED_STDOUT`` when the reader of its
    output went away first: no traceback, no refusal, nothing more printed)."""
    try:
        return _main(argv)
    except BrokenPipeError:
        return _output_closed()


def _output_closed() -> int:
    """Point stdout and stderr, whichever went away, at /dev/null: the interpreter's last
    flush must not raise again (and print "Exception ignored ..." on the way out)."""
    devnull = os.open(os.devnull, os.O_WRONLY)
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.flush()
        except (OSError, ValueError):
            try:
                os.dup2(devnull, stream.fileno())
            except (OSError, ValueError):
                pass
    os.close(devnull)
    return CLOSED_STDOUT


def _main(argv: Sequence[str] | None) -> int:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")  # type: ignore[union-attr]  # caught below
        except (AttributeError, ValueError):
            pass
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["hook"] and not set(argv[1:2]) & {"-h", "--help"}:
        return _hook(argv[1:])  # `captain hook --help` alone goes to argparse: its usage
    # a crew's command runs on every tool call, a captain's as often when the captain is an
    # agent: build only the parser of the command being run (every one costs its start)
    only = argv[0] if argv[:1] and argv[0] in COMMANDS else None
    parser = build_parser(only, argv[1] if only in EXTENSIONS and argv[1:2] else None)
    from captain_tui.cli.args import UsageError, wants_json
    from captain_tui.cli.out import Out

    try:
        args = parser.parse_args(argv)
    except UsageError as err:
        return err.say(wants_json(argv))
    for dest in _SINGLE_POSITIONALS:
        # CPython 3.11's argparse strips a literal "--" that follows "--" and hands over []
        if isinstance(getattr(args, dest, None), list):
            setattr(args, dest, " ".join(getattr(args, dest)) or "--")
    if args.command is None:
        return _cockpit(args.main_home)
    if args.main_home is not None and getattr(args, "home", None) is None:
        args.home = args.main_home  # `captain --home DIR status` means what it says
    out = Out(getattr(args, "json", False))
    try:
        return _run(args, out)
    finally:
        home = getattr(args, "opened_home", None)
        if home is not None:
            home.close()  # the command's ledger handle: its database connections


def _run(args, out: Out) -> int:
    from captain_tui.cli.args import check_named
    from state.errors import CaptainError
    from state.store import Reports

    args.reports = Reports(_warn)  # the command's home's (home_of): each said as it happens
    try:
        check_named(args)
        return args.func(args, out)
    except CaptainError as err:
        out.refuse(err)
        if err.after_report is not None:
            err.after_report()
        return 1
    except BrokenPipeError:
        raise  # our reader went away: not the store's failure (see main)
    except OSError as exc:
        from captain_tui.usecases import store_error

        out.refuse(store_error(exc))
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - no traceback ever reaches a person
        out.refuse(CaptainError("internal_error", f"unexpected {type(exc).__name__}: {exc}"))
        return 1


if __name__ == "__main__":
    sys.exit(main())
