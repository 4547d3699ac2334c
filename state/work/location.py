"""Which ledger a home uses: the file home (the default) or a PostgreSQL database.

``CAPTAIN_LEDGER_URL`` wins; else ``[ledger] url`` in the home's ``config.toml``; else the
file home (that rule: ``state.work.naming``). A URL must be a ``postgresql://`` (or
``postgres://``) URL libpq can read; anything else is refused (``invalid_ledger_url``) with
a sentence that never repeats the password. The URL is read once, split exactly where
libpq splits it (``_LibpqUri``), and everything shown comes from that reading. A password
in a URL — the user information's, ``?password=``, ``?sslpassword=`` — is secret
everywhere: ``LedgerLocation.shown`` is the URL with each replaced by ``***``, and only
``LedgerLocation.url`` (never printed, never in a repr) holds them. Nothing here connects
or imports a driver: ``state.work.postgres`` does that.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any, NamedTuple
from urllib.parse import unquote_to_bytes

from state.errors import CaptainError
from state.home import Home
from state.work.naming import ENV, in_files, ledger_section, named

__all__ = ["ENV", "LedgerLocation", "ledger_location", "ledger_section", "locate", "parse_url"]
SCHEMES = ("postgresql", "postgres")
REDACTED = "***"
# What of the ledger a PostgreSQL URL moves there today (state/work/pg_backend.py); the
# rest stays in the file home until it is moved behind the interface too, and status says so.
ON_POSTGRES = (
    "work items",
    "events",
    "attempts",
    "leases",
    "API tokens",
    "the workspace ID",
    "webhook deliveries",
    "raw bodies",
)
STILL_IN_FILES: tuple[str, ...] = ()
MAX_URL = 4096
_UNSAFE = re.compile(r"[\x00-\x20\x7f-\x9f]")
_BAD_PERCENT = re.compile(r"%(?![0-9A-Fa-f]{2})")
_PARAM = re.compile(r"[a-z_]{1,64}")
# query parameters whose values are secrets, shown as *** like the URL's password
_SECRET_PARAMS = frozenset({"password", "sslpassword"})


class LedgerLocation(NamedTuple):  # not a dataclass: status pays no dataclasses import
    """Where the ledger is. ``url`` is the secret form (never print it); ``shown`` is what
    people and programs see: the home's path, or the URL with its password redacted."""

    kind: str  # "file" | "postgresql"
    home: str
    origin: str  # "default" | "CAPTAIN_LEDGER_URL" | "config.toml"
    shown: str
    url: str | None = None  # secret: not in the repr
    targets: tuple[str, ...] = ()  # "host:port" or "/socket/dir (unix socket)"
    password: str | None = None  # the one libpq sends; secret: not in the repr
    secrets: tuple[str, ...] = ()  # every secret, decoded and raw; not in the repr

    def __repr__(self) -> str:
        return (
            f"LedgerLocation(kind={self.kind!r}, home={self.home!r}, origin={self.origin!r}, "
            f"shown={self.shown!r}, targets={self.targets!r})"
        )

    @property
    def postgres(self) -> bool:
        return self.kind == "postgresql"

    def describe(self) -> str:
        """One phrase for people: which ledger, from where."""
        if not self.postgres:
            return f"the file home ({self.home})"
        where = {ENV: ENV, "config.toml": "[ledger] url in config.toml"}.get(
            self.origin, self.origin
        )
        text = f"PostgreSQL at {self.shown} (from {where})"
        text += f": {', '.join(ON_POSTGRES)} there"
        if STILL_IN_FILES:
            text += f"; {', '.join(STILL_IN_FILES)} still in the file home ({self.home})"
        return text

    def as_json(self) -> dict[str, Any]:
        """For ``captain status --json`` (beside its ``home``: a file ledger is that home)."""
        if not self.postgres:
            return {"kind": "file", "origin": self.origin}
        return {
            "kind": "postgresql",
            "url": self.shown,
            "origin": self.origin,
            "targets": list(self.targets),
            "on_postgres": list(ON_POSTGRES),
            "still_in_files": list(STILL_IN_FILES),
        }

    def scrub(self, text: str) -> str:
        """``text`` (a driver's message) with this URL's secrets redacted, should it echo."""
        if self.url and self.url in text:
            text = text.replace(self.url, self.shown)
        for secret in sorted(self.secrets, key=len, reverse=True):
            if len(secret) >= 3:
                text = text.replace(secret, REDACTED)
        return text


