"""``captain work ...`` and ``captain deliveries ...``: the work ledger from the shell.

Cancel, replay and resolve are use cases (``captain_tui.usecases``); the rest reads and
records through ``state.work.ledger`` / ``state.work.deliveries`` (what the cockpit and the
HTTP API use).
Nothing here prints an item's input, an event's detail or a raw webhook body.
"""

from __future__ import annotations

import argparse
import sys

from captain_tui.cli.args import Skipped, caller, captain_only, home_of, left_out, viewer
from captain_tui.cli.out import table, when


def _actor() -> str:
    from captain_tui.usecases import actor

    return actor()


def _item_line(row: dict) -> str:
    loud = (
        "  <- needs reconciliation: captain work resolve"
        if row["state"] == "needs_reconciliation"
        else ""
    )
    return (
        f"{row['work_id']}  {row['state']}  generation {row['generation']}  "
        f"source {row['source']}{loud}"
    )


def _item_human(row: dict) -> str:
    lines = [
        _item_line(row),
        f"  requester {row['requester']}  created {when(row['created_at'])}  "
        f"updated {when(row['updated_at'])}",
        f"  input sha256 {row['input_sha256']}  target revision {row['target_revision'] or '-'}",
    ]
    if row.get("crew"):
        lines.append(f"  crew {row['crew']}  assignment {row['assignment_id']}")
    if row.get("replay_of"):
        lines.append(f"  replay of {row['replay_of']}: {row['replay_reason']}")
    if row.get("delivery_id"):
        lines.append(f"  delivery {row['delivery_id']}")
    if row.get("resolution"):
        r = row["resolution"]
        lines.append(
            f"  resolved to {r['to']} by {r['operator']} at {when(r['at'])}: "
            f"{r['reason']} (runtime stopped: {'yes' if r['runtime_stopped'] else 'no'})"
        )
    if row.get("landing"):
        g = row["landing"]
        lines.append(
            f"  landed on {g['base_branch']} at {g['commit']} by {g['operator']} at "
            f"{when(g['at'])}"
            + (f"  (crew's uncommitted files: {g['crew_commit']})" if g["crew_commit"] else "")
        )
        if g["outside_grant"]:
            lines.append(
                f"  outside the grant, allowed: {', '.join(g['outside_grant'])}  "
                f"reason: {g['reason']}"
            )
    for a in row.get("attempts", []):
        cost = "unknown" if a["cost_usd"] is None else f"${a['cost_usd']:.4f}"
        if a.get("turns") is not None:  # measured from the agent's records (a spend note)
            cost += (
                f" ({a['turns']} turns: {a['input_tokens']} in, {a['output_tokens']} out, "
                f"{a['cache_read_tokens']} cache read, {a['cache_write_tokens']} cache write)"
            )
        where = a["runtime_locator"]["pane_id"] if a["runtime_locator"] else "no locator"
        lines.append(
            f"  attempt g{a['generation']} {a['run_id']}  {a['outcome'] or 'live'}  "
            f"lease {a['lease_holder']} until {when(a['lease_expires_at'])}  "
            f"heartbeat {when(a['heartbeat_at'])}  {where}  cost {cost}"
        )
    for e in row.get("events", []):
        extra = f"  ({e['reason']})" if e.get("reason") else ""
        if e.get("landed_commit"):
            extra = f"  {e['base_branch']} at {e['landed_commit'][:12]}{extra}"
        lines.append(
            f"  #{e['seq']} {when(e['at'])}  {e['type']} -> {e['state']}  "
            f"g{e['generation']}  by {e['actor']}{extra}"
        )
    return "\n".join(lines)


# -- stdin ------------------------------------------------------------------------------------


def _stdin_bytes(limit: int) -> bytes:
    """At most ``limit`` bytes of stdin; none when it is closed (``<&-``)."""
    from state.errors import CaptainError

    stream = getattr(sys.stdin, "buffer", None)
    if stream is None:
        return b""
    try:
        return stream.read(limit)
    except OSError as exc:  # a directory, a broken device: not the home's fault
        raise CaptainError(
            "invalid_argument", f"stdin could not be read: {exc.strerror or exc}."
        ) from None


