"""Diagnosis: from a pasted error and its context to ranked fixes, each with its path.

1. parse the paste, fold what its log lines say the server ran with into the context;
2. look its signatures up: candidate findings (`decisiontree.match`);
3. walk the graph from the matched findings (`decisiontree.walk`): fixes ranked by
   path score, those known not to help apart;
4. ask what unknown fact would change the first fix (`decisiontree.questions`);
5. tell the verdict truthfully: a match seen on another GPU architecture, model
   architecture, framework or release is "the same error, different setup";
6. with no match, the nearest findings and why they were not taken, and words of
   the paste that the knowledge base has, to search by.

Every score is a product of named factors, so the `why` list can show it.
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Callable, Iterable, Sequence
from functools import cache

from decisiontree.answer import (
    Diagnosis,
    FixToTry,
    NearMiss,
    NotAsLaunched,
    NotHelpful,
    PathStep,
    Question,
    RankedFix,
    Verdict,
    WhyStep,
    WithheldChange,
    worth_trying,
)
from decisiontree.backend_gpus import with_launch_backends
from decisiontree.build_support import build_support
from decisiontree.context import Context, nvidia_smi_processes
from decisiontree.fingerprint import (
    UNNAMED_TYPES,
    WARNING_TYPE,
    Signature,
    class_shown,
    log_warnings_beside_errors,
    quoted_error,
    signatures_of,
    text_terms,
    warning_signature,
)
from decisiontree.flag_check import flag_problems, named_flags
from decisiontree.flag_values import FlagValue, paste_values
from decisiontree.flags import canonical_flag, flags_in_text
from decisiontree.gpu_memory import (
    RAN_OUT,
    MemoryReading,
    OutOfMemory,
    listed_processes,
    out_of_memory,
    readings,
)
from decisiontree.gpu_requirement import gpu_requirements
from decisiontree.graph import KnowledgeGraph
from decisiontree.host_faults import host_faults
from decisiontree.match import Candidate, MatchLevel, Query, shortlist
from decisiontree.model_weights import weights_reading
from decisiontree.questions import ask_questions
from decisiontree.records import FindingRecord
from decisiontree.retrieval import background_documents
from decisiontree.server_memory import KV_CACHE_SHORT, RankMemory, log_readings, memory_log
from decisiontree.setup import (
    UNDECIDED_VALUES,
    State,
    gpu_bytes,
    launched_or_default,
    normal_value,
    setup_differences,
    setup_not_known,
)
from decisiontree.spelling import flag_names, older_spellings, spell_flag
from decisiontree.traceback import parse
from decisiontree.vocabulary import Vocabulary, load
from decisiontree.walk import (
    leading_visit,
    spelled_summary,
    spelling_release,
    tied_causes,
    tuning,
    walk,
)

NEAREST = 3  # findings shown beside "no known match"
SEARCH_WORDS = 4
HALF_AS_RARE = 0.25
# Matches that tie the paste to the finding by its frames, its message's template or a
# reviewer's word; the setup need not. A match on words alone ("terms") is "known" only
# when the setup says so too (see `setup_not_known`).
PINNED_LAYERS = frozenset({"linked", "fingerprint", "template"})
SAME_MESSAGE = frozenset({"fingerprint", "template"})  # the layers that found the message itself

# SGLang reports the sparse-attention kernels it picked; the picked ones are what ran.
BACKEND_CHOICE = re.compile(
    r"Set (?:NSA|DSA) backends for (?P<kv>\w+) KV Cache:\s*prefill=(?P<prefill>\w+),"
    r"\s*decode=(?P<decode>\w+)"
)
KV_DTYPE_CHOICE = re.compile(r"Setting KV cache dtype to (?P<kv>\w+)")
MEMORY_WORD = re.compile(r"\bmemory\b", re.IGNORECASE)


# --- the pipeline ---------------------------------------------------------------


def diagnose(
    text: str,
    context: Context,
    graph: KnowledgeGraph,
    *,
    vocabulary: Vocabulary | None = None,
    plain: bool = False,
) -> Diagnosis:
    """Ranked fixes for a pasted error. `InputRejected` propagates: callers show it.

    `plain=True` ranks without walking the graph (the matched findings' own fixes
    only), as FixGraph first did; the benchmark compares the two.
    """
    vocabulary = vocabulary or load()
    parsed = parse(text)
    signatures = signatures_of(parsed, warnings=True)
    context = with_log_evidence(context, parsed.warnings)
    queries = queries_for(signatures, text)
    found = graph.index.lookup(queries)
    candidates = matched(found)
    through: tuple[str, ...] = ()
    if not candidates and (warned := log_warnings_beside_errors(parsed)):
        found, candidates, through = matched_through_warnings(graph, queries, warned, found)
    signature = signatures[0] if signatures else None
    pasted = quoted_error(parsed, signature.exception_type if signature else None)
    problems = flag_problems(text, context)
    # A refused command line is the whole answer; what its message names is in `problems`.
    named = () if any(p.refused for p in problems) else named_flags(pasted.said, context)
    memory, log, memory_readings = memory_told(text, pasted.lines, context, vocabulary)
    told = with_launch_backends(
        gpu_requirements(parsed.said, context, vocabulary), context, vocabulary, parsed.said
    )
    if candidates:
        values = paste_values(text) + tuple(
            value for reading in memory_readings for value in reading.values
        )

        def other_failure() -> bool:
            """The paste's own error is shown, and nothing in it ran out of memory: no
            message says so, and none gives the figures of an allocation that failed.
            (Asked only of a words-only match to an out-of-memory finding: reading a long
            paste for it costs more than the lookup.)"""
            shown = signature is not None and not parsed.only_wrappers
            return shown and not memory and RAN_OUT.search(text) is None

        answer = ranked_answer(
            candidates,
            signature,
            context,
            graph,
            vocabulary,
            plain=plain,
            values=values,
            other_failure=other_failure,
            signatures=signatures,
        )
    else:
        nearest = explained(found[:NEAREST], queries, graph)
        answer = no_match(
            signature, nearest, context, graph, vocabulary, text, launch_flags(context)
        )
    return dataclasses.replace(
        answer,
        error_lines=pasted.lines,
        type_as_pasted=pasted.renamed_from,
        flag_problems=problems,
        named_flags=named,
        host_faults=host_faults(text),
        build_support=build_support(text, context, vocabulary),
        gpu_requirements=told,
        memory_at_failure=memory,
        memory_log=log,
        memory_readings=memory_readings,
        cause_not_pasted=parsed.only_wrappers,
        killed_by=parsed.killed_by,
        through_warnings=through,
    )


def memory_told(
    text: str, error_lines: Sequence[str], context: Context, vocabulary: Vocabulary
) -> tuple[tuple[OutOfMemory, ...], tuple[RankMemory, ...], tuple[MemoryReading, ...]]:
    """The GPU memory the paste tells of, for an error about memory (an out-of-memory
    message, or an error line that says "memory"): its figures, the start-up log's
    stages, an nvidia-smi process list, and what they show, the weights' share of each
    GPU among them where the model's size is known. A crash gets none of it."""
    memory = out_of_memory(text)
    about_memory = (MEMORY_WORD, KV_CACHE_SHORT)  # the older KV message says no "memory"
    if not memory and not any(p.search(line) for line in error_lines for p in about_memory):
        return (), (), ()
    log = memory_log(text)
    total = gpu_total(memory, context, vocabulary)
    stages = log_readings(
        log,
        text,
        gpu_total=total,
        utilization=launched_or_default(context, "gpu-memory-utilization"),
        fraction=launched_or_default(context, "mem-fraction-static"),
        memory=memory,
    )
    measured = next(
        (s.used for rank in log for s in rank.stages if s.stage == "weights loaded" and s.used),
        None,
    )
    weights = weights_reading(context, vocabulary, total, failed=True, measured=measured)
    shown = readings(memory) + stages + ((weights,) if weights else ())
    return memory, log, shown + listed_processes(nvidia_smi_processes(text))


