"""The headless core: the durable home and its writing rules, IDs, the clock, refusals, the
protocol's words and every record's model.

Folders: ``crew/`` (the assignment protocol), ``crew_side/`` (the crew's own commands, without
pydantic), ``work/`` (the work ledger). Nothing under ``state`` may import ``captain_tui``,
``widgets``, textual, libtmux, watchfiles or fastapi: it runs the same under the CLI, the
cockpit, the HTTP API, a hook and a test (checked by ``lint-imports``). See docs/design.md.
"""