def _stdin_text(what: str) -> str:
    """stdin as UTF-8 text, at most the 64 KiB any text field holds (``MAX_TEXT_BYTES``, the
    ledger's own check); anything else is refused with a stable code before anything is
    written. Reading stops one byte past the limit: a huge pipe is never held in memory."""
    from state.errors import CaptainError
    from state.inputs import MAX_TEXT_BYTES

    data = _stdin_bytes(MAX_TEXT_BYTES + 1)
    if len(data) > MAX_TEXT_BYTES:
        raise CaptainError(
            "message_too_large",
            f"the {what} on stdin is larger than "
            f"{MAX_TEXT_BYTES} bytes (64 KiB), the most a "
            f"{what} holds. Put long material in a file "
            "and refer to it.",
            limit=MAX_TEXT_BYTES,
        )
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError as exc:
        raise CaptainError(
            "invalid_text",
            f"the {what} on stdin is not UTF-8 text (an invalid byte at offset {exc.start}).",
        ) from None


# -- work -------------------------------------------------------------------------------------


def cmd_list(args, out) -> int:
    from state.crew_side import door  # plain records when it can: no pydantic

    home = home_of(args)
    own = viewer(home)  # a crew lists its own items only
    items, cursor = door.work_page(
        home, state=args.state, source=args.source, limit=args.limit, after=args.after
    )
    if own is not None:
        items = [i for i in items if (i.crew or "").lower() == own]
        while cursor and len(items) < args.limit:  # fill the page from the pages after it
            more, cursor = door.work_page(
                home, state=args.state, source=args.source, limit=args.limit, after=cursor
            )
            items += [i for i in more if (i.crew or "").lower() == own]
        if len(items) > args.limit:
            items, cursor = items[: args.limit], items[args.limit - 1].work_id
    rows = [door.work_public(home, i) for i in items]
    if not rows:
        human = "No work items" + (
            " match."
            if args.state or args.source or args.after
            else " yet. Recruiting or assigning a crew creates one."
        )
    else:
        lines = [["WORK", "STATE", "GEN", "SOURCE", "CREW", "UPDATED"]]
        for r in rows:
            state = r["state"].upper() if r["state"] == "needs_reconciliation" else r["state"]
            lines.append(
                [
                    r["work_id"],
                    state,
                    str(r["generation"]),
                    r["source"],
                    r["crew"] or "-",
                    when(r["updated_at"]),
                ]
            )
        human = table(lines)
        if cursor:
            human += f"\nMore: captain work list --after {cursor}"
    out.ok({"items": rows, "next_cursor": cursor}, human)
    return 0


def cmd_show(args, out) -> int:
    import contextlib

    from state.crew.guards import own_item
    from state.errors import CaptainError
    from state.work import controls, ledger

    home = home_of(args)
    own = viewer(home)
    item = ledger.get(home, args.work_id)
    own_item(own, item.crew, f"work item {item.work_id}")  # a crew shows its own items only
    row = ledger.public(home, item, detail=True)
    human = _item_human(row)
    with contextlib.suppress(CaptainError):  # a missing delivery record is not show's to say
        if item.delivery_id and controls.facts(home, item).routine:
            human += "\n  a routine receipt: captain does not cancel or replay it"
    out.ok({"item": row}, human)
    return 0


_CANCEL_WORDS = {
    "cancelled": "Cancelled {id}: the stop is confirmed.",
    "already_terminal": "{id} was already {state}; nothing was done.",
    "stop_unconfirmed": "The stop of {id} could NOT be confirmed: it is now "
    "needs_reconciliation and keeps its slot. Check the process, then "
    "captain work resolve {id} --generation {gen} ...",
}


