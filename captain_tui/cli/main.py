"""The ``captain`` command line: captain-side and crew-side commands over one home.

The crew-side path (check, ask, done, inbox) imports only ``state``: it runs inside agent
panes on every tool call, so it must start fast and never pull in textual or libtmux.
"""

from __future__ import annotations

import argparse
import json
import math
import os
import re
import sys
from collections.abc import Sequence
from pathlib import Path

from state.errors import CaptainError

PROG = "captain"
CREW_SIDE = frozenset({"check", "ask", "done", "inbox"})


# -- output ---------------------------------------------------------------------------------


_SINGLE_POSITIONALS = ("name", "message", "question", "question_id", "action")
_UNPRINTABLE = re.compile(r"[\x00-\x1f\x7f-\x9f]")


def _printable(text: str) -> str:
    """A refusal is one line: any control character a person typed into an ID is shown
    escaped, never sent to the terminal (no escape sequences, no forged lines)."""
    return _UNPRINTABLE.sub(lambda m: m.group().encode("unicode_escape").decode(), text)


class Out:
    """Prints for people, or one JSON object for programs."""

    def __init__(self, as_json: bool) -> None:
        self.json = as_json

    def ok(self, payload: dict, human: str) -> None:
        if self.json:
            print(json.dumps({"ok": True, **payload}, ensure_ascii=False), flush=True)
        else:
            print(human, flush=True)

    def refuse(self, err: CaptainError) -> None:
        if self.json:
            print(json.dumps({"ok": False, "error": err.as_json()}, ensure_ascii=False),
                  flush=True)
            return
        print(f"{PROG}: [{err.code}] {_printable(err.message)}", file=sys.stderr, flush=True)
        for message in err.extra.get("messages", []):
            print(_message_block(message), flush=True)


def _when(stamp) -> str:
    return str(stamp).replace("T", " ")[:19] if stamp else "-"


def _message_block(m: dict) -> str:
    head = f"── {m['message_id']}  {m['kind']}  {_when(m['queued_at'])}"
    if m.get("question_id"):
        head += f"  (answers {m['question_id']})"
    body = "\n".join("   " + line for line in m["text"].splitlines() or [""])
    return f"{head}\n{body}"


def _table(rows: list[list[str]]) -> str:
    widths = [max(len(r[i]) for r in rows) for i in range(len(rows[0]))]
    return "\n".join("  ".join(c.ljust(w) for c, w in zip(r, widths)).rstrip() for r in rows)


# -- commands -------------------------------------------------------------------------------


def _home(args):
    from state.home import Home, default_home

    return Home(Path(args.home) if args.home else default_home())


def _ctx():
    from state.crew.rules import Context

    return Context.from_env()


def _doorbell(home, name: str) -> dict | None:
    """Try one ring right after writing mail; the mail is durable whatever happens here."""
    from captain_tui.runtime import doorbell

    try:
        o = doorbell.ring(home, name)
    except CaptainError as err:
        return {"action": "held", "gate": "tmux_unavailable", "detail": err.message}
    if o.action == "skipped":
        return None
    return {"action": o.action, "gate": o.gate, "detail": o.detail}


def _doorbell_line(bell: dict | None, name: str) -> str:
    if bell is None:
        return ""
    if bell["action"] == "rang":
        return f"\nRang {name}'s doorbell ({bell['detail']})."
    if bell["action"] == "held":
        return (f"\nThe doorbell is held ({bell['gate']}): {bell['detail']}. It rings when "
                f"that clears while a captain wait or watch runs.")
    if bell["action"] == "bounced":
        return f"\nBounced: {bell['detail']}."
    return ""


