"""The cockpit: the Textual app over one home (``app``), its commands table behind the
footer, palette and help (``command_table``), what each command does in a worker (``jobs``, over
``usecases``) and the messages a worker posts back (``worker_results``), the Work panel's
commands (``work_actions``), the person's settings (``prefs``), alerts said in batches
(``alert_batch``), desktop alerts and the escape sequences beside Textual's frames
(``terminal``), garbage-collection timing (``heap``), ``captain demo`` and its simulated
crew.
``feed/`` reads the home into the view model.

May import ``widgets``, ``captain_tui.usecases``, ``captain_tui.runtime``,
``captain_tui.agents`` and ``state``; never the cli or the API. The UI thread never
touches disk or tmux: workers do.
"""
