"""The knowledge base as FINDINGS.md: what `manage.py ingest` reads, written back.

Findings made or edited on the web (drafts from pastes, reviewers' causes and fixes,
pastes learned from use) then live in the team's repository too, and move from one
FixGraph to another through the ingest every instance already has.
"""

from __future__ import annotations

from collections.abc import Iterable, Iterator

from django.db.models import Prefetch, QuerySet

from decisiontree import conditions
from decisiontree.documents import ExtractedFinding, default_vocabulary
from decisiontree.documents.changes import changes_in
from decisiontree.documents.findings_md_writer import findings_md_parts
from decisiontree.documents.model import ExtractedFix, GpuMention, Metrics
from decisiontree.records import Change, ChangeAction, Outcome
from decisiontree.server_env import runnable_changes
from kb.models import ErrorSample, Finding, FindingGpu, Fix
from kb.services.diagnosis import change_of

STATUSES = {
    "published": (Finding.Status.PUBLISHED,),
    "drafts": (Finding.Status.DRAFT,),
    "all": tuple(Finding.Status),
}


# Findings read per query: their rows and links at a time, never the whole knowledge base.
CHUNK = 200


def export_findings(status: str = "published", title: str = "Findings") -> str:
    """Every finding of `status` ("published", "drafts" or "all"), oldest first."""
    return "".join(export_parts(status, title))


def export_parts(status: str = "published", title: str = "Findings") -> Iterator[str]:
    """The same text a finding at a time, for a file or a streamed download."""
    return findings_md_parts(extracted(findings_in_chunks(status)), title)


def findings_in_chunks(status: str) -> Iterator[Finding]:
    """The findings of `status`, oldest first, CHUNK at a time with their links: only their
    ids are read whole (SQLite hands an iterator() all its rows at once)."""
    ids = list(
        Finding.objects.filter(status__in=STATUSES[status])
        .order_by("created_at", "pk")
        .values_list("pk", flat=True)
    )
    for start in range(0, len(ids), CHUNK):
        chunk = ids[start : start + CHUNK]
        found = {finding.pk: finding for finding in with_links(chunk)}
        for pk in chunk:
            finding = found.pop(pk, None)
            if finding is not None:  # deleted meanwhile: left out
                yield finding
                # Prefetched rows point back at their finding: a cycle only a full garbage
                # collection frees, and the export grew with it (bench/export_speed.py).
                finding._prefetched_objects_cache.clear()


def with_links(ids: list[int]) -> QuerySet[Finding]:
    return (
        Finding.objects.filter(pk__in=ids)
        .select_related("model", "framework")
        .prefetch_related(
            Prefetch(
                "findinggpu_set", FindingGpu.objects.select_related("hardware").order_by("id")
            ),
            Prefetch("fixes", Fix.objects.order_by("position", "pk")),
            # Only the text: a sample's stored parse is many times its size.
            Prefetch(
                "samples", ErrorSample.objects.only("pk", "finding_id", "text").order_by("pk")
            ),
            "libraries",
            "flag_settings",
        )
    )


def extracted(findings: Iterable[Finding]) -> Iterator[ExtractedFinding]:
    for finding in findings:
        yield as_extracted(finding)


def as_extracted(finding: Finding) -> ExtractedFinding:
    """The finding as the FINDINGS.md reader would have returned it."""
    framework = finding.framework.name if finding.framework else None
    before, _, after = finding.metric_note.partition(" → ")
    if finding.after_value is not None and finding.before_value is None and not after:
        before, after = "", before  # one figure, written after the change
    return ExtractedFinding(
        title=finding.title,
        summary=finding.summary,
        kind=finding.kind,
        status=finding.resolution,
        gpus=tuple(
            GpuMention(row.hardware.name, row.hardware.arch or None, row.count)
            for row in finding.findinggpu_set.all()
        ),
        model=finding.model.name if finding.model else None,
        model_arch=(finding.model.arch or None) if finding.model else None,
        quantization=(finding.model.quantization or None) if finding.model else None,
        framework=framework,
        framework_version=(finding.framework.version or None) if finding.framework else None,
        versions={release.name: release.version for release in finding.libraries.all()},
        flags=tuple(
            (setting.name, setting.value or None)
            for setting in sorted(finding.flag_settings.all(), key=lambda s: s.pk)
        ),
        samples=tuple(sample.text for sample in finding.samples.all()),
        cause=finding.cause,
        conditions=tuple(conditions.from_stored(c) for c in finding.conditions or ()),
        fixes=tuple(as_fix(fix, framework) for fix in finding.fixes.all()),
        metrics=Metrics(
            throughput_tok_s=finding.throughput_tok_s,
            ttft_ms=finding.ttft_ms,
            itl_ms=finding.itl_ms,
            before=before or None,
            after=after or None,
        ),
        works_command=finding.works_command or None,
        body=finding.body,
        extra=dict(finding.extra or {}),
    )


def as_fix(fix: Fix, framework: str | None) -> ExtractedFix:
    """The fix as a line: the words it was read from, while they still say its changes
    (a reviewer may have edited them since); else its changes, else its summary."""
    stored = tuple(change_of(raw) for raw in fix.changes or ())
    outcome = Outcome(fix.outcome)
    structured = _structured(stored)
    if fix.passage and _structured(_read_from(fix.passage, framework)) == structured:
        return ExtractedFix(fix.passage, stored, outcome)
    text = " ".join(_written(c) for c in structured) if structured else fix.summary
    return ExtractedFix(text, stored, outcome)


def _read_from(text: str, framework: str | None) -> tuple[Change, ...]:
    """The changes ingest stores for a fix written as `text`."""
    return runnable_changes(changes_in(text, default_vocabulary(), framework))


def _structured(changes: tuple[Change, ...]) -> tuple[Change, ...]:
    return tuple(c for c in changes if c.action is not ChangeAction.OTHER)


def _written(change: Change) -> str:
    """A change as docs/findings-format.md says to write it."""
    if change.action is ChangeAction.PIN_VERSION:
        return f"pin {change.describe()}"
    return change.describe()
