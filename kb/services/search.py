"""Full-text search over findings, shared by the web pages and the REST API.

Error text is the hard case: `nsa_kv_cache_store_fp8`, `--mem-fraction-static`,
`memory_pool.py:set_kv_buffer`. Both databases' tokenizers cut identifiers
apart (and PostgreSQL's parser reads `self.nsa_kv` as a host name), so the
text is normalised here first: every identifier is indexed as its parts and,
right after them, as every suffix of its parts joined (`nsakvcachestorefp8`,
`kvcachestorefp8`, ...), so a query identifier is one word. GPU architectures
are spelled one way (`sm_120`, `SM120`, `sm 120` all become `sm120`).

A query is read against the words the index has (`read_query`): a known word as
itself, the start of one as the words it starts, a misspelt one as the closest
known word, an unknown short one not at all. See docs/search.md.

PostgreSQL: weighted tsvector ('simple' config: no stemming, no stop words),
ranked from a RUM index where the server has the extension. SQLite (`make run`):
FTS5 with bm25.

Speed (bench/search_speed.py, 100k findings): the best 1,000 matches are ranked
once and everything after reads that list; filters are exact facets on the
document, read from an index, never a join.
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass, field, replace
from datetime import datetime
from typing import Any

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.lookups import Overlap
from django.contrib.postgres.search import (
    SearchQuery,
    SearchRank,
    SearchVector,
)
from django.db import connection, transaction
from django.db.models import (
    Case,
    F,
    FloatField,
    Func,
    Lookup,
    Q,
    QuerySet,
    TextField,
    Value,
    When,
)
from django.utils import timezone
from rapidfuzz import fuzz, process

from kb.models import Finding, FrameworkRelease, Hardware, LanguageModel
from kb.models.search import (
    SEARCH_WORD_MAX_CHARS,
    FindingSearchDocument,
    SearchRefresh,
    SearchWord,
)
from kb.transaction_marks import first_time, forget

FTS_TABLE = "kb_finding_fts"
MAX_QUERY_CHARS = 500
MAX_SAMPLE_CHARS = 20_000
# Past this many terms a query is a pasted log, not a search: any term may match.
ALL_TERMS_UP_TO = 8
SNIPPET_CHARS = 180

ARCH_SPELLING = re.compile(r"\bsm[\s_-]?(\d{2,3}[a-z]?)\b", re.IGNORECASE)
IDENTIFIER = re.compile(r"[A-Za-z0-9]+(?:[_\-.:/][A-Za-z0-9]+)*")
ALNUM = re.compile(r"[a-z0-9]+")


def postgres() -> bool:
    """PostgreSQL (production) or SQLite (`make run`): the two search backends."""
    return connection.vendor == "postgresql"


# --- query terms ----------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """One word of a query; an identifier keeps its parts in order."""

    parts: tuple[str, ...]
    written: str = field(default="", compare=False)  # as the user typed it
    # The indexed words it matches (see read_query): itself, or those it starts.
    completions: tuple[str, ...] = field(default=(), compare=False)

    @property
    def joined(self) -> str:
        return "".join(self.parts)

    @property
    def words(self) -> tuple[str, ...]:
        return self.completions or (self.joined,)


def normalise_arch(text: str) -> str:
    return ARCH_SPELLING.sub(lambda m: "sm" + m.group(1).lower(), text)


def parse_query(query: str) -> tuple[Term, ...]:
    text = normalise_arch(query[:MAX_QUERY_CHARS].lower())
    terms = (Term(tuple(ALNUM.findall(token)), written=token) for token in IDENTIFIER.findall(text))
    unique = dict.fromkeys(term for term in terms if term.parts)
    return tuple(unique)


# --- documents ------------------------------------------------------------------


def searchable(text: str) -> str:
    """Text as both databases should tokenize it: each word's parts, then right after
    them the wholes of an identifier, so rankers that weigh how close words are see
    `flashmla_kv` next to the `decode` beside it."""
    words: list[str] = []
    for token in IDENTIFIER.findall(normalise_arch(text)):
        parts = ALNUM.findall(token.lower())
        words += parts
        if len(parts) > 1:  # most words are one part: no wholes to add
            wholes = (w for piece in identifier_pieces(token) for w in identifier_wholes(piece))
            words += [whole for whole in dict.fromkeys(wholes) if whole not in parts]
    return " ".join(words)


# Past this many parts (a long path), only the last ones start a whole of their own.
MAX_WHOLE_STARTS = 24


def identifier_wholes(piece: str) -> list[str]:
    """`nsa_kv_cache` -> `nsakvcache`, `kvcache`: every run of its parts starts one of
    these, so a query identifier is one word (or the words it starts), never a phrase:
    phrases cost a recheck of every hit."""
    parts = ALNUM.findall(piece.lower())
    later = range(max(1, len(parts) - MAX_WHOLE_STARTS), len(parts) - 1)
    return ["".join(parts[start:]) for start in (0, *later) if parts]


def identifier_pieces(token: str) -> Iterable[str]:
    """`pkg.mod:func_name` is found as a whole and as `func_name` or `mod`."""
    if not re.search(r"[_\-.:/]", token):
        return ()
    pieces = [p for p in re.split(r"[.:/]", token) if re.search(r"[_-]", p)]
    return [token, *pieces]


@dataclass(frozen=True)
class DocumentFields:
    title: str
    errors: str
    context: str
    body: str

    @property
    def text(self) -> str:
        return "\n".join((self.title, self.errors, self.context, self.body))


def document_fields(finding: Finding) -> DocumentFields:
    return DocumentFields(
        title=finding.title,
        errors=join_lines(error_lines(finding)),
        context=join_lines(context_lines(finding)),
        body=join_lines(body_lines(finding)),
    )


def join_lines(lines: Iterable[str | None]) -> str:
    return "\n".join(line for line in lines if line)


def error_lines(finding: Finding) -> Iterable[str]:
    for signature in finding.signatures.all():
        yield f"{signature.exception_type}: {signature.template}"
        yield " ".join(str(frame) for frame in signature.key_frames or ())
    for sample in finding.samples.all():
        yield sample.text[:MAX_SAMPLE_CHARS]


def context_lines(finding: Finding) -> Iterable[str | None]:
    yield finding.summary
    yield finding.cause
    for setting in finding.flag_settings.all():
        yield f"--{setting.name} {setting.value}"
    for gpu in finding.gpus.all():
        yield f"{gpu.name} {gpu.arch} {gpu.family} {' '.join(map(str, gpu.aliases or ()))}"
    for condition in finding.conditions or ():
        if isinstance(condition, dict):
            yield f"{condition.get('key', '')} = {condition.get('value', '')}"
    if finding.model is not None:
        model = finding.model
        yield f"{model.name} {model.family} {model.arch} {model.quantization}"
    if finding.framework is not None:
        yield str(finding.framework)


def body_lines(finding: Finding) -> Iterable[str | None]:
    yield finding.body
    yield finding.works_command
    for fix in finding.fixes.all():
        yield fix.summary
        for change in fix.changes or ():
            if isinstance(change, dict):
                yield f"{change.get('name', '')} {change.get('value') or ''}"


# --- facets: what filters match, kept on the document ---------------------------------

# One `key=value` a line, lowercase, the text opening and closing with a newline, so
# `\nkey=value\n` is an exact match by a plain substring test on either database.
Facet = tuple[str, str]


def facet_text(facets: Iterable[Facet]) -> str:
    lines = dict.fromkeys(f"{key}={' '.join(value.lower().split())}" for key, value in facets)
    return "\n" + "".join(f"{line}\n" for line in lines if not line.endswith("="))


def finding_facets(finding: Finding) -> list[Facet]:
    """The facets of a finding whose relations are prefetched (see refresh_documents)."""
    facets = [("status", finding.status), *gpu_facets(finding.gpus.all())]
    facets += [("flag", canonical_flag(setting.name)) for setting in finding.flag_settings.all()]
    facets += condition_facets(finding.conditions or ())
    if finding.model is not None:
        facets += model_facets(finding.model)
    if finding.framework is not None:
        release = finding.framework
        facets += [("framework", release.name)]
        facets += [("framework.release", f"{release.name} {release.version}")]
    return facets


def model_facets(model: LanguageModel) -> list[Facet]:
    return [("model", model.name), ("model.arch", model.arch), ("model.family", model.family)]


def gpu_facets(gpus: Iterable[Hardware]) -> list[Facet]:
    facets: list[Facet] = []
    for gpu in gpus:
        facets += [("gpu", gpu.name), ("arch", canonical_arch(gpu.arch or ""))]
        facets += [("cc", str(gpu.compute_capability or ""))]
    return facets


def condition_facets(conditions: Iterable[object]) -> list[Facet]:
    """A finding that names its architecture only as a condition is filtered by it too."""
    return [
        ("arch", canonical_arch(str(condition.get("value", ""))))
        for condition in conditions
        if isinstance(condition, dict) and condition.get("key") == "gpu.arch"
    ]


def canonical_flag(name: str) -> str:
    """`--mem_fraction_static`, `mem-fraction-static=0.8` -> `mem-fraction-static`."""
    words = name.strip().lstrip("-").split("=")[0].split()
    return words[0].replace("_", "-").lower() if words else ""


# --- keeping documents up to date ---------------------------------------------------


def queue_refresh(finding_id: int) -> None:
    """Mark a finding's document stale, in the caller's transaction; rebuilt after commit."""
    if not first_time(("search-refresh", finding_id)):
        return
    # A re-queue moves queued_at, so a refresh already under way keeps the row for later.
    SearchRefresh.objects.bulk_create(
        [SearchRefresh(finding_id=finding_id, queued_at=timezone.now())],
        update_conflicts=True,
        unique_fields=["finding_id"],
        update_fields=["queued_at"],
    )
    if _deferred.get():
        return  # a bulk load refreshes everything it queued once, at its end
    if not any(entry[1] is refresh_queued for entry in connection.run_on_commit):
        transaction.on_commit(refresh_queued)


_deferred: ContextVar[bool] = ContextVar("search_refresh_deferred", default=False)


@contextmanager
def refresh_afterwards() -> Iterator[None]:
    """Queue refreshes while the block runs (ingesting many documents), rebuild them at the
    end in batches. The queue is in the database: if the block dies, the next search or
    `reindex_search` still finds the work."""
    token = _deferred.set(True)
    try:
        yield
    finally:
        _deferred.reset(token)
        refresh_queued()


def refresh_queued(batch: int = 500) -> int:
    """Rebuild every queued document. Search calls it too: nothing stale is ever served."""
    queued = sorted(SearchRefresh.objects.values_list("finding_id", "queued_at"))
    for start in range(0, len(queued), batch):
        refresh_batch(queued[start : start + batch])
    return len(queued)


def refresh_batch(queued: list[tuple[int, datetime]]) -> None:
    refresh_documents([finding_id for finding_id, _ in queued])
    done = Q()
    for finding_id, queued_at in queued:
        done |= Q(finding_id=finding_id, queued_at=queued_at)
        forget(("search-refresh", finding_id))  # a later change must queue it again
    SearchRefresh.objects.filter(done).delete()


def refresh_documents(finding_ids: list[int]) -> None:
    """Rebuild the documents of these findings (and drop those of deleted ones), in bulk."""
    findings = list(
        Finding.objects.filter(pk__in=finding_ids)
        .select_related("model", "framework")
        .prefetch_related("signatures", "samples", "flag_settings", "gpus", "fixes")
    )
    documents = [
        document_row(finding, document_fields(finding), finding_facets(finding))
        for finding in findings
    ]
    gone = set(finding_ids) - {finding.pk for finding in findings}
    with transaction.atomic():
        FindingSearchDocument.objects.bulk_create(
            documents,
            update_conflicts=True,
            unique_fields=["finding"],
            update_fields=[*INDEXED_FIELDS, "text", "facets", "built_at"],
        )
        FindingSearchDocument.objects.filter(finding_id__in=gone).delete()
        if postgres():
            FindingSearchDocument.objects.filter(
                finding_id__in=[d.finding_id for d in documents]
            ).update(vector=weighted_vector())
        for document in documents:
            write_fts_row(document.finding_id, {f: getattr(document, f) for f in INDEXED_FIELDS})
        for finding_id in gone:
            write_fts_row(finding_id, None)
        remember_words(documents)


def remember_words(documents: Iterable[FindingSearchDocument]) -> None:
    """Add the documents' words to the list query words are corrected against."""
    words = {
        word
        for document in documents
        for field in INDEXED_FIELDS
        for word in getattr(document, field).split()
        if len(word) <= SEARCH_WORD_MAX_CHARS
    }
    SearchWord.objects.bulk_create(
        (SearchWord(word=word) for word in sorted(words)), batch_size=2000, ignore_conflicts=True
    )


