"""POST /api/v1/diagnose/: the question that splits the fixes, and the answer that re-ranks."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from tests.questions_kb import (
    ADA_FIX,
    BLACKWELL_FIX,
    MOE_OUT_OF_RESOURCES_ELSEWHERE,
    gpu_capability_split_kb,
    gpu_split_kb,
)

pytestmark = pytest.mark.django_db

DIAGNOSE = "/api/v1/diagnose/"


def diagnose(client: APIClient, **body: object) -> dict:  # type: ignore[type-arg]
    response = client.post(
        DIAGNOSE, {"traceback": MOE_OUT_OF_RESOURCES_ELSEWHERE, **body}, format="json"
    )
    assert response.status_code == 200, response.content[:500]
    return response.json()  # type: ignore[no-any-return]


def summaries(body: dict) -> list[str]:  # type: ignore[type-arg]
    return [entry["fix"]["summary"] for entry in body["fixes"]]


def test_it_asks_one_question_and_the_answer_changes_the_order(reader: APIClient) -> None:
    gpu_split_kb()

    asked = diagnose(reader)
    assert [q["key"] for q in asked["questions"]] == ["gpu.arch"]
    assert asked["questions"][0]["answers"] == ["sm_120", "sm_89", "other"]

    ada = diagnose(reader, answers={"gpu.arch": "sm_89"})
    blackwell = diagnose(reader, answers={"gpu.arch": "sm_120"})

    assert summaries(ada) == [ADA_FIX, BLACKWELL_FIX]
    assert summaries(blackwell) == [BLACKWELL_FIX, ADA_FIX]
    assert ada["questions"] == [] and ada["context"]["arch"] == "sm_89"


def test_a_compute_capability_is_asked_in_ranges_and_the_answer_changes_the_order(
    reader: APIClient,
) -> None:
    gpu_capability_split_kb()

    asked = diagnose(reader)
    assert [q["key"] for q in asked["questions"]] == ["gpu.capability"]
    assert asked["questions"][0]["answers"] == ["<12.0", ">=12.0"]

    older = diagnose(reader, answers={"gpu.capability": "<12.0"})
    as_printed = diagnose(reader, answers={"gpu.capability": "12.0"})  # nvidia-smi's compute_cap

    assert summaries(older) == [ADA_FIX, BLACKWELL_FIX]
    assert summaries(as_printed) == [BLACKWELL_FIX, ADA_FIX]
    assert older["questions"] == [] and as_printed["questions"] == []
    assert (older["context"]["capability"], as_printed["context"]["capability"]) == (
        "<12.0",
        "12.0",
    )
