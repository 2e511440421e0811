"""Free-form incident write-ups: narrative prose with logs, commands and flags woven in.

A write-up yields one finding, the incident it tells. What was tried is read
from the sentences around each flag change ("did not help", "finally worked"),
and from how consecutive launch commands differ.
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from dataclasses import dataclass, replace

from decisiontree import flags
from decisiontree.documents import derive, episodes, facts, samples
from decisiontree.documents._vocab import VocabularyLike
from decisiontree.documents.changes import changes_in, describe_changes, summarize, worded_change
from decisiontree.documents.model import ExtractedFinding, ExtractedFix
from decisiontree.documents.outcomes import judge_outcome, lexicon, tokens
from decisiontree.documents.structure import fence_text, fences_in, heading, lines_of, prose_mask
from decisiontree.flags import known_flag
from decisiontree.records import Change, ChangeAction, Outcome

# Entities are looked for in the head of huge documents only: a 5 MB log dump
# names its GPU and model early, and scanning all of it would cost seconds.
_ENTITY_SCAN_CHARS = 400_000
_MAX_SENTENCES = 5_000
_MAX_SENTENCE_CHARS = 2_000  # longer "sentences" are dumps, not narrative
_PROSE_FLAG_CHARS = 30_000
_SENTENCE_END = re.compile(r"(?<=[.!?])\s+(?=[A-Z`\"'(\[*-])|\n(?=\s*`?--[a-zA-Z])")
_ITEM_START = re.compile(r"\n(?=\s*(?:[-*+]|\d{1,2}[.)])\s)")
_MARKDOWN_NOISE = re.compile(r"^\s*(?:#{1,6}\s+|>\s?|[-*+]\s+|\d+[.)]\s+)|\*\*|__|<[^>\n]{1,80}>")
_CAUSE_CUES = (
    re.compile(r"\broot[- ]cause\b", re.IGNORECASE),
    re.compile(r"\b(?:turned out|turns out)\b", re.IGNORECASE),
    re.compile(
        r"\bthe (?:real |actual |underlying )?(?:cause|culprit|problem|issue|reason) (?:is|was)\b",
        re.I,
    ),
    re.compile(r"\bcaused by\b|\bbecause\b|\bdue to\b", re.IGNORECASE),
)
_NON_FLAGS = frozenset({"model-path", "model"})
_EMPHASIS = re.compile(r"\*\*|__|`")
# A sentence restating the setup ("the model card recommends --x") reports no experiment.
_DESCRIPTION = re.compile(
    r"\b(?:model card|recommend\w*|by default|defaults? to|documented|(?:initial|original)"
    r" (?:deployment|launch|command|config\w*|setup|parameters|flags))\b",
    re.IGNORECASE,
)
# Only a sentence that *does* something earns the verdict of the sentence after it.
_CHANGE_VERB = re.compile(
    r"\b(?:switch\w*|tr(?:y|ied|ying)|set|setting|add\w*|lower\w*|rais\w*|increas\w*|decreas\w*"
    r"|reduc\w*|bump\w*|chang\w*|replac\w*|pass\w*|drop\w*|remov\w*|enabl\w*|disabl\w*"
    r"|relaunch\w*|restart\w*|overrid\w*|forc\w*|pinn?\w*|upgrad\w*|downgrad\w*|install\w*"
    r"|export\w*|patch\w*|revert\w*"
    r"|went with|moved to|swapp\w*|gave it|appl(?:y|ied))\b",
    re.IGNORECASE,
)


@dataclass(frozen=True)
class _Document:
    """A write-up cut into what extraction needs: samples, launches, the narrative around them."""

    lines: list[str]
    sample_texts: tuple[str, ...]
    launches: list[facts.Launch]
    narrative: list[str]  # lines of prose with samples and launch commands blanked out
    head: str  # the text entity scans look at
    setup_end: int  # first line of the first launch or error: above it, prose sets the scene
    sample_lines: tuple[tuple[int, str], ...] = ()  # (line, sample) in document order


def parse_writeup(
    text: str, vocabulary: VocabularyLike
) -> tuple[str, tuple[ExtractedFinding, ...], tuple[str, ...]]:
    """(title, findings, reviewer notes) of a free-form write-up."""
    doc = _cut(text, vocabulary)
    problems: list[str] = []
    finding = _finding(doc, vocabulary, problems)
    told = _episodes(doc, finding, vocabulary)
    if len(told) < 2:
        finding = _with_summaries(finding)
        if told:
            fixes = _with_summaries(replace(finding, fixes=episodes.deduplicated(told[0].fixes)))
            extra = {**dict(finding.extra), **_symptom_extra(told[0])}
            finding = replace(finding, fixes=fixes.fixes, extra=extra)
        return finding.title, (finding,), tuple(problems)
    return finding.title, tuple(_episode_finding(finding, e) for e in told), tuple(problems)


def _cut(text: str, vocabulary: VocabularyLike) -> _Document:
    lines = lines_of(text)
    fences = fences_in(lines)
    prose = prose_mask(lines, fences)
    spans = samples.find_unfenced_samples(lines, prose)
    error_fences = [f for f in fences if samples.block_has_error([lines[k] for k in f.content])]
    found = [fence_text(lines, f) for f in error_fences]
    found += [_unindent(lines[s.start : s.end]) for s in spans]
    narrative = [line if prose[i] else "" for i, line in enumerate(lines)]
    _blank_title_line(narrative)
    for span in spans:
        narrative[span.start : span.end] = [""] * (span.end - span.start)
    launches = facts.launches_in(lines, vocabulary)
    for launch in launches:
        if not launch.inline:  # a command quoted inside a sentence still belongs to the sentence
            narrative[launch.start : launch.end] = [""] * (launch.end - launch.start)
    found += _last_resort_samples(found, lines, prose, narrative)
    kept = tuple(dict.fromkeys(s for s in found if s.strip()))[: samples.MAX_SAMPLES]
    # Emphasis splits "vLLM **0.10.1**"; entity scans read the text without it.
    head = _EMPHASIS.sub("", text[:_ENTITY_SCAN_CHARS])
    starts = [f.open for f in error_fences]
    starts += [s.start for s in spans] + [launch.start for launch in launches if not launch.inline]
    placed = [(f.open, fence_text(lines, f)) for f in error_fences]
    placed += [(s.start, _unindent(lines[s.start : s.end])) for s in spans]
    shown = {sample for _, sample in placed}
    placed += [(_line_of(lines, sample), sample) for sample in kept if sample not in shown]
    return _Document(
        lines, kept, launches, narrative, head, min(starts, default=0), tuple(sorted(placed))
    )


_TITLE_LINE_MAX = 200


def _blank_title_line(narrative: list[str]) -> None:
    """A plain-text title ("Debugging an FP8 incompatibility") names the story; it reports
    no failure and no attempt of its own. Markdown headings are units of their own already."""
    first = next((i for i, line in enumerate(narrative) if line.strip()), None)
    if first is None:
        return
    line = narrative[first].strip()
    after = narrative[first + 1] if first + 1 < len(narrative) else ""
    titled = not line.endswith((".", "!", "?", ":")) and len(line) <= _TITLE_LINE_MAX
    alone = not after.strip() or bool(_SETEXT_RULE.match(after))
    if titled and alone and not line.startswith("#"):
        narrative[first] = ""


def _line_of(lines: list[str], sample: str) -> int:
    first = sample.strip().split("\n", 1)[0][:80]
    return next((i for i, line in enumerate(lines) if first and first in line), 0)


def _unindent(block: list[str]) -> str:
    """A markdown indented code block (every line 4+ spaces in) holds the paste minus 4 spaces."""
    text = [line for line in block if line.strip()]
    if text and all(line.startswith(("    ", "\t")) for line in text):
        block = [line[1:] if line.startswith("\t") else line[4:] for line in block]
    return "\n".join(block).strip("\n")


def _last_resort_samples(
    found: list[str], lines: list[str], prose: list[bool], narrative: list[str]
) -> list[str]:
    """Errors quoted inside sentences; warning log lines when nothing else is there."""
    joined = "\n".join(found)
    inline = [
        e
        for e in samples.inline_errors("\n".join(narrative)[:_ENTITY_SCAN_CHARS])
        if e not in joined
    ]
    if found or inline:
        return inline
    return [lines[s.start] for s in samples.warning_lines(lines, prose)][:5]


def _finding(doc: _Document, vocabulary: VocabularyLike, problems: list[str]) -> ExtractedFinding:
    launched = next(
        (launch.framework for launch in reversed(doc.launches) if launch.framework), None
    )
    framework, framework_version = facts.framework_in(doc.head, launched)
    flags = _flags(doc, vocabulary, framework)
    model = facts.model_in(doc.head, vocabulary, _launched_model(doc))
    gpus = facts.gpus_in(_without_samples(doc), vocabulary)
    sentences = _sentences(doc.narrative)
    fixes, works_command = _fixes(doc, sentences, vocabulary, framework)
    metrics = facts.metrics_in(_metric_lines(doc.narrative))
    title, summary = _title(doc), _summary(doc)
    kind = derive.infer_kind(
        samples=doc.sample_texts,
        headline=f"{title}\n{summary}",
        has_before_after=metrics.before is not None,
        has_works=works_command is not None or metrics.throughput_tok_s is not None,
    )
    _note_gaps(doc, fixes, problems)
    return ExtractedFinding(
        title=title,
        summary=summary,
        kind=kind,
        status=_status(fixes, kind, sentences),
        gpus=gpus,
        model=model.model,
        model_arch=model.arch,
        quantization=model.quantization or flags.get("quantization"),
        framework=framework,
        framework_version=framework_version,
        versions=facts.versions_in(doc.head),
        flags=tuple(flags.items()),
        samples=doc.sample_texts,
        cause=_cause(sentences),
        conditions=derive.derived_conditions(
            gpus=gpus, model_arch=model.arch, framework=framework, flags=flags, fixes=fixes
        ),
        fixes=fixes,
        metrics=metrics,
        works_command=works_command,
        body="\n".join(doc.lines).strip(),
    )


def _without_samples(doc: _Document) -> str:
    """The text minus its error samples: GPU names in a traceback are rare, its lines are many."""
    text = "\n".join(doc.lines)[:_ENTITY_SCAN_CHARS]
    for sample in doc.sample_texts:
        text = text.replace(sample, "")
    return text


_METRIC_WORDS = ("tok", "ttft", "itl", "tpot", "concurren", "from")


def _metric_lines(narrative: list[str]) -> str:
    """Lines that can hold a figure; the metric patterns need not scan the rest."""
    text = "\n".join(line for line in narrative if line)[:_ENTITY_SCAN_CHARS]
    lines = (
        line for line in text.split("\n") if any(word in line.lower() for word in _METRIC_WORDS)
    )
    return "\n".join(lines)


_SAYS_RESOLVED = re.compile(r"\b(?:fixed it|resolved|solved|works now|fixed the)\b", re.IGNORECASE)


def _status(fixes: tuple[ExtractedFix, ...], kind: str, sentences: list[_Sentence]) -> str:
    """From the fixes; a story saying "X fixed it" in words we cannot structure is resolved too."""
    status = derive.infer_status(fixes, kind)
    if status != "open":
        return status
    said = any(
        _SAYS_RESOLVED.search(s.text) and judge_outcome(s.text) is Outcome.RESOLVES
        for s in sentences
    )
    return "resolved" if said else status


def _launched_model(doc: _Document) -> str | None:
    return next((launch.model for launch in reversed(doc.launches) if launch.model), None)


def _flags(
    doc: _Document, vocabulary: VocabularyLike, framework: str | None
) -> dict[str, str | None]:
    """The configuration the error appeared with: the first launch's flags, plus flags later
    launches add; a later launch's new *value* is a fix attempt, not the failing setting.
    Without a launch command, the flags the prose mentions first."""
    merged: dict[str, str | None] = {}
    for launch in doc.launches:
        for name, value in launch.flags.items():
            if name not in _NON_FLAGS:
                merged.setdefault(name, value)
    if merged:
        return merged
    prose = "\n".join(doc.narrative)[:_PROSE_FLAG_CHARS]
    for name, said in vocabulary.flags_in_text(prose, framework):
        if name not in _NON_FLAGS:
            merged.setdefault(name, said)  # the first mention is the setting as launched
    return merged


# -- sentences and what they say ----------------------------------------------------------


@dataclass(frozen=True)
class _Sentence:
    text: str
    unit: int  # sentences of one paragraph or list item share a unit; verdicts stay inside it
    item: bool  # the unit is a list item: short, about one experiment
    line: int = 0  # first line of its paragraph or list item
    section: str = ""  # the heading above it, lower case
    opens_section: bool = False  # the first sentence under that heading


_ITEM_MARK = re.compile(r"\s*(?:[-*+]|\d{1,2}[.)])\s")
_SETEXT_RULE = re.compile(r"^\s*(?:={3,}|-{3,})\s*$")
_BOLD_LINE = re.compile(r"^\s*\*\*([^*\n]{2,80}?):?\*\*:?\s*$")


def _sentences(narrative: list[str]) -> list[_Sentence]:
    """Sentences of the prose, by paragraph and list item; never across a blank line."""
    sentences: list[_Sentence] = []
    section, opens = "", False
    for unit, (line, text) in enumerate(_units(narrative)):
        title = _unit_heading(text)
        if title is not None:
            section, opens = title.lower(), True
            continue
        item = bool(_ITEM_MARK.match(text))
        for sentence in _SENTENCE_END.split(text.strip()):
            if sentence.strip():
                plain = " ".join(sentence[:_MAX_SENTENCE_CHARS].split())
                sentences.append(_Sentence(plain, unit, item, line, section, opens))
                opens = False
            if len(sentences) >= _MAX_SENTENCES:
                return sentences
    return sentences


def _units(narrative: list[str]) -> Iterator[tuple[int, str]]:
    """(first line, text) of each paragraph and list item; a heading line is a unit of its own."""
    for start, paragraph in _paragraphs(narrative):
        line = start
        for piece in _ITEM_START.split(paragraph):
            if piece.strip():
                yield line, piece
            line += piece.count("\n") + 1  # the split ate the newline before an item


def _paragraphs(narrative: list[str]) -> Iterator[tuple[int, str]]:
    line = 0
    for paragraph in "\n".join(narrative).split("\n\n"):
        if paragraph.strip():
            start = line + len(paragraph) - len(paragraph.lstrip("\n"))
            parts = _heading_apart(start, paragraph) if "#" in paragraph else [(start, paragraph)]
            yield from parts
        line += paragraph.count("\n") + 2


def _heading_apart(start: int, paragraph: str) -> Iterator[tuple[int, str]]:
    """A heading line directly above its text still starts a unit of its own."""
    block: list[str] = []
    for i, line in enumerate(paragraph.split("\n"), start):
        if not (line.startswith("#") and heading(line)):
            start = i if not block else start
            block.append(line)
            continue
        if block:
            yield start, "\n".join(block)
            block = []
        yield i, line
    if block:
        yield start, "\n".join(block)


def _unit_heading(text: str) -> str | None:
    """The title of a heading unit: `## Fix`, a setext `Fix` over `===`, or a bold-only line."""
    lines = text.strip().split("\n")
    if len(lines) == 1:
        found = heading(lines[0]) if lines[0].startswith("#") else None
        bold = _BOLD_LINE.match(lines[0])
        return found[1] if found else (bold.group(1) if bold else None)
    if len(lines) == 2 and _SETEXT_RULE.match(lines[1]) and len(lines[0]) <= 200:
        return lines[0].strip()
    return None


def _fixes(
    doc: _Document, sentences: list[_Sentence], vocabulary: VocabularyLike, framework: str | None
) -> tuple[tuple[ExtractedFix, ...], str | None]:
    diffs, works = _launch_fixes(doc, vocabulary, framework)
    # The first launch is the setup prose restates, unless it is the only, working one.
    baseline = _first_launch(doc, vocabulary, framework)
    found = _prose_fixes(sentences, vocabulary, framework, baseline, doc.setup_end)
    told = {change for fix in found for change in fix.changes}
    by_changes: dict[frozenset[Change], ExtractedFix] = {}
    for fix in [*_untold(diffs, told), *found]:
        by_changes.pop(frozenset(fix.changes), None)
        by_changes[frozenset(fix.changes)] = fix
    return tuple(by_changes.values()), works


def _untold(diffs: list[ExtractedFix], told: set[Change]) -> list[ExtractedFix]:
    """What prose already judged is taken from prose; a relaunch diff keeps only the rest."""
    kept = []
    for fix in diffs:
        rest = tuple(change for change in fix.changes if change not in told)
        if rest:
            kept.append(
                ExtractedFix(f"relaunched with {describe_changes(rest)}", rest, fix.outcome)
            )
    return kept


def _prose_fixes(
    sentences: list[_Sentence],
    vocabulary: VocabularyLike,
    framework: str | None,
    launched: dict[str, str],
    setup_end: int,
) -> list[ExtractedFix]:
    fixes = []
    for k, sentence in enumerate(sentences):
        if _is_description(sentence.text):
            continue
        changes = changes_in(sentence.text, vocabulary, framework) or _pronoun_change(
            sentences, k, vocabulary, framework
        )
        changes = _real_changes(changes, launched)
        if not changes:
            fixes += _worded_fix(sentence)
            continue
        outcome = judge_outcome(sentence.text)
        if sentence.line >= setup_end:  # setting the scene, a sentence borrows no verdict
            outcome = _borrowed_verdict(sentences, k, vocabulary, framework, outcome)
        if outcome is not None:
            fixes.append(ExtractedFix(sentence.text, changes, outcome))
    return fixes


def _borrowed_verdict(
    sentences: list[_Sentence],
    k: int,
    vocabulary: VocabularyLike,
    framework: str | None,
    outcome: Outcome | None,
) -> Outcome | None:
    """The verdict of the list item, the sentences after, a "Fix:" lead-in or a "Fix" heading."""
    sentence = sentences[k]
    if _starts_experiment(sentence.text) or sentence.item:
        outcome = _item_verdict(sentences, k, vocabulary, framework) if sentence.item else outcome
        outcome = outcome or _outcome_after(sentences, k, vocabulary, framework)
    outcome = outcome or _lead_in_verdict(sentences, k)
    if outcome is None and _FIX_HEADING.match(sentence.section):
        return Outcome.RESOLVES if _starts_experiment(sentence.text) else None
    return outcome


# A section that tells the fix: "## Fix", "Solution", "What finally worked", "How we fixed it".
_FIX_HEADING = re.compile(
    r"^(?:\d{1,2}[.)]\s*)?(?:the |our )?(?:fix(?:es)?\b|solution|resolution|fixed by\b"
    r"|what (?:finally |actually |eventually )?(?:fixed|solved|worked|helped)\b"
    r"|how (?:we|i) fixed)",
    re.IGNORECASE,
)
# "We run X, which has served fine for months" is setup; "the defaults work" is no experiment.
_KEEPS_THE_REST = re.compile(
    r"\b(?:otherwise|unchanged|same as before|(?:re)?launch\w* with|relaunch\w*|restart\w*)\b",
    re.IGNORECASE,
)


_ASIDE = re.compile(r"\([^()]{0,300}\)")


def _is_description(text: str) -> bool:
    """A restated setup, unless it only says the rest of the launch stayed as it was. An
    aside in brackets ("(expecting it to default to BF16)") does not make one."""
    found = _DESCRIPTION.search(_ASIDE.sub(" ", text))
    if found is None:
        return False
    original = found.group(0).lower().startswith(("initial", "original"))
    return not (original and _KEEPS_THE_REST.search(text))


def _worded_fix(sentence: _Sentence) -> list[ExtractedFix]:
    """A fix no flag can say ("Fixed by running one image tag on both nodes"), when it helped."""
    change = worded_change(sentence.text, opens_fix_section=_opens_fix_section(sentence))
    if change is None:
        return []
    outcome = judge_outcome(sentence.text)
    if outcome is None and _opens_fix_section(sentence):
        outcome = Outcome.RESOLVES
    if outcome is None or not outcome.helps:
        return []
    return [ExtractedFix(sentence.text, (change,), outcome)]


def _opens_fix_section(sentence: _Sentence) -> bool:
    return sentence.opens_section and bool(_FIX_HEADING.match(sentence.section))


_LEAD_IN_FIX = re.compile(
    r"^(?:the |our )?(?:fix|solution|workaround|resolution|what (?:finally )?(?:worked"
    r"|fixed it))\b.{0,80}:$",
    re.IGNORECASE,
)


def _lead_in_verdict(sentences: list[_Sentence], k: int) -> Outcome | None:
    """ "Fix:" then a block of commands: the unit of commands takes the lead-in's verdict."""
    if k == 0 or sentences[k - 1].unit == sentences[k].unit:
        return None
    lead_in = sentences[k - 1].text
    if not lead_in.endswith(":"):
        return None
    if _LEAD_IN_FIX.match(lead_in) or _WORKING_LEAD_IN.search(lead_in):
        return Outcome.RESOLVES
    return judge_outcome(lead_in)


