"""The cockpit's panels: ``base`` (a titled panel holding one list, changed only where its
rows changed), ``row_list`` (the list itself) and one module per panel: crew, questions,
notifications, doorbells, work.

May import textual, rich, ``widgets.view``, ``widgets.cells`` and ``state``; never
``captain_tui``.
"""
