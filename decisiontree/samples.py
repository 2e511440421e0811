"""Error samples, parsed once and stored: a cold graph build reads, not re-parses.

Parsing and fingerprinting dominate building the graph. The knowledge base
keeps each sample's signatures beside it, stamped with `scheme()`, a digest of the
parser's own source: when the parser changes, stale stored forms are ignored and
the sample is parsed again. The digest only says when to re-parse (a cache key);
what a fingerprint *means* is `FINGERPRINT_VERSION`, bumped on purpose, and
reviewers' decisions follow it (see kb/services/fingerprints.py).
"""

from __future__ import annotations

from functools import cache
from pathlib import Path
from typing import Any

from decisiontree import files_digest, fingerprint, logline, terms, traceback
from decisiontree.fingerprint import Signature, signatures_of
from decisiontree.traceback import InputRejected, parse

# The signatures of one sample, or the reason it has none.
SampleSignatures = tuple[Signature, ...] | str


@cache
def scheme() -> str:
    """A digest of the code that turns a sample into signatures."""
    return files_digest(Path(str(m.__file__)) for m in (logline, traceback, terms, fingerprint))


def signatures_of_sample(sample: str) -> SampleSignatures:
    try:
        signatures = signatures_of(parse(sample))
    except InputRejected as rejected:
        return str(rejected)
    return signatures or "no error found in sample"


def stored_form(found: SampleSignatures) -> dict[str, Any]:
    """JSON-ready form of a sample's signatures, for the knowledge base to keep."""
    if isinstance(found, str):
        return {"scheme": scheme(), "rejected": found}
    return {
        "scheme": scheme(),
        "signatures": [
            {
                "exception_type": s.exception_type,
                "template": s.template,
                "key_frames": list(s.key_frames),
                "fingerprint": s.fingerprint,
                "template_key": s.template_key,
                "terms": list(s.terms),
                "message": s.message,
                "previous_fingerprint": s.previous_fingerprint,
                "context_terms": list(s.context_terms),
                "facets": list(s.facets),
            }
            for s in found
        ],
    }


def from_stored(stored: dict[str, Any]) -> SampleSignatures | None:
    """The signatures kept by `stored_form`; None when stale or absent (parse again)."""
    if not stored or stored.get("scheme") != scheme():
        return None
    if "rejected" in stored:
        return str(stored["rejected"])
    return tuple(
        Signature(
            exception_type=s["exception_type"],
            template=s["template"],
            key_frames=tuple(s["key_frames"]),
            fingerprint=s["fingerprint"],
            template_key=s["template_key"],
            terms=tuple(s["terms"]),
            message=s.get("message", ""),
            previous_fingerprint=s.get("previous_fingerprint", ""),
            context_terms=tuple(s.get("context_terms", ())),
            facets=tuple(s.get("facets", ())),
        )
        for s in stored.get("signatures", ())
    )
