"""git, as the tmux runtime is tmux: ``git`` (the one way to run git: literal arguments,
never a shell, bounded output, a timeout, a refusal with a code on failure), ``worktree``
(a crew's own worktree and branch: made at recruit, kept or removed at dismiss), ``change``
(what a crew changed since its base commit) and ``landing`` (a crew's branch onto its base).

May import ``state``; never the use cases, the cli, the cockpit, the API or textual. The
surfaces reach what changes a repository only through ``captain_tui.usecases``.
"""
