"""A permission hook held for the captain's decision, as an agent runs it: ``run_hook``
in-process on a thread with real files (``captain_tui.agents.hooks``)."""

from __future__ import annotations

import io
import json
import threading
import time

from captain_tui.agents.hooks import run_hook

DEADLINE = 10.0


class Held:
    """One PermissionRequest hook (pi: captain's extension's ``tool_call``) running on a
    thread, as the agent runs it."""

    def __init__(self, env: dict, agent: str = "claude", **fields) -> None:
        event = "tool_call" if agent == "pi" else "PermissionRequest"
        data = {"hook_event_name": event, "session_id": "s-1", "cwd": "/tmp"}
        data.update(fields)
        self.out = io.StringIO()
        self.code: int | None = None
        self.took: float | None = None

        def run() -> None:
            start = time.monotonic()
            self.code = run_hook(agent, event, None, io.StringIO(json.dumps(data)), self.out, env)
            self.took = time.monotonic() - start

        self.thread = threading.Thread(target=run, daemon=True)
        self.thread.start()

    def done(self) -> bool:
        return not self.thread.is_alive()

    def answer(self, timeout: float = DEADLINE) -> dict | None:
        self.thread.join(timeout)
        assert not self.thread.is_alive(), "the hook never returned"
        assert self.code == 0
        text = self.out.getvalue()
        return json.loads(text) if text else None