def ledger_location(home: Home, environ: Mapping[str, str] | None = None) -> LedgerLocation:
    """Which ledger ``home`` uses (see the module's docstring). Refuses a URL that is set
    but is not one (``invalid_ledger_url``); an empty ``CAPTAIN_LEDGER_URL`` is unset."""
    variable, section = named(home, environ)
    return locate(str(home.root), variable, section)


def locate(root: str, variable: str | None, section: object) -> LedgerLocation:
    """``ledger_location`` from what decides it: the home's root, ``CAPTAIN_LEDGER_URL``'s
    value and the config's ``[ledger]`` section."""
    if in_files(variable, section):  # the one rule of what names a ledger (naming.py)
        return LedgerLocation(kind="file", home=root, origin="default", shown=root)
    if variable:
        return parse_url(variable, home=root, origin=ENV)
    assert isinstance(section, dict)  # in_files: its url names the ledger
    url = section["url"]
    if not isinstance(url, str) or not url:
        raise CaptainError(
            "invalid_ledger_url",
            "[ledger] url in config.toml must be a postgresql:// URL in quotes; remove the "
            "line to keep the ledger in the file home.",
        )
    return parse_url(url, home=root, origin="config.toml")


def _refuse(origin: str, why: str) -> CaptainError:
    where = {"config.toml": "[ledger] url in config.toml", ENV: ENV, "--url": "--url"}.get(
        origin, "the URL"
    )
    return CaptainError(
        "invalid_ledger_url",
        f"{where} is not a PostgreSQL URL: {why}. Write it as "
        "postgresql://USER@HOST:PORT/DATABASE (a password is better kept in PGPASSWORD or "
        "~/.pgpass than in the URL).",
    )


def parse_url(url: str, *, home: str = "", origin: str = "--url") -> LedgerLocation:
    """Check ``url`` and read it exactly as libpq reads a URI (``_LibpqUri``: libpq's
    ``conninfo_uri_parse_options``), then build everything shown from that one reading:
    the password is the text libpq takes for the password, whatever characters it holds.
    The refusal names what is wrong and never repeats the URL (it may hold a password)."""
    if not isinstance(url, str) or not url:
        raise _refuse(origin, "it is empty")
    if len(url) > MAX_URL:
        raise _refuse(origin, f"it is longer than {MAX_URL} characters")
    scheme, sep, rest = url.partition("://")
    if not sep or scheme not in SCHEMES:  # libpq's prefix is lower-case, exactly
        shown_scheme = (
            scheme if sep and re.fullmatch(r"[A-Za-z][A-Za-z0-9+.-]{0,31}", scheme) else None
        )
        raise _refuse(
            origin,
            f"its scheme is {shown_scheme}://, not postgresql://"
            if shown_scheme
            else "it does not start with postgresql://",
        )
    if _UNSAFE.search(url):
        raise _refuse(
            origin, "it contains a space or a control character (percent-encode them: %20)"
        )
    try:
        url.encode("utf-8")
    except UnicodeEncodeError:  # bytes that were not UTF-8 (an environment variable's)
        raise _refuse(origin, "it is not UTF-8 text") from None
    if "#" in rest:
        raise _refuse(origin, "it has a #fragment, which a database URL cannot have")
    if _BAD_PERCENT.search(rest):
        raise _refuse(origin, "it has a % that is not followed by two hex digits")
    if "%00" in rest:
        raise _refuse(origin, "it has %00, which libpq refuses in any part")
    uri = _LibpqUri(rest, origin)
    for name, _ in uri.params:
        if not _PARAM.fullmatch(name):
            raise _refuse(
                origin,
                "a ?query parameter name is not a libpq connection "
                "option (lower-case letters and _)",
            )
    targets = _targets(uri, origin)
    shown = scheme + "://" + uri.shown()
    secrets = [uri.password] if uri.password else []
    secrets += [value for name, value in uri.params if name in _SECRET_PARAMS and value]
    return LedgerLocation(
        kind="postgresql",
        home=home,
        origin=origin,
        shown=shown,
        url=url,
        targets=targets,
        password=secrets[-1] if secrets else None,
        secrets=tuple(secrets) + tuple(uri.raw_secrets()),
    )


