"""Fix text becomes structured changes: set/remove a flag, set an env var, pin a version.

Only flags the vocabulary knows become SET_FLAG/REMOVE_FLAG (canonical names);
an unknown `--x` stays in the fix text, where a reviewer still sees it.
"""

from __future__ import annotations

import dataclasses
import functools
import re
from collections.abc import Iterable, Mapping, Sequence

from decisiontree import flags
from decisiontree.documents._vocab import VocabularyLike
from decisiontree.flag_values import FlagValue
from decisiontree.records import Change, ChangeAction

FLAG_TOKEN = re.compile(r"(?<![\w-])--([A-Za-z0-9][A-Za-z0-9_.-]{0,60})(?:=([^\s`'\",;)]{0,200}))?")
_REMOVAL_CUE = re.compile(
    r"(?:remov\w*|unset\w*|drop\w*|without|omit\w*|delet\w*|strip\w*|no longer pass\w*|"
    r"stop(?:ped)? passing|got rid of|take out|took out|taking out)"
    r"(?:\s+(?:the|a|an|its|our|my))?(?:\s+(?:flag|option|argument))?\s*$",
    re.IGNORECASE,
)
_JOINER = re.compile(
    r"^[\s(),]*(?:and|or|&|\+|/|plus|also)?[\s(),]*(?:and|or|also)?[\s(),]*$", re.IGNORECASE
)
_FROM_TO = re.compile(r"^\s+(?:from\s+\S{1,40}\s+)?(?:to|=|->|→)\s+([^\s,;]{1,200})")
_NEXT_TOKEN = re.compile(r"^[ \t]+([^\s-][^\s]{0,200}|-\d[^\s]{0,40})")
_ENV = re.compile(
    r"(?<![\w./-])(?:export\s+)?([A-Z][A-Z0-9_]{2,60})=(\"[^\"\n]{0,200}\"|'[^'\n]{0,200}'"
    r"|[^\s`'\",;]{0,200})"
)
# "unset FOO_BAR", "dropped `FOO_BAR=1`": an env var taken away. No record action names this,
# so it is an OTHER change whose text says it; a later `FOO_BAR=1` is then not a SET_ENV.
_ENV_NAME = re.compile(r"(?<![\w./-])([A-Z][A-Z0-9]*_[A-Z0-9_]{1,60})\b(?:=[^\s`'\",;]{0,200})?")
_UNSET_WORDS = ("unset", "unexport", "remov", "drop", "without", "delet")
_UNSET_CUE = re.compile(
    r"\b(?:unset\w*|unexport\w*|remov\w*|drop\w*|without|delet\w*)\s+(?:the\s+)?"
    r"(?:env(?:ironment)?\s+var(?:iable)?\s+)?[`'\"]?$",
    re.IGNORECASE,
)
_PIN = re.compile(r"(?<![\w./-])([A-Za-z][A-Za-z0-9_.\[\]-]{1,60})==\s?v?(\d[\w.+-]{0,40})")
_PIN_WORDS = re.compile(
    r"\b(?:upgrad\w*|downgrad\w*|pinn?\w*|bump\w*|roll\w* back|revert\w*|install\w*)\s+"
    r"(?:to\s+)?([A-Za-z][\w.-]{1,40})\s+(?:to|at|back to"
    r"|from \S+ to)\s+v?(\d+(?:\.\d+){1,3}[\w.+-]{0,20})",
    re.IGNORECASE,
)
# "to investigate or patch" names something one could do; it reports no patch.
# A patch made, applied or taken back: "patched the MLA backend", "the fix was to patch X",
# "reverting the flashinfer patch". "A well-reasoned patch failed" or "a location to
# investigate or patch" tells of a patch, it makes none.
_PATCH = re.compile(
    r"(?<!\bor )(?<!\band )\bpatch(?:ed|ing|es)?\s+(?!that\b|which\b|was\b|is\b|failed\b)"
    r"(?:the|a|an|its|our|my|their|it|this|that|[\w`'\"./-]+\.(?:py|cuh?|cpp|h)|[A-Z`]\w*)"
    r"|\b(?:appl(?:y|ied|ying)|wr[io]te|writing|add(?:ed|ing)?|revert\w*|undo\w*|undid"
    r"|roll\w* back|land\w*|merg\w*|cherry-pick\w*)\s+(?:[\w`'-]+\s+){0,3}patch(?:es)?\b"
    r"|\bpatch(?:es)?\s+(?:was|were|got|is|has been)\s+(?:\w+\s+)?(?:revert\w*|undone|rolled"
    r" back|appl\w*|merged|landed)",
    re.IGNORECASE,
)
# "The patch made it worse", "its failed patch", "the attempt to patch it" refer to a patch
# told before; reverting it is a change of its own.
_PATCH_REFERENCE = re.compile(
    r"^(?!.*\b(?:revert\w*|undo\w*|undid|roll\w* back)\b)(?!.*\.(?:py|cuh?|cpp|h)\b)"
    r".*(?:\b(?:the|this|that|our|my|its|their|his|her|your)(?:\s+[\w-]+){0,2}\s+patch\b"
    r"|\b(?:attempt|effort|try)\s+to\s+patch\b)",
    re.IGNORECASE,
)
_PY_PATH = re.compile(r"[\w./-]{1,200}\.(?:py|cuh?|cpp|h)\b")