def cmd_crew(args, out: Out) -> int:
    from state.crew import protocol
    from state.inputs import crew_key

    if args.cwd is not None and not Path(args.cwd).is_dir():
        raise CaptainError("invalid_path", f"--cwd {args.cwd} is not a directory.")
    args.agent = args.agent or ("program" if args.program else "shell")
    home = _home(args)
    cwd = str(Path(args.cwd or ".").resolve())
    launch = later = None
    if not args.no_launch:
        from captain_tui.runtime import launch as runtime

        launch = runtime.launcher(home, name=args.name, key=crew_key(args.name),
                                  agent=args.agent, program=args.program, socket=args.socket,
                                  session=args.session, cwd=cwd)
        later = runtime.later(program=args.program, cwd=cwd, socket=args.socket,
                              session=args.session)
    r = protocol.recruit(home, args.name, args.task, owns=args.owns, allow=args.allow,
                         handoff=args.handoff, cwd=cwd, agent=args.agent, ctx=_ctx(),
                         launch=launch, later=later)
    from state.crew import crewlog

    snapshot, _ = crewlog.load(home, crew_key(args.name))
    pane = snapshot.pane.model_dump() if snapshot and snapshot.pane else None
    if r.queued:
        where = (f"queued: every ledger slot is held, so its pane starts when one frees "
                 f"(work item {r.work_id}; see captain work list --state queued). A running "
                 "captain watch, wait or the cockpit starts it.")
    elif pane:
        where = (f"in tmux pane {pane['pane_id']} (session {pane['session']}, socket "
                 f"{pane['socket']}).\nArm a wait so held doorbells are retried: captain wait "
                 f"{r.crew}")
    else:
        env_lines = "\n".join(f"  {k}={v}" for k, v in r.env.items())
        where = f"(not launched). The crew process needs this environment:\n{env_lines}"
    out.ok({"crew": r.crew, "incarnation_id": r.incarnation_id, "assignment_id": r.assignment_id,
            "message_id": r.message_id, "agent": args.agent, "pane": pane, "env": r.env,
            "work_id": r.work_id, "queued": r.queued},
           f"Recruited {r.crew}: assignment {r.assignment_id}, task mailed as {r.message_id}, "
           f"{where}")
    return 0


def cmd_assign(args, out: Out) -> int:
    from state.crew import protocol

    home = _home(args)
    spec = protocol.assign(home, args.name, args.task, handoff=args.handoff,
                           owns=args.owns, allow=args.allow, ctx=_ctx())
    bell = _doorbell(home, args.name)
    out.ok({"crew": args.name, "assignment_id": spec.assignment_id,
            "message_id": spec.message_id, "handoff_of": spec.handoff_of, "doorbell": bell},
           f"Assigned {spec.assignment_id} to {args.name} (task mailed as {spec.message_id})."
           + _doorbell_line(bell, args.name))
    return 0


def cmd_tell(args, out: Out) -> int:
    from state.crew import protocol

    home = _home(args)
    m = protocol.tell(home, args.name, args.message, assignment_id=args.assignment, ctx=_ctx())
    bell = _doorbell(home, m.crew)
    out.ok({"crew": m.crew, "message_id": m.message_id, "assignment_id": m.assignment_id,
            "doorbell": bell},
           f"Queued {m.message_id} for {m.crew}." + _doorbell_line(bell, m.crew))
    return 0


def cmd_answer(args, out: Out) -> int:
    from state.crew import protocol

    home = _home(args)
    m = protocol.answer(home, args.name, args.question_id, args.message,
                        assignment_id=args.assignment, ctx=_ctx())
    bell = _doorbell(home, m.crew)
    out.ok({"crew": m.crew, "message_id": m.message_id, "question_id": m.question_id,
            "assignment_id": m.assignment_id, "doorbell": bell},
           f"Answered {m.question_id}; queued {m.message_id} for {m.crew}."
           + _doorbell_line(bell, m.crew))
    return 0


def _envelope(n, crew: str | None, assignment_id: str | None) -> dict:
    if n is None:
        return {"status": "timeout", "delivery_id": None, "crew": crew,
                "assignment_id": assignment_id, "summary": "nothing to report before the timeout",
                "queued_at": None}
    env = {"status": n.status, "delivery_id": n.delivery_id, "crew": n.crew,
           "assignment_id": n.assignment_id, "summary": n.summary,
           "queued_at": n.queued_at.isoformat().replace("+00:00", "Z") if n.queued_at else None}
    if n.question_id:
        env["question_id"] = n.question_id
    if n.message_id:
        env["message_id"] = n.message_id
    return env


def _next_step(n) -> str:
    if n.status == "asked":
        return (f"answer: captain answer {n.crew} {n.question_id} \"...\" --assignment "
                f"{n.assignment_id}")
    if n.status == "done":
        return f"next:   captain wait {n.crew} --ack {n.delivery_id}, then captain assign " \
               f"{n.crew} --handoff {n.assignment_id} --task \"...\""
    return f"ack:    captain wait {n.crew} --ack {n.delivery_id}"


