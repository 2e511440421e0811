"""What a reviewer does with a draft besides editing it: reject it, merge it into the finding
it repeats, move one attempt to the finding of the symptom it was tried against, and see
where in the source each extracted field was read.

Every write goes through model `save()`, so django-simple-history records who did it.
"""

from __future__ import annotations

import re
from dataclasses import dataclass

from django.db import transaction

from kb.models import ErrorSample, Finding, Fix


class ReviewRefused(ValueError):
    """The action does not apply here; str(e) says why, in words for the reviewer."""


@transaction.atomic
def reject_draft(finding: Finding, reason: str = "") -> None:
    """The draft is retired: it leaves the queue and never takes part in diagnosis."""
    if finding.status != Finding.Status.DRAFT:
        raise ReviewRefused(f"finding #{finding.pk} is {finding.status}, not a draft")
    finding.status = Finding.Status.RETIRED
    finding.extra = {**(finding.extra or {}), "rejected": reason.strip() or "rejected in review"}
    finding.save()


@transaction.atomic
def merge_draft(draft: Finding, target: Finding) -> Finding:
    """The draft's samples, attempts and sources join `target`, which keeps its own status;
    the draft is retired and says where it went."""
    if draft.status != Finding.Status.DRAFT:
        raise ReviewRefused(f"finding #{draft.pk} is {draft.status}; only a draft is merged")
    _check_target(draft, target)
    known = set(target.samples.values_list("text", flat=True))
    for sample in draft.samples.all():
        if sample.text in known:
            sample.delete()
        else:
            ErrorSample.objects.filter(pk=sample.pk).update(finding=target)
    for fix in draft.fixes.order_by("position", "id"):
        _append(fix, target)
    target.sources.add(*draft.sources.all())
    target.signatures.add(*draft.signatures.all())
    target.save(update_fields=["updated_at"])
    draft.status = Finding.Status.RETIRED
    draft.extra = {**(draft.extra or {}), "merged_into": target.pk}
    draft.save()
    return target


@transaction.atomic
def move_fix(fix: Fix, target: Finding) -> None:
    """An attempt tried against another symptom goes to that symptom's finding, last."""
    _check_target(fix.finding, target)
    _append(fix, target)


def repeated_findings(drafts: list[Finding]) -> dict[int, Finding]:
    """draft id -> the published finding it looks like (ingestion notes it in `extra`)."""
    wanted = {d.pk: int(d.extra["looks_like"]) for d in drafts if _looks_like(d.extra)}
    found = Finding.objects.filter(pk__in=set(wanted.values())).exclude(
        status=Finding.Status.RETIRED
    )
    by_pk = {finding.pk: finding for finding in found}
    return {draft: by_pk[target] for draft, target in wanted.items() if target in by_pk}


def _looks_like(extra: object) -> bool:
    return isinstance(extra, dict) and str(extra.get("looks_like", "")).isdigit()


def _check_target(finding: Finding, target: Finding) -> None:
    if target.pk == finding.pk:
        raise ReviewRefused(f"finding #{target.pk} is this finding")
    if target.status == Finding.Status.RETIRED:
        raise ReviewRefused(f"finding #{target.pk} is retired")


def _append(fix: Fix, target: Finding) -> None:
    last = target.fixes.order_by("-position").values_list("position", flat=True).first()
    fix.finding = target
    fix.position = 0 if last is None else last + 1
    fix.save()


# -- where each field was read ------------------------------------------------------------


@dataclass(frozen=True)
class Segment:
    """A piece of the source text; `anchor` is set where an extracted field was read."""

    text: str
    anchor: str = ""
    label: str = ""


@dataclass(frozen=True)
class _Passage:
    anchor: str
    label: str
    text: str


def source_segments(finding: Finding) -> list[Segment]:
    """The finding's own source document, cut so that the passages of its fixes, its
    samples and its cause can be highlighted (each once, first occurrence, no overlaps)."""
    source = finding.origin
    if source is None:
        return []
    content = source.content
    spans = []
    for passage in passages_of(finding):
        found = _find(passage.text, content)
        if found is not None:
            spans.append((*found, passage))
    segments: list[Segment] = []
    at = 0
    for start, end, passage in sorted(spans, key=lambda span: span[0]):
        if start < at:
            continue  # overlaps a passage already marked
        segments.append(Segment(content[at:start]))
        segments.append(Segment(content[start:end], passage.anchor, passage.label))
        at = end
    segments.append(Segment(content[at:]))
    return [segment for segment in segments if segment.text]


def passages_of(finding: Finding) -> list[_Passage]:
    found = [
        _Passage(f"passage-fix-{fix.pk}", f"fix: {fix.summary}", fix.passage)
        for fix in finding.fixes.all()
        if fix.passage and fix.source_id in (None, finding.origin_id)
    ]
    found += [
        _Passage(f"passage-sample-{sample.pk}", "error sample", sample.text)
        for sample in finding.samples.all()
        if sample.source_id in (None, finding.origin_id)
    ]
    if finding.cause:
        found.append(_Passage("passage-cause", "cause", finding.cause))
    return found


_MARKUP = r"[\s*_`>#|-]*"  # what extraction drops between words: spaces, emphasis, quotes


def _find(passage: str, content: str) -> tuple[int, int] | None:
    """Where `passage` stands in `content`, however the extraction re-spaced it."""
    words = passage.split()[:60]
    if not words:
        return None
    pattern = _MARKUP.join(re.escape(word.strip("*_`")) or _MARKUP for word in words)
    match = re.search(pattern, content)
    return (match.start(), match.end()) if match else None
