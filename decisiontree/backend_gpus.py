"""Attention backends a launch chooses that its framework refuses on its GPU.

Some backends check the GPU before the server starts: vLLM's backends each state the
compute capabilities they support, SGLang's raise at start-up ("TRTLLM MLA backend is only
supported on Blackwell GPUs"). Such a choice never starts on another GPU, whatever else the
launch sets. The capabilities come from one release's own checks (`data/backend_gpus.json`,
each with the file and function that checks): a launch whose backend flag names one its GPU
is not among is told so before it runs and beside any diagnosis, with the backends that the
release lets run there and that serve the model's attention (MLA or dense, where the model
is known: it also decides where SGLang's FA3 runs).

The reading is a `GpuRequirement`, as one that an error message states is: every answer
shows both the same way.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from functools import cache
from pathlib import Path
from typing import TYPE_CHECKING, Any

from decisiontree import flags
from decisiontree.gpu_requirement import (
    Capability,
    CapabilityRange,
    GpuRequirement,
    archs_meeting,
    capability_of_arch,
    gpu_named_in,
    gpus_described,
    meets,
)
from decisiontree.vocabulary import Vocabulary

if TYPE_CHECKING:
    from decisiontree.context import Context

TABLE_FILE = Path(__file__).resolve().parent / "data" / "backend_gpus.json"
EVERY_GPU = "any"
NEWEST = (99, 9)


@dataclass(frozen=True)
class Backend:
    name: str  # as the framework spells the choice: "fa3", "FLASHMLA"
    runs_on: tuple[str, ...]  # as the table writes it: ("9.x", "10.x")
    runs_on_mla: tuple[str, ...]  # for a model with MLA where that is fewer GPUs, else ()
    serves: frozenset[str]  # the kinds of attention it serves: "dense", "mla", "sparse-mla"
    flags: tuple[str, ...]  # the flags that may choose it
    source: str  # the file and function of the release that checks

    def specs(self, kind: str | None) -> tuple[str, ...]:
        """Where it runs for a model of this kind of attention (None: not known)."""
        return self.runs_on_mla if kind == "mla" and self.runs_on_mla else self.runs_on

    def ranges(self, kind: str | None) -> tuple[CapabilityRange, ...]:
        """The same as capabilities; () where it runs on every GPU."""
        return tuple(capability_range(spec) for spec in self.specs(kind) if spec != EVERY_GPU)


@dataclass(frozen=True)
class BackendTable:
    framework: str
    release: str
    flags: tuple[str, ...]
    backends: Mapping[str, Backend]  # by the choice, lower-cased


@cache
def _data() -> Mapping[str, Any]:
    return dict(json.loads(TABLE_FILE.read_text(encoding="utf-8")))


@cache
def tables() -> Mapping[str, BackendTable]:
    found = {}
    for framework, table in _data().items():
        if "choices" not in table:
            continue  # the notes, the models with MLA
        flag_names = tuple(table["flags"])
        backends = {
            name.lower(): Backend(
                name,
                tuple(entry["runs_on"]),
                tuple(entry.get("runs_on_mla", ())),
                frozenset(entry["serves"]),
                tuple(entry.get("flags", flag_names)),
                entry["source"],
            )
            for name, entry in table["choices"].items()
        }
        found[framework] = BackendTable(framework, table["release"], flag_names, backends)
    return found


@cache
def mla_classes() -> frozenset[str]:
    return frozenset(_data()["mla_models"]["classes"])


def model_kind(context: Context, vocabulary: Vocabulary) -> str | None:
    """The launch's model's attention: "mla" or "dense"; None where the model is not known."""
    classes = vocabulary.model_classes(context.model_arch or "")
    if not classes:
        return None
    return "mla" if mla_classes() & set(classes) else "dense"


def capability_range(spec: str) -> CapabilityRange:
    """ "9.0" -> 9.0 alone; "10.x" -> every 10.y; "8.0+" -> 8.0 and newer; "8.0-12.1"."""
    if spec.endswith("+"):
        return CapabilityRange(_capability(spec[:-1]), NEWEST)
    if "-" in spec:
        low, high = spec.split("-", 1)
        return CapabilityRange(_capability(low), _capability(high))
    major, minor = spec.split(".", 1)
    if minor == "x":
        return CapabilityRange((int(major), 0), (int(major), 9))
    return CapabilityRange(_capability(spec), _capability(spec))


def _capability(text: str) -> Capability:
    major, minor = text.split(".", 1)
    return int(major), int(minor)


def runs_here(backend: Backend, capability: Capability, kind: str | None = None) -> bool:
    ranges = backend.ranges(kind)
    return not ranges or meets(capability, ranges, ())


def with_launch_backends(
    told: tuple[GpuRequirement, ...],
    context: Context,
    vocabulary: Vocabulary,
    said: Sequence[str] = (),
) -> tuple[GpuRequirement, ...]:
    """The error's own readings (`told`) and the launch's backends the framework refuses on
    its GPU. A message that named no flag but lists the same GPUs as a refused backend is
    that backend's refusal: the launch's reading, which names the flag and what runs
    here instead, stands in its place. `said`: the error's messages, read for the backend
    where the launch names none."""
    backends = backend_requirements(context, vocabulary, told=told, said=said)
    table = tables().get(context.framework or "")
    # Each refused backend's GPUs for any model: what its own message lists.
    listed = {
        archs_meeting(
            vocabulary, table.backends[reading.code.lower()].ranges(None), (), refused=False
        )
        for reading in backends
        if table is not None
    }
    kept = tuple(reading for reading in told if reading.flags or reading.runs_on not in listed)
    return kept + backends


def backend_requirements(
    context: Context,
    vocabulary: Vocabulary,
    *,
    told: Iterable[GpuRequirement] = (),
    said: Sequence[str] = (),
) -> tuple[GpuRequirement, ...]:
    """A reading for each backend flag of the launch whose choice the framework's release
    refuses on the launch's GPU; none for a flag a reading in `told` already names (the
    error's own message said it).

    Where the launch sets none of the table's flags, the one backend of the table that the
    error's messages (`said`) name, as the framework spells it ("Selected backend
    AttentionBackendEnum.FLASHMLA is not valid for this configuration"), is read as the
    choice. A message that names several (a list of every backend tried) chose none."""
    table = tables().get(context.framework or "")
    capability = capability_of_arch(context.arch or "")
    if table is None or capability is None:
        return ()
    named = " ".join(flag for reading in told for flag in reading.flags)
    kind = model_kind(context, vocabulary)
    found = []
    for flag, value in context.flags.items():
        backend = table.backends.get((value or "").lower())
        if backend is None or flag not in backend.flags or runs_here(backend, capability, kind):
            continue
        spelled = flags.spell(flag, table.framework, context.spelling_version)
        if spelled in named.split():
            continue
        found.append(_reading(table, backend, flag, spelled, kind, context, vocabulary))
    if said and not any(flag in context.flags for flag in table.flags):
        named_backends = _named_in(table, said)
        if len(named_backends) == 1 and not runs_here(named_backends[0], capability, kind):
            [backend] = named_backends
            flag = table.flags[0]
            spelled = flags.spell(flag, table.framework, context.spelling_version)
            found.append(
                _reading(table, backend, flag, spelled, kind, context, vocabulary, launched=False)
            )
    return tuple(found)


def _named_in(table: BackendTable, said: Sequence[str]) -> list[Backend]:
    """The table's backends that the messages name, each as a whole word."""
    text = "\n".join(message[:2000] for message in said)
    return [
        backend
        for backend in table.backends.values()
        if backend.name in text and re.search(rf"(?<![\w-]){backend.name}(?![\w-])", text)
    ]


