"""What the tests share: private tmux servers and polling (``tmux``), driving the cockpit
(``cockpit``), the real HTTP server (``api``) and the real Claude Code CLI (``claude``)."""