# Words that follow a boolean-looking flag in prose and are not its value.
_NOT_VALUES = frozenset(
    [
        "a",
        "an",
        "and",
        "or",
        "to",
        "the",
        "did",
        "didn't",
        "does",
        "doesn't",
        "was",
        "wasn't",
        "is",
        "isn't",
        "made",
        "fixed",
        "with",
        "flag",
        "option",
        "alone",
        "instead",
        "also",
        "too",
        "which",
        "but",
        "as",
        "in",
        "on",
        "it",
        "its",
        "helped",
        "still",
        "worked",
        "works",
        "work",
        "fix",
        "fixes",
        "helps",
        "help",
        "then",
        "so",
        "that",
        "this",
        "for",
        "of",
        "by",
        "at",
        "from",
        "had",
        "has",
        "have",
        "finally",
        "only",
        "just",
        "gave",
        "got",
        "(",
        "-",
        "--",
        "|",
        "makes",
        "make",
        "set",
    ]
)


def changes_in(
    text: str, vocabulary: VocabularyLike, framework: str | None = None
) -> tuple[Change, ...]:
    """Every structured change the text asks for, in order of appearance, without repeats."""
    found = [*_flag_changes(text, vocabulary, framework), *_env_changes(text), *_pin_changes(text)]
    spelled = {change.name for _, change in found}
    found += [
        (at, change)
        for at, change in _flags_in_words(text, framework)
        if change.name not in spelled
    ]
    found.sort(key=lambda item: item[0])
    changes = _last_value_per_flag(_without_loose_pins([change for _, change in found]))
    if not changes and _PATCH.search(text) and not _PATCH_REFERENCE.search(text):
        path = _PY_PATH.search(text)
        changes.append(
            Change(ChangeAction.PATCH, path.group(0) if path else "patch", text.strip()[:300])
        )
    return tuple(dict.fromkeys(changes))


def _flag_changes(
    text: str, vocabulary: VocabularyLike, framework: str | None
) -> list[tuple[int, Change]]:
    changes: list[tuple[int, Change]] = []
    previous_end, previous_removal = 0, False
    for match in FLAG_TOKEN.finditer(text):
        raw = match.group(1).rstrip(".")
        spec = vocabulary.flag(raw, framework)
        canonical = spec.name if spec else None
        between = text[previous_end : match.start()]
        removal = bool(_REMOVAL_CUE.search(text[max(0, match.start() - 40) : match.start()])) or (
            previous_removal and bool(_JOINER.match(between))
        )
        previous_end, previous_removal = match.end(), removal
        if canonical is None:
            continue
        if removal:
            changes.append((match.start(), Change(ChangeAction.REMOVE_FLAG, canonical)))
            continue
        value = match.group(2) or _value_after(text, match.end(), vocabulary, raw, framework)
        changes.append((match.start(), Change(ChangeAction.SET_FLAG, canonical, _clean(value))))
    return changes


