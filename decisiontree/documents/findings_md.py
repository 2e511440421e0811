"""FINDINGS.md: `## title` entries with `- Field: value` bullets (spec: docs/findings-format.md).

Forgiving by design: field names in any case and order, synonyms, continuation
lines, either fence style, unclosed fences, trailing #s on headings. Unknown
fields are kept, never an error; what looks wrong becomes a reviewer note.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from decisiontree import conditions, launch
from decisiontree.documents import derive, facts, samples
from decisiontree.documents._vocab import VocabularyLike
from decisiontree.documents.changes import changes_in
from decisiontree.documents.model import ExtractedFinding, ExtractedFix, GpuMention, Metrics
from decisiontree.documents.outcomes import split_bracket_outcome
from decisiontree.documents.structure import (
    Fence,
    fence_text,
    fences_in,
    heading,
    lines_of,
    prose_mask,
)
from decisiontree.flags import flag as flag_spec
from decisiontree.flags import value_problem
from decisiontree.records import Change, ChangeAction, Condition, Outcome

# Every field name the reader accepts (lower case, `_`/`-` as spaces) -> the field it fills;
# docs/findings-format.md lists them all. The format detector counts the same names.
FIELD_NAMES = {
    "hardware": "hardware", "gpu": "hardware", "gpus": "hardware", "hw": "hardware",
    "model": "model", "models": "model",
    "framework": "framework", "frameworks": "framework", "versions": "framework",
    "stack": "framework",
    "flags": "flags", "launch": "flags", "command": "flags", "launch command": "flags",
    "cmd": "flags",
    "kind": "kind", "type": "kind",
    "symptom": "symptom", "symptoms": "symptom",
    "error": "error", "signature": "error", "error line": "error",
    "cause": "cause", "root cause": "cause",
    "when": "when", "conditions": "when", "condition": "when", "applies when": "when",
    "fix": "fix", "fixes": "fix", "fixed by": "fix", "solution": "fix",
    "did not help": "no_effect", "didn't help": "no_effect", "no effect": "no_effect",
    "tried": "no_effect", "does not help": "no_effect", "not helped": "no_effect",
    "made it worse": "worse", "worse": "worse", "makes it worse": "worse",
    "status": "status",
    "works": "works", "working command": "works", "known good": "works",
    "throughput": "throughput", "ttft": "ttft", "itl": "itl", "tpot": "itl",
    "before": "before", "after": "after", "concurrency": "concurrency",
    "source": "source", "sources": "source", "link": "source",
    "tags": "tags", "tag": "tags", "labels": "tags",
}  # fmt: skip
_REPEATABLE = frozenset({"fix", "no_effect", "worse", "source", "when"})
_FIELD = re.compile(
    r"^ {0,3}[-*+][ \t]+(?:\*\*|__)?([A-Za-z][A-Za-z0-9 _/'.-]{0,40}?)(?:\*\*|__)?[ \t]*:(?:\*\*"
    r"|__)?(?:[ \t]+(.*))?$"
)
MAX_MENDED_BLOCKS = 50  # blocks left open that one document may have read as closed
_COUNT = re.compile(r"^\s*(\d{1,3})\s*[x×]?\s*", re.IGNORECASE)
_NUMBER = re.compile(r"(\d+(?:[.,]\d+)?)\s*([A-Za-z/%]+(?:/s)?)?")
_CONCURRENCY = re.compile(r"(?:@|at)?\s*concurrency\s*[:=]?\s*(\d+)", re.IGNORECASE)


@dataclass
class _Entry:
    """Raw fields and text of one `## ` section, before interpretation."""

    title: str
    fields: list[tuple[str, str]] = field(
        default_factory=list
    )  # (canonical or raw lower name, value)
    body: list[str] = field(default_factory=list)
    sample_texts: list[str] = field(default_factory=list)

    def values(self, name: str) -> list[str]:
        return [value for key, value in self.fields if key == name and value.strip()]

    def value(self, name: str) -> str | None:
        found = self.values(name)
        return found[-1].strip() if found else None


def looks_like_findings_md(text: str) -> bool:
    """`## ` headings with `- Field:` bullets under them, named as the entry reader names fields."""
    known_bullets = 0
    in_entry = False
    for line in lines_of(text[:500_000]):
        level = heading(line)
        if level is not None:
            in_entry = level[0] == 2
            continue
        match = _FIELD.match(line[:300])
        if in_entry and match and _field_name(match.group(1)) in FIELD_NAMES:
            known_bullets += 1
            if known_bullets >= 2:
                return True
    return False


def parse_findings_md(
    text: str, vocabulary: VocabularyLike
) -> tuple[str, tuple[ExtractedFinding, ...], tuple[str, ...]]:
    """(document title, findings, reviewer notes) of a FINDINGS.md text."""
    lines = lines_of(text)
    problems: list[str] = []
    fences = _close_runaway_blocks(lines, fences_in(lines), problems)
    title, entries = _entries(lines, fences)
    findings = tuple(_finding(entry, vocabulary, problems) for entry in entries)
    if not findings:
        problems.append("no `## ` entries found")
    return title, findings, tuple(problems)


def _close_runaway_blocks(
    lines: list[str], fences: list[Fence], problems: list[str]
) -> list[Fence]:
    """A document that ends inside a code block has one left open somewhere: from there on
    every opening fence was read as a closing one, and the entries between were swallowed
    into samples. Each block that holds the start of an entry (a `## ` heading with field
    bullets under it) is read as closed before it, and the entry it opened in gets a note.
    A document whose blocks all close is read as written."""
    mended = 0
    while mended < MAX_MENDED_BLOCKS and fences and fences[-1].close == len(lines):
        stop = next(
            ((fence, k) for fence in fences for k in fence.content if _starts_entry(lines, k)),
            None,
        )
        if stop is None:
            break
        fence, k = stop
        problems.append(_left_open_note(lines, fence, k, mended))
        lines.insert(k, lines[fence.open].strip()[:3])
        mended += 1
        fences = fences_in(lines)
    return fences


def _left_open_note(lines: list[str], fence: Fence, stop: int, inserted: int) -> str:
    """Lines numbered as in the document: `inserted` closing lines were added before both."""
    opened_in = next(
        (h[1] for k in range(fence.open, -1, -1) if (h := heading(lines[k])) and h[0] == 2), ""
    )
    where = f"entry '{opened_in}': its" if opened_in else "The"
    return (
        f"{where} code block opened on line {fence.open + 1 - inserted} is never closed; it "
        f"was read as closed before line {stop + 1 - inserted} ({lines[stop].strip()[:80]}), "
        "the next entry. Close it there in the document."
    )


def _starts_entry(lines: list[str], k: int) -> bool:
    """A `## ` heading with a known field bullet among the next three lines that hold text."""
    found = heading(lines[k])
    if not found or found[0] != 2:
        return False
    after = [line for line in lines[k + 1 : k + 8] if line.strip()][:3]
    fields = (_FIELD.match(line[:300]) for line in after)
    return any(match and _field_name(match.group(1)) in FIELD_NAMES for match in fields)


def notes_of_entry(problems: Iterable[str], title: str) -> tuple[str, ...]:
    """The reviewer notes about the entry titled `title`, and those about the whole file:
    the notes of this module name their entry first (`entry 'TITLE': ...`)."""
    own = f"entry '{title}'"
    return tuple(n for n in problems if n.startswith(own) or not n.startswith("entry '"))


def body_samples(body: str) -> tuple[str, ...]:
    """The samples an entry's body yields by itself: its blocks that hold an error and the
    tracebacks pasted into its prose (what a writer need not add again)."""
    lines = lines_of(f"## -\n\n{body}")
    _, entries = _entries(lines, fences_in(lines))
    return _samples(entries[0]) if entries else ()


def _entries(lines: list[str], fences: list[Fence]) -> tuple[str, list[_Entry]]:
    prose = prose_mask(lines, fences)
    fence_at = {fence.open: fence for fence in fences}
    title, entries = "", []
    current: _Entry | None = None
    in_fields, last_field = True, -1
    i = 0
    while i < len(lines):
        line = lines[i]
        if i in fence_at:
            fence = fence_at[i]
            if current is not None:
                _add_block(current, lines, fence)
            i, last_field = fence.close + 1, -1
            continue
        found = heading(line) if prose[i] else None
        if found and found[0] <= 2:
            if found[0] == 1 and not title:
                title = found[1]
            if found[0] == 2:
                current = _Entry(found[1])
                entries.append(current)
                in_fields, last_field = True, -1
            i += 1
            continue
        if current is not None:
            in_fields, last_field = _take_line(current, line, in_fields, last_field)
        i += 1
    return title, entries


def _add_block(entry: _Entry, lines: list[str], fence: Fence) -> None:
    content = [lines[k] for k in fence.content]
    entry.body.extend(lines[fence.open : min(fence.close + 1, len(lines))])
    if samples.block_has_error(content):
        entry.sample_texts.append(fence_text(lines, fence))


def _take_line(entry: _Entry, line: str, in_fields: bool, last_field: int) -> tuple[bool, int]:
    """File one line as a field, a field's continuation, or body; return the new parser state."""
    match = _FIELD.match(line[:2000])
    if match:
        name = _field_name(match.group(1))
        known = FIELD_NAMES.get(name)
        if known or in_fields:
            entry.fields.append((known or name, (match.group(2) or "").strip()))
            return in_fields, len(entry.fields) - 1
    if last_field >= 0 and line.startswith(("  ", "\t")) and line.strip():
        name, value = entry.fields[last_field]
        entry.fields[last_field] = (name, f"{value}\n{line.strip()}".strip())
        return in_fields, last_field
    if not line.strip():
        entry.body.append(line)
        return in_fields, -1
    entry.body.append(line)
    return False, -1