def gpu_total(
    memory: Sequence[OutOfMemory], context: Context, vocabulary: Vocabulary
) -> int | None:
    """Bytes of one GPU: as a memory message in the paste measured it, else the size the
    vocabulary gives the user's GPU."""
    measured = next((oom.total for oom in memory if oom.total), None)
    return measured or gpu_bytes(context, vocabulary)


def _pinned_elsewhere(
    leader: Candidate,
    candidates: Sequence[Candidate],
    context: Context,
    graph: KnowledgeGraph,
    vocabulary: Vocabulary,
) -> bool:
    """Is the paste's own error (its frames, its message's template) known as another
    finding that matched better, and that the setup set back? A finding that leads on
    words alone is then only like the paste. (One that leads on its evidence or its met
    conditions, beside a finding of the same error that fits the setup too, may be known.)"""
    return leader.layer not in PINNED_LAYERS and any(
        c.layer in PINNED_LAYERS
        and c.score > leader.score
        and setup_differences(graph.conditions_of(c.finding_id), context, vocabulary)
        for c in candidates
        if c.finding_id != leader.finding_id
    )


def _ordinary_messages_held(
    finding_id: int, signatures: Sequence[Signature], graph: KnowledgeGraph
) -> bool:
    """Whether every error of the paste whose message the finding holds prints a message
    of ordinary words only."""
    held = [s for s in signatures if finding_id in graph.index.findings_holding(s)]
    return bool(held) and all(graph.index.ordinary_message(s) for s in held)