INDEXED_FIELDS = ("title", "errors", "context", "body")
UNSHOWN_DOCUMENT_FIELDS = tuple(
    f"search_document__{name}" for name in (*INDEXED_FIELDS, "facets", "vector")
)


def document_row(
    finding: Finding, fields: DocumentFields, facets: Iterable[Facet] = ()
) -> FindingSearchDocument:
    return FindingSearchDocument(
        finding=finding,
        title=searchable(fields.title),
        errors=searchable(fields.errors),
        context=searchable(fields.context),
        body=searchable(fields.body),
        text=fields.text,
        facets=facet_text(facets),
        built_at=timezone.now(),
    )


def weighted_vector() -> SearchVector:
    return (
        SearchVector("title", weight="A", config="simple")
        + SearchVector("errors", weight="B", config="simple")
        + SearchVector("context", weight="C", config="simple")
        + SearchVector("body", weight="D", config="simple")
    )


def write_fts_row(finding_id: int, indexed: dict[str, str] | None) -> None:
    if connection.vendor != "sqlite":
        return
    with connection.cursor() as cursor:
        cursor.execute(f"DELETE FROM {FTS_TABLE} WHERE rowid = %s", [finding_id])  # noqa: S608
        if indexed is not None:
            cursor.execute(
                f"INSERT INTO {FTS_TABLE} (rowid, title, errors, context, body) "  # noqa: S608
                "VALUES (%s, %s, %s, %s, %s)",
                [
                    finding_id,
                    indexed["title"],
                    indexed["errors"],
                    indexed["context"],
                    indexed["body"],
                ],
            )


