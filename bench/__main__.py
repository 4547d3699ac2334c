"""Every measurement against docs/design.md's budgets, in one command.

    python -m bench [--quick] [--only PART]

Runs each script below as its own process (so one's imports and threads never colour
another's numbers), prints one table, and writes ``bench/results.json``. Each figure is a
median or a p95 over repeated runs, with its baseline measured in the same run.
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

from bench.report import table, write_json

HERE = Path(__file__).resolve().parent
REPO = HERE.parent

# (name, script, arguments for a full run, arguments for --quick)
SUITE = (
    ("cold start", "cold_start.py", ["--runs", "15"], ["--runs", "3"]),
    ("doorbell and wait", "doorbell_latency.py", ["--rounds", "20"], ["--rounds", "5"]),
    ("agent doorbell", "agent_doorbell.py", ["--rounds", "20"], ["--rounds", "5"]),
    ("crew death", "crew_death.py", ["--runs", "20"], ["--runs", "5"]),
    ("cockpit", "cockpit.py", ["--events", "500"], ["--quick"]),
    ("ledger claims", "ledger_claims.py", ["--items", "400", "--sizes", "10000,100000"],
     ["--quick"]),
    ("ledger wake-ups", "ledger_wakeups.py", ["--rounds", "20"], ["--quick"]),
)


def _rows_from_markdown(text: str) -> list[dict]:
    """A script that prints a what|measured|budget|verdict table but keeps its own JSON."""
    rows = []
    for line in text.splitlines():
        cells = [c.strip() for c in line.strip().strip("|").split("|")]
        if len(cells) == 4 and cells[0] not in ("what", "---") and not cells[0].startswith("-"):
            rows.append(dict(zip(("what", "measured", "budget", "verdict"), cells)))
    return rows


def run_one(name: str, script: str, extra: list[str]) -> dict:
    with tempfile.NamedTemporaryFile(suffix=".json", delete=False) as tmp:
        out = Path(tmp.name)
    start = time.monotonic()
    proc = subprocess.run([sys.executable, str(HERE / script), *extra, "--json", str(out)],
                          capture_output=True, text=True, cwd=REPO)
    seconds = time.monotonic() - start
    try:
        data = json.loads(out.read_text()) if out.stat().st_size else {}
    except (OSError, ValueError):
        data = {}
    finally:
        out.unlink(missing_ok=True)
    if proc.returncode != 0:
        tail = (proc.stderr or proc.stdout).strip().splitlines()[-5:]
        rows = [{"what": name, "measured": "did not run: " + " / ".join(tail),
                 "budget": "—", "verdict": "FAILED"}]
    else:
        rows = data.get("rows") or _rows_from_markdown(proc.stdout)
    return {"name": name, "script": script, "seconds": round(seconds, 1), "rows": rows,
            "results": data, "stdout": proc.stdout}


def machine() -> str:
    return (f"{platform.machine()}, {os.cpu_count()} cores, {platform.system()} "
            f"{platform.release()}, Python {platform.python_version()}, load average at start "
            f"{os.getloadavg()[0]:.2f}")


def main() -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--quick", action="store_true", help="short runs (minutes, not tens)")
    parser.add_argument("--only", choices=[s[0] for s in SUITE], action="append",
                        help="run only this part (repeatable)")
    parser.add_argument("--out", type=Path, default=HERE / "results.json")
    args = parser.parse_args()

    where = machine()
    sections = []
    for name, script, full, quick in SUITE:
        if args.only and name not in args.only:
            continue
        print(f"-- {name} ({script}) ...", file=sys.stderr, flush=True)
        sections.append(run_one(name, script, quick if args.quick else full))
    body = table([row for section in sections for row in section["rows"]])
    stamp = time.strftime("%Y-%m-%d")
    text = (f"Measured on {stamp} by `python -m bench{' --quick' if args.quick else ''}` on "
            f"{where}.\n\n{body}")
    print(text)
    write_json(args.out, {"date": stamp, "machine": where, "quick": args.quick,
                          "sections": sections})
    return 1 if any(r["verdict"] == "FAILED" for s in sections for r in s["rows"]) else 0


if __name__ == "__main__":
    sys.exit(main())
