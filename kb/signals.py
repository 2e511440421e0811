"""Move the knowledge revision whenever something a diagnosis reads changes."""

from __future__ import annotations

from typing import Any

from django.db.models.signals import m2m_changed, post_delete, post_save

from kb.models import (
    ErrorSample,
    Finding,
    Fix,
    FixFeedback,
    KnowledgeRevision,
    SignatureDecision,
    ValidationRun,
)

WATCHED = (Finding, Fix, ErrorSample, FixFeedback, SignatureDecision, ValidationRun)


def knowledge_changed(sender: type, **kwargs: Any) -> None:
    # In the writer's transaction: readers see the new stamp exactly when they see the change.
    KnowledgeRevision.bump()


for model in WATCHED:
    post_save.connect(knowledge_changed, sender=model, dispatch_uid=f"kb-rev-save-{model.__name__}")
    post_delete.connect(
        knowledge_changed, sender=model, dispatch_uid=f"kb-rev-delete-{model.__name__}"
    )
m2m_changed.connect(
    knowledge_changed, sender=Finding.signatures.through, dispatch_uid="kb-rev-m2m-signatures"
)
