"""`extract_document`, the one door into the readers: what it refuses and says, what it names
a document, and that a caller's own vocabulary is the one consulted."""

from __future__ import annotations

from dataclasses import dataclass

import pytest

from decisiontree import vocabulary
from decisiontree.documents import MAX_DOCUMENT_BYTES, DocumentRejected, extract_document

ENTRY = (
    "## Graph capture runs out of memory\n"
    "- Hardware: 2x Quasar Q7\n"
    "- Framework: sglang 0.5.9\n"
    "- Error: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 3.00 GiB\n"
    "- Fix: --mem-fraction-static 0.82\n"
)


def refusal(text) -> str:
    with pytest.raises(DocumentRejected) as refused:
        extract_document(text, "notes.md")
    return str(refused.value)


def test_bytes_are_refused_with_the_way_to_decode_them():
    assert refusal(ENTRY.encode()) == (
        "document must be text; decode bytes with decode_document() first"
    )


def test_a_document_over_the_limit_is_refused_with_its_size_and_the_limit_in_megabytes():
    assert refusal("a" * (MAX_DOCUMENT_BYTES + 1)) == (
        "document is 5.0 MB of text; the limit is 5 MB"
    )


def test_an_empty_document_is_refused_as_empty():
    assert refusal(" \n\n\t") == "document is empty"


def test_a_document_without_a_title_or_a_file_name_gets_no_made_up_name():
    assert extract_document(ENTRY).title == ""
    assert extract_document(ENTRY, "team/notes/FINDINGS.md").title == "FINDINGS.md"


@dataclass(frozen=True)
class LabGpu:
    name: str
    arch: str


class LabVocabulary:
    """The shipped vocabulary, plus one GPU of a lab's own that it does not list."""

    def __init__(self) -> None:
        self.shipped = vocabulary.load()

    def gpus_in_text(self, text):
        found = list(self.shipped.gpus_in_text(text))
        if "Quasar Q7" in text:
            found.append((LabGpu("Quasar Q7", "sm_120"), 2 if "2x" in text else 1))
        return found

    def arch_of(self, text):
        return self.shipped.arch_of(text)

    def flag(self, name, framework=None):
        return self.shipped.flag(name, framework)

    def parse_launch_command(self, cmd):
        return self.shipped.parse_launch_command(cmd)

    def flags_in_text(self, text, framework=None):
        return self.shipped.flags_in_text(text, framework)

    def model_info(self, text):
        return self.shipped.model_info(text)


def test_a_callers_vocabulary_is_the_one_the_reader_consults():
    shipped = extract_document(ENTRY, "FINDINGS.md")
    lab = extract_document(ENTRY, "FINDINGS.md", vocabulary=LabVocabulary())

    assert [(gpu.name, gpu.arch) for gpu in shipped.findings[0].gpus] == [("Quasar Q7", None)]
    assert [(gpu.name, gpu.arch, gpu.count) for gpu in lab.findings[0].gpus] == [
        ("Quasar Q7", "sm_120", 2)
    ]
    assert lab.problems == ()