def build_missing_documents() -> int:
    """Documents for findings saved without signals (bulk loads, raw SQL, old rows)."""
    missing = list(
        Finding.objects.filter(search_document__isnull=True).values_list("pk", flat=True)
    )
    stale = FindingSearchDocument.objects.filter(built_at__lt=F("finding__updated_at"))
    ids = missing + list(stale.values_list("finding_id", flat=True))
    refresh_in_batches(ids)
    return len(ids)


def rebuild_all() -> int:
    """Every document from scratch: after a restore, or when this module's rules change."""
    ids = list(Finding.objects.values_list("pk", flat=True))
    SearchWord.objects.all().delete()  # words of deleted findings go too
    refresh_in_batches(ids)
    return len(ids)


def refresh_in_batches(ids: list[int], size: int = 500) -> None:
    for start in range(0, len(ids), size):
        refresh_documents(ids[start : start + size])


# --- filters ------------------------------------------------------------------------


@dataclass(frozen=True)
class FindingFilters:
    """The facets a user narrows a list by; empty means any."""

    status: str = ""
    gpu: str = ""
    arch: str = ""
    model: str = ""
    framework: str = ""
    flag: str = ""


def canonical_arch(value: str) -> str:
    """`sm120`, `SM_120`, `sm 120` -> `sm_120`."""
    match = ARCH_SPELLING.search(value.strip())
    return f"sm_{match.group(1).lower()}" if match else value.strip().lower()


