"""Move the knowledge revision whenever something a diagnosis reads changes."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import m2m_changed, post_delete, post_save
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

WATCHED = (Finding, Fix, ErrorSample, FixFeedback, SignatureDecision, ValidationRun)


def knowledge_changed(sender: type, **kwargs: Any) -> None:
    # In the writer's transaction: readers see the new stamp exactly when they see the change.
    KnowledgeRevision.bump_once()


for model in WATCHED:
    post_save.connect(knowledge_changed, sender=model, dispatch_uid=f"kb-rev-save-{model.__name__}")
    post_delete.connect(
        knowledge_changed, sender=model, dispatch_uid=f"kb-rev-delete-{model.__name__}"
    )
m2m_changed.connect(
    knowledge_changed, sender=Finding.signatures.through, dispatch_uid="kb-rev-m2m-signatures"
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
