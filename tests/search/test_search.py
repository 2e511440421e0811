"""Error text, flags and architectures find their findings, on PostgreSQL and SQLite alike."""

from __future__ import annotations

from importlib import import_module

import pytest
from django.db import DatabaseError, connection

from kb.filtersets import FindingFilterSet
from kb.models import ErrorSample, Finding, FrameworkRelease
from kb.models.search import FindingSearchDocument
from kb.search import documents as search_documents
from kb.search import rebuild_all, search, snippet_for
from kb.search.text import parse_query

pytestmark = pytest.mark.django_db


def found(query: str, **filters: str) -> list[int]:
    filterset = FindingFilterSet({"q": query, **filters}, unpublished_allowed=True)
    assert filterset.is_valid(), filterset.errors
    return [f.pk for f in filterset.search().findings]


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


def test_it_wants_every_word_of_a_short_query_when_a_finding_has_them(
    dsa_finding: Finding, oom_finding: Finding
) -> None:
    result = search("AssertionError set_kv_buffer")
    assert [f.pk for f in result.findings] == [dsa_finding.pk]
    assert result.every_word and result.count == 1


def test_when_no_finding_has_every_word_it_shows_those_with_some(
    dsa_finding: Finding, oom_finding: Finding
) -> None:
    result = search("set_kv_buffer OutOfMemoryError")
    assert sorted(f.pk for f in result.findings) == sorted([dsa_finding.pk, oom_finding.pk])
    assert not result.every_word


def test_it_leaves_out_words_no_finding_has(dsa_finding: Finding, oom_finding: Finding) -> None:
    result = search("set_kv_buffer qq zx")
    assert [f.pk for f in result.findings] == [dsa_finding.pk]
    assert result.reading.ignored == ("qq", "zx")
    assert result.every_word


@pytest.mark.parametrize(
    ("query", "read_as"),
    [
        ("nsa_kv_cache_stor_fp8", "nsakvcachestorefp8"),
        ("set_kv_bufer", "setkvbuffer"),
        ("AsertionError", "assertionerror"),
    ],
)
def test_it_reads_a_misspelt_word_as_the_closest_word_of_the_index(
    query: str, read_as: str, dsa_finding: Finding, oom_finding: Finding
) -> None:
    result = search(query)
    assert [f.pk for f in result.findings] == [dsa_finding.pk]
    assert result.reading.corrected == ((query.lower(), read_as),)


@pytest.mark.parametrize(
    ("query", "arch", "finds"),
    [
        # No finding names the RTX 5090; the sm_120 one holds for it.
        ("5090", "sm_120", "dsa"),
        ("RTX-5090 assertion", "sm_120", "dsa"),
        ("B200", None, None),  # sm_100: no finding is for it, nothing is guessed
        # The Hopper finding names H100 itself, and an H200 is the same sm_90.
        ("H200 graph capture", "sm_90", "oom"),
    ],
)
def test_a_gpu_name_also_finds_the_findings_for_its_architecture(
    query: str, arch: str | None, finds: str | None, dsa_finding: Finding, oom_finding: Finding
) -> None:
    result = search(query)

    expected = {"dsa": [dsa_finding.pk], "oom": [oom_finding.pk], None: []}[finds]
    assert [f.pk for f in result.findings] == expected
    written = query.split()[0].lower()
    assert result.reading.architectures == (((written, arch),) if arch else ())
    if arch is None:  # left out, not read as the name of a GPU the index has
        assert result.reading.ignored == (written,) and result.reading.corrected == ()


def test_the_architecture_a_gpu_name_found_is_marked_in_the_snippet(
    dsa_finding: Finding, django_capture_on_commit_callbacks
) -> None:
    with django_capture_on_commit_callbacks(execute=True):
        dsa_finding.body = "Only the sm_120 kernels of the decode path refuse it."
        dsa_finding.save()

    result = search("5090")
    snippet = snippet_for(result.findings[0], "5090", result.reading)
    assert "<mark>sm_120</mark>" in snippet


def test_a_misspelt_word_with_nothing_close_finds_nothing(dsa_finding: Finding) -> None:
    result = search("kangaroo")
    assert result.count == 0 and result.reading.ignored == ("kangaroo",)


def test_it_highlights_the_hit_in_the_snippet(dsa_finding: Finding) -> None:
    hit = search("nsa_kv_cache_store_fp8").findings[0]
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


def test_an_identifier_finds_the_longer_names_it_is_part_of_beside_itself(
    dsa_finding: Finding, oom_finding: Finding, django_capture_on_commit_callbacks
) -> None:
    """`GLM-5` is a word of one finding and a run inside `GLM-5-NVFP4` of another: a
    finding that writes the short name must not hide those of the longer one."""
    with django_capture_on_commit_callbacks(execute=True):
        ErrorSample.objects.create(finding=dsa_finding, text="ValueError: bad config of GLM-5")
        ErrorSample.objects.create(
            finding=oom_finding, text="ValueError: GLM-5-NVFP4 weights do not fit"
        )
    assert sorted(found("GLM-5")) == sorted([dsa_finding.pk, oom_finding.pk])


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


