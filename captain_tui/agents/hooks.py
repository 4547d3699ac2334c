"""Agent CLI hooks: ``captain hook AGENT EVENT [PAYLOAD]``, run by the agent, never by people.

Claude Code (registered by ``agents.claude``; the hook JSON arrives on stdin):

- ``SessionStart`` / ``UserPromptSubmit``: unread mail is injected as
  ``{"hookSpecificOutput": {"hookEventName": EVENT, "additionalContext": TEXT}}``; the read
  receipts are written only after that line is flushed (``state.crew.protocol.inbox`` owns that
  rule and the crew lock).
- ``Stop``: ``{"decision": "block", "reason": TEXT}`` while the crew has unread mail (the
  mail is the reason, and counts as read once flushed) or an unfinished assignment with no
  question pending; never when the input says ``stop_hook_active``.
- ``Notification`` (``notification_type`` ``permission_prompt`` / ``idle_prompt``):
  ``awaiting_approval`` / ``idle`` signals for ``captain wait``.
- ``PermissionRequest``: an approval request (``state.crew.approvals``) with its
  ``awaiting_approval`` signal; the hook holds the prompt up to ``[crew] approval_timeout``
  for ``captain approve`` and answers with that decision only. Otherwise nothing is
  printed and the agent's own prompt appears (docs/approvals.md).
- ``PreToolUse``: the budget's gate (docs/budgets.md): with a budget on the assignment, the
  spend is measured from the transcript it names and, at the budget, the call is refused
  with ``{"hookSpecificOutput": {"hookEventName": "PreToolUse", "permissionDecision":
  "deny", "permissionDecisionReason": TEXT}}``; otherwise nothing is printed. The Stop
  hook lets a crew held by its budget stop.

Codex (registered by ``agents.codex`` with ``-c`` overrides; JSON on stdin, Claude-style):

- ``PermissionRequest``: as Claude Code's (a request held for the captain's decision;
  no "allow for this session": Codex refuses ``updatedPermissions``).
- ``Stop``: an ``idle`` signal carrying ``last_assistant_message``; never blocks.
- ``PreToolUse``: the budget's gate, as Claude Code's (Codex 0.169 takes the same
  ``permissionDecision: "deny"`` with a reason, and names its session record as
  ``transcript_path``).
- ``notify`` (crews started before the hooks): ``captain hook codex notify JSON``; an
  ``agent-turn-complete`` is ``idle``, except for Codex's internal title-generation turn.

pi (captain's extension, ``agents.pi``, runs the hook with the event's JSON on stdin):

- ``before_agent_start`` (every prompt): unread mail is printed as ``{"message": TEXT}``,
  which the extension adds to the prompt as a custom message (pi sends it to the model as
  user content, and shows it in the pane, so control characters are escaped); receipts are
  written once that line is flushed, as for Claude Code. The line stays under what the
  extension reads (``PI_MAX_LINE``): mail beyond it waits for the next prompt.
- ``agent_end``: an ``idle`` signal carrying ``last_assistant_text``.
- ``tool_call`` (only for the tools ``[crew] pi_approval_tools`` names; pi asks about
  nothing itself): an approval request held as Claude Code's ``PermissionRequest``; the
  captain's decision is printed as ``{"decision": …, "reason": …}``. Nothing printed (no
  decision in time, any failure): the extension shows pi's own confirm dialog in the pane.
- ``budget`` (the extension's ``tool_call`` handler calls it first, for every call): the
  budget's gate: at the budget it prints ``{"block": true, "reason": TEXT}``, which the
  extension returns to pi (the call is not run, nor held for approval).
- pi cannot be held at a stop: finishing (``captain done``) or asking is left to the protocol
  line every mail carries.

Spend (``state.crew.spend``, docs/ledger.md "Spend"): Claude Code's and Codex's ``Stop`` and
pi's ``agent_end`` then read the turn's usage from the agent's own record
(``transcript_path``; pi: ``session_file``) by offset, without pydantic; when the figure
changed, a detached ``captain hook AGENT spend ASSIGNMENT`` puts it on the attempt.

Every hook fails open: whatever goes wrong, exit 0, nothing on stdout that could block,
one line on stderr. Signals are stamped with the moment the hook started, so one older
than the mail it would answer is dropped by ``state.crew.notify.signal``.

Imports stay lean (stdlib and ``state`` only): Claude Code runs this on every prompt and
every stop. Mail and the crew's snapshot are read by ``state.crew_side.fast`` without pydantic;
only what it declines (and the signals) imports the protocol.
"""