def cmd_cancel(args, out) -> int:
    from captain_tui import usecases
    from state.work import ledger

    home = home_of(args)
    c = usecases.cancel(
        home, args.work_id, actor=usecases.actor(), reason=args.reason, ctx=caller()
    )
    row = ledger.public(home, c.item)
    human = _CANCEL_WORDS[c.outcome].format(
        id=row["work_id"], state=row["state"], gen=row["generation"]
    )
    if c.dismissal is not None:
        d = c.dismissal
        human += (
            f"\nIt was {d.crew}'s assignment: {d.crew} is dismissed"
            f"{usecases.dismissal_words(d)}. Recruit the name again with --handoff "
            f"{d.assignment_id}."
        )
    out.ok(
        {
            "item": row,
            "outcome": c.outcome,
            "state": row["state"],
            "dismissed": c.dismissal.as_json() if c.dismissal else None,
        },
        human,
    )
    return 0


def cmd_replay(args, out) -> int:
    from captain_tui import usecases
    from state.work import ledger

    home = home_of(args)
    item = usecases.replay(
        home,
        args.work_id,
        actor=usecases.actor(),
        reason=args.reason,
        target_revision=args.target_revision,
        ctx=caller(),
    )
    row = ledger.public(home, item)
    out.ok(
        {"item": row},
        f"Replayed {args.work_id} as {item.work_id} (queued, target "
        f"revision {item.target_revision or '-'}).",
    )
    return 0


def cmd_resolve(args, out) -> int:
    from captain_tui import usecases
    from state.work import ledger

    home = home_of(args)
    item = usecases.resolve(
        home,
        args.work_id,
        generation=args.generation,
        to=args.to,
        reason=args.reason,
        actor=usecases.actor(),
        runtime_stopped=args.runtime_stopped,
        ctx=caller(),
    )
    row = ledger.public(home, item)
    out.ok({"item": row}, f"Resolved {item.work_id} to {item.state}; its slot is free.")
    return 0


def cmd_submit(args, out) -> int:
    from state.inputs import check_text
    from state.work import ledger

    captain_only("work submit")
    check_text(args.text, "input")
    home = home_of(args)
    item = ledger.accept(
        home,
        source="chat",
        input={"text": args.text},
        requester=_actor(),
        target_revision=args.target_revision,
        max_attempts=args.max_attempts,
    )
    out.ok({"item": ledger.public(home, item)}, f"Queued {item.work_id}.")
    return 0


def cmd_claim(args, out) -> int:
    from state.work import ledger

    captain_only("work claim")
    home = home_of(args)
    item = ledger.claim(home, args.work_id, holder=args.holder or _actor(), source=args.source)
    run = item.attempts[-1]
    out.ok(
        {"item": ledger.public(home, item), "generation": item.generation, "run_id": run.run_id},
        f"Claimed {item.work_id}: generation {item.generation}, run {run.run_id}, lease "
        f"until {when(run.lease_expires_at)}. Heartbeat and report with --generation "
        f"{item.generation}.",
    )
    return 0


def cmd_heartbeat(args, out) -> int:
    from state.work import ledger

    captain_only("work heartbeat")
    home = home_of(args)
    item = ledger.heartbeat(home, args.work_id, args.generation, holder=args.holder)
    live = ledger.lease(home, item)
    out.ok(
        {
            "item": ledger.public(home, item),
            "lease_expires_at": live.expires_at.isoformat() if live else None,
        },
        f"Lease of {item.work_id} renewed until {when(live.expires_at if live else None)}.",
    )
    return 0


def cmd_report(args, out) -> int:
    from state.work import ledger

    captain_only("work report")
    home = home_of(args)
    detail = _stdin_text("detail") if args.detail_stdin else None
    item = ledger.report(
        home,
        args.work_id,
        args.generation,
        args.outcome,
        actor=args.holder or _actor(),
        cost_usd=args.cost_usd,
        detail=detail,
        repeatable=args.repeatable,
    )
    out.ok({"item": ledger.public(home, item)}, f"{item.work_id} is {item.state}.")
    return 0