# "switched the attention backend to triton", "forced the FP8 GEMM backend to cutlass": a flag
# named in words, set to one of the values it accepts. A passive "was set to" describes.
_SET_IN_WORDS = (
    r"(?<!\bwas )(?<!\bwere )(?<!\bis )(?<!\bare )(?<!\bbeen )(?<!\bbe )"
    r"\b(?:switch|set|chang|forc|mov|flipp|turn|pinn|swapp)\w*\s+"
    r"(?:(?:the|its|our|their|my)\s+)?(?P<words>{names})s?\s+(?:from\s+`?[\w.-]{{1,40}}`?\s+)?"
    r"to\s+(?:use\s+)?`?(?P<value>[\w.-]{{1,40}})"
)


@functools.lru_cache(maxsize=8)
def _in_words_pattern(framework: str) -> tuple[re.Pattern[str], dict[str, flags.FlagSpec]]:
    """One pattern over every multi-word flag with a fixed set of values, by its words."""
    by_words: dict[str, flags.FlagSpec] = {}
    for spec in flags.flags_of(framework):
        if not spec.choices:
            continue
        for name in (spec.name, *spec.aliases):
            parts = re.split(r"[-_]", name)
            if len(parts) >= 2:
                by_words.setdefault(" ".join(parts).lower(), spec)
    names = "|".join(
        r"[\s_-]+".join(map(re.escape, words.split())) for words in sorted(by_words, key=len)[::-1]
    )
    return re.compile(_SET_IN_WORDS.format(names=names), re.IGNORECASE), by_words


def _flags_in_words(text: str, framework: str | None) -> list[tuple[int, Change]]:
    if framework not in flags.FRAMEWORKS:
        return []
    pattern, by_words = _in_words_pattern(framework)
    found = []
    for match in pattern.finditer(text):
        spec = by_words.get(" ".join(re.split(r"[\s_-]+", match.group("words").lower())))
        value = match.group("value").rstrip(".")
        choices = {choice.lower(): choice for choice in spec.choices} if spec else {}
        if spec is not None and value.lower() in choices:
            change = Change(ChangeAction.SET_FLAG, spec.name, choices[value.lower()])
            found.append((match.start(), change))
    return found


def _value_after(
    text: str, end: int, vocabulary: VocabularyLike, raw: str, framework: str | None
) -> str | None:
    spec = vocabulary.flag(raw, framework)
    if spec is None or not flags.takes_value(spec):
        return None
    tail = text[end : end + 240]
    from_to = _FROM_TO.match(tail)
    if from_to:  # "to the model's own length" names no value
        return flags.checked_value(spec, from_to.group(1))
    token = _NEXT_TOKEN.match(tail)
    if token is None or token.group(1).lower().rstrip(".,;:") in _NOT_VALUES:
        return None
    return flags.checked_value(spec, token.group(1))


def _clean(value: str | None) -> str | None:
    if value is None:
        return None
    value = value.strip().strip("`'\"").rstrip(".,;:)]}>*").strip("`'\"")
    return value or None


def _env_changes(text: str) -> list[tuple[int, Change]]:
    lower = text.lower()
    unset = [
        (m.start(), m.end(), m.group(1))
        for m in (_ENV_NAME.finditer(text) if any(w in lower for w in _UNSET_WORDS) else ())
        if _UNSET_CUE.search(text[max(0, m.start() - 50) : m.start()])
    ]
    changes = [
        (start, Change(ChangeAction.OTHER, name, f"unset {name}")) for start, _, name in unset
    ]
    changes += [
        (m.start(), Change(ChangeAction.SET_ENV, m.group(1), _clean(m.group(2)) or ""))
        for m in _ENV.finditer(text)
        if not any(start <= m.start() < end for start, end, _ in unset)
    ]
    return changes


def _pin_changes(text: str) -> list[tuple[int, Change]]:
    pins = [(m.start(), m.group(1).lower(), m.group(2)) for m in _PIN.finditer(text)]
    pins += [(m.start(), m.group(1).lower(), m.group(2)) for m in _PIN_WORDS.finditer(text)]
    return [
        (start, Change(ChangeAction.PIN_VERSION, re.sub(r"\[.*\]", "", name), _clean(version)))
        for start, name, version in pins
    ]


def _last_value_per_flag(changes: list[Change]) -> list[Change]:
    """ "from --x a to --x b" sets --x once, to b."""
    last = {c.name: c for c in changes if c.action is ChangeAction.SET_FLAG}
    return [c for c in changes if c.action is not ChangeAction.SET_FLAG or last[c.name] is c]


