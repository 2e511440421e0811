"""POST /api/v1/feedback/: one vote per token, fix and paste; undo; what worked instead."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from kb.models import Finding, Fix, FixFeedback
from kb.services.diagnosis import diagnose
from kb.services.feedback import votes_per_fix
from tests.api.conftest import DSA_ASSERT, TokenFactory, assert_error, client_with

pytestmark = pytest.mark.django_db

FEEDBACK = "/api/v1/feedback/"


def vote(client: APIClient, body: dict):
    return client.post(FEEDBACK, body, format="json")


def resolving(finding: Finding) -> Fix:
    return finding.fixes.get(outcome="resolves")


def test_feedback_posted_twice_by_one_token_counts_once(
    reader: APIClient, dsa_finding: Finding
) -> None:
    fix = resolving(dsa_finding)
    body = {"fix_id": fix.pk, "helped": True, "fingerprint": "e3144a77e665"}
    first, second = vote(reader, body), vote(reader, body)
    assert (first.status_code, second.status_code) == (201, 200)
    assert first.json()["id"] == second.json()["id"]
    assert FixFeedback.objects.count() == 1
    assert votes_per_fix() == {fix.pk: (1, 0)}
    [entry] = diagnose(DSA_ASSERT).fixes
    assert "feedback: 1 helped, 0 did not" in entry.why[-1].detail


def test_many_votes_from_one_token_move_the_ranking_no_more_than_one(
    reader: APIClient, dsa_finding: Finding
) -> None:
    """Ten "did not help" from one token, on ten different pastes, count as one voter."""
    fix = resolving(dsa_finding)
    vote(reader, {"fix_id": fix.pk, "helped": False, "fingerprint": "paste-0"})
    once = diagnose(DSA_ASSERT).fixes[0].score
    for n in range(1, 10):
        vote(reader, {"fix_id": fix.pk, "helped": False, "fingerprint": f"paste-{n}"})
    assert FixFeedback.objects.count() == 10
    assert votes_per_fix() == {fix.pk: (0, 1)}
    assert diagnose(DSA_ASSERT).fixes[0].score == once


def test_a_second_vote_replaces_the_first(reader: APIClient, dsa_finding: Finding) -> None:
    fix = resolving(dsa_finding)
    vote(reader, {"fix_id": fix.pk, "helped": True})
    response = vote(reader, {"fix_id": fix.pk, "helped": False, "worked_instead_text": "reboot"})
    assert response.status_code == 200
    assert (response.json()["helped"], response.json()["worked_instead_text"]) == (False, "reboot")
    assert votes_per_fix() == {fix.pk: (0, 1)}


def test_every_token_has_its_own_vote(make_token: TokenFactory, dsa_finding: Finding) -> None:
    fix = resolving(dsa_finding)
    for _ in range(3):
        assert (
            vote(client_with(make_token("read")), {"fix_id": fix.pk, "helped": True}).status_code
            == 201
        )
    assert votes_per_fix() == {fix.pk: (3, 0)}


def test_feedback_needs_an_identity(settings, dsa_finding: Finding) -> None:
    settings.FIXGRAPH_ALLOW_ANONYMOUS_API = True
    response = vote(APIClient(), {"fix_id": resolving(dsa_finding).pk, "helped": True})
    assert_error(response, 401)
    assert not FixFeedback.objects.exists()


def test_a_voter_can_undo_their_vote_and_only_theirs(
    reader: APIClient, make_token: TokenFactory, dsa_finding: Finding
) -> None:
    fix = resolving(dsa_finding)
    mine = vote(reader, {"fix_id": fix.pk, "helped": True}).json()["id"]
    other = client_with(make_token("read"))
    assert_error(other.delete(f"{FEEDBACK}{mine}/"), 404)
    assert other.get(FEEDBACK).json()["results"] == []
    assert [v["id"] for v in reader.get(FEEDBACK).json()["results"]] == [mine]
    assert reader.delete(f"{FEEDBACK}{mine}/").status_code == 204
    assert votes_per_fix() == {}


def test_what_worked_instead_names_another_fix(reader: APIClient, dsa_finding: Finding) -> None:
    fix = resolving(dsa_finding)
    other = dsa_finding.fixes.get(outcome="no_effect")
    response = vote(reader, {"fix_id": fix.pk, "helped": False, "worked_instead_fix_id": other.pk})
    assert response.status_code == 201
    assert FixFeedback.objects.get().worked_instead_fix == other


def test_the_old_field_name_fix_is_still_accepted(reader: APIClient, dsa_finding: Finding) -> None:
    response = vote(reader, {"fix": resolving(dsa_finding).pk, "helped": True})
    assert response.status_code == 201
    assert response.json()["fix_id"] == resolving(dsa_finding).pk


@pytest.mark.parametrize(
    "body",
    [
        {"fix_id": 999999, "helped": True},
        {"fix_id": "one", "helped": True},
        {"helped": True},
        {"fix_id": 1, "helped": "perhaps"},
        {"fix_id": 1, "helped": True, "context": "not an object"},
        {"fix_id": 1, "helped": True, "worked_instead_text": "it helped, and so did this"},
        {"fix_id": 1, "helped": False, "worked_instead_fix_id": 999999},
        {"fix_id": 1, "helped": True, "context": {"log": "x" * 20_000}},
    ],
)
def test_feedback_explains_a_bad_body(reader: APIClient, body: dict, dsa_finding) -> None:
    if body.get("fix_id") == 1:
        body = {**body, "fix_id": resolving(dsa_finding).pk}
    assert_error(vote(reader, body), 400, "invalid")
    assert not FixFeedback.objects.exists()


def test_the_paste_of_the_diagnosis_is_kept_with_the_vote(
    reader: APIClient, dsa_finding: Finding
) -> None:
    answer = reader.post("/api/v1/diagnose/", {"traceback": DSA_ASSERT}, format="json").json()
    fix_id = answer["fixes"][0]["fix_id"]
    body = {"fix_id": fix_id, "helped": True, "diagnosis_id": answer["id"]}
    response = vote(reader, body)
    assert response.status_code == 201 and response.json()["diagnosis_id"] == answer["id"]
    assert FixFeedback.objects.get().diagnosis.text == DSA_ASSERT
    assert vote(reader, body).status_code == 200  # the same paste: the same vote


def test_one_token_votes_once_per_paste(reader: APIClient, dsa_finding: Finding) -> None:
    """Two pastes of one error, one vote each; the ranking still counts the token once."""
    first = reader.post("/api/v1/diagnose/", {"traceback": DSA_ASSERT}, format="json").json()
    second = reader.post(
        "/api/v1/diagnose/", {"traceback": "[TP0] " + DSA_ASSERT}, format="json"
    ).json()
    fix_id = first["fixes"][0]["fix_id"]
    for answer in (first, second):
        body = {"fix_id": fix_id, "helped": True, "diagnosis_id": answer["id"]}
        assert vote(reader, body).status_code == 201
    assert FixFeedback.objects.count() == 2
    assert votes_per_fix() == {fix_id: (1, 0)}


def test_an_unknown_diagnosis_id_is_a_400(reader: APIClient, dsa_finding: Finding) -> None:
    body = {"fix_id": resolving(dsa_finding).pk, "helped": True, "diagnosis_id": "nope"}
    assert "diagnosis_id" in assert_error(vote(reader, body), 400)["fields"]


def test_a_nearest_findings_fix_that_worked_is_kept_with_the_paste(
    reader: APIClient, starter_kb: None
) -> None:
    """No known match: a bot shows the nearest finding's fixes, and the person it helped
    says so; the vote carries the paste for a reviewer to add to the finding's samples."""
    paste = "RuntimeError: CUDA error: an illegal memory access was encountered in flashmla"
    answer = reader.post("/api/v1/diagnose/", {"traceback": paste}, format="json").json()
    assert answer["match"] == "none" and answer["fixes"] == []
    near = answer["nearest"][0]
    assert all(fix["outcome"] not in ("no_effect", "worse") for fix in near["fixes"])

    fix_id = near["fixes"][0]["id"]
    response = vote(reader, {"fix_id": fix_id, "diagnosis_id": answer["id"], "helped": True})

    assert response.status_code == 201, response.content
    kept = FixFeedback.objects.get()
    assert kept.diagnosis is not None and kept.diagnosis.text == paste
    assert kept.fix.finding_id == near["id"]
