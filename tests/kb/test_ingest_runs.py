"""An ingest run on PostgreSQL: a bad document fails alone, an oversized file is refused
unread, and two ingests at once both finish."""

from __future__ import annotations

import gc
import multiprocessing
import os
import threading
import tracemalloc
from pathlib import Path
from typing import Any

import pytest
from django.db import connection, connections
from django.test.utils import CaptureQueriesContext

from api.models import Webhook, WebhookDelivery
from decisiontree.samples import signatures_of_sample, stored_form
from kb.models import ErrorSample, ErrorSignature, Finding, LanguageModel, SourceDocument
from kb.services import bulk
from kb.services.ingest import IngestReport, ingest_paths
from tests.services import require_services

MB = 1024 * 1024


def findings_md(tag: str, models: list[str]) -> str:
    """A FINDINGS.md whose entries name `models` in this order, each with its own error."""
    entries = [f"# Findings {tag}\n"]
    for model in models:
        entries.append(
            f"## {tag}: {model} fails to load its rope scaling\n"
            f"- Model: {model}\n- Hardware: 8x H100\n- Framework: vllm 0.11.0\n"
            "- Fix: --max-model-len 32768\n\n"
            f"```\nValueError: rope_scaling of {model} is not supported\n```\n"
        )
    return "\n".join(entries)


@pytest.fixture
def on_postgres() -> None:
    require_services()
    assert connection.vendor == "postgresql"


@pytest.mark.django_db
def test_a_path_over_the_limit_fails_alone_and_the_run_goes_on(
    on_postgres: None, vocabulary: None, tmp_path: Path
) -> None:
    """Bug: a path over 500 characters aborted the run; later files were never ingested."""
    first = tmp_path / "a" / "FINDINGS.md"
    deep = tmp_path / "b" / ("x" * 200) / ("y" * 200) / ("z" * 200) / "FINDINGS.md"
    last = tmp_path / "c" / "FINDINGS.md"
    for number, path in enumerate((first, deep, last)):
        path.parent.mkdir(parents=True)
        path.write_text(findings_md(f"run {number}", [f"org/model-{number}"]))

    report = ingest_paths([tmp_path])

    outcomes = {doc.path: (doc.action, doc.reason) for doc in report.documents}
    assert outcomes[str(first)][0] == outcomes[str(last)][0] == "created"
    action, reason = outcomes[str(deep)]
    assert action == "failed"
    assert f"the path has {len(str(deep))} characters; the limit is 500" in reason
    assert sorted(SourceDocument.objects.values_list("path", flat=True)) == [str(first), str(last)]


@pytest.mark.django_db
def test_a_file_over_the_size_limit_is_refused_before_it_is_read(
    on_postgres: None, vocabulary: None, tmp_path: Path
) -> None:
    """Bug: a 600 MB file was read whole before the size check."""
    huge = tmp_path / "a-huge.log"
    with huge.open("wb") as file:
        file.truncate(600 * MB)  # sparse: no disk, but reading it would take 600 MB
    small = tmp_path / "b" / "FINDINGS.md"
    small.parent.mkdir()
    small.write_text(findings_md("small", ["org/small"]))

    tracemalloc.start()
    try:
        report = ingest_paths([tmp_path])
        peak = tracemalloc.get_traced_memory()[1]
    finally:
        tracemalloc.stop()

    huge_outcome, small_outcome = report.documents
    assert huge_outcome.action == "failed"
    assert "is 600.0 MB; the limit is 5 MB" in huge_outcome.reason
    assert small_outcome.action == "created"
    assert peak < 60 * MB, f"the ingest held {peak / MB:.0f} MB at its peak"


