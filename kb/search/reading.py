"""Reading a query against the words the index has: a known word as itself, the start
of one as the words it starts, a misspelt one as the closest known word, an unknown
short one not at all. See docs/search.md."""

from __future__ import annotations

from dataclasses import dataclass, replace

from django.db import connection
from rapidfuzz import fuzz, process

from decisiontree import flags
from decisiontree.vocabulary import load as load_vocabulary
from kb.models.search import SearchWord
from kb.search.backend import postgres
from kb.search.text import ALNUM, Term, searchable

# Past this many terms a query is a pasted log, not a search: any term may match.
ALL_TERMS_UP_TO = 8
# Shorter words that no document has are left out, not guessed at.
MIN_CORRECTED_CHARS = 4
# pg_trgm similarity (shared trigrams / all trigrams) a correction needs.
MIN_SIMILARITY = 0.4
# rapidfuzz ratio (0-100) a correction needs on SQLite, about the same strictness.
MIN_RATIO = 75.0
# On SQLite the word list is compared in Python: past this size, only words that
# start with the same character are.
SQLITE_WHOLE_LIST_UP_TO = 200_000
# A prefix reads as at most this many words, the shortest first.
MAX_COMPLETIONS = 16
# The shortest are picked from the first this many in index order: a one-letter start
# must not sort every word of the knowledge base.
COMPLETION_CANDIDATES = 2000


@dataclass(frozen=True)
class Reading:
    """How a query was read: the terms searched, and what was changed to get them."""

    terms: tuple[Term, ...]
    corrected: tuple[tuple[str, str], ...] = ()  # (as written, as searched)
    ignored: tuple[str, ...] = ()  # words no finding has, left out
    # (as written, the architecture searched beside it): "5090" also finds sm_120.
    architectures: tuple[tuple[str, str], ...] = ()

    @property
    def spellings(self) -> tuple[str, ...]:
        """Indexed words searched for a flag's other spellings (marked in snippets)."""
        return tuple(word for term in self.terms if term.option for word in term.completions)

    @property
    def architecture_words(self) -> tuple[str, ...]:
        """The indexed words of `architectures` ("sm120"), marked in snippets too."""
        return tuple(searchable(arch) for _, arch in self.architectures)


def read_query(terms: tuple[Term, ...]) -> Reading:
    """A word no finding has cannot narrow a search; it can only empty it. Such a word
    is read as the closest indexed word (a typo), or else left out (`out of memory`
    where the findings say `OOM`)."""
    if len(terms) > ALL_TERMS_UP_TO:
        return Reading(terms)  # a pasted log: whole words, any may match, none corrected
    kept: list[Term] = []
    corrected: list[tuple[str, str]] = []
    ignored: list[str] = []
    architectures: list[tuple[str, str]] = []
    for term in terms:
        spellings = indexed_spellings(term)
        if spellings:
            kept.append(replace(term, completions=spellings))
            continue
        gpu = gpu_and_architecture(term)
        if gpu is not None:
            words, arch = gpu
            if words:
                kept.append(replace(term, completions=words))
                architectures.append((term.written, arch))
            else:  # a GPU no finding is for: never read as another GPU's name
                ignored.append(term.written)
            continue
        # An identifier (`GLM-5`) is also a run inside longer ones (`GLM-5-NVFP4`), which
        # the index holds only as words it starts (kb.search.text.identifier_wholes).
        identifier = len(term.parts) > 1
        completions = words_starting(term.joined, every_run=identifier)
        if completions:
            # A word the index has is matched as written; the start of one (`flashml`),
            # as the shortest words it starts. Not as a `:*` prefix: PostgreSQL's ts_rank
            # scores a prefix next to another word as if they were far apart.
            whole = completions[0] == term.joined and not identifier
            kept.append(replace(term, completions=completions[:1] if whole else completions))
            continue
        closest = closest_word(term.joined) if len(term.joined) >= MIN_CORRECTED_CHARS else None
        if closest is None:
            ignored.append(term.written)
        else:
            kept.append(Term((closest,), written=term.written))
            corrected.append((term.written, closest))
    return Reading(
        tuple(dict.fromkeys(kept)), tuple(corrected), tuple(ignored), tuple(architectures)
    )


def gpu_and_architecture(term: Term) -> tuple[tuple[str, ...], str] | None:
    """A GPU's name or short name (`5090`, `B200`, `rtx-5090`) is searched as itself and
    as its architecture, which the findings for that GPU family name (`sm_120` holds for
    every Blackwell workstation card): the indexed words of the two (none when the index
    has neither), and the architecture. None for any other word."""
    gpu = load_vocabulary().gpu_named(term.written)
    if gpu is None or not gpu.arch:
        return None
    wanted = (term.joined, searchable(gpu.arch))
    present = set(SearchWord.objects.filter(word__in=wanted).values_list("word", flat=True))
    return tuple(word for word in wanted if word in present), gpu.arch


def indexed_spellings(term: Term) -> tuple[str, ...]:
    """For a flag written as an option, every spelling of it that the index has:
    `--nsa-decode-backend` also finds `--dsa-decode-backend`, `--tp` finds `--tp-size`."""
    if not term.option:
        return ()
    spellings = {term.joined} | {
        "".join(ALNUM.findall(spelling.lower()))
        for framework in flags.FRAMEWORKS
        if (spec := flags.flag(term.written, framework)) is not None
        for spelling in (spec.name, *spec.aliases, *(old for old, _ in spec.renamed))
    }
    if len(spellings) == 1:
        return ()  # no table knows it: read as any other word
    present = SearchWord.objects.filter(word__in=spellings).values_list("word", flat=True)
    return tuple(sorted(present, key=lambda word: (word != term.joined, len(word), word)))


def words_starting(start: str, *, every_run: bool = False) -> tuple[str, ...]:
    """The word itself when the index has it, else the shortest words it starts; with
    `every_run`, the word and the shortest words it starts (the word first)."""
    if not every_run and SearchWord.objects.filter(word=start).exists():
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