from __future__ import annotations

import json
import os
import sys
import time
from collections.abc import Callable, Mapping
from datetime import datetime
from pathlib import Path
from typing import IO, TYPE_CHECKING, NamedTuple

from state.clock import now
from state.crew import guards
from state.crew.guards import Context
from state.crew_side import gate
from state.errors import CaptainError
from state.home import Home
from state.store import loads_json
from state.vocab import counted

if TYPE_CHECKING:
    from state.crew_side.plain import Rec
    from state.records import CrewSnapshot, Message

CLAUDE_EVENTS = (
    "SessionStart",
    "UserPromptSubmit",
    "Stop",
    "Notification",
    "PermissionRequest",
    "PreToolUse",
)
CODEX_TURN_COMPLETE = "agent-turn-complete"
# characters of hook JSON read from stdin; more fails open (the no-budget gate reads as much)
MAX_INPUT = gate.MAX_INPUT
# What pi's extension reads of a hook's output (MAX_OUTPUT in pi_extension.ts is 4 MiB):
# a longer line would be cut, fail to parse, and its mail be lost though marked read.
PI_MAX_LINE = 1024 * 1024


class FailOpen(Exception):
    """Nothing to do, and the agent must carry on: the reason goes to stderr."""


class Call(NamedTuple):  # not a dataclass: that import alone costs every hook ~9 ms
    agent: str
    event: str
    payload: str | None
    stdin: IO[str] | None
    stdout: IO[str]
    env: Mapping[str, str]
    at: datetime  # when the hook started: the age of any signal it raises


def run_hook(
    agent: str, event: str, payload: str | None, stdin, stdout, env: Mapping[str, str]
) -> int:
    """Handle one hook call. Always returns 0 (fail open)."""
    call = Call(agent, event, payload, stdin, stdout, env, now())
    try:
        handler = HANDLERS.get((agent, event))
        if handler is None:
            raise FailOpen(f"unknown hook {agent!r} {event!r}; nothing done")
        handler(call)
    except CaptainError as err:
        _note(call, f"[{err.code}] {err.message}")
    except FailOpen as why:
        _note(call, str(why))
    except Exception as exc:  # noqa: BLE001 - a hook never wedges its agent
        _note(call, f"{type(exc).__name__}: {exc}")
    return 0


# A failure note is one short line: the agent may show hook stderr on its screen (Codex
# does), and the text can hold what the agent sent (an event name, a path).
NOTE_MAX = 400


def _note(call: Call, text: str) -> None:
    line = f"captain: hook {call.agent} {call.event} failed open: {text}"
    try:
        from state.inputs import TERMINAL_UNSAFE  # only on failure: it costs ~25 ms

        # escape (never drop) what a terminal would obey, then bound it
        line = TERMINAL_UNSAFE.sub(lambda m: f"\\u{ord(m.group()):04x}", line)
    except Exception:  # noqa: BLE001
        line = line.encode("ascii", "backslashreplace").decode("ascii")
    line = " ".join(line.split())
    if len(line) > NOTE_MAX:
        line = line[: NOTE_MAX - 1] + "…"
    try:
        print(line, file=sys.stderr, flush=True)
    except Exception:  # noqa: BLE001
        pass


# -- the crew this process is ---------------------------------------------------------------


