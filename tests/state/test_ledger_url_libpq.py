"""A ledger URL is read the way libpq reads it, and its password is never shown.

libpq itself is the oracle: psycopg's ``conninfo_to_dict`` is libpq's ``PQconninfoParse``.
Hypothesis builds URLs out of the characters libpq splits on (``@ : / ? & = , [ ]``), their
percent-encodings and the parameter names that carry secrets, and for every URL libpq
accepts, captain's ``parse_url`` must either refuse it or

- read it as libpq does, every field (``libpq_options`` equals libpq's own dictionary);
- show a URL that libpq reads as exactly the same connection with every secret (the
  password, in the user information or as ``?password=`` / ``?sslpassword=``) replaced by
  ``***`` — so the redaction hides what libpq takes for the password, nothing less, and
  changes nothing else;
- never print a ``Z`` (the marker only secret-looking fragments carry) when libpq finds it
  in no field but a secret — in the shown URL, the sentence, the JSON or the repr.

And a URL captain lets through is one libpq parses, or refuses only for an unknown
parameter name (a message that names the parameter, never a value).
"""

from __future__ import annotations

import json

import pytest
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from state.errors import CaptainError
from state.work.location import REDACTED, libpq_options, parse_url

conninfo = pytest.importorskip(
    "psycopg.conninfo", reason="psycopg is not installed (pip install -e '.[test]')"
)
psycopg = pytest.importorskip("psycopg")

SECRET_KEYS = ("password", "sslpassword")
FRAGMENTS = [
    "u",
    "bob",
    "h",
    "db",
    "5432",
    "6000",
    "Z9",
    "Zq",
    "%5A",
    "x%40Z",
    ":",
    "@",
    "/",
    "?",
    "&",
    "=",
    ",",
    "[",
    "]",
    "[::1]",
    "[fe80::1%25eth0]",
    "%40",
    "%3A",
    "%2F",
    "%3F",
    "%26",
    "%3D",
    "%2C",
    "%25",
    "%5B",
    "%20",
    "+",
    "-",
    ".",
    "password=",
    "sslpassword=",
    "pass%77ord=",
    "user=",
    "host=",
    "port=",
    "dbname=",
    "sslmode=require",
    "ssl=true",
    "application_name=",
    "host=%2Ftmp",
]


def libpq(url: str) -> dict | None:
    try:
        return conninfo.conninfo_to_dict(url)
    except psycopg.ProgrammingError:
        return None


def redacted(parsed: dict) -> dict:
    return {k: (REDACTED if k in SECRET_KEYS else v) for k, v in parsed.items()}


def shown_everywhere(where) -> str:
    return "\n".join(
        [where.shown, where.describe(), json.dumps(where.as_json()), repr(where), *where.targets]
    )


def check(url: str) -> None:
    parsed = libpq(url)
    try:
        where = parse_url(url)
    except CaptainError as err:
        assert err.code == "invalid_ledger_url"
        assert url not in err.message
        if parsed is not None and any("Z" in v for k, v in parsed.items() if k in SECRET_KEYS):
            assert "Z" not in err.message and "%5A" not in err.message, err.message
        return
    if parsed is None:
        # captain let it through: libpq may refuse only an unknown parameter name
        with pytest.raises(psycopg.ProgrammingError) as caught:
            conninfo.conninfo_to_dict(url)
        assert "invalid URI query parameter" in str(caught.value), (url, caught.value)
        return
    # captain's one reading of the URL is libpq's, field for field
    assert libpq_options(url) == parsed, url
    # the shown URL is the same connection, every secret as ***
    assert libpq(where.shown) == redacted(parsed), (url, where.shown, parsed)
    # a password's characters are never shown, when no other field has them
    others = " ".join(v for k, v in parsed.items() if k not in SECRET_KEYS)
    secret = "".join(v for k, v in parsed.items() if k in SECRET_KEYS)
    if "Z" in secret and "Z" not in others:
        text = shown_everywhere(where)
        assert "Z" not in text and "%5a" not in text.lower(), (url, text)
    for key in SECRET_KEYS:  # and a driver's message that echoes one is scrubbed
        if len(parsed.get(key, "")) >= 3:
            assert parsed[key] not in where.scrub(f"said {parsed[key]}"), (url, key)
    # every host libpq will try is named in the targets
    for host in filter(None, parsed.get("host", "").split(",")):
        if not host.startswith("/"):
            assert any(
                t.startswith(f"[{host}]:" if ":" in host else f"{host}:") for t in where.targets
            ), (url, where.targets)


