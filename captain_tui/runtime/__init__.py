"""The tmux runtime: which tmux server, crew windows, reading panes
(``pane_reader``, a pure function), the doorbell and its gates, the runner behind
``wait``/``watch``, the ledger's hands in tmux (``ledger_probe``), starting and stopping
windows (``launch``), retention on a clock (``upkeep``). The surfaces change state through
``captain_tui.usecases``, which sits above this package.

May import ``captain_tui.agents`` and ``state``; never the use cases, the cli, the cockpit,
the API or textual.
"""
