"""What an assignment's attempt has spent, put on the record: a ``spend`` note on its work
item (both ledgers), appended only when the figure changed (``ledger.note``), folded onto
the attempt at that generation (``transitions.fold``). The figure is measured crew-side
by ``state.crew.spend``; this runs off the agent's critical path (a Stop hook starts it
detached: ``captain_tui.agents.hooks``), so it may load the models and the ledger.
"""

from __future__ import annotations

from state.crew.spend import Spend
from state.home import Home


def record(home: Home, assignment_id: str, figure: Spend, *, actor: str) -> bool:
    """Put ``figure`` on the assignment's current attempt; True when a note was appended
    (False: the attempt already says so, or the item has no attempt yet)."""
    if not figure.turns:
        return False  # nothing measured: the attempt's figures stay unknown
    from state.work import ledger

    work_id = ledger.work_id_for_assignment(assignment_id)
    before = ledger.get(home, work_id).seq
    after = ledger.note(
        home,
        work_id,
        "spend",
        actor=actor,
        cost_usd=figure.cost_usd,
        input_tokens=figure.input_tokens,
        output_tokens=figure.output_tokens,
        cache_read_tokens=figure.cache_read_tokens,
        cache_write_tokens=figure.cache_write_tokens,
        turns=figure.turns,
    )
    return after.seq != before
