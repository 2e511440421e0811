"""An ingest run on PostgreSQL: a bad document fails alone, an oversized file is refused
unread, and two ingests at once both finish."""

from __future__ import annotations

import threading
import tracemalloc
from pathlib import Path

import pytest
from django.db import connection, connections

from kb.models import ErrorSignature, Finding, LanguageModel, SourceDocument
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