def _without_loose_pins(changes: list[Change]) -> list[Change]:
    """`upgrade flashinfer to 0.3.2 (pip install flashinfer-python==0.3.2)` is one pin."""
    pins = [c for c in changes if c.action is ChangeAction.PIN_VERSION]
    return [
        c
        for c in changes
        if not any(
            other.name != c.name and other.name.startswith(c.name) and other.value == c.value
            for other in pins
        )
        or c.action is not ChangeAction.PIN_VERSION
    ]


# "lower --mem-fraction-static by 0.05", "raise --x in steps of 0.05": a change by a step
# from the value the launch has, which the fix cannot write by itself.
_STEP_DOWN = re.compile(r"\b(?:lower|reduc|decreas|drop|cut|shrink)\w*\b[^.;:]{0,20}$", re.I)
_STEP_UP = re.compile(r"\b(?:rais|increas|bump|grow)\w*\b[^.;:]{0,20}$", re.I)
_STEP = re.compile(
    r"^\s+(?:by|in\s+(?:steps|increments)\s+of)\s+(\d+(?:\.\d+)?)(?![\d.]*\s*%)", re.I
)


def step_of(text: str, flag: str, framework: str | None = None) -> float | None:
    """The signed step a fix's words give `flag` (canonical name): -0.05 for "lower
    --mem-fraction-static by 0.05 to 0.1", +0.05 for "raise it in steps of 0.05"; None
    when they give none (an absolute value, a step in percent, no direction)."""
    for match in FLAG_TOKEN.finditer(text):
        if match.group(2) or flags.canonical_flag(match.group(1), framework) != flag:
            continue
        step = _STEP.match(text[match.end() : match.end() + 60])
        if step is not None and (way := _way_before(text, match.start())):
            return way * float(step.group(1))
    return None


def with_steps(
    changes: Iterable[Change],
    summary: str,
    launched: Mapping[str, str | None],
    framework: str | None,
) -> tuple[Change, ...]:
    """A flag the fix names with a step but no value ("lower --mem-fraction-static by
    0.05") gets the launched value plus that step, when the launch has a number for it:
    the corrected command then holds it, ready to copy, and a validation run launches it."""
    by_name = {flags.canonical_flag(name, framework): value for name, value in launched.items()}
    return tuple(
        dataclasses.replace(change, value=stepped)
        if change.action is ChangeAction.SET_FLAG
        and change.value is None
        and (stepped := stepped_value(change.name, summary, by_name, framework)) is not None
        else change
        for change in changes
    )


def stepped_value(
    name: str, summary: str, launched: Mapping[str, str | None], framework: str | None
) -> str | None:
    """`launched`'s value of flag `name` (keys canonical) moved by the step `summary`
    gives it; None without either, or where the result is no longer a positive number."""
    spec = flags.flag(name, framework)
    if spec is None or spec.type not in ("int", "float"):
        return None
    have, step = launched.get(spec.name), step_of(summary, spec.name, framework)
    if have is None or step is None:
        return None
    try:
        value = float(have) + step
    except ValueError:  # a value the launch wrote that is no number
        return None
    if value <= 0:
        return None
    if spec.type == "int":
        return str(round(value))
    places = max(_decimals(have), _decimals(f"{abs(step):g}"))
    return f"{value:.{places}f}"


def direction_of(text: str, flag: str, framework: str | None = None) -> int:
    """Which way a fix's words move `flag` (canonical name): -1 for "lower --x", +1 for
    "raise --x", 0 where they say neither ("set --x to at most ...")."""
    for match in FLAG_TOKEN.finditer(text):
        if match.group(2) or flags.canonical_flag(match.group(1), framework) != flag:
            continue
        if way := _way_before(text, match.start()):
            return way
    return 0


def _way_before(text: str, at: int) -> int:
    """-1 where the words just before `at` lower something, +1 where they raise it."""
    before = text[max(0, at - 40) : at]
    if _STEP_DOWN.search(before):
        return -1
    return 1 if _STEP_UP.search(before) else 0