# -- deliveries -------------------------------------------------------------------------------


def cmd_ingest(args, out) -> int:
    from state.work import deliveries

    captain_only("deliveries ingest")
    home = home_of(args)
    body = _stdin_bytes(deliveries.MAX_BODY_BYTES + 1)
    intake = deliveries.ingest(home, args.endpoint, args.delivery_id, body, event=args.event)
    row = deliveries.public(home, intake.delivery)
    what = "a duplicate of" if intake.duplicate else "recorded as"
    then = (
        f"; work item {row['work_id']}" if row["work_id"] else f"; no work: {row['filter_reason']}"
    )
    if row["routine"] and row["work_id"]:
        then += " (a routine receipt: captain does not cancel or replay it)"
    out.ok(
        {"delivery": row, "duplicate": intake.duplicate},
        f"Delivery {args.delivery_id} on {args.endpoint}: {what} {row['delivery_id']}{then}.",
    )
    return 0


def cmd_deliveries_list(args, out) -> int:
    from state.work import deliveries

    captain_only("deliveries list")  # webhook deliveries are the captain's, not a crew's
    home = home_of(args)
    records, cursor = deliveries.page(
        home,
        endpoint_id=args.endpoint,
        source_delivery_id=args.source_delivery_id,
        limit=args.limit,
        after=args.after,
    )
    rows = [deliveries.public(home, r) for r in records]
    if not rows:
        human = "No deliveries match."
    else:
        lines = [["DELIVERY", "ENDPOINT", "SOURCE ID", "EVENT", "RECEIVED", "BODY", "WORK"]]
        for r in rows:
            body = "held" if r["raw_body_available"] else "expired"
            work = r["work_id"] or f"filtered: {r['filter_reason']}"
            lines.append(
                [
                    r["delivery_id"],
                    r["endpoint_id"],
                    r["source_delivery_id"],
                    r["event"] or "-",
                    when(r["received_at"]),
                    body,
                    f"{work} (routine)" if r["routine"] else work,
                ]
            )
        human = table(lines)
        if cursor:
            human += f"\nMore: captain deliveries list --after {cursor}"
    out.ok({"deliveries": rows, "next_cursor": cursor}, human)
    return 0


def cmd_deliveries_show(args, out) -> int:
    from state.work import deliveries

    captain_only("deliveries show")
    home = home_of(args)
    row = deliveries.public(home, deliveries.get(home, args.delivery_id))
    body = (
        f"held until {when(row['raw_body_expires_at'])}"
        if row["raw_body_available"]
        else f"expired at {when(row['raw_body_expires_at'])} (a replay is unavailable)"
    )
    human = "\n".join(
        [
            f"{row['delivery_id']}  endpoint {row['endpoint_id']}  source id "
            f"{row['source_delivery_id']}  event {row['event'] or '-'}",
            f"  received {when(row['received_at'])}  body {row['body_bytes']} bytes sha256 "
            f"{row['body_sha256']}, {body}",
            f"  work {row['work_id']}" if row["work_id"] else f"  no work: {row['filter_reason']}",
        ]
        + (
            ["  a routine receipt: captain does not cancel or replay its work"]
            if row["routine"] and row["work_id"]
            else []
        )
    )
    out.ok({"delivery": row}, human)
    return 0


def cmd_deliveries_purge(args, out) -> int:
    from state.vocab import counted
    from state.work import deliveries

    captain_only("deliveries purge")
    purged = deliveries.purge(home_of(args))
    extra = [
        counted(n, one) + what
        for n, one, what in (
            (purged.body_claims, "body claim", " past their window"),
            (purged.rejections, "refused delivery record", " past the bound"),
        )
        if n
    ]
    one = purged.bodies == 1
    human = (
        f"Removed {purged.bodies} raw bod{'y' if one else 'ies'} past "
        f"{'its' if one else 'their'} retention"
        + (f", and {' and '.join(extra)}" if extra else "")
        + ". The delivery records stay (hash and size); their raw body is no longer "
        "available."
    )
    out.ok(purged.as_json(), human)
    return 0