def cmd_wait(args, out: Out) -> int:
    from captain_tui.runtime.runner import Runner
    from state.crew import notify

    home = _home(args)
    name = None if args.all else args.name
    ctx = _ctx()
    from state.crew.protocol import check_captain

    check_captain(ctx, "wait")  # before a watcher starts: a crew may not wait
    runner = Runner(home, name)
    try:
        n = notify.wait(home, name, timeout=args.timeout, ack=args.ack, ctx=ctx,
                        sleep=runner.sleep)
    finally:
        runner.close()
    assignment_id = None
    if n is None and name is not None:
        from state.crew import crewlog
        from state.inputs import crew_key

        snapshot, _ = crewlog.load(home, crew_key(name))
        assignment_id = snapshot.assignment.assignment_id if snapshot else None
    env = _envelope(n, name, assignment_id)
    if n is None:
        human = f"timeout: nothing from {name or 'any crew'} (no delivery)."
    else:
        summary = "\n".join("  " + line for line in n.summary.splitlines() or [""])
        human = f"{n.status}  {n.crew}  {n.delivery_id}  ({n.assignment_id})\n{summary}\n" \
                f"  {_next_step(n)}"
    out.ok(env, human)
    return 0


def cmd_status(args, out: Out) -> int:
    from captain_tui.runtime import doorbell
    from state.crew import protocol

    home = _home(args)
    rows = protocol.crew_status(home, include_dismissed=args.all)
    for row in rows:
        stamp = doorbell.read_stamp(home, row["name"].lower())
        live = stamp is not None and stamp.incarnation_id == row["incarnation_id"]
        row["doorbell"] = {
            "gate": stamp.gate if live else None,
            "held_since": stamp.held_since.isoformat() if live and stamp.held_since else None,
            "head": stamp.head if live else None}
    from state.work import tokens

    workspace = tokens.workspace_id(home)
    if not rows:
        out.ok({"crew": [], "workspace_id": workspace},
               "No crew yet. Recruit one: captain crew NAME --task \"...\"")
        return 0
    table = [["NAME", "AGENT", "STATE", "ASSIGNMENT", "UNREAD", "QUESTION", "UNACKED", "PANE",
              "DOORBELL"]]
    for r in rows:
        table.append([r["name"], r["agent"], r["state"], r["assignment_id"], str(r["unread"]),
                      r["question_id"] or "-", str(r["unacknowledged"]),
                      (r["pane"] or {}).get("pane_id", "-"),
                      f"held: {r['doorbell']['gate']}" if r["doorbell"]["gate"] else "-"])
    out.ok({"crew": rows, "workspace_id": workspace}, _table(table))
    return 0


def cmd_dismiss(args, out: Out) -> int:
    from state.crew import crewlog, protocol
    from state.inputs import crew_key

    home = _home(args)
    ctx = _ctx()
    protocol.check_captain(ctx, "dismiss")
    snapshot, _ = crewlog.load(home, crew_key(args.name))
    stopped = None
    if snapshot is not None and snapshot.dismissed_at is None:
        from captain_tui.runtime.launch import close_pane

        stopped = close_pane(snapshot.pane)
    bounced = protocol.dismiss(home, args.name, ctx=ctx, stopped=stopped)
    ids = [b.message_id for b in bounced]
    extra = f"; {len(ids)} unread message(s) bounced" if ids else ""
    pane = {True: "; its pane is closed", False: "; its pane could NOT be confirmed closed",
            None: ""}[stopped]
    out.ok({"crew": args.name, "bounced": ids, "pane_stopped": stopped},
           f"Dismissed {args.name}{extra}{pane}.")
    return 0


def cmd_check(args, out: Out) -> int:
    from state.crew_side import fast as crew_fast

    home, ctx = _home(args), _ctx()
    try:  # the cached snapshot answers without pydantic; anything unusual takes the full path
        verdict = crew_fast.check(home, args.name, args.action, args.paths,
                                  assignment_id=args.assignment, ctx=ctx)
    except crew_fast.Unsure:
        from state.crew import protocol

        verdict = protocol.check(home, args.name, args.action, args.paths,
                                 assignment_id=args.assignment, ctx=ctx)
    if not verdict.allowed:
        raise CaptainError("grant_denied", verdict.reason)
    out.ok({"allowed": True, "reason": verdict.reason}, f"granted: {verdict.reason}")
    return 0


