"""Write extracted findings into the linked records of the knowledge base."""

from __future__ import annotations

from collections.abc import Callable, Hashable, Iterable, Iterator, Sequence
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field
from typing import Any, cast

from django.db import transaction
from django.db.models import Q
from simple_history.utils import bulk_create_with_history

from decisiontree import conditions
from decisiontree.documents import ExtractedFinding, ExtractedFix, GpuMention
from decisiontree.documents.findings_md import notes_of_entry
from decisiontree.fingerprint import Signature
from decisiontree.match import Candidate, MatchLevel, Query, SignatureIndex
from decisiontree.samples import from_stored, signatures_of_sample, stored_form
from decisiontree.server_env import runnable_changes
from kb.models import (
    ErrorSample,
    ErrorSignature,
    Finding,
    FindingGpu,
    Fix,
    Flag,
    FlagSetting,
    FrameworkRelease,
    Hardware,
    LanguageModel,
    SourceDocument,
)


def store_extracted_finding(
    extracted: ExtractedFinding,
    document: SourceDocument,
    key: str,
    *,
    problems: tuple[str, ...] = (),
    publish: bool = False,
    new_document: bool = False,
) -> tuple[Finding, str]:
    """Create or update the finding for entry `key` of `document`.

    Returns the finding and "created", "updated" or "unchanged". Must run inside
    a transaction: the finding and its links are written together.
    """
    # A document stored for the first time has no findings yet: nothing to look up.
    finding = (
        None if new_document else Finding.objects.filter(origin=document, origin_key=key).first()
    )
    if finding is None and document.format == SourceDocument.Format.WRITEUP:
        same = same_symptom(extracted, document)
        if same is not None and same.status == Finding.Status.DRAFT:
            return join_finding(same, extracted, document), "joined"
        if same is not None:  # published: a reviewer decides; the draft says what it repeats
            extracted = _noting(extracted, looks_like=same.pk)
    change = "created" if finding is None else "unchanged"
    finding = finding or Finding(origin=document, origin_key=key)
    values = finding_values(extracted, problems)
    if change == "unchanged" and any(getattr(finding, k) != v for k, v in values.items()):
        change = "updated"
    for name, value in values.items():
        setattr(finding, name, value)
    if publish and finding.status == Finding.Status.DRAFT:
        finding.status = Finding.Status.PUBLISHED
        change = "updated" if change == "unchanged" else change
    if change != "unchanged":
        finding.save()
    if change == "created":
        Finding.sources.through.objects.create(finding_id=finding.pk, sourcedocument_id=document.pk)
        _remember_told(finding, extracted)
    else:
        finding.sources.add(document)
    links_changed = link_records(finding, extracted, new=change == "created")
    if links_changed and change == "unchanged":
        change = "updated"
    return finding, change


def finding_values(extracted: ExtractedFinding, problems: tuple[str, ...]) -> dict[str, Any]:
    metrics = extracted.metrics
    note = " → ".join(v for v in (metrics.before, metrics.after) if v)
    return {
        "title": extracted.title[:300],
        "summary": extracted.summary,
        "body": extracted.body,
        "kind": extracted.kind,
        "resolution": extracted.status,
        "cause": extracted.cause,
        "conditions": [conditions.as_dict(c) for c in extracted.conditions],
        "model_id": language_model(extracted),
        "framework_id": release(extracted.framework, extracted.framework_version),
        "works_command": extracted.works_command or "",
        "throughput_tok_s": metrics.throughput_tok_s,
        "ttft_ms": metrics.ttft_ms,
        "itl_ms": metrics.itl_ms,
        "before_value": metrics.before_value,
        "after_value": metrics.after_value,
        "metric_unit": metrics.unit or "",
        "metric_note": note,
        "extra": dict(extracted.extra),
        # Its own notes: a FINDINGS.md of 100k entries would store every note on each.
        "problems": list(notes_of_entry(problems, extracted.title)),
    }


# Within one ingest run, rows already committed are looked up once: a thousand
# documents name the same GPUs, models, releases and flags again and again.
_committed: ContextVar[dict[Hashable, Any] | None] = ContextVar("committed_rows", default=None)


