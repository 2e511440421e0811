"""Who is asking: the client's address, trusting X-Forwarded-For only as far as
FIXGRAPH_NUM_PROXIES says there are proxies of ours in front of the server.

One function for every reader: the API throttles, the web form's throttle and the
login lockout all count per client, so they must agree on who the client is.
"""

from __future__ import annotations

from typing import Any

from django.conf import settings


def client_address(request: Any) -> str:
    """REMOTE_ADDR; behind N proxies of ours, the address the outermost of them saw.

    With FIXGRAPH_NUM_PROXIES = 0 (the default) X-Forwarded-For is ignored: anyone can
    send one, so a client could otherwise take a fresh budget with every request.
    Behind N proxies, each appends the address it saw, so the N-th entry from the
    right is the one no client can forge (as DRF reads NUM_PROXIES).
    """
    meta = request.META
    remote = str(meta.get("REMOTE_ADDR") or "")
    proxies = int(getattr(settings, "FIXGRAPH_NUM_PROXIES", 0))
    forwarded = [a.strip() for a in str(meta.get("HTTP_X_FORWARDED_FOR") or "").split(",")]
    forwarded = [a for a in forwarded if a]
    if proxies <= 0 or not forwarded:
        return remote
    return forwarded[-min(proxies, len(forwarded))]
