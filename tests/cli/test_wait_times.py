"""``wait --json`` says when: ``event_at`` is when the notification's event happened,
``queued_at`` when the mail it concerns was queued; and README documents every field the
envelope prints."""

from __future__ import annotations

import json
import re
from datetime import datetime, timezone

from conftest import REPO

from captain_tui.cli.main import main
from state.crew import mailbox, protocol
from state.crew.guards import Context
from state.home import Home


def _wait(capsys, home: Home, name: str, *ack: str) -> dict:
    code = main(["wait", name, "--timeout", "0", "--json", "--home", str(home.root), *ack])
    out = capsys.readouterr().out
    assert code == 0, out
    return json.loads(out)


def _at(text: str) -> datetime:
    assert text.endswith("Z"), text
    return datetime.fromisoformat(text.removesuffix("Z") + "+00:00")


def test_wait_says_when_the_event_happened_and_when_its_mail_was_queued(capsys, tmp_path):
    home = Home(tmp_path / "home")
    r = protocol.recruit(home, "Ada", "the task", cwd=str(tmp_path), agent="shell")
    ctx = Context.from_env(r.env)
    task = mailbox.unread(home, "ada", protocol.crewlog.load(home, "ada")[0])[0]
    protocol.inbox(home, "Ada", deliver=lambda batch: None, ctx=ctx)  # the crew reads it
    before = datetime.now(timezone.utc)
    protocol.ask(home, "Ada", "Which one?", ctx=ctx)
    after = datetime.now(timezone.utc)
    asked = _wait(capsys, home, "Ada")
    assert asked["status"] == "asked"
    assert before <= _at(asked["event_at"]) <= after  # the question, not the task's time
    assert _at(asked["queued_at"]) == task.queued_at  # the mail it had when it asked
    assert (
        main(
            [
                "wait",
                "Ada",
                "--ack",
                asked["delivery_id"],
                "--timeout",
                "0",
                "--home",
                str(home.root),
            ]
        )
        == 0
    )
    capsys.readouterr()

    told = protocol.tell(home, "Ada", "also this", assignment_id=r.assignment_id)
    before = datetime.now(timezone.utc)
    protocol.dismiss(home, "Ada")
    bounced = _wait(capsys, home, "Ada")
    assert bounced["status"] == "bounced" and bounced["message_id"] == told.message_id
    assert _at(bounced["queued_at"]) == told.queued_at  # the bounced mail's own time
    assert _at(bounced["event_at"]) >= before > told.queued_at  # the dismissal's

    # nothing more: a timeout says no time
    timeout = _wait(capsys, home, "Ada", "--ack", bounced["delivery_id"])
    assert timeout["status"] == "timeout"
    assert timeout["queued_at"] is None and timeout["event_at"] is None


def test_readme_documents_every_field_wait_prints(capsys, tmp_path):
    home = Home(tmp_path / "home")
    r = protocol.recruit(home, "Ada", "the task", cwd=str(tmp_path), agent="shell")
    protocol.ask(home, "Ada", "Which one?", ctx=Context.from_env(r.env))
    fields = set(_wait(capsys, home, "Ada"))
    readme = (REPO / "README.md").read_text()
    section = re.search(r"`wait --json` prints `\{(.*?)\}`", readme, re.S)
    assert section, "README has no `wait --json` prints `{...}` line"
    documented = set(re.findall(r'"(\w+)"', section.group(1)))
    assert fields <= documented | {"question_id", "message_id"}, fields - documented
    for field in ("queued_at", "event_at"):  # each said in words, not only listed
        assert re.search(rf"`{field}`", readme), field
