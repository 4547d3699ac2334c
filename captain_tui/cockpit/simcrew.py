"""A small simulated crew: a terminal program that behaves like an agent CLI.

It draws a composer prompt (``› ``), takes rings typed into its pane, runs
``captain inbox`` when a ring asks it to, and can be told (by typing a slash command,
as a person would) to look busy, show an approval modal, or hide its composer. Tests use
it as a scriptable agent; ``captain demo`` uses it as its crew.

    python -m captain_tui.cockpit.simcrew [--log FILE]
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
import time

PROMPT = "› "
SPINNER = "⠋⠙⠹⠸⠼⠴⠦⠧⠇⠏"


def _log(path: str | None, kind: str, text: str) -> None:
    if not path:
        return
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"at": time.time(), "kind": kind, "text": text}) + "\n")
        f.flush()
        os.fsync(f.fileno())


def _captain(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess:
    return subprocess.run(
        [sys.executable, "-m", "captain_tui", *args], capture_output=True, text=True, input=stdin
    )


# The demo crew's "model": each turn is one line of a Claude Code style transcript, which
# captain's Stop hook measures as it does a real agent's (docs/ledger.md "Spend"), so the
# cockpit's Spend column and header total have something to show.
DEMO_MODEL = "claude-sonnet-4-5"


def _turn(name: str, n: int) -> None:
    """One turn's usage in this crew's transcript, then the Stop hook, as an agent would.
    The transcript is kept beside the home (the demo's own directory, removed with it)."""
    home = os.environ.get("CAPTAIN_HOME")
    if not home:
        return
    folder = os.path.join(os.path.dirname(os.path.abspath(home)), "transcripts")
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{name.lower()}-{os.getpid()}.jsonl")
    usage = {
        "input_tokens": 40 + 9 * n,
        "output_tokens": 700 + 130 * n,
        "cache_read_input_tokens": 12_000 + 2_500 * n,
        "cache_creation_input_tokens": 900 + 60 * n,
    }
    message = {"id": f"msg_demo_{os.getpid()}_{n}", "model": DEMO_MODEL, "usage": usage}
    with open(path, "a", encoding="utf-8") as f:
        f.write(json.dumps({"type": "assistant", "message": message}) + "\n")
    # stop_hook_active: the hook only measures, never asks this crew to keep going
    stop = {"hook_event_name": "Stop", "stop_hook_active": True, "transcript_path": path}
    _captain("hook", "claude", "Stop", stdin=json.dumps(stop))


def _busy(seconds: float) -> None:
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        sys.stdout.write(f"\r{SPINNER[i % len(SPINNER)]} working… (esc to interrupt)")
        sys.stdout.flush()
        i += 1
        time.sleep(0.1)
    sys.stdout.write("\r" + " " * 40 + "\r")


class Auto:
    """The demo's crew: acts on its mail like an agent would.

    An assignment: work a while, then ask the captain one question (``--ask``) or finish.
    An answer: work a little more, then finish with ``captain done``.
    Like an agent, it takes the assignment ID from its mail (``--assignment``), not from
    ``CAPTAIN_ASSIGNMENT``: that names the first task only, and a next task has a new ID.
    """

    def __init__(
        self, name: str, question: str | None, work: float, changes: list[str] | None = None
    ) -> None:
        self.name = name
        self.question = question
        self.work = work
        self.changes = changes or []  # files (relative to its cwd) it edits before done
        self.asked = False
        self.task = ""
        self.turns = 0

    def on_mail(self, messages: list[dict]) -> None:
        kinds = {m["kind"] for m in messages}
        if not messages:
            return
        _busy(self.work)
        self.turns += 1
        _turn(self.name, self.turns)
        if "assignment" in kinds:
            self.asked = False
            self.task = [m for m in messages if m["kind"] == "assignment"][-1]["text"]
        current = ["--assignment", messages[-1]["assignment_id"]]
        if self.question and not self.asked and "answer" not in kinds:
            proc = _captain("ask", self.name, self.question, *current)
            self.asked = proc.returncode == 0
            print(proc.stdout.strip() or proc.stderr.strip())
            return
        # a report says what was done, as an agent's would; it never echoes the answer
        task = (self.task.splitlines() or ["the task"])[0].rstrip(".")
        for path in self.changes:  # its change: a line in each file, left uncommitted
            with open(path, "a", encoding="utf-8") as f:
                f.write(f"# {self.name}: {task[:60]}\n")
        report = f"Finished: {task[:80]}. Changed what it needed, re-ran the checks: all pass." + (
            " Went with your answer." if "answer" in kinds else ""
        )
        proc = _captain("done", self.name, "--report", report, *current)
        print(proc.stdout.strip() or proc.stderr.strip())


def _inbox(name: str) -> list[dict]:
    proc = _captain("inbox", name, "--json")
    try:
        return json.loads(proc.stdout).get("messages", [])
    except ValueError:
        print(proc.stderr.strip())
        return []


def _show(messages: list[dict]) -> None:
    for m in messages:
        print(f"── {m['kind']} {m['message_id']}")
        for line in m["text"].splitlines():
            print(f"   {line}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", help="append every line received to this file (JSON lines)")
    parser.add_argument(
        "--auto",
        action="store_true",
        help="act on mail by itself: work, ask, finish (the demo's crew)",
    )
    parser.add_argument(
        "--ask", metavar="QUESTION", help="with --auto: the question to ask about each assignment"
    )
    parser.add_argument(
        "--work",
        type=float,
        default=3.0,
        metavar="SECONDS",
        help="with --auto: how long each piece of work takes",
    )
    parser.add_argument(
        "--change",
        action="append",
        metavar="PATH",
        help="with --auto: a file it appends a line to before each done; repeatable",
    )
    args = parser.parse_args(argv)
    name = os.environ.get("CAPTAIN_CREW", "crew")
    auto = Auto(name, args.ask, args.work, args.change) if args.auto else None
    print(f"simulated crew {name} — type a message, or /busy N, /approve, /noprompt N")
    while True:
        try:
            line = input(PROMPT)
        except EOFError:
            return 0
        _log(args.log, "line", line)
        if line.startswith("/busy"):
            _busy(float(line.split()[1]) if len(line.split()) > 1 else 3)
        elif line.startswith("/approve"):
            print("Allow command?  rm -rf build/\n  1. Yes\n  2. No")
            answer = input("Press enter to confirm or esc to cancel ")
            _log(args.log, "approval", answer)
        elif line.startswith("/noprompt"):
            print("(composer hidden)")
            time.sleep(float(line.split()[1]) if len(line.split()) > 1 else 3)
        elif "captain inbox" in line:
            messages = _inbox(name)
            _log(args.log, "inbox", json.dumps(messages))
            _show(messages)
            if auto is not None:
                auto.on_mail(messages)
        elif line.strip():
            print(f"received: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
