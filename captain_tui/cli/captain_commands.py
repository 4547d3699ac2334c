"""The captain's commands: recruit, assign, tell, answer, wait, watch, status, dismiss, land,
demo.

Each one calls the use case in ``captain_tui.usecases`` and turns its result into words
or JSON; no rule lives here.
"""

from __future__ import annotations

from collections.abc import Sequence

from captain_tui.cli.args import caller, home_of
from captain_tui.cli.out import Out, json_line, table, when
from captain_tui.cli.review_commands import compact, headline


def _bell(home, name: str) -> dict | None:
    """Try one ring right after writing mail; the mail is durable whatever happens here."""
    from captain_tui import usecases

    bell = usecases.ring(home, name, ctx=caller())
    return (
        None if bell is None else {"action": bell.action, "gate": bell.gate, "detail": bell.detail}
    )


def _bell_line(bell: dict | None, name: str) -> str:
    if bell is None:
        return ""
    if bell["action"] == "rang":
        return f"\nRang {name}'s doorbell ({bell['detail']})."
    if bell["action"] == "held":
        return (
            f"\nThe doorbell is held ({bell['gate']}): {bell['detail']}. It rings when "
            f"that clears while a captain wait or watch runs."
        )
    if bell["action"] == "bounced":
        return f"\nBounced: {bell['detail']}."
    return ""


def cmd_crew(args, out: Out) -> int:
    from captain_tui import usecases

    r = usecases.recruit(
        home_of(args),
        usecases.Recruitment(
            name=args.name,
            task=args.task,
            agent=args.agent,
            command=args.program,
            owns=tuple(args.owns or ()),
            allow=tuple(args.allow or ()),
            handoff=args.handoff,
            cwd=args.cwd,
            socket=args.socket,
            session=args.session,
            launch=not args.no_launch,
            worktree=not args.no_worktree,
            budget_usd=args.budget_usd,
        ),
        ctx=caller(),
    )
    pane = r.pane.model_dump() if r.pane else None
    space = r.workspace.model_dump() if r.workspace else None
    if r.queued:
        where = (
            f"queued: every ledger slot is held, so its pane starts when one frees "
            f"(work item {r.work_id}; see captain work list --state queued). A running "
            "captain watch, wait or the cockpit starts it."
        )
    elif pane:
        where = (
            f"in tmux pane {pane['pane_id']} (session {pane['session']}, socket "
            f"{pane['socket']}).\nArm a wait so held doorbells are retried: captain wait "
            f"{r.crew}"
        )
    else:
        env_lines = "\n".join(f"  {k}={v}" for k, v in r.env.items())
        where = f"(not launched). The crew process needs this environment:\n{env_lines}"
    out.ok(
        {
            "crew": r.crew,
            "incarnation_id": r.incarnation_id,
            "assignment_id": r.assignment_id,
            "message_id": r.message_id,
            "agent": r.agent,
            "pane": pane,
            "env": r.env,
            "work_id": r.work_id,
            "queued": r.queued,
            "workspace": space,
            "cwd": r.cwd,
        },
        f"Recruited {r.crew}: assignment {r.assignment_id}, task mailed as {r.message_id}, {where}"
        + usecases.workspace_words(r.workspace),
    )
    return 0


def cmd_assign(args, out: Out) -> int:
    from captain_tui import usecases

    home = home_of(args)
    spec = usecases.assign(
        home,
        args.name,
        args.task,
        handoff=args.handoff,
        owns=args.owns,
        allow=args.allow,
        ctx=caller(),
        budget_usd=args.budget_usd,
    )
    bell = _bell(home, args.name)
    out.ok(
        {
            "crew": args.name,
            "assignment_id": spec.assignment_id,
            "message_id": spec.message_id,
            "handoff_of": spec.handoff_of,
            "doorbell": bell,
        },
        f"Assigned {spec.assignment_id} to {args.name} (task mailed as {spec.message_id})."
        + _bell_line(bell, args.name),
    )
    return 0


def cmd_tell(args, out: Out) -> int:
    from captain_tui import usecases

    home = home_of(args)
    told = usecases.tell_with_budget(
        home,
        args.name,
        args.message,
        assignment_id=args.assignment,
        ctx=caller(),
        budget_usd=args.budget_usd,
    )
    m = told.message
    bell = _bell(home, told.crew) if m is not None else None
    words = f"Queued {m.message_id} for {told.crew}." if m is not None else ""
    if args.budget_usd is not None:
        from state.crew.budget import usd

        shown = usd(told.budget_usd) if told.budget_usd is not None else "none"
        words = (words + " " if words else "") + (
            f"{told.crew}'s budget on {told.assignment_id} is now {shown}."
        )
    out.ok(
        {
            "crew": told.crew,
            "message_id": m.message_id if m is not None else None,
            "assignment_id": told.assignment_id,
            "doorbell": bell,
            "budget_usd": told.budget_usd,
        },
        words + _bell_line(bell, told.crew),
    )
    return 0


