"""How the user's setup fits a finding: its conditions, its verdict, its changes.

- `launched_or_default`, `gpu_bytes`: what a launch runs with where it does not say;
- `assess`: is a condition of a finding met, contradicted, or unknown here?
- `setup_differences`: the facts that make a match "the same error on a different
  setup" (another GPU architecture, model architecture, framework or release);
- `applicability`: whether a fix's change can go into the user's command at all
  (a flag their framework or release does not have, or one that only acts on
  model architectures they are not running, never does).
"""

from __future__ import annotations

import dataclasses
import re
from collections.abc import Iterable
from dataclasses import dataclass
from enum import StrEnum

from decisiontree import flags, versions
from decisiontree.conditions import is_version_key
from decisiontree.context import Context
from decisiontree.records import Change, ChangeAction, Condition
from decisiontree.spelling import spell_flag
from decisiontree.vocabulary import Vocabulary


class State(StrEnum):
    MET = "met"
    UNKNOWN = "unknown"
    CONTRADICTED = "contradicted"


# Values that mean "the framework decides": not evidence either way.
UNDECIDED_VALUES = frozenset({"auto", "default", ""})
VALUE_ALIASES = {"bfloat16": "bf16", "float16": "fp16", "half": "fp16", "float32": "fp32"}

# What "a different setup" means: a finding seen on another GPU architecture, model
# architecture, checkpoint quantization, framework or release is the same error, not the
# same known issue.
SETUP_KEYS = (
    "gpu.arch",
    "gpu.capability",
    "model.arch",
    "model.quantization",
    "framework",
    "framework.version",
)
SETUP_LABELS = {
    "gpu.arch": "GPU",
    "gpu.capability": "GPU compute capability",
    "model.arch": "model",
    "model.quantization": "quantization",
    "framework": "framework",
    "framework.version": "release",
}


# --- what the launch runs with ----------------------------------------------------


def launched_or_default(context: Context, flag: str) -> str | None:
    """The value `flag` ran with: the launch's or the log's, else its default in the
    user's release; None where the release does not settle the default."""
    if flag in context.flags:
        return context.flags[flag]
    spec = flags.flag(flag, context.framework)
    if spec is None:
        return None
    default = flags.default_in(spec, context.framework_version)
    return default.value if default.changed is None else None


def gpu_bytes(context: Context, vocabulary: Vocabulary) -> int | None:
    """Bytes of the user's GPU, from the size the vocabulary gives it (its marketed
    figure, which is in GiB); None where the GPU or its size is not known."""
    gpu = vocabulary.gpu(context.gpus[0]) if context.gpus else None
    return round(gpu.memory_gb * 1024**3) if gpu and gpu.memory_gb else None


# --- conditions -----------------------------------------------------------------


def assess(condition: Condition, context: Context, vocabulary: Vocabulary) -> State:
    """Does the context meet the condition? Unknown is not a no."""
    actual = normal_value(context.get(condition.key), condition.key, vocabulary)
    if actual in UNDECIDED_VALUES and normal_value(condition.value) not in UNDECIDED_VALUES:
        return State.UNKNOWN
    if condition.key == "gpu.capability" and _RANGE.match(actual):
        return _in_range(condition, actual, vocabulary)
    equal = _same_value(condition.key, condition.value, actual, vocabulary)
    return State.MET if equal != condition.negate else State.CONTRADICTED


# A compute capability answered as a range (">=8.0,<9.0"), not as one GPU's.
_RANGE = re.compile(r"\s*[<>=!~]")


def _in_range(condition: Condition, answered: str, vocabulary: Vocabulary) -> State:
    """A condition on the compute capability, the user's answered as a range: met where
    every GPU the vocabulary knows in that range meets it, contradicted where none does."""
    inside = [c for c in capabilities(vocabulary) if versions.satisfies(c, answered)]
    meets = {versions.satisfies(c, condition.value) != condition.negate for c in inside}
    if meets == {True}:
        return State.MET
    return State.CONTRADICTED if meets == {False} else State.UNKNOWN


def capabilities(vocabulary: Vocabulary) -> list[str]:
    """The compute capabilities of the GPUs the vocabulary knows, oldest first."""
    found = {gpu.compute_capability for gpu in vocabulary.gpus if gpu.compute_capability}
    return sorted(found, key=versions.sort_key)


def capability_answers(wanted: Iterable[str], vocabulary: Vocabulary) -> tuple[str, ...]:
    """The answers to "which compute capability?" that tell the `wanted` conditions apart:
    the known capabilities in runs that meet the same of them, each run written as a range
    ("<8.0", ">=8.0,<9.0", ">=9.0"); () when every known GPU meets the same."""
    specs = sorted(set(wanted))
    runs: list[list[str]] = []
    pattern: tuple[bool, ...] | None = None
    for capability in capabilities(vocabulary):
        meets = tuple(versions.satisfies(capability, spec) for spec in specs)
        if runs and meets == pattern:
            runs[-1].append(capability)
        else:
            runs.append([capability])
            pattern = meets
    if len(runs) < 2:
        return ()
    return tuple(
        ",".join(
            bound
            for bound in (
                f">={run[0]}" if number else "",
                f"<{runs[number + 1][0]}" if number + 1 < len(runs) else "",
            )
            if bound
        )
        for number, run in enumerate(runs)
    )


def on_gpu(
    arch: str | None, conditions: Iterable[Condition], vocabulary: Vocabulary
) -> list[State]:
    """How each condition stands on a GPU of `arch`, nothing else known (a host's GPUs,
    an architecture a search filter names)."""
    gpu = Context(arch=arch)
    return [assess(condition, gpu, vocabulary) for condition in conditions]