def cmd_ask(args, out: Out) -> int:
    from state.crew_side import fast as crew_fast

    home, ctx = _home(args), _ctx()
    try:  # plain records when nothing is unusual; otherwise the full path decides
        event = crew_fast.ask(home, args.name, args.question, assignment_id=args.assignment,
                              ctx=ctx)
    except crew_fast.Unsure:
        from state.crew import protocol

        event = protocol.ask(home, args.name, args.question, assignment_id=args.assignment,
                             ctx=ctx)
    out.ok({"question_id": event.question_id, "delivery_id": event.delivery_id,
            "assignment_id": event.assignment_id},
           f"Question {event.question_id} is with the captain. Stop here: the answer "
           "arrives as mail.")
    return 0


def cmd_done(args, out: Out) -> int:
    from state.crew import protocol

    event = protocol.done(_home(args), args.name, args.report, assignment_id=args.assignment,
                          ctx=_ctx())
    out.ok({"assignment_id": event.assignment_id, "delivery_id": event.delivery_id},
           f"Done: {event.assignment_id} is finished and the captain is told.")
    return 0


def cmd_inbox(args, out: Out) -> int:
    from state.crew_side import fast as crew_fast

    def deliver(batch) -> None:
        dumped = [m.model_dump(mode="json", by_alias=True) for m in batch]
        if out.json:
            out.ok({"crew": args.name, "messages": dumped}, "")
        elif not batch:
            print(f"No unread mail for {args.name}.", flush=True)
        else:
            print("\n".join(_message_block(m) for m in dumped), flush=True)

    home, ctx = _home(args), _ctx()
    try:  # plain records when nothing is unusual; Unsure comes before anything is shown
        crew_fast.inbox(home, args.name, deliver=deliver, ctx=ctx)
    except crew_fast.Unsure:
        from state.crew import protocol

        protocol.inbox(home, args.name, deliver=deliver, ctx=ctx)
    return 0


def cmd_demo(args, out: Out) -> int:
    from captain_tui.cockpit.demo import run_demo

    return run_demo(keep=args.keep)


def cmd_watch(args, out: Out) -> int:
    """Ring, check panes and print every new notification as one JSON line, until ^C."""
    from captain_tui.runtime.runner import Runner
    from state.crew import mailbox
    from state.crew.protocol import check_captain

    check_captain(_ctx(), "watch")
    home = _home(args)
    runner = Runner(home)
    seen: set[str] = set()
    try:
        while True:
            for key in home.crew_keys():
                acked = mailbox.acked(home, key)
                for n in mailbox.notifications(home, key):
                    if n.delivery_id in seen or n.delivery_id in acked:
                        continue
                    seen.add(n.delivery_id)
                    print(json.dumps(_envelope(n, n.crew, n.assignment_id), ensure_ascii=False),
                          flush=True)
            runner.sleep(1.0)
    except KeyboardInterrupt:
        return 0
    finally:
        runner.close()


# -- parser ---------------------------------------------------------------------------------


