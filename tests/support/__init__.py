"""What the tests share: private tmux servers and polling (``tmux``), driving the cockpit
(``cockpit``), the real HTTP server (``api``), the real Claude Code CLI (``claude``), and
counting what a reader asks of the disk or the database (``counting``)."""