@pytest.mark.parametrize(
    "url",
    [
        # every form libpq accepts (its documentation's examples, and then some)
        "postgresql://",
        "postgresql://localhost",
        "postgresql://localhost:5433",
        "postgresql://localhost/mydb",
        "postgresql://user@localhost",
        "postgresql://user:secretZ@localhost",
        "postgres://other@localhost/otherdb",
        "postgresql://other@localhost/otherdb?connect_timeout=10&application_name=myapp",
        "postgresql://host1:123,host2:456/somedb?target_session_attrs=any",
        "postgresql:///mydb?host=localhost&port=5433",
        "postgresql://[2001:db8::1234]/database",
        "postgresql://[::1]:6000,[::2]/db",
        "postgresql:///dbname?host=/var/lib/postgresql",
        "postgresql://%2Fvar%2Flib%2Fpostgresql/dbname",
        "postgresql://h/db?ssl=true",
        "postgresql://u:pZw@h/db?password=secZret&sslpassword=keyZpass",
        # where a naive split and libpq's differ: the password is libpq's, whatever it holds
        "postgresql://u:pZ@ss@h/db",
        "postgresql://u:12345?Zx=@h/db",
        "postgresql://u:Z?a=b@h",
        "postgresql://u:Z:Z@h",
        "postgresql://u:Z,Z@h1,h2",
        "postgresql://u:Z[1]@h",
        "postgresql://u:pa%40Z%3Ass@h:1/db",
        "postgresql://h/db?pass%77ord=Zsecret",
        "postgresql://u:Z%2Fw@h/db",
        "postgresql://u:Z&password=Y@h/db",
        "postgresql://u:@h/db",
        "postgresql://:Zpw@h/db",
        "postgresql://@h/db",
    ],
)
def test_every_form_libpq_accepts_is_read_as_libpq_reads_it(url: str):
    assert libpq(url) is not None, url
    check(url)


FRAGMENT = st.sampled_from(FRAGMENTS)
PIECES = st.lists(FRAGMENT, max_size=6).map("".join)
SECRET = st.lists(st.sampled_from(["Z", "Z9", "%5A"] + FRAGMENTS), min_size=1, max_size=6).map(
    "".join
)
URLS = st.one_of(
    st.lists(FRAGMENT, max_size=14).map("".join),  # anything
    st.builds(lambda u, pw, rest: f"{u}:{pw}@{rest}", PIECES, SECRET, PIECES),  # user:pw@
    st.builds(
        lambda rest, key, pw, more: f"{rest}?{key}={pw}{more}",
        PIECES,
        st.sampled_from(["password", "sslpassword", "pass%77ord"]),
        SECRET,
        PIECES,
    ),
)


@settings(
    max_examples=800, derandomize=True, deadline=None, suppress_health_check=[HealthCheck.too_slow]
)
@given(scheme=st.sampled_from(["postgresql", "postgres"]), rest=URLS)
@example(scheme="postgresql", rest="u:5432?Zq=@h")
@example(scheme="postgresql", rest="h?pass%77ord=Z9")
def test_hypothesis_urls_are_read_as_libpq_reads_them(scheme: str, rest: str):
    check(f"{scheme}://{rest}")


@pytest.mark.parametrize(
    "url, why",
    [
        ("postgresql://h%0Aevil/db", "a host decodes to a space or a control character"),
        ("postgresql://u:pw@%1B%5B31mred/db", "a host decodes to a space or a control character"),
        ("postgresql:///db?host=%07", "a host decodes to a space or a control character"),
        ("postgresql:///db?host=a,b,c&port=1,2", "3 hosts and 2 ports"),
        ("postgresql://h/db?password=a=Z", "each with one ="),
        ("postgresql://h/db?a=1&&password=Z", "each with one ="),
        ("postgresql://u:Z%00@h/db", "%00"),
        ("POSTGRESQL://u:Z@h/db", "its scheme is POSTGRESQL://"),
        ("postgresql://u:Z\udcff@h/db", "not UTF-8"),  # undecodable bytes in an environment
    ],
)
def test_what_libpq_would_refuse_or_a_terminal_would_obey_is_refused_first(url: str, why: str):
    """A host is shown decoded in the sentence that says what was tried, so one that
    decodes to a control character is refused; and what libpq's own parser would refuse
    with a message quoting the URL's text (a second =, an empty pair, %00) is refused
    before libpq sees it. The refusal never quotes the URL."""
    with pytest.raises(CaptainError) as caught:
        parse_url(url)
    assert why in caught.value.message, caught.value.message
    assert "Z" not in caught.value.message and "evil" not in caught.value.message


def test_an_at_sign_left_in_a_password_is_refused_not_shown_as_the_host():
    """``u:p@ssw0rd@host``: libpq ends the user information at the first '@', so the
    rest of the password would be tried, and shown, as the host. Refused, never shown."""
    from state.errors import CaptainError
    from state.work.location import parse_url

    with pytest.raises(CaptainError) as caught:
        parse_url("postgresql://u:p@ssw0rd@127.0.0.1:5432/c1")
    assert caught.value.code == "invalid_ledger_url" and "%40" in caught.value.message
    assert "ssw0rd" not in caught.value.message
    assert (
        parse_url("postgresql://u:p%40ssw0rd@127.0.0.1:5432/c1").shown
        == "postgresql://u:***@127.0.0.1:5432/c1"
    )
