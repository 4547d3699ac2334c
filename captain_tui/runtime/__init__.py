"""The tmux runtime and the use cases: which tmux server, crew windows, reading panes
(``pane_reader``, a pure function), the doorbell and its gates, the runner behind
``wait``/``watch``, the ledger's hands in tmux (``ledger_probe``), starting and stopping
windows (``launch``), retention on a clock (``upkeep``), and ``ops``: every use case once,
for the CLI, the cockpit and the API.

May import ``captain_tui.agents`` and ``state``; never the cli, the cockpit, the API or textual.
"""
