"""Search documents are built by the Celery task `kb.refresh_search_documents`, never
inside a search: a killed ingest leaves a backlog, a search answers from what is built
and asks for the task, and the real worker of `make test` builds the rest."""

from __future__ import annotations

from collections.abc import Callable
from pathlib import Path

import pytest

from kb.models import Finding
from kb.models.search import FindingSearchDocument, SearchRefresh
from kb.search import refresh, search
from kb.services.ingest import ingest_bytes, ingest_paths
from tests.kb.test_ingest import ENTRY
from tests.validation.conftest import celery_worker, wait_until  # noqa: F401 (fixture)

pytestmark = [
    pytest.mark.services,
    pytest.mark.real_search_worker,
    pytest.mark.django_db(transaction=True),
]
QUERY = "OutOfMemoryError"


class Killed(BaseException):
    """The ingest process dies (kill -9, OOM killer) after storing its documents."""


def found(query: str) -> list[int]:
    return [finding.pk for finding in search(query).findings]


def test_a_killed_ingest_leaves_a_backlog_the_worker_builds_and_no_search_does(
    vocabulary: None,
    tmp_path: Path,
    monkeypatch: pytest.MonkeyPatch,
    celery_worker: Callable[[str], int],  # noqa: F811
) -> None:
    (tmp_path / "FINDINGS.md").write_text(ENTRY)

    def die() -> int:
        raise Killed

    monkeypatch.setattr(refresh, "refresh_queued", die)  # the ingest's last step
    with pytest.raises(Killed):
        ingest_paths([tmp_path], publish=True)
    monkeypatch.undo()
    finding = Finding.objects.get()
    assert SearchRefresh.objects.filter(finding_id=finding.pk).exists()
    assert not FindingSearchDocument.objects.filter(finding=finding).exists()

    assert found(QUERY) == []  # the search answers from what is built ...
    assert SearchRefresh.objects.filter(finding_id=finding.pk).exists()  # ... and builds nothing
    assert not FindingSearchDocument.objects.filter(finding=finding).exists()

    celery_worker("celery")  # the search asked for the task; a worker takes it
    assert wait_until(lambda: not SearchRefresh.objects.exists(), 60)
    assert found(QUERY) == [finding.pk]


def test_a_stored_document_asks_the_worker_once_it_commits(
    vocabulary: None,
    celery_worker: Callable[[str], int],  # noqa: F811
) -> None:
    celery_worker("celery")
    outcome = ingest_bytes(ENTRY.encode(), "findings/FINDINGS.md", publish=True)
    assert outcome.action == "created"
    finding = Finding.objects.get()
    assert wait_until(lambda: FindingSearchDocument.objects.filter(finding=finding).exists(), 60)
    assert found(QUERY) == [finding.pk]
    assert not SearchRefresh.objects.exists()
