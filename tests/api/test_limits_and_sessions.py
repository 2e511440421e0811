"""Budgets per token for the two costly endpoints, and the browsable API for a logged-in
browser: the same scopes the web pages give that user."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.core.cache import cache
from rest_framework.test import APIClient

from kb.models import Finding
from tests.api.conftest import DSA_ASSERT, TokenFactory, assert_error, client_with

pytestmark = pytest.mark.django_db

DIAGNOSE, FINDINGS = "/api/v1/diagnose/", "/api/v1/findings/"


@pytest.fixture
def tight_budgets(settings):
    cache.clear()
    rates = {
        **settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"],
        "diagnose": "2/min",
        "search": "3/min",
    }
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}
    yield
    cache.clear()


def test_diagnose_has_a_budget_per_token(
    make_token: TokenFactory, tight_budgets: None, dsa_finding: Finding
) -> None:
    bot, other = client_with(make_token("read")), client_with(make_token("read"))
    body = {"traceback": DSA_ASSERT}
    assert [bot.post(DIAGNOSE, body, format="json").status_code for _ in range(2)] == [200, 200]
    refused = bot.post(DIAGNOSE, body, format="json")
    assert_error(refused, 429, "throttled")
    assert 0 < int(refused["Retry-After"]) <= 60
    assert bot.get(FINDINGS).status_code == 200  # the rest of the API still answers
    assert other.post(DIAGNOSE, body, format="json").status_code == 200


def test_searching_has_a_budget_per_token_and_reading_one_finding_does_not(
    reader: APIClient, tight_budgets: None, dsa_finding: Finding
) -> None:
    assert [reader.get(FINDINGS, {"q": "fp8"}).status_code for _ in range(3)] == [200] * 3
    assert "Retry-After" in assert_error_response(reader.get(FINDINGS), 429)
    assert reader.get(f"{FINDINGS}{dsa_finding.pk}/").status_code == 200


def assert_error_response(response, status: int):  # type: ignore[no-untyped-def]
    assert_error(response, status)
    return response


def logged_in(*permissions: str) -> APIClient:
    user = User.objects.create_user(f"person-{len(permissions)}-{User.objects.count()}")
    for codename in permissions:
        user.user_permissions.add(Permission.objects.get(codename=codename))
    client = APIClient()
    client.force_login(user)
    return client


def test_a_logged_in_browser_gets_the_browsable_api(dsa_finding: Finding) -> None:
    client = logged_in()
    page = client.get(FINDINGS, HTTP_ACCEPT="text/html")
    assert page.status_code == 200
    assert page["Content-Type"].startswith("text/html")
    assert dsa_finding.title in page.content.decode()
    assert client.get(FINDINGS).json()["results"][0]["id"] == dsa_finding.pk
    form = client.get(DIAGNOSE, HTTP_ACCEPT="text/html")
    assert form.status_code == 405 and "traceback" in form.content.decode()


def test_a_logged_in_user_may_diagnose_but_not_write(dsa_finding: Finding) -> None:
    client = logged_in()
    assert client.post(DIAGNOSE, {"traceback": DSA_ASSERT}, format="json").status_code == 200
    assert_error(client.post(FINDINGS, {"title": "x"}, format="json"), 403, "permission_denied")


def test_a_reviewer_may_write_through_the_browsable_api(db: None) -> None:
    client = logged_in("change_finding")
    response = client.post(FINDINGS, {"title": "Seen once on a T4"}, format="json")
    assert response.status_code == 201, response.content
    assert Finding.objects.get(title="Seen once on a T4")


def test_a_session_write_needs_the_csrf_token(db: None) -> None:
    user = User.objects.create_user("csrf-checked")
    user.user_permissions.add(Permission.objects.get(codename="change_finding"))
    client = APIClient(enforce_csrf_checks=True)
    client.force_login(user)
    assert_error(client.post(FINDINGS, {"title": "x"}, format="json"), 403)
    assert not Finding.objects.filter(title="x").exists()
