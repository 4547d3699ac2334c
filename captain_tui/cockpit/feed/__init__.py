"""The cockpit's data feed: the home read into ``widgets.view`` rows, kept current cheaply.

``home_feed`` (the ``Feed`` and its per-crew cache) and ``work_feed`` (the Work panel's part) read;
``path_routes`` says which part a changed path touches; ``alerts`` what needs the captain now;
``pump`` serialises every request on one thread; ``watcher`` runs watchfiles in a child
process; ``listener`` hears a PostgreSQL ledger's notifications (its writes change nothing
under the home). Knows nothing of Textual: may import ``state`` and ``widgets.view`` only.
"""
