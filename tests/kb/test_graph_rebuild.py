"""A rebuild reads the published findings a chunk at a time and misses none of them, and
reads their own words as stored beside them (written with their search documents)."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from decisiontree import finding_words
from decisiontree.finding_words import words_from_stored
from decisiontree.terms import words_of
from kb.models import Finding
from kb.models.search import GraphWords
from kb.search.refresh import refresh_queued
from kb.services import diagnosis
from kb.services.diagnosis import diagnose, knowledge_graph
from tests.findings_md import publish

pytestmark = pytest.mark.django_db

ERRORS = (
    ("Radix cache pool", "RuntimeError: Failed to allocate the radix cache pool on every rank"),
    ("Expert router", "ValueError: expert router topk_ids out of range for fused moe kernel"),
    ("Rope scaling", "KeyError: rope_scaling type yarn_longrope missing from the model config"),
    ("Draft model", "AssertionError: draft model vocab differs from the target model vocab"),
    ("Sampler", "IndexError: sampler logits index past the padded vocabulary of the lm head"),
)


def findings_md(errors: tuple[tuple[str, str], ...]) -> str:
    entries = [
        f"## {title} fails at start-up\n- Framework: sglang\n- Fix: lower --page-size to 16\n"
        f"- Status: resolved\n\n```\n{error}\n```\n"
        for title, error in errors
    ]
    return "# Findings\n\n" + "\n".join(entries)


def ingest(path: Path, errors: tuple[tuple[str, str], ...]) -> None:
    publish(path, findings_md(errors))


@pytest.fixture(autouse=True)
def small_chunks(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.setattr(diagnosis, "REBUILD_CHUNK", 2)  # five findings: three chunks


def test_every_published_finding_is_matched_by_its_own_error(tmp_path: Path) -> None:
    call_command("load_vocabulary", verbosity=0)
    ingest(tmp_path / "FINDINGS.md", ERRORS)
    published = set(Finding.objects.values_list("id", flat=True))

    assert set(diagnosis.rebuild_graph().findings) == published
    for title, error in ERRORS:
        answer = diagnose(error)
        assert answer.match == "known", title
        assert answer.fixes[0].finding.title.startswith(title)


def test_a_diagnosis_after_the_knowledge_base_moved_answers_from_the_new_findings(
    tmp_path: Path,
) -> None:
    call_command("load_vocabulary", verbosity=0)
    ingest(tmp_path / "FINDINGS.md", ERRORS[:3])
    before = knowledge_graph()
    assert diagnose(ERRORS[4][1]).match == "none"

    ingest(tmp_path / "MORE-FINDINGS.md", ERRORS[3:])

    assert knowledge_graph() is not before
    answer = diagnose(ERRORS[4][1])
    assert answer.match == "known"
    assert answer.fixes[0].finding.title.startswith("Sampler")


def test_a_draft_between_published_findings_lends_them_nothing(tmp_path: Path) -> None:
    call_command("load_vocabulary", verbosity=0)
    ingest(tmp_path / "FINDINGS.md", ERRORS)
    ids = sorted(Finding.objects.values_list("id", flat=True))
    # Chunks of two published findings: the first is ids[0] and ids[2], the draft between.
    Finding.objects.filter(pk=ids[1]).update(status=Finding.Status.DRAFT)

    graph = diagnosis.rebuild_graph()

    assert sorted(graph.findings) == [ids[0], *ids[2:]]
    assert all(len(graph.findings[i].samples) == 1 for i in graph.findings)
    assert all(len(graph.findings[i].fixes) == 1 for i in graph.findings)
    assert diagnose(ERRORS[1][1]).match == "none"
    assert diagnose(ERRORS[2][1]).fixes[0].finding.id == ids[2]


def test_a_rebuild_reads_the_findings_own_words_as_stored_beside_them(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    call_command("load_vocabulary", verbosity=0)
    ingest(tmp_path / "FINDINGS.md", ERRORS)
    refresh_queued()

    def read_again(text: str) -> list[str]:
        raise AssertionError(f"read again at the rebuild: {text!r}")

    monkeypatch.setattr(finding_words, "words_of", read_again)
    graph = diagnosis.rebuild_graph()

    for finding_id, title in Finding.objects.values_list("id", "title"):
        assert set(words_of(title)) <= graph.index.retrieval.terms_of(finding_id)


def test_a_title_edited_before_its_search_document_was_rebuilt_is_read_as_it_is_now(
    tmp_path: Path,
) -> None:
    call_command("load_vocabulary", verbosity=0)
    ingest(tmp_path / "FINDINGS.md", ERRORS)
    refresh_queued()
    finding = Finding.objects.get(title__startswith="Sampler")
    # As raw SQL or a bulk edit would: no signal, so the search document is not queued.
    Finding.objects.filter(pk=finding.pk).update(title="Speculative decoding overruns it")

    terms = diagnosis.rebuild_graph().index.retrieval.terms_of(finding.pk)

    assert {"speculative", "overruns"} <= terms
    assert "sampler" in terms  # its sample's error still says it
    assert not {"fails", "start-up"} & terms  # the old title's own words


def test_reindex_search_rereads_the_words_kept_by_older_code(tmp_path: Path) -> None:
    call_command("load_vocabulary", verbosity=0)
    ingest(tmp_path / "FINDINGS.md", ERRORS)
    refresh_queued()
    GraphWords.objects.update(stored={"scheme": "0" * 16, "words": {}})
    first = Finding.objects.order_by("id").first()
    GraphWords.objects.filter(finding=first).update(stored={})
    GraphWords.objects.filter(finding=Finding.objects.order_by("id").last()).delete()
    out = StringIO()

    call_command("reindex_search", stdout=out)

    assert out.getvalue().strip() == f"search documents rebuilt: {len(ERRORS)}"
    kept = GraphWords.objects.values_list("stored", flat=True)
    assert len(kept) == len(ERRORS)
    assert all(words_from_stored(stored) for stored in kept)