def filter_findings(
    queryset: QuerySet[Finding], filters: FindingFilters, *, ranked: bool = False
) -> QuerySet[Finding]:
    """`ranked`: the rows go on to full-text ranking, which then needs only the document
    (a status test on the finding makes PostgreSQL hash-join every finding)."""
    if filters.status and ranked:
        queryset = queryset.filter(has_facet("status", filters.status))
    elif filters.status:
        queryset = queryset.filter(status=filters.status)
    for condition in facet_conditions(filters):
        # On the document's facets: one row per finding, so no join on GPUs or flags.
        queryset = queryset.filter(condition)
    return queryset


def facet_conditions(filters: FindingFilters) -> list[Q]:
    conditions = [
        gpu_condition(filters.gpu) if filters.gpu else None,
        arch_condition(filters.arch) if filters.arch else None,
        model_condition(filters.model) if filters.model else None,
        framework_condition(filters.framework) if filters.framework else None,
        flag_condition(filters.flag) if filters.flag else None,
    ]
    return [condition for condition in conditions if condition is not None]


FACETS = "search_document__facets"


def has_facet(key: str, value: str) -> Q:
    return has_any_facet(key, [value])


def has_any_facet(key: str, values: Iterable[str]) -> Q:
    """Findings with `key=value` for one of `values` (exactly, but for case and spaces)."""
    lines = [facet_text([(key, value)]).strip("\n") for value in values if value.strip()]
    if not lines:
        return Q(pk__in=[])  # `--` or `sm_` names no facet: nothing has it
    if postgres():
        return Q(Overlap(FacetLines(F(FACETS)), lines))
    anywhere = Q(pk__in=[])
    for line in lines:
        anywhere |= Q(**{f"{FACETS}__contains": f"\n{line}\n"})
    return anywhere


