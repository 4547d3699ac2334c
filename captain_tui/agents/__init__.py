"""The agent CLIs captain runs in panes, one module per kind: ``claude`` (settings that
register captain's hooks), ``codex`` (its notify program); ``kinds`` names them all (plain
``shell`` and ``program`` crews have no hooks), ``start`` builds a window's command line and
environment, and ``hooks`` is ``captain hook AGENT EVENT``, which the agents run.

May import ``state`` only: the hooks run inside agent panes and must start fast.
"""