def _field_name(raw: str) -> str:
    return " ".join(raw.lower().replace("_", " ").replace("-", " ").split())


# -- interpreting one entry ---------------------------------------------------------------


def _finding(entry: _Entry, vocabulary: VocabularyLike, problems: list[str]) -> ExtractedFinding:
    model = _model(entry.value("model"), vocabulary)
    framework, framework_version, versions = _framework(entry.value("framework"))
    # A runbook entry's launch is its Works command when no Flags field says otherwise.
    launch = entry.value("flags") or entry.value("works")
    flags = _flags(launch, vocabulary, framework, entry.title, problems)
    framework = framework or flags.framework
    fixes = _fixes(entry, vocabulary, framework)
    samples_ = _samples(entry)
    metrics = _metrics(entry)
    gpus = _hardware(entry.value("hardware"), vocabulary, entry.title, problems)
    kind = _kind(entry, samples_, metrics, problems)
    conditions = _conditions(entry, vocabulary, framework, problems) or derive.derived_conditions(
        gpus=gpus, model_arch=model.arch, framework=framework, flags=flags.values, fixes=fixes
    )
    status = _status(entry, fixes, kind, problems)
    _note_gaps(entry, kind, samples_, fixes, problems)
    return ExtractedFinding(
        title=entry.title,
        summary=_summary(entry),
        kind=kind,
        status=status,
        gpus=gpus,
        model=model.model,
        model_arch=model.arch,
        quantization=model.quantization,
        framework=framework,
        framework_version=framework_version,
        versions=versions,
        flags=tuple(flags.values.items()),
        samples=samples_,
        cause=_one_line(entry.value("cause") or ""),
        conditions=conditions,
        fixes=fixes,
        metrics=metrics,
        works_command=entry.value("works"),
        body="\n".join(entry.body).strip("\n"),
        extra=_extra(entry),
    )