def _starts_experiment(text: str) -> bool:
    """A sentence that does something, or opens with the change itself ("`--x 1`. Same error.")."""
    return bool(_CHANGE_VERB.search(text)) or bool(
        re.match(r"[`'\"(]*(?:--|[A-Z][A-Z0-9_]{2,}=)", text)
    )


_PRONOUN_CHANGE = re.compile(
    r"\b(?:dropp|lower|rais|reduc|increas|bump|set|chang|cut|halv|doubl|tak|brought)\w*\s+(?:it"
    r"|that|this|the value)"
    r"(?:\s+(?:back\s+)?(?:down|up))?\s+to\s+`?([\w.:-]{1,40})",
    re.IGNORECASE,
)


def _pronoun_change(
    sentences: list[_Sentence], k: int, vocabulary: VocabularyLike, framework: str | None
) -> tuple[Change, ...]:
    """`I had --mem-fraction-static 0.9 in there. Dropped it to 0.82` sets the flag just named."""
    match = _PRONOUN_CHANGE.search(sentences[k].text)
    if match is None or k == 0 or sentences[k - 1].unit != sentences[k].unit:
        return ()
    named = {
        c.name
        for c in changes_in(sentences[k - 1].text, vocabulary, framework)
        if c.action is ChangeAction.SET_FLAG
    }
    if len(named) != 1:
        return ()
    return (Change(ChangeAction.SET_FLAG, named.pop(), match.group(1).rstrip(".")),)


