"""Full-text search over findings, shared by the web pages and the REST API.

Error text is the hard case: `nsa_kv_cache_store_fp8`, `--mem-fraction-static`,
`memory_pool.py:set_kv_buffer`. Both databases' tokenizers cut identifiers
apart (and PostgreSQL's parser reads `self.nsa_kv` as a host name), so the
text is normalised here first: every identifier is indexed as its parts *and*
whole (`nsakvcachestorefp8`), and a query identifier matches either the whole
token or its parts as a phrase. GPU architectures are spelled one way
(`sm_120`, `SM120`, `sm 120` all become `sm120`).

PostgreSQL: weighted tsvector ('simple' config: no stemming, no stop words)
plus pg_trgm word similarity for typos. SQLite (`make run`): FTS5 with bm25.

Speed (bench/search_speed.py, 100k findings): filters read `facets` on the
document, never a join; the typo fallback and a pasted log rank a bounded set of
candidates rather than every document that shares a common word.
"""

from __future__ import annotations

import html
import re
import time
from collections.abc import Iterable, Iterator
from contextlib import contextmanager
from contextvars import ContextVar
from dataclasses import dataclass
from datetime import datetime

from django.contrib.postgres.search import (
    SearchQuery,
    SearchRank,
    SearchVector,
    TrigramWordSimilarity,
)
from django.db import connection, transaction
from django.db.models import Case, F, FloatField, Q, QuerySet, Value, When
from django.utils import timezone

from kb.models import Finding, Hardware, LanguageModel
from kb.models.search import FindingSearchDocument, SearchRefresh
from kb.transaction_marks import first_time, forget

FTS_TABLE = "kb_finding_fts"
MAX_QUERY_CHARS = 500
MAX_SAMPLE_CHARS = 20_000
# Past this many terms a query is a pasted log, not a search: any term may match.
ALL_TERMS_UP_TO = 8
SQLITE_MAX_HITS = 500
SNIPPET_CHARS = 180
MAX_WORDS_CHARS = 20_000
WORD = re.compile(r"[a-z0-9][a-z0-9_.\-]*[a-z0-9]|[a-z0-9]")

ARCH_SPELLING = re.compile(r"\bsm[\s_-]?(\d{2,3}[a-z]?)\b", re.IGNORECASE)
IDENTIFIER = re.compile(r"[A-Za-z0-9]+(?:[_\-.:/][A-Za-z0-9]+)*")
ALNUM = re.compile(r"[a-z0-9]+")


# --- query terms ----------------------------------------------------------------


@dataclass(frozen=True)
class Term:
    """One word of a query; an identifier keeps its parts in order."""

    parts: tuple[str, ...]

    @property
    def joined(self) -> str:
        return "".join(self.parts)


def normalise_arch(text: str) -> str:
    return ARCH_SPELLING.sub(lambda m: "sm" + m.group(1).lower(), text)


def parse_query(query: str) -> tuple[Term, ...]:
    text = normalise_arch(query[:MAX_QUERY_CHARS].lower())
    terms = (Term(tuple(ALNUM.findall(token))) for token in IDENTIFIER.findall(text))
    unique = dict.fromkeys(term for term in terms if term.parts)
    return tuple(unique)


# --- documents ------------------------------------------------------------------


def searchable(text: str) -> str:
    """Text as both databases should tokenize it: parts, then whole identifiers."""
    text = normalise_arch(text)
    wholes = {
        "".join(ALNUM.findall(piece.lower()))
        for token in IDENTIFIER.findall(text)
        for piece in identifier_pieces(token)
    }
    plain = " ".join(ALNUM.findall(text.lower()))
    return plain + "\n" + " ".join(sorted(w for w in wholes if w))


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
    facets = gpu_facets(finding.gpus.all())
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
            update_fields=[*INDEXED_FIELDS, "text", "words", "facets", "built_at"],
        )
        FindingSearchDocument.objects.filter(finding_id__in=gone).delete()
        if connection.vendor == "postgresql":
            FindingSearchDocument.objects.filter(
                finding_id__in=[d.finding_id for d in documents]
            ).update(vector=weighted_vector())
        for document in documents:
            write_fts_row(document.finding_id, {f: getattr(document, f) for f in INDEXED_FIELDS})
        for finding_id in gone:
            write_fts_row(finding_id, None)


INDEXED_FIELDS = ("title", "errors", "context", "body")
UNSHOWN_DOCUMENT_FIELDS = tuple(
    f"search_document__{name}" for name in (*INDEXED_FIELDS, "words", "facets", "vector")
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
        words=distinct_words(fields),
        facets=facet_text(facets),
        built_at=timezone.now(),
    )


def distinct_words(fields: DocumentFields) -> str:
    """The document's words, each once: a traceback repeats itself, and trigram similarity
    over the whole text would cost a scan of every repetition."""
    words = dict.fromkeys(WORD.findall(fields.text.lower()))
    return " ".join(words)[:MAX_WORDS_CHARS]


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


