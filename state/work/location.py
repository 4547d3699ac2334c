"""Which ledger a home uses: the file home (the default) or a PostgreSQL database.

``CAPTAIN_LEDGER_URL`` wins; else ``[ledger] url`` in the home's ``config.toml``; else the
file home. A URL must be a ``postgresql://`` (or ``postgres://``) URL libpq can read;
anything else is refused (``invalid_ledger_url``) with a sentence that never repeats the
password. A password in a URL is secret everywhere: ``LedgerLocation.shown`` is the URL with
it replaced by ``***``, and only ``LedgerLocation.url`` (never printed, never in a repr)
holds it. Nothing here connects or imports a driver: ``state.work.postgres`` does that.
"""

from __future__ import annotations

import os
import re
from collections.abc import Mapping
from dataclasses import dataclass, field
from urllib.parse import parse_qsl, unquote

from state.errors import CaptainError
from state.home import Home

ENV = "CAPTAIN_LEDGER_URL"
SCHEMES = ("postgresql", "postgres")
REDACTED = "***"
# What of the ledger a PostgreSQL URL moves there today (state/work/pg_backend.py); the
# rest stays in the file home until it is moved behind the interface too, and status says so.
ON_POSTGRES = ("work items", "events", "attempts", "leases", "API tokens", "the workspace ID",
               "webhook deliveries", "raw bodies")
STILL_IN_FILES: tuple[str, ...] = ()
MAX_URL = 4096
_UNSAFE = re.compile(r"[\x00-\x20\x7f-\x9f]")
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_PARAM = re.compile(r"[a-z_]{1,64}")
# query parameters whose values are secrets, shown as *** like the URL's password
_SECRET_PARAMS = frozenset({"password", "sslpassword"})


@dataclass(frozen=True)
class LedgerLocation:
    """Where the ledger is. ``url`` is the secret form (never print it); ``shown`` is what
    people and programs see: the home's path, or the URL with its password redacted."""

    kind: str  # "file" | "postgresql"
    home: str
    origin: str  # "default" | "CAPTAIN_LEDGER_URL" | "config.toml"
    shown: str
    url: str | None = field(default=None, repr=False)
    targets: tuple[str, ...] = ()  # "host:port" or "/socket/dir (unix socket)"
    password: str | None = field(default=None, repr=False)

    @property
    def postgres(self) -> bool:
        return self.kind == "postgresql"

    def describe(self) -> str:
        """One phrase for people: which ledger, from where."""
        if not self.postgres:
            return f"the file home ({self.home})"
        where = {ENV: ENV, "config.toml": "[ledger] url in config.toml"}.get(
            self.origin, self.origin)
        text = f"PostgreSQL at {self.shown} (from {where})"
        text += f": {', '.join(ON_POSTGRES)} there"
        if STILL_IN_FILES:
            text += f"; {', '.join(STILL_IN_FILES)} still in the file home ({self.home})"
        return text

    def as_json(self) -> dict:
        """For ``captain status --json`` (beside its ``home``: a file ledger is that home)."""
        if not self.postgres:
            return {"kind": "file", "origin": self.origin}
        return {"kind": "postgresql", "url": self.shown, "origin": self.origin,
                "targets": list(self.targets), "on_postgres": list(ON_POSTGRES),
                "still_in_files": list(STILL_IN_FILES)}

    def scrub(self, text: str) -> str:
        """``text`` (a driver's message) with this URL's password redacted, should it echo."""
        if self.url and self.url in text:
            text = text.replace(self.url, self.shown)
        if self.password and len(self.password) >= 3:
            text = text.replace(self.password, REDACTED)
        return text


def ledger_location(home: Home, environ: Mapping[str, str] | None = None) -> LedgerLocation:
    """Which ledger ``home`` uses (see the module's docstring). Refuses a URL that is set
    but is not one (``invalid_ledger_url``); an empty ``CAPTAIN_LEDGER_URL`` is unset."""
    env = os.environ if environ is None else environ
    return locate(str(home.root), env.get(ENV), home.config().get("ledger"))


def locate(root: str, variable: str | None, section: object) -> LedgerLocation:
    """``ledger_location`` from what decides it: the home's root, ``CAPTAIN_LEDGER_URL``'s
    value and the config's ``[ledger]`` section."""
    if variable:
        return parse_url(variable, home=root, origin=ENV)
    if isinstance(section, dict) and "url" in section:
        url = section["url"]
        if not isinstance(url, str) or not url:
            raise CaptainError(
                "invalid_ledger_url",
                "[ledger] url in config.toml must be a postgresql:// URL in quotes; remove the "
                "line to keep the ledger in the file home.")
        return parse_url(url, home=root, origin="config.toml")
    return LedgerLocation(kind="file", home=root, origin="default", shown=root)


