"""The line under each search result: the finding's own words with the query's words
marked, rendered as a reader expects, never the search index's own syntax."""

from __future__ import annotations

import re

import pytest
from django.test import Client

from kb.models import ErrorSample, ErrorSignature, Finding, LanguageModel
from kb.search import page_snippets, search, snippet_for

pytestmark = pytest.mark.django_db


def snippets(query: str) -> dict[int, str]:
    result = search(query)
    return page_snippets(list(result.findings), query, result.reading)


def test_it_never_shows_the_index_syntax(dsa_finding: Finding) -> None:
    dsa_finding.conditions = [{"key": "flag.kv-cache-dtype", "value": "bf16"}]
    dsa_finding.save()
    signature = ErrorSignature.objects.create(
        fingerprint="f" * 16,
        template_key="k" * 16,
        exception_type="AssertionError",
        template="kv-cache-dtype store failed at layer <num> of <num>",
    )
    dsa_finding.signatures.add(signature)
    assert search("kv-cache-dtype").count == 1

    snippet = snippets("kv-cache-dtype")[dsa_finding.pk]
    assert "flag.kv" not in snippet and "= bf16" not in snippet
    assert "&lt;num&gt;" not in snippet and "<num>" not in snippet
    assert snippet  # its own words instead: the cause, opening


def test_it_does_not_repeat_the_title(oom_finding: Finding) -> None:
    oom_finding.summary = "Lowering the static memory share leaves room for the graphs."
    oom_finding.save()
    snippet = snippets("runs")[oom_finding.pk]  # a word only the title has
    assert "CUDA graph capture runs out of memory" not in snippet
    assert snippet.startswith("Lowering the static memory share")


def test_it_marks_query_words_but_not_stop_words(oom_finding: Finding) -> None:
    oom_finding.summary = "Capture runs out of memory when the pool takes most of it."
    oom_finding.save()
    snippet = snippets("runs out of memory when")[oom_finding.pk]
    assert "<mark>runs</mark>" in snippet and "<mark>memory</mark>" in snippet
    assert "<mark>of</mark>" not in snippet and "<mark>when</mark>" not in snippet


def test_it_marks_whole_words_only(oom_finding: Finding) -> None:
    oom_finding.summary = "The pool offset of the graph is wrong."
    oom_finding.save()
    assert "<mark>" not in snippets("pool of")[oom_finding.pk].replace("<mark>pool</mark>", "")


def test_a_model_search_shows_a_different_line_per_finding(db: None) -> None:
    glm = LanguageModel.objects.create(name="zai-org/GLM-5-NVFP4", arch="glm_moe_dsa")
    shared = "Seen while bringing up GLM-5 on eight RTX PRO 6000 cards."
    made = [
        Finding.objects.create(
            title=f"Bring-up problem {n}",
            status="published",
            model=glm,
            summary=f"Problem {n}: the server stops at step {n} of the launch.",
            body=shared,
        )
        for n in range(8)
    ]
    shown = snippets("GLM-5")
    assert set(shown) == {finding.pk for finding in made}
    assert len(set(shown.values())) == 8
    assert sum("<mark>GLM-5</mark>" in line for line in shown.values()) == 1
    assert not any("glm_moe_dsa" in line or "nvfp4" in line for line in shown.values())


def test_it_renders_markdown_and_never_shows_backticks(dsa_finding: Finding) -> None:
    dsa_finding.cause = (
        "With **FP8** the pool asserts `nsa_kv_cache_store_fp8` because the decode "
        "backend cannot store it."
    )
    dsa_finding.save()
    snippet = snippets("nsa_kv_cache_store_fp8")[dsa_finding.pk]
    assert "<code><mark>nsa_kv_cache_store_fp8</mark></code>" in snippet
    assert "<strong>FP8</strong>" in snippet
    assert "`" not in snippet and "**" not in snippet


def test_a_window_never_cuts_a_code_span(dsa_finding: Finding) -> None:
    filler = "word " * 60
    dsa_finding.cause = f"{filler}then `--kv-cache-dtype fp8_e4m3 with triton` hits {filler}"
    dsa_finding.save()
    snippet = snippets("triton")[dsa_finding.pk]
    assert "`" not in snippet
    assert "<code>--kv-cache-dtype fp8_e4m3 with <mark>triton</mark></code>" in snippet


def test_a_log_is_shown_as_code_not_read_as_markdown(dsa_finding: Finding) -> None:
    ErrorSample.objects.create(
        finding=dsa_finding, text="  File __init__.py, in *args: flashmla_kv **unsupported**"
    )
    snippet = snippets("flashmla_kv")[dsa_finding.pk]
    assert snippet.startswith("<code>") and "<em>" not in snippet and "<strong>" not in snippet
    assert "__init__.py" in snippet and "<mark>flashmla_kv</mark>" in snippet


def test_it_escapes_html_from_the_finding(dsa_finding: Finding) -> None:
    ErrorSample.objects.create(finding=dsa_finding, text="<script>set_kv_buffer</script>")
    dsa_finding.cause = '<img src=x onerror="alert(1)"> set_kv_buffer fails'
    dsa_finding.save()
    for snippet in (snippet_for(dsa_finding, "set_kv_buffer"), snippets("onerror")[dsa_finding.pk]):
        assert "<script>" not in snippet and "<img" not in snippet
        assert not re.search(r"<[^>]*onerror", snippet)  # as text at most, in no tag


def test_the_search_page_shows_the_snippets(client: Client, starter_kb: None) -> None:
    page = client.get("/", {"q": "GLM-5"}).content.decode()
    lines = re.findall(r'<p class="snippet">(.*?)</p>', page, re.S)
    assert len(lines) >= 2
    assert len(set(lines)) == len(lines)
    assert not any("`" in line or "&lt;num&gt;" in line for line in lines)


def test_a_log_shows_its_messages_without_column_markers_or_logger_prefixes(
    dsa_finding: Finding,
) -> None:
    ErrorSample.objects.create(
        finding=dsa_finding,
        text=(
            "    assert not self.store_in_packed_layout\n"
            "           ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^\n"
            "AssertionError\n"
            "[2031-05-06 07:08:09 TP3] Received sigquit from a child process.\n"
        ),
    )

    snippet = snippets("store_in_packed_layout")[dsa_finding.pk]

    assert "<mark>store_in_packed_layout</mark>" in snippet
    assert "^^^" not in snippet and "2031-05-06" not in snippet and "TP3" not in snippet
    assert "AssertionError Received sigquit" in re.sub(r"\s+", " ", snippet)