class FacetLines(Func):
    """A document's facets as an array of lines, spelled as the GIN index over them
    (migration 0008) is, so PostgreSQL answers `has this facet` from the index."""

    template = "string_to_array(%(expressions)s, E'\\n')"
    output_field = ArrayField(TextField())


# Words of a filter that name part of a GPU, model or release are first looked up in
# their (small) vocabulary tables: the filter is then exact facets, read from the index.


def gpu_condition(gpu: str) -> Q:
    """Every word somewhere in the name of one of the finding's GPUs: `blackwell 6000`."""
    named = Hardware.objects.all()
    for word in gpu.split():
        named = named.filter(name__icontains=word)
    return has_any_facet("gpu", [gpu, *named.values_list("name", flat=True)])


def arch_condition(arch: str) -> Q:
    return has_facet("arch", canonical_arch(arch)) | has_facet("cc", arch.strip())


def model_condition(model: str) -> Q:
    """The model's name or part of it (`GLM-5`), its architecture or its family."""
    value = model.strip()
    named = LanguageModel.objects.filter(name__icontains=value).values_list("name", flat=True)
    return (
        has_any_facet("model", [value, *named])
        | has_facet("model.arch", value)
        | has_facet("model.family", value)
    )


def framework_condition(framework: str) -> Q:
    name, _, version = framework.strip().partition(" ")
    if not version:
        return has_facet("framework", name)
    # A version prefix: `sglang 0.5` is any 0.5.x release.
    releases = FrameworkRelease.objects.filter(name__iexact=name, version__istartswith=version)
    return has_any_facet(
        "framework.release", [f"{release.name} {release.version}" for release in releases]
    )


def flag_condition(flag: str) -> Q:
    return has_facet("flag", canonical_flag(flag))


# --- reading the query ----------------------------------------------------------------

# Shorter words that no document has are left out, not guessed at.
MIN_CORRECTED_CHARS = 4
# pg_trgm similarity (shared trigrams / all trigrams) a correction needs.
MIN_SIMILARITY = 0.4
# rapidfuzz ratio (0-100) a correction needs on SQLite, about the same strictness.
MIN_RATIO = 75.0
# On SQLite the word list is compared in Python: past this size, only words that
# start with the same character are.
SQLITE_WHOLE_LIST_UP_TO = 200_000


@dataclass(frozen=True)
class Reading:
    """How a query was read: the terms searched, and what was changed to get them."""

    terms: tuple[Term, ...]
    corrected: tuple[tuple[str, str], ...] = ()  # (as written, as searched)
    ignored: tuple[str, ...] = ()  # words no finding has, left out


def read_query(terms: tuple[Term, ...]) -> Reading:
    """A word no finding has cannot narrow a search; it can only empty it. Such a word
    is read as the closest indexed word (a typo), or else left out (`out of memory`
    where the findings say `OOM`)."""
    if len(terms) > ALL_TERMS_UP_TO:
        return Reading(terms)  # a pasted log: whole words, any may match, none corrected
    kept: list[Term] = []
    corrected: list[tuple[str, str]] = []
    ignored: list[str] = []
    for term in terms:
        completions = words_starting(term.joined)
        if completions:
            # A word the index has is matched as written; the start of one (`flashml`),
            # as the shortest words it starts. Not as a `:*` prefix: PostgreSQL's ts_rank
            # scores a prefix next to another word as if they were far apart.
            whole = completions[0] == term.joined
            kept.append(replace(term, completions=completions[:1] if whole else completions))
            continue
        closest = closest_word(term.joined) if len(term.joined) >= MIN_CORRECTED_CHARS else None
        if closest is None:
            ignored.append(term.written)
        else:
            kept.append(Term((closest,), written=term.written))
            corrected.append((term.written, closest))
    return Reading(tuple(dict.fromkeys(kept)), tuple(corrected), tuple(ignored))


# A prefix reads as at most this many words, the shortest first.
MAX_COMPLETIONS = 16


# The shortest are picked from the first this many in index order: a one-letter start
# must not sort every word of the knowledge base.
COMPLETION_CANDIDATES = 2000


def words_starting(start: str) -> tuple[str, ...]:
    """The word itself when the index has it, else the shortest words it starts."""
    if SearchWord.objects.filter(word=start).exists():
        return (start,)
    words = SearchWord.objects.filter(word__startswith=start).order_by("word")
    candidates = words.values_list("word", flat=True)[:COMPLETION_CANDIDATES]
    return tuple(sorted(candidates, key=lambda word: (len(word), word))[:MAX_COMPLETIONS])


