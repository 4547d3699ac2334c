"""Every setting ``config.toml`` may hold, its type and its range: one table, checked whole
when the file is read (``Home.config``), so no command meets a value it cannot use.

A value of the wrong type or out of range (``inf``, ``nan``, ``1e400``, ``10**30``, a
negative, ``true`` where a number is meant: TOML's booleans are not numbers here) is
``invalid_config``, naming the key, what it got and what it takes. A key captain does not
know (a typo such as ``slot``) is said as a warning and otherwise ignored: the file may be
shared with a newer captain. ``[ledger] url`` is only checked for being text here; what a
URL must be is ``state/work/location.py``'s (``invalid_ledger_url``).

Readers take validated values with ``value(section, key)``: absent means the default here.
"""

from __future__ import annotations

import math
import re
from typing import Any, Literal, NamedTuple

from state.errors import CaptainError
from state.vocab import BUDGET_MAX_USD, BUDGET_MIN_USD

DEFAULT_WAIT_TIMEOUT = 86400.0
# how long an agent's permission hook holds its prompt for the captain's decision; then the
# agent's own prompt appears (state/crew/approvals.py). The agents are told to give the hook
# this much plus APPROVAL_GRACE before they kill it.
DEFAULT_APPROVAL_TIMEOUT = 30.0
APPROVAL_GRACE = 15
DEFAULT_SLOTS = 8
DEFAULT_LEASE_SECONDS = 60.0
DEFAULT_RETENTION_DAYS = 7.0
DEFAULT_TEST_TIMEOUT = 600.0  # [review] test_command's bound
DEFAULT_LAND_WAIT = 600.0  # how long a land waits its turn in the repository's queue
MAX_ATTEMPTS = 20  # the ledger's cap on an item's attempts (state/work/ledger.py)
ENDPOINT_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.-]{0,63}")
# a tool's name as an agent spells it (pi's bash, write, edit; an extension's own tools)
TOOL_NAME_RE = re.compile(r"[A-Za-z0-9][A-Za-z0-9_.:-]{0,63}")
MAX_TOOL_NAMES = 100


Kind = Literal["integer", "number", "boolean", "text", "path", "choice", "texts", "tools", "url"]


class Setting(NamedTuple):  # not a dataclass: importing dataclasses costs every command ~9 ms
    kind: Kind
    default: object = None
    low: float | None = None
    high: float | None = None
    unit: str = ""
    choices: tuple[str, ...] = ()

    def takes(self) -> str:
        """What the setting takes, for a person."""
        if self.kind in ("integer", "number"):
            what = "a whole number" if self.kind == "integer" else "a number"
            unit = f" {self.unit}" if self.unit else ""
            return f"{what} from {_num(self.low)} to {_num(self.high)}{unit}"
        return {
            "boolean": "true or false",
            "text": "a string in quotes",
            "path": 'an absolute path in quotes (or one starting "~/")',
            "texts": 'a list of strings, e.g. ["push"]',
            "tools": (
                f"a list of at most {MAX_TOOL_NAMES} tool names (letters, digits, _ . : -), "
                'e.g. ["bash", "write", "edit"]'
            ),
            "url": "a postgresql:// URL",
            "choice": " or ".join(f'"{c}"' for c in self.choices),
        }[self.kind]

    def fits(self, value: object) -> bool:
        if self.kind == "url":
            return True  # its own code, from the one place that reads it
        if self.kind == "boolean":
            return isinstance(value, bool)
        if self.kind == "text":
            return isinstance(value, str)
        if self.kind == "path":
            return (
                isinstance(value, str)
                and value.startswith(("/", "~/"))
                and len(value.encode("utf-8", "surrogatepass")) <= 1024
                and all(c.isprintable() for c in value)
            )
        if self.kind == "choice":
            return value in self.choices and isinstance(value, str)
        if self.kind == "texts":
            return isinstance(value, list) and all(isinstance(v, str) for v in value)
        if self.kind == "tools":
            return (
                isinstance(value, list)
                and len(value) <= MAX_TOOL_NAMES
                and all(isinstance(v, str) and TOOL_NAME_RE.fullmatch(v) for v in value)
            )
        if isinstance(value, bool):  # a bool is an int to Python, never a number here
            return False
        if self.kind == "integer":
            ok = isinstance(value, int)
        else:
            ok = isinstance(value, (int, float)) and math.isfinite(value)
        if not ok or not isinstance(value, (int, float)):
            return False
        assert self.low is not None and self.high is not None  # every number has its bounds
        return self.low <= value <= self.high


def _num(x: float | None) -> str:
    return f"{x:,.0f}".replace(",", "_") if x is not None and x == int(x) else str(x)


