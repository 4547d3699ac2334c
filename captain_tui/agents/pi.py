"""pi crews: started with captain's own pi extension (``pi -e FILE``), which delivers mail into
the agent's context.

The extension (``pi_extension.ts``, shipped with this package) runs ``captain hook pi EVENT``
with the event as JSON on stdin: ``before_agent_start`` on every prompt (the hook's one
line of output, the unread mail, joins the prompt as a custom message), ``agent_end``
(an ``idle`` signal) and ``tool_call`` for the tools ``[crew] pi_approval_tools`` names
(an approval request held for the captain; docs/approvals.md). Each crew gets its own
copy in the home, the argv that runs captain, the gated tools and their hook's time
written into it as JSON literals: pi loads the file as code, so nothing but JSON (ASCII,
escaped by ``json.dumps``) ever goes into it.

The hook handlers themselves are ``captain_tui.agents.hooks``.
"""

from __future__ import annotations

import json
import shlex
from collections.abc import Iterable
from importlib import resources

from captain_tui.agents.codex import HOOK_TIMEOUT, hook_timeout
from captain_tui.agents.kinds import WAKE_LINE, captain_argv, captain_command, require

MARKER = "__CAPTAIN_ARGV__"
GATED_MARKER = "__CAPTAIN_GATED__"
GATE_TIMEOUT_MARKER = "__CAPTAIN_GATE_TIMEOUT_MS__"
EXTENSION_NAME = "captain-pi.ts"  # pi (jiti) picks the loader by the extension


def template() -> str:
    return resources.files(__package__).joinpath("pi_extension.ts").read_text("utf-8")


def extension_text(
    captain: list[str], gated: Iterable[str] = (), gate_timeout: int = HOOK_TIMEOUT
) -> str:
    """The extension's source with ``captain`` (the argv that runs captain), the tools whose
    calls it holds for the captain (``gated``: ``[crew] pi_approval_tools``) and how long
    such a call's hook may run (``gate_timeout`` seconds) written in, each as a JSON
    literal."""
    source = template()
    values = {
        MARKER: captain_argv(captain),
        GATED_MARKER: sorted({str(t).lower() for t in gated}),
        GATE_TIMEOUT_MARKER: int(gate_timeout) * 1000,
    }
    for marker, value in values.items():
        if source.count(marker) != 1:
            raise RuntimeError(
                f"captain's pi extension template is damaged ({marker} not found once)"
            )
        source = source.replace(marker, json.dumps(value, ensure_ascii=True))
    return source


def command(home, key: str) -> str:
    """The shell command a pi crew's window runs: ``pi -e FILE <wake line>``, the extension
    kept in the home under the crew's key, with the home's ``[crew] pi_approval_tools``
    (read now: a crew started before a change keeps the list it started with)."""
    program = require("pi", "pi")
    path = home.store.dir("agents", key) / EXTENSION_NAME
    text = extension_text(
        captain_command(), home.setting("crew", "pi_approval_tools"), hook_timeout(home)
    )
    home.store.publish(path, text.encode("utf-8"))
    # The wake line is also the first prompt: only a prompt starts a turn, and its
    # before_agent_start hook hands over the task.
    return shlex.join([program, "-e", str(path), WAKE_LINE])
