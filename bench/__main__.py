"""Every measurement against docs/design.md's budgets, in one command.

    python -m bench [--quick | --smoke] [--only PART]

Runs each script below as its own process (so one's imports and threads never colour
another's numbers, and one that fails never stops the others), prints one table, and
writes ``bench/results.json``. Each figure is a median or a p95 over repeated runs, with
its baseline measured in the same run. A part that cannot run here (no tmux, no PostgreSQL
server, no agent CLI) says why in its row; one that crashed says so with its last error
line (its whole output is in the JSON). The exit code is 0 when every part ran, 1 when one
did not. ``--smoke`` runs every part at its smallest (seconds each; numbers that mean
nothing): the tests run it, so no refactor breaks a part silently.
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import subprocess
import sys
import tempfile
import time
from pathlib import Path

if __package__ in (None, ""):  # run as a file: bench/ is then not importable as a package
    sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

from bench.report import CANNOT_RUN, CANNOT_RUN_PREFIX, table, write_json  # noqa: E402

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

# (name, script, arguments for a full run, for --quick, for --smoke)
SUITE = (
    ("cold start", "cold_start.py", ["--runs", "15"], ["--runs", "3"], ["--smoke"]),
    (
        "doorbell and wait",
        "doorbell_latency.py",
        ["--rounds", "20"],
        ["--rounds", "5"],
        ["--smoke"],
    ),
    ("agent doorbell", "agent_doorbell.py", ["--rounds", "20"], ["--rounds", "5"], ["--smoke"]),
    ("crew death", "crew_death.py", ["--runs", "20"], ["--runs", "5"], ["--smoke"]),
    ("cockpit", "cockpit_budgets.py", ["--events", "500"], ["--quick"], ["--smoke"]),
    ("cockpit idle", "cockpit_idle.py", ["--seconds", "60"], ["--quick"], ["--smoke"]),
    (
        "ledger claims",
        "ledger_claims.py",
        ["--items", "400", "--sizes", "10000,100000"],
        ["--quick"],
        ["--smoke"],
    ),
    ("ledger wake-ups", "ledger_wakeups.py", ["--rounds", "20"], ["--quick"], ["--smoke"]),
    ("review", "review_budgets.py", ["--rounds", "20"], ["--quick"], ["--smoke"]),
    ("land", "land.py", ["--runs", "20"], ["--runs", "5"], ["--smoke"]),
    ("approvals", "approvals_budgets.py", ["--rounds", "20"], ["--quick"], ["--smoke"]),
)
MODES = ("full", "quick", "smoke")
NOT_RUN = "not run"  # a row's verdict: this part (or this row of it) could not run here
FAILED = "FAILED"  # a row's verdict: the part crashed


def arguments(script: str, mode: str) -> list[str]:
    """The arguments ``script`` runs with in ``mode`` (one of ``MODES``)."""
    for _name, file, *by_mode in SUITE:
        if file == script:
            return by_mode[MODES.index(mode)]
    raise KeyError(script)


def _rows_from_markdown(text: str) -> list[dict]:
    """A script that prints a what|measured|budget|verdict table but keeps its own JSON."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0] not in ("what", "---") and not cells[0].startswith("-"):
            rows.append(dict(zip(("what", "measured", "budget", "verdict"), cells)))
    return rows


def _why_not(stderr: str) -> str | None:
    """The sentence of a script's ``cannot run: ...`` line."""
    for line in reversed(stderr.splitlines()):
        if line.startswith(CANNOT_RUN_PREFIX):
            return line[len(CANNOT_RUN_PREFIX) :].strip()
    return None


def _last_error(text: str) -> str:
    """What a crash said, on one line: the last traceback's exception and its message
    (without the frames), else the last line of output."""
    lines = text.strip().splitlines()
    starts = [i for i, line in enumerate(lines) if line.startswith("Traceback (most recent")]
    if starts:
        after = lines[starts[-1] + 1 :]
        for i, line in enumerate(after):
            if line and not line[0].isspace():  # frames are indented; the exception is not
                return " ".join(x.strip() for x in after[i:] if x.strip())
    flat = [line.strip() for line in lines if line.strip()]
    return flat[-1] if flat else "no output"


def _cell(text: str) -> str:
    """``text`` fit for one table cell: one line, no column bar."""
    return " ".join(text.split()).replace("|", "/")


