"""Code that an error says runs only on some GPUs, beside the GPU the paste ran on.

Kernels and attention backends check the GPU before they start, and refuse with what they
need: "dsv3_fused_a_gemm requires SM90 (Hopper) or later", "FA2 is only supported on
devices with compute capability >= 8", "MSA-v1 compact NVFP4 dequant requires SM100/SM103,
got sm120", "FlashMLA Dense is only supported on Hopper devices". On a GPU outside that list
no setting of the code makes it run: another backend, kernel or quantization does, or
another GPU. The reading says which GPUs the code needs, which one this is (the message's
own "got sm120" first, else the setup's), and the launch flag that chose the code where
the launch or the flag's choices name it.

The list is read by its form (SM and compute-capability numbers, families of GPUs, "or
later", ">=", "excluding"), not from any one message; a GPU that meets the list gets no
reading, since the error then has another cause.
"""

from __future__ import annotations

import re
from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import TYPE_CHECKING

from decisiontree import flags
from decisiontree.vocabulary import Vocabulary, capability_of

if TYPE_CHECKING:  # the context reads `in_requirement` to tell a list from the device
    from decisiontree.context import Context

Capability = tuple[int, int]
ANY_MINOR = -1  # "SM10x", "12.x": every minor version of the major

# What a refusal says before its list: "requires", "is only supported on", "only
# supports", "needs"; "not supported on" names GPUs the code refuses instead.
_CLAIM = re.compile(
    r"\b(?P<neg>(?:is |are )?(?:currently )?(?:not|unsupported) (?:supported |available )?on\b"
    r"|(?:is |are )?unsupported on\b)"
    r"|\b(?:(?:is |are )?(?:currently )?only (?:supported|available|works|runs) on"
    r"|only supports?|requires?|needs?|must run on|supported only on)\b",
    re.IGNORECASE,
)
# Where the list ends: the sentence, or the message's own account of the GPU.
_LIST_END = re.compile(
    r"\.(?:\s|$)|[;\n\"'`]|,?\s(?:got|but|found|current|detected)\b|\(current", re.IGNORECASE
)
_LIST_CHARS = 160
_ITEM = re.compile(
    r"(?P<op>>=|≥|<=|≤|at least|at most)?\s{0,2}"
    r"(?:"
    r"(?<![A-Za-z0-9_])sm[ _]?(?P<sop>>=|≥|<=|≤)?\s{0,2}(?P<sm>\d{1,3})"
    r"(?:\.(?P<sm_minor>\d|x)(?!\d))?(?P<sm_x>x(?![a-z]))?(?:[af](?![a-z]))?"
    r"|(?<=/)(?P<bare>\d{2,3}|\d{1,2}x)(?![\w.])"
    r"|(?P<cc>\d{1,2})\.(?P<cc_minor>\d|x)(?![\d.])"
    r"|(?:(?<=capability )(?:of )?|(?<=[=≥≤] )|(?<=[=≥≤]))(?P<cc_whole>\d{1,3})(?![\d.])"
    r"|(?P<family>\b(?:Volta|Turing|Ampere|Ada(?: Lovelace)?|Hopper|Blackwell)\b)"
    r")"
    r"(?:\s{0,2}\([^()\n]{0,40}\))?"  # a gloss: "SM90 (Hopper) or later"
    r"(?:\s{1,2}(?:GPUs?|devices?|cards?|architectures?|generation)\b)?"  # "Ampere GPUs or newer"
    r"(?P<up>\+|\s(?:or|and) (?:later|newer|higher|above|greater)\b)?",
    re.IGNORECASE,
)
_EXCEPT = re.compile(r"\b(?:excluding|except|other than|but not)\b", re.IGNORECASE)
# The GPU as the message gives it: "got sm120", "got SM12.x", "current GPU compute
# capability: 12.0", "got SM10.0".
_GOT = re.compile(
    r"\b(?:got|found|detected|current(?: GPU)?(?: compute)? capability:?|this GPU is)\s{1,3}"
    r"(?:sm[ _]?)?(?P<major>\d{1,2})(?:\.?(?P<minor>\d|x))?(?!\d)",
    re.IGNORECASE,
)
_SUBJECT_END = re.compile(r"^.*?(?:[:!]\s|\)\s|\]\s)", re.DOTALL)
_SUBJECT_WORDS = 8
_IDENTIFIER = re.compile(r"\b\w*(?:_|\d)[\w-]*")
_NAMED_CHOICE_FLAGS = 3  # a value that more flags offer ("triton", "auto") names none


