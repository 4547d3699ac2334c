"""The limits ``captain serve`` holds every client to (docs/api.md, *Limits*).

Plain numbers, importable without FastAPI, so ``captain serve --help`` can name them.
"""

MAX_CONNECTIONS = 512  # open at once; past it, the connection owing us bytes longest is closed
HEAD_TIMEOUT = 10.0  # seconds to send a request's head, from connecting or the last answer
BODY_TIMEOUT = 30.0  # seconds to send a request's body, from the end of its head
KEEP_ALIVE = 5  # seconds an idle keep-alive connection stays open (uvicorn's timer)
HEAD_BYTES = 16 * 1024  # a request head: request line and headers
API_BODY_BYTES = 64 * 1024  # a body on /api (the webhook door's is deliveries.MAX_BODY_BYTES)
LINGER_SECONDS = 2.0  # after answering early, how long to drain a body still arriving
LINGER_BYTES = 8 * 1024 * 1024  # and how much of it, at most, before closing
READ_BYTES = 16 * 1024  # the most read off one socket at a time
# bodies over SMALL_BODY read before their sender is authenticated (the webhook door: the
# signature covers the body), at once; past it a new one waits, or makes room by closing
# one stalled for STALL_SECONDS. A body up to SMALL_BODY needs no place.
UNAUTHENTICATED_BODIES = 8
SMALL_BODY = 64 * 1024
STALL_SECONDS = 0.5
FD_SPARE = 128  # descriptors kept for the store, the log and the listening socket