def _crew(env: Mapping[str, str]) -> tuple[Home, Context]:
    """The home and crew identity from the pane's CAPTAIN_* environment, or FailOpen."""
    ctx = Context.from_env(env)
    # a hook acts for a crew (delivers its mail, writes its receipts) only in a declared
    # crew environment; a stray CAPTAIN_CREW in the captain's shell is not one
    if env.get("CAPTAIN_ROLE") != "crew" or not ctx.crew or not ctx.incarnation:
        raise FailOpen(
            "not a crew environment (CAPTAIN_ROLE=crew, CAPTAIN_CREW and "
            "CAPTAIN_INCARNATION are required)"
        )
    root = env.get("CAPTAIN_HOME")
    if not root:
        raise FailOpen("CAPTAIN_HOME is not set")
    if not (Path(root) / "home.json").is_file():
        # Home() would create a fresh home here; a hook must never do that
        raise FailOpen(f"there is no captain home at {root}")
    return Home(Path(root)), ctx


def _current(home: Home, ctx: Context) -> tuple[str, CrewSnapshot | Rec]:
    """This crew's live snapshot, refusing unknown, dismissed or stale incarnations."""
    from state.crew_side import door

    return door.current(home, ctx)


def _inbox(home: Home, ctx: Context, deliver: Callable[[list[Message]], None]) -> None:
    """``protocol.inbox``: the crew lock, then ``deliver``, then receipts (only if it returned)."""
    from state.crew_side import door

    door.inbox(home, ctx.crew or "", deliver=deliver, ctx=ctx, via="hook")


# -- input and output -----------------------------------------------------------------------


def _input(call: Call) -> dict:
    """The hook JSON on stdin: one object, for this very event."""
    stream = call.stdin
    if stream is None or (hasattr(stream, "isatty") and stream.isatty()):
        raise FailOpen("no hook input on stdin")
    # Bounded: an agent that writes without end must not take the hook's memory with it.
    raw = stream.read(MAX_INPUT + 1)
    if len(raw) > MAX_INPUT:
        raise FailOpen(f"stdin holds more than {MAX_INPUT} characters of hook input")
    try:
        data = loads_json(raw)
    except (TypeError, ValueError) as exc:
        raise FailOpen(f"stdin is not JSON ({exc})") from None
    if not isinstance(data, dict):
        raise FailOpen("stdin JSON is not an object")
    named = data.get("hook_event_name")
    if named is not None and named != call.event:
        raise FailOpen(f"stdin is a {named!r} event, not {call.event}")
    return data


def _emit(stdout: IO[str], answer: dict) -> None:
    """One JSON line, flushed: after this returns, the agent has it. ASCII-only, so no
    terminal encoding can turn it into something that is not JSON."""
    stdout.write(json.dumps(answer) + "\n")
    stdout.flush()


def _when(stamp: datetime) -> str:
    return stamp.strftime("%Y-%m-%d %H:%M:%SZ")


def _mail_text(batch: list[Message]) -> str:
    name = batch[0].crew
    head = (
        f"Mail from the captain for {name}: {counted(len(batch), 'message')}, oldest "
        "first. Delivered here, it now counts as read."
    )
    parts = [head]
    for m in batch:
        label = f"{m.message_id} · {m.kind}"
        if m.question_id:
            label += f" (answers {m.question_id})"
        parts.append(f"[{label} · {_when(m.queued_at)}]\n{m.text}")
    parts.append(_protocol_line(name, batch[-1].assignment_id))
    return "\n\n".join(parts)


def _protocol_line(name: str, assignment_id: str) -> str:
    # the ID is spelled out: the crew's CAPTAIN_ASSIGNMENT names its first task only
    return (
        f"Protocol: you are crew {name} on assignment {assignment_id}. When it is done, "
        f'run: captain done {name} --assignment {assignment_id} --report "what changed '
        f'and how it was checked". If you are blocked, run: captain ask {name} '
        f'--assignment {assignment_id} "your question" once, then stop until the '
        "answer arrives as mail."
    )


# -- Claude Code ----------------------------------------------------------------------------