def with_values(
    changes: Sequence[Change],
    summary: str,
    values: Iterable[FlagValue],
    framework: str | None,
    stepped: Sequence[Change] | None = None,
) -> tuple[tuple[Change, ...], tuple[FlagValue, ...]]:
    """A flag the fix names without a value takes the one the paste's figures give it
    ("--max-model-len at most 98304"), where the fix's words do not move it the other
    way (a "raise" fix takes no upper bound). `stepped`: the same changes with the values
    `with_steps` gave them; a step that falls short of the figures' bound ("raise by
    0.05" to 0.75 where nothing below 0.78 fits) gives way to the bound. The changes, and
    the values taken."""
    by_flag = {value.flag: value for value in values}
    taken: list[FlagValue] = []
    filled = []
    for change, moved in zip(changes, stepped or changes, strict=True):
        value = by_flag.get(change.name) if change.action is ChangeAction.SET_FLAG else None
        if value is not None and change.value is None and not _within(moved.value, value):
            way = direction_of(summary, change.name, framework)
            if way == 0 or way == (1 if value.bound == "at_least" else -1):
                moved = dataclasses.replace(change, value=value.value)
                taken.append(value)
        filled.append(moved)
    return tuple(filled), tuple(taken)


def _within(written: str | None, value: FlagValue) -> bool:
    """Does a value a step gave already keep to the figures' bound?"""
    try:
        have, bound = float(written or ""), float(value.value)
    except ValueError:
        return False
    return have >= bound if value.bound == "at_least" else have <= bound


def _decimals(number: str) -> int:
    return len(number.partition(".")[2])


def changes_from_lines(
    text: str, vocabulary: VocabularyLike, framework: str | None = None
) -> tuple[Change, ...]:
    """A reviewer's changes, one per line as `Change.describe()` writes them: `--x 1`,
    `remove --x`, `NAME=value`, `package==1.2`; a line none of these reads stays as words."""
    found: list[Change] = []
    for line in text.splitlines():
        line = line.strip()
        if line:
            found += changes_in(line, vocabulary, framework) or [
                Change(ChangeAction.OTHER, "other", line[:300])
            ]
    return tuple(dict.fromkeys(found))


def describe_changes(changes: tuple[Change, ...]) -> str:
    return " ".join(change.describe() for change in changes)


# -- fixes no flag can say -------------------------------------------------------------------

# "fixed it by running ...", "the fix was to disable ...", "what finally worked was ...",
# "Rebooting the node fixed it": the action is the words after (or before) the cue.
_WORDED_AFTER = re.compile(
    r"\b(?:fixed|solved|resolved|cured|worked around) (?:it|this|that|the \w+(?: \w+)?)?\s?by\s+"
    r"|\bthe (?:real |actual |eventual |final |proper )?(?:fix|solution|cure|answer) (?:was|is)"
    r"\s+(?:to\s+|simply\s+|just\s+)*"
    r"|\bwhat (?:finally |actually |eventually |really )?(?:worked|fixed it|helped|solved it)"
    r" (?:was|is)\s+(?:to\s+|simply\s+|just\s+)*",
    re.IGNORECASE,
)
_WORDED_BEFORE = re.compile(
    r"^\W{0,4}([A-Z][a-z]+ing\b[^.;:!?]{3,150}?)\s+(?:finally\s+)?(?:fixed|solved|resolved|cured)"
    r" (?:it|this|that|the \w+)\b"
)
_CLAUSE_END = re.compile(r"[(:;,!?\[]|\.(?:\s|$)| [-\u2013\u2014]{1,2} ")
_ACTION_VERBS = frozenset(
    {
        "add", "apply", "build", "change", "clear", "delete", "disable", "downgrade", "drop",
        "enable", "flash", "force", "give", "increase", "install", "kill", "lower", "move", "pin",
        "raise", "reboot", "rebuild", "recompile", "reduce", "reinstall", "remove", "rename",
        "replace", "reset", "restart", "revert", "roll", "run", "set", "switch", "turn", "unset",
        "update", "upgrade", "use", "wipe",
        # changes to code or data flow
        "gather", "cast", "skip", "cap", "limit", "split", "shard", "offload", "quantize",
        "cache", "reorder", "batch", "fuse", "pad", "allocate", "free", "keep", "convert",
        # past tenses that do not end in -ed
        "built", "rebuilt", "ran", "reran", "put", "took", "made", "swapped", "threw", "wrote",
    }
)  # fmt: skip