def closest_word(word: str) -> str | None:
    if postgres():
        with connection.cursor() as cursor:
            cursor.execute(CLOSEST_WORD_SQL, {"word": word, "least": MIN_SIMILARITY})
            row = cursor.fetchone()
        return str(row[0]) if row else None
    words = SearchWord.objects.values_list("word", flat=True)
    if words.count() > SQLITE_WHOLE_LIST_UP_TO:
        words = words.filter(word__startswith=word[0])
    best = process.extractOne(word, list(words), scorer=fuzz.ratio, score_cutoff=MIN_RATIO)
    return str(best[0]) if best else None


# `%` narrows through the trigram index (at pg_trgm's looser default threshold).
CLOSEST_WORD_SQL = (
    "SELECT word FROM (SELECT word, similarity(word, %(word)s) AS close FROM kb_searchword "
    "WHERE word %% %(word)s) AS near WHERE close >= %(least)s "
    "ORDER BY close DESC, length(word), word LIMIT 1"
)


# --- search ---------------------------------------------------------------------------

# A search ranks at most this many matches. Past them, order helps no one, and a page
# says "1,000+": every later step (count, page, snippets) works on this list only.
RANKED_LIMIT = 1000


@dataclass(frozen=True)
class SearchResult:
    findings: QuerySet[Finding]  # best first, each with `rank`; newest first without a query
    count: int  # matches, at most RANKED_LIMIT + 1 (meaning "more")
    reading: Reading = Reading(())
    every_word: bool = True  # False: no finding had them all; these have some
    best_ids: tuple[int, ...] | None = None  # the ranked matches in order; None: no query
    ranked: QuerySet[Finding] | None = None  # every filtered finding, ranked: for pages

    def page(self, start: int, size: int) -> QuerySet[Finding]:
        """A page of `findings`; a ranked one is read by its ids, so only its rows are ranked."""
        if self.best_ids is None or self.ranked is None:
            return self.findings[start : start + size]
        return self.ranked.filter(pk__in=self.best_ids[start : start + size])


def search(
    query: str = "",
    *,
    filters: FindingFilters | None = None,
    queryset: QuerySet[Finding] | None = None,
) -> SearchResult:
    """Findings matching `query` and the filters: those with every word of the query
    (any word, for a pasted log; or when none has them all), best first, each annotated
    with `rank` (higher is better). Without a query, newest first.
    `snippet_for(finding, query)` gives the highlighted line.
    """
    filters = filters or FindingFilters()
    terms = parse_query(query)
    if (terms or filters != FindingFilters()) and SearchRefresh.objects.exists():
        refresh_queued()  # both read the documents
    queryset = queryset if queryset is not None else Finding.objects.all()
    if not terms:
        base = filter_findings(queryset, filters)
        count = base.order_by().values("pk")[: RANKED_LIMIT + 1].count()
        return SearchResult(base.order_by("-updated_at", "-id"), count)
    reading = read_query(terms)
    base = filter_findings(queryset, filters, ranked=True)
    if not reading.terms:
        return SearchResult(base.none(), 0, reading)
    # Snippets need the document's text only: the ranked sort then carries narrow rows.
    base = base.select_related("search_document").defer(*UNSHOWN_DOCUMENT_FIELDS)
    every = len(reading.terms) <= ALL_TERMS_UP_TO
    ranked, ids = ranked_matches(base, reading.terms, every)
    if not ids and every and len(reading.terms) > 1:
        ranked, ids = ranked_matches(base, reading.terms, every=False)
        every = False
    best = ranked.filter(AnyOf(F("pk"), ids)) if postgres() else ranked.filter(pk__in=ids)
    return SearchResult(best, len(ids), reading, every, tuple(ids), ranked)


def ranked_matches(
    base: QuerySet[Finding], terms: tuple[Term, ...], every: bool
) -> tuple[QuerySet[Finding], list[int]]:
    """The best matches' ids, best first (ties: newest id first, as the queryset orders
    them), and the findings ranked by the same measure in SQL."""
    if postgres():
        scores, rank = postgres_ranking(base, terms, every)
    else:
        scores, rank = sqlite_ranking(base, terms, every)
    ids = sorted(scores, key=lambda pk: (-scores[pk], -pk))
    return base.annotate(rank=rank).order_by("-rank", "-id"), ids