def ranked_answer(
    candidates: Sequence[Candidate],
    signature: Signature | None,
    context: Context,
    graph: KnowledgeGraph,
    vocabulary: Vocabulary,
    *,
    plain: bool,
    values: Sequence[FlagValue] = (),
    other_failure: Callable[[], bool] = lambda: False,
    signatures: Sequence[Signature] = (),
) -> Diagnosis:
    """The answer of a paste that matched: the walk's fixes, its questions, and the
    verdict told truthfully about the setup. `values` are what the paste's figures give
    flags that a fix names without one; `other_failure()`, whether the paste shows its
    own error and no memory running out; `signatures`, all of the paste's errors."""
    result = walk(candidates, context, graph, vocabulary, plain=plain, values=values)
    questions = ask_questions(
        candidates, context, graph, vocabulary, plain=plain, fixes=result.fixes
    )
    lead = leading_visit(result.fixes, result.visits)
    leader = next(c for c in candidates if c.finding_id == lead.matched.id)
    level = leader.level
    if level is MatchLevel.NONE:
        level = MatchLevel.SIMILAR  # a runner-up leads where the first match has no usable fix
    conditions = graph.conditions_of(lead.matched.id)
    differences = setup_differences(conditions, context, vocabulary)
    # The same message as a sample's, from other code, where every word of it is one that
    # ordinary output prints (PyTorch's out-of-memory line): it says which error, not which
    # failure, so it weighs as words do.
    ordinary_elsewhere = leader.layer == "template" and _ordinary_messages_held(
        lead.matched.id, signatures, graph
    )
    pinned = leader.layer in PINNED_LAYERS and not ordinary_elsewhere
    # Matched on words alone: only the setup could tell this is the known issue, and
    # nothing in the paste says it is.
    not_known = () if pinned else setup_not_known(conditions, context, vocabulary)
    pinned_elsewhere = _pinned_elsewhere(leader, candidates, context, graph, vocabulary)
    # A finding about memory running out, matched on words, for a paste that shows another
    # error and no memory running out: the words are the stack's, the failure is another.
    not_out_of_memory = lead.matched.kind == "oom" and not pinned and other_failure()
    reasons = (differences, not_known, pinned_elsewhere, not_out_of_memory, ordinary_elsewhere)
    if any(reasons) and level is MatchLevel.KNOWN:
        level = MatchLevel.SIMILAR  # the same error, but not the known issue on this setup
    shown = {visit.matched.id for visit in result.visits}
    return Diagnosis(
        level,
        signature,
        result.fixes,
        result.not_helpful,
        questions,
        context,
        tuple(c for c in candidates if c.finding_id in shown),
        different_setup=differences,
        setup_not_known=not_known if level is MatchLevel.SIMILAR else (),
        no_memory_ran_out=not_out_of_memory and level is MatchLevel.SIMILAR,
        ordinary_message_elsewhere=ordinary_elsewhere and level is MatchLevel.SIMILAR,
        launch_flags=launch_flags(context),
        not_as_launched=not_as_launched(context),
        tied_causes=tied_causes(result, graph),
    )


