"""Codex crews: started with captain's hooks, which tell the captain about approvals and
turn ends.

Codex 0.169 reads Claude-Code-style hooks from every config layer, the ``-c`` overrides
("session flags") included, and runs only hooks it trusts: a user hook is trusted when
``hooks.state."<key>".trusted_hash`` equals the hash of its definition. Both can be given
with ``-c``, so captain registers its hooks for this one process and never writes the
person's ``~/.codex`` (no "Hooks need review" screen, no ``--dangerously-bypass-hook-trust``
warning). From Codex's source (``codex-rs/hooks/src/engine/discovery.rs``, ``config_rules.rs``,
``codex-rs/config`` ``version_for_toml``):

- the key is ``"/<session-flags>/config.toml:<event_label>:<group>:<handler>"``;
- the hash is ``"sha256:" + sha256(canonical JSON of {"event_name": label, "matcher"?,
  "hooks": [normalized handler]})``, keys sorted, compact, the handler's ``timeout``
  filled in (default 600) and absent options left out.

``PermissionRequest`` becomes one ``awaiting_approval`` signal, ``Stop`` the turn's
``idle``, and ``PreToolUse`` is the budget's gate (docs/budgets.md: it refuses a tool call
once the assignment's measured spend reaches its budget); ``notify`` is no longer set (it
would also fire for Codex's internal title-generation turn). The mail body is still typed
into the composer by the doorbell. The hook handlers themselves are ``captain_tui.agents.hooks``.
"""

from __future__ import annotations

import hashlib
import json
import shlex

from captain_tui.agents.kinds import captain_argv, captain_command, require

# Codex's event name -> the label its hook keys and hashes use.
EVENTS = {
    "PermissionRequest": "permission_request",
    "Stop": "stop",
    "PreToolUse": "pre_tool_use",  # the budget's gate (docs/budgets.md)
}
SESSION_FLAGS_SOURCE = "/<session-flags>/config.toml"
HOOK_TIMEOUT = 30  # seconds; Codex waits for a hook, and captain's take milliseconds
# Every run: no app-server daemon left behind (nor its 404 MB copy in CODEX_HOME), and
# hooks on even where the person's config switched them off.
BASE_ARGS = ("--no-daemon", "--enable", "hooks")


def _toml_string(text: str) -> str:
    """A TOML basic string that is also a JSON string: nothing in it can close it."""
    out = ['"']
    for ch in text:
        if ch in '"\\':
            out.append("\\" + ch)
        elif ord(ch) < 0x20 or ord(ch) == 0x7F:
            out.append(f"\\u{ord(ch):04x}")
        else:
            out.append(ch)
    out.append('"')
    return "".join(out)


def notify_args(captain: list[str]) -> list[str]:
    """``codex`` arguments that make its ``notify`` program ``captain hook codex notify``
    (no longer used by ``command``: the Stop hook hears turn ends)."""
    argv = [*captain_argv(captain), "hook", "codex", "notify"]
    return ["-c", "notify=[" + ",".join(_toml_string(a) for a in argv) + "]"]


def hook_command(captain: list[str], event: str) -> str:
    """The shell command Codex runs for ``event`` (through a shell: every argument quoted)."""
    return shlex.join([*captain_argv(captain), "hook", "codex", event])


def trusted_hash(label: str, command: str, timeout: int = HOOK_TIMEOUT) -> str:
    """The hash Codex 0.169 computes for a one-handler, matcher-less command hook."""
    identity = {
        "event_name": label,
        "hooks": [
            {"type": "command", "command": command, "timeout": max(1, timeout), "async": False}
        ],
    }
    canonical = json.dumps(identity, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    return "sha256:" + hashlib.sha256(canonical.encode()).hexdigest()


def hook_key(label: str, source: str = SESSION_FLAGS_SOURCE) -> str:
    return f"{source}:{label}:0:0"


def hook_args(captain: list[str], permission_timeout: int = HOOK_TIMEOUT) -> list[str]:
    """``-c`` overrides registering (and trusting) ``captain hook codex EVENT``.
    ``permission_timeout``: how long Codex lets PermissionRequest run, which holds the
    prompt for the captain's decision (``[crew] approval_timeout`` plus a grace)."""
    args: list[str] = []
    state = []
    for event, label in EVENTS.items():
        cmd = hook_command(captain, event)
        timeout = permission_timeout if event == "PermissionRequest" else HOOK_TIMEOUT
        args += [
            "-c",
            f'hooks.{event}=[{{hooks=[{{type="command",command='
            f"{_toml_string(cmd)},timeout={timeout}}}]}}]",
        ]
        state.append(
            f"{_toml_string(hook_key(label))}="
            f"{{trusted_hash={_toml_string(trusted_hash(label, cmd, timeout))}}}"
        )
    # One inline table: ``-c`` splits its key on every dot, and the keys hold "config.toml".
    args += ["-c", "hooks.state={" + ",".join(state) + "}"]
    return args


def command(home=None) -> str:
    """The shell command a Codex crew's window runs."""
    return shlex.join(
        [require("codex", "codex"), *BASE_ARGS, *hook_args(captain_command(), hook_timeout(home))]
    )


def hook_timeout(home) -> int:
    """Seconds an agent gives its PermissionRequest hook: the home's approval time plus a
    grace, so the hook's own deadline (which leaves the native prompt) always comes first."""
    from state.config import APPROVAL_GRACE, DEFAULT_APPROVAL_TIMEOUT

    held = home.setting("crew", "approval_timeout") if home is not None else None
    held = DEFAULT_APPROVAL_TIMEOUT if held is None else held
    return max(HOOK_TIMEOUT, int(held) + 1 + APPROVAL_GRACE)
