"""Bytes from an upload or a file become text, or a clear refusal."""

from __future__ import annotations

import codecs

from decisiontree.documents.model import MAX_DOCUMENT_BYTES, DocumentRejected

# Leading bytes of formats people upload by mistake; checked before any decoding.
_MAGIC: tuple[tuple[bytes, str], ...] = (
    (b"\x89PNG\r\n\x1a\n", "a PNG image"),
    (b"\xff\xd8\xff", "a JPEG image"),
    (b"GIF87a", "a GIF image"),
    (b"GIF89a", "a GIF image"),
    (b"RIFF", "a RIFF (WebP/WAV) file"),
    (b"%PDF-", "a PDF document"),
    (b"PK\x03\x04", "a ZIP archive (or .docx/.xlsx)"),
    (b"\x1f\x8b", "a gzip archive"),
    (b"BZh", "a bzip2 archive"),
    (b"\xfd7zXZ\x00", "an xz archive"),
    (b"7z\xbc\xaf\x27\x1c", "a 7z archive"),
    (b"\x28\xb5\x2f\xfd", "a zstd archive"),
    (b"\x7fELF", "an executable (ELF)"),
    (b"\xd0\xcf\x11\xe0", "an old Office document"),
)

_BOMS: tuple[tuple[bytes, str], ...] = (
    (codecs.BOM_UTF32_LE, "utf-32-le"),
    (codecs.BOM_UTF32_BE, "utf-32-be"),
    (codecs.BOM_UTF8, "utf-8"),
    (codecs.BOM_UTF16_LE, "utf-16-le"),
    (codecs.BOM_UTF16_BE, "utf-16-be"),
)

# charset-normalizer is slow on megabytes; a prefix is enough to pick the codec.
_DETECTION_PREFIX = 64 * 1024
_MAX_CONTROL_SHARE = 0.02


def decode_document(data: bytes, filename: str = "") -> str:
    """Decode an uploaded document to text; raise DocumentRejected when it is not text."""
    label = f"'{filename}' " if filename else ""
    if len(data) > MAX_DOCUMENT_BYTES:
        raise DocumentRejected(
            f"document {label}is {len(data) / 1024 / 1024:.1f} MB; "
            f"the limit is {MAX_DOCUMENT_BYTES // 1024 // 1024} MB"
        )
    if not data.strip():
        raise DocumentRejected(f"document {label}is empty")
    for magic, what in _MAGIC:
        if data.startswith(magic):
            raise DocumentRejected(f"document {label}looks like {what}, not text")
    text = _decode(data, label)
    _reject_control_characters(text, label)
    return text


def _decode(data: bytes, label: str) -> str:
    for bom, encoding in _BOMS:
        if data.startswith(bom):
            return _strict(data[len(bom) :], encoding, label)
    utf16 = _utf16_without_bom(data)
    if utf16:
        return _strict(data, utf16, label)
    if b"\x00" in data:
        raise DocumentRejected(f"document {label}is binary (it contains NUL bytes), not text")
    try:
        return data.decode("utf-8")
    except UnicodeDecodeError:
        return _mixed(data, label)


def _strict(data: bytes, encoding: str, label: str) -> str:
    try:
        return data.decode(encoding)
    except UnicodeDecodeError as exc:
        raise DocumentRejected(f"document {label}is not valid {encoding}: {exc.reason}") from None


def _utf16_without_bom(data: bytes) -> str | None:
    """UTF-16 from Windows tools often lacks a BOM: ASCII text then has NULs every other byte."""
    sample = data[:4096]
    if len(sample) < 4:
        return None
    even_nuls = sample[0::2].count(0) / len(sample[0::2])
    odd_nuls = sample[1::2].count(0) / len(sample[1::2])
    if odd_nuls > 0.4 and even_nuls < 0.05:
        return "utf-16-le"
    if even_nuls > 0.4 and odd_nuls < 0.05:
        return "utf-16-be"
    return None


def _mixed(data: bytes, label: str) -> str:
    """Logs pasted together from several machines mix encodings line by line: lines that are
    valid UTF-8 stay UTF-8, the others take the encoding detected from them."""
    lines = data.split(b"\n")
    foreign: list[bytes] = []
    for line in lines:
        try:
            line.decode("utf-8")
        except UnicodeDecodeError:
            foreign.append(line)
    encoding = _guess(b"\n".join(foreign), label)
    return "\n".join(_decode_line(line, encoding) for line in lines)


def _decode_line(line: bytes, encoding: str) -> str:
    try:
        return line.decode("utf-8")
    except UnicodeDecodeError:
        return line.decode(encoding, errors="replace")


def _guess(data: bytes, label: str) -> str:
    from charset_normalizer import from_bytes

    best = from_bytes(data[:_DETECTION_PREFIX]).best()
    if best is None or best.encoding is None:
        raise DocumentRejected(f"document {label}has an unknown text encoding")
    return best.encoding


def _reject_control_characters(text: str, label: str) -> None:
    sample = text[:_DETECTION_PREFIX]
    controls = sum(1 for ch in sample if ord(ch) < 32 and ch not in "\n\r\t\f\x1b")
    if sample and controls / len(sample) > _MAX_CONTROL_SHARE:
        raise DocumentRejected(f"document {label}is mostly control characters, not text")