def _claude_inject(call: Call) -> None:
    """SessionStart / UserPromptSubmit: unread mail becomes additionalContext."""
    _input(call)
    home, ctx = _crew(call.env)

    def deliver(batch: list[Message]) -> None:
        if batch:
            _emit(
                call.stdout,
                {
                    "hookSpecificOutput": {
                        "hookEventName": call.event,
                        "additionalContext": _mail_text(batch),
                    }
                },
            )

    _inbox(home, ctx, deliver)


def _claude_stop(call: Call) -> None:
    """Stop: block while mail is unread or the assignment is unfinished with no question;
    then the turn's spend is measured (``_measure_spend``)."""
    data = _input(call)
    try:
        _claude_stop_decision(call, data)
    finally:
        _measure_spend(call, data)


def _claude_stop_decision(call: Call, data: dict) -> None:
    if data.get("stop_hook_active"):
        return  # already continuing because of a Stop hook: never hold it twice
    home, ctx = _crew(call.env)
    key, _ = _current(home, ctx)
    blocked = False

    def deliver(batch: list[Message]) -> None:
        nonlocal blocked
        if batch:
            _emit(
                call.stdout,
                {
                    "decision": "block",
                    "reason": _mail_text(batch) + "\nAct on this mail before you stop.",
                },
            )
            blocked = True

    _inbox(home, ctx, deliver)
    if blocked:
        return
    from state.crew_side import door

    snapshot = door.load(home, key)
    if snapshot is None or snapshot.dismissed_at is not None or snapshot.done_at is not None:
        return
    if guards.pending_question(home, key, snapshot) is not None:
        return  # it asked and waits for the answer: stopping is right
    from state.crew import budget

    if budget.is_held(home, key, snapshot):
        return  # held by its budget: every tool is refused, so stopping is right
    name, spec = snapshot.name, snapshot.assignment
    _emit(
        call.stdout,
        {
            "decision": "block",
            "reason": (
                f"Assignment {spec.assignment_id} is not finished, and no question is pending. "
                f"If the work is done, run: captain done {name} --assignment {spec.assignment_id} "
                f'--report "what changed and how it was checked". If you are blocked, run: captain '
                f'ask {name} --assignment {spec.assignment_id} "your question" and then stop. '
                "Otherwise keep working on it."
            ),
        },
    )


_PERMISSION_WORDS = ("permission", "approval", "approve")


def _claude_notification(call: Call) -> None:
    data = _input(call)
    kind = data.get("notification_type")
    message = str(data.get("message") or "").strip()
    if kind is None:  # older Claude Code sends only the message
        lowered = message.lower()
        if any(word in lowered for word in _PERMISSION_WORDS):
            kind = "permission_prompt"
        elif "waiting for your input" in lowered:
            kind = "idle_prompt"
    if kind == "permission_prompt":
        _signal(call, "awaiting_approval", message or "a permission prompt is on screen")
    elif kind == "idle_prompt":
        _signal(call, "idle", message or "waiting for input")
    # other kinds (auth_success, elicitation_dialog, ...) are not the captain's business


def _permission_request(call: Call) -> None:
    """PermissionRequest (Claude Code; Codex 0.169 sends the same shape: ``tool_name``,
    ``tool_input.command``; captain's pi extension sends its gated ``tool_call`` so too):
    one approval request (``state.crew.approvals``) and its
    ``awaiting_approval`` signal, then the hook holds the prompt for the captain's decision
    up to ``[crew] approval_timeout``. A decision in time is the hook's answer; anything
    else prints nothing, so the agent's own prompt appears (never an allow)."""
    import signal
    import threading
    import time

    data = _input(call)
    tool = str(data.get("tool_name") or "a tool")
    command = _what(data.get("tool_input"))
    home, ctx = _crew(call.env)
    timeout = home.setting("crew", "approval_timeout")
    deadline = time.monotonic() + timeout
    if timeout <= 0:  # holding is switched off: only the notice, as before
        detail = ": " + " ".join(command.split())[:300] if command else ""
        _signal(call, "awaiting_approval", f"permission prompt: {tool}{detail}")
        return
    from state.crew import approvals

    _, snapshot = _current(home, ctx)
    # The agent ends a hook it stopped waiting for (SIGTERM, SIGHUP): that is no decision.
    # The handler only notes it; the wait sees the note (an exception raised from a
    # handler could land inside a write).
    gone = threading.Event()
    before = {}
    if threading.current_thread() is threading.main_thread():
        for sig in (signal.SIGTERM, signal.SIGHUP):
            before[sig] = signal.signal(sig, lambda signum, frame: gone.set())
    request = None
    try:
        request = approvals.open_request(
            home,
            snapshot,
            agent=call.agent,
            tool=tool,
            command=command,
            session_allowed=call.agent in SESSION_ALLOWED,
            timeout=timeout,
        )
        _signal(
            call,
            "awaiting_approval",
            f"asks to run {request.tool}: {request.excerpt} (approval {request.request_id})",
            request_id=request.request_id,
        )
        decision = approvals.await_decision(home, request, deadline=deadline, gone=gone.is_set)
    except BaseException:
        if request is not None:  # never left open: the native prompt takes it
            approvals.close(home, request, "expired")
        raise
    finally:
        for sig, handler in before.items():
            signal.signal(sig, handler)
    if decision is not None:
        _emit(call.stdout, _decision_answer(call.agent, decision, tool, data))


