"""Filters of the lists, one django-filter FilterSet per model, as NetBox has them.

The web page of findings (kb.views.search) and the API's findings list
(api.filters) read their parameters through the same FilterSet, so both agree on
what a filter value means: the default status, the spellings of a flag, an
architecture or a GPU, NUL bytes and over-long values (refused with the name of
the parameter), and who may see drafts.

The facet filters match the facets written on each finding's search document
(kb.search.facets): exact values read from an index, never a join.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from typing import Any

import django_filters
from django import forms
from django.db.models import Q, QuerySet

from kb.models import Finding, ValidationRun
from kb.search import SearchResult, search
from kb.search.facets import (
    arch_condition,
    flag_condition,
    framework_condition,
    gpu_condition,
    has_facet,
    model_condition,
)
from kb.search.text import MAX_QUERY_CHARS, parse_query
from kb.services import occurrences

FACET_MAX_CHARS = 200
ANY_STATUS = "any"
REVIEWERS_ONLY = "Only reviewers see findings that are not published."


@dataclass(frozen=True)
class Ordering:
    """One way to order a list. `fields` go to `order_by` (the last one unique, so a
    cursor can resume after any row); empty fields mean the search's rank."""

    label: str
    fields: tuple[str, ...]
    # Adds what `fields` order by, when that is not a column of the finding.
    annotate: Callable[[QuerySet[Finding]], QuerySet[Finding]] | None = None

    @property
    def by_rank(self) -> bool:
        return not self.fields


RELEVANCE = "relevance"
NEWEST = "updated"
# Every order a findings list offers, web and API alike (the API's schema lists them).
# Occurrence figures (last seen, most helped) come in as entries here whose `annotate`
# adds their column (never NULL: a cursor resumes after a row's values).
ORDERINGS: dict[str, Ordering] = {
    RELEVANCE: Ordering("Best match", ()),
    NEWEST: Ordering("Recently updated", ("-updated_at", "-id")),
    "created": Ordering("Newest", ("-created_at", "-id")),
    "title": Ordering("Title", ("title", "id")),
    "last_seen": Ordering("Last seen", ("-last_seen", "-id"), occurrences.with_figures),
    "helped": Ordering("Most helped", ("-helped_count", "-id"), occurrences.with_figures),
}


class FacetFilter(django_filters.CharFilter):
    """A value matched against one kind of facet, in any of its spellings."""

    def __init__(self, condition: Callable[[str], Q], **kwargs: Any) -> None:
        super().__init__(max_length=FACET_MAX_CHARS, **kwargs)
        self.condition = condition

    def filter(self, qs: QuerySet[Finding], value: str) -> QuerySet[Finding]:
        value = value.strip()
        return qs.filter(self.condition(value)) if value else qs


class AnyOrChoices(django_filters.fields.MultipleChoiceField):
    """Several choices; an empty value (the page's "Any" option) chooses none."""

    def clean(self, value: Any) -> Any:
        return super().clean([v for v in value or () if v])


class KindFilter(django_filters.MultipleChoiceFilter):
    field_class = AnyOrChoices


class StatusFilter(django_filters.ChoiceFilter):
    """Published unless another status is asked for (see FindingFilterSet.clean_status)."""

    def filter(self, qs: QuerySet[Finding], value: str) -> QuerySet[Finding]:
        status = value or Finding.Status.PUBLISHED
        if status == ANY_STATUS:
            return qs
        parent: FindingFilterSet = self.parent
        if parent.ranked:
            # Ranked rows need only their document: a test on the finding's own column
            # makes PostgreSQL hash-join every finding before it ranks.
            return qs.filter(has_facet("status", status))
        return qs.filter(status=status)


class QueryFilter(django_filters.CharFilter):
    """The full-text query: checked here, read by the search (see FindingFilterSet.search)."""

    def filter(self, qs: QuerySet[Finding], value: str) -> QuerySet[Finding]:
        return qs


class OrderingFilter(django_filters.ChoiceFilter):
    """The order of the list: applied by the search, after ranking."""

    def filter(self, qs: QuerySet[Finding], value: str) -> QuerySet[Finding]:
        return qs


class FindingFilterForm(forms.Form):
    """Set by the FilterSet: whether this user may list findings that are not published."""

    unpublished_allowed = False
    unpublished_refusal = REVIEWERS_ONLY

    def clean_status(self) -> str:
        status: str = self.cleaned_data.get("status") or ""
        if status not in ("", Finding.Status.PUBLISHED) and not self.unpublished_allowed:
            raise forms.ValidationError(self.unpublished_refusal, code="forbidden")
        return status


def ordering_choices() -> list[tuple[str, str]]:
    return [(name, ordering.label) for name, ordering in ORDERINGS.items()]


