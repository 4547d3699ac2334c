"""The work ledger: work items and their attempts, generation fencing, leases, the
reconciler, capacity, cancel, replay and resolve (``ledger``, ``replay``), the bridge from
assignments (``settle``), webhook deliveries (``deliveries``), which of cancel and replay an
item offers (``controls``), API tokens (``tokens``) and the crash points the crash tests
select (``crash``). docs/ledger.md is the prose.

May import the core only (``state.*`` modules at the top); never ``state.crew``.
"""