def _item_verdict(
    sentences: list[_Sentence], k: int, vocabulary: VocabularyLike, framework: str | None
) -> Outcome | None:
    """A list item is one experiment: judge all of it, unless it holds another change too."""
    unit = [s for s in sentences[k:] if s.unit == sentences[k].unit]
    if any(changes_in(s.text, vocabulary, framework) for s in unit[1:]):
        return judge_outcome(sentences[k].text)
    return judge_outcome(" ".join(s.text for s in unit))


def _real_changes(changes: tuple[Change, ...], launched: dict[str, str]) -> tuple[Change, ...]:
    """A flag restated at the value it was first launched with is a description, not a change;
    a logging switch (`NCCL_DEBUG=INFO`) is how one looked, not what one changed."""
    return tuple(
        c
        for c in changes
        if not (c.action is ChangeAction.SET_FLAG and launched.get(c.name) == (c.value or "true"))
        and not (c.action is ChangeAction.SET_ENV and _DIAGNOSTIC_ENV.search(c.name))
    )


_DIAGNOSTIC_ENV = re.compile(r"(?:^|_)(?:DEBUG|LOG|LOGGING|VERBOSE|VERBOSITY|TRACE)(?:_|$)")


def _outcome_after(
    sentences: list[_Sentence], k: int, vocabulary: VocabularyLike, framework: str | None
) -> Outcome | None:
    """`I switched to X. It still crashed.`: the verdict often comes a sentence or two later."""
    for following in sentences[k + 1 : k + 4]:
        if following.unit != sentences[k].unit or changes_in(following.text, vocabulary, framework):
            return None
        outcome = judge_outcome(following.text)
        if outcome is not None:
            return outcome
    return None