def _reading(
    table: BackendTable,
    backend: Backend,
    flag: str,
    spelled: str,
    kind: str | None,
    context: Context,
    vocabulary: Vocabulary,
    *,
    launched: bool = True,
) -> GpuRequirement:
    """`kind`: the model's attention, where known; `launched`: the launch chose the
    backend, else the error names it."""
    arch = context.arch or ""
    capability = capability_of_arch(arch)
    gpu = gpu_named_in(context, vocabulary, arch) or arch
    runs_on = archs_meeting(vocabulary, backend.ranges(kind), (), refused=False)
    needs = "compute capability " + " or ".join(backend.specs(kind))
    narrower = ""  # the GPUs it runs on depend on the model's attention
    if backend.runs_on_mla:
        if kind == "mla":
            narrower = ", for a model with MLA attention as this one"
        else:
            narrower = f", and only {' or '.join(backend.runs_on_mla)} for a model with MLA"
    release = f"{table.framework} {table.release}"
    gpus = gpus_described(runs_on, vocabulary)
    says = (
        (
            f"`{spelled} {backend.name}` chooses a backend that"
            if launched
            else f"The error names `{backend.name}`, a backend that"
        )
        + f" {release} runs only on {needs}"
        + (f" ({gpus})" if gpus else "")
        + narrower
        + (f"; the {gpu} is {arch}" if gpu != arch else f"; this GPU is {arch}")
        + f", not one of them. The server stops at start-up ({backend.source})."
    )
    if context.framework_version and context.framework_version != table.release:
        says += (
            f" Read from {release}; this launch runs {context.framework_version},"
            " whose check may differ."
        )
    # In its place, backends that serve the model's attention where it is known, else
    # every kind this one serves (the model needs one of them).
    wanted = ({kind} & backend.serves) or backend.serves
    others = [
        other.name
        for other in table.backends.values()
        if wanted <= other.serves
        and flag in other.flags
        and capability is not None
        and runs_here(other, capability, kind)
    ]
    unset = f"or leave it unset: {table.framework} then picks one that runs here."
    if others:  # only those whose check was read: another may run here as well
        listed = ", ".join(f"`{name}`" for name in others)
        remedy = (
            f"Set `{spelled}` to another value (of the backends whose check FixGraph has"
            f" read, {release} runs {listed} on {arch}), {unset}"
        )
    else:
        remedy = f"Set `{spelled}` to another value, {unset}"
    return GpuRequirement(
        backend.name, needs, runs_on, gpu, arch, (f"{spelled} {backend.name}",), says, remedy
    )


__all__ = [
    "Backend",
    "BackendTable",
    "backend_requirements",
    "capability_range",
    "tables",
    "with_launch_backends",
]