class AnyOf(Lookup):
    """`= ANY(%s)` with the ids as one array: a thousand placeholders cost milliseconds
    to compile and send, on every page."""

    lookup_name = "any_of"
    prepare_rhs = False

    def as_sql(self, compiler: Any, connection: Any) -> tuple[str, list[Any]]:
        lhs, lhs_params = self.process_lhs(compiler, connection)
        return f"{lhs} = ANY(%s)", [*lhs_params, list(self.rhs)]


def postgres_ranking(
    base: QuerySet[Finding], terms: tuple[Term, ...], every: bool
) -> tuple[dict[int, float], SearchRank]:
    """Rank (higher is better) of each of the best matches, and the rank as SQL."""
    source = (" & " if every else " | ").join(postgres_term(term) for term in terms)
    tsquery = SearchQuery(source, search_type="raw", config="simple")
    matches = base.filter(search_document__vector=tsquery)
    candidates = pasted_log_candidates(terms, source)
    if candidates is not None:
        matches = matches.filter(AnyOf(F("pk"), candidates))
    vector = F("search_document__vector")
    rank = SearchRank(vector, tsquery)
    matches = matches.prefetch_related(None)
    if rum_index_present():
        distance = RumDistance(vector, tsquery)
        best = matches.annotate(score=distance).order_by(distance.asc())
        rows = best.values_list("pk", "score")[: RANKED_LIMIT + 1]
        return {pk: 1 / distance if distance else 0.0 for pk, distance in rows}, rank
    rows = matches.annotate(score=rank).order_by("-score").values_list("pk", "score")
    return dict(rows[: RANKED_LIMIT + 1]), rank


class RumDistance(Func):
    """`vector <=> query` of the rum extension: 1 / ts_rank, which a RUM index yields in
    order as it scans, where ts_rank would be computed for every match and sorted."""

    arg_joiner = " <=> "
    template = "(%(expressions)s)"
    output_field = FloatField()


RUM_INDEX = "kb_search_vector_rum"
_rum_index: dict[str, bool] = {}


def rum_index_present() -> bool:
    """Whether migration 0008 could build the RUM index (the server has the extension)."""
    if connection.alias not in _rum_index:
        with connection.cursor() as cursor:
            cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = %s", [RUM_INDEX])
            _rum_index[connection.alias] = cursor.fetchone() is not None
    return _rum_index[connection.alias]


def forget_index_state() -> None:
    """After indexes change under a running process (tests, a migration run beside it)."""
    _rum_index.clear()


def postgres_term(term: Term) -> str:
    # Words are [a-z0-9]+ only (see ALNUM), so nothing here can break tsquery syntax.
    # An identifier is one word in the index (see identifier_wholes), never a phrase.
    return term.words[0] if len(term.words) == 1 else f"({' | '.join(term.words)})"


# A pasted log has words that are in nearly every document (`in`, `error`, `cuda`):
# ranking every document that has any of them would read the whole table. Those with
# the log's rare words come first, then the first others the index yields.
LOG_CANDIDATES = 1000
RARE_SHARE = 0.05
STATS_TTL_S = 300.0
_common_words: tuple[float, dict[str, float]] = (0.0, {})


def pasted_log_candidates(terms: tuple[Term, ...], tsquery_source: str) -> list[int] | None:
    """The documents worth ranking for a pasted log; None when all of them are."""
    if len(terms) <= ALL_TERMS_UP_TO:
        return None
    first = first_matches(tsquery_source, LOG_CANDIDATES)
    if len(first) < LOG_CANDIDATES:
        return None
    rare = [term for term in terms if share_of_documents_with(term.joined) < RARE_SHARE]
    if not rare:
        return first
    with_rare = first_matches(" | ".join(postgres_term(term) for term in rare), LOG_CANDIDATES)
    return list(dict.fromkeys(with_rare + first))


def first_matches(tsquery_source: str, limit: int) -> list[int]:
    with connection.cursor() as cursor:
        cursor.execute(FIRST_MATCHES_SQL, [tsquery_source, limit])
        return [finding_id for (finding_id,) in cursor.fetchall()]


def share_of_documents_with(word: str) -> float:
    """From PostgreSQL's statistics of the vectors: words it does not list are rare."""
    global _common_words
    fetched_at, shares = _common_words
    if time.monotonic() - fetched_at > STATS_TTL_S:
        shares = common_words()
        _common_words = (time.monotonic(), shares)
    return shares.get(word, 0.0)


def common_words() -> dict[str, float]:
    with connection.cursor() as cursor:
        cursor.execute(COMMON_WORDS_SQL)
        return {str(word): float(share) for word, share in cursor.fetchall()}


