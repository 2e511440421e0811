"""Findings over the API: search, filter, read, create and edit with history, their fixes."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from kb.models import Finding
from tests.api.conftest import assert_error, client_with

pytestmark = pytest.mark.django_db

FINDINGS = "/api/v1/findings/"


def ids(response) -> list[int]:
    assert response.status_code == 200, response.content[:300]
    return [row["id"] for row in response.json()["results"]]


def test_it_searches_findings_by_error_text(
    reader: APIClient, dsa_finding: Finding, oom_finding: Finding
) -> None:
    response = reader.get(FINDINGS, {"q": "nsa_kv_cache_store_fp8"})
    assert ids(response) == [dsa_finding.pk]
    row = response.json()["results"][0]
    assert "<mark>" in row["snippet"] and row["rank"] > 0
    assert ids(reader.get(FINDINGS, {"q": "--mem-fraction-static"})) == [oom_finding.pk]
    assert ids(reader.get(FINDINGS, {"q": "sm120"})) == [dsa_finding.pk]


def test_it_says_how_it_read_the_query(
    reader: APIClient, dsa_finding: Finding, oom_finding: Finding
) -> None:
    body = reader.get(FINDINGS, {"q": "set_kv_bufer zq"}).json()

    assert [row["id"] for row in body["results"]] == [dsa_finding.pk]
    assert "<mark>set_kv_buffer</mark>" in body["results"][0]["snippet"]
    assert body["query"] == {
        "every_word": True,
        "corrected": [{"written": "set_kv_bufer", "searched": "setkvbuffer"}],
        "ignored": ["zq"],
        "architectures": [],
    }
    assert reader.get(FINDINGS).json()["query"] is None
    by_gpu = reader.get(FINDINGS, {"q": "5090"}).json()
    assert [row["id"] for row in by_gpu["results"]] == [dsa_finding.pk]
    assert by_gpu["query"]["architectures"] == [{"written": "5090", "arch": "sm_120"}]


def test_it_filters_by_facets(
    reader: APIClient, dsa_finding: Finding, oom_finding: Finding
) -> None:
    assert ids(reader.get(FINDINGS, {"arch": "sm_90"})) == [oom_finding.pk]
    assert ids(reader.get(FINDINGS, {"flag": "kv-cache-dtype"})) == [dsa_finding.pk]
    assert ids(reader.get(FINDINGS, {"gpu": "H100", "q": "set_kv_buffer"})) == []
    assert set(ids(reader.get(FINDINGS, {"status": "published"}))) == {
        dsa_finding.pk,
        oom_finding.pk,
    }


def test_it_shows_a_finding_with_its_fixes(reader: APIClient, dsa_finding: Finding) -> None:
    body = reader.get(f"{FINDINGS}{dsa_finding.pk}/").json()
    assert body["gpus"][0]["arch"] == "sm_120"
    assert {"name": "kv-cache-dtype", "value": "fp8_e4m3"} in body["flags"]
    assert [fix["outcome"] for fix in body["fixes"]] == ["resolves", "no_effect"]
    fixes = reader.get(f"{FINDINGS}{dsa_finding.pk}/fixes/").json()
    assert fixes[0]["summary"] == "Use a bf16 KV cache"


def test_an_unknown_finding_is_a_json_404(reader: APIClient) -> None:
    assert_error(reader.get(f"{FINDINGS}999999/"), 404, "not_found")


def test_it_creates_and_edits_a_finding_with_history(make_token, user) -> None:
    # Publishing needs the `publish` scope (a `write` token's findings are drafts).
    writer = client_with(make_token("read", "write", "publish"))
    created = writer.post(
        FINDINGS,
        {
            "title": "Port already in use",
            "cause": "A server from an earlier run still holds it",
            "conditions": [{"key": "framework", "value": "sglang"}],
        },
        format="json",
    )
    assert created.status_code == 201, created.content
    url = f"{FINDINGS}{created.json()['id']}/"
    assert writer.patch(url, {"status": "published"}, format="json").status_code == 200
    history = writer.get(f"{url}history/").json()
    assert [row["history_type"] for row in history] == ["changed", "created"]
    assert history[0]["changed_fields"] == ["status"]
    assert {row["history_user"] for row in history} == {user.username}


def test_it_adds_a_fix_to_a_finding(publisher: APIClient, dsa_finding: Finding) -> None:
    response = publisher.post(
        f"{FINDINGS}{dsa_finding.pk}/fixes/",
        {
            "summary": "Use the trtllm decode backend",
            "outcome": "resolves",
            "position": 2,
            "changes": [{"action": "set_flag", "name": "nsa-decode-backend", "value": "trtllm"}],
        },
        format="json",
    )
    assert response.status_code == 201, response.content
    assert dsa_finding.fixes.count() == 3


@pytest.mark.parametrize(
    "body, field",
    [
        ({}, "title"),
        ({"title": "x", "conditions": "gpu.arch=sm_120"}, "conditions"),
        ({"title": "x", "conditions": [{"key": 1}]}, "conditions"),
        ({"title": "x", "kind": "explosion"}, "kind"),
        ({"title": ["not", "a", "string"]}, "title"),
        ({"title": "x", "model": 99999}, "model"),
    ],
)
def test_it_explains_a_bad_finding(writer: APIClient, body: dict, field: str) -> None:
    error = assert_error(writer.post(FINDINGS, body, format="json"), 400, "invalid")
    assert field in error["fields"] and error["message"].startswith(field)


def test_it_refuses_a_fix_with_an_unknown_action(
    publisher: APIClient, dsa_finding: Finding
) -> None:
    response = publisher.post(
        f"{FINDINGS}{dsa_finding.pk}/fixes/",
        {
            "summary": "x",
            "outcome": "resolves",
            "changes": [{"action": "reboot", "name": "x"}],
        },
        format="json",
    )
    assert "changes" in assert_error(response, 400)["fields"]


def test_reference_lists_are_read_only(reader: APIClient, writer: APIClient, blackwell) -> None:
    rows = reader.get("/api/v1/hardware/").json()["results"]
    assert rows[0]["arch"] == "sm_120"
    assert reader.get("/api/v1/models/").status_code == 200
    assert reader.get("/api/v1/flags/", {"framework": "sglang"}).status_code == 200
    assert reader.get("/api/v1/frameworks/").status_code == 200
    assert_error(writer.post("/api/v1/hardware/", {"name": "x"}, format="json"), 405)


def test_a_flag_says_the_default_of_releases_before_the_newest(
    reader: APIClient, vocabulary: None
) -> None:
    by_name, url = {}, "/api/v1/flags/?framework=vllm"
    while url:
        page = reader.get(url).json()
        by_name.update({row["name"]: row for row in page["results"]})
        url = page["next"]

    share = by_name["gpu-memory-utilization"]
    assert (share["default"], share["earlier_default"]) == ("0.92", ["0.9", None])
    assert by_name["max-num-seqs"]["earlier_default"] == []


def test_an_unknown_api_path_is_a_json_404(reader: APIClient) -> None:
    assert_error(reader.get("/api/v1/no-such-thing/"), 404, "not_found")


def test_a_path_missing_its_final_slash_is_named_with_it(reader: APIClient) -> None:
    """A bot that POSTs to /api/v1/diagnose is told the path it meant."""
    response = reader.post("/api/v1/diagnose", {"traceback": "x"}, format="json")
    assert_error(response, 404, "not_found")
    assert response.json()["error"]["message"] == (
        "No API endpoint at /api/v1/diagnose. Did you mean /api/v1/diagnose/? "
        "Every endpoint ends in a slash."
    )
    unknown = reader.get("/api/v1/no-such-thing").json()["error"]["message"]
    assert unknown == "No API endpoint at /api/v1/no-such-thing."