def _decode(text: str) -> str:
    """libpq's percent-decoding (``conninfo_uri_decode``): every %XX, nothing else (a +
    stays a +); bytes that are not UTF-8 are kept as surrogates, never guessed."""
    return unquote_to_bytes(text).decode("utf-8", "surrogateescape")


class _LibpqUri:
    """The part of a URI after ``scheme://``, split where libpq splits it. Raw (still
    percent-encoded) spans are kept for the shown form; decoded values for the rest.

    libpq's rules (fe-connect.c, ``conninfo_uri_parse_options``): user information is
    there only if an ``@`` comes before the first ``/`` (a ``?`` does not end it); the
    user name runs to its first ``:``, the password from there to that first ``@``. Then
    hosts separated by ``,``, each a name (to ``:`` ``/`` ``?`` or ``,``) or ``[IPv6]``,
    each with an optional ``:port`` (to ``/`` ``?`` or ``,``); then an optional
    ``/dbname`` (to ``?``); then ``?key=value&...``, each pair with exactly one ``=``."""

    def __init__(self, text: str, origin: str) -> None:
        self.user_raw: str | None = None
        self.password_raw: str | None = None
        ahead = min((i for i in (text.find("@"), text.find("/")) if i >= 0), default=-1)
        p = 0
        if ahead >= 0 and text[ahead] == "@":
            user, colon, password = text[:ahead].partition(":")
            self.user_raw, self.password_raw = user, (password if colon else None)
            p = ahead + 1
        self.hosts_from = p
        hosts, ports = [], []  # raw, as libpq joins them before decoding
        while True:
            if text.startswith("[", p):
                close = text.find("]", p + 1)
                if close < 0:
                    raise _refuse(origin, "an IPv6 host in [brackets] is not closed")
                if close == p + 1:
                    raise _refuse(origin, "an IPv6 host in [brackets] is empty")
                host, p = text[p + 1 : close], close + 1
                if p < len(text) and text[p] not in ":/?,":
                    raise _refuse(
                        origin,
                        "an IPv6 host in [brackets] is followed by "
                        "something other than :port, /, ? or ,",
                    )
            else:
                end = _upto(text, p, ":/?,")
                host, p = text[p:end], end
            port = ""
            if text.startswith(":", p):
                end = _upto(text, p + 1, "/?,")
                port, p = text[p + 1 : end], end
            hosts.append(host)
            ports.append(port)
            if not text.startswith(",", p):
                break
            p += 1
        self.hosts_to = p
        self.dbname_raw: str | None = None
        if text.startswith("/", p):
            end = _upto(text, p + 1, "?")
            self.dbname_raw, p = text[p + 1 : end], end
        self.query_raw: str | None = text[p + 1 :] if text.startswith("?", p) else None
        self.text = text
        self.pairs = _pairs(self.query_raw or "", origin)  # raw
        # what libpq stores, in its order (a later value replaces an earlier one)
        found = [
            ("user", self.user_raw or ""),
            ("password", self.password_raw or ""),
            ("host", ",".join(hosts)),
            ("port", ",".join(ports)),
            ("dbname", self.dbname_raw or ""),
        ]
        options = {key: _decode(raw) for key, raw in found if raw}
        self.params = []  # decoded
        for name, value in self.pairs:
            name, value = _decode(name), _decode(value)
            if (name, value) == ("ssl", "true"):  # libpq's alias for sslmode=require
                name, value = "sslmode", "require"
            self.params.append((name, value))
            options[name] = value
        self.options = options
        self.password = _decode(self.password_raw) if self.password_raw else None

    def shown(self) -> str:
        """The URI with every secret libpq would read replaced by ``***``."""
        out = ""
        if self.user_raw is not None:
            hidden = (
                ":" + REDACTED
                if self.password_raw
                else ":"
                if self.password_raw is not None
                else ""
            )
            out = f"{self.user_raw}{hidden}@"
        out += self.text[self.hosts_from : self.hosts_to]
        if self.dbname_raw is not None:
            out += "/" + self.dbname_raw
        if self.query_raw is not None:
            out += "?" + "&".join(
                f"{name}={REDACTED if _decode(name) in _SECRET_PARAMS else value}"
                for name, value in self.pairs
            )
        return out

    def raw_secrets(self) -> list[str]:
        """The secrets as written (percent-encoded), should a message echo them so."""
        raw = [self.password_raw] if self.password_raw else []
        return raw + [v for n, v in self.pairs if _decode(n) in _SECRET_PARAMS and v]


