"""The headless core: models, the durable home, the protocol. No UI, no tmux."""
