"""Who is asking: the client's address, trusting X-Forwarded-For only as far as
FIXGRAPH_NUM_PROXIES says there are proxies of ours in front of the server.

One function for every reader: the API throttles, the web form's throttle and the
login lockout all count per client, so they must agree on who the client is.
"""

from __future__ import annotations

import time
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from typing import Any

from django.conf import settings
from django.core.cache import cache


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


def count_in_window(cache: Any, key: str, duration: int) -> int:
    """One more request in this window's counter, atomically (one `incr`, so web workers
    sharing a Redis cache never both take the last place); the count, this one included."""
    cache.add(key, 0, duration + 1)
    try:
        return int(cache.incr(key))
    except ValueError:  # the key expired between add and incr: a new window
        cache.set(key, 1, duration + 1)
        return 1


PERIODS = {"s": 1, "sec": 1, "m": 60, "min": 60, "h": 3600, "hour": 3600, "d": 86400, "day": 86400}


def parse_rate(rate: str) -> tuple[int, int]:
    """ "10/min" -> (10 requests, 60 seconds), as DRF writes rates."""
    count, _, period = rate.partition("/")
    return int(count), PERIODS[period.strip().lower()]


def client_key(request: Any) -> str:
    """A logged-in user counts as themselves, anyone else as their address."""
    user = getattr(request, "user", None)
    if user is not None and user.is_authenticated:
        return f"user-{user.pk}"
    return f"addr-{client_address(request)}"


def wait_before_next(request: Any, scope: str, rate: str | None) -> float | None:
    """Spend one request of this client's budget for `scope`: None when it is within
    `rate`, else the seconds until the next window opens (for Retry-After)."""
    if not rate:
        return None
    allowed, duration = parse_rate(rate)
    now = time.time()
    window = int(now // duration)
    key = f"throttle:{scope}:{client_key(request)}:{window}"
    if count_in_window(cache, key, duration) <= allowed:
        return None
    return (window + 1) * duration - now


@contextmanager
def shared_slot(scope: str, places: int, hold_s: int = 120) -> Iterator[bool]:
    """Take one of `places` places for `scope` in the shared cache (one atomic `add`
    each); yields whether one was free. The place is given back on exit, or expires
    after `hold_s` should the worker die holding it. `places` 0: no limit."""
    if places <= 0:
        yield True
        return
    held = next(
        (key for i in range(places)
         if cache.add(key := f"slot:{scope}:{i}", uuid.uuid4().hex, hold_s)),
        None,
    )  # fmt: skip
    try:
        yield held is not None
    finally:
        if held is not None:
            cache.delete(held)
