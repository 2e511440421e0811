"""Error text, flags and architectures find their findings, on PostgreSQL and SQLite alike."""

from __future__ import annotations

import pytest
from django.db import connection

from kb.models import ErrorSample, Finding, FrameworkRelease
from kb.services.search import FindingFilters, parse_query, search_findings, snippet_for

pytestmark = pytest.mark.django_db


def found(query: str, **filters: str) -> list[int]:
    return [f.pk for f in search_findings(query, filters=FindingFilters(**filters))]


@pytest.mark.parametrize(
    "query",
    [
        "nsa_kv_cache_store_fp8",
        "assert not self.nsa_kv_cache_store_fp8",
        "set_kv_buffer",
        "memory_pool.py",
        "sm120",
        "SM_120",
        "kv_cache_store",
    ],
)
def test_it_finds_the_dsa_finding_by_error_text(
    query: str, dsa_finding: Finding, oom_finding: Finding
) -> None:
    assert found(query) == [dsa_finding.pk]


@pytest.mark.parametrize(
    "query",
    ["--mem-fraction-static", "mem-fraction-static", "mem_fraction_static", "OutOfMemoryError"],
)
def test_it_finds_the_oom_finding_by_its_flag(
    query: str, dsa_finding: Finding, oom_finding: Finding
) -> None:
    assert found(query) == [oom_finding.pk]


def test_it_requires_every_word_of_a_short_query(
    dsa_finding: Finding, oom_finding: Finding
) -> None:
    assert found("set_kv_buffer OutOfMemoryError") == []
    assert found("AssertionError set_kv_buffer") == [dsa_finding.pk]


def test_it_highlights_the_hit_in_the_snippet(dsa_finding: Finding) -> None:
    hit = search_findings("nsa_kv_cache_store_fp8")[0]
    snippet = snippet_for(hit, "nsa_kv_cache_store_fp8")
    assert "<mark>nsa_kv_cache_store_fp8</mark>" in snippet
    assert hit.rank > 0


def test_it_escapes_html_in_snippets(dsa_finding: Finding) -> None:
    ErrorSample.objects.create(finding=dsa_finding, text="<script>set_kv_buffer</script>")
    snippet = snippet_for(dsa_finding, "set_kv_buffer")
    assert "<script>" not in snippet


def test_it_sees_a_finding_edited_after_indexing(
    dsa_finding: Finding, django_capture_on_commit_callbacks
) -> None:
    assert found("flashmla_kv") == []
    with django_capture_on_commit_callbacks(execute=True):
        ErrorSample.objects.create(finding=dsa_finding, text="ValueError: flashmla_kv unsupported")
    assert found("flashmla_kv") == [dsa_finding.pk]


def test_it_forgets_a_deleted_finding(
    dsa_finding: Finding, django_capture_on_commit_callbacks
) -> None:
    assert found("set_kv_buffer") == [dsa_finding.pk]
    with django_capture_on_commit_callbacks(execute=True):
        dsa_finding.delete()
    assert found("set_kv_buffer") == []


def test_it_combines_the_query_with_filters(dsa_finding: Finding, oom_finding: Finding) -> None:
    assert found("", arch="sm120") == [dsa_finding.pk]
    assert found("", arch="sm_90") == [oom_finding.pk]
    assert found("", flag="--mem-fraction-static") == [oom_finding.pk]
    assert found("", model="glm_moe_dsa") == [dsa_finding.pk]
    assert found("", gpu="RTX PRO 6000") == [dsa_finding.pk]
    assert found("set_kv_buffer", gpu="H100") == []


def test_it_treats_query_syntax_as_plain_words(dsa_finding: Finding) -> None:
    for hostile in ["a & | ! ( ) :* <->", '"unbalanced', "NEAR(a b) OR AND NOT", "'; DROP"]:
        list(search_findings(hostile))  # must not raise


def test_it_splits_identifiers_but_keeps_them_whole() -> None:
    terms = parse_query("--mem-fraction-static sm_120 AssertionError")
    assert [t.parts for t in terms] == [
        ("mem", "fraction", "static"),
        ("sm120",),
        ("assertionerror",),
    ]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="trigram typo search: PostgreSQL")
def test_it_forgives_a_typo_on_postgresql(dsa_finding: Finding) -> None:
    assert found("nsa_kv_cache_stor_fp8") == [dsa_finding.pk]


def test_draft_and_published_are_filterable(dsa_finding: Finding) -> None:
    assert found("set_kv_buffer", status="draft") == []
    assert found("set_kv_buffer", status="published") == [dsa_finding.pk]


def test_it_filters_on_facets_however_they_are_spelled(
    dsa_finding: Finding, oom_finding: Finding
) -> None:
    assert found("", flag="--mem_fraction_static=0.8") == [oom_finding.pk]
    assert found("", arch="12.0") == [dsa_finding.pk]  # the compute capability
    assert found("", gpu="blackwell 6000") == [dsa_finding.pk]  # words in any order
    assert found("", model="GLM-5") == [dsa_finding.pk]
    assert found("", model="GLM") == [dsa_finding.pk]  # the family
    assert found("", flag="--") == []


def test_it_wants_every_gpu_word_in_the_name_of_one_gpu(
    dsa_finding: Finding, oom_finding: Finding
) -> None:
    assert found("", gpu="blackwell h100") == []
    assert found("", gpu="h100 hbm3") == [oom_finding.pk]


def test_it_filters_by_a_framework_attached_after_indexing(
    dsa_finding: Finding, oom_finding: Finding
) -> None:
    assert found("", framework="sglang") == []
    oom_finding.framework = FrameworkRelease.objects.create(name="sglang", version="0.5.1")
    oom_finding.save()
    assert found("", framework="SGLang") == [oom_finding.pk]
    assert found("", framework="sglang 0.5") == [oom_finding.pk]
    assert found("", framework="sglang 0.4") == []
    assert found("out of memory", framework="sglang") == [oom_finding.pk]


@pytest.mark.skipif(connection.vendor != "postgresql", reason="trigram typo search: PostgreSQL")
def test_it_forgives_a_typo_within_the_filters(dsa_finding: Finding, oom_finding: Finding) -> None:
    assert found("set_kv_bufer", arch="sm_120") == [dsa_finding.pk]
    assert found("set_kv_bufer", arch="sm_90") == []


PASTED = (
    "[TP3] AssertionError raised in memory_pool.py set_kv_buffer: assert not "
    "self.nsa_kv_cache_store_fp8 while the decode batch ran on rank 3"
)


def test_it_ranks_a_pasted_log_line_by_its_words(
    dsa_finding: Finding, oom_finding: Finding
) -> None:
    assert found(PASTED)[0] == dsa_finding.pk


def test_it_treats_filter_values_as_plain_text(dsa_finding: Finding) -> None:
    for hostile in ["a(b", "[x\\", "(?=", "*", "%_", "\\d+", "é€"]:
        assert found("", gpu=hostile, model=hostile, framework=hostile, flag=hostile) == []
    assert found("", gpu="(pro") == []
    assert found("", model="glm-5-nvfp4") == [dsa_finding.pk]
