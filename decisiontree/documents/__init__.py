"""Documents become findings: FINDINGS.md entries and free-form incident write-ups.

    text = decode_document(uploaded_bytes, "incident.md")
    document = extract_document(text, "incident.md")

Pure Python. Everything a document yields is a draft for a reviewer:
`ExtractedDocument.problems` says what looked incomplete.
"""

from __future__ import annotations

from decisiontree.documents._vocab import VocabularyLike, cached, default_vocabulary
from decisiontree.documents.decoding import decode_document
from decisiontree.documents.findings_md import looks_like_findings_md, parse_findings_md
from decisiontree.documents.model import (
    MAX_DOCUMENT_BYTES,
    DocumentRejected,
    ExtractedDocument,
    ExtractedFinding,
    ExtractedFix,
    GpuMention,
    Metrics,
)
from decisiontree.documents.writeup import parse_writeup

__all__ = [
    "MAX_DOCUMENT_BYTES",
    "DocumentRejected",
    "ExtractedDocument",
    "ExtractedFinding",
    "ExtractedFix",
    "GpuMention",
    "Metrics",
    "decode_document",
    "extract_document",
]

_MAX_TEXT_CHARS = MAX_DOCUMENT_BYTES  # a decoded document is never longer than its bytes


def extract_document(
    text: str, filename: str = "", *, vocabulary: VocabularyLike | None = None
) -> ExtractedDocument:
    """Findings of a document: FINDINGS.md entries when it has them, else one write-up finding."""
    if not isinstance(text, str):
        raise DocumentRejected("document must be text; decode bytes with decode_document() first")
    if len(text) > _MAX_TEXT_CHARS:
        raise DocumentRejected(
            f"document is {len(text) / 1024 / 1024:.1f} MB of text; "
            f"the limit is {MAX_DOCUMENT_BYTES // 1024 // 1024} MB"
        )
    if not text.strip():
        raise DocumentRejected("document is empty")
    vocab = cached(vocabulary) if vocabulary is not None else default_vocabulary()
    text = text.lstrip("\ufeff")
    if looks_like_findings_md(text):
        title, findings, problems = parse_findings_md(text, vocab)
        return ExtractedDocument("findings_md", title or _name(filename), findings, problems)
    title, findings, problems = parse_writeup(text, vocab)
    return ExtractedDocument("writeup", title or _name(filename), findings, problems)


def _name(filename: str) -> str:
    return filename.rsplit("/", 1)[-1] if filename else ""
