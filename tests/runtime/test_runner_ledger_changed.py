"""A runner (``captain wait``/``watch``, the cockpit's doorbell worker) keeps the ledger it
started with when ``[ledger] url`` is edited under it, and says so once per change
(``ledger_changed``, through its home's reports: the CLI prints them on stderr).

Before, every ledger round chose the ledger again: a file home pointed at a database
failed its rounds (``ledger_not_imported``), and a database pointed at another ran them
there. Both backends; no tmux (no crew has a pane), polled with a deadline.
"""

from __future__ import annotations

import os
import time
from pathlib import Path

from captain_tui.runtime import runner as runner_module
from captain_tui.runtime.runner import Runner
from state.home import CONFIG_SETTLE_SECONDS, Home
from state.store import Reports
from state.work import ledger

DEADLINE = 20.0
ELSEWHERE = "postgresql://nobody@127.0.0.1:1/elsewhere"  # never reached


def test_a_runner_keeps_its_ledger_and_says_the_change_once(tmp_path: Path, ledgers, monkeypatch):
    made = ledgers.home(tmp_path / "home")
    heard: list[str] = []
    home = Home(made.root, reports=Reports(lambda path, reason, moved: heard.append(reason)))
    queued = ledger.accept(home, source="chat", input={"text": "x"}, requester="test")
    monkeypatch.setattr(runner_module, "LEDGER_EVERY", 0.05)  # a round at every tick
    runner = Runner(home)
    try:
        runner.tick()
        other = ledgers.fresh_url() or ELSEWHERE
        config = home.root / "config.toml"
        config.write_text(f'[ledger]\nurl = "{other}"\n')
        past = time.time() - 10 * CONFIG_SETTLE_SECONDS
        os.utime(config, (past, past))  # still: believed at the next look
        end = time.monotonic() + DEADLINE
        while not [r for r in heard if "ledger_changed" in r]:
            assert time.monotonic() < end, f"the runner never said the change: {heard}"
            runner.tick()
            time.sleep(0.06)
        for _ in range(5):  # more rounds: on the same ledger, and nothing said again
            time.sleep(0.06)
            runner.tick()
        said = [r for r in heard if "ledger_changed" in r]
        assert len(said) == 1 and "restart" in said[0], heard
        assert [r for r in heard if "ledger_not_imported" in r] == [], heard
        assert ledger.get(home, queued.work_id).state == "queued"  # the ledger it started on
        assert ledger.open_ids(home) == [queued.work_id]
    finally:
        runner.close()