@dataclass(frozen=True)
class CapabilityRange:
    low: Capability
    high: Capability  # inclusive; (major, 9) covers every minor of a major


@dataclass(frozen=True)
class GpuRequirement:
    """Code the error says runs only on some GPUs (or refuses some), and this GPU."""

    code: str  # what the message names: "dsv3_fused_a_gemm"; "" where it names nothing
    needs: str  # as the message lists it: "SM90 (Hopper) or later"
    runs_on: tuple[str, ...]  # architectures of the vocabulary it runs on: ("sm_90", ...)
    gpu: str  # this GPU by name, else its architecture; "" where the paste does not say
    arch: str  # "sm_120"; "" where not known
    flags: tuple[str, ...]  # launch flags that may have chosen the code, as spelled
    says: str
    remedy: str

    @property
    def text(self) -> str:
        return f"{self.says} {self.remedy}"


def gpu_requirements(
    messages: Iterable[str], context: Context, vocabulary: Vocabulary
) -> tuple[GpuRequirement, ...]:
    """The refusals of the error's messages that this GPU does not meet, or all of them
    where the paste does not say which GPU it is."""
    found: dict[tuple[str, str], GpuRequirement] = {}
    for message in messages:
        if not _CLAIM.search(message[:2000]):
            continue
        for reading in _read(message[:2000], context, vocabulary):
            found.setdefault((reading.code, reading.needs), reading)
    return tuple(found.values())


def in_requirement(text: str, position: int) -> bool:
    """Whether `position` of `text` sits in the list of GPUs some code requires: an
    architecture named there ("requires GPUs with sm75 or higher") is not the device's."""
    before = text[max(0, position - _LIST_CHARS) : position]
    claims = list(_CLAIM.finditer(before))
    return bool(claims) and _LIST_END.search(before, claims[-1].end()) is None


def _read(message: str, context: Context, vocabulary: Vocabulary) -> Iterable[GpuRequirement]:
    for claim in _CLAIM.finditer(message):
        rest = message[claim.end() : claim.end() + _LIST_CHARS]
        end = _LIST_END.search(rest)
        listed = rest[: end.start()] if end else rest
        items, excluded = _items(listed, vocabulary)
        if not items:
            continue
        refused = claim["neg"] is not None
        gpu, arch, capability = _this_gpu(message[claim.end() :], context, vocabulary)
        met = capability is not None and meets(capability, items, excluded)
        if capability is not None and met != refused:
            continue  # this GPU is one the code runs on: the error has another cause
        runs_on = archs_meeting(vocabulary, items, excluded, refused=refused)
        if not runs_on or len(runs_on) == len(vocabulary.arch_names):
            continue  # a list no GPU meets, or every one: not a list of GPUs
        code = _subject(message[: claim.start()])
        yield _reading(
            code,
            " ".join(listed.split()),
            runs_on,
            gpu,
            arch,
            refused,
            context,
            message,
            vocabulary,
        )


def _items(
    listed: str, vocabulary: Vocabulary
) -> tuple[list[CapabilityRange], list[CapabilityRange]]:
    """The capabilities a list names, and those after its "excluding"."""
    cut = _EXCEPT.search(listed)
    kept, left_out = (listed[: cut.start()], listed[cut.end() :]) if cut else (listed, "")
    return _parsed(kept, vocabulary), _parsed(left_out, vocabulary)


def _parsed(listed: str, vocabulary: Vocabulary) -> list[CapabilityRange]:
    numbered: list[CapabilityRange] = []
    families: list[CapabilityRange] = []
    for match in _ITEM.finditer(listed):
        if match["bare"] and not numbered:
            continue  # "SM90/100" continues a list of architectures; "16/32-bit" is none
        op = (match["op"] or match["sop"] or "").lower()
        if match["family"]:
            caps = _family(match["family"], vocabulary)
            if caps:
                low, high = min(caps), max(caps)
                families.append(CapabilityRange(low, (99, 9) if match["up"] else high))
            continue
        capability = _capability(match, capabilities="capabilit" in listed.lower())
        if capability is None:
            continue
        major, minor = capability
        low = (major, 0 if minor == ANY_MINOR else minor)
        high = (major, 9 if minor == ANY_MINOR else minor)
        if match["up"] or op in (">=", "≥", "at least"):
            numbered.append(CapabilityRange(low, (99, 9)))
        elif op in ("<=", "≤", "at most"):
            numbered.append(CapabilityRange((0, 0), high))
        else:
            numbered.append(CapabilityRange(low, high))
    # A family in brackets glosses a number ("SM90 (Hopper)"); alone, it is the list.
    items = numbered or families
    lows = [i for i in items if i.high == (99, 9) and i.low != (0, 0)]
    highs = [i for i in items if i.low == (0, 0)]
    if lows and highs:  # "SM>=80 and SM<=90": one range
        return [CapabilityRange(max(i.low for i in lows), min(i.high for i in highs))]
    return items