def _one_line(text: str) -> str:
    return " ".join(text.split())


def _summary(entry: _Entry) -> str:
    symptom = entry.value("symptom")
    if symptom:
        return _one_line(symptom)
    paragraph: list[str] = []
    fenced = False
    for line in entry.body:
        if line.lstrip().startswith(("```", "~~~")):
            fenced = not fenced
            continue
        if fenced or not line.strip() or heading(line):
            if paragraph:
                break
            continue
        paragraph.append(line.strip())
    return _one_line(" ".join(paragraph))[:500]


def _hardware(
    raw: str | None, vocabulary: VocabularyLike, title: str, problems: list[str]
) -> tuple[GpuMention, ...]:
    if not raw:
        return ()
    mentions: dict[str, GpuMention] = {}
    for part in re.split(r"[,;+]|\band\b", raw):
        if not part.strip():
            continue
        found = facts.gpus_in(part, vocabulary) or _unknown_gpu(part, vocabulary)
        if not found[0].arch:
            problems.append(
                f"entry '{title}': hardware '{part.strip()}' is not a GPU the vocabulary knows"
            )
        for gpu in found:
            mentions[gpu.name] = gpu
    return tuple(mentions.values())


def _unknown_gpu(part: str, vocabulary: VocabularyLike) -> tuple[GpuMention, ...]:
    count = _COUNT.match(part)
    name = part[count.end() :] if count else part
    return (
        GpuMention(name.strip(), vocabulary.arch_of(part), int(count.group(1)) if count else 1),
    )


