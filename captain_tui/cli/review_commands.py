"""``captain diff NAME``: a crew's change — the unified diff, its file list (``--stat``)
or its shape (``--json``). Every byte git prints is escaped for the terminal: file names
with newlines or escape sequences, a diff body, bytes that are not UTF-8
(docs/review.md)."""

from __future__ import annotations

import os
import sys

from captain_tui.cli.args import caller, home_of
from captain_tui.cli.out import Out, printable, shown


def add_commands(sub, common, parser_class, **wanted) -> None:
    # wanted (main's only, inner): few parsers here, all built
    text = (
        "Show a crew's change: everything in its worktree since its base commit — its "
        "commits and what it has not committed yet — as a unified diff (--stat: the files "
        "with lines added/removed, marking those outside its --owns and those not "
        "committed; --json: the change's shape)."
    )
    p = sub.add_parser("diff", parents=[common], help=text, description=text)
    p.set_defaults(func=cmd_diff)
    p.add_argument("name", metavar="NAME")
    p.add_argument("--stat", action="store_true", help="the changed files, not the diff")


def headline(s: dict) -> str:
    """One line about a change's shape, the same for ``diff``, ``wait`` and ``status``."""
    if "error" in s:
        return f"change: unknown ({s['error']['message']})"
    where = (
        "shared checkout, uncommitted" if s["shared_checkout"] else f"since {s['base_commit'][:12]}"
    )
    # here, not at import: every command's parser imports this module, and the use cases'
    # package loads pydantic, which a crew's own commands must never pay for
    from captain_tui.usecases.words import change_words

    counts, *more = change_words(s)
    return "; ".join([f"change: {counts} ({where})", *more])


def compact(s: dict | None) -> str:
    """A change in a status column: files, lines, and what needs a look."""
    if not s:
        return "-"
    if "error" in s:
        return "unknown"
    out = f"{s['files_changed']}f +{s['lines_added']} -{s['lines_removed']}"
    if s["uncommitted_count"]:
        out += f" u{s['uncommitted_count']}"
    if s["outside_grant_count"]:
        out += f" !{s['outside_grant_count']} outside"
    return out


def stat_lines(files: list[dict]) -> list[str]:
    out = []
    for f in files:
        plus = "bin" if f["binary"] else f"+{f['added']}"
        minus = "" if f["binary"] else f"-{f['removed']}"
        marks = ("!" if f["outside_grant"] else " ") + ("u" if f["uncommitted"] else " ")
        out.append(
            f"{marks} {f['status'][:1].upper()} {plus:>7} {minus:>7}  {printable(f['path'])}"
        )
    return out


def cmd_diff(args, out: Out) -> int:
    from captain_tui import usecases

    change = usecases.change(home_of(args), args.name, ctx=caller())
    shape = change.as_json()
    head = f"{args.name}: {headline(change.summary())}"
    if out.json:
        out.ok({"crew": args.name, **shape}, head)
        return 0
    if args.stat:
        legend = "  (! outside --owns, u not committed)" if shape["files"] else ""
        out.ok({}, "\n".join([head + legend, *stat_lines(shape["files"])]))
        return 0
    body = usecases.diff_bytes(change, ctx=caller())
    text = os.fsdecode(body) if body else ""  # bytes that are not UTF-8 stay visible, escaped
    sys.stdout.write(shown(head) + "\n")
    sys.stdout.write(shown(text))
    sys.stdout.flush()
    return 0