def _relaunches(doc: _Document) -> Iterator[tuple[facts.Launch, tuple[Change, ...]]]:
    """Each launch shown, with its changes to the flags and environment in force before it
    (none for the first)."""
    flags: dict[str, str] = {}
    env: dict[str, str] = {}
    for index, launch in enumerate(doc.launches):
        changes = (
            _diff(flags, dict(launch.flags)) + _env_diff(env, dict(launch.env)) if index else ()
        )
        flags.update(launch.flags)
        env.update(launch.env)
        yield launch, changes


def _launch_fixes(
    doc: _Document, vocabulary: VocabularyLike, framework: str | None
) -> tuple[list[ExtractedFix], str | None]:
    """Each relaunch is an experiment: its changes are the diff to what ran before it."""
    fixes: list[ExtractedFix] = []
    works: str | None = None
    for launch, changes in _relaunches(doc):
        outcome = _verdict_near(doc, launch)
        if outcome is Outcome.RESOLVES:
            works = launch.command.strip()
        if changes and outcome is not None:
            fixes.append(
                ExtractedFix(f"relaunched with {describe_changes(changes)}", changes, outcome)
            )
    return fixes, works


def _first_launch(
    doc: _Document, vocabulary: VocabularyLike, framework: str | None
) -> dict[str, str]:
    """The failing launch the story starts from; none when the only launch shown is the one
    that finally worked (its flags are the fixes, not the setting that failed)."""
    if not doc.launches:
        return {}
    _, works = _launch_fixes(doc, vocabulary, framework)
    first = doc.launches[0]
    return {} if works == first.command.strip() else dict(first.flags)