# the agents whose hook can answer "allow for this session" (Codex refuses it)
SESSION_ALLOWED = ("claude", "pi")


def _what(tool_input: object) -> str:
    """What a tool call would do, as one text: its command; else its file (``file_path``,
    pi's ``path``) followed by the rest of its input as JSON (a write's content, an edit's
    texts); else its whole input as JSON. Its fingerprint and escaped excerpt are the
    request's (``approvals.open_request``), so the excerpt starts with what matters."""
    if isinstance(tool_input, dict):
        command = tool_input.get("command")
        if isinstance(command, str) and command:
            return command
        for key in ("file_path", "path"):
            path = tool_input.get(key)
            if isinstance(path, str) and path:
                rest = {k: v for k, v in tool_input.items() if k != key}
                return f"{path} {json.dumps(rest, ensure_ascii=False)}" if rest else path
    if tool_input is None:
        return ""
    return tool_input if isinstance(tool_input, str) else json.dumps(tool_input, ensure_ascii=False)


def _decision_answer(agent: str, decision, tool: str, data: dict) -> dict:
    """The hook's answer, in the agent's PermissionRequest schema (Claude Code 2.1 and
    Codex 0.169 share it; only Claude Code takes ``updatedPermissions``); for pi, what
    captain's extension reads: ``{"decision": …, "reason": …}`` (it lets the call run,
    remembers the tool for the rest of the pi session, or blocks the call with the
    reason, which the model reads as the tool's result)."""
    if agent == "pi":
        told = {"decision": decision.decision}
        if decision.decision == "deny":
            told["reason"] = f"The captain denied this: {decision.reason}"
        return told
    if decision.decision == "deny":
        answer: dict[str, object] = {
            "behavior": "deny",
            "message": f"The captain denied this: {decision.reason}",
        }
    else:
        answer = {"behavior": "allow"}  # typed above: dict[str, object]
        if decision.decision == "allow_session" and agent == "claude":
            suggested = data.get("permission_suggestions")
            rules_ = (
                [dict(s, destination="session") for s in suggested if isinstance(s, dict)]
                if isinstance(suggested, list)
                else []
            )
            answer["updatedPermissions"] = rules_ or [
                {
                    "type": "addRules",
                    "rules": [{"toolName": tool}],
                    "behavior": "allow",
                    "destination": "session",
                }
            ]
    return {"hookSpecificOutput": {"hookEventName": "PermissionRequest", "decision": answer}}