def cmd_answer(args, out: Out) -> int:
    from captain_tui import usecases

    home = home_of(args)
    m = usecases.answer(
        home, args.name, args.question_id, args.message, assignment_id=args.assignment, ctx=caller()
    )
    bell = _bell(home, m.crew)
    out.ok(
        {
            "crew": m.crew,
            "message_id": m.message_id,
            "question_id": m.question_id,
            "assignment_id": m.assignment_id,
            "doorbell": bell,
        },
        f"Answered {m.question_id}; queued {m.message_id} for {m.crew}." + _bell_line(bell, m.crew),
    )
    return 0


def _approval_row(o) -> dict:
    r = o.request
    return {
        "request_id": r.request_id,
        "crew": r.crew,
        "assignment_id": r.assignment_id,
        "agent": r.agent,
        "tool": r.tool,
        "excerpt": r.excerpt,
        "fingerprint": r.fingerprint,
        "allow_session": r.session_allowed,
        "created_at": _stamp(r.created_at),
        "expires_at": _stamp(r.expires_at),
        "decided": o.decided.decision if o.decided else None,
    }


def cmd_approvals(args, out: Out) -> int:
    from captain_tui import usecases

    home = home_of(args)
    rows = [_approval_row(o) for o in usecases.pending(home, args.name, ctx=caller())]
    if not rows:
        human = "No approval requests are open."
    else:
        lines = []
        for row in rows:
            state = f" (decided: {row['decided']})" if row["decided"] else ""
            lines.append(
                f"{row['request_id']}  {row['crew']}  {row['tool']}: {row['excerpt']}{state}\n"
                f"  until {row['expires_at']}; captain approve {row['crew']} {row['request_id']} "
                "--allow | --deny --reason ..."
            )
        human = "\n".join(lines)
    out.ok({"approvals": rows}, human)
    return 0


def cmd_approve(args, out: Out) -> int:
    from captain_tui import usecases

    home = home_of(args)
    d = usecases.approve(home, args.name, args.request_id, args.decision, args.reason, ctx=caller())
    word = {"allow": "Allowed", "allow_session": "Allowed for the session", "deny": "Denied"}
    out.ok(
        {
            "crew": d.crew,
            "request_id": d.request_id,
            "decision": d.decision,
            "decided_at": _stamp(d.decided_at),
        },
        f"{word[d.decision]} {d.request_id} for {d.crew}; its agent's hook answers with it.",
    )
    return 0


def _stamp(at) -> str | None:
    return at.isoformat().replace("+00:00", "Z") if at else None


def envelope(n, crew: str | None, assignment_id: str | None) -> dict:
    """One notification as ``wait`` and ``watch`` print it (a timeout has no delivery).

    ``event_at``: when its event happened (the question asked, the report made, the mail
    bounced, the death seen, the turn ended); ``queued_at``: when the mail it concerns was
    queued (a bounce: the bounced message; else the newest mail the crew had then, which it
    may be answering; null when it had none). Both UTC, ISO 8601 with ``Z``."""
    if n is None:
        return {
            "status": "timeout",
            "delivery_id": None,
            "crew": crew,
            "assignment_id": assignment_id,
            "summary": "nothing to report before the timeout",
            "queued_at": None,
            "event_at": None,
        }
    env = {
        "status": n.status,
        "delivery_id": n.delivery_id,
        "crew": n.crew,
        "assignment_id": n.assignment_id,
        "summary": n.summary,
        "queued_at": _stamp(n.queued_at),
        "event_at": _stamp(n.created_at),
    }
    if n.question_id:
        env["question_id"] = n.question_id
    if n.message_id:
        env["message_id"] = n.message_id
    if n.request_id:
        env["request_id"] = n.request_id
    return env


def with_change(home, env: dict, n) -> dict:
    """A ``done`` carries the crew's change (its shape now, read on the captain's side:
    docs/review.md) when its assignment is still the crew's current one."""
    if n is None or n.status != "done":
        return env
    from captain_tui.usecases.review_ops import change_summary
    from state.crew import crewlog
    from state.inputs import crew_key

    snapshot, _ = crewlog.load(home, crew_key(n.crew))
    if snapshot is None or snapshot.assignment.assignment_id != n.assignment_id:
        return env
    change = change_summary(snapshot)
    return env if change is None else env | {"change": change}