def _pairs(query: str, origin: str) -> list[tuple[str, str]]:
    """``?name=value&...`` as libpq splits it (``conninfo_uri_parse_params``): pairs to
    each ``&``, exactly one ``=`` in each; a last ``&`` ends the list."""
    pairs, p = [], 0
    while p < len(query):
        end = _upto(query, p, "&")
        part = query[p:end]
        if part.count("=") != 1:
            raise _refuse(
                origin,
                "its ?query is not name=value pairs joined by & (each "
                "with one =; percent-encode an = in a value: %3D)",
            )
        name, _, value = part.partition("=")
        pairs.append((name, value))
        p = end + 1
    return pairs


def libpq_options(url: str) -> dict[str, str]:
    """What libpq reads ``url`` as (``PQconninfoParse``'s options), for a URL
    ``parse_url`` accepts; the tests hold it to libpq itself."""
    return _LibpqUri(url.partition("://")[2], "--url").options


def _upto(text: str, start: int, stops: str) -> int:
    """The index of the first of ``stops`` in ``text`` from ``start`` (or its end)."""
    return next((i for i in range(start, len(text)) if text[i] in stops), len(text))


def _targets(uri: _LibpqUri, origin: str) -> tuple[str, ...]:
    """``host:port`` for each host libpq will try, in order, from what it reads (a
    ``?host=`` or ``?port=`` replaces the netloc's), checking every port; an empty host is
    the local socket directory. Hosts are shown decoded, so one that decodes to a space or
    a control character is refused."""
    hosts = uri.options.get("host", "").split(",")
    ports = uri.options.get("port", "").split(",")
    if len(ports) == 1:
        ports *= len(hosts)
    if len(ports) != len(hosts):
        raise _refuse(
            origin,
            f"it names {len(hosts)} hosts and {len(ports)} ports (give "
            "one port for all, or one for each)",
        )
    targets = []
    for host, port in zip(hosts, ports):
        port = port or "5432"
        if not (port.isascii() and port.isdigit() and 1 <= int(port) <= 65535):
            raise _refuse(origin, "a port is not a number from 1 to 65535")
        host = host or "/var/run/postgresql"
        if _UNSAFE.search(host) or not host.isprintable():
            raise _refuse(origin, "a host decodes to a space or a control character")
        if "@" in host:  # libpq ends the user information at the first '@': the rest of a
            # password with an '@' in it would be read, and shown, as the host
            raise _refuse(origin, "a host holds an '@' (an '@' in a password is written %40)")
        if host.startswith("/"):
            targets.append(f"{host} port {port} (unix socket)")
        else:
            targets.append(f"[{host}]:{port}" if ":" in host else f"{host}:{port}")
    return tuple(targets)
