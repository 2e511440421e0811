"""Tokens: sent as `Authorization: Token …`, scoped, revocable, expiring, throttled."""

from __future__ import annotations

import io
from datetime import timedelta

import pytest
from django.core.management import call_command
from django.utils import timezone
from rest_framework.test import APIClient

from api.models import ApiToken, hash_token
from tests.api.conftest import TokenFactory, assert_error, client_with

pytestmark = pytest.mark.django_db

FINDINGS = "/api/v1/findings/"


def test_it_refuses_a_request_without_a_token() -> None:
    error = assert_error(APIClient().get(FINDINGS), 401, "not_authenticated")
    assert "Token" in error["message"]


def test_it_refuses_an_unknown_token() -> None:
    assert_error(client_with("fxg_not-a-real-token").get(FINDINGS), 401, "authentication_failed")


def test_it_refuses_a_malformed_header() -> None:
    client = APIClient()
    client.credentials(HTTP_AUTHORIZATION="Token two parts")
    assert_error(client.get(FINDINGS), 401)


def test_it_refuses_a_revoked_token(make_token: TokenFactory) -> None:
    raw = make_token("read")
    ApiToken.objects.get(digest=hash_token(raw)).revoke()
    error = assert_error(client_with(raw).get(FINDINGS), 401, "token_revoked")
    assert "revoked" in error["message"]


def test_it_refuses_an_expired_token(make_token: TokenFactory) -> None:
    raw = make_token("read", expires_at=timezone.now() - timedelta(minutes=1))
    assert_error(client_with(raw).get(FINDINGS), 401, "token_expired")


def test_a_token_not_yet_expired_works(make_token: TokenFactory) -> None:
    raw = make_token("read", expires_at=timezone.now() + timedelta(days=1))
    assert client_with(raw).get(FINDINGS).status_code == 200


def test_a_read_token_cannot_write(reader: APIClient) -> None:
    error = assert_error(
        reader.post(FINDINGS, {"title": "x"}, format="json"), 403, "permission_denied"
    )
    assert "`write`" in error["message"]


def test_a_write_token_without_read_cannot_list(make_token: TokenFactory) -> None:
    assert_error(client_with(make_token("write")).get(FINDINGS), 403)


def test_only_the_digest_of_a_token_is_stored(make_token: TokenFactory) -> None:
    raw = make_token("read")
    token = ApiToken.objects.get()
    assert raw not in (token.digest, token.prefix)
    assert raw.startswith(token.prefix)


def test_anonymous_reads_only_when_the_setting_allows(settings) -> None:
    assert_error(APIClient().get(FINDINGS), 401)
    settings.FIXGRAPH_ALLOW_ANONYMOUS_API = True
    assert APIClient().get(FINDINGS).status_code == 200
    # Writing still needs a token.
    assert_error(APIClient().post(FINDINGS, {"title": "x"}, format="json"), 401)


def test_issue_token_prints_a_working_token(user) -> None:
    out, err = io.StringIO(), io.StringIO()
    call_command(
        "issue_token",
        user.username,
        "--scopes",
        "read,write",
        "--expires-in-days",
        "7",
        "--name",
        "slack-bot",
        stdout=out,
        stderr=err,
    )
    raw = out.getvalue().strip()
    token = ApiToken.objects.get()
    assert token.scopes == ["read", "write"] and token.name == "slack-bot"
    assert token.expires_at is not None and token.expires_at > timezone.now() + timedelta(days=6)
    assert "not shown again" in err.getvalue()
    assert client_with(raw).get(FINDINGS).status_code == 200


def test_issue_token_refuses_an_unknown_scope(user) -> None:
    from django.core.management.base import CommandError

    with pytest.raises(CommandError, match="Scopes must be"):
        call_command("issue_token", user.username, "--scopes", "read,admin")


def test_each_token_has_its_own_rate_limit(make_token: TokenFactory, settings) -> None:
    from django.core.cache import cache

    cache.clear()
    rates = {**settings.REST_FRAMEWORK["DEFAULT_THROTTLE_RATES"], "token": "2/min"}
    settings.REST_FRAMEWORK = {**settings.REST_FRAMEWORK, "DEFAULT_THROTTLE_RATES": rates}
    first, second = client_with(make_token("read")), client_with(make_token("read"))
    assert [first.get(FINDINGS).status_code for _ in range(2)] == [200, 200]
    assert_error(first.get(FINDINGS), 429, "throttled")
    assert second.get(FINDINGS).status_code == 200
    cache.clear()