def filter_findings(queryset: QuerySet[Finding], filters: FindingFilters) -> QuerySet[Finding]:
    if filters.status:
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
    if not value.strip():
        return Q(pk__in=[])  # `--` or `sm_` names no facet: nothing has it
    return Q(**{f"{FACETS}__contains": facet_text([(key, value)])})


def facet_matching(key: str, words: Iterable[str]) -> Q:
    """A `key` line holding every one of `words` somewhere (lookaheads: in any order)."""
    words = [word.lower() for word in words]
    ahead = "".join(f"(?=[^\n]*{regex_literal(word)})" for word in words)
    # The plain substrings let the trigram index narrow the rows the pattern runs on.
    condition = Q(**{f"{FACETS}__regex": f"\n{re.escape(key)}={ahead}"})
    for word in words:
        condition &= Q(**{f"{FACETS}__contains": word})
    return condition


def regex_literal(word: str) -> str:
    # A backslash before a non-alphanumeric means the character itself, in Python's
    # regular expressions (SQLite) and PostgreSQL's alike; re.escape's output differs.
    return "".join(char if char.isalnum() else "\\" + char for char in word)


def gpu_condition(gpu: str) -> Q:
    return facet_matching("gpu", gpu.split())


def arch_condition(arch: str) -> Q:
    return has_facet("arch", canonical_arch(arch)) | has_facet("cc", arch.strip())


def model_condition(model: str) -> Q:
    return (
        facet_matching("model", [model.strip()])
        | has_facet("model.arch", model)
        | has_facet("model.family", model)
    )


def framework_condition(framework: str) -> Q:
    name, _, version = framework.strip().partition(" ")
    if not version:
        return has_facet("framework", name)
    # A version prefix: `sglang 0.5` is any 0.5.x release.
    return Q(**{f"{FACETS}__contains": f"\nframework.release={name.lower()} {version.lower()}"})


def flag_condition(flag: str) -> Q:
    return has_facet("flag", canonical_flag(flag))


# --- search ---------------------------------------------------------------------------


def search_findings(
    query: str = "",
    *,
    filters: FindingFilters | None = None,
    queryset: QuerySet[Finding] | None = None,
) -> QuerySet[Finding]:
    """Findings matching `query` (all of its words; any, for a pasted log) and the filters.

    With a query, best first and each annotated with `rank` (higher is better);
    without one, newest first. `snippet_for(finding, query)` gives the highlighted line.
    """
    filters = filters or FindingFilters()
    terms = parse_query(query)
    if (terms or filters != FindingFilters()) and SearchRefresh.objects.exists():
        refresh_queued()  # both read the documents
    base = filter_findings(queryset if queryset is not None else Finding.objects.all(), filters)
    if not terms:
        return base.order_by("-updated_at", "-id")
    # Snippets need the document's text only: the ranked sort then carries narrow rows.
    base = base.select_related("search_document").defer(*UNSHOWN_DOCUMENT_FIELDS)
    if connection.vendor == "postgresql":
        return postgres_search(base, query, terms)
    return sqlite_search(base, query, terms)


def postgres_search(
    base: QuerySet[Finding], query: str, terms: tuple[Term, ...]
) -> QuerySet[Finding]:
    """Full-text matches, best first; only when there are none, trigram similarity.

    The two are not OR-ed in one query: that keeps PostgreSQL off the GIN index of
    the vectors and makes it scan every document.
    """
    tsquery_source = tsquery_text(terms)
    text = query.strip()[:MAX_QUERY_CHARS]
    if len(text) >= 4 and not any_full_text_match(tsquery_source):
        return typo_search(base, text)
    tsquery = SearchQuery(tsquery_source, search_type="raw", config="simple")
    rank = SearchRank(F("search_document__vector"), tsquery)
    matches = base.filter(search_document__vector=tsquery)
    candidates = pasted_log_candidates(terms, tsquery_source)
    if candidates is not None:
        matches = matches.filter(pk__in=candidates)
    return matches.annotate(rank=rank).order_by("-rank", "-id")


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


# A CTE the planner cannot push `LIMIT 1` into: with it, PostgreSQL expects an early
# hit and reads every document in turn; without, it asks the GIN index (ms, not 100).
ANY_MATCH_SQL = (
    "WITH hits AS MATERIALIZED (SELECT finding_id FROM kb_findingsearchdocument "
    "WHERE vector @@ to_tsquery('simple', %s)) SELECT 1 FROM hits LIMIT 1"
)
# Likewise for the typo fallback, which also stops at this many candidates: each one
# costs a word-similarity scan of its document, and a typo rarely needs more.
TYPO_CANDIDATES = 200
TYPO_CANDIDATES_SQL = (
    "WITH close AS MATERIALIZED (SELECT finding_id FROM kb_findingsearchdocument "
    "WHERE words %%> %s) SELECT finding_id FROM close LIMIT %s"
)