def _next_step(n, state: str | None = None) -> str:
    """What to do about ``n``, given the crew's state now (``state.crew.standing``): a
    notification can be older than what happened since (a crew that asked, then died)."""
    if state == "died" and n.status != "error":
        return (
            f"next:   the crew has died since; captain wait {n.crew} --ack "
            f"{n.delivery_id}, then the error notification tells what to do"
        )
    if state == "dismissed":
        return f"ack:    captain wait {n.crew} --ack {n.delivery_id} (the crew is dismissed)"
    if n.status == "asked":
        return (
            f'answer: captain answer {n.crew} {n.question_id} "..." --assignment {n.assignment_id}'
        )
    if n.status == "awaiting_approval" and n.request_id:
        return (
            f"decide: captain approve {n.crew} {n.request_id} --allow | --deny --reason "
            f'"..." (captain approvals lists it), then captain wait {n.crew} --ack {n.delivery_id}'
        )
    if n.status == "done":
        return (
            f"next:   captain wait {n.crew} --ack {n.delivery_id}, then captain assign "
            f'{n.crew} --handoff {n.assignment_id} --task "..."'
        )
    if n.status == "blocked":  # a start-up dialog: the summary says how to answer it
        return (
            f"next:   answer the dialog (captain status shows the crew blocked while it is "
            f"up); captain wait {n.crew} --ack {n.delivery_id}"
        )
    if n.status == "error":  # the crew died: dismiss it, then recruit the name again
        return (
            f"next:   captain wait {n.crew} --ack {n.delivery_id}, captain dismiss "
            f'{n.crew}, then captain crew {n.crew} --handoff {n.assignment_id} --task "..."'
        )
    return f"ack:    captain wait {n.crew} --ack {n.delivery_id}"


def cmd_wait(args, out: Out) -> int:
    from state.crew.guards import check_captain
    from state.crew_side import door
    from state.inputs import crew_key

    home = home_of(args)
    name = None if args.all else args.name
    ctx = caller()
    check_captain(ctx, "wait")  # before a watcher starts: a crew may not wait
    if args.timeout == 0 and args.ack is None:  # one poll: no watcher, no sleep
        n = door.poll(home, name, ctx=ctx)
    else:
        from captain_tui.runtime.runner import Runner
        from state.crew import notify

        runner = Runner(home, name)
        try:
            n = notify.wait(
                home, name, timeout=args.timeout, ack=args.ack, ctx=ctx, sleep=runner.sleep
            )
        finally:
            runner.close()
    assignment_id = None
    if n is None and name is not None:
        snapshot = door.load(home, crew_key(name))
        assignment_id = snapshot.assignment.assignment_id if snapshot else None
    env = with_change(home, envelope(n, name, assignment_id), n)
    if n is None:
        human = f"timeout: nothing from {name or 'any crew'} (no delivery)."
    else:
        from state.crew import protocol

        summary = "\n".join("  " + line for line in n.summary.splitlines() or [""])
        state = protocol.crew_state(home, crew_key(n.crew))
        change = f"\n  {headline(env['change'])}" if env.get("change") else ""
        human = (
            f"{n.status}  {n.crew}  {n.delivery_id}  ({n.assignment_id})\n{summary}{change}\n"
            f"  {_next_step(n, state)}"
        )
    out.ok(env, human)
    return 0


def cmd_status(args, out: Out) -> int:
    from captain_tui import usecases
    from state.crew.standing import shown

    home = home_of(args)
    s = usecases.status(home, ctx=caller(), include_dismissed=args.all)
    problem = s.problem
    ledger_line = (
        _unusable(problem)
        if problem is not None
        else "Ledger: files in the home (the default)"
        if not s.postgres
        else f"Ledger: {s.described}"
    )
    if not s.home_exists:  # status is read-only: it says so and creates nothing
        return _status_answer(
            out,
            s.as_json(),
            f"No captain home at {s.root} yet. Start one by recruiting: captain crew "
            'NAME --task "..." (or try captain demo); --home DIR or $CAPTAIN_HOME '
            f"chooses another.\n{ledger_line}",
            problem,
        )
    rows = s.crew
    if not rows:
        return _status_answer(
            out,
            s.as_json(),
            f"Home: {s.root}\n{ledger_line}\nNo crew yet. Recruit one: captain crew "
            'NAME --task "..."',
            problem,
        )
    lines = [
        [
            "NAME",
            "AGENT",
            "STATE",
            "ASSIGNMENT",
            "UNREAD",
            "QUESTION",
            "UNACKED",
            "PANE",
            "DOORBELL",
            "CHANGE",
            "SPEND",
        ]
    ]
    for r in rows:
        lines.append(
            [
                r["name"],
                r["agent"],
                shown(r["state"], r.get("dialog")),
                r["assignment_id"],
                str(r["unread"]),
                r["question_id"] or "-",
                str(r["unacknowledged"]),
                (r["pane"] or {}).get("pane_id", "-"),
                f"held: {r['doorbell']['gate']}" if r["doorbell"]["gate"] else "-",
                compact(r.get("change")),
                _spent(r["spend"]["assignment"]),
            ]
        )
    # the total, once anything was measured (docs/ledger.md "Spend")
    spent = (
        f"Spend: {_spent(s.spend)} in all (every assignment of these crews)\n"
        if s.spend is not None and s.spend["turns"]
        else ""
    )
    return _status_answer(
        out,
        s.as_json(),
        table(lines) + _landing_lines(s.landing) + f"\n\n{spent}{ledger_line}\nHome: {s.root}",
        problem,
    )


