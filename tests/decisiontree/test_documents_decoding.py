"""Uploaded bytes become text, or a refusal that says what is wrong."""

import codecs

import pytest

from decisiontree.documents import MAX_DOCUMENT_BYTES, DocumentRejected, decode_document

TEXT = "RuntimeError: CUDA error: an illegal memory access was encountered — on 8× H100\n"


def test_it_reads_plain_utf8():
    assert decode_document(TEXT.encode()) == TEXT


def test_it_drops_a_utf8_bom():
    assert decode_document(codecs.BOM_UTF8 + TEXT.encode()) == TEXT


@pytest.mark.parametrize("encoding", ["utf-16", "utf-16-le", "utf-16-be"])
def test_it_reads_utf16_with_or_without_bom(encoding):
    assert decode_document(TEXT.encode(encoding)) == TEXT


def test_it_falls_back_to_detection_for_legacy_encodings():
    legacy = "Crash auf dem Knoten: Größe überschritten, Lösung: --mem-fraction-static 0.88\n" * 20
    assert decode_document(legacy.encode("latin-1")) == legacy


@pytest.mark.parametrize(
    ("data", "words"),
    [
        (b"\x89PNG\r\n\x1a\n" + b"\x00" * 64, "PNG image"),
        (b"PK\x03\x04" + b"\x00" * 64, "ZIP archive"),
        (b"\x1f\x8b\x08\x00" + b"\x00" * 64, "gzip"),
        (b"%PDF-1.7\n", "PDF"),
        (b"Traceback\x00\x00\x01\x02 binary junk \xff\x00", "NUL bytes"),
        (b"   \n\t ", "empty"),
    ],
)
def test_it_rejects_what_is_not_text_and_says_why(data, words):
    with pytest.raises(DocumentRejected, match=words):
        decode_document(data, "upload.bin")


def test_it_rejects_documents_over_the_size_limit():
    with pytest.raises(DocumentRejected, match="limit is 5 MB"):
        decode_document(b"a" * (MAX_DOCUMENT_BYTES + 1), "huge.log")


def test_it_rejects_text_made_of_control_characters():
    with pytest.raises(DocumentRejected, match="control characters"):
        decode_document(bytes(range(1, 9)) * 100)


def test_a_document_exactly_at_the_limit_is_read_and_one_over_it_is_refused_with_its_size():
    assert len(decode_document(b"a" * MAX_DOCUMENT_BYTES, "full.log")) == MAX_DOCUMENT_BYTES
    with pytest.raises(DocumentRejected) as refused:
        decode_document(b"a" * 5_297_406, "huge.log")  # 5.052 MB (of 1,048,576 bytes)
    assert str(refused.value) == "document 'huge.log' is 5.1 MB; the limit is 5 MB"


@pytest.mark.parametrize("encoding", ["utf-16-le", "utf-16-be"])
def test_two_letters_in_utf16_without_a_bom_are_read(encoding):
    assert decode_document("ok".encode(encoding)) == "ok"
