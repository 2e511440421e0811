"""Errors answer with FixGraph's own pages, never Django's debug page."""

from __future__ import annotations

import pytest
from django.http import HttpRequest, HttpResponse
from django.test import Client, override_settings
from django.urls import include, path

pytestmark = pytest.mark.django_db


def broken_view(request: HttpRequest) -> HttpResponse:
    raise RuntimeError("a bug")


urlpatterns = [path("broken/", broken_view), path("", include("config.urls"))]


def test_it_answers_an_unknown_address_with_its_own_404_page(client: Client) -> None:
    response = client.get("/no/such/page/")

    page = response.content.decode()
    assert response.status_code == 404
    assert "<h1>Nothing here</h1>" in page
    assert "<code>/no/such/page/</code>" in page
    assert 'action="/"' in page  # a search box to go on from
    assert "Technical details" not in page and "URLconf" not in page


def test_it_says_when_a_diagnosis_link_leads_nowhere(client: Client) -> None:
    response = client.get("/diagnose/AAAAAAAAAAAAAAAAAAAAAA/")

    assert response.status_code == 404
    assert "No diagnosis has this link. It may have been deleted." in response.content.decode()


def test_it_hides_a_missing_finding_behind_the_same_page(client: Client) -> None:
    response = client.get("/findings/999999/")

    assert response.status_code == 404
    assert "given query" not in response.content.decode()


@override_settings(ROOT_URLCONF=__name__)
def test_it_answers_a_crash_with_its_own_500_page() -> None:
    client = Client(raise_request_exception=False)

    response = client.get("/broken/")

    page = response.content.decode()
    assert response.status_code == 500
    assert "Something broke on our side" in page
    assert "a bug" not in page and "Traceback" not in page
