"""The cockpit's own settings (theme, alert switches), kept as JSON in the user's config
directory: ``$CAPTAIN_CONFIG_DIR`` if set (tests point it at a temporary directory), else
``platformdirs.user_config_path("captain")``.

These are the person's preferences, not crew state, so they live outside the home. A file
that cannot be read is ignored (defaults apply) and is replaced on the next save.
"""

from __future__ import annotations

import json
import os
from dataclasses import asdict, dataclass, fields
from pathlib import Path

from state.store import loads_json

FILE_NAME = "cockpit.json"
DEFAULT_THEME = "textual-dark"


@dataclass
class Settings:
    theme: str = DEFAULT_THEME
    alert_toast: bool = True  # a toast in the corner
    alert_bell: bool = True  # the terminal bell
    alert_desktop: bool = True  # OSC 9 / OSC 777: a desktop notification via the terminal


def config_dir() -> Path:
    env = os.environ.get("CAPTAIN_CONFIG_DIR")
    if env:
        return Path(env)
    import platformdirs

    return platformdirs.user_config_path("captain")


def load() -> Settings:
    try:
        raw = loads_json((config_dir() / FILE_NAME).read_text(encoding="utf-8"))
    except (OSError, ValueError):
        return Settings()
    if not isinstance(raw, dict):
        return Settings()
    defaults = Settings()
    values = {}
    for f in fields(Settings):
        value = raw.get(f.name, getattr(defaults, f.name))
        # a hand-edited file with the wrong type falls back per field, not wholesale
        values[f.name] = (
            value
            if isinstance(value, type(getattr(defaults, f.name)))
            else getattr(defaults, f.name)
        )
    return Settings(**values)


def save(settings: Settings) -> None:
    """Write atomically (temp file, then rename), so a crash never leaves half a file."""
    directory = config_dir()
    directory.mkdir(parents=True, exist_ok=True)
    target = directory / FILE_NAME
    tmp = directory / f".{FILE_NAME}.{os.getpid()}.tmp"
    tmp.write_text(json.dumps(asdict(settings), indent=2) + "\n", encoding="utf-8")
    os.replace(tmp, target)