def _model(raw: str | None, vocabulary: VocabularyLike) -> facts.ModelFacts:
    if not raw:
        return facts.ModelFacts()
    name, _, rest = raw.partition("(")
    name = name.strip().strip("`")
    base = facts.facts_of_model(name, "", vocabulary)
    arch, quantization = base.arch, base.quantization
    for item in re.split(r"[,;]", rest.rstrip(") ")):
        item = item.strip().strip("`")
        if not item:
            continue
        info = vocabulary.model_info(item)
        if info is not None and info.quantization and not info.family:
            quantization = info.quantization
        else:
            arch = item
    return facts.ModelFacts(name, arch, quantization)


_NAME_VERSION = re.compile(r"^\s*([A-Za-z][\w.-]*)\s*(?:==|=|:|@|\s)\s*v?(.+?)\s*$")


def _framework(raw: str | None) -> tuple[str | None, str | None, Mapping[str, str]]:
    """`sglang 0.5.9; transformers 5.2.0` -> ("sglang", "0.5.9", {"transformers": "5.2.0"})."""
    if not raw:
        return None, None, {}
    parts = [part.strip() for part in re.split(r"[;,\n]", raw) if part.strip()]
    first = parts[0]
    match = _NAME_VERSION.match(first)
    framework = facts.framework_name((match.group(1) if match else first).strip())
    version = match.group(2).strip("() ") if match else None
    versions: dict[str, str] = {}
    for part in parts[1:]:
        package = _NAME_VERSION.match(part)
        if package:
            versions[package.group(1).lower()] = package.group(2).strip("() ")
    return framework, version or None, versions


@dataclass(frozen=True)
class _Flags:
    framework: str | None
    values: Mapping[str, str | None]


def _flags(
    raw: str | None,
    vocabulary: VocabularyLike,
    framework: str | None,
    title: str,
    problems: list[str],
) -> _Flags:
    if not raw:
        return _Flags(None, {})
    command = raw.strip().strip("`")
    if launch.names_server(command):
        parsed = vocabulary.parse_launch_command(command)
        unknown = getattr(parsed, "unknown_flags", ())
        if unknown:
            problems.append(f"entry '{title}': unknown flags {', '.join(unknown)}")
        found = _Flags(parsed.framework, dict(parsed.flags))
    else:
        found = _Flags(None, bare_flags(command, framework, title, problems))
    problems += [
        f"entry '{title}': {problem}"
        for problem in _value_problems(found.values, found.framework or framework)
    ]
    return found


def _value_problems(values: Mapping[str, str | None], framework: str | None) -> list[str]:
    specs = ((flag_spec(name, framework), value) for name, value in values.items())
    found = (value_problem(spec, value) for spec, value in specs if spec and value)
    return [problem for problem in found if problem]


def bare_flags(
    command: str, framework: str | None, title: str, problems: list[str]
) -> dict[str, str]:
    """`--tp-size 8 --enable-x` without an entry point; booleans read "true" as launched."""
    parsed = launch.parse_launch_command(command, framework)
    problems += [f"entry '{title}': unknown flag {name}" for name in parsed.unknown_flags]
    return dict(parsed.flags)


def _fixes(
    entry: _Entry, vocabulary: VocabularyLike, framework: str | None
) -> tuple[ExtractedFix, ...]:
    defaults = {"fix": Outcome.RESOLVES, "no_effect": Outcome.NO_EFFECT, "worse": Outcome.WORSE}
    fixes = []
    for name, value in entry.fields:
        if name not in defaults or not value.strip():
            continue
        text, override = split_bracket_outcome(_one_line(value))
        changes = changes_in(text, vocabulary, framework) or (
            Change(ChangeAction.OTHER, "other", text),
        )
        fixes.append(ExtractedFix(text, changes, override or defaults[name]))
    return tuple(fixes)


def _samples(entry: _Entry) -> tuple[str, ...]:
    found = list(entry.sample_texts)
    lines = entry.body
    # The body keeps its fenced blocks (they are samples already): only the prose between
    # them is searched, or a block's first lines came back as a second, shorter sample.
    prose = prose_mask(lines, fences_in(lines))
    for span in samples.find_unfenced_samples(lines, prose):
        found.append("\n".join(lines[span.start : span.end]).strip("\n"))
    if not found and entry.value("error"):
        found.append(entry.value("error") or "")
    return tuple(dict.fromkeys(s for s in found if s.strip()))


