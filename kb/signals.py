"""Move the knowledge revision whenever something a diagnosis reads changes."""

from __future__ import annotations

from typing import Any

from django.db import connection, transaction
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


def bump_revision() -> None:
    KnowledgeRevision.bump()


def knowledge_changed(sender: type, **kwargs: Any) -> None:
    # After commit, so a reader never rebuilds from a half-written change; once
    # per transaction, so ingesting a document does not bump it fifty times.
    if any(entry[1] is bump_revision for entry in connection.run_on_commit):
        return
    transaction.on_commit(bump_revision)


for model in WATCHED:
    post_save.connect(knowledge_changed, sender=model, dispatch_uid=f"kb-rev-save-{model.__name__}")
    post_delete.connect(
        knowledge_changed, sender=model, dispatch_uid=f"kb-rev-delete-{model.__name__}"
    )
m2m_changed.connect(
    knowledge_changed, sender=Finding.signatures.through, dispatch_uid="kb-rev-m2m-signatures"
)