def queries_for(signatures: Sequence[Signature], text: str) -> list[Query]:
    if signatures:
        return [Query.of(signature) for signature in signatures]
    # Nothing error-shaped: the words alone may still be specific enough.
    return [Query(terms=text_terms(text))]


def matched_through_warnings(
    graph: KnowledgeGraph,
    queries: Sequence[Query],
    warned: Sequence[str],
    found: tuple[Candidate, ...],
) -> tuple[tuple[Candidate, ...], tuple[Candidate, ...], tuple[str, ...]]:
    """(found, matched, the warnings matched through) with the log's warnings looked up
    beside errors that matched nothing: the findings that hold one of the warnings as a
    sample (the same fingerprint or message template), each marked as matched through a
    warning (never "known": the error itself is not the known one). A server warns of
    many things on every start, so a warning that only shares words with a finding is not
    evidence enough ("The model has a long context length ... may cause OOM" led a crash
    whose cause was not pasted to the KV-cache entry). As they were where none does."""
    holding = {w: graph.index.findings_holding(warning_signature(w)) for w in warned}
    holders = frozenset().union(*holding.values())
    if not holders:
        return found, (), ()
    widened = graph.index.lookup([*queries, *(Query.of(warning_signature(w)) for w in warned)])
    held = tuple(
        dataclasses.replace(c, through_warning=True) for c in widened if c.finding_id in holders
    )
    shown = {c.finding_id for c in matched(held)}
    if not shown:
        return found, (), ()
    return held, matched(held), tuple(w for w in warned if holding[w] & shown)


def matched(candidates: Sequence[Candidate]) -> tuple[Candidate, ...]:
    """Candidates above the lower threshold, and the runner-ups listed after them (the
    walk weighs them in the context)."""
    return shortlist(candidates, tuning().relative_cutoff)


def launch_flags(context: Context) -> tuple[tuple[str, str], ...]:
    """The context's flags as the answer spells them (the user's release)."""
    return tuple(
        (spell_flag(name, context.framework, context.spelling_version), value)
        for name, value in sorted(context.flags.items())
    )


def not_as_launched(context: Context) -> tuple[NotAsLaunched, ...]:
    """Flags the server ran with another value than its launch command gave, as its log
    shows (a printout of its settings, a line saying what it chose): the framework
    overrode the flag, or resolved an `auto`."""
    found = []
    for name, launched in sorted(context.launched_flags.items()):
        ran = context.flags.get(name)
        if context.sources.get(f"flag.{name}") != "log" or ran is None:
            continue
        if _value_words(launched) != _value_words(ran):
            flag = spell_flag(name, context.framework, context.spelling_version)
            found.append(NotAsLaunched(flag, launched, ran))
    return tuple(found)


def _value_words(value: str) -> list[str]:
    """A value as words: `1 2 4` and `[1, 2, 4]`, `{"a":1}` and `{'a': 1}` are one value."""
    return re.findall(r"[\w.:/+-]+", normal_value(value))