FIRST_MATCHES_SQL = (
    "WITH hits AS MATERIALIZED (SELECT finding_id FROM kb_findingsearchdocument "
    "WHERE vector @@ to_tsquery('simple', %s)) SELECT finding_id FROM hits LIMIT %s"
)
COMMON_WORDS_SQL = (
    "SELECT word, share FROM pg_stats, "
    "unnest(most_common_elems::text::text[], most_common_elem_freqs) AS common(word, share) "
    "WHERE tablename = 'kb_findingsearchdocument' AND attname = 'vector' AND word IS NOT NULL"
)


def any_full_text_match(tsquery_source: str) -> bool:
    with connection.cursor() as cursor:
        cursor.execute(ANY_MATCH_SQL, [tsquery_source])
        return cursor.fetchone() is not None


def typo_search(base: QuerySet[Finding], text: str) -> QuerySet[Finding]:
    """Typos and partial strings: documents with a close enough stretch of words."""
    with connection.cursor() as cursor:
        cursor.execute(TYPO_CANDIDATES_SQL, [text, TYPO_CANDIDATES])
        candidates = [finding_id for (finding_id,) in cursor.fetchall()]
    similar = TrigramWordSimilarity(Value(text), "search_document__words")
    return base.filter(pk__in=candidates).annotate(rank=similar * 0.1).order_by("-rank", "-id")


def tsquery_text(terms: tuple[Term, ...]) -> str:
    operator = " & " if len(terms) <= ALL_TERMS_UP_TO else " | "
    return operator.join(postgres_term(term) for term in terms)


def postgres_term(term: Term) -> str:
    # Parts are [a-z0-9]+ only (see ALNUM), so nothing here can break tsquery syntax.
    if len(term.parts) == 1:
        return f"{term.joined}:*"
    phrase = " <-> ".join(term.parts[:-1] + (f"{term.parts[-1]}:*",))
    return f"({term.joined}:* | ({phrase}))"


def sqlite_search(
    base: QuerySet[Finding], query: str, terms: tuple[Term, ...]
) -> QuerySet[Finding]:
    ranks = fts_ranks(terms)
    if not ranks:
        return (
            base.filter(search_document__text__icontains=query.strip()[:MAX_QUERY_CHARS])
            .annotate(rank=Value(0.0, output_field=FloatField()))
            .order_by("-id")
        )
    rank = Case(
        *(When(pk=pk, then=Value(score)) for pk, score in ranks.items()),
        default=Value(0.0),
        output_field=FloatField(),
    )
    return base.filter(pk__in=list(ranks)).annotate(rank=rank).order_by("-rank", "-id")


def fts_ranks(terms: tuple[Term, ...]) -> dict[int, float]:
    sql = (
        f"SELECT rowid, -bm25({FTS_TABLE}, 10.0, 4.0, 2.0, 1.0) FROM {FTS_TABLE} "  # noqa: S608
        f"WHERE {FTS_TABLE} MATCH %s ORDER BY 2 DESC LIMIT {SQLITE_MAX_HITS}"
    )
    with connection.cursor() as cursor:
        cursor.execute(sql, [fts_query_text(terms)])
        return {int(pk): float(score) for pk, score in cursor.fetchall()}


def fts_query_text(terms: tuple[Term, ...]) -> str:
    operator = " AND " if len(terms) <= ALL_TERMS_UP_TO else " OR "
    return operator.join(fts_term(term) for term in terms)


def fts_term(term: Term) -> str:
    if len(term.parts) == 1:
        return f'"{term.joined}"*'
    return f'("{term.joined}"* OR "{" ".join(term.parts)}"*)'


# --- snippets -------------------------------------------------------------------------


def snippet_for(finding: Finding, query: str) -> str:
    """A short stretch of the finding around the first hit, HTML-escaped, hits in <mark>."""
    pattern = highlight_pattern(parse_query(query))
    texts = snippet_sources(finding)
    if pattern is None:
        return html.escape(texts[0][:SNIPPET_CHARS]) if texts else ""
    for text in texts:
        match = pattern.search(text)
        if match:
            return marked(text, pattern, match.start())
    return html.escape(texts[0][:SNIPPET_CHARS]) if texts else ""


def snippet_sources(finding: Finding) -> list[str]:
    # search_findings() select_related()s the document: no query per row.
    try:
        raw = finding.search_document.text
    except FindingSearchDocument.DoesNotExist:
        raw = finding.title
    return [line for line in raw.splitlines() if line.strip()]


def highlight_pattern(terms: tuple[Term, ...]) -> re.Pattern[str] | None:
    if not terms:
        return None
    # Parts may be written with any separator (or none) between them.
    alternatives = sorted(
        (r"[\s_\-.:/]?".join(map(part_pattern, term.parts)) for term in terms),
        key=len,
        reverse=True,
    )
    return re.compile("|".join(alternatives), re.IGNORECASE)


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
