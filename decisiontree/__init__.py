"""FixGraph's domain logic: traceback parsing, fingerprints, the decision graph, diagnosis.

Plain Python. Nothing in this package imports Django, so it can be tested and
benchmarked on its own; `kb.services` translates ORM rows into these types.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from pathlib import Path


def files_digest(paths: Iterable[Path]) -> str:
    """A short digest of files' contents, stored beside what the code in them computed
    (a sample's signatures, a document's findings): when it differs, that is computed anew."""
    digest = hashlib.sha256()
    for path in paths:
        digest.update(path.read_bytes())
    return digest.hexdigest()[:16]
