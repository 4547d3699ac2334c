"""The ``captain`` command line: ``main`` (the parser and exit codes), ``args`` and ``out``
(what every command reads and prints), ``captain_commands`` and ``crew_commands`` (the
protocol's commands, captain-side and crew-side), ``work_commands``, ``ledger_commands``
and ``serve`` (the ledger and the HTTP door).

The top layer: may import every other program. A crew-side command imports only ``state``
(it runs on every tool call); captain-side commands import ``usecases`` for what they do.
"""
