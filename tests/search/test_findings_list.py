"""`GET /api/v1/findings/` as a bot developer meets it: published findings unless asked,
every facet of the web page as a filter, a 400 naming what it cannot use, cursor pages,
and the web page of each finding."""

from __future__ import annotations

from datetime import timedelta
from typing import Any

import pytest
from django.conf import settings
from django.utils import timezone
from rest_framework.test import APIClient

from kb.models import ErrorSample, Finding
from tests.api.conftest import assert_error

pytestmark = pytest.mark.django_db

FINDINGS = "/api/v1/findings/"


def ids(response: Any) -> list[int]:
    assert response.status_code == 200, response.content[:500]
    return [row["id"] for row in response.json()["results"]]


@pytest.fixture
def drafted(dsa_finding: Finding) -> Finding:
    """An unreviewed draft that shares the published finding's error text."""
    draft = Finding.objects.create(
        title="Unreviewed: the FP8 store assertion again", status=Finding.Status.DRAFT
    )
    ErrorSample.objects.create(finding=draft, text="AssertionError in set_kv_buffer")
    return draft


def test_it_lists_published_findings_only_unless_status_asks(
    reader: APIClient, writer: APIClient, dsa_finding: Finding, drafted: Finding
) -> None:
    assert ids(reader.get(FINDINGS, {"q": "set_kv_buffer"})) == [dsa_finding.pk]
    assert ids(reader.get(FINDINGS)) == [dsa_finding.pk]
    assert ids(writer.get(FINDINGS, {"q": "set_kv_buffer", "status": "draft"})) == [drafted.pk]
    assert set(ids(writer.get(FINDINGS, {"status": "any"}))) == {dsa_finding.pk, drafted.pk}


@pytest.mark.parametrize("status", ["draft", "retired", "any"])
def test_other_statuses_need_the_write_scope(
    reader: APIClient, drafted: Finding, status: str
) -> None:
    error = assert_error(reader.get(FINDINGS, {"status": status}), 403, "permission_denied")
    assert "write" in error["message"]


def test_a_draft_is_not_read_by_id_without_the_write_scope(
    reader: APIClient, writer: APIClient, drafted: Finding
) -> None:
    assert_error(reader.get(f"{FINDINGS}{drafted.pk}/"), 404, "not_found")
    assert writer.get(f"{FINDINGS}{drafted.pk}/").json()["title"] == drafted.title


@pytest.mark.parametrize(
    ("params", "named"),
    [
        ({"search": "x"}, "search"),
        ({"q": "x", "offset": "5", "page": "2"}, "offset"),
        ({"status": "bogus"}, "status"),
        ({"kind": "explosion"}, "kind"),
        ({"ordering": "rank"}, "ordering"),
        ({"updated_since": "last tuesday"}, "updated_since"),
        ({"limit": "99999999999999999999"}, "limit"),
        ({"limit": "0"}, "limit"),
        ({"cursor": "not-a-cursor"}, "cursor"),
        ({"gpu": "x" * 201}, "gpu"),
        ({"q": "x" * 501}, "q"),
    ],
)
def test_it_answers_400_naming_what_it_cannot_use(
    reader: APIClient, dsa_finding: Finding, params: dict[str, str], named: str
) -> None:
    error = assert_error(reader.get(FINDINGS, params), 400, "invalid")
    assert named in error["fields"]
    assert error["message"].startswith(f"{min(error['fields'])}: ")


@pytest.mark.parametrize("name", ["q", "gpu", "arch", "model", "framework", "flag"])
def test_a_nul_byte_is_a_400_not_a_server_error(
    reader: APIClient, dsa_finding: Finding, name: str
) -> None:
    error = assert_error(reader.get(FINDINGS, {name: "sm_120\x00"}), 400, "invalid")
    assert list(error["fields"]) == [name]


def test_it_names_every_unknown_parameter(reader: APIClient) -> None:
    error = assert_error(reader.get(FINDINGS, {"search": "x", "sort": "title"}), 400)
    assert set(error["fields"]) == {"search", "sort"}
    assert "q" in error["fields"]["search"][0]  # says what the list does take


