"""Throttles that hold: counted in Redis, shared by every web worker, per token or per
client address, never per forged X-Forwarded-For; anonymous access is diagnose and search."""

from __future__ import annotations

from concurrent.futures import ThreadPoolExecutor

import pytest
from django.db import connection
from rest_framework.test import APIClient

from kb.models import Finding, Host
from tests.api.conftest import TokenFactory, assert_error
from tests.gunicorn import database_url, gunicorn, request
from tests.services import require_services

FINDINGS = "/api/v1/findings/"


@pytest.mark.services
@pytest.mark.django_db(transaction=True)
def test_a_token_gets_its_rate_and_no_more_across_two_web_workers(
    make_token: TokenFactory,
) -> None:
    require_services()
    raw = make_token("read")
    env = {
        "DATABASE_URL": database_url(connection.settings_dict["NAME"]),
        "FIXGRAPH_API_RATE_TOKEN": "20/hour",
    }
    with gunicorn(workers=2, **env) as port:
        headers = {"Authorization": f"Token {raw}"}
        with ThreadPoolExecutor(max_workers=8) as pool:
            replies = list(
                pool.map(
                    lambda _: request(port, "GET", "/api/v1/hardware/", headers=headers), range(50)
                )  # fmt: skip
            )
    statuses = sorted(status for status, _, _ in replies)
    assert statuses.count(200) == 20 and statuses.count(429) == 30
    assert all(int(h["Retry-After"]) > 0 for status, h, _ in replies if status == 429)


@pytest.mark.django_db
def test_a_forged_x_forwarded_for_buys_no_fresh_budget(settings) -> None:
    settings.FIXGRAPH_ALLOW_ANONYMOUS_API = True
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"token": "600/min", "anon": "3/min"},
    }
    client = APIClient()
    statuses = [
        client.get(FINDINGS, HTTP_X_FORWARDED_FOR=f"203.0.113.{i}").status_code for i in range(5)
    ]
    assert statuses == [200, 200, 200, 429, 429]


@pytest.mark.django_db
def test_behind_one_proxy_each_client_address_has_its_own_budget(settings) -> None:
    settings.FIXGRAPH_ALLOW_ANONYMOUS_API = True
    settings.FIXGRAPH_NUM_PROXIES = 1
    settings.REST_FRAMEWORK = {
        **settings.REST_FRAMEWORK,
        "DEFAULT_THROTTLE_RATES": {"token": "600/min", "anon": "2/min"},
    }
    client = APIClient()

    def get(address: str) -> int:
        # The client forges a first entry; our proxy appends the address it saw.
        return client.get(FINDINGS, HTTP_X_FORWARDED_FOR=f"10.0.0.1, {address}").status_code

    assert [get("198.51.100.7") for _ in range(3)] == [200, 200, 429]
    assert get("198.51.100.8") == 200


@pytest.mark.django_db
def test_anonymous_callers_may_diagnose_and_search_and_nothing_else(
    settings, dsa_finding: Finding
) -> None:
    settings.FIXGRAPH_ALLOW_ANONYMOUS_API = True
    anonymous = APIClient()
    assert anonymous.get(FINDINGS).status_code == 200
    assert anonymous.get(f"{FINDINGS}{dsa_finding.pk}/").status_code == 200
    diagnosed = anonymous.post(
        "/api/v1/diagnose/", {"traceback": "AssertionError: boom"}, format="json"
    )
    assert diagnosed.status_code == 200
    Host.objects.create(name="box", address="10.200.0.9", username="gpu")
    fix = dsa_finding.fixes.first()
    for method, path, body in [
        ("get", "/api/v1/hosts/", None),
        ("get", "/api/v1/validation-runs/", None),
        ("get", f"{FINDINGS}{dsa_finding.pk}/history/", None),
        ("get", f"{FINDINGS}{dsa_finding.pk}/fixes/", None),
        ("get", "/api/v1/hardware/", None),
        ("post", "/api/v1/feedback/", {"fix_id": fix.pk, "helped": False}),
        ("post", "/api/v1/validation-runs/", {"fix_id": fix.pk, "host": "box"}),
        ("post", FINDINGS, {"title": "x"}),
    ]:
        response = getattr(anonymous, method)(path, body, format="json")
        assert_error(response, 401, "not_authenticated")