# --- no known match: a next step -------------------------------------------------


def explained(
    candidates: Sequence[Candidate], queries: Sequence[Query], graph: KnowledgeGraph
) -> list[Candidate]:
    """The candidates with the terms they share with the paste (a lookup explains only
    those it shows)."""
    return [
        c
        if c.matched_terms
        else dataclasses.replace(c, matched_terms=graph.index.shared_terms(queries, c.finding_id))
        for c in candidates
    ]


def no_match(
    signature: Signature | None,
    found: Sequence[Candidate],
    context: Context,
    graph: KnowledgeGraph,
    vocabulary: Vocabulary,
    text: str,
    flags: tuple[tuple[str, str], ...],
) -> Diagnosis:
    """No fixes, ever; the nearest findings under their own key, and words to search by."""
    near = [
        c
        for c in found[:NEAREST]
        if c.finding_id in graph.findings and is_near(c, signature, graph)
    ]
    nearest = tuple(
        NearMiss(
            graph.findings[c.finding_id],
            c.score,
            why_not(c, signature, context, graph, vocabulary),
            fixes_to_try(graph.findings[c.finding_id], context),
        )
        for c in near
    )
    # A finding named for its error class alone, sharing only ordinary words, is no closer
    # than none: those words ("you", "init") would make a useless search.
    close = any(c.layer in SAME_MESSAGE or telling(c.matched_terms) for c in near)
    words = search_words(signature, text, near or found, graph, close=close)
    return Diagnosis(
        MatchLevel.NONE,
        signature,
        (),
        (),
        (),
        context,
        nearest=nearest,
        search_words=words,
        launch_flags=flags,
        not_as_launched=not_as_launched(context),
    )


def fixes_to_try(finding: FindingRecord, context: Context) -> tuple[FixToTry, ...]:
    """A nearest finding's fixes but those known not to help, spelled as the fixes of an
    answer are: for the user's release, with the older names when it is unknown."""
    framework, version = spelling_release(context, finding)
    return tuple(
        FixToTry(
            fix,
            spelled_summary(fix, context, finding),
            older_spellings(flag_names(fix.changes), framework, version),
        )
        for fix in finding.fixes
        if worth_trying(fix)
    )


def is_near(candidate: Candidate, signature: Signature | None, graph: KnowledgeGraph) -> bool:
    """Close enough to name beside "no known match": it shares words no ordinary output
    has, or the same error class, and those words carry enough identifying information
    (the index's specificity, 0..1)."""
    if same_class(signature, graph.exception_types_of(candidate.finding_id)):
        shared = list(candidate.matched_terms)
    else:
        shared = telling(candidate.matched_terms)
    return graph.index.specificity(shared) >= tuning().nearest_specificity


def same_class(signature: Signature | None, types: Sequence[str]) -> bool:
    """Whether the paste's error names a class that one of `types` names too ("ErrorLog" and
    "IncompleteTraceback" are our words for a paste that names none)."""
    return (
        signature is not None
        and signature.exception_type not in UNNAMED_TYPES
        and signature.exception_type in types
    )


@cache
def ordinary_words() -> frozenset[str]:
    """Words of the matcher's background of ordinary output ("error", "was", "kernel")."""
    return frozenset(word for document in background_documents() for word in document)


def telling(words: Iterable[str]) -> list[str]:
    """The words no ordinary output has: what a search or a near finding can go by."""
    return [w for w in words if w not in ordinary_words()]