def _launch_events(doc: _Document, framework: str | None) -> list[episodes.Event]:
    """A relaunch shown as a command block is an attempt at that point of the story: its
    changes against what ran before, judged by the prose around it (or by what follows)."""
    found: list[episodes.Event] = []
    for launch, changes in _relaunches(doc):
        if not changes or launch.inline:
            continue  # a command inside a sentence is that sentence's attempt
        outcome = _verdict_near(doc, launch)
        passage = launch.command.strip()
        fix = (
            ExtractedFix(passage, changes, outcome)
            if outcome is not None
            else episodes.PendingFix(passage, changes)
        )
        event = episodes.Event((launch.start, -1), fixes=(fix,), text=passage, restates=True)
        found.append(event)
    return found


def _diff(before: dict[str, str], after: dict[str, str]) -> tuple[Change, ...]:
    changes = [
        Change(ChangeAction.SET_FLAG, name, None if value == "true" else value)
        for name, value in after.items()
        if name not in _NON_FLAGS and before.get(name) != value
    ]
    # An abbreviated relaunch ("same as before plus --x") is not a removal of everything else.
    if len(after) * 2 >= len(before):
        changes += [Change(ChangeAction.REMOVE_FLAG, name) for name in before if name not in after]
    return tuple(changes)


def _env_diff(before: dict[str, str], after: dict[str, str]) -> tuple[Change, ...]:
    return tuple(
        Change(ChangeAction.SET_ENV, name, value)
        for name, value in after.items()
        if before.get(name) != value
        and name not in _PLUMBING_ENV
        and not _DIAGNOSTIC_ENV.search(name)
    )


