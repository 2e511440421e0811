"""The OpenAPI schema: every answer typed, every error documented, examples that hold."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from api.models import ApiToken


@pytest.mark.django_db
def test_it_serves_an_openapi_3_schema() -> None:
    response = Client().get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    schema = response.json()
    assert schema["openapi"].startswith("3.")
    assert {"/api/v1/diagnose/", "/api/v1/findings/", "/api/v1/validation-runs/"} <= set(
        schema["paths"]
    )
    assert schema["components"]["securitySchemes"]["tokenAuth"]["name"] == "Authorization"


@pytest.mark.django_db
def test_the_docs_need_no_cdn() -> None:
    page = Client().get("/api/v1/docs/").content.decode()
    assert "swagger-ui" in page and "/static/drf_spectacular_sidecar/" in page
    assert "cdn.jsdelivr" not in page and "unpkg" not in page


def schema_document() -> dict:
    response = Client().get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    assert response.status_code == 200
    return response.json()


def resolve(schema: dict, node: dict) -> dict:
    while "$ref" in node:
        node = schema["components"]["schemas"][node["$ref"].rsplit("/", 1)[-1]]
    return node


@pytest.mark.django_db
def test_the_diagnose_answer_is_typed_with_an_example() -> None:
    schema = schema_document()
    ok = schema["paths"]["/api/v1/diagnose/"]["post"]["responses"]["200"]["content"]
    answer = resolve(schema, ok["application/json"]["schema"])
    assert {"id", "html_url", "summary", "match", "corrected_command", "fixes"} <= set(
        answer["properties"]
    )
    assert answer["properties"]["match"]  # an enum, not a free-form object
    ranked = resolve(schema, answer["properties"]["fixes"]["items"])
    assert {"rank", "fix_id", "fix", "corrected_command", "finding", "why"} <= set(
        ranked["properties"]
    )
    fix = resolve(schema, ranked["properties"]["fix"])
    change = resolve(schema, fix["properties"]["changes"]["items"])
    assert set(change["properties"]) == {"action", "name", "value"}
    [example] = ok["application/json"]["examples"].values()
    assert example["value"]["fixes"][0]["fix_id"]
    slack = resolve(schema, ok["application/vnd.slack.blocks+json"]["schema"])
    assert set(slack["properties"]) == {"response_type", "text", "blocks"}


@pytest.mark.django_db
def test_every_error_answer_is_documented_in_the_one_error_shape() -> None:
    schema = schema_document()
    expected = {
        ("/api/v1/diagnose/", "post"): {"400", "401", "403", "413", "415", "429"},
        ("/api/v1/findings/", "get"): {"400", "401", "403", "429"},
        ("/api/v1/findings/{id}/", "get"): {"401", "403", "404", "429"},
        ("/api/v1/findings/{id}/", "patch"): {"400", "401", "403", "404", "413", "415", "429"},
        ("/api/v1/feedback/", "post"): {"400", "401", "403", "413", "415", "429"},
    }
    for (path, method), statuses in expected.items():
        responses = schema["paths"][path][method]["responses"]
        assert statuses <= set(responses), (path, method, set(responses))
        for status in statuses:
            body = responses[status]["content"]["application/json"]["schema"]
            assert body == {"$ref": "#/components/schemas/Error"}, (path, status)
        assert "Retry-After" in responses["429"]["headers"]
    error = resolve(schema, {"$ref": "#/components/schemas/Error"})
    detail = resolve(schema, error["properties"]["error"])
    assert set(detail["properties"]) == {"code", "message", "fields"}


@pytest.mark.django_db
def test_the_docs_example_is_what_the_starter_knowledge_base_answers(starter_kb) -> None:
    """If this fails after a ranking change, run `manage.py write_api_examples` (README)."""
    from api.examples import diagnose_example
    from tests.api.conftest import client_with

    example = diagnose_example()
    _, raw = ApiToken.issue(User.objects.create_user("example-reader"), ["read"])
    body = client_with(raw).post("/api/v1/diagnose/", example["request"], format="json").json()
    shown = example["response"]
    assert body["match"] == shown["match"]
    assert [f["fix"]["summary"] for f in body["fixes"]] == [
        f["fix"]["summary"] for f in shown["fixes"]
    ]
    assert body["corrected_command"] == shown["corrected_command"]
    assert body["summary"] == shown["summary"]
