"""What a store could not use is reported to that store's owner, never to the process.

Before, ``Store._reported``, ``_warned`` and ``listener`` were class attributes: every home
and thread of a process shared one list, the CLI switched the listener for everyone, and a
corrupt ledger row was said once per process whichever home read it. Now each ``Store``
(so each ``Home``) owns a ``state.store.Reports``.
"""

from __future__ import annotations

import threading
from pathlib import Path

from state.home import Home
from state.records import Message
from state.store import Reports


def _plant_bad_mail(home: Home) -> str:
    folder = home.store.dir("mail", "ada")
    (folder / "msg_bad.json").write_bytes(b"not a record")
    return "mail/ada/msg_bad.json"


def test_a_quarantine_is_reported_to_the_home_that_made_it_only(tmp_path: Path) -> None:
    a, b = Home(tmp_path / "a"), Home(tmp_path / "b")
    rel = _plant_bad_mail(a)
    assert a.store.records(a.store.dir("mail", "ada"), Message) == []
    assert [p for p, _ in a.store.reports.reported()] == [rel]
    assert a.store.reports.reported() == [], "reported() drains"
    assert b.store.reports.reported() == [] and b.store.reports.warnings() == []


def test_a_listener_hears_its_own_home_and_no_other_thread_s(tmp_path: Path) -> None:
    """The CLI's listener (a printer) is its command's home's: a home another thread uses
    at the same time keeps its own reports, and the listener never hears them."""
    heard: list[tuple[str, bool]] = []
    a = Home(
        tmp_path / "a", reports=Reports(lambda path, reason, moved: heard.append((path, moved)))
    )
    b = Home(tmp_path / "b")
    rel_b = _plant_bad_mail(b)
    worker = threading.Thread(target=b.store.records, args=(b.store.dir("mail", "ada"), Message))
    worker.start()
    worker.join(timeout=30)
    assert not worker.is_alive()
    assert heard == [] and [p for p, _ in b.store.reports.reported()] == [rel_b]
    rel_a = _plant_bad_mail(a)
    a.store.records(a.store.dir("mail", "ada"), Message)
    assert heard == [(rel_a, True)]
    assert a.store.reports.reported() == [], "a listener's reports are not also kept"


def test_said_once_is_once_per_reports_and_bounded() -> None:
    first, second = Reports(), Reports()
    for _ in range(3):
        first.once("wrk_1", "ledger row wrk_1", "was skipped")
    second.once("wrk_1", "ledger row wrk_1", "was skipped")
    assert first.warnings() == [("ledger row wrk_1", "was skipped")]
    assert second.warnings() == [("ledger row wrk_1", "was skipped")]
    small = Reports()
    small.SAID_MAX = 3
    for n in range(5):
        small.once(f"wrk_{n}", f"row {n}", "skipped")
    small.once("wrk_0", "row 0", "skipped")  # forgotten past the bound: said again
    assert [p for p, _ in small.warnings()] == [f"row {n}" for n in range(5)] + ["row 0"]