def why_not(
    candidate: Candidate,
    signature: Signature | None,
    context: Context,
    graph: KnowledgeGraph,
    vocabulary: Vocabulary,
) -> str:
    """ "same error class (RuntimeError), different setup: framework vllm here, ..."."""
    parts: list[str] = []
    types = graph.exception_types_of(candidate.finding_id)
    named = [t for t in types if t not in UNNAMED_TYPES]
    if signature and candidate.layer in SAME_MESSAGE:
        # The message as printed (from other code, or from no code either side names): that
        # message alone was not enough.
        named_here = signature.exception_type not in UNNAMED_TYPES
        label = f" ({class_shown(signature)})" if named_here else ""
        other_code = ", raised from other code" if candidate.layer == "template" else ""
        parts.append(f"same error message{label}{other_code}")
    elif signature and same_class(signature, types):
        # Every Python warning is one type to the signature: the categories may differ.
        warned = signature.exception_type == WARNING_TYPE
        kind = "a Python warning" if warned else signature.exception_type
        parts.append(f"same error class ({kind}), another message")
    elif named:
        parts.append(f"another error ({named[0]})")
    else:
        parts.append("another error message")
    differences = setup_differences(graph.conditions_of(candidate.finding_id), context, vocabulary)
    if differences:
        parts.append("different setup: " + "; ".join(d.describe() for d in differences))
    shared = ", ".join(telling(candidate.matched_terms)[:3])
    common = f"shares only {shared}" if shared else "shares only ordinary words"
    parts.append(f"{common}: too little to be the same issue")
    return "; ".join(parts)


def search_words(
    signature: Signature | None,
    text: str,
    nearest: Sequence[Candidate],
    graph: KnowledgeGraph,
    *,
    close: bool = True,
) -> tuple[str, ...]:
    """The paste's most specific words that the knowledge base also holds: the words it
    shares with the nearest findings, those no ordinary output has first, then the
    rarest others (none commoner than half the rarest word).

    With no finding `close` enough to name, a word that several findings share is too
    common to name one of them, yet a search by it still lists them: then only the
    words no ordinary output has are offered."""
    paste = set(signature.terms if signature else text_terms(text))
    shared = {t for c in nearest for t in c.matched_terms} & paste
    words = [w for w in shared if re.fullmatch(r"[\w.-]{3,}", w)]
    # One word's specificity is its idf over twice the rarest word's: 0.25 is half as rare.
    words = [
        w for w in words if telling([w]) or (close and graph.index.specificity([w]) >= HALF_AS_RARE)
    ]
    words.sort(key=lambda w: (w not in telling([w]), -graph.index.weight(w), w))
    return tuple(words[:SEARCH_WORDS])


# --- the context, plus what the log says the server really ran with -------------


def with_log_evidence(context: Context, warnings: Iterable[str]) -> Context:
    """Fold flag values revealed by log lines into the context (launch values win)."""
    found = log_flags(warnings, context.framework)
    flags = dict(context.flags)
    sources = dict(context.sources)
    for name, value in found.items():
        if normal_value(flags.get(name)) in UNDECIDED_VALUES:
            flags[name] = value
            sources[f"flag.{name}"] = "log"
    if flags == dict(context.flags):
        return context
    return dataclasses.replace(context, flags=flags, sources=sources)


def log_flags(warnings: Iterable[str], framework: str | None) -> dict[str, str]:
    found: dict[str, str] = {}
    for line in warnings:
        for name, value in flags_in_text(line, framework):
            if value:
                found[name] = value
        found.update(_backend_choice(line))
    return found


def _backend_choice(line: str) -> dict[str, str]:
    chosen: dict[str, str] = {}
    if (kv := KV_DTYPE_CHOICE.search(line)) is not None:
        chosen["kv-cache-dtype"] = kv["kv"]
    if (picked := BACKEND_CHOICE.search(line)) is not None:
        chosen["kv-cache-dtype"] = picked["kv"]
        for phase in ("prefill", "decode"):
            name = canonical_flag(f"nsa-{phase}-backend", "sglang")
            chosen[name] = picked[phase]
    return chosen


__all__ = [
    "Diagnosis",
    "NearMiss",
    "NotHelpful",
    "PathStep",
    "Question",
    "RankedFix",
    "State",
    "Verdict",
    "WhyStep",
    "WithheldChange",
    "diagnose",
]