def _refuse(origin: str, why: str) -> CaptainError:
    where = {"config.toml": "[ledger] url in config.toml", ENV: ENV, "--url": "--url"}.get(
        origin, "the URL")
    return CaptainError(
        "invalid_ledger_url",
        f"{where} is not a PostgreSQL URL: {why}. Write it as "
        "postgresql://USER@HOST:PORT/DATABASE (a password is better kept in PGPASSWORD or "
        "~/.pgpass than in the URL).")


def parse_url(url: str, *, home: str = "", origin: str = "--url") -> LedgerLocation:
    """Check ``url`` the way libpq reads a URI and return it with its redacted form.
    The refusal names what is wrong and never repeats the URL (it may hold a password)."""
    if not isinstance(url, str) or not url:
        raise _refuse(origin, "it is empty")
    if len(url) > MAX_URL:
        raise _refuse(origin, f"it is longer than {MAX_URL} characters")
    scheme, sep, rest = url.partition("://")
    if not sep or scheme.lower() not in SCHEMES:
        shown_scheme = scheme if sep and re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]{0,31}", scheme) \
            else None
        raise _refuse(origin, f"its scheme is {shown_scheme}://, not postgresql://"
                      if shown_scheme else "it does not start with postgresql://")
    if _UNSAFE.search(url):
        raise _refuse(origin, "it contains a space or a control character (percent-encode "
                              "them: %20)")
    if "#" in rest:
        raise _refuse(origin, "it has a #fragment, which a database URL cannot have")
    if _BAD_PERCENT.search(rest):
        raise _refuse(origin, "it has a % that is not followed by two hex digits")
    rest, qsep, query = rest.partition("?")
    netloc, psep, path = rest.partition("/")
    userinfo, at, hostlist = netloc.rpartition("@")
    if not at:
        userinfo, hostlist = "", netloc
    user, pwsep, password = userinfo.partition(":")
    try:
        params = parse_qsl(query, keep_blank_values=True, strict_parsing=True) if query else []
    except ValueError:
        raise _refuse(origin, "its ?query is not name=value pairs joined by &") from None
    for name, _value in params:
        if not _PARAM.fullmatch(name):
            raise _refuse(origin, "a ?query parameter name is not a libpq connection "
                                  "option (lower-case letters and _)")
    if "/" in path:
        raise _refuse(origin, "the database name after the host contains a '/' (percent-"
                              "encode it: %2F)")
    targets = _targets(hostlist, dict(params), origin)
    shown_userinfo = ""
    if at:
        shown_userinfo = user + (f":{REDACTED}" if pwsep else "") + "@"
    shown_query = ""
    if qsep:
        shown_query = "?" + "&".join(
            f"{name}={REDACTED if name in _SECRET_PARAMS else value}"
            for name, value in _raw_pairs(query))
    shown = f"{scheme}://{shown_userinfo}{hostlist}{psep}{path}{shown_query}"
    secret = unquote(password) if pwsep else None
    for name, value in params:
        if name in _SECRET_PARAMS and value:
            secret = secret or value
    return LedgerLocation(kind="postgresql", home=home, origin=origin, shown=shown, url=url,
                          targets=targets, password=secret)


def _raw_pairs(query: str) -> list[tuple[str, str]]:
    """The query's pairs as written (still percent-encoded), for the redacted form."""
    return [(part.partition("=")[0], part.partition("=")[2]) for part in query.split("&")]


def _targets(hostlist: str, params: dict[str, str], origin: str) -> tuple[str, ...]:
    """``host:port`` for each host the URL names (libpq tries them in order), checking
    every port; a host-less URL is the local socket directory (or ``?host=``)."""
    targets = []
    default_port = params.get("port", "5432") or "5432"
    if not (default_port.isascii() and default_port.isdigit()
            and 1 <= int(default_port) <= 65535):
        raise _refuse(origin, "its ?port= is not a number from 1 to 65535")
    for entry in hostlist.split(",") if hostlist else [""]:
        if entry.startswith("["):
            host, close, tail = entry[1:].partition("]")
            if not close or (tail and not tail.startswith(":")):
                raise _refuse(origin, "an IPv6 host in [brackets] is not closed")
            port = tail[1:] if tail else ""
        else:
            host, _, port = entry.partition(":")
        if port and not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
            raise _refuse(origin, "a port is not a number from 1 to 65535")
        host = unquote(host) or params.get("host", "") or "/var/run/postgresql"
        port = port or default_port
        targets.append(f"{host} port {port} (unix socket)" if host.startswith("/")
                       else f"{host}:{port}")
    return tuple(targets)
