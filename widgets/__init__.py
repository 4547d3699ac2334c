"""The cockpit's Textual widgets, each with its ``DEFAULT_CSS`` beside it: the view model the
panels draw (``view``), safe text for cells (``cells``), the header and footer (``chrome``),
the pane preview (with its own clock), ``panels/`` (Crew, Questions, Notifications,
Doorbells, Work) and ``screens/`` (forms, help, settings).

May import textual, rich and ``state``; never ``captain_tui`` (``lint-imports`` checks it):
widgets draw what they are given and post messages; the app does the work (the preview
captures a pane through the function the app gives it, in a thread worker of its own).
"""