class FindingFilterSet(django_filters.FilterSet):
    q = QueryFilter(
        max_length=MAX_QUERY_CHARS,
        label="Error text, flag or model",
        help_text="Full text: error strings, identifiers, flags, GPU architecture (sm120).",
    )
    gpu = FacetFilter(gpu_condition, label="GPU", help_text="A GPU name or words of one.")
    arch = FacetFilter(
        arch_condition,
        label="Architecture",
        help_text="sm_120, SM120, or a compute capability (12.0).",
    )
    model = FacetFilter(
        model_condition, label="Model", help_text="A model's name, part of it, arch or family."
    )
    framework = FacetFilter(
        framework_condition,
        label="Framework",
        help_text="sglang, vllm, or a release prefix: `sglang 0.5`.",
    )
    flag = FacetFilter(
        flag_condition, label="Flag", help_text="A launch flag in any spelling: --tp, tp_size."
    )
    kind = KindFilter(
        choices=Finding.Kind.choices, label="Kind", distinct=False, help_text="One or more."
    )
    status = StatusFilter(
        choices=[*Finding.Status.choices, (ANY_STATUS, "any status")],
        label="Status",
        help_text="Published when not given; others need review rights.",
    )
    updated_since = django_filters.DateTimeFilter(
        field_name="updated_at",
        lookup_expr="gte",
        label="Updated since",
        help_text="A date or an ISO 8601 time.",
    )
    ordering = OrderingFilter(
        choices=ordering_choices(),
        label="Order",
        help_text="Best match first with `q`, else recently updated first.",
    )

    class Meta:
        model = Finding
        fields: list[str] = []
        form = FindingFilterForm

    def __init__(
        self,
        data: Any = None,
        queryset: QuerySet[Finding] | None = None,
        *,
        request: Any = None,
        prefix: str | None = None,
        unpublished_allowed: bool = False,
        unpublished_refusal: str = REVIEWERS_ONLY,
    ) -> None:
        super().__init__(data, queryset, request=request, prefix=prefix)
        self.unpublished_allowed = unpublished_allowed
        self.form.unpublished_allowed = unpublished_allowed
        self.form.unpublished_refusal = unpublished_refusal

    def filter_queryset(self, queryset: QuerySet[Finding]) -> QuerySet[Finding]:
        queryset = super().filter_queryset(queryset)
        if "status" not in self.form.cleaned_data:
            # Refused or malformed: still never more than the published findings.
            queryset = self.filters["status"].filter(queryset, "")
        return queryset

    # --- what the search reads -------------------------------------------------------

    def value(self, name: str) -> Any:
        return self.form.cleaned_data.get(name) if self.is_bound and self.form.is_valid() else None

    @property
    def query(self) -> str:
        return str(self.value("q") or "")

    @property
    def ranked(self) -> bool:
        """Whether the list is ranked by the query (a query with words in it)."""
        return bool(parse_query(self.query))

    @property
    def chosen_ordering(self) -> Ordering:
        name = self.value("ordering") or (RELEVANCE if self.ranked else NEWEST)
        if name == RELEVANCE and not self.ranked:
            name = NEWEST  # nothing to rank by
        return ORDERINGS[name]

    def search(self) -> SearchResult:
        """The findings these parameters ask for, searched, filtered and ordered."""
        ordering = self.chosen_ordering
        queryset = self.qs if ordering.annotate is None else ordering.annotate(self.qs)
        return search(self.query, queryset=queryset, order_by=ordering.fields)

    def active(self) -> dict[str, str]:
        """The filters in force, as the user gave them (for "filtered by ...")."""
        names = ("gpu", "arch", "model", "framework", "flag", "kind", "status", "updated_since")
        shown: dict[str, str] = {}
        for name in names:
            value = self.value(name)
            if isinstance(value, list | tuple):
                value = ", ".join(map(str, value))
            if value:
                shown[name] = str(value)
        return shown

    def problems(self) -> list[tuple[str, str, str]]:
        """(parameter, its label, what is wrong) for each value that cannot be used."""
        return [
            (name, str(self.filters[name].label) if name in self.filters else name, message)
            for name, messages in self.form.errors.items()
            for message in messages
        ]

    def refused(self) -> bool:
        """Whether the only problem is asking for what this user may not see."""
        codes = [error.code for errors in self.form.errors.as_data().values() for error in errors]
        return bool(codes) and all(code == "forbidden" for code in codes)

    def unknown_parameters(self, also_allowed: Iterable[str] = ()) -> list[str]:
        known = {*self.filters, *also_allowed}
        return sorted(name for name in (self.data or {}) if name not in known)


# --- validation runs ------------------------------------------------------------------

LIVE_RUNS = "live"  # a status filter's value for "queued or running"


class IdFilter(django_filters.NumberFilter):
    """A row's id: a whole number a BigAutoField can hold. Another number is refused with
    the parameter's name; past 64 bits SQLite could not even bind it (a server error)."""

    field_class = forms.IntegerField

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, min_value=1, max_value=2**63 - 1, **kwargs)


class ValidationRunFilterSet(django_filters.FilterSet):
    """The runs list's filters, for the Validation page and the API alike."""

    status = django_filters.ChoiceFilter(
        choices=[(LIVE_RUNS, "Queued or running"), *ValidationRun.Status.choices],
        method="filter_status",
        help_text="A run status, or `live` for queued or running",
    )
    fix_id = IdFilter(field_name="fix_id", help_text="Runs of this fix")
    finding_id = IdFilter(field_name="fix__finding_id", help_text="Runs of any fix of this finding")
    host = django_filters.CharFilter(field_name="host__name", help_text="The host's name")

    class Meta:
        model = ValidationRun
        fields: list[str] = []

    def filter_status(
        self, queryset: QuerySet[ValidationRun], name: str, value: str
    ) -> QuerySet[ValidationRun]:
        if value == LIVE_RUNS:
            return queryset.filter(status__in=ValidationRun.LIVE)
        return queryset.filter(status=value)
