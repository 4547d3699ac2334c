"""The cockpit's modal screens: the forms (answer, tell, assign, recruit, confirm; replay
and resolve for work items), the help screen and the settings screen. A form writes nothing:
it posts its values and the app does the work.

May import textual, rich, ``widgets.view``, ``widgets.cells`` and ``state``; never
``captain_tui``.
"""