def test_it_filters_by_kind_and_by_when_it_was_updated(
    reader: APIClient, dsa_finding: Finding, oom_finding: Finding
) -> None:
    assert ids(reader.get(FINDINGS, {"kind": "oom"})) == [oom_finding.pk]
    assert set(ids(reader.get(FINDINGS, {"kind": ["oom", "crash"]}))) == {
        dsa_finding.pk,
        oom_finding.pk,
    }
    week_ago = timezone.now() - timedelta(days=7)
    Finding.objects.filter(pk=dsa_finding.pk).update(updated_at=week_ago)
    yesterday = (timezone.now() - timedelta(days=1)).date().isoformat()
    assert ids(reader.get(FINDINGS, {"updated_since": yesterday})) == [oom_finding.pk]
    since = (week_ago - timedelta(hours=1)).isoformat()
    assert len(ids(reader.get(FINDINGS, {"updated_since": since}))) == 2


def test_it_orders_as_asked(reader: APIClient, dsa_finding: Finding, oom_finding: Finding) -> None:
    by_title = ids(reader.get(FINDINGS, {"ordering": "title"}))
    assert by_title == [oom_finding.pk, dsa_finding.pk]  # "CUDA graph…" < "FP8 KV…"
    Finding.objects.filter(pk=oom_finding.pk).update(updated_at=timezone.now() - timedelta(days=3))
    assert ids(reader.get(FINDINGS)) == [dsa_finding.pk, oom_finding.pk]  # newest first
    matched = ids(reader.get(FINDINGS, {"q": "cuda OR memory", "ordering": "title"}))
    assert matched == sorted(matched, key=lambda pk: Finding.objects.get(pk=pk).title)


def walk(client: APIClient, params: dict[str, Any]) -> tuple[list[int], list[int]]:
    """Every page forward from the first, then back from the last: the ids in order."""
    forward: list[int] = []
    body = client.get(FINDINGS, params).json()
    assert body["previous"] is None
    pages = [body]
    while body["next"]:
        body = client.get(body["next"]).json()
        pages.append(body)
    for page in pages:
        forward += [row["id"] for row in page["results"]]
    backward: list[int] = [row["id"] for row in body["results"]]
    while body["previous"]:
        body = client.get(body["previous"]).json()
        backward = [row["id"] for row in body["results"]] + backward
    return forward, backward


@pytest.mark.parametrize(
    "params",
    [{}, {"ordering": "title"}, {"q": "crash"}, {"q": "crash", "ordering": "created"}],
)
def test_cursor_pages_visit_every_finding_once_both_ways(
    reader: APIClient, params: dict[str, str]
) -> None:
    made = [
        Finding.objects.create(title=f"Decode crash number {n}", status="published")
        for n in range(7)
    ]
    # Equal times: the cursor must still tell the rows apart (by id).
    Finding.objects.filter(pk__in=[f.pk for f in made[:4]]).update(updated_at=timezone.now())
    forward, backward = walk(reader, {**params, "limit": 3})
    assert sorted(forward) == sorted(f.pk for f in made)
    assert backward == forward
    assert reader.get(FINDINGS, {**params, "limit": 3}).json()["count"] == 7


def test_a_cursor_keeps_its_place_when_findings_are_added(reader: APIClient) -> None:
    first = [Finding.objects.create(title=f"Old {n}", status="published") for n in range(4)]
    body = reader.get(FINDINGS, {"limit": 2}).json()
    Finding.objects.create(title="Brand new", status="published")  # newest: on page one
    rest = ids(reader.get(body["next"]))
    shown = [row["id"] for row in body["results"]] + rest
    assert sorted(shown) == sorted(f.pk for f in first)


def test_every_item_links_to_its_web_page(
    reader: APIClient, client: Any, dsa_finding: Finding, oom_finding: Finding
) -> None:
    site = settings.SITE_URL  # the public address, the same in every channel
    rows = reader.get(FINDINGS).json()["results"]
    assert {row["html_url"] for row in rows} == {
        f"{site}/findings/{dsa_finding.pk}/",
        f"{site}/findings/{oom_finding.pk}/",
    }
    page = client.get(rows[0]["html_url"].removeprefix(site))
    assert page.status_code == 200
    assert rows[0]["title"] in page.content.decode()
    detail = reader.get(f"{FINDINGS}{dsa_finding.pk}/").json()
    assert detail["html_url"] == f"{site}/findings/{dsa_finding.pk}/"


def test_a_query_of_words_no_finding_has_is_an_empty_page(
    reader: APIClient, dsa_finding: Finding
) -> None:
    body = reader.get(FINDINGS, {"q": "zq"}).json()
    assert body["results"] == [] and body["count"] == 0 and body["next"] is None
    assert body["query"]["ignored"] == ["zq"]