def _metrics(entry: _Entry) -> Metrics:
    throughput = _first_number(entry.value("throughput"))
    concurrency = _CONCURRENCY.search(entry.value("throughput") or "") or _CONCURRENCY.search(
        "concurrency " + (entry.value("concurrency") or "")
    )
    before, after = entry.value("before"), entry.value("after")
    unit = _unit(before) or _unit(after)
    return Metrics(
        throughput_tok_s=throughput,
        ttft_ms=_milliseconds(entry.value("ttft")),
        itl_ms=_milliseconds(entry.value("itl")),
        concurrency=int(concurrency.group(1)) if concurrency else None,
        before=before,
        after=after,
        before_value=_first_number(before),
        after_value=_first_number(after),
        unit=unit,
    )


def _first_number(raw: str | None) -> float | None:
    match = _NUMBER.search(raw or "")
    return facts.number(match.group(1)) if match else None


def _unit(raw: str | None) -> str | None:
    match = _NUMBER.search(raw or "")
    return match.group(2) if match and match.group(2) else None


def _milliseconds(raw: str | None) -> float | None:
    match = _NUMBER.search(raw or "")
    if not match:
        return None
    value = facts.number(match.group(1))
    return value * 1000 if (match.group(2) or "ms").lower() in ("s", "sec", "seconds") else value


def _kind(entry: _Entry, samples_: tuple[str, ...], metrics: Metrics, problems: list[str]) -> str:
    raw = entry.value("kind")
    if raw:
        kind = derive.normal_kind(raw)
        if kind:
            return kind
        problems.append(f"entry '{entry.title}': unknown kind '{raw}', inferred instead")
    has_error = bool(entry.value("error")) or bool(entry.sample_texts)
    return derive.infer_kind(
        samples=samples_ if has_error else (),
        headline=f"{entry.title}\n{entry.value('symptom') or ''}",
        has_before_after=bool(metrics.before or metrics.after),
        has_works=bool(entry.value("works") or metrics.throughput_tok_s is not None),
    )


def _status(entry: _Entry, fixes: tuple[ExtractedFix, ...], kind: str, problems: list[str]) -> str:
    raw = entry.value("status")
    if raw:
        status = derive.normal_status(raw)
        if status:
            return status
        problems.append(f"entry '{entry.title}': unknown status '{raw}', inferred instead")
    return derive.infer_status(fixes, kind)


def _conditions(
    entry: _Entry, vocabulary: VocabularyLike, framework: str | None, problems: list[str]
) -> tuple[Condition, ...]:
    found: list[Condition] = []
    for raw in entry.values("when"):
        for item in re.split(r"[;,\n]", raw):
            if item.strip():
                condition = _condition(item.strip().strip("`"), vocabulary, framework)
                if condition is None:
                    problems.append(
                        f"entry '{entry.title}': condition '{item.strip()}' not understood"
                    )
                else:
                    found.append(condition)
    return tuple(dict.fromkeys(found))


def _condition(item: str, vocabulary: VocabularyLike, framework: str | None) -> Condition | None:
    if item.startswith("-"):
        flags = bare_flags(item, framework, "", [])
        return next(
            (Condition(f"flag.{name}", value or "true") for name, value in flags.items()), None
        )
    if not conditions.is_condition_line(item):
        return _shorthand(item, vocabulary)
    try:
        return conditions.parse_line(item, framework)
    except conditions.ConditionError:
        return None


def _shorthand(item: str, vocabulary: VocabularyLike) -> Condition | None:
    """`sm_120`, `sglang`, `H100`: what a bare word most plausibly constrains."""
    if item.lower() in ("sglang", "vllm"):
        return Condition("framework", item.lower())
    arch = vocabulary.arch_of(item)
    return Condition("gpu.arch", arch) if arch else None


def _note_gaps(
    entry: _Entry,
    kind: str,
    samples_: tuple[str, ...],
    fixes: tuple[ExtractedFix, ...],
    problems: list[str],
) -> None:
    if kind not in ("works", "slow") and not samples_:
        problems.append(f"entry '{entry.title}' has no error sample")
    if kind != "works" and not fixes:
        problems.append(f"entry '{entry.title}' has no Fix or Did not help")


_KNOWN_FIELDS = frozenset(FIELD_NAMES.values()) - {"source", "tags"}


def _extra(entry: _Entry) -> Mapping[str, str]:
    extra: dict[str, str] = {}
    for name, value in entry.fields:
        if name in _KNOWN_FIELDS:
            continue
        extra[name] = f"{extra[name]}\n{value}" if name in extra else value
    return extra