def _same_value(key: str, wanted: str, actual: str, vocabulary: Vocabulary) -> bool:
    if is_version_key(key):
        return versions.satisfies(actual, wanted)
    return normal_value(wanted, key, vocabulary) == actual


def normal_value(value: str | None, key: str = "", vocabulary: Vocabulary | None = None) -> str:
    if value is None:
        return ""
    text = value.strip().strip("'\"").lower()
    if key == "gpu.arch" and vocabulary is not None:
        return vocabulary.arch_of(text) or text
    return VALUE_ALIASES.get(text, text)


# --- the verdict ----------------------------------------------------------------


@dataclass(frozen=True)
class SetupDifference:
    """A fact of the finding's setup that the user's setup contradicts."""

    key: str  # "gpu.arch"
    finding_value: str  # "sm_120" (or "!=bf16")
    here: str  # "sm_90"

    def named(self) -> str:
        """The finding's side alone: "GPU sm_120"."""
        return f"{SETUP_LABELS.get(self.key, self.key)} {self.finding_value}"

    def describe(self) -> str:
        label = SETUP_LABELS.get(self.key, self.key)
        if not self.here:  # see `setup_not_known`
            return f"{label} {self.finding_value} in the finding, not known here"
        return f"{label} {self.here} here, {self.finding_value} in the finding"


def setup_differences(
    conditions: Iterable[Condition], context: Context, vocabulary: Vocabulary
) -> tuple[SetupDifference, ...]:
    """The finding's setup conditions that the context contradicts, in SETUP_KEYS order."""
    found = [
        SetupDifference(
            c.key,
            f"!={c.value}" if c.negate else c.value,
            context.get(c.key) or "",
        )
        for c in conditions
        if c.key in SETUP_KEYS and assess(c, context, vocabulary) is State.CONTRADICTED
    ]
    return tuple(sorted(found, key=lambda d: (SETUP_KEYS.index(d.key), d.finding_value)))


def setup_not_known(
    conditions: Iterable[Condition], context: Context, vocabulary: Vocabulary
) -> tuple[SetupDifference, ...]:
    """The finding's setup conditions when the context meets none of them and contradicts
    none: the same error, but nothing says it is the same setup (`here` is "")."""
    setup = [c for c in conditions if c.key in SETUP_KEYS]
    if any(assess(c, context, vocabulary) is not State.UNKNOWN for c in setup):
        return ()
    found = [SetupDifference(c.key, f"!={c.value}" if c.negate else c.value, "") for c in setup]
    return tuple(sorted(found, key=lambda d: (SETUP_KEYS.index(d.key), d.finding_value)))


# --- changes that fit the user's setup ----------------------------------------------


@dataclass(frozen=True)
class Applicability:
    """A change as it can go into the user's command, or why it cannot."""

    change: Change  # translated into the user's framework when the fix came from another
    reason: str = ""  # empty when the change applies

    @property
    def applies(self) -> bool:
        return not self.reason


def applicability(change: Change, context: Context, finding_framework: str | None) -> Applicability:
    """Can this change go into the user's launch command as it stands?"""
    if change.action not in (ChangeAction.SET_FLAG, ChangeAction.REMOVE_FLAG):
        return Applicability(change)
    framework = context.framework or finding_framework
    if framework is None or not flags.flags_of(framework):
        return Applicability(change)  # no flag table to judge by
    translated = _in_framework(change, finding_framework, framework)
    spec = flags.flag(translated.name, framework)
    if spec is None:
        return Applicability(change, f"{framework} has no --{change.name}")
    version = context.framework_version
    if spec.last_version and version and not versions.at_or_before(version, spec.last_version):
        reason = f"--{spec.name} is gone after {framework} {spec.last_version}; you run {version}"
        return Applicability(translated, reason)
    archs = spec.model_archs
    if archs and context.model_arch and context.model_arch not in archs:
        needs = ", ".join(archs)
        # as the withheld change spells it
        flag = spell_flag(spec.name, framework, context.spelling_version)
        reason = f"{flag} only acts on {needs} models; yours is {context.model_arch}"
        return Applicability(translated, reason)
    valued = _value_as_chosen(translated, spec)
    if valued is not None:
        return Applicability(valued)
    if finding_framework in (None, framework):
        # The finding's own framework took this value in its release; the table lists
        # the newest release's choices only, so it cannot say the value is wrong.
        return Applicability(translated)
    flag = spell_flag(spec.name, framework, context.spelling_version)
    return Applicability(translated, f"{framework}'s {flag} has no value {translated.value}")


def _value_as_chosen(change: Change, spec: flags.FlagSpec) -> Change | None:
    """The change with its value as the flag's choices write it (`bf16` is vLLM's
    `bfloat16`); None when no choice means that value."""
    if change.action is not ChangeAction.SET_FLAG or not spec.choices or change.value is None:
        return change
    if change.value in spec.choices:
        return change
    wanted = normal_value(change.value)
    same = [choice for choice in spec.choices if normal_value(choice) == wanted]
    return dataclasses.replace(change, value=same[0]) if same else None


def _in_framework(change: Change, source: str | None, target: str) -> Change:
    """A flag of the finding's framework, named as the user's framework names it."""
    if source is None or source == target or flags.flag(change.name, target):
        return change
    row = flags.equivalent_flag(change.name, source, target)
    if row is None or row.relation != "same":
        return change
    return dataclasses.replace(change, name=flags.canonical_flag(getattr(row, target), target))


__all__ = [
    "Applicability",
    "SetupDifference",
    "State",
    "applicability",
    "assess",
    "normal_value",
    "setup_differences",
]
