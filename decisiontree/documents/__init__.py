"""Documents become findings: FINDINGS.md entries and free-form incident write-ups.

    text = decode_document(uploaded_bytes, "incident.md")
    document = extract_document(text, "incident.md")

Pure Python. Everything a document yields is a draft for a reviewer:
`ExtractedDocument.problems` says what looked incomplete.
"""

from __future__ import annotations

from functools import cache
from pathlib import Path

from decisiontree import files_digest
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
    "reader_scheme",
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


# The modules outside this package that reading a document runs (the scrub before it
# included); tests/decisiontree/test_reader_scheme.py fails when one is missing.
_READER_MODULES = (
    "__init__",
    "conditions",
    "flag_values",
    "flags",
    "gpu_memory",
    "launch",
    "logline",
    "pod_spec",
    "records",
    "scrub",
    "server_env",
    "traceback",
    "versions",
    "vocabulary",
)


def reader_files() -> list[Path]:
    """The code and data that turn a stored document's bytes into findings."""
    package = Path(__file__).resolve().parent
    root = package.parent
    code = sorted(package.glob("*.py")) + [root / f"{name}.py" for name in _READER_MODULES]
    data = sorted(p for d in (package / "data", root / "data") for p in d.iterdir() if p.is_file())
    return code + data


@cache
def reader_scheme() -> str:
    """A digest of `reader_files()`. Stored with each document: a document read by other
    code is read again by the next ingest, though its bytes are the same (an unchanged file
    would otherwise keep what an older release made of it)."""
    return files_digest(reader_files())
