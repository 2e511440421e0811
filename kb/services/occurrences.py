"""How often an error was met, as error trackers show it: counts, first and last seen,
a weekly series, where it happened, and what users said about each fix.

An occurrence is one stored diagnosis that was not the answer to a follow-up question
(that one refines an occurrence already counted). A finding's occurrences are the
diagnoses whose error matched it best; a fingerprint's are those with that fingerprint.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from dataclasses import dataclass, field
from datetime import datetime, timedelta

from django.db.models import Count, F, IntegerField, Max, Min, OuterRef, Q, QuerySet, Subquery
from django.db.models.functions import Coalesce
from django.utils import timezone

from kb.models import ErrorSignature, Finding, StoredDiagnosis
from kb.services import feedback

WEEKS = 12  # the sparkline's span: a quarter, as error trackers show by default
TOP_VALUES = 5  # a distribution lists this many values, then "other"
UNKNOWN = "unknown"


@dataclass(frozen=True)
class Share:
    label: str
    count: int
    percent: int


@dataclass(frozen=True)
class Occurrences:
    """The figures of one finding or one fingerprint."""

    times_seen: int
    first_seen: datetime | None
    last_seen: datetime | None
    weekly: tuple[int, ...]  # occurrences per week, oldest first, the last one this week
    week_starts: tuple[datetime, ...]
    gpus: tuple[Share, ...] = ()
    archs: tuple[Share, ...] = ()
    frameworks: tuple[Share, ...] = ()
    recorded: datetime | None = None  # when the error was first written down (its samples)


@dataclass(frozen=True)
class FeedbackCount:
    helped: int = 0
    not_helped: int = 0


@dataclass(frozen=True)
class FingerprintRow:
    fingerprint: str
    signature: ErrorSignature | None
    occurrences: Occurrences


@dataclass(frozen=True)
class ListFigures:
    """What a list of findings shows beside each one."""

    times_seen: int = 0
    last_seen: datetime | None = None
    feedback: FeedbackCount = field(default_factory=FeedbackCount)


def counted() -> QuerySet[StoredDiagnosis]:
    return StoredDiagnosis.objects.filter(refines__isnull=True)


def of_finding(finding: Finding) -> Occurrences:
    """Pastes that matched the finding; first seen is also when its error was recorded."""
    recorded = ErrorSignature.objects.filter(findings=finding).aggregate(at=Min("first_seen"))
    return figures(counted().filter(finding=finding), recorded["at"])


def of_fingerprint(fingerprint: str) -> Occurrences:
    recorded = ErrorSignature.objects.filter(fingerprint=fingerprint).first()
    rows = counted().filter(fingerprint=fingerprint)
    return figures(rows, recorded.first_seen if recorded else None)


def fingerprints_of(finding: Finding) -> list[FingerprintRow]:
    """Each fingerprint the finding is known by: its samples' and its matched pastes'."""
    signatures = {s.fingerprint: s for s in ErrorSignature.objects.filter(findings=finding)}
    pasted = (
        counted()
        .filter(finding=finding)
        .exclude(fingerprint="")
        .values_list("fingerprint", flat=True)
        .distinct()
    )
    keys = list(dict.fromkeys([*signatures, *pasted]))
    rows = [FingerprintRow(key, signatures.get(key), of_fingerprint(key)) for key in keys]
    return sorted(rows, key=lambda row: -row.occurrences.times_seen)


def figures(rows: QuerySet[StoredDiagnosis], recorded: datetime | None) -> Occurrences:
    span = rows.order_by().aggregate(n=Count("pk"), first=Min("created_at"), last=Max("created_at"))
    first_seen = min((d for d in (span["first"], recorded) if d is not None), default=None)
    starts = week_starts()
    recent = rows.filter(created_at__gte=starts[0]).values_list("created_at", flat=True)
    weekly = Counter(week_index(created, starts) for created in recent)
    facts = list(
        rows.values_list("seen_gpu", "seen_arch", "seen_framework", "seen_framework_version")
    )
    return Occurrences(
        times_seen=span["n"],
        first_seen=first_seen,
        last_seen=span["last"] or recorded,
        weekly=tuple(weekly.get(i, 0) for i in range(len(starts))),
        week_starts=starts,
        gpus=shares(gpu for gpu, _, _, _ in facts),
        archs=shares(arch for _, arch, _, _ in facts),
        frameworks=shares(framework_label(name, version) for _, _, name, version in facts),
        recorded=recorded,
    )


def framework_label(name: str, version: str) -> str:
    """A release, or the framework alone when the paste did not say which release."""
    if name and not version:
        return f"{name}, release not given"
    return f"{name} {version}".strip()


def week_starts(weeks: int = WEEKS) -> tuple[datetime, ...]:
    """Monday 00:00 of each of the last `weeks` weeks, oldest first."""
    today = timezone.localtime().replace(hour=0, minute=0, second=0, microsecond=0)
    this_monday = today - timedelta(days=today.weekday())
    return tuple(this_monday - timedelta(weeks=weeks - 1 - i) for i in range(weeks))


def week_index(moment: datetime, starts: tuple[datetime, ...]) -> int:
    return min(int((moment - starts[0]).total_seconds() // (7 * 86400)), len(starts) - 1)


def shares(values: Iterable[str]) -> tuple[Share, ...]:
    """The most common values with their share; the rest as "other"."""
    counts = Counter(value or UNKNOWN for value in values)
    total = sum(counts.values())
    if not total:
        return ()
    top = counts.most_common(TOP_VALUES)
    rest = total - sum(count for _, count in top)
    if rest:
        top.append(("other", rest))
    return tuple(Share(label, count, round(100 * count / total)) for label, count in top)


# --- what users said about fixes ---------------------------------------------------------


def feedback_counts(fix_ids: Iterable[int]) -> dict[int, FeedbackCount]:
    """“Fixed it” and “did not help” per fix: people, each once (kb.services.feedback)."""
    return {
        fix_id: FeedbackCount(yes, no)
        for fix_id, (yes, no) in feedback.votes_per_fix(fix_ids).items()
    }


# --- lists of findings ---------------------------------------------------------------------


def list_figures(finding_ids: Iterable[int]) -> dict[int, ListFigures]:
    """Times seen, last seen and the feedback on all its fixes, per finding, in two queries."""
    ids = list(finding_ids)
    seen = {
        row["finding_id"]: row
        for row in counted()
        .filter(finding_id__in=ids)
        .order_by()
        .values("finding_id")
        .annotate(n=Count("pk"), last=Max("created_at"))
    }
    said = {
        row["fix__finding_id"]: row
        for row in feedback.counted()
        .filter(fix__finding_id__in=ids)
        .order_by()
        .values("fix__finding_id")
        .annotate(yes=Count("pk", filter=Q(helped=True)), no=Count("pk", filter=Q(helped=False)))
    }
    return {
        pk: ListFigures(
            times_seen=seen.get(pk, {}).get("n", 0),
            last_seen=seen.get(pk, {}).get("last"),
            feedback=FeedbackCount(said.get(pk, {}).get("yes", 0), said.get(pk, {}).get("no", 0)),
        )
        for pk in ids
    }


def with_figures(findings: QuerySet[Finding]) -> QuerySet[Finding]:
    """Findings annotated with `times_seen`, `last_seen` and `helped_count`, to order a
    list by. None is NULL, so a cursor can resume after any row: a finding never pasted
    was last seen when it was recorded. Subqueries, so no join multiplies rows."""
    occurrences = counted().filter(finding=OuterRef("pk")).order_by()
    helped = feedback.counted().filter(fix__finding=OuterRef("pk"), helped=True).order_by()
    return findings.annotate(
        times_seen=Coalesce(
            Subquery(
                occurrences.values("finding").annotate(n=Count("pk")).values("n"),
                output_field=IntegerField(),
            ),
            0,
        ),
        last_seen=Coalesce(
            Subquery(occurrences.order_by("-created_at").values("created_at")[:1]),
            F("created_at"),
        ),
        helped_count=Coalesce(
            Subquery(
                helped.values("fix__finding").annotate(n=Count("pk")).values("n"),
                output_field=IntegerField(),
            ),
            0,
        ),
    )