def _spent(figure: dict) -> str:
    """A spend figure of status --json in a few characters (``state.crew.spend.shown``)."""
    from state.crew.spend import from_json, shown

    return shown(from_json(figure))


def _landing_lines(queue: Sequence[dict]) -> str:
    """The landing queue under the crew table: who is landing, waiting, or was killed."""
    if not queue:
        return ""
    lines = [["LANDING", "CREW", "ASSIGNMENT", "ONTO", "SINCE", "REPOSITORY"]]
    for q in queue:
        lines.append(
            [
                q["state"],
                q["crew"] or "-",
                q["assignment_id"] or "-",
                q["base_branch"] or "-",
                when(q["queued_at"]),
                q["project"] or "-",
            ]
        )
    return "\n\n" + table(lines)


def cmd_land(args, out: Out) -> int:
    from captain_tui import usecases

    g = usecases.land(
        home_of(args),
        args.name,
        assignment_id=args.assignment,
        allow_outside=args.allow_outside,
        reason=args.reason,
        tell=args.tell,
        operator=usecases.actor(),
        ctx=caller(),
    )
    r = g.landed
    lines = [
        f"Landed {r.branch} ({g.crew}, {g.assignment_id}) onto {r.base_branch}: "
        f"{r.old_base[:12]} -> {r.commit[:12]} ({r.mode}, {r.files} file(s)"
        + (", tests passed" if r.tested else "")
        + ")."
    ]
    if r.recovered:
        lines.append("It was finished from a land that was interrupted after moving the branch.")
    if r.crew_commit:
        lines.append(f"The crew's uncommitted files were committed first as {r.crew_commit[:12]}.")
    if r.outside_grant:
        lines.append(
            f"Landed outside the grant (allowed, recorded): {len(r.outside_grant)} path(s)."
        )
    if r.checkout and not r.checkout_problem:
        lines.append(f"Your checkout {r.checkout} was brought forward to {r.commit[:12]}.")
    if r.checkout_problem:
        lines.append(f"Warning: {r.checkout_problem}.")
    out.ok(g.as_json(), "\n".join(lines))
    return 0


def _status_answer(out: Out, payload: dict, human: str, problem) -> int:
    """Status shows the crew whatever the ledger's state; a ledger it cannot use (a bad
    URL, a database that is unreachable, not migrated, or without its driver) is said
    there and makes the command fail (exit 1, ``--json``: ``ok`` false and the refusal's
    code), so a script never mistakes a broken ledger for an empty one."""
    if problem is None:
        out.ok(payload, human)
        return 0
    out.partial(payload, human, problem)
    return 1


def _unusable(err) -> str:
    return f"Ledger: NOT USABLE: [{err.code}] {err.message}"


def cmd_dismiss(args, out: Out) -> int:
    from captain_tui import usecases

    d = usecases.dismiss(home_of(args), args.name, ctx=caller(), discard=args.discard)
    said = "Finished dismissing" if d.finished_earlier else "Dismissed"
    out.ok(
        d.as_json() | {"crew": args.name},
        f"{said} {args.name}{usecases.dismissal_words(d)}.",
    )
    return 0


def cmd_demo(args, out: Out) -> int:
    from captain_tui.cli.args import captain_only
    from captain_tui.cockpit.demo import run_demo

    captain_only("demo")  # a cockpit, even the demo's: the captain's, never a crew's
    return run_demo(keep=args.keep)


def cmd_watch(args, out: Out) -> int:
    """Ring, check panes and print every new notification as one JSON line, until ^C."""
    from captain_tui.runtime.runner import Runner
    from state.crew import mailbox
    from state.crew.guards import check_captain

    check_captain(caller(), "watch")
    home = home_of(args)
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
                    env = with_change(home, envelope(n, n.crew, n.assignment_id), n)
                    print(json_line(env), flush=True)
            runner.sleep(1.0)
    except KeyboardInterrupt:
        return 0
    finally:
        runner.close()
