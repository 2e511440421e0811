"""The text a finding is found by, kept beside it so search never joins six tables.

One row per finding, rebuilt after every committed change to the finding or
what hangs off it (kb.services.search). On PostgreSQL `vector` holds the
weighted tsvector (GIN-indexed) and `text` carries a trigram index; on SQLite
an FTS5 table mirrors the same four fields (migration 0003).
"""

from __future__ import annotations

from typing import Any

from django.contrib.postgres.search import SearchVectorField
from django.db import models
from django.db.models.signals import m2m_changed, post_delete, post_save

from kb.models.findings import ErrorSample, Finding, FindingGpu, Fix, FlagSetting


class FindingSearchDocument(models.Model):
    """A finding's searchable text, by weight: title (A), errors (B), context (C), body (D)."""

    finding = models.OneToOneField(
        Finding, primary_key=True, on_delete=models.CASCADE, related_name="search_document"
    )
    title = models.TextField(blank=True)
    errors = models.TextField(blank=True, help_text="Signatures and verbatim error samples")
    context = models.TextField(blank=True, help_text="Cause, summary, flags, GPUs, model")
    body = models.TextField(blank=True, help_text="Body and fixes")
    text = models.TextField(blank=True, help_text="All of the above, for trigram similarity")
    vector = SearchVectorField(null=True, blank=True)
    built_at = models.DateTimeField(auto_now=True)

    class Meta:
        verbose_name = "finding search document"

    def __str__(self) -> str:
        return f"search document of finding {self.finding_id}"


def finding_id_of(instance: Any) -> int | None:
    if isinstance(instance, Finding):
        return instance.pk
    return getattr(instance, "finding_id", None)


def finding_touched(sender: type, instance: Any, **kwargs: Any) -> None:
    # Imported here: the service imports this module.
    from kb.services.search import schedule_refresh

    finding_id = finding_id_of(instance)
    if finding_id is not None:
        schedule_refresh(finding_id)


for watched in (Finding, Fix, ErrorSample, FlagSetting, FindingGpu):
    post_save.connect(finding_touched, sender=watched, dispatch_uid=f"kb-search-{watched.__name__}")
    post_delete.connect(
        finding_touched, sender=watched, dispatch_uid=f"kb-search-del-{watched.__name__}"
    )
for through in (Finding.signatures.through, Finding.gpus.through):
    m2m_changed.connect(finding_touched, sender=through, dispatch_uid=f"kb-search-m2m-{through}")
