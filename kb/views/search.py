"""The home page: search known issues, or list them all when there is no query."""

from __future__ import annotations

import time
from dataclasses import dataclass

from django.db.models import Exists, OuterRef
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render

from kb.filtersets import ORDERINGS, RELEVANCE, FindingFilterSet
from kb.models import (
    Finding,
    FindingGpu,
    FrameworkRelease,
    Hardware,
    KnowledgeRevision,
    LanguageModel,
)
from kb.roles import REVIEW_PERMISSION
from kb.search import RANKED_LIMIT, Reading, page_snippets

PAGE_SIZE = 25
# A search ranks at most this many matches; past them the page says "1,000+".
COUNT_CAP = RANKED_LIMIT


@dataclass(frozen=True)
class Result:
    finding: Finding
    snippet: str


@dataclass(frozen=True)
class ResultPage:
    number: int
    findings: list[Finding]
    count: int  # at most COUNT_CAP + 1
    reading: Reading = Reading(())  # words corrected or left out
    every_word: bool = True

    @property
    def capped(self) -> bool:
        return self.count > COUNT_CAP

    @property
    def has_previous(self) -> bool:
        return self.number > 1

    @property
    def has_next(self) -> bool:
        return self.number * PAGE_SIZE < self.count

    @property
    def shown_count(self) -> int:
        return min(self.count, COUNT_CAP)


def finding_list(request: HttpRequest) -> HttpResponse:
    """Known issues ranked by the search service; a plain GET form, so no JavaScript needed.
    Parameters are read by the same FilterSet as the API's findings list."""
    reviewer = request.user.has_perm(REVIEW_PERMISSION)  # as the review queue asks
    filterset = FindingFilterSet(
        request.GET, Finding.objects.all(), request=request, unpublished_allowed=reviewer
    )
    started = time.perf_counter()
    status = 200
    if filterset.is_valid():
        page = results_page(filterset, request.GET.get("page", "1"))
    else:
        page = ResultPage(number=1, findings=[], count=0)
        status = 403 if filterset.refused() else 400
    query = filterset.query
    snippets = page_snippets(page.findings, query, page.reading) if query else {}
    results = [Result(f, snippets.get(f.pk, "")) for f in page.findings]
    elapsed_ms = (time.perf_counter() - started) * 1000
    context = {
        "filterset": filterset,
        "query": query or str(request.GET.get("q", "")).replace("\x00", "")[:500],
        "page": page,
        "results": results,
        "elapsed_ms": elapsed_ms,
        "facets": facet_choices(),
        "active": filterset.active(),
        "reviewer": reviewer,
        "orderings": [(name, o.label) for name, o in ORDERINGS.items() if name != RELEVANCE],
        "ordering": filterset.value("ordering") or "",
    }
    template = "kb/_results.html" if getattr(request, "htmx", False) else "kb/finding_list.html"
    return render(request, template, context, status=status)


def results_page(filterset: FindingFilterSet, raw_number: str) -> ResultPage:
    result = filterset.search()
    number = page_number(raw_number)
    start = (number - 1) * PAGE_SIZE
    shown = result.page(start, PAGE_SIZE).select_related("model", "framework")
    return ResultPage(
        number=number,
        findings=list(shown.prefetch_related("gpus")),
        count=result.count,
        reading=result.reading,
        every_word=result.every_word,
    )


def page_number(raw: str) -> int:
    try:
        number = int(raw)
    except ValueError:
        return 1
    return min(max(number, 1), COUNT_CAP // PAGE_SIZE + 1)


# The lists change with the knowledge base, not per request: kept per revision, and for
# a minute at most (linking a GPU to a finding does not move the revision).
FACET_CHOICES_TTL_S = 60.0
_facet_choices: tuple[str, float, dict[str, list[str]]] = ("", 0.0, {})


def facet_choices() -> dict[str, list[str]]:
    """Values that occur in findings, offered in the filter lists."""
    global _facet_choices
    revision = KnowledgeRevision.current()
    cached_revision, cached_at, choices = _facet_choices
    if revision != cached_revision or time.monotonic() - cached_at > FACET_CHOICES_TTL_S:
        choices = used_facet_values()
        _facet_choices = (revision, time.monotonic(), choices)
    return choices


def used_facet_values() -> dict[str, list[str]]:
    # EXISTS per (few) vocabulary row, not a join over every finding then DISTINCT.
    gpus = Hardware.objects.filter(Exists(FindingGpu.objects.filter(hardware=OuterRef("pk"))))
    used = Exists(Finding.objects.filter(model=OuterRef("pk")))
    releases = Exists(Finding.objects.filter(framework=OuterRef("pk")))
    return {
        "gpu": sorted({gpu.name for gpu in gpus}),
        "arch": sorted({gpu.arch for gpu in gpus if gpu.arch}),
        "model": sorted(LanguageModel.objects.filter(used).values_list("name", flat=True)),
        "framework": sorted(
            set(FrameworkRelease.objects.filter(releases).values_list("name", flat=True))
        ),
    }
