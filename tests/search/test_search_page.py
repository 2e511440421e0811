"""The home page's search, through Django's test client: drafts only for reviewers, the
same filters as the API (one FilterSet), bad values refused with their names."""

from __future__ import annotations

import html
import re
from typing import Any

import pytest
from django.contrib.auth.models import User
from django.test import Client
from rest_framework.test import APIClient

from kb.models import Finding

pytestmark = pytest.mark.django_db


def text_of(response: Any) -> str:
    return response.content.decode()


def titles_listed(page: str) -> list[str]:
    """The titles as a reader sees them: Markdown rendered, tags off."""
    links = re.findall(r'class="title" href="/findings/\d+/">(.*?)</a>', page, re.S)
    return [html.unescape(re.sub(r"<[^>]+>", "", link)) for link in links]


def test_an_anonymous_reader_sees_no_draft_and_no_draft_filter(
    client: Client, starter_kb: None, draft: Finding
) -> None:
    page = text_of(client.get("/"))
    assert draft.title not in page
    assert 'name="status"' not in page and ">Draft<" not in page

    for status in ("draft", "any", "retired"):
        response = client.get("/", {"status": status, "q": "nvcc"})
        assert response.status_code == 403
        assert draft.title not in text_of(response)
        assert "Only reviewers see findings that are not published." in text_of(response)


def test_a_signed_in_reader_without_review_rights_sees_no_drafts(
    client: Client, draft: Finding
) -> None:
    client.force_login(User.objects.create_user("reader", password="pw-reader-1"))
    assert client.get("/", {"status": "draft"}).status_code == 403


def test_a_reviewer_filters_by_status(client: Client, draft: Finding, reviewer: User) -> None:
    client.force_login(reviewer)
    page = text_of(client.get("/"))
    assert '<option value="draft">Draft</option>' in page
    listed = text_of(client.get("/", {"status": "draft"}))
    assert titles_listed(listed) == [draft.title]


def test_bad_filter_values_are_refused_by_name(client: Client, starter_kb: None) -> None:
    response = client.get("/", {"updated_since": "soon", "arch": "x" * 900})
    assert response.status_code == 400
    page = text_of(response)
    assert "Updated since: Enter a valid date/time." in page
    assert "Architecture: Ensure this value has at most 200 characters (it has 900)." in page
    assert titles_listed(page) == []


@pytest.mark.parametrize(
    "params",
    [
        {"kind": "oom"},
        {"arch": "sm_120"},
        {"q": "nsa_kv_cache_store_fp8"},
        {"q": "decode", "gpu": "RTX PRO 6000"},
        {"flag": "--kv_cache_dtype"},
        {"model": "GLM-5", "ordering": "title"},
    ],
)
def test_the_page_and_the_api_list_the_same_findings(
    client: Client, reader: APIClient, starter_kb: None, params: dict[str, str]
) -> None:
    from_page = titles_listed(text_of(client.get("/", params)))
    body = reader.get("/api/v1/findings/", {**params, "limit": 100}).json()
    from_api = [row["title"].replace("`", "") for row in body["results"]]
    assert from_page, params  # each case finds something in the starter knowledge base
    assert from_api == from_page


def test_a_gpu_name_finds_its_architectures_findings_and_says_so(
    client: Client, starter_kb: None
) -> None:
    """No starter finding names the RTX 5090; those for its sm_120 hold for it."""
    page = text_of(client.get("/", {"q": "5090"}))

    assert "is an <strong>sm_120</strong> GPU: findings for sm_120 are searched too." in page
    titles = titles_listed(page)
    assert any("RTX PRO 6000" in title for title in titles)
    assert titles == titles_listed(text_of(client.get("/", {"q": "sm_120"})))


def test_titles_show_markdown_rendered_never_backticks(client: Client, starter_kb: None) -> None:
    page = text_of(client.get("/", {"q": "nsa_kv_cache_store_fp8"}))
    titles = re.findall(r'class="title" href="/findings/\d+/">(.*?)</a>', page, re.S)
    assert any("<code>not self.nsa_kv_cache_store_fp8</code>" in title for title in titles)
    assert not any("`" in title for title in titles)


def test_it_orders_the_page_as_asked(client: Client, starter_kb: None) -> None:
    listed = titles_listed(text_of(client.get("/", {"ordering": "title"})))
    assert listed == sorted(listed)
    assert len(listed) >= 8
