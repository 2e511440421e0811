"""Diagnosis over the published knowledge base, and what users tell us back.

Translates ORM rows into the plain records of `decisiontree` and keeps one
decision graph per process: rebuilt when the published findings move, given the
new evidence (no rebuild) when only runs and votes do.
"""

from __future__ import annotations

import threading
from collections import Counter
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.core.exceptions import PermissionDenied
from django.db import transaction

from decisiontree import conditions, launch_check
from decisiontree.answer import Diagnosis
from decisiontree.context import Context, build_context
from decisiontree.diagnose import diagnose as diagnose_with_graph
from decisiontree.finding_words import words_from_stored
from decisiontree.fingerprint import (
    FINGERPRINT_VERSION,
    PastedError,
    quoted_error,
    signatures_of,
)
from decisiontree.gpu_memory import MemoryReading
from decisiontree.graph import REBUILD_CHUNK, KnowledgeGraph, build_graph
from decisiontree.launch_check import LaunchCheck
from decisiontree.model_weights import weights_reading
from decisiontree.records import (
    Change,
    ChangeAction,
    Condition,
    Evidence,
    FindingRecord,
    FixRecord,
    Outcome,
    SourceRef,
)
from decisiontree.samples import SampleSignatures, from_stored
from decisiontree.setup import gpu_bytes
from decisiontree.traceback import InputRejected, parse
from decisiontree.vocabulary import load as load_vocabulary
from kb.models import (
    ErrorSample,
    Finding,
    Fix,
    KnowledgeRevision,
    SignatureDecision,
    StoredDiagnosis,
    ValidationRun,
)
from kb.services.feedback import votes_per_fix
from kb.services.fingerprints import carry_decisions_forward
from kb.services.records import link_samples


@dataclass(frozen=True)
class CachedGraph:
    revision: str
    evidence: str
    graph: KnowledgeGraph


_cache: CachedGraph | None = None
_lock = threading.Lock()


def knowledge_graph() -> KnowledgeGraph:
    """The decision graph of the published findings, rebuilt only when they changed."""
    global _cache
    stamps = KnowledgeRevision.stamps()
    cached = _cache
    if cached is not None and (cached.revision, cached.evidence) == stamps:
        return cached.graph
    with _lock:
        # Read again: the findings may have moved on while this caller waited for a rebuild.
        revision, evidence = KnowledgeRevision.stamps()
        if _cache is None or _cache.revision != revision:
            # Every caller that sees the new revision waits on the lock for the new graph
            # (as it always did), so nobody reads the old one from here on: let it go
            # before building, so that one graph is held at the peak, not two.
            _cache = None
            _cache = CachedGraph(revision, evidence, rebuild_graph())
        elif _cache.evidence != evidence:
            # A vote or a finished run: two queries and a new mapping, not a rebuild.
            _cache = CachedGraph(revision, evidence, _cache.graph.with_evidence(fix_evidence()))
        return _cache.graph


def rebuild_graph() -> KnowledgeGraph:
    """Build from the published findings and the signatures stored with their samples at
    ingest (only samples stored by an older parser are parsed again)."""
    signatures: dict[str, SampleSignatures] = {}
    words: dict[str, Sequence[str]] = {}
    return build_graph(published_records(signatures, words), cache=signatures, words=words)


def published_records(
    signatures: dict[str, SampleSignatures], words: dict[str, Sequence[str]]
) -> Iterator[FindingRecord]:
    """The published findings' records, in id order, read `REBUILD_CHUNK` at a time.

    Before each chunk is yielded, `signatures` holds the stored signatures of that chunk's
    samples and `words` its findings' own words as stored beside them (and
    no others'), for `build_graph`, which reads them as it takes each record.
    Rows are read as plain values, not model instances: at 100k findings making and
    prefetching half a million instances took longer than the build itself.
    """
    evidence = fix_evidence()
    decisions = signature_decisions()
    published = Finding.objects.filter(status=Finding.Status.PUBLISHED).order_by("id")
    columns = (
        "id",
        "title",
        "kind",
        "cause",
        "summary",
        "conditions",
        "graph_words__stored",
    )
    last = 0
    while chunk := list(published.filter(id__gt=last).values_list(*columns)[:REBUILD_CHUNK]):
        last = chunk[-1][0]
        parts = ChunkParts.read(chunk[0][0], last, evidence, signatures)
        words.clear()
        for *_, stored_words in chunk:
            words.update(words_from_stored(stored_words))
        for finding_id, title, kind, cause, summary, stored_conditions, _ in chunk:
            yield FindingRecord(
                id=finding_id,
                title=title,
                kind=kind,
                cause=cause,
                summary=summary,
                samples=tuple(parts.samples.get(finding_id, ())),
                conditions=tuple(condition_of(c) for c in stored_conditions or ()),
                fixes=tuple(parts.fixes.get(finding_id, ())),
                sources=tuple(parts.sources.get(finding_id, ())),
                linked_fingerprints=tuple(decisions.get((finding_id, "link"), ())),
                split_fingerprints=tuple(decisions.get((finding_id, "split"), ())),
            )


