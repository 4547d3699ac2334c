"""git, as the tmux runtime is tmux: ``git`` (the one way to run git: literal arguments,
never a shell, bounded output, a timeout, a refusal with a code on failure), ``worktree``
(a crew's own worktree and branch: made at recruit, kept or removed at dismiss), ``change``
(what a crew changed since its base commit), ``landing`` (a crew's branch onto its base) and
what status reads without them: ``landing_queue`` and ``discovery`` (whether a directory can be
in a repository at all, asked without git).

May import ``state``; never the use cases, the cli, the cockpit, the API or textual. The
surfaces reach what changes a repository only through ``captain_tui.usecases``.
"""