def _signal(call: Call, status: str, summary: str, request_id: str | None = None) -> None:
    """A crew signal for ``captain wait``, stamped with when the hook started."""
    from state.crew import mailbox, notify

    home, ctx = _crew(call.env)
    key, snapshot = _current(home, ctx)
    text = f"{snapshot.name}: {summary}"
    if status != "awaiting_approval" or request_id is not None:  # one notice per request
        notify.signal(
            home,
            snapshot.name,
            status,
            text,
            at=call.at,
            incarnation_id=snapshot.incarnation_id,
            request_id=request_id,
        )
        return
    # One prompt can fire both PermissionRequest and Notification(permission_prompt):
    # while an approval notice for the same mail is unacknowledged, do not raise another.
    with home.store.lock(f"hook-approval-{key}"):
        assignment_id = snapshot.assignment.assignment_id
        last = mailbox.last_message(home, key, assignment_id)
        queued_at = last.queued_at if last else None
        if any(
            n.status == "awaiting_approval" and n.queued_at == queued_at
            for n in mailbox.unacknowledged(home, key, assignment_id)
        ):
            return
        notify.signal(
            home, snapshot.name, status, text, at=call.at, incarnation_id=snapshot.incarnation_id
        )


def _said(value: object) -> str:
    """An agent's text field, stripped; "" when absent or not text."""
    return value.strip() if isinstance(value, str) else ""


# -- Codex ----------------------------------------------------------------------------------


def _codex_stop(call: Call) -> None:
    """Stop: the turn ended; prints nothing, so Codex always stops. The turn's spend is
    measured from its session record (``transcript_path``)."""
    data = _input(call)
    try:
        _signal(call, "idle", _said(data.get("last_assistant_message")) or "finished its turn")
    finally:
        _measure_spend(call, data)


# Codex names each new thread with a side turn of its own; notify reports that one too.
CODEX_TITLE_PROMPT = "Generate a concise, single-line task title"


def _codex_notify(call: Call) -> None:
    if call.payload is None:
        raise FailOpen("codex notify passes its event as one JSON argument; none was given")
    try:
        data = loads_json(call.payload)
    except ValueError as exc:
        raise FailOpen(f"the notify argument is not JSON ({exc})") from None
    if not isinstance(data, dict) or data.get("type") != CODEX_TURN_COMPLETE:
        return  # only a finished turn means anything to the captain
    inputs = data.get("input-messages")
    if (
        isinstance(inputs, list)
        and inputs
        and isinstance(inputs[0], str)
        and inputs[0].lstrip().startswith(CODEX_TITLE_PROMPT)
    ):
        return  # Codex's own title-generation turn, not the crew's
    _signal(call, "idle", _said(data.get("last-assistant-message")) or "finished its turn")


# -- pi -------------------------------------------------------------------------------------


