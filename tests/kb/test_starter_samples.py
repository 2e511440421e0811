"""Every error text the common-errors starter entries ship, pasted alone, is answered by
its own entry.

Those entries are written for the messages their samples show; a later entry whose words
overlap (two checks of one function, a sibling message) must not take them over. A finding
from an incident (knowledge/FINDINGS.md) may come first: the starter says it outranks
them. A match on words alone, with the entry's setup unknown, is "similar" by design.
"""

from __future__ import annotations

import pytest

from decisiontree.answer import Verdict
from decisiontree.documents._vocab import default_vocabulary
from decisiontree.documents.findings_md import parse_findings_md
from kb.services.diagnosis import diagnose
from tests.conftest import STARTER

pytestmark = pytest.mark.django_db


def entries(name: str) -> tuple[tuple[str, tuple[str, ...]], ...]:
    text = (STARTER / name).read_text(encoding="utf-8")
    _, findings, _ = parse_findings_md(text, default_vocabulary())
    return tuple((finding.title, finding.samples) for finding in findings)


def test_each_common_error_sample_gets_its_own_entry_first(starter_kb: None) -> None:
    incidents = {title for title, _ in entries("FINDINGS.md")}
    common = entries("COMMON-ERRORS.md")
    taken_over = []
    for title, samples in common:
        for sample in samples:
            result = diagnose(sample)
            first = result.fixes[0].finding.title if result.fixes else "(no fix)"
            answered = result.verdict in (Verdict.KNOWN, Verdict.SIMILAR)
            if not answered or first not in {title, *incidents}:
                taken_over.append((title, result.verdict.value, first))
    assert sum(len(samples) for _, samples in common) >= 40
    assert taken_over == [], "\n".join(map(str, taken_over))