@contextmanager
def remembered_lookups() -> Iterator[None]:
    token = _committed.set({})
    try:
        yield
    finally:
        _committed.reset(token)


# Within one document's transaction (see `lookups_in_transaction`), the rows it looked
# up or created: a FINDINGS.md of thousands of entries names the same few again and again.
_pending: ContextVar[dict[Hashable, int] | None] = ContextVar("pending_rows", default=None)


@contextmanager
def lookups_in_transaction() -> Iterator[None]:
    """Remember lookups until the transaction this block runs in ends; forgotten after it,
    so a rolled-back row is never handed out (the run's cache learns them at commit)."""
    token = _pending.set({})
    try:
        yield
    finally:
        _pending.reset(token)


def cached_pk(key: Hashable, fetch: Callable[[], int]) -> int:
    """`fetch()`'s primary key, remembered for this run once its transaction commits (a
    row created in a transaction that rolls back must not be remembered)."""
    cache = _committed.get()
    if cache is not None and key in cache:
        return int(cache[key])
    pending = _pending.get()
    if pending is not None and key in pending:
        return pending[key]
    pk = fetch()
    if pending is not None:
        pending[key] = pk
    if cache is not None:
        transaction.on_commit(lambda: cache.__setitem__(key, pk))
    return pk


def prime_lookups(entries: Sequence[ExtractedFinding]) -> None:
    """Look up, and create where missing, the models, releases and GPUs that many entries
    name, a few statements for all of them; the lookups of the entries then find them
    remembered. Call it inside `lookups_in_transaction`, holding the ingest's store turn
    (no other writer creates these rows meanwhile)."""
    pending = _pending.get()
    if pending is None:
        return
    models = {
        e.model[:200]: {"arch": e.model_arch or "", "quantization": e.quantization or ""}
        for e in entries
        if e.model
    }
    releases = {
        (name.lower()[:60], (version or "")[:60])
        for e in entries
        for name, version in [(e.framework, e.framework_version), *e.versions.items()]
        if name
    }
    gpus = {gpu.name[:120]: gpu.arch or "" for e in entries for gpu in e.gpus}
    pending.update(_rows_by_name(LanguageModel, "model", models))
    hardware = {name: {"arch": arch, "compute_capability": ""} for name, arch in gpus.items()}
    pending.update(_rows_by_name(Hardware, "gpu", hardware))
    pending.update(_releases(releases))


def _rows_by_name(model: Any, kind: str, wanted: dict[str, dict[str, str]]) -> dict[Hashable, int]:
    found = dict(model.objects.filter(name__in=list(wanted)).values_list("name", "pk"))
    missing = [model(name=name, **wanted[name]) for name in sorted(set(wanted) - set(found))]
    found.update({row.name: row.pk for row in model.objects.bulk_create(missing)})
    return {(kind, name): pk for name, pk in found.items()}


def _releases(wanted: set[tuple[str, str]]) -> dict[Hashable, int]:
    names = {name for name, _ in wanted}
    rows = FrameworkRelease.objects.filter(name__in=names).values_list("name", "version", "pk")
    found = {(name, version): pk for name, version, pk in rows if (name, version) in wanted}
    missing = [FrameworkRelease(name=n, version=v) for n, v in sorted(wanted - set(found))]
    found.update({(r.name, r.version): r.pk for r in FrameworkRelease.objects.bulk_create(missing)})
    return {("release", name, version): pk for (name, version), pk in found.items()}


def language_model(extracted: ExtractedFinding) -> int | None:
    if not extracted.model:
        return None
    name = extracted.model[:200]
    defaults = {"arch": extracted.model_arch or "", "quantization": extracted.quantization or ""}
    return cached_pk(
        ("model", name),
        lambda: LanguageModel.objects.get_or_create(name=name, defaults=defaults)[0].pk,
    )


def release(name: str | None, version: str | None) -> int | None:
    if not name:
        return None
    key = {"name": name.lower()[:60], "version": (version or "")[:60]}
    return cached_pk(
        ("release", key["name"], key["version"]),
        lambda: FrameworkRelease.objects.get_or_create(**key)[0].pk,
    )


