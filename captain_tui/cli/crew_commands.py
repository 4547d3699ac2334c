"""The crew's own commands: check, ask, done, inbox (run inside agent panes).

They run on every tool call and every stop, so they import only ``state`` and call its one
door per command (``state.crew_side.door``); ``done`` is rare and takes the full path.
"""

from __future__ import annotations

from captain_tui.cli.args import caller, home_of
from captain_tui.cli.out import Out, message_block, shown
from state.errors import CaptainError


def cmd_check(args, out: Out) -> int:
    from state.crew_side import door

    verdict = door.check(
        home_of(args),
        args.name,
        args.action,
        args.paths,
        assignment_id=args.assignment,
        ctx=caller(),
    )
    if not verdict.allowed:
        raise CaptainError("grant_denied", verdict.reason)
    out.ok({"allowed": True, "reason": verdict.reason}, f"granted: {verdict.reason}")
    return 0


def cmd_ask(args, out: Out) -> int:
    from state.crew_side import door

    event = door.ask(
        home_of(args), args.name, args.question, assignment_id=args.assignment, ctx=caller()
    )
    out.ok(
        {
            "question_id": event.question_id,
            "delivery_id": event.delivery_id,
            "assignment_id": event.assignment_id,
        },
        f"Question {event.question_id} is with the captain. Stop here: the answer arrives as mail.",
    )
    return 0


def cmd_done(args, out: Out) -> int:
    from state.crew import protocol

    event = protocol.done(
        home_of(args), args.name, args.report, assignment_id=args.assignment, ctx=caller()
    )
    out.ok(
        {"assignment_id": event.assignment_id, "delivery_id": event.delivery_id},
        f"Done: {event.assignment_id} is finished and the captain is told.",
    )
    return 0


PEEK = (
    "peek: nothing was marked read (a read receipt is the crew's own reading; "
    "see who has read what with captain status or the cockpit)"
)


def cmd_inbox(args, out: Out) -> int:
    from state.crew_side import door

    ctx = caller()
    peek = ctx.role != "crew"  # the captain's reading proves nothing: door.inbox

    def deliver(batch) -> None:
        dumped = [m.model_dump(mode="json", by_alias=True) for m in batch]
        if out.json:
            out.ok({"crew": args.name, "messages": dumped, **({"peek": True} if peek else {})}, "")
            return
        if not batch:
            print(shown(f"No unread mail for {args.name}."), flush=True)
        else:
            print(shown("\n".join(message_block(m) for m in dumped)), flush=True)
        if peek:
            print(PEEK, flush=True)

    door.inbox(home_of(args), args.name, deliver=deliver, ctx=ctx)
    return 0
