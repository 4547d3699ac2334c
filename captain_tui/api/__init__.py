"""``captain serve``: the work ledger over HTTP and the webhook door (FastAPI on uvicorn).

``endpoints`` maps requests to ``usecases`` and ``state.work``; ``refusals`` maps refusal
codes to status codes; ``signatures`` judges the door's two signature schemes; ``intake``
(request bodies and heads) and ``doorman`` (connections) bound what a client may send and
hold; ``server`` runs it on uvicorn with those limits (``limits``); ``schemas`` are the
response models, the only way a field leaves. May import ``captain_tui.runtime`` and
``state``; never the cli or the cockpit. docs/api.md is the prose.
"""
