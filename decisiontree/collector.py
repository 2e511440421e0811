"""Python's cyclic garbage collector, paused around work that builds many live objects."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block, for work that keeps many objects alive
    until it ends: the graph build (decisiontree.graph.build_graph), a document's
    extracted findings, parsed samples and rows until it is stored. Every full
    collection would walk all of them again: ingesting 20,000 entries ran 14 full
    collections and ~200 others, about 15 % of its CPU (bench/README.md). Reference
    counting still frees what the block drops; the few cycles it leaves are collected
    after it."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