def _capability(match: re.Match[str], *, capabilities: bool) -> Capability | None:
    """The capability an item names; a bare number counts only in a list that says
    "compute capability" ("requires transformers>=4.45" lists no GPU)."""
    if match["sm"]:
        digits, minor = match["sm"], match["sm_minor"]
        if minor:  # "SM 8.0", "SM12.x"
            return int(digits), ANY_MINOR if minor.lower() == "x" else int(minor)
        if match["sm_x"]:  # "SM10x": the major version
            return int(digits), ANY_MINOR
        return _of_digits(digits)
    if match["bare"]:  # "SM90/100", "SM9x/10x/11x"
        bare = match["bare"]
        return (int(bare[:-1]), ANY_MINOR) if bare[-1] in "xX" else _of_digits(bare)
    if not capabilities:
        return None
    if match["cc"]:
        minor = match["cc_minor"]
        return int(match["cc"]), ANY_MINOR if minor.lower() == "x" else int(minor)
    if match["cc_whole"]:  # "compute capability of 90", ">= 8"
        whole = match["cc_whole"]
        return (int(whole), 0) if len(whole) == 1 else _of_digits(whole)
    return None


def _of_digits(digits: str) -> Capability | None:
    """ "90" -> (9, 0), "120" -> (12, 0); a lone digit is no architecture."""
    return (int(digits[:-1]), int(digits[-1])) if len(digits) >= 2 else None


def _family(name: str, vocabulary: Vocabulary) -> list[Capability]:
    key = name.split()[0].lower()
    return sorted(
        cap
        for gpu in vocabulary.gpus
        if gpu.family.lower() == key and (cap := capability_of_arch(gpu.arch)) is not None
    )


def capability_of_arch(arch: str) -> Capability | None:
    capability = capability_of(arch)
    if capability is None:
        return None
    major, minor = capability.split(".")
    return int(major), int(minor)


def meets(
    capability: Capability, items: Sequence[CapabilityRange], excluded: Sequence[CapabilityRange]
) -> bool:
    major, minor = capability

    def within(item: CapabilityRange) -> bool:
        if minor == ANY_MINOR:  # the message gave only the major: any of it will do
            return item.low[0] <= major <= item.high[0]
        return item.low <= capability <= item.high

    return any(within(i) for i in items) and not any(within(i) for i in excluded)


def _this_gpu(
    after: str, context: Context, vocabulary: Vocabulary
) -> tuple[str, str, Capability | None]:
    """(name, architecture, capability) of the GPU: the message's "got sm120" after its
    list, else the setup's."""
    got = _GOT.search(after[:200])
    if got:
        digits, minor = got["major"], got["minor"]
        if minor is None:  # "got sm90": its digits are the major and the minor
            capability = _of_digits(digits) if len(digits) >= 2 else (int(digits), ANY_MINOR)
        else:  # "got sm120" (12, 0), "got SM12.x"
            capability = (int(digits), ANY_MINOR if minor.lower() == "x" else int(minor))
        if capability is not None:
            if capability[1] == ANY_MINOR:
                arch = f"sm_{capability[0]}x"
            else:
                arch = f"sm_{capability[0]}{capability[1]}"
            named = gpu_named_in(context, vocabulary, arch)
            return named or arch, arch, capability
    arch = context.arch or ""
    capability = capability_of_arch(arch)
    return (gpu_named_in(context, vocabulary, arch) or arch), arch, capability


def gpu_named_in(context: Context, vocabulary: Vocabulary, arch: str) -> str | None:
    for name in context.gpus:
        gpu = vocabulary.gpu_named(name)
        if gpu is not None and gpu.arch == arch:
            return name
    return None


def _subject(before: str) -> str:
    """What the message names as refusing: the words before its claim, after the
    exception's type or the log's prefix; "" where that is no short name."""
    line = before.rsplit("\n", 1)[-1]
    while (head := _SUBJECT_END.match(line)) and head.end() < len(line):
        line = line[head.end() :]
    words = line.strip(" \t,.-'\"`()[]").split()
    return " ".join(words) if 0 < len(words) <= _SUBJECT_WORDS else ""