# Which GPUs a process sees is deployment plumbing, not a fix.
_PLUMBING_ENV = frozenset({"CUDA_VISIBLE_DEVICES", "HF_TOKEN", "HF_HOME", "HUGGING_FACE_HUB_TOKEN"})
_WORKING_LEAD_IN = re.compile(
    r"\b(?:final(?:ly)?|working|what (?:runs|works|we run)|now running|in production"
    r"|known[- ]good)\b",
    re.IGNORECASE,
)


def _verdict_near(doc: _Document, launch: facts.Launch) -> Outcome | None:
    after = _prose_near(doc.narrative, launch.end, step=1)
    lead_in = _prose_near(doc.narrative, launch.start - 1, step=-1)
    verdict = judge_outcome(after) or judge_outcome(lead_in)
    if verdict is None and _WORKING_LEAD_IN.search(lead_in):
        return Outcome.RESOLVES
    return verdict


def _prose_near(narrative: list[str], start: int, step: int) -> str:
    """The first sentence of prose after (step 1) or the last before (step -1) a line."""
    picked: list[str] = []
    i = start
    while 0 <= i < len(narrative) and len(picked) < 4:
        if narrative[i].strip():
            picked.append(narrative[i])
        elif picked:
            break
        i += step
    text = " ".join(picked if step > 0 else reversed(picked))
    parts = _SENTENCE_END.split(text)
    return (parts[0] if step > 0 else parts[-1]) if parts else ""


# -- title, summary, cause ----------------------------------------------------------------


def _title(doc: _Document) -> str:
    for line in doc.narrative[:200]:
        found = heading(line)
        if found:
            return _plain(found[1])[:200]
    first = next((line for line in doc.lines if line.strip()), "")
    return _plain(first)[:200]


def _summary(doc: _Document) -> str:
    """The first real paragraph: not the title line, not a heading, a dozen words at least."""
    title = _title(doc)
    for paragraph in "\n".join(doc.narrative[:2000]).split("\n\n"):
        text = _plain(paragraph)
        if text == title or heading(paragraph.strip()) or len(text.split()) < 12:
            continue
        return _trim(text, 400)
    return ""


def _cause(sentences: list[_Sentence]) -> str:
    for cue in _CAUSE_CUES:
        for sentence in sentences:
            if cue.search(sentence.text):
                return _trim(_plain(sentence.text), 400)
    return ""


def _plain(text: str) -> str:
    """Markdown markers and HTML tags out, whitespace collapsed."""
    return " ".join(" ".join(_MARKDOWN_NOISE.sub(" ", line) for line in text.splitlines()).split())


def _trim(text: str, limit: int) -> str:
    """Cut at a sentence end before `limit` when there is one, else at a word."""
    if len(text) <= limit:
        return text
    cut = text[:limit]
    end = max(cut.rfind(". "), cut.rfind("! "), cut.rfind("? "))
    if end > limit // 3:
        return cut[: end + 1]
    return cut.rsplit(" ", 1)[0] + " …"


def _note_gaps(doc: _Document, fixes: tuple[ExtractedFix, ...], problems: list[str]) -> None:
    if not doc.sample_texts:
        problems.append("no error sample (traceback or error log) found")
    if not doc.launches:
        problems.append("no launch command found; flags come from the prose")
    if not fixes:
        problems.append("no fix with a stated outcome found")


# -- episodes ------------------------------------------------------------------------------


def _with_summaries(finding: ExtractedFinding) -> ExtractedFinding:
    before = dict(finding.flags)
    fixes = tuple(
        fix if fix.summary else replace(fix, summary=summarize(fix.changes, before))
        for fix in finding.fixes
    )
    return replace(finding, fixes=fixes)


def _episodes(
    doc: _Document, finding: ExtractedFinding, vocabulary: VocabularyLike
) -> list[episodes.Episode]:
    """The symptoms of the story, each with the attempts made against it."""
    sentences = _sentences(doc.narrative)
    events = [
        episodes.Event((line, -1), episodes.symptom_of(sample), sample=sample)
        for line, sample in _adjacent_samples_joined(doc.sample_lines)
    ]
    events += _sentence_events(doc, sentences, vocabulary, finding.framework)
    events += _launch_events(doc, finding.framework)
    events = _in_story_order(events)
    baseline = _baseline(doc, events, sentences, vocabulary, finding.framework)
    told = episodes.walk(events, baseline)
    return [e for e in told if e.fixes or e.samples]


def _in_story_order(events: list[episodes.Event]) -> list[episodes.Event]:
    """An error block that opens the document ("The message", a TL;DR) and that the prose
    tells again only after going back to earlier failures or attempts is the end of the
    story told first: it takes its place where the prose tells it."""
    ordered = sorted(events, key=lambda e: e.at)
    symptom = ordered[0].symptom if ordered and ordered[0].sample is not None else None
    if symptom is None:
        return ordered
    opening, rest = ordered[0], ordered[1:]
    earlier = False  # another failure or an attempt told before the block is told again
    for event in rest:
        if event.sample is not None and event.symptom is not None:
            return ordered  # another error shown: the story goes on in document order
        if event.symptom is not None and symptom.same_as(event.symptom):
            if not earlier:
                return ordered
            moved = replace(opening, at=event.at)
            return sorted([moved, *rest], key=lambda e: e.at)  # stable: the block first
        earlier = earlier or bool(event.fixes) or event.symptom is not None
    return ordered