def _seconds(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number of seconds") from None
    if not math.isfinite(value) or value < 0:
        raise argparse.ArgumentTypeError(f"{text!r} must be a number of seconds >= 0")
    return value


class _Parser(argparse.ArgumentParser):
    def error(self, message: str):  # usage errors: exit 2, one clear line, no traceback
        self.print_usage(sys.stderr)
        print(f"{self.prog}: error: {message}", file=sys.stderr)
        raise SystemExit(2)


class _Skipped:
    """Stands in for the parser of a command that is not being run: what is added to it
    goes nowhere. Building every command's parser costs a crew-side command ~40 ms."""

    def add_argument(self, *args, **kwargs) -> None:
        pass

    def add_mutually_exclusive_group(self, **kwargs) -> _Skipped:
        return self


def build_parser(only: str | None = None) -> argparse.ArgumentParser:
    """The whole parser, or with ``only`` the parser that can run that one command (the
    others are left out: their names are then unknown, so pass only a command's name)."""
    common = argparse.ArgumentParser(add_help=False)
    common.add_argument("--home", metavar="DIR",
                        help="the captain home (default: $CAPTAIN_HOME, else the user state dir)")
    common.add_argument("--json", action="store_true", help="print one JSON object")

    parser = _Parser(prog=PROG, description="Run a crew of coding agents from one cockpit. "
                                            "With no command, open the cockpit.",
                     epilog="Crew-side commands (check, ask, done, inbox) read CAPTAIN_* from "
                            "the crew's environment. See README.md for the protocol.")
    parser.add_argument("--home", dest="main_home", metavar="DIR",
                        help="with no command: open the cockpit on this home")
    sub = parser.add_subparsers(dest="command", metavar="COMMAND", parser_class=_Parser)

    def add(name: str, help_text: str, func) -> argparse.ArgumentParser:
        if only is not None and name != only:
            return _Skipped()
        p = sub.add_parser(name, parents=[common], help=help_text, description=help_text)
        p.set_defaults(func=func)
        return p

    def grants(p, inherit: bool) -> None:
        tail = " (omitted: inherit from the handoff)" if inherit else ""
        p.add_argument("--owns", action="append", metavar="PATH",
                       help="a path this crew owns; repeatable" + tail)
        p.add_argument("--allow", action="append", metavar="ACTION",
                       help="a granted action (read, search, edit, test, build, format, commit, "
                            "version, delete); repeatable" + tail)

    p = add("crew", "Recruit a crew member with its first assignment.", cmd_crew)
    p.add_argument("name", metavar="NAME")
    p.add_argument("--task", required=True, metavar="TEXT", help="the first assignment")
    grants(p, inherit=True)
    p.add_argument("--handoff", metavar="ID",
                   help="re-recruit a dismissed name: its last assignment ID")
    p.add_argument("--cwd", metavar="DIR", help="the project directory (default: here)")
    p.add_argument("--agent", choices=("claude", "codex", "shell"),
                   help="what runs in the pane (default: shell; claude gets captain's hooks)")
    p.add_argument("--command", dest="program", metavar="CMD",
                   help="run this program instead (hookless)")
    p.add_argument("--socket", metavar="NAME|PATH",
                   help="tmux server (default: $CAPTAIN_TMUX_SOCKET, the current tmux, "
                        "else 'captain')")
    p.add_argument("--session", default="captain", metavar="NAME",
                   help="tmux session for crew windows (default: captain)")
    p.add_argument("--no-launch", action="store_true",
                   help="record the crew only; start its process yourself with the printed env")

    p = add("assign", "Start the next assignment after acknowledged completion.", cmd_assign)
    p.add_argument("name", metavar="NAME")
    p.add_argument("--task", required=True, metavar="TEXT")
    p.add_argument("--handoff", required=True, metavar="ID", help="the finished assignment's ID")
    grants(p, inherit=True)

    p = add("tell", "Append a follow-up message to the crew's active assignment.", cmd_tell)
    p.add_argument("name", metavar="NAME")
    p.add_argument("message", metavar="MESSAGE")
    p.add_argument("--assignment", required=True, metavar="ID")

    p = add("answer", "Answer the crew's pending question.", cmd_answer)
    p.add_argument("name", metavar="NAME")
    p.add_argument("question_id", metavar="QUESTION_ID")
    p.add_argument("message", metavar="MESSAGE")
    p.add_argument("--assignment", required=True, metavar="ID")

    p = add("wait", "Wait for the next notification from a crew (returned once; then --ack).",
            cmd_wait)
    who = p.add_mutually_exclusive_group(required=True)
    who.add_argument("name", nargs="?", metavar="NAME")
    who.add_argument("--all", action="store_true", help="any crew")
    p.add_argument("--timeout", type=_seconds, metavar="SECONDS",
                   help="give up after this long (0 polls once; default [crew] wait_timeout, "
                        "86400)")
    p.add_argument("--ack", metavar="DELIVERY_ID", help="acknowledge this delivery first")

    p = add("demo", "Try captain: three simulated crew in a private tmux, and the cockpit.",
            cmd_demo)
    p.add_argument("--keep", action="store_true", help="keep the demo home afterwards")

    add("watch", "Ring doorbells, check panes and print each new notification as a JSON "
                 "line, until interrupted.", cmd_watch)

    p = add("status", "List the crew and what each is waiting on.", cmd_status)
    p.add_argument("--all", action="store_true", help="include dismissed crew")

    p = add("dismiss", "Retire a crew member; its unread mail bounces.", cmd_dismiss)
    p.add_argument("name", metavar="NAME")

    p = add("check", "Crew: is ACTION on PATHs granted? Executes nothing; exit 0 yes, 1 no.",
            cmd_check)
    p.add_argument("name", metavar="NAME")
    p.add_argument("action", metavar="ACTION")
    p.add_argument("paths", nargs="*", metavar="PATH")
    p.add_argument("--assignment", metavar="ID")

    p = add("ask", "Crew: ask the captain one question, then stop.", cmd_ask)
    p.add_argument("name", metavar="NAME")
    p.add_argument("question", metavar="QUESTION")
    p.add_argument("--assignment", metavar="ID")

    p = add("done", "Crew: finish the assignment with a report.", cmd_done)
    p.add_argument("name", metavar="NAME")
    p.add_argument("--report", metavar="TEXT", help="what changed and how it was checked")
    p.add_argument("--assignment", metavar="ID")

    p = add("inbox", "Crew: print unread mail oldest first, then mark it read.", cmd_inbox)
    p.add_argument("name", metavar="NAME")

    if only not in CREW_SIDE:
        from captain_tui.cli import serve as cli_serve
        from captain_tui.cli import work as cli_work

        cli_work.add_commands(sub, common, _Parser)
        cli_serve.add_commands(sub, common, _Parser)
    return parser


def _warn_quarantined() -> None:
    from state.store import Store

    for path, reason in Store.reported():
        print(f"{PROG}: warning: quarantined {_printable(path)}: {_printable(reason)} "
              "(see quarantine/ in the home)",
              file=sys.stderr)


def _cockpit(home_arg: str | None) -> int:
    """``captain`` alone: the cockpit on the home."""
    from state.home import Home, default_home

    try:
        home = Home(Path(home_arg) if home_arg else default_home())
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
        from captain_tui.agents.hooks import run_hook

        agent = argv[0] if argv else ""
        event = argv[1] if len(argv) > 1 else ""
        payload = argv[2] if len(argv) > 2 else None
        return run_hook(agent, event, payload, sys.stdin, sys.stdout, os.environ)
    except BaseException as exc:  # noqa: BLE001 - fail open, always
        try:
            print(f"{PROG}: hook failed open: {type(exc).__name__}: {exc}", file=sys.stderr)
        except Exception:  # noqa: BLE001
            pass
        return 0


def main(argv: Sequence[str] | None = None) -> int:
    for stream in (sys.stdout, sys.stderr):
        try:
            stream.reconfigure(errors="backslashreplace")
        except (AttributeError, ValueError):
            pass
    argv = list(sys.argv[1:] if argv is None else argv)
    if argv[:1] == ["hook"]:
        return _hook(argv[1:])
    # a crew-side command runs on every tool call: build only its parser
    parser = build_parser(argv[0] if argv[:1] and argv[0] in CREW_SIDE else None)
    args = parser.parse_args(argv)
    for dest in _SINGLE_POSITIONALS:
        # CPython 3.11's argparse strips a literal "--" that follows "--" and hands over []
        if isinstance(getattr(args, dest, None), list):
            setattr(args, dest, " ".join(getattr(args, dest)) or "--")
    if args.command is None:
        return _cockpit(args.main_home)
    if args.main_home and not getattr(args, "home", None):
        args.home = args.main_home  # `captain --home DIR status` means what it says
    out = Out(getattr(args, "json", False))
    try:
        return args.func(args, out)
    except CaptainError as err:
        out.refuse(err)
        if err.after_report is not None:
            err.after_report()
        return 1
    except OSError as exc:
        out.refuse(CaptainError("store_error", f"{exc.strerror or exc} ({exc.filename or 'home'})."))
        return 1
    except KeyboardInterrupt:
        return 130
    except Exception as exc:  # noqa: BLE001 - no traceback ever reaches a person
        out.refuse(CaptainError("internal_error", f"unexpected {type(exc).__name__}: {exc}"))
        return 1
    finally:
        _warn_quarantined()


if __name__ == "__main__":
    sys.exit(main())
