"""captain: four programs over the ``state`` core, each in its folder.

``cli`` (the ``captain`` command line), ``cockpit`` (the Textual app, with ``widgets``),
``api`` (``captain serve``), ``usecases`` (every use case once, for those three),
``runtime`` (tmux, the pane reader, the doorbell) and ``agents`` (one module per agent CLI,
and their hooks). Imports go only downward: cli > cockpit | api > usecases > runtime >
agents > state (``lint-imports`` checks it;
docs/design.md draws it).
"""
