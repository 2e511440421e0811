"""A findings filter on a flag finds it under any spelling the flag tables know."""

from __future__ import annotations

import pytest
from rest_framework.test import APIClient

from kb.models import Finding, FlagSetting

pytestmark = pytest.mark.django_db

FINDINGS = "/api/v1/findings/"


@pytest.fixture
def sparse_decode_finding(db: None) -> Finding:
    """An SGLang finding launched with the sparse-attention decode kernel and 8-way TP."""
    finding = Finding.objects.create(
        title="Decode kernel choice on eight GPUs",
        status=Finding.Status.PUBLISHED,
        conditions=[{"key": "framework", "value": "sglang"}],
    )
    FlagSetting.objects.create(finding=finding, name="dsa-decode-backend", value="flashmla_kv")
    FlagSetting.objects.create(finding=finding, name="tp-size", value="8")
    return finding


@pytest.mark.parametrize(
    "written",
    [
        "--dsa-decode-backend",
        "--nsa-decode-backend",  # the name before the rename (bug: found nothing)
        "nsa_decode_backend",
        "--tp",  # argparse's unique prefix of --tp-size (bug: found nothing)
        "--tp-size",
        "tp_size=8",
    ],
)
def test_it_filters_by_a_flag_under_any_spelling(
    reader: APIClient, sparse_decode_finding: Finding, oom_finding: Finding, written: str
) -> None:
    response = reader.get(FINDINGS, {"flag": written})

    assert response.status_code == 200, response.content[:300]
    assert [row["id"] for row in response.json()["results"]] == [sparse_decode_finding.pk]
