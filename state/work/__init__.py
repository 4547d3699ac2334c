"""The work ledger: work items and their attempts, generation fencing, leases, the
reconciler, capacity, cancel, replay and resolve (``ledger``, ``replay``; what an event
means: ``transitions``), the storage interface those rules reach their records through
(``backend``) and its file backend (``files``), the bridge from
assignments (``settle``), webhook deliveries (``deliveries``; stored behind
``delivery_store`` by ``delivery_files`` or ``pg_deliveries``), which of cancel and replay an
item offers (``controls``), API tokens and the workspace ID (``tokens``; stored by
``token_store``'s files or ``pg_tokens``) and the crash points the crash tests
select (``crash``); which ledger a home uses (``location``), the PostgreSQL schema
(``pg_schema``) and connecting and migrating (``postgres``: the only module that imports
psycopg, and only inside its functions). docs/ledger.md is the prose.

May import the core only (``state.*`` modules at the top); never ``state.crew``.
"""