def worded_change(text: str, *, opens_fix_section: bool = False) -> Change | None:
    """An OTHER change for a fix told in words, or None when the text tells no action.

    `opens_fix_section`: the text is the first sentence under a "Fix" heading, where an
    action sentence ("Disabled ACS in the BIOS, ...") is the fix without any cue."""
    clause = _cued_clause(text)
    if clause is None and opens_fix_section:
        clause = _clause(text)
    if clause is None or not _is_action(clause):
        return None
    return Change(ChangeAction.OTHER, "other", clause)


def _cued_clause(text: str) -> str | None:
    after = _WORDED_AFTER.search(text)
    if after is not None:
        return _clause(text[after.end() :])
    before = _WORDED_BEFORE.match(text)
    return _clause(before.group(1)) if before else None


def _clause(text: str) -> str:
    """The action's own words: up to the first bracket, colon, comma or sentence end."""
    text = text.replace("**", "").strip()
    end = _CLAUSE_END.search(text[:200])
    return (text[: end.start()] if end else text[:160]).strip(" `'\"")


# Words ending like a past tense or a gerund that are not verbs.
_NOT_VERBS = frozenset({"nothing", "something", "anything", "everything", "during", "thing"})


def _is_action(clause: str) -> bool:
    """Starts with a verb ("disable", "disabled", "running") and says something about it."""
    words = clause.split()
    if len(words) < 2 or len(clause) > 160:
        return False
    verb = words[0].lower()
    if verb in _NOT_VERBS or (verb in ("made", "make", "makes") and words[1].lower() == "it"):
        return False  # "Made it worse" judges an attempt; it is not one
    stem = verb[:-3] if verb.endswith("ing") else verb.rstrip("d").rstrip("e")
    return (
        verb in _ACTION_VERBS
        or any(v.rstrip("e") == stem for v in _ACTION_VERBS)
        or (verb.endswith(("ed", "ing")) and len(verb) > 4)
    )


# -- summaries of our own ---------------------------------------------------------------------

_NUMBER_VALUE = re.compile(r"^-?\d+(?:\.\d+)?$")
_REVERT = re.compile(r"\b(?:revert\w*|undo\w*|undid|roll\w* back|git checkout)\b", re.IGNORECASE)
_GERUND = re.compile(r"^(\w+?)(?:ing|ed)\b")


def summarize(changes: tuple[Change, ...], before: dict[str, str | None] | None = None) -> str:
    """A short imperative of our own for a set of changes: "Lower `--x` to 0.88; add `--y`"."""
    parts = [_summary_of(change, before or {}) for change in changes]
    text = "; ".join(part for part in parts if part)
    return text[:1].upper() + text[1:]


def _summary_of(change: Change, before: dict[str, str | None]) -> str:
    if change.action is ChangeAction.SET_FLAG:
        was = before.get(change.name)
        return _flag_summary(change, None if was == change.value else was)
    if change.action is ChangeAction.REMOVE_FLAG:
        return f"remove `--{change.name}`"
    if change.action is ChangeAction.SET_ENV:
        return f"set `{change.name}={change.value or ''}`"
    if change.action is ChangeAction.PIN_VERSION:
        return f"pin {change.name} to {change.value}" if change.value else f"pin {change.name}"
    if change.action is ChangeAction.PATCH:
        if _REVERT.search(change.value or ""):
            return "revert the patch" + (f" to `{change.name}`" if change.name != "patch" else "")
        return f"patch `{change.name}`" if change.name != "patch" else "patch the code"
    return _imperative(change.value or change.name)


def _flag_summary(change: Change, was: str | None) -> str:
    flag = f"`--{change.name}`"
    if change.value is None:
        return f"add {flag}"
    if was and _NUMBER_VALUE.match(was) and _NUMBER_VALUE.match(change.value):
        verb = "lower" if float(change.value) < float(was) else "raise"
        return f"{verb} {flag} from {was} to {change.value}"
    if was and was != change.value:
        return f"switch {flag} from {was} to {change.value}"
    return f"set {flag} to {change.value}"


def _imperative(words: str) -> str:
    """ "running one image tag on both nodes" -> "run one image tag on both nodes"."""
    words = words.strip().rstrip(".")
    match = _GERUND.match(words)
    if match and match.group(0).lower() not in _ACTION_VERBS:
        stem = match.group(1)
        for verb in sorted(_ACTION_VERBS, key=len):
            if verb.rstrip("e") == stem.rstrip("e") or verb == stem[:-1]:
                return verb + words[match.end() :]
    return words