def test_a_finding_that_needs_an_older_gpu_is_filed_under_each_architecture_that_old(
    dsa_finding: Finding, oom_finding: Finding, django_capture_on_commit_callbacks
) -> None:
    dsa_finding.conditions = [{"key": "gpu.capability", "value": "<8.0"}]
    with django_capture_on_commit_callbacks(execute=True):
        dsa_finding.save()

    assert found("", arch="sm_75") == [dsa_finding.pk]  # Turing: a T4
    assert found("", arch="7.0") == [dsa_finding.pk]  # Volta, by its capability
    assert dsa_finding.pk not in found("", arch="sm_90")


def test_it_treats_query_syntax_as_plain_words(dsa_finding: Finding) -> None:
    for hostile in ["a & | ! ( ) :* <->", '"unbalanced', "NEAR(a b) OR AND NOT", "'; DROP"]:
        list(search(hostile).findings)  # must not raise


def test_it_splits_identifiers_but_keeps_them_whole() -> None:
    terms = parse_query("--mem-fraction-static sm_120 AssertionError")
    assert [t.parts for t in terms] == [
        ("mem", "fraction", "static"),
        ("sm120",),
        ("assertionerror",),
    ]


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


@pytest.mark.parametrize(
    ("written", "query"),
    [
        ("--dsa-decode-backend trtllm", "--nsa-decode-backend"),  # renamed in SGLang 0.5.10
        ("--nsa-decode-backend trtllm", "--dsa-decode-backend"),
        ("--tensor-parallel-size 8", "-tp"),  # vLLM's short form
        ("--tp-size 8", "--tp"),  # a prefix SGLang's argparse takes
    ],
)
def test_a_flag_is_found_in_any_of_its_spellings(
    dsa_finding: Finding, oom_finding: Finding, written: str, query: str
) -> None:
    ErrorSample.objects.create(finding=dsa_finding, text=f"launched with {written}")
    result = search(query)
    assert [f.pk for f in result.findings] == [dsa_finding.pk]
    snippet = snippet_for(dsa_finding, query, result.reading)
    assert f"<mark>{written.split()[0].lstrip('-')}</mark>" in snippet


def test_an_option_no_table_knows_is_searched_as_written(dsa_finding: Finding) -> None:
    ErrorSample.objects.create(finding=dsa_finding, text="--enable-frobnication was set")
    assert found("--enable-frobnication") == [dsa_finding.pk]


def stored_documents() -> list[tuple[object, ...]]:
    return list(
        FindingSearchDocument.objects.order_by("finding_id").values_list(
            "finding_id", "facets", "vector"
        )
    )


def test_a_rebuild_of_every_document_ranks_the_same(
    dsa_finding: Finding, oom_finding: Finding
) -> None:
    queries = ["memory", "set_kv_buffer OutOfMemoryError", PASTED, "sm120", "cuda graph"]
    ranked = {q: [(f.pk, round(f.rank, 5)) for f in search(q).findings] for q in queries}
    assert all(ranked.values())
    documents = stored_documents()

    assert rebuild_all() == 2

    assert stored_documents() == documents
    assert {q: [(f.pk, round(f.rank, 5)) for f in search(q).findings] for q in queries} == ranked


def test_a_rebuild_that_fails_keeps_the_documents(
    dsa_finding: Finding, oom_finding: Finding, monkeypatch: pytest.MonkeyPatch
) -> None:
    search("memory")  # documents built
    documents = stored_documents()
    dsa_finding.title = "Renamed while the rebuild fails"
    Finding.objects.filter(pk=dsa_finding.pk).update(title=dsa_finding.title)

    def fails(words: set[str]) -> None:
        raise DatabaseError("the disk is full")

    # The documents are written (or copied, on PostgreSQL) when the words' list fails.
    monkeypatch.setattr(search_documents, "insert_words", fails)
    with pytest.raises(DatabaseError):
        rebuild_all()

    assert stored_documents() == documents
    assert found("renamed") == []  # the new title is in no document


@pytest.mark.postgresql
def test_an_upgrade_drops_the_rum_index_that_crashed_the_server() -> None:
    """Migration 0023 on a database an older release gave a RUM index: the index goes.
    A GIN index stands in under its name (the migration drops by name), so the test
    needs no rum extension."""
    drop = import_module("kb.migrations.0023_drop_rum_index").drop_rum_index
    with connection.cursor() as cursor:
        cursor.execute(
            "CREATE INDEX kb_search_vector_rum ON kb_findingsearchdocument USING gin (vector)"
        )
    with connection.schema_editor() as schema_editor:
        drop(None, schema_editor)
    with connection.cursor() as cursor:
        cursor.execute("SELECT 1 FROM pg_indexes WHERE indexname = 'kb_search_vector_rum'")
        assert cursor.fetchone() is None
