"""The assignment protocol: recruit, assign, tell, answer, ask, done, check, inbox, dismiss;
who may act (``guards``), a crew's append-only history (``crewlog``), mail and receipts
(``mailbox``), notifications with ``wait`` (``notify``), and status's rows from either reader
(``roster``, which loads no pydantic).

May import the core (``state.*`` modules at the top) and ``state.work`` (an assignment is a
work item); never ``state.crew_side``.
"""
