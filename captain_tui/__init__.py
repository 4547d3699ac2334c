"""captain: the CLI, the tmux runtime and the cockpit."""