def link_records(finding: Finding, extracted: ExtractedFinding, *, new: bool) -> bool:
    """Replace the finding's GPUs, libraries, flags, samples and fixes. True if any changed.

    A `new` finding has none yet: nothing is read back before writing.
    """
    changed = link_gpus(finding, extracted.gpus, new=new)
    changed |= link_libraries(finding, extracted.versions, new=new)
    changed |= link_flags(finding, extracted.framework, extracted.flags, new=new)
    document = finding.origin
    changed |= link_samples(finding, extracted.samples, new=new, source=document)
    if new:
        return create_fixes(finding, extracted.fixes, source=document) or changed
    return link_fixes(finding, extracted.fixes, source=document) or changed


def link_gpus(finding: Finding, gpus: tuple[GpuMention, ...], *, new: bool) -> bool:
    wanted: dict[int, int] = {}
    for gpu in gpus:
        wanted[hardware_pk(gpu)] = max(gpu.count, 1)
    current = {} if new else dict(finding.findinggpu_set.values_list("hardware_id", "count"))
    if current == wanted:
        return False
    if not new:
        finding.findinggpu_set.all().delete()
    FindingGpu.objects.bulk_create(
        FindingGpu(finding=finding, hardware_id=pk, count=count) for pk, count in wanted.items()
    )
    return True


def hardware_pk(gpu: GpuMention) -> int:
    name = gpu.name[:120]
    defaults = {"arch": gpu.arch or "", "compute_capability": ""}
    return cached_pk(
        ("gpu", name), lambda: Hardware.objects.get_or_create(name=name, defaults=defaults)[0].pk
    )


def link_libraries(finding: Finding, versions: dict[str, str] | Any, *, new: bool) -> bool:
    wanted = {release(name, version) for name, version in versions.items()}
    current = set() if new else set(finding.libraries.values_list("pk", flat=True))
    if wanted == current:
        return False
    replace_links(finding, "libraries", wanted, new=new)
    return True


def replace_links(finding: Finding, relation: str, ids: Iterable[int], *, new: bool) -> None:
    """Set a many-to-many relation: a new finding's links in one insert, with no read."""
    if not new:
        getattr(finding, relation).set(ids)
        return
    field = getattr(Finding, relation).field
    through = field.remote_field.through
    target = f"{field.m2m_reverse_field_name()}_id"
    through.objects.bulk_create(through(finding_id=finding.pk, **{target: pk}) for pk in ids)


def link_flags(
    finding: Finding, framework: str | None, flags: tuple[tuple[str, str | None], ...], *, new: bool
) -> bool:
    wanted = {name[:80]: (value or "")[:500] for name, value in flags}
    current = {} if new else dict(finding.flag_settings.values_list("name", "value"))
    if wanted == current:
        return False
    known = known_flags((framework or "").lower())
    if not new:
        finding.flag_settings.all().delete()
    FlagSetting.objects.bulk_create(
        FlagSetting(finding=finding, name=name, value=value, flag_id=known.get(name))
        for name, value in wanted.items()
    )
    return True


def known_flags(framework: str) -> dict[str, int]:
    """Canonical flag name → row id, for one framework."""
    cache = _committed.get()
    key = ("flags", framework)
    if cache is not None and key in cache:
        return dict(cache[key])
    flags = dict(Flag.objects.filter(framework=framework).values_list("name", "pk"))
    if cache is not None:
        cache[key] = flags  # the vocabulary is loaded before ingest, not by it
    return flags


def link_samples(
    finding: Finding,
    samples: tuple[str, ...],
    *,
    new: bool,
    source: SourceDocument | None = None,
) -> bool:
    """Store the samples with their signatures, parsed once here and not at every rebuild.
    Samples other documents brought to this finding stay."""
    own = own_samples(finding.samples.all(), source)
    current = [] if new else list(own.values_list("text", flat=True))
    if current == list(samples):
        return False
    if not new:
        own.delete()
    add_samples(finding, samples, source)
    link_sample_signatures(finding, new=new)
    return True


def link_sample_signatures(finding: Finding, *, new: bool) -> None:
    """The finding's signatures become those of its samples, in the samples' order."""
    signature_ids = dict.fromkeys(
        finding.samples.exclude(signature=None)
        .order_by("pk")
        .values_list("signature_id", flat=True)
    )
    replace_links(finding, "signatures", list(signature_ids), new=new)


