"""A small simulated crew: a terminal program that behaves like an agent CLI.

It draws a composer prompt (``› ``), takes rings typed into its pane, runs
``captain inbox`` when a ring asks it to, and can be told (by typing a slash command,
as a person would) to look busy, show an approval modal, or hide its composer. Tests use
it as a scriptable agent; ``captain demo`` uses it as its crew.

    python -m captain_tui.simcrew [--log FILE]
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


def _captain(*args: str) -> subprocess.CompletedProcess:
    return subprocess.run([sys.executable, "-m", "captain_tui", *args], capture_output=True,
                          text=True)


def _busy(seconds: float) -> None:
    end = time.monotonic() + seconds
    i = 0
    while time.monotonic() < end:
        sys.stdout.write(f"\r{SPINNER[i % len(SPINNER)]} working… (esc to interrupt)")
        sys.stdout.flush()
        i += 1
        time.sleep(0.1)
    sys.stdout.write("\r" + " " * 40 + "\r")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--log", help="append every line received to this file (JSON lines)")
    args = parser.parse_args(argv)
    name = os.environ.get("CAPTAIN_CREW", "crew")
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
            proc = _captain("inbox", name)
            _log(args.log, "inbox", proc.stdout)
            print(proc.stdout.rstrip() or proc.stderr.rstrip())
        elif line.strip():
            print(f"received: {line}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
