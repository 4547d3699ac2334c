"""``captain status`` on plain records (#28): it says, byte for byte, what the models say,
and steps aside to them for any record it cannot vouch for, which is reported as before.

Every crew state status shows is in one home: assigned with unread mail, asked, a held
doorbell, blocked at a dialog, held (a notice), died, done, dismissed, with spend measured,
a pane, a budget, a crew in a git repository (its change), the landing queue (a land
waiting, one interrupted) and a minted workspace. The same home is read twice: as written
(plain records), then with one crew's snapshot holding a datetime the plain reader does not
vouch for (valid, not as captain writes it), which sends the whole status to the models.
"""

from __future__ import annotations

import json
import os
import subprocess
import sys
import textwrap
from datetime import UTC, datetime
from pathlib import Path

import pytest
from support.cli import InProcess
from support.repos import repository

from state.crew import crewlog, death_notice, guards, spend
from state.home import Home
from state.ids import new_id
from state.records import Launched, Notification, PaneLocator, RingStamp
from state.store import encode
from state.work import tokens

REPO = Path(__file__).resolve().parents[2]
VIEWS = (["status"], ["status", "--json"], ["status", "--all"], ["status", "--all", "--json"])


def _recruit(cli, name: str, *extra: str) -> dict:
    r = cli("crew", name, "--task", f"T {name}", "--allow", "edit", "--no-launch", "--json", *extra)
    assert r.code == 0, r.err
    return r.json


def _note(home: Home, crew: dict, status: str, delivery_id: str | None = None) -> None:
    key = crew["crew"].lower()
    note = Notification(
        delivery_id=delivery_id or new_id("dlv"),
        status=status,  # type: ignore[arg-type]
        crew=crew["crew"],
        assignment_id=crew["assignment_id"],
        summary=f"{status} notice",
        queued_at=None,
        created_at=datetime(2026, 12, 1, 12, 0, tzinfo=UTC),
    )
    home.store.create_once(home.notifications_dir(key) / f"{note.delivery_id}.json", encode(note))


def _stamp(home: Home, crew: dict, **fields) -> None:
    stamp = RingStamp(crew=crew["crew"], incarnation_id=crew["incarnation_id"], **fields)
    home.store.publish(home.ring_stamp_path(crew["crew"].lower()), encode(stamp))


def _every_state(cli, tmp_path: Path) -> dict[str, dict]:
    """A home holding each state status shows (the module's docstring), made through the
    CLI in this process (``InProcess``: a Python per call would cost seconds)."""
    cli = InProcess(cli)
    crews = {name: _recruit(cli, name, "--owns", f"src/{name}") for name in ("Jack", "Bo")}
    for name in ("Ann", "Cy", "Dee", "Eve", "Max"):
        crews[name] = _recruit(cli, name, "--owns", f"src/{name}")
    crews["Gus"] = _recruit(cli, "Gus", "--owns", "src/gus", "--budget-usd", "12.5")
    repo = repository(tmp_path / "repo", {"README": "hello\n", "src/a.py": "a = 1\n"})
    crews["Rae"] = _recruit(cli, "Rae", "--owns", "src", "--cwd", str(repo), "--no-worktree")
    (repo / "src" / "a.py").write_text("a = 2\n")  # Rae's change: one file, uncommitted
    told = cli("tell", "Jack", "more", "--assignment", crews["Jack"]["assignment_id"])
    assert told.code == 0, told.err
    asked = cli("ask", "Bo", "which way?", env=crews["Bo"]["env"])
    assert asked.code == 0, asked.err
    for step in (("inbox", "Cy"), ("done", "Cy", "--report", "R")):
        finished = cli(*step, env=crews["Cy"]["env"])
        assert finished.code == 0, finished.err
    dismissed = cli("dismiss", "Max")
    assert dismissed.code == 0, dismissed.err

    home = Home(cli.home)
    held_since = datetime(2026, 12, 1, 11, 30, 15, 250000, tzinfo=UTC)
    _stamp(home, crews["Ann"], gate="human_draft", held_since=held_since, head="msg_x")
    _stamp(home, crews["Dee"], dialog="trust_folder", composer_seen=False)
    _note(home, crews["Eve"], "held")
    _note(home, crews["Jack"], "idle")
    _note(home, crews["Gus"], "error", death_notice.delivery_id(crews["Gus"]["incarnation_id"]))
    # a pane on record (status shows its ID) and spend measured from a transcript
    key = "jack"
    with home.store.lock(guards.lock_name(key)):
        snapshot, _ = crewlog.load(home, key, repair=True)
        assert snapshot is not None
        pane = PaneLocator(socket="s", session="captain", window_id="@1", pane_id="%7")
        crewlog.append(
            home,
            key,
            snapshot,
            Launched(seq=snapshot.seq + 1, at=datetime.now(UTC), actor="captain", pane=pane),
        )
    transcript = tmp_path / "t.jsonl"
    usage = {"input_tokens": 1200, "output_tokens": 30}
    line = {
        "type": "assistant",
        "message": {"id": "m1", "model": "claude-sonnet-4-5", "usage": usage},
    }
    transcript.write_text(json.dumps(line) + "\n")
    spend.measure(home, key, crews["Jack"]["assignment_id"], "claude", str(transcript))
    # the landing queue: a land waiting (this process's entry), one interrupted
    queued = home.store.dir("landing", "0123456789abcdef", "queue")
    entry = {
        "project": str(repo),
        "crew": "Rae",
        "assignment_id": crews["Rae"]["assignment_id"],
        "base_branch": "main",
        "queued_at": "2026-12-01T12:00:00Z",
        "pid": os.getpid(),
        "started": _start_time(),
        "state": "queued",
    }
    (queued / "lnd_1.json").write_text(json.dumps(entry))
    (queued.parent / "journal.json").write_text(
        json.dumps({**entry, "queued_at": "2026-12-01T11:00:00Z"})
    )
    tokens.workspace_id(home)  # minted (a writable home)
    return crews


