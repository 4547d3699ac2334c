"""The crew's own commands without pydantic: a crew runs them on every tool call.

``door`` is the only door (one function per command: check, ask, inbox, and the
snapshot the hooks read); behind it ``fast`` answers from plain records (``plain``, checked
against ``shapes``, which ``shapes_gen`` derives from the models) or declines, and the full
path in ``state.crew`` decides; ``captain`` and ``status`` do the same for the captain's
mail, one-poll wait, work list and status. May import the core, ``state.crew.guards`` and
``state.crew.roster`` (neither loads pydantic) at module level; the full path only inside
functions, after the fast path declined.
"""