@pytest.mark.django_db(transaction=True)
def test_two_ingests_at_once_both_finish(
    on_postgres: None, vocabulary: None, tmp_path: Path
) -> None:
    """Bug: two concurrent ingests ended in an IntegrityError or a deadlock.

    Both create the same new models and signatures, in opposite orders, and both
    ingest one file they share."""
    models = [f"org/shared-{n}" for n in range(12)]
    shared = findings_md("shared", models[:3])
    folders = {}
    for name, order in (("one", models), ("two", models[::-1])):
        folder = tmp_path / name
        folder.mkdir()
        for number in range(4):
            chunk = order[number * 3 : number * 3 + 3]
            (folder / f"{number}.md").write_text(findings_md(f"{name} {number}", chunk))
        (folder / "shared.md").write_text(shared)
        folders[name] = folder

    reports: dict[str, IngestReport] = {}
    errors: list[BaseException] = []
    start = threading.Barrier(2)

    def run(name: str) -> None:
        try:
            start.wait()
            reports[name] = ingest_paths([folders[name]], publish=True)
        except BaseException as error:  # reported below, with the thread's name
            errors.append(error)
        finally:
            connections.close_all()

    threads = [threading.Thread(target=run, args=(name,)) for name in folders]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join(timeout=300)

    assert errors == []
    for name, report in reports.items():
        assert report.failed == [], (name, report.failed)
    shared_outcomes = sorted(
        doc.action
        for report in reports.values()
        for doc in report.documents
        if doc.path.endswith("shared.md")
    )
    assert shared_outcomes == ["created", "skipped"]  # one content is one document
    assert SourceDocument.objects.count() == 9
    assert LanguageModel.objects.filter(name__in=models).count() == 12
    assert ErrorSignature.objects.count() == len(
        set(ErrorSignature.objects.values_list("fingerprint", flat=True))
    )
    assert Finding.objects.filter(status=Finding.Status.PUBLISHED).count() >= 24


def entries(count: int, *, edited: int | None = None) -> str:
    """A FINDINGS.md of `count` entries, each its own error; entry `edited` reworded."""
    parts = ["# Research log\n"]
    for n in range(count):
        fix = "--max-model-len 16384" if n == edited else "--max-model-len 32768"
        parts.append(
            f"## Model {n} fails to load its rope scaling\n- Model: org/model-{n}\n"
            f"- Hardware: 8x H100\n- Fix: {fix}\n\n"
            f"```\nValueError: rope_scaling of org/model-{n} is not supported\n```\n"
        )
    return "\n".join(parts)


def statements_to_ingest(path: Path) -> tuple[int, IngestReport]:
    with CaptureQueriesContext(connection) as queries:
        report = ingest_paths([path], publish=True)
    return len(queries.captured_queries), report


@pytest.mark.django_db
def test_a_long_findings_md_costs_no_more_statements_than_a_short_one(
    on_postgres: None, vocabulary: None, tmp_path: Path
) -> None:
    """Bug: 20,000 entries took 12 minutes, row by row (superlinear). Each entry now rides
    in a batch: the statements an ingest sends do not grow with the entries."""
    short, long = tmp_path / "short.md", tmp_path / "long.md"
    short.write_text(entries(20))
    long.write_text(entries(400).replace("# Research log", "# Research log, long"))

    few, _ = statements_to_ingest(short)
    many, report = statements_to_ingest(long)

    assert report.documents[0].findings_created == 400
    assert Finding.objects.filter(origin__path=str(long)).count() == 400
    assert many <= few + 5, f"{few} statements for 20 entries, {many} for 400"


@pytest.mark.django_db
def test_editing_one_entry_rewrites_that_entry_only(
    on_postgres: None, vocabulary: None, tmp_path: Path
) -> None:
    """An edited document is stored again entry by entry: the untouched ones cost nothing
    and keep what a reviewer changed; the edited one is updated."""
    path = tmp_path / "FINDINGS.md"
    path.write_text(entries(300))
    ingest_paths([path], publish=True)
    reviewed = Finding.objects.get(origin_key="model-7-fails-to-load-its-rope-scaling")
    reviewed.cause = "A reviewer's explanation."
    reviewed.save()

    path.write_text(entries(300, edited=3))
    statements, report = statements_to_ingest(path)

    assert (report.documents[0].action, report.documents[0].findings_updated) == ("updated", 1)
    edited = Finding.objects.get(origin_key="model-3-fails-to-load-its-rope-scaling")
    assert [fix.summary for fix in edited.fixes.all()] == ["--max-model-len 16384"]
    reviewed.refresh_from_db()
    assert reviewed.cause == "A reviewer's explanation."
    assert statements < 150, f"{statements} statements to store one edited entry of 300"