def own_samples(samples: Any, source: SourceDocument | None) -> Any:
    """Of `samples` (a queryset), those the document brought (or no document), in the
    order stored."""
    # Samples learned from use (kb.services.feedback) are nobody's document's: they stay.
    own = samples.filter(learned_at=None).filter(Q(source=source) | Q(source__isnull=True))
    return own.order_by("pk")


def add_samples(finding: Finding, samples: Iterable[str], source: SourceDocument | None) -> None:
    for text in samples:
        store_sample(finding, text, source=source)


def add_new_samples(finding: Finding, texts: Iterable[str], **fields: Any) -> list[ErrorSample]:
    """Add error texts to a finding's samples (the API, a reviewer learning a paste),
    skipping those it holds; each is linked to the finding by its error signature, as
    ingest links them. `fields` as for `store_sample`."""
    held = set(finding.samples.values_list("text", flat=True))
    added: list[ErrorSample] = []
    for text in dict.fromkeys(texts):
        if text in held:
            continue
        sample = store_sample(finding, text, **fields)
        if sample.signature_id is not None:
            finding.signatures.add(sample.signature_id)
        added.append(sample)
    return added


def store_sample(finding: Finding, text: str, **fields: Any) -> ErrorSample:
    """One error text of the finding, stored with its signatures (parsed once, here) and
    its error signature; `fields` are the sample's other columns (its source, where it
    was learned from)."""
    found = signatures_of_sample(text)
    signature_id = error_signature(found[0]) if not isinstance(found, str) else None
    _index_stored(finding.pk, found if isinstance(found, tuple) else ())
    return ErrorSample.objects.create(
        finding=finding, text=text, signature_id=signature_id, parsed=stored_form(found), **fields
    )


def error_signature(signature: Signature) -> int:
    defaults = {
        "template_key": signature.template_key,
        "exception_type": signature.exception_type[:200],
        "template": signature.template,
        "key_frames": list(signature.key_frames),
    }
    return cached_pk(
        ("signature", signature.fingerprint),
        lambda: (
            ErrorSignature.objects.get_or_create(
                fingerprint=signature.fingerprint, defaults=defaults
            )[0].pk
        ),
    )


def create_fixes(
    finding: Finding,
    fixes: tuple[ExtractedFix, ...],
    *,
    source: SourceDocument | None = None,
    start: int = 0,
) -> bool:
    """The fixes of a new finding, and their first history rows, in two queries."""
    rows = [
        Fix(finding=finding, position=start + position, source=source, **fix_values(extracted))
        for position, extracted in enumerate(fixes)
    ]
    bulk_create_with_history(rows, Fix)
    return bool(rows)


def fix_values(extracted: ExtractedFix) -> dict[str, Any]:
    """Our own summary of the change; the words it was read from stay beside it. An
    environment variable that is no vetted serving knob is kept as text only."""
    return {
        "summary": extracted.summary or extracted.text,
        "passage": extracted.text,
        "changes": [change_dict(c) for c in runnable_changes(extracted.changes)],
        "outcome": str(extracted.outcome),
    }


def link_fixes(
    finding: Finding, fixes: tuple[ExtractedFix, ...], *, source: SourceDocument | None = None
) -> bool:
    """Update this document's fixes in place (matched by passage and summary) so each keeps
    its history; fixes other documents brought stay."""
    own = finding.fixes.filter(Q(source=source) | Q(source__isnull=True))
    existing = {(fix.passage, fix.summary): fix for fix in own}
    changed = False
    for position, extracted in enumerate(fixes):
        values = {**fix_values(extracted), "position": position, "source": source}
        fix = existing.pop((extracted.text, values["summary"]), None)
        if fix is None:
            Fix.objects.create(finding=finding, **values)
            changed = True
        elif any(getattr(fix, k) != v for k, v in values.items()):
            for name, value in values.items():
                setattr(fix, name, value)
            fix.save()
            changed = True
    for stale in existing.values():
        stale.delete()
        changed = True
    return changed


def change_dict(change: Any) -> dict[str, Any]:
    return {"action": str(change.action), "name": change.name, "value": change.value}


# -- one finding per symptom, across documents -------------------------------------------------


