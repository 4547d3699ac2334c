"""pi crews: started with captain's own pi extension (``pi -e FILE``), which delivers mail into
the agent's context.

The extension (``pi_extension.ts``, shipped with this package) runs ``captain hook pi EVENT``
with the event as JSON on stdin: ``before_agent_start`` on every prompt (the hook's one
line of output, the unread mail, joins the prompt as a custom message) and ``agent_end``
(an ``idle`` signal). Each crew gets its own copy in the home, the argv that runs captain
written into it as a JSON literal: pi loads the file as code, so nothing but JSON (ASCII,
escaped by ``json.dumps``) ever goes into it.

The hook handlers themselves are ``captain_tui.agents.hooks``.
"""

from __future__ import annotations

import json
import shlex
from importlib import resources

from captain_tui.agents.kinds import WAKE_LINE, captain_argv, captain_command, require

MARKER = "__CAPTAIN_ARGV__"
EXTENSION_NAME = "captain-pi.ts"  # pi (jiti) picks the loader by the extension


def template() -> str:
    return resources.files(__package__).joinpath("pi_extension.ts").read_text("utf-8")


def extension_text(captain: list[str]) -> str:
    """The extension's source with ``captain`` (the argv that runs captain) written in."""
    source = template()
    if source.count(MARKER) != 1:
        raise RuntimeError("captain's pi extension template is damaged (marker not found once)")
    literal = json.dumps(captain_argv(captain), ensure_ascii=True)
    return source.replace(MARKER, literal)


def command(home, key: str) -> str:
    """The shell command a pi crew's window runs: ``pi -e FILE <wake line>``, the extension
    kept in the home under the crew's key."""
    program = require("pi", "pi")
    path = home.store.dir("agents", key) / EXTENSION_NAME
    home.store.publish(path, extension_text(captain_command()).encode("utf-8"))
    # The wake line is also the first prompt: only a prompt starts a turn, and its
    # before_agent_start hook hands over the task.
    return shlex.join([program, "-e", str(path), WAKE_LINE])
