"""The cockpit's panels: ``base`` (a titled panel holding one list, changed only where its
rows changed), ``row_list`` (the list itself) and one module per panel: ``crew_panel``,
``questions_panel``, ``notifications_panel``, ``doorbells_panel``, ``work_panel``.

May import textual, rich, ``widgets.view``, ``widgets.cells`` and ``state``; never
``captain_tui``.
"""