def _adjacent_samples_joined(placed: tuple[tuple[int, str], ...]) -> list[tuple[int, str]]:
    """Error lines printed together ("Assertion ... failed." then "RuntimeError: ...") are
    one failure, however the sample finder cut them."""
    joined: list[tuple[int, str]] = []
    for line, sample in placed:
        if joined:
            last_line, last = joined[-1]
            if line - (last_line + last.count("\n")) <= 2:
                joined[-1] = (last_line, f"{last}\n{sample}")
                continue
        joined.append((line, sample))
    return joined


def _baseline(
    doc: _Document,
    events: list[episodes.Event],
    sentences: list[_Sentence],
    vocabulary: VocabularyLike,
    framework: str | None,
) -> dict[str, str | None]:
    """The launch before any attempt: the first launch command; without one, the flags the
    prose states outside attempts, and the "from" side of "from 0.95 to 0.88". Once an
    attempt has changed a flag, what later prose says of it is the changed setting."""
    launched = _first_launch(doc, vocabulary, framework)
    if launched:
        return {k: v for k, v in launched.items() if k not in _NON_FLAGS}
    flags: dict[str, str | None] = {}
    attempted = {event.text: event for event in events if event.fixes}
    changed: set[str] = set()
    for sentence in sentences:
        attempt = attempted.get(sentence.text)
        if attempt is not None:
            for name, was in _from_values(sentence.text, vocabulary, framework):
                flags.setdefault(name, was)
            changed |= {c.name for fix in attempt.fixes for c in fix.changes}
            continue
        for name, said in vocabulary.flags_in_text(sentence.text, framework):
            if name not in _NON_FLAGS and name not in changed:
                flags.setdefault(name, said)
    return flags


_FROM_VALUE = re.compile(r"--([\w-]+)\s+from\s+`?([\w.:-]+)`?\s+to\s")


def _from_values(
    text: str, vocabulary: VocabularyLike, framework: str | None
) -> list[tuple[str, str]]:
    found = []
    for match in _FROM_VALUE.finditer(text):
        name = known_flag(match.group(1), framework)
        if name:
            found.append((name, match.group(2)))
    return found


def _sentence_events(
    doc: _Document, sentences: list[_Sentence], vocabulary: VocabularyLike, framework: str | None
) -> list[episodes.Event]:
    baseline = _first_launch(doc, vocabulary, framework)
    found: list[episodes.Event] = []
    for k, sentence in enumerate(sentences):
        at = (sentence.line, k)
        symptom = episodes.symptom_of(sentence.text)
        attempts = _attempts(sentences, k, vocabulary, framework, baseline, doc.setup_end)
        verdict = None if attempts else judge_outcome(sentence.text)
        if symptom and symptom.classes == {"slow"} and (attempts or verdict):
            symptom = None  # "loads, but decode is 40% slower": the cost of a fix, not a symptom
        if symptom or attempts or verdict:
            found.append(episodes.Event(at, symptom, None, attempts, verdict, sentence.text))
    return found


def _attempts(
    sentences: list[_Sentence],
    k: int,
    vocabulary: VocabularyLike,
    framework: str | None,
    launched: dict[str, str],
    setup_end: int,
) -> tuple[ExtractedFix | episodes.PendingFix, ...]:
    """The changes a sentence makes, each with its outcome (pending when none is said)."""
    sentence = sentences[k]
    if _is_description(sentence.text) and judge_outcome(sentence.text) is not Outcome.PROPOSED:
        return ()
    groups = _alternatives(sentence.text, vocabulary, framework) or [
        _pronoun_change(sentences, k, vocabulary, framework)
    ]
    groups = [g for g in (_real_changes(g, launched) for g in groups) if g]
    if not groups:
        return tuple(_worded_fix(sentence)) or _worded_attempt(sentence)
    outcome = judge_outcome(sentence.text)
    if sentence.line >= setup_end:  # a list item is judged whole; else the sentences after
        outcome = _borrowed_verdict(sentences, k, vocabulary, framework, outcome)
    if outcome is Outcome.PROPOSED and (
        not _names_an_action(sentence.text) or _only_considered(sentence.text)
    ):
        return ()  # "perhaps --x 0.95 was too aggressive", "it weighed options: ..."
    if outcome is None or not outcome.helps:
        groups = [g for g in (_valued(g, vocabulary, framework) for g in groups) if g]
    if outcome is None:
        if not _starts_experiment(sentence.text) or _only_considered(sentence.text):
            return ()
        return tuple(episodes.PendingFix(sentence.text, g) for g in groups)
    return tuple(ExtractedFix(sentence.text, g, outcome) for g in groups)


def _names_an_action(text: str) -> bool:
    """A proposal proposes doing something: "try", "switch to", "drop", "set"."""
    return bool(lexicon().actions & set(tokens(text))) or bool(_CHANGE_VERB.search(text))


def _valued(
    changes: tuple[Change, ...], vocabulary: VocabularyLike, framework: str | None
) -> tuple[Change, ...]:
    """A flag that takes a value, named without one ("whatever --attention-backend is set")
    says which flag, not what it was set to. Only a success makes the naming itself the fix
    (a renamed flag: "the new --dsa-decode-backend spelling fixed the parse")."""
    return tuple(
        c
        for c in changes
        if c.action is not ChangeAction.SET_FLAG
        or c.value is not None
        or not _takes_value(c.name, vocabulary, framework)
    )