@dataclass
class ChunkParts:
    """What the records of a chunk of findings hold besides the finding's own row."""

    samples: dict[int, list[str]]
    fixes: dict[int, list[FixRecord]]
    sources: dict[int, list[SourceRef]]

    @classmethod
    def read(
        cls,
        first: int,
        last: int,
        evidence: dict[int, Evidence],
        signatures: dict[str, SampleSignatures],
    ) -> ChunkParts:
        """Three queries over the findings of ids `first` to `last` (the chunk's, and any
        draft between them, which the caller skips: a range is cheaper to ask for than
        2,000 ids); `signatures` is refilled with these samples' stored ones."""
        parts = cls({}, {}, {})
        signatures.clear()
        between = {"finding_id__gte": first, "finding_id__lte": last}
        samples = ErrorSample.objects.filter(**between).order_by("id")
        for finding_id, text, parsed in samples.values_list("finding_id", "text", "parsed"):
            parts.samples.setdefault(finding_id, []).append(text)
            stored = from_stored(parsed)
            if stored is not None:
                signatures[text] = stored
        fixes = Fix.objects.filter(**between).order_by("position", "id")
        columns = ("id", "finding_id", "summary", "changes", "outcome")
        for fix_id, finding_id, summary, changes, outcome in fixes.values_list(*columns):
            fix = fix_record(fix_id, summary, changes, outcome, evidence.get(fix_id))
            parts.fixes.setdefault(finding_id, []).append(fix)
        # In the order `finding.sources.all()` gives (SourceDocument's own: newest first).
        links = Finding.sources.through.objects.filter(**between)
        links = links.order_by("-sourcedocument__updated_at")
        columns = ("finding_id", "sourcedocument_id", "sourcedocument__title")
        for finding_id, document_id, title in links.values_list(*columns):
            parts.sources.setdefault(finding_id, []).append(SourceRef(document_id, title))
        return parts


@dataclass(frozen=True)
class Given:
    """What the user typed beside the paste (form fields, API and Slack options)."""

    launch_command: str | None = None
    gpu: str | None = None
    model: str | None = None
    framework: str | None = None
    framework_version: str | None = None

    def context(self, text: str) -> Context:
        return build_context(
            text,
            launch_command=self.launch_command,
            gpu=self.gpu,
            model=self.model,
            framework=self.framework,
            framework_version=self.framework_version,
        )


def diagnose(
    text: str,
    *,
    launch_command: str | None = None,
    gpu: str | None = None,
    model: str | None = None,
    framework: str | None = None,
    framework_version: str | None = None,
    answers: dict[str, str] | None = None,
) -> Diagnosis:
    """Ranked fixes for a pasted error, re-ranked on `answers` to its questions.

    Raises decisiontree's InputRejected on bad input, KeyError for an answer about a key
    no question asks.
    """
    context = Given(launch_command, gpu, model, framework, framework_version).context(text)
    for key, value in (answers or {}).items():
        context = context.with_answer(key, value)
    graph = knowledge_graph()
    result = diagnose_with_graph(text, context, graph)
    carry_decisions_forward(result.signature, graph.index.decided())
    return result


def check_launch(
    launch_command: str,
    *,
    gpu: str | None = None,
    model: str | None = None,
    framework: str | None = None,
    framework_version: str | None = None,
    setup: str = "",
) -> LaunchCheck:
    """The known issues a launch meets before it runs (`decisiontree.launch_check`).
    `setup`: words about where it runs ("on 8x H100"), read as a paste is."""
    context = Given(launch_command, gpu, model, framework, framework_version).context(setup)
    return launch_check.check_launch(context, knowledge_graph(), load_vocabulary())


def launch_weights(
    launch_command: str,
    *,
    gpu: str | None = None,
    framework: str | None = None,
    framework_version: str | None = None,
) -> MemoryReading | None:
    """Whether a launch's weights fit each GPU's share (`decisiontree.model_weights`),
    without the rest of a launch check: the runbook says it of each working launch."""
    context = Given(launch_command, gpu, None, framework, framework_version).context("")
    vocabulary = load_vocabulary()
    return weights_reading(context, vocabulary, gpu_bytes(context, vocabulary))