def archs_meeting(
    vocabulary: Vocabulary,
    items: Sequence[CapabilityRange],
    excluded: Sequence[CapabilityRange],
    *,
    refused: bool,
) -> tuple[str, ...]:
    known = sorted(
        {cap: arch for arch in vocabulary.arch_names if (cap := capability_of_arch(arch))}.items()
    )
    return tuple(arch for cap, arch in known if meets(cap, items, excluded) != refused)


def _chose(code: str, message: str, context: Context, vocabulary: Vocabulary) -> tuple[str, ...]:
    """Flags that may have chosen the code: the launch's flags whose value the message
    names, else the framework's flags that offer a word of the code's name as a choice."""
    framework = context.framework
    spelled = []
    for name, value in context.flags.items():
        if value and re.search(rf"(?<![\w-]){re.escape(value)}(?![\w-])", message, re.I):
            spelled.append(f"{_spell(name, context)} {value}")
    if spelled or framework is None:
        return tuple(spelled)
    # Each name of a backend in the code's name ("trtllm_mha", "fa3": an identifier, not an
    # English word that a mode also offers, as "prefill") that few flags offer; one that
    # many offer ("nvfp4") tells no flag.
    named: dict[str, None] = {}
    for word in dict.fromkeys(w.lower() for w in _IDENTIFIER.findall(code)):
        offering = [
            spec.name
            for spec in vocabulary.flags_of(framework)
            if word in {c.lower() for c in spec.choices}
        ]
        if len(offering) <= _NAMED_CHOICE_FLAGS:
            named.update(dict.fromkeys(offering))
    if len(named) > _NAMED_CHOICE_FLAGS:
        return ()
    return tuple(_spell(name, context) for name in named)


def _spell(name: str, context: Context) -> str:
    return flags.spell(name, context.framework or "", context.spelling_version)


def _reading(
    code: str,
    needs: str,
    runs_on: tuple[str, ...],
    gpu: str,
    arch: str,
    refused: bool,
    context: Context,
    message: str,
    vocabulary: Vocabulary,
) -> GpuRequirement:
    what = f"`{code}`" if code else "The code that failed"
    gpus = gpus_described(runs_on, vocabulary)
    if refused:
        says = f"{what} does not run on {needs}"
    else:
        says = f"{what} runs only on {needs}" + (f" ({gpus})" if gpus else "")
    if arch:
        says += f"; the {gpu} is {arch}" if gpu != arch else f"; this GPU is {arch}"
        says += ", one of them." if refused else ", not one of them."
        says += " No setting of it makes it run here."
    else:
        says += "; the paste does not say which GPU this is." + (
            "" if refused else " On any other GPU no setting of it makes it run."
        )
    chosen = _chose(code, message, context, vocabulary)
    here = arch or "this GPU"
    if chosen:
        quoted = [f"`{c}`" for c in chosen]
        if len(quoted) > 1:  # offered by each, set by the launch: which one is not known
            named = f"whichever of {', '.join(quoted[:-1])} or {quoted[-1]} chose it"
        else:
            named = quoted[0]
        remedy = f"Set {named} to another value, one that runs on {here}."
    else:
        remedy = (
            f"Choose another backend, kernel or quantization that runs on {here} (the flag"
            " that picks it, or a model or dtype that does not need this one)"
            + (", or serve on one of those GPUs." if gpus and not refused else ".")
        )
    return GpuRequirement(code, needs, runs_on, gpu, arch, chosen, says, remedy)


def gpus_described(archs: Sequence[str], vocabulary: Vocabulary) -> str:
    """ "sm_100, Blackwell data center: B200/GB200; sm_103, ...", or "sm_75, Turing, and
    every newer architecture" for a list that runs to the newest."""
    known = sorted(vocabulary.arch_names, key=lambda arch: capability_of_arch(arch) or (0, 0))
    if len(archs) > 2 and list(archs) == known[known.index(archs[0]) :]:
        return f"{_described(archs[0], vocabulary)}, and every newer architecture"
    return "; ".join(_described(arch, vocabulary) for arch in archs)


def _described(arch: str, vocabulary: Vocabulary) -> str:
    name = vocabulary.arch_names.get(arch, "")
    return f"{arch}, {name.replace(' (', ': ').rstrip(')')}" if name else arch
