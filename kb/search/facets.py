"""Facets: what filters match, written on each finding's document and read from there.

One `key=value` a line, lowercase, the text opening and closing with a newline, so
`\\nkey=value\\n` is an exact match by a plain substring test on either database; on
PostgreSQL a GIN index over the lines (migration 0008) answers it. Filtering on the
document needs no join on GPUs or flags: one row per finding.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import Any

from django.contrib.postgres.fields import ArrayField
from django.contrib.postgres.lookups import Overlap
from django.db.models import F, Func, Q, TextField

from decisiontree.conditions import from_stored
from decisiontree.flags import canonical_flag
from decisiontree.setup import State, on_gpu
from decisiontree.vocabulary import capability_of
from decisiontree.vocabulary import load as load_vocabulary
from kb.models import FrameworkRelease, Hardware, LanguageModel
from kb.search.backend import postgres
from kb.search.text import canonical_arch

Facet = tuple[str, str]
FACETS = "search_document__facets"


# --- written: the facets of a finding -----------------------------------------------


def facet_text(facets: Iterable[Facet]) -> str:
    lines = dict.fromkeys(f"{key}={' '.join(value.lower().split())}" for key, value in facets)
    return "\n" + "".join(f"{line}\n" for line in lines if not line.endswith("="))


def finding_facets(finding: Any, gpus: Iterable[Any], flags: Iterable[Any]) -> list[Facet]:
    """The facets of a finding (a Finding, or documents.FindingRow with its fields), given
    its GPUs and flag settings (Hardware and FlagSetting, or rows with their fields: see
    documents.linked_rows)."""
    facets = [("status", finding.status), *gpu_facets(gpus)]
    facets += [("flag", canonical_flag(setting.name)) for setting in flags]
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


def gpu_facets(gpus: Iterable[Any]) -> list[Facet]:
    facets: list[Facet] = []
    for gpu in gpus:
        facets += [("gpu", gpu.name), ("arch", canonical_arch(gpu.arch or ""))]
        facets += [("cc", str(gpu.compute_capability or ""))]
    return facets


def condition_facets(conditions: Iterable[object]) -> list[Facet]:
    """A finding that names its architecture only as a condition is filtered by it too;
    one that needs any but an architecture ("gpu.arch != sm_90") is not filed under it.
    One that needs a compute capability ("gpu.capability = <8.0") is filed under every
    architecture that has it, and its capability (sm_70 and 7.0, sm_72, sm_75)."""
    stated = [c for c in conditions if isinstance(c, dict)]
    facets: list[Facet] = [
        ("arch", canonical_arch(str(c.get("value", ""))))
        for c in stated
        if c.get("key") == "gpu.arch" and not c.get("negate")
    ]
    needs = [from_stored(c) for c in stated if c.get("key") == "gpu.capability"]
    if needs:
        vocabulary = load_vocabulary()
        for arch in sorted(vocabulary.arch_names):
            if set(on_gpu(arch, needs, vocabulary)) == {State.MET}:
                facets += [("arch", arch), ("cc", capability_of(arch) or "")]
    return facets


# --- read: the conditions a filter value makes ----------------------------------------


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