def _takes_value(name: str, vocabulary: VocabularyLike, framework: str | None) -> bool:
    spec = vocabulary.flag(name, framework)
    return spec is not None and flags.takes_value(spec)


def _only_considered(text: str) -> bool:
    """ "Downgrading Transformers was considered": a thought, not an attempt."""
    return any(word in lexicon().thoughts for word in tokens(text))


def _alternatives(
    text: str, vocabulary: VocabularyLike, framework: str | None
) -> list[tuple[Change, ...]]:
    """ "--x auto (or bf16), or --y trtllm": two alternative changes, not one; "switch to
    --x auto or omit it": the second takes the flag away."""
    pieces: list[tuple[Change, ...]] = []
    for piece in _OR.split(text):
        found = changes_in(piece, vocabulary, framework)
        named = [c.name for c in pieces[-1] if c.action is ChangeAction.SET_FLAG] if pieces else []
        if not found and len(named) == 1 and _REMOVE_IT.match(piece):
            found = (Change(ChangeAction.REMOVE_FLAG, named[0]),)
        pieces.append(found)
    pieces = [piece for piece in pieces if piece]
    if len(pieces) > 1:
        return pieces
    whole = changes_in(text, vocabulary, framework)
    return [whole] if whole else []


_OR = re.compile(r",?\s+or\s+(?:to\s+)?(?=\S)|;\s+")
_REMOVE_IT = re.compile(
    r"\W*(?:just\s+|simply\s+)?(?:remov|omit|drop|delet|unset|leav)\w*\s+(?:it|that)\b", re.I
)


def _worded_attempt(sentence: _Sentence) -> tuple[ExtractedFix, ...]:
    """ "Option B: gather the active entries and cast only those; that gave 29% more.": an
    action told in words, with the verdict the same sentence gives it apart from the action.
    A lead-in to a block ("Started small, two GPUs:") is no attempt."""
    outcome = judge_outcome(sentence.text)
    if outcome is None or sentence.text.rstrip().endswith(":"):
        return ()
    head, _, rest = sentence.text.partition(":")
    clause = rest if rest and len(head) < 40 else sentence.text
    change = worded_change(clause, opens_fix_section=True)
    if change is None or judge_outcome(sentence.text.replace(change.value or "", " ", 1)) is None:
        return ()
    if outcome is Outcome.NO_EFFECT:
        return ()  # "not solved by restarting the container": words, and no lesson to run
    return (ExtractedFix(sentence.text, (change,), outcome),)


def _episode_finding(base: ExtractedFinding, episode: episodes.Episode) -> ExtractedFinding:
    fixes = episodes.deduplicated(episode.fixes)
    kind = episodes.kind_of(episode.symptom)
    flags = {k: v for k, v in episode.flags.items() if k not in _NON_FLAGS}
    told = _plain(episode.mentions[0]) if episode.mentions else ""
    return replace(
        base,
        title=_episode_title(episode, base.title),
        summary=_trim(told, 400) if told else base.summary,
        kind=kind,
        status=derive.infer_status(fixes, kind),
        flags=tuple(flags.items()),
        samples=tuple(dict.fromkeys(episode.samples)),
        fixes=fixes,
        conditions=derive.derived_conditions(
            gpus=base.gpus,
            model_arch=base.model_arch,
            framework=base.framework,
            flags=flags,
            fixes=fixes,
        ),
        works_command=None,
        extra=_symptom_extra(episode),
    )


def _symptom_extra(episode: episodes.Episode) -> dict[str, str]:
    """What tells this symptom from others, for joining the same symptom of other documents."""
    return {
        "symptom": " ".join(sorted(episode.symptom.classes)),
        "symptom_names": " ".join(sorted(episode.symptom.identifiers)),
    }


def _episode_title(episode: episodes.Episode, document_title: str) -> str:
    """The error line of its first sample, or the clause of the sentence that tells it."""
    if episode.samples:
        headline = _trim(_error_headline(episode.samples[0]), 120).rstrip(".")
    else:
        told = _plain((episode.mentions or [""])[0])
        clauses = [c for c in _TITLE_CLAUSE.split(told) if episodes.symptom_of(c)]
        headline = _trim(clauses[0] if clauses else told, 120).rstrip(".")
        # The failure as a log says it finds the paste; the writer's words stay for the reader.
        log_words = episodes.told_headline(headline)
        headline = f"{log_words}: {headline}" if log_words else headline
    return f"{headline} — {document_title}"[:300] if headline else document_title


_TITLE_CLAUSE = re.compile(r"\s*(?:[;:]|\s[-\u2013\u2014]{1,2}\s)\s*")
_BARE_EXCEPTION = re.compile(r"^(?:[\w.]+\.)?\w+(?:Error|Exception)$")


def _error_headline(sample: str) -> str:
    """The last line that names the failure; a bare `AssertionError` takes the source line
    printed above it (`assert not self.x`), which is what tells one assert from another."""
    lines = [line.strip() for line in sample.splitlines() if line.strip().strip("^~ ")]
    telling = [i for i, line in enumerate(lines) if episodes.symptom_of(line)]
    if not telling:
        return _plain(lines[-1]) if lines else ""
    at = telling[-1]
    if _BARE_EXCEPTION.match(lines[at]) and at > 0 and not lines[at - 1].startswith("File "):
        return f"{lines[at]}: {lines[at - 1]}"
    return _plain(lines[at])