# -- the parser -------------------------------------------------------------------------------


def _generation(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a generation number") from None
    if not 0 <= value < 2**31:
        raise argparse.ArgumentTypeError(f"{text!r} is not a generation number")
    return value


def _attempts(text: str) -> int:
    from state.config import MAX_ATTEMPTS

    value = _generation(text)
    if not 1 <= value <= MAX_ATTEMPTS:
        raise argparse.ArgumentTypeError(f"{text!r} must be 1 to {MAX_ATTEMPTS} attempts")
    return value


def _limit(text: str) -> int:
    try:
        return int(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not a number") from None


def _cost(text: str) -> float:
    try:
        value = float(text)
    except ValueError:
        raise argparse.ArgumentTypeError(f"{text!r} is not an amount in USD") from None
    if not 0 <= value < 1e9:
        raise argparse.ArgumentTypeError(f"{text!r} must be an amount >= 0 in USD")
    return value


# each group's commands: the one being run is the only one whose parser is built
# (``left_out``; a test holds these to the whole parser's)
GROUPS = {
    "work": (
        "list",
        "show",
        "cancel",
        "replay",
        "resolve",
        "submit",
        "claim",
        "heartbeat",
        "report",
    ),
    "deliveries": ("ingest", "list", "show", "purge"),
}


def add_commands(
    sub, common, parser_class, only: str | None = None, inner: str | None = None
) -> None:
    """Register ``work`` and ``deliveries`` (with their own subcommands) on ``sub``; with
    ``only`` (main's) and ``inner``, only the parser of the command being run."""

    def group(name: str, help_text: str):
        if left_out(name, only, GROUPS):
            return lambda cmd, text, func: Skipped()
        p = sub.add_parser(name, help=help_text, description=help_text)
        commands = p.add_subparsers(
            dest=f"{name}_command", metavar="COMMAND", required=True, parser_class=parser_class
        )

        def add(cmd: str, text: str, func):
            if left_out(cmd, inner, GROUPS[name]):
                return Skipped()
            q = commands.add_parser(cmd, parents=[common], help=text, description=text)
            q.set_defaults(func=func)
            return q

        return add

    add = group(
        "work",
        "The work ledger: every assignment, chat and webhook run as a work "
        "item with attempts, generations and an append-only history.",
    )
    p = add(
        "list", "List work items, oldest first (at most 100 per page; a crew: its own).", cmd_list
    )
    p.add_argument(
        "--state",
        metavar="STATE",
        help="queued, running, succeeded, failed, cancelled, needs_reconciliation",
    )
    p.add_argument("--source", metavar="SOURCE", help="assignment, chat or webhook")
    p.add_argument("--limit", type=_limit, default=50, metavar="N", help="1..100 (default 50)")
    p.add_argument("--after", metavar="CURSOR", help="the next_cursor of the previous page")
    p = add(
        "show",
        "One work item with its attempts and events (never its input; a crew: its own).",
        cmd_show,
    )
    p.add_argument("work_id", metavar="WORK_ID")
    p = add(
        "cancel",
        "Request a cancel: stopped and confirmed, already finished, or stop not "
        "confirmed (then it needs reconciliation). Safe to repeat. A routine "
        "endpoint's item is refused (routine_receipt).",
        cmd_cancel,
    )
    p.add_argument("work_id", metavar="WORK_ID")
    p.add_argument("--reason", metavar="TEXT")
    p = add(
        "replay",
        "Run a finished item's input again as a new item (a new authorization). "
        "Refused for a webhook item whose raw body expired (payload_expired) "
        "and for a routine endpoint's item (routine_receipt).",
        cmd_replay,
    )
    p.add_argument("work_id", metavar="WORK_ID")
    p.add_argument("--reason", required=True, metavar="TEXT", help="why it runs again")
    p.add_argument("--target-revision", metavar="REV", help="default: the original's")
    p = add(
        "resolve",
        "Resolve an item that needs reconciliation (frees its slot, starts nothing).",
        cmd_resolve,
    )
    p.add_argument("work_id", metavar="WORK_ID")
    p.add_argument(
        "--generation",
        type=_generation,
        required=True,
        metavar="G",
        help="the generation you inspected",
    )
    p.add_argument("--to", required=True, choices=("succeeded", "failed", "cancelled"))
    p.add_argument("--reason", metavar="TEXT", help="what you checked and found (required)")
    p.add_argument(
        "--runtime-stopped",
        action="store_true",
        help="attest that the process is no longer running (needed for cancelled)",
    )
    p = add("submit", "Queue a chat work item with this input.", cmd_submit)
    p.add_argument("--text", required=True, metavar="TEXT")
    p.add_argument("--target-revision", metavar="REV")
    p.add_argument(
        "--max-attempts",
        type=_attempts,
        default=1,
        metavar="N",
        help="1..20 tries in all, retries included (default 1)",
    )
    p = add(
        "claim", "Worker: claim the oldest queued item (or WORK_ID) into a free slot.", cmd_claim
    )
    p.add_argument("work_id", nargs="?", metavar="WORK_ID")
    p.add_argument("--source", choices=("assignment", "chat", "webhook"))
    p.add_argument("--holder", metavar="NAME", help="who holds the lease (default: you)")
    p = add(
        "heartbeat", "Worker: renew the lease of the attempt at this generation.", cmd_heartbeat
    )
    p.add_argument("work_id", metavar="WORK_ID")
    p.add_argument("--generation", type=_generation, required=True, metavar="G")
    p.add_argument("--holder", metavar="NAME")
    p = add("report", "Worker: report the attempt's result at this generation.", cmd_report)
    p.add_argument("work_id", metavar="WORK_ID")
    p.add_argument("--generation", type=_generation, required=True, metavar="G")
    p.add_argument("--outcome", required=True, choices=("succeeded", "failed"))
    p.add_argument("--cost-usd", type=_cost, metavar="USD", help="omit when unknown")
    p.add_argument(
        "--repeatable",
        action="store_true",
        help="a failure worth retrying (same work id, new run id) if attempts remain",
    )
    p.add_argument("--holder", metavar="NAME", help="who reports (default: you)")
    p.add_argument(
        "--detail-stdin",
        action="store_true",
        help="store stdin (UTF-8, at most 64 KiB) as the transition's detail (never printed)",
    )

    add = group("deliveries", "Inbound webhook deliveries: recorded before anything runs.")
    p = add("ingest", "Record a delivery read from stdin, then create its work item.", cmd_ingest)
    p.add_argument("--endpoint", required=True, metavar="ENDPOINT")
    p.add_argument(
        "--delivery-id",
        required=True,
        metavar="ID",
        help="the sender's delivery id (unique within the endpoint)",
    )
    p.add_argument("--event", metavar="NAME")
    p = add(
        "list",
        "List deliveries; --endpoint with --source-delivery-id answers the "
        "identity question (zero or one).",
        cmd_deliveries_list,
    )
    p.add_argument(
        "--endpoint",
        metavar="ENDPOINT",
        help="one configured in config.toml or with deliveries on record (any "
        "other name is refused: invalid_filter)",
    )
    p.add_argument("--source-delivery-id", metavar="ID")
    p.add_argument("--limit", type=_limit, default=50, metavar="N")
    p.add_argument("--after", metavar="CURSOR")
    p = add("show", "One delivery (never its body; the captain's).", cmd_deliveries_show)
    p.add_argument("delivery_id", metavar="DELIVERY_ID")
    add(
        "purge",
        "Delete raw bodies past their endpoint's retention_days now (the runners "
        "and captain serve also do it every few minutes); the delivery records "
        "stay, with the body's hash and size. Prints how many were removed.",
        cmd_deliveries_purge,
    )