# A CTE the planner cannot push `LIMIT` into: with it, PostgreSQL expects early hits
# and reads every document in turn; without, it asks the full-text index.
FIRST_MATCHES_SQL = (
    "WITH hits AS MATERIALIZED (SELECT finding_id FROM kb_findingsearchdocument "
    "WHERE vector @@ to_tsquery('simple', %s)) SELECT finding_id FROM hits LIMIT %s"
)
COMMON_WORDS_SQL = (
    "SELECT word, share FROM pg_stats, "
    "unnest(most_common_elems::text::text[], most_common_elem_freqs) AS common(word, share) "
    "WHERE tablename = 'kb_findingsearchdocument' AND attname = 'vector' AND word IS NOT NULL"
)


def sqlite_ranking(
    base: QuerySet[Finding], terms: tuple[Term, ...], every: bool
) -> tuple[dict[int, float], Case]:
    ranks = fts_ranks(terms, every)
    ids = base.filter(pk__in=list(ranks)).values_list("pk", flat=True)
    scores = {pk: ranks[pk] for pk in ids}
    rank = Case(
        *(When(pk=pk, then=Value(score)) for pk, score in scores.items()),
        default=Value(0.0),
        output_field=FloatField(),
    )
    return scores, rank


def fts_ranks(terms: tuple[Term, ...], every: bool) -> dict[int, float]:
    sql = (
        f"SELECT rowid, -bm25({FTS_TABLE}, 10.0, 4.0, 2.0, 1.0) FROM {FTS_TABLE} "  # noqa: S608
        f"WHERE {FTS_TABLE} MATCH %s ORDER BY 2 DESC LIMIT {RANKED_LIMIT + 1}"
    )
    match = (" AND " if every else " OR ").join(
        "(" + " OR ".join(f'"{word}"' for word in term.words) + ")" for term in terms
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [match])
        return {int(pk): float(score) for pk, score in cursor.fetchall()}


# --- snippets -------------------------------------------------------------------------


def snippet_for(finding: Finding, query: str, reading: Reading | None = None) -> str:
    """A short stretch of the finding around the first hit, HTML-escaped, hits in <mark>.
    With the search's `reading`, words it corrected are marked as searched."""
    corrected = [searched for _, searched in reading.corrected] if reading else []
    pattern = highlight_pattern(parse_query(query), corrected)
    texts = snippet_sources(finding)
    if pattern is None:
        return html.escape(texts[0][:SNIPPET_CHARS]) if texts else ""
    for text in texts:
        match = pattern.search(text)
        if match:
            return marked(text, pattern, match.start())
    return html.escape(texts[0][:SNIPPET_CHARS]) if texts else ""


def snippet_sources(finding: Finding) -> list[str]:
    # search() select_related()s the document: no query per row.
    try:
        raw = finding.search_document.text
    except FindingSearchDocument.DoesNotExist:
        raw = finding.title
    return [line for line in raw.splitlines() if line.strip()]


SEPARATOR = r"[\s_\-.:/]?"


def highlight_pattern(
    terms: tuple[Term, ...], joined_words: Iterable[str] = ()
) -> re.Pattern[str] | None:
    """Parts may be written with any separator (or none) between them; so may any two
    letters of `joined_words`, indexed words whose parts are not known (`flashmlakv`)."""
    alternatives = [SEPARATOR.join(map(part_pattern, term.parts)) for term in terms]
    alternatives += [SEPARATOR.join(map(re.escape, word)) for word in joined_words]
    if not alternatives:
        return None
    return re.compile("|".join(sorted(alternatives, key=len, reverse=True)), re.IGNORECASE)


def part_pattern(part: str) -> str:
    arch = re.fullmatch(r"sm(\d{2,3}[a-z]?)", part)
    return rf"sm[\s_-]?{arch.group(1)}" if arch else re.escape(part)


def marked(text: str, pattern: re.Pattern[str], first_hit: int) -> str:
    start = max(0, first_hit - SNIPPET_CHARS // 3)
    window = text[start : start + SNIPPET_CHARS]
    pieces: list[str] = ["…" if start else ""]
    position = 0
    for match in pattern.finditer(window):
        pieces.append(html.escape(window[position : match.start()]))
        pieces.append(f"<mark>{html.escape(match.group())}</mark>")
        position = match.end()
    pieces.append(html.escape(window[position:]))
    if start + SNIPPET_CHARS < len(text):
        pieces.append("…")
    return "".join(pieces)
