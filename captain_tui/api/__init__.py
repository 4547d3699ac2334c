"""``captain serve``: the work ledger over HTTP and the webhook door (FastAPI on uvicorn).

``routes`` maps requests to ``runtime.ops`` and ``state.work`` and refusal codes to status
codes; ``schemas`` are the response models, the only way a field leaves. May import
``captain_tui.runtime`` and ``state``; never the cli or the cockpit. docs/api.md is the prose.
"""