def same_symptom(extracted: ExtractedFinding, document: SourceDocument) -> Finding | None:
    """An existing finding (draft or published) of the same symptom, from another document.

    The matcher decides first: a sample of the episode that is a *known* match of a stored
    sample. A symptom told only in words has no sample the matcher can pin; then the same
    failure class and named code, on the same model, is the same symptom.
    """
    others = Finding.objects.exclude(status=Finding.Status.RETIRED).exclude(origin=document)
    queries = [
        Query.of(signature) for sample in extracted.samples for signature in _signatures(sample)
    ]
    for candidate in symptom_index().lookup(queries) if queries else ():
        if candidate.level is not MatchLevel.KNOWN:
            break
        found = others.filter(pk=candidate.finding_id).first()
        if found is not None:
            return found
    return _same_told_symptom(extracted, others)


@dataclass
class SymptomIndex:
    """The signatures of stored samples, for telling whether an episode's error is known."""

    index: SignatureIndex = field(default_factory=SignatureIndex)
    sealed: set[int] = field(default_factory=set)  # findings the index has folded in
    fresh: set[int] = field(default_factory=set)  # findings added since

    def add(self, finding_id: int, signatures: Iterable[Signature]) -> None:
        # A folded finding's document is closed: more samples would count its words twice.
        if finding_id not in self.sealed:
            for signature in signatures:
                self.index.add(finding_id, signature)
            self.fresh.add(finding_id)

    def lookup(self, queries: list[Query]) -> tuple[Candidate, ...]:
        self.index.finish()
        self.sealed |= self.fresh
        self.fresh.clear()
        return self.index.lookup(queries, limit=5) if len(self.index) else ()


_SYMPTOM_INDEX = "symptom-index"


def symptom_index() -> SymptomIndex:
    """Every stored sample of a live finding; built once per ingest run and grown as
    findings are stored (outside a run, built for each call)."""
    cache = _committed.get()
    if cache is not None and _SYMPTOM_INDEX in cache:
        return cast(SymptomIndex, cache[_SYMPTOM_INDEX])
    built = SymptomIndex()
    live = ErrorSample.objects.exclude(finding__status=Finding.Status.RETIRED)
    for finding_id, parsed in live.values_list("finding_id", "parsed").iterator(chunk_size=2000):
        signatures = from_stored(parsed)
        built.add(finding_id, signatures if isinstance(signatures, tuple) else ())
    if cache is not None:
        cache[_SYMPTOM_INDEX] = built
    return built


def _index_stored(finding_id: int, signatures: tuple[Signature, ...]) -> None:
    """New samples join the run's index, if one is built; a lookup checks the finding
    still exists, so a rolled-back document leaves only misses behind."""
    cache = _committed.get()
    if cache is not None and _SYMPTOM_INDEX in cache:
        cast(SymptomIndex, cache[_SYMPTOM_INDEX]).add(finding_id, signatures)


def _signatures(sample: str) -> tuple[Signature, ...]:
    found = signatures_of_sample(sample)
    return found if isinstance(found, tuple) else ()


def _same_told_symptom(extracted: ExtractedFinding, others: Any) -> Finding | None:
    classes = set(extracted.extra.get("symptom", "").split())
    names = set(extracted.extra.get("symptom_names", "").split())
    if not classes or not extracted.model:
        return None
    for told in told_symptoms():
        if not _same_model(extracted.model, told.model):
            continue
        if names & told.names or (classes & told.classes - {"slow"} and not (names and told.names)):
            found = others.filter(pk=told.finding_id).first()
            if found is not None:
                return found
    return None


@dataclass(frozen=True)
class ToldSymptom:
    """What tells a stored finding's symptom from others, when no sample can."""

    finding_id: int
    model: str
    classes: frozenset[str]
    names: frozenset[str]

    @classmethod
    def of(cls, finding_id: int, model: str, extra: Any) -> ToldSymptom:
        extra = extra if isinstance(extra, dict) else {}
        return cls(
            finding_id,
            model,
            frozenset(str(extra.get("symptom", "")).split()),
            frozenset(str(extra.get("symptom_names", "")).split()),
        )


_TOLD_SYMPTOMS = "told-symptoms"


