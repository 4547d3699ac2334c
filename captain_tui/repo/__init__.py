"""git: a crew's worktree, its change and its landing.

May import ``state``; never the use cases, the cli, the cockpit, the API or textual.
"""