def _pi_inject(call: Call) -> None:
    """before_agent_start: unread mail becomes the message pi adds to the prompt."""
    _input(call)
    home, ctx = _crew(call.env)

    def deliver(batch: list[Message]) -> None:
        if batch:
            from state.inputs import for_terminal  # only with mail: it costs ~25 ms

            # The oldest messages whose line fits PI_MAX_LINE (always at least one: one
            # message is at most 64 KiB); the rest stay unread for the next prompt. The
            # batch is cut in place because receipts are written for what it holds after
            # this returns (guards.inbox).
            n = len(batch)
            line = json.dumps({"message": for_terminal(_mail_text(batch))})
            while n > 1 and len(line) >= PI_MAX_LINE:
                n = max(1, n * PI_MAX_LINE // (len(line) + 1)) if n > 2 else n - 1
                line = json.dumps({"message": for_terminal(_mail_text(batch[:n]))})
            del batch[n:]
            call.stdout.write(line + "\n")
            call.stdout.flush()

    _inbox(home, ctx, deliver)


def _pi_agent_end(call: Call) -> None:
    """agent_end: the turn is over; an ``idle`` signal with the last assistant text, then
    the turn's spend measured from pi's session file (the extension's ``session_file``)."""
    data = _input(call)
    try:
        _pi_idle(call, data)
    finally:
        _measure_spend(call, data)


def _pi_idle(call: Call, data: dict) -> None:
    text = _said(data.get("last_assistant_text"))
    stop = data.get("stop_reason")
    if stop == "error":
        text = f"its turn ended with an error: {_said(data.get('error_message')) or 'no detail'}"
    elif stop == "aborted":
        text = "its turn was interrupted" + (f": {text}" if text else "")
    _signal(call, "idle", text or "finished its turn")


# -- budgets (docs/budgets.md): every agent's pre-tool gate, one rule ----------------------


def _over_budget(
    call: Call, source: object, before: Callable[[], None] | None = None
) -> str | None:
    """The refusal for this tool call when the crew's assignment is at its budget, else
    None (no budget, or under it). The spend is measured first, from ``source`` (the
    transcript or session record the agent named, None when it names none):
    ``state.crew.budget.review`` holds the rule and says the notices."""
    home, ctx = _crew(call.env)
    key, snapshot = _current(home, ctx)
    if getattr(snapshot, "budget_usd", None) is None:
        return None  # no budget: nothing to measure against here
    if before is not None:
        before()
    from state.crew import budget, spend

    path = source if isinstance(source, str) and source else None
    measured = spend.measure_current(home, key, snapshot, call.agent, path)
    return budget.review(home, key, snapshot, measured)


TRANSCRIPT_WAIT = 2.0  # seconds the gate waits for the answer that asked for the call
TRANSCRIPT_TAIL = 1024 * 1024  # how much of the transcript's end is searched for it


def _answer_written(call: Call, data: dict) -> None:
    """Claude Code may run PreToolUse before the answer that asked for the call (and its
    usage) is in the transcript: under load the gate measured the spend without it and let
    the call that crossed the budget run. Wait, briefly and bounded, until the call's
    ``tool_use_id`` is in the transcript's tail; after that, measure what is there."""
    path, tool = data.get("transcript_path"), data.get("tool_use_id")
    if call.agent != "claude" or not isinstance(path, str) or not path:
        return
    if not isinstance(tool, str) or not 0 < len(tool) <= 256:
        return
    token = tool.encode("utf-8", "replace")
    deadline = time.monotonic() + TRANSCRIPT_WAIT
    while True:
        try:
            with open(path, "rb") as f:
                f.seek(max(0, os.fstat(f.fileno()).st_size - TRANSCRIPT_TAIL))
                if token in f.read(TRANSCRIPT_TAIL):
                    return
        except OSError:
            return  # the measure says what is wrong with it
        if time.monotonic() >= deadline:
            return
        time.sleep(0.02)


def _pre_tool_use(call: Call) -> None:
    """PreToolUse (Claude Code, Codex): refuse the call at the budget, else say nothing."""
    data = _input(call)
    reason = _over_budget(call, data.get("transcript_path"), lambda: _answer_written(call, data))
    if reason is not None:
        _emit(
            call.stdout,
            {
                "hookSpecificOutput": {
                    "hookEventName": "PreToolUse",
                    "permissionDecision": "deny",
                    "permissionDecisionReason": reason,
                }
            },
        )


def _pi_budget(call: Call) -> None:
    """budget (pi's extension's tool_call handler calls it first, for every call, naming
    pi's ``session_file``): ``{"block": true, "reason": TEXT}`` at the budget."""
    data = _input(call)
    reason = _over_budget(call, data.get("session_file"))
    if reason is not None:
        _emit(call.stdout, {"block": True, "reason": reason})


# -- spend (state/crew/spend.py) -------------------------------------------------------------

SPEND_EVENT = "spend"  # captain hook AGENT spend ASSIGNMENT: the figure onto the ledger
RECORD_SETTLE = 0.5  # seconds the detached recorder lets the agent finish writing its turn


def _measure_spend(call: Call, data: dict) -> None:
    """At a turn's end: read what the agent recorded since the last turn (Claude Code's and
    Codex's ``transcript_path``, pi's ``session_file``) into the crew's spend record, which
    is cheap (offsets, no pydantic). When the assignment's figure changed, putting it on
    the ledger (models, maybe a database) is left to a detached ``captain hook AGENT spend``
    the agent never waits for. Never raises: a figure is never worth failing a turn."""
    source = data.get("transcript_path") or data.get("session_file")
    if not isinstance(source, str) or not source:
        return
    try:
        from state.crew import spend

        home, ctx = _crew(call.env)
        key, snapshot = _current(home, ctx)
        # the current assignment, and the one it was handed off from (a turn stamped
        # before this one began is that one's: spend.measure_current)
        found = [snapshot.assignment.assignment_id, snapshot.assignment.handoff_of]
        ids: list[str] = [a for a in found if isinstance(a, str) and a]
        before = [spend.assignment_spend(home, key, a) for a in ids]
        spend.measure_current(home, key, snapshot, call.agent, source)
        for assignment_id, was in zip(ids, before, strict=True):
            now = spend.assignment_spend(home, key, assignment_id)
            if now != was and now.turns or assignment_id == snapshot.assignment.assignment_id:
                # the current one always: the agent may write the turn's last line just
                # after its hook ran (Claude Code did, under load), so the recorder reads
                # the transcript again itself before it records (_record_spend)
                _detach([call.agent, SPEND_EVENT, assignment_id], call.env)
    except (FailOpen, CaptainError):
        return  # not a live crew's hook (the hook's own answer says why): nothing to measure
    except Exception as exc:  # noqa: BLE001
        _note(call, f"spend not measured: {type(exc).__name__}: {exc}")


def _detach(args: list[str], env: Mapping[str, str]) -> None:
    """``captain hook ARGS`` in its own session, its output nowhere: the agent's turn
    does not wait for it, and it outlives this hook. ``posix_spawn``, not subprocess (whose
    import alone costs a Stop hook ~10 ms); it is reaped by init once this hook exits."""
    import os

    from captain_tui.agents.kinds import captain_command

    argv = [*captain_command(), "hook", *args]
    null = os.devnull
    os.posix_spawn(
        argv[0],
        argv,
        dict(env),
        file_actions=[
            (os.POSIX_SPAWN_OPEN, 0, null, os.O_RDONLY, 0),
            (os.POSIX_SPAWN_OPEN, 1, null, os.O_WRONLY, 0),
            (os.POSIX_SPAWN_OPEN, 2, null, os.O_WRONLY, 0),
        ],
        setsid=True,
    )


def _record_spend(call: Call) -> None:
    """``captain hook AGENT spend ASSIGNMENT`` (started by ``_measure_spend``): the
    assignment's measured figure as a ``spend`` note on its attempt (``state.work.spent``),
    only when it changed."""
    from state.crew import spend
    from state.work import spent

    home, ctx = _crew(call.env)
    key, snapshot = _current(home, ctx)
    assignment_id = call.payload or snapshot.assignment.assignment_id
    if assignment_id == snapshot.assignment.assignment_id:
        # a turn's end: what the agent wrote after its hook measured is counted too. Twice,
        # a moment apart: this process is detached, so the wait costs the agent nothing
        import time

        spend.catch_up(home, key, snapshot)
        time.sleep(RECORD_SETTLE)
        spend.catch_up(home, key, snapshot)
    figure = spend.assignment_spend(home, key, assignment_id)
    spent.record(home, assignment_id, figure, actor=snapshot.name)


HANDLERS: dict[tuple[str, str], Callable[[Call], None]] = {
    ("claude", "SessionStart"): _claude_inject,
    ("claude", "UserPromptSubmit"): _claude_inject,
    ("claude", "Stop"): _claude_stop,
    ("claude", "Notification"): _claude_notification,
    ("claude", "PermissionRequest"): _permission_request,
    ("claude", "PreToolUse"): _pre_tool_use,
    ("codex", "notify"): _codex_notify,
    ("codex", "PermissionRequest"): _permission_request,
    ("codex", "Stop"): _codex_stop,
    ("codex", "PreToolUse"): _pre_tool_use,
    ("pi", "before_agent_start"): _pi_inject,
    ("pi", "agent_end"): _pi_agent_end,
    ("pi", "tool_call"): _permission_request,
    ("pi", "budget"): _pi_budget,
    ("claude", SPEND_EVENT): _record_spend,
    ("codex", SPEND_EVENT): _record_spend,
    ("pi", SPEND_EVENT): _record_spend,
}
