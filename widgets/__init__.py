"""The cockpit's Textual widgets (arrive with the cockpit issue)."""