def _start_time() -> str:
    from captain_tui.repo.landing_queue import start_time

    started = start_time(os.getpid())
    assert started is not None
    return started


def _views(cli) -> dict[str, tuple[int, str, str]]:
    out = {}
    for argv in VIEWS:
        r = cli(*argv)
        out[" ".join(argv)] = (r.code, r.out, r.err)
    return out


def test_status_on_plain_records_says_what_the_models_say(cli, tmp_path: Path):
    from state.crew_side import door
    from state.crew_side import status as plain_status
    from state.crew_side.plain import Unsure

    _every_state(cli, tmp_path)
    cli = InProcess(cli)
    home = Home(cli.home, read_only=True)
    # the plain path answers for this home: no record in it is one it declines
    found = plain_status.rows(home, include_dismissed=True)
    assert plain_status.workspace_id(home) == door.workspace_id(home) is not None
    shown = {f.row["name"]: f.row["state"] for f in found}
    assert shown == {
        "Ann": "assigned",
        "Bo": "asked",
        "Cy": "done",
        "Dee": "blocked",
        "Eve": "held",
        "Gus": "died",
        "Jack": "assigned",
        "Max": "dismissed",
        "Rae": "assigned",
    }
    plain = _views(cli)
    rows = json.loads(plain["status --all --json"][1])
    by_name = {r["name"]: r for r in rows["crew"]}
    assert by_name["Jack"]["unread"] == 2 and by_name["Jack"]["pane"]["pane_id"] == "%7"
    assert by_name["Jack"]["spend"]["input_tokens"] == 1200
    assert by_name["Ann"]["doorbell"]["gate"] == "human_draft"
    assert by_name["Ann"]["doorbell"]["held_since"] == "2026-12-01T11:30:15.250000+00:00"
    assert by_name["Gus"]["budget_usd"] == 12.5
    assert by_name["Rae"]["change"]["files_changed"] == 1, by_name["Rae"]["change"]
    assert [q["state"] for q in rows["landing"]] == ["interrupted", "queued"]
    assert rows["workspace_id"].startswith("ws_")

    # the same home through the models: Bo's snapshot holds a datetime written otherwise
    state = cli.home / "crew" / "bo" / "state.json"
    written = state.read_bytes()
    record = json.loads(written)
    record["recruited_at"] = record["recruited_at"].replace("Z", "+00:00")
    state.write_text(json.dumps(record, separators=(",", ":")) + "\n")
    with pytest.raises(Unsure):
        plain_status.rows(home, include_dismissed=True)
    assert _views(cli) == plain  # every view, byte for byte, exit codes and stderr too
    state.write_bytes(written)
    assert _views(cli) == plain  # and back on plain records


def _loaded_after_status(cli) -> dict:
    """``python -m captain_tui status --json`` in a fresh interpreter: its output, stderr
    and whether it loaded pydantic."""
    code = """
        import contextlib, io, json, runpy, sys
        sys.argv = ["captain", "status", "--json"]
        out, err = io.StringIO(), io.StringIO()
        try:
            with contextlib.redirect_stdout(out), contextlib.redirect_stderr(err):
                runpy.run_module("captain_tui", run_name="__main__")
        except SystemExit as exc:
            code = exc.code
        print(json.dumps({"code": code, "out": out.getvalue(), "err": err.getvalue(),
                          "pydantic": "pydantic" in sys.modules}))
    """
    proc = subprocess.run(
        [sys.executable, "-c", textwrap.dedent(code)],
        cwd=cli.cwd,
        env={**cli.env(), "PYTHONPATH": str(REPO)},
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert proc.returncode == 0 and "Traceback" not in proc.stderr, proc.stderr
    return json.loads(proc.stdout.strip().splitlines()[-1])


def test_status_steps_aside_to_the_models_for_a_bad_record_and_reports_it_as_before(cli):
    for name in ("Jack", "Bo"):
        _recruit(cli, name, "--owns", f"src/{name}")
    first = _loaded_after_status(cli)
    assert first["code"] == 0 and first["pydantic"] is False, first
    assert first["err"] == ""

    # a doorbell stamp that is not a record: the models judge it, and status (read-only)
    # leaves it where it is and says so, once, with the models' reason
    bad = cli.home / "doorbell" / "bo.json"
    bad.parent.mkdir(exist_ok=True)
    bad.write_text('{"crew": "Bo", "incarnation_id": 7}\n')
    second = _loaded_after_status(cli)
    assert second["code"] == 0 and second["pydantic"] is True, second
    assert json.loads(second["out"]) == json.loads(first["out"])  # the stamp shows nothing
    warned = [line for line in second["err"].splitlines() if "doorbell/bo.json" in line]
    assert len(warned) == 1, second["err"]
    assert "does not validate as RingStamp" in warned[0], warned
    assert "left in place" in warned[0], warned
    assert bad.exists()  # status only reads