# [table] key -> what it takes. The one list of settings: docs/store.md "Settings".
SETTINGS: dict[str, dict[str, Setting]] = {
    "crew": {
        "wait_timeout": Setting("number", DEFAULT_WAIT_TIMEOUT, 0, 315_360_000, "seconds"),
        "approval_timeout": Setting("number", DEFAULT_APPROVAL_TIMEOUT, 0, 3600, "seconds"),
        # the tools a pi crew's calls to are held for the captain (pi asks about nothing
        # itself; docs/approvals.md): read when the crew's pi starts; none by default
        "pi_approval_tools": Setting("tools", ()),
        # each assignment's budget unless --budget-usd gives one (docs/budgets.md); none
        "budget_usd": Setting("number", None, BUDGET_MIN_USD, BUDGET_MAX_USD, "US dollars"),
    },
    "ledger": {
        "slots": Setting("integer", DEFAULT_SLOTS, 1, 10_000),
        "lease_seconds": Setting("number", DEFAULT_LEASE_SECONDS, 1, 86_400, "seconds"),
        "url": Setting("url"),  # checked whole by state/work/location.py (invalid_ledger_url)
    },
    "review": {  # captain land (docs/landing.md)
        "land": Setting("choice", "merge", choices=("merge", "rebase")),
        "test_command": Setting("text", ""),
        "test_timeout": Setting("number", DEFAULT_TEST_TIMEOUT, 1, 86_400, "seconds"),
        "land_wait": Setting("number", DEFAULT_LAND_WAIT, 0, 86_400, "seconds"),
    },
    # a crew's own git worktree (docs/worktrees.md); root: where they live (default
    # <home>/worktrees)
    "worktree": {
        "enabled": Setting("boolean", True),
        "root": Setting("path"),
    },
}
# [endpoints.NAME] key -> what it takes
ENDPOINT: dict[str, Setting] = {
    "secret": Setting("text"),
    "signature": Setting("choice", "github", choices=("github", "captain")),
    "events": Setting("texts"),
    "retention_days": Setting("number", DEFAULT_RETENTION_DAYS, 0, 3650, "days"),
    "max_attempts": Setting("integer", 1, 1, MAX_ATTEMPTS),
    "routine": Setting("boolean", False),
}
# [prices."MODEL"] key -> what it takes: USD per million tokens, overriding or adding to the
# price table that ships with captain (state/crew/spend.py, docs/ledger.md "Spend")
PRICE: dict[str, Setting] = {
    field: Setting("number", None, 0, 10_000, "USD per million tokens")
    for field in ("input", "output", "cache_read", "cache_write")
}
MODEL_NAME_MAX = 100


def _shown(value: object) -> str:
    """The value as it was written (TOML's spelling of booleans and infinities)."""
    if isinstance(value, bool):
        return "true" if value else "false"
    text = repr(value)
    return text if len(text) <= 60 else text[:57] + "..."


def _refuse(where: str, got: object, setting: Setting) -> CaptainError:
    return CaptainError(
        "invalid_config",
        f"{where} in config.toml is {_shown(got)}; it takes {setting.takes()}. Fix or remove "
        "the line (the file is left as it is).",
        key=where,
    )


def check(parsed: dict[str, object]) -> list[str]:
    """Refuse (``invalid_config``) the first setting that does not fit; return what is not
    a setting at all, for a warning."""
    unknown: list[str] = []
    for table, body in parsed.items():
        if table == "endpoints":
            _check_endpoints(body, unknown)
            continue
        if table == "prices":
            _check_prices(body, unknown)
            continue
        keys = SETTINGS.get(table)
        if keys is None:
            unknown.append(f"[{table}]" if isinstance(body, dict) else table)
            continue
        if not isinstance(body, dict):
            raise CaptainError(
                "invalid_config",
                f"{table} in config.toml must be a table ([{table}]), not {_shown(body)}.",
                key=table,
            )
        _check_keys(f"[{table}]", body, keys, unknown)
    return unknown


def _check_keys(
    where: str, body: dict[str, object], keys: dict[str, Setting], unknown: list[str]
) -> None:
    """Each of a table's settings against its row of the table of settings."""
    for key, got in body.items():
        setting = keys.get(key)
        if setting is None:
            unknown.append(f"{where} {key}")
        elif not setting.fits(got):
            raise _refuse(f"{where} {key}", got, setting)


def _check_endpoints(body: object, unknown: list[str]) -> None:
    if not isinstance(body, dict):
        raise CaptainError(
            "invalid_config",
            "endpoints in config.toml must be tables, one [endpoints.NAME] each.",
            key="endpoints",
        )
    for name, table in body.items():
        if not ENDPOINT_RE.fullmatch(name) or not isinstance(table, dict):
            raise CaptainError(
                "invalid_config",
                f"[endpoints.{_shown(name)}] in config.toml is not an endpoint: each is a table "
                "named by 1 to 64 letters, digits, '_', '.' or '-', starting with a letter "
                "or digit.",
                key=f"endpoints.{name}"[:100],
            )
        _check_keys(f"[endpoints.{name}]", table, ENDPOINT, unknown)


def _check_prices(body: object, unknown: list[str]) -> None:
    if not isinstance(body, dict):
        raise CaptainError(
            "invalid_config",
            'prices in config.toml must be tables, one [prices."MODEL"] each.',
            key="prices",
        )
    for model, table in body.items():
        if (
            not model
            or len(model) > MODEL_NAME_MAX
            or not all(c.isprintable() for c in model)
            or not isinstance(table, dict)
        ):
            raise CaptainError(
                "invalid_config",
                f"[prices.{_shown(model)}] in config.toml is not a model's prices: each is a "
                f"table named by the model (1 to {MODEL_NAME_MAX} printable characters) "
                "holding input, output, cache_read and cache_write in USD per million tokens.",
                key=f"prices.{model}"[:100],
            )
        _check_keys(f'[prices."{model}"]', table, PRICE, unknown)


def value(section: object, key: str, table: str | None = None) -> Any:
    """A validated setting from ``section`` (a ``[table]`` or an endpoint's table), or its
    default when absent."""
    setting = (SETTINGS[table] if table else ENDPOINT)[key]
    got = section.get(key) if isinstance(section, dict) else None
    if got is None:
        return setting.default
    return float(got) if setting.kind == "number" else got