def start_finding_from_paste(
    text: str,
    *,
    user: AbstractBaseUser | AnonymousUser | None,
    given: Given | None = None,
    started_from: StoredDiagnosis | None = None,
) -> Finding:
    """A draft finding with the paste as its sample, waiting in the review queue.

    Drafts are never anonymous: only a signed-in user starts one, and the
    history records who. `given`: what the user typed beside the paste; `started_from`:
    the stored diagnosis of the paste, which the reviewer opens. Raises InputRejected for
    a paste that cannot be read.
    """
    if user is None or not user.is_authenticated:
        raise PermissionDenied("Sign in to start a finding: drafts carry their author.")
    signatures = signatures_of(parse(text))
    context = (given or Given()).context(text)
    # The error as the user wrote it (the signature's template reads `<num>` for 64).
    named = signatures[0].exception_type if signatures else None
    title = next(iter(pasted_error(text, named).lines), first_line(text))
    with transaction.atomic():
        finding = Finding.objects.create(
            title=title[:300],
            status=Finding.Status.DRAFT,
            conditions=[conditions.as_dict(c) for c in paste_conditions(context)],
            body=f"Started from a pasted error by {user.get_username()}; no known match.",
            problems=["Started from a paste: write the cause and the fix that worked."],
            started_from=started_from,
        )
        link_samples(finding, (text,), new=True)
    return finding


def pasted_error(text: str, exception_type: str | None) -> PastedError:
    """The error of a paste as the user wrote it (fingerprint.quoted_error)."""
    try:
        return quoted_error(parse(text), exception_type)
    except InputRejected:
        return PastedError()


def first_line(text: str) -> str:
    return next((line.strip() for line in text.splitlines() if line.strip()), "")


def paste_conditions(context: Context) -> list[Condition]:
    """What the paste's context says about where it happened (the reviewer trims it)."""
    facts = (
        ("gpu.arch", context.arch),
        ("framework", context.framework),
        ("model.arch", context.model_arch),
    )
    return [Condition(key, value) for key, value in facts if value]


def condition_of(raw: dict[str, Any]) -> Condition:
    """A stored condition; one stored before derived ones were marked reads as stated."""
    return Condition(
        str(raw["key"]),
        str(raw["value"]),
        bool(raw.get("negate", False)),
        bool(raw.get("derived", False)),
    )


def fix_record(
    fix_id: int,
    summary: str,
    changes: list[dict[str, Any]] | None,
    outcome: str,
    evidence: Evidence | None,
) -> FixRecord:
    return FixRecord(
        id=fix_id,
        summary=summary,
        changes=tuple(change_of(c) for c in changes or ()),
        outcome=Outcome(outcome),
        evidence=evidence or Evidence(),
    )


def change_of(raw: dict[str, Any]) -> Change:
    value = raw.get("value")
    return Change(
        ChangeAction(raw["action"]), str(raw["name"]), None if value is None else str(value)
    )


def fix_evidence() -> dict[int, Evidence]:
    """Validated runs per architecture and user feedback, per fix, in two queries."""
    passed: dict[int, Counter[str]] = {}
    failed: dict[int, Counter[str]] = {}
    finished = ValidationRun.objects.filter(
        status__in=[ValidationRun.Status.PASSED, ValidationRun.Status.FAILED]
    ).values_list("fix_id", "arch", "status")
    for fix_id, arch, status in finished:
        bucket = passed if status == ValidationRun.Status.PASSED else failed
        bucket.setdefault(fix_id, Counter())[arch or "unknown"] += 1
    votes = votes_per_fix()  # each voter once per fix
    fix_ids = set(passed) | set(failed) | set(votes)
    return {
        fix_id: Evidence(
            validated_passed=tuple(sorted(passed.get(fix_id, Counter()).items())),
            validated_failed=tuple(sorted(failed.get(fix_id, Counter()).items())),
            feedback_helped=votes.get(fix_id, (0, 0))[0],
            feedback_not_helped=votes.get(fix_id, (0, 0))[1],
        )
        for fix_id in fix_ids
    }


def signature_decisions() -> dict[tuple[int, str], list[str]]:
    decisions: dict[tuple[int, str], list[str]] = {}
    for finding_id, decision, fingerprint in SignatureDecision.objects.values_list(
        "finding_id", "decision", "fingerprint"
    ):
        decisions.setdefault((finding_id, decision), []).append(fingerprint)
    return decisions


def decide_signature(
    fingerprint: str,
    finding: Finding,
    *,
    decision: str,
    user: AbstractBaseUser | AnonymousUser | None = None,
) -> SignatureDecision:
    """A reviewer links a fingerprint to a finding, or splits it off; it sticks."""
    row, _ = SignatureDecision.objects.update_or_create(
        fingerprint=fingerprint,
        finding=finding,
        defaults={
            "fingerprint_version": FINGERPRINT_VERSION,
            "decision": SignatureDecision.Decision(decision),
            "decided_by": user if user is not None and user.is_authenticated else None,
        },
    )
    return row
