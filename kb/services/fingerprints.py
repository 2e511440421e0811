"""Reviewers' decisions survive a fingerprint-version bump, the way error trackers do it.

A link or split decision is stored with the fingerprint and the
`FINGERPRINT_VERSION` it was computed under. When the version is bumped,
`decisiontree` computes every signature under both the current and the previous
version for a while: the matcher applies decisions stored under either, and the
first time a paste shows which current fingerprint an old one has become, the
decision is stored again under the current one. Old rows stay until the
transition is closed (PREVIOUS_FINGERPRINT_VERSION set to None).
"""

from __future__ import annotations

from collections.abc import Collection

from decisiontree.fingerprint import FINGERPRINT_VERSION, Signature
from kb.models import SignatureDecision


def carry_decisions_forward(
    signature: Signature | None, decided: Collection[str]
) -> list[SignatureDecision]:
    """Store decisions made under the previous fingerprint again under the current one.

    `decided` holds every fingerprint with a stored decision (the graph knows them),
    so a paste with nothing to migrate costs no query.
    """
    if signature is None or not signature.previous_fingerprint:
        return []
    if signature.previous_fingerprint not in decided or signature.fingerprint in decided:
        return []
    carried = []
    older = SignatureDecision.objects.filter(
        fingerprint=signature.previous_fingerprint, fingerprint_version__lt=FINGERPRINT_VERSION
    )
    for old in older:
        row, _ = SignatureDecision.objects.get_or_create(
            fingerprint=signature.fingerprint,
            finding_id=old.finding_id,
            defaults={
                "fingerprint_version": FINGERPRINT_VERSION,
                "decision": old.decision,
                "decided_by": old.decided_by,
            },
        )
        carried.append(row)
    return carried
