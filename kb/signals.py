"""Move the knowledge revision whenever something a diagnosis reads changes."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import m2m_changed, post_delete, post_save, pre_save
from django.dispatch import Signal

from kb.models import (
    ErrorSample,
    Finding,
    FindingGpu,
    Fix,
    FixFeedback,
    FlagSetting,
    KnowledgeRevision,
    SignatureDecision,
    ValidationRun,
)
from kb.search import queue_refresh

# Sent by a bulk load (kb.services.bulk) with `findings`: the rows it created without
# saving them one by one, so no post_save was sent for them.
findings_created = Signal()

# A published finding's parts: a change rebuilds the decision graph. A draft's do not
# (a paste turned into a draft, a reviewer's edits) until it is published, or leaves it.
PARTS = (Fix, ErrorSample)
# Runs and votes on fixes: the same graph answers with new evidence, no rebuild.
EVIDENCE = (FixFeedback, ValidationRun)


def _is_published(finding_id: int | None) -> bool:
    if finding_id is None:
        return False
    return Finding.objects.filter(pk=finding_id, status=Finding.Status.PUBLISHED).exists()


def finding_status_before(sender: type, instance: Finding, **kwargs: Any) -> None:
    if KnowledgeRevision.moved_in_this_transaction():
        instance._was_published = True  # nothing to ask: the stamp has moved already
        return
    # Read from the database, not the instance: whoever saves may have loaded it long ago.
    instance._was_published = _is_published(instance.pk)


def finding_saved(sender: type, instance: Finding, **kwargs: Any) -> None:
    was_published = getattr(instance, "_was_published", True)
    if was_published or instance.status == Finding.Status.PUBLISHED:
        # In the writer's transaction: readers see the new stamp exactly when they see it.
        KnowledgeRevision.bump_once()


def knowledge_changed(sender: type, **kwargs: Any) -> None:
    KnowledgeRevision.bump_once()


def part_changed(sender: type, instance: Fix | ErrorSample, **kwargs: Any) -> None:
    if KnowledgeRevision.moved_in_this_transaction():
        return  # an ingest saves dozens of parts: ask about their finding once
    if _is_published(instance.finding_id):
        KnowledgeRevision.bump_once()


def signatures_changed(sender: type, instance: Any, **kwargs: Any) -> None:
    if not isinstance(instance, Finding) or _is_published(instance.pk):
        KnowledgeRevision.bump_once()


def evidence_changed(sender: type, **kwargs: Any) -> None:
    KnowledgeRevision.bump_evidence_once()


pre_save.connect(finding_status_before, sender=Finding, dispatch_uid="kb-rev-pre-Finding")
post_save.connect(finding_saved, sender=Finding, dispatch_uid="kb-rev-save-Finding")
post_delete.connect(knowledge_changed, sender=Finding, dispatch_uid="kb-rev-delete-Finding")
post_save.connect(
    knowledge_changed, sender=SignatureDecision, dispatch_uid="kb-rev-save-SignatureDecision"
)
post_delete.connect(
    knowledge_changed, sender=SignatureDecision, dispatch_uid="kb-rev-delete-SignatureDecision"
)
for model in PARTS:
    post_save.connect(part_changed, sender=model, dispatch_uid=f"kb-rev-save-{model.__name__}")
    post_delete.connect(part_changed, sender=model, dispatch_uid=f"kb-rev-delete-{model.__name__}")
for model in EVIDENCE:
    post_save.connect(
        evidence_changed, sender=model, dispatch_uid=f"kb-evidence-save-{model.__name__}"
    )
    post_delete.connect(
        evidence_changed, sender=model, dispatch_uid=f"kb-evidence-delete-{model.__name__}"
    )
m2m_changed.connect(
    signatures_changed, sender=Finding.signatures.through, dispatch_uid="kb-rev-m2m-signatures"
)


# --- the search documents: what a finding is found by -------------------------------

SEARCHED = (Finding, Fix, ErrorSample, FlagSetting, FindingGpu)


def finding_touched(sender: type, instance: Any, **kwargs: Any) -> None:
    finding_id = instance.pk if isinstance(instance, Finding) else instance.finding_id
    if finding_id is not None:
        queue_refresh(finding_id)


for model in SEARCHED:
    post_save.connect(finding_touched, sender=model, dispatch_uid=f"kb-search-{model.__name__}")
    post_delete.connect(
        finding_touched, sender=model, dispatch_uid=f"kb-search-del-{model.__name__}"
    )
for through in (Finding.signatures.through, Finding.gpus.through):
    m2m_changed.connect(finding_touched, sender=through, dispatch_uid=f"kb-search-m2m-{through}")