def told_symptoms() -> list[ToldSymptom]:
    """Stored findings with a told symptom and a model, oldest first; once per ingest run,
    grown as findings are stored."""
    cache = _committed.get()
    if cache is not None and _TOLD_SYMPTOMS in cache:
        return cast(list[ToldSymptom], cache[_TOLD_SYMPTOMS])
    rows = (
        Finding.objects.exclude(status=Finding.Status.RETIRED)
        .exclude(model=None)
        .order_by("pk")
        .values_list("pk", "model__name", "extra")
    )
    told = [ToldSymptom.of(pk, model, extra) for pk, model, extra in rows.iterator(2000)]
    told = [t for t in told if t.classes]
    if cache is not None:
        cache[_TOLD_SYMPTOMS] = told
    return told


def _remember_told(finding: Finding, extracted: ExtractedFinding) -> None:
    cache = _committed.get()
    if cache is not None and _TOLD_SYMPTOMS in cache and extracted.model:
        told = ToldSymptom.of(finding.pk, extracted.model, dict(extracted.extra))
        if told.classes:
            cache[_TOLD_SYMPTOMS].append(told)


def _same_model(ours: str, theirs: str) -> bool:
    """ "GLM-5" and "zai-org/GLM-5-NVFP4" name one model; a release and its quantization."""
    a, b = ours.lower().rsplit("/", 1)[-1], theirs.lower().rsplit("/", 1)[-1]
    return bool(a and b) and (a == b or a.startswith(b + "-") or b.startswith(a + "-"))


def join_finding(
    finding: Finding, extracted: ExtractedFinding, document: SourceDocument
) -> Finding:
    """The episode joins the finding of its symptom: another source, samples, attempts."""
    finding.sources.add(document)
    known = set(finding.samples.values_list("text", flat=True))
    add_samples(finding, [s for s in extracted.samples if s not in known], document)
    start = finding.fixes.count()
    create_fixes(finding, extracted.fixes, source=document, start=start)
    signature_ids = finding.samples.exclude(signature=None).values_list("signature_id", flat=True)
    finding.signatures.add(*set(signature_ids))
    finding.save(update_fields=["updated_at"])
    return finding


def read_joined_samples_again(
    document: SourceDocument, entries: Iterable[tuple[str, ExtractedFinding]]
) -> int:
    """A write-up read again: the samples its episodes brought to other documents' findings
    (`join_finding`) become what the reader now finds, as its own findings' samples do. Each
    episode is placed as a join places it (`same_symptom`), and only on a finding this
    document already gave samples to; the finding's other samples stay. Returns how many
    findings changed."""
    own = set(Finding.objects.filter(origin=document).values_list("origin_key", flat=True))
    given = set(
        ErrorSample.objects.filter(source=document, learned_at=None)
        .exclude(finding__origin=document)
        .values_list("finding_id", flat=True)
    )
    read: dict[int, list[str]] = {}
    for key, entry in entries:
        if key in own or not entry.samples or not given:
            continue
        same = same_symptom(entry, document)
        if same is not None and same.pk in given:
            read.setdefault(same.pk, []).extend(entry.samples)
    changed = 0
    for finding in Finding.objects.filter(pk__in=read).order_by("pk"):
        brought = finding.samples.filter(source=document, learned_at=None).order_by("pk")
        others = set(finding.samples.exclude(pk__in=brought).values_list("text", flat=True))
        texts = [t for t in dict.fromkeys(read[finding.pk]) if t not in others]
        if list(brought.values_list("text", flat=True)) == texts:
            continue
        brought.delete()
        add_samples(finding, texts, document)
        link_sample_signatures(finding, new=False)
        changed += 1
    return changed


def withdraw_contributions(document: SourceDocument) -> None:
    """Before a changed document is stored again: what it added to other findings goes."""
    elsewhere = Finding.objects.filter(sources=document).exclude(origin=document)
    Fix.objects.filter(source=document, finding__in=elsewhere).delete()
    ErrorSample.objects.filter(source=document, finding__in=elsewhere).delete()
    for finding in elsewhere:
        finding.sources.remove(document)


def _noting(extracted: ExtractedFinding, *, looks_like: int) -> ExtractedFinding:
    from dataclasses import replace

    return replace(extracted, extra={**dict(extracted.extra), "looks_like": str(looks_like)})