def run_one(
    name: str,
    script: str,
    extra: list[str],
    *,
    env: dict | None = None,
    timeout: float | None = None,
) -> dict:
    """Run one part in its own process; its rows, or one row saying why it has none."""
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        out = Path(tmp.name)
    start = time.monotonic()
    try:
        proc = subprocess.run(
            [sys.executable, str(HERE / script), *extra, "--json", str(out)],
            capture_output=True,
            text=True,
            cwd=REPO,
            env=env,
            timeout=timeout,
        )
        code, stdout, stderr = proc.returncode, proc.stdout, proc.stderr
    except subprocess.TimeoutExpired as exc:
        code = None
        stdout = (
            exc.stdout.decode(errors="replace")
            if isinstance(exc.stdout, bytes)
            else exc.stdout or ""
        )
        stderr = (
            exc.stderr.decode(errors="replace")
            if isinstance(exc.stderr, bytes)
            else exc.stderr or ""
        )
    seconds = time.monotonic() - start
    try:
        data = json.loads(out.read_text()) if out.stat().st_size else {}
    except (OSError, ValueError):
        data = {}
    finally:
        out.unlink(missing_ok=True)
    rows = data.get("rows") or (_rows_from_markdown(stdout) if code in (0, 1) else [])
    why = _why_not(stderr) if code == CANNOT_RUN else None
    if why is not None:
        rows = [
            {
                "what": name,
                "measured": f"cannot run here: {_cell(why)}",
                "budget": "—",
                "verdict": NOT_RUN,
            }
        ]
    elif code is None:
        rows = [
            {
                "what": name,
                "measured": f"did not finish within {timeout:.0f} s",
                "budget": "—",
                "verdict": FAILED,
            }
        ]
    elif not rows:  # a crash (or a run that printed no table): its last error line
        rows = [
            {
                "what": name,
                "measured": f"crashed (exit {code}): {_cell(_last_error(stderr or stdout))}",
                "budget": "—",
                "verdict": FAILED,
            }
        ]
    # exit 1 with rows: a budget was missed, and the rows say which
    return {
        "name": name,
        "script": script,
        "seconds": round(seconds, 1),
        "exit": code,
        "ran": all(r.get("verdict") not in (NOT_RUN, FAILED) for r in rows),
        "rows": rows,
        "results": data,
        "stdout": stdout,
        "stderr": stderr,
    }


def machine() -> str:
    return (
        f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()} "
        f"{platform.release()}, Python {platform.python_version()}, load average at start "
        f"{os.getloadavg()[0]:.2f}"
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        prog="python -m bench",
        description=__doc__.splitlines()[0],
        epilog="Exit status: 0 when every part ran, 1 when one did not (its row says why).",
    )
    size = parser.add_mutually_exclusive_group()
    size.add_argument("--quick", action="store_true", help="short runs (minutes, not tens)")
    size.add_argument(
        "--smoke",
        action="store_true",
        help="every part at its smallest: seconds each, numbers that mean "
        "nothing (proves each part still runs)",
    )
    parser.add_argument(
        "--only",
        choices=[s[0] for s in SUITE],
        action="append",
        help="run only this part (repeatable)",
    )
    parser.add_argument(
        "--out",
        type=Path,
        default=None,
        help="where the JSON goes (default: bench/results.json; with --smoke "
        "none is written unless this is given)",
    )
    args = parser.parse_args(argv)
    mode = "smoke" if args.smoke else "quick" if args.quick else "full"
    out = args.out or (None if args.smoke else HERE / "results.json")  # smoke: no numbers

    where = machine()
    sections = []
    for name, script, *_ in SUITE:
        if args.only and name not in args.only:
            continue
        print(f"-- {name} ({script}) ...", file=sys.stderr, flush=True)
        sections.append(run_one(name, script, arguments(script, mode)))
    body = table([row for section in sections for row in section["rows"]])
    stamp = time.strftime("%Y-%m-%d")
    flag = {"full": "", "quick": " --quick", "smoke": " --smoke"}[mode]
    text = f"Measured on {stamp} by `python -m bench{flag}` on {where}.\n\n{body}"
    print(text)
    missing = [s["name"] for s in sections if not s["ran"]]
    if missing:
        print(f"\nDid not run: {', '.join(missing)} (their rows say why).")
    write_json(
        out,
        {"date": stamp, "machine": where, "quick": args.quick, "mode": mode, "sections": sections},
    )
    return 1 if missing else 0


if __name__ == "__main__":
    sys.exit(main())