@pytest.mark.django_db
def test_bulk_published_entries_reach_the_webhooks(
    on_postgres: None, vocabulary: None, tmp_path: Path
) -> None:
    """Rows stored in bulk send no post_save; the webhooks still hear of each one."""
    Webhook.objects.create(name="chatops", url="http://127.0.0.1:9/", events=["finding.published"])
    path = tmp_path / "FINDINGS.md"
    path.write_text(entries(3))

    ingest_paths([path], publish=True)

    delivered = WebhookDelivery.objects.filter(event="finding.published")
    ids = sorted(delivery.payload["finding"]["id"] for delivery in delivered)
    assert ids == sorted(Finding.objects.values_list("pk", flat=True))


@pytest.mark.django_db
def test_a_row_the_database_refuses_in_bulk_fails_its_document_alone(
    on_postgres: None, vocabulary: None, tmp_path: Path
) -> None:
    """New rows go to PostgreSQL through COPY; a row it refuses there is a clear error of
    that document (nothing of it stored), and the next document is stored."""
    with connection.cursor() as cursor:  # a refusal only the database makes
        cursor.execute(
            "ALTER TABLE kb_flagsetting ADD CONSTRAINT refused_here CHECK (value <> 'refused')"
        )
    refused = tmp_path / "a" / "FINDINGS.md"
    stored = tmp_path / "b" / "FINDINGS.md"
    for path, value in ((refused, "refused"), (stored, "4")):
        path.parent.mkdir()
        path.write_text(entries(3).replace("- Hardware: 8x H100\n", f"- Flags: --tp {value}\n"))

    report = ingest_paths([tmp_path], publish=True)

    outcomes = {doc.path: (doc.action, doc.reason) for doc in report.documents}
    action, reason = outcomes[str(refused)]
    assert action == "failed"
    assert reason.startswith("could not be stored: ")
    assert 'violates check constraint "refused_here"' in reason
    assert outcomes[str(stored)] == ("created", "")
    assert list(SourceDocument.objects.values_list("path", flat=True)) == [str(stored)]
    assert Finding.objects.filter(origin__path=str(stored)).count() == 3
    assert Finding.objects.count() == 3


@pytest.mark.django_db
def test_samples_parsed_in_a_second_process_are_stored_as_parsed_here(
    on_postgres: None, vocabulary: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    """A long document's samples are parsed by a forked worker while its rows are written;
    each sample keeps the signatures this process would give it, in batches of any size."""
    contexts: list[str] = []
    real_context = multiprocessing.get_context

    def spied_context(method: str) -> Any:
        contexts.append(method)
        return real_context(method)

    monkeypatch.setattr(multiprocessing, "get_context", spied_context)
    monkeypatch.setattr(bulk, "PARALLEL_AT_LEAST", 10)
    monkeypatch.setattr(bulk, "PARSE_CHUNK", 4)
    monkeypatch.setattr(bulk, "BATCH", 7)
    monkeypatch.setattr(os, "cpu_count", lambda: 2)
    path = tmp_path / "FINDINGS.md"
    path.write_text(entries(40))

    report = ingest_paths([path], publish=True)

    assert contexts == ["fork"]
    assert report.documents[0].findings_created == 40
    samples = ErrorSample.objects.select_related("signature").order_by("pk")
    assert samples.count() == 40
    for sample in samples:
        found = signatures_of_sample(sample.text)
        assert isinstance(found, tuple)
        assert sample.parsed == stored_form(found)
        assert sample.signature is not None
        assert sample.signature.fingerprint == found[0].fingerprint
        assert list(sample.finding.signatures.all()) == [sample.signature]


@pytest.mark.django_db
def test_an_ingest_leaves_the_garbage_collector_running(
    on_postgres: None, vocabulary: None, tmp_path: Path
) -> None:
    """The collector is paused while a document is stored and its documents built, and
    running again afterwards, after a document that failed too."""
    (tmp_path / "a").mkdir()
    (tmp_path / "a" / "FINDINGS.md").write_text(entries(3))
    (tmp_path / "b.md").write_text("   \n")  # empty: refused

    report = ingest_paths([tmp_path], publish=True)

    assert [doc.action for doc in report.documents] == ["created", "failed"]
    assert gc.isenabled()
