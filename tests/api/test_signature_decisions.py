"""A reviewer's link or split of an error fingerprint sticks for future reports."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from kb.models import Finding, SignatureDecision
from tests.api.conftest import DSA_ASSERT, assert_error

pytestmark = pytest.mark.django_db

DECISIONS = "/api/v1/signature-decisions/"


def diagnosis(client: APIClient) -> dict:
    response = client.post("/api/v1/diagnose/", {"traceback": DSA_ASSERT}, format="json")
    assert response.status_code == 200
    return response.json()


def test_a_split_stops_the_fingerprint_matching_that_finding(
    writer: APIClient, dsa_finding: Finding
) -> None:
    before = diagnosis(writer)
    assert before["match"] == "known"
    fingerprint = before["signature"]["fingerprint"]

    response = writer.post(
        DECISIONS,
        {"fingerprint": fingerprint, "finding_id": dsa_finding.pk, "decision": "split"},
        format="json",
    )

    assert response.status_code == 201, response.content
    after = diagnosis(writer)
    assert dsa_finding.pk not in {fix["finding"]["id"] for fix in after["fixes"]}
    assert SignatureDecision.objects.get().decision == "split"


def test_a_link_makes_an_unmatched_report_known(writer: APIClient, dsa_finding: Finding) -> None:
    other = (
        'Traceback (most recent call last):\n  File "/srv/app/loader.py", line 12, in load\n'
        "    raise KeyError(name)\nKeyError: 'model.layers.61.mlp.experts.w13_weight_scale_2'\n"
    )
    first = writer.post("/api/v1/diagnose/", {"traceback": other}, format="json").json()
    assert first["match"] == "none"

    writer.post(
        DECISIONS,
        {
            "fingerprint": first["signature"]["fingerprint"],
            "finding_id": dsa_finding.pk,
            "decision": "link",
        },
        format="json",
    )
    again = writer.post("/api/v1/diagnose/", {"traceback": other}, format="json").json()
    assert again["match"] == "known"
    assert again["fixes"][0]["finding"]["id"] == dsa_finding.pk


def test_it_needs_the_write_scope(reader: APIClient, dsa_finding: Finding) -> None:
    response = reader.post(
        DECISIONS, {"fingerprint": "ab" * 20, "finding_id": dsa_finding.pk, "decision": "link"}
    )
    assert_error(response, 403)


@pytest.mark.parametrize(
    "body",
    [
        {"fingerprint": "not hex!", "finding_id": 1, "decision": "link"},
        {"fingerprint": "ab" * 20, "finding_id": 999999, "decision": "link"},
        {"fingerprint": "ab" * 20, "finding_id": 1, "decision": "merge"},
    ],
)
def test_it_explains_a_bad_decision(writer: APIClient, body: dict) -> None:
    assert_error(writer.post(DECISIONS, body, format="json"), 400)
