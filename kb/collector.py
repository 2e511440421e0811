"""Python's cyclic garbage collector, paused around work that builds many live objects."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager


@contextmanager
def collector_paused() -> Iterator[None]:
    """Pause the cyclic collector for the block (as the graph build does, see
    decisiontree.graph.build_graph). A large document's extracted findings, parsed
    samples and rows stay alive until it is stored, and every full collection walks all
    of them again: ingesting 20,000 entries ran 14 full collections and ~200 others,
    about 15 % of its CPU (bench/README.md). Reference counting still frees what the
    block drops; the few cycles it leaves are collected after it."""
    collecting = gc.isenabled()
    gc.disable()
    try:
        yield
    finally:
        if collecting:
            gc.enable()
