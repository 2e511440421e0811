"""Schemathesis against a live server: every operation of the schema, with generated valid
and invalid requests, with a `read` token and with a `read`+`write` token. Every answer
must be documented (status, content type, headers) and valid against the schema; none
may be a server error. It prints a table of what it sent and got."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest
import schemathesis
from django.contrib.auth.models import User
from django.test import Client
from hypothesis import HealthCheck, given, settings
from hypothesis.errors import Unsatisfiable
from schemathesis import GenerationMode, checks
from schemathesis.core.failures import Failure, FailureGroup

from api.examples import diagnose_example
from api.models import ApiToken
from kb.models import (
    Finding,
    Fix,
    Flag,
    FrameworkRelease,
    Hardware,
    Host,
    LanguageModel,
    ValidationRun,
)
from kb.services import feedback

CHECKS = [
    checks.not_a_server_error,
    checks.status_code_conformance,
    checks.content_type_conformance,
    checks.response_headers_conformance,
    checks.response_schema_conformance,
]
EXAMPLES_PER_OPERATION = 12


def run_schemathesis(
    base_url: str, token: str, existing: dict[str, int]
) -> tuple[Counter[str], list[str]]:
    """Statuses per method and every failure, for one token. Each operation gets generated
    valid and invalid requests; one on an object gets them again with an id that exists,
    and diagnose again with the docs' own example paste."""
    document = Client().get("/api/v1/schema/", HTTP_ACCEPT="application/vnd.oai.openapi+json")
    schema = schemathesis.openapi.from_dict(document.json())
    headers = {"Authorization": f"Token {token}"}
    statuses: Counter[str] = Counter()
    failures: list[str] = []
    for result in schema.get_all_operations():
        operation = result.ok()
        strategies = [
            operation.as_strategy(generation_mode=GenerationMode.POSITIVE),
            operation.as_strategy(generation_mode=GenerationMode.NEGATIVE),
        ]
        collection = operation.path.split("/")[3]
        if "{id}" in operation.path and collection in existing:
            strategies.append(operation.as_strategy(path_parameters={"id": existing[collection]}))
        if operation.path == "/api/v1/diagnose/":
            example = diagnose_example()["request"]
            strategies.append(operation.as_strategy(body=example, media_type="application/json"))
        for strategy in strategies:

            @given(case=strategy)
            @settings(
                max_examples=EXAMPLES_PER_OPERATION,
                deadline=None,
                derandomize=True,
                database=None,
                suppress_health_check=list(HealthCheck),
            )
            def check(case: Any) -> None:
                response = case.call(base_url=base_url, headers=headers, timeout=60)
                statuses[f"{case.method} {response.status_code}"] += 1
                try:
                    case.validate_response(response, checks=CHECKS, headers=headers)
                except Failure as failure:
                    failures.append(describe(case, response, failure))
                except FailureGroup as group:  # several checks failed at once
                    failures.extend(describe(case, response, f) for f in group.exceptions)

            try:
                check()
            except Unsatisfiable:
                # Nothing in this operation can be made invalid (no parameters, no body).
                assert strategy is strategies[1], operation.label
    return statuses, failures


def describe(case: Any, response: Any, failure: Exception) -> str:
    title = getattr(failure, "title", type(failure).__name__)
    return f"{case.method} {case.formatted_path} -> {response.status_code}: {title}"


@pytest.fixture
def existing(starter_kb: None) -> dict[str, int]:
    """The starter knowledge base, a host, a run and a vote: an object of each kind."""
    finding = Finding.objects.filter(status=Finding.Status.PUBLISHED, fixes__isnull=False).first()
    fix = Fix.objects.filter(finding=finding).first()
    host = Host.objects.create(name="gpu-box-1", address="10.0.0.5", username="serve")
    run = ValidationRun.objects.create(fix=fix, host=host, status=ValidationRun.Status.PASSED)
    return {
        "findings": finding.pk,
        "hardware": Hardware.objects.first().pk,
        "models": LanguageModel.objects.first().pk,
        "frameworks": FrameworkRelease.objects.first().pk,
        "flags": Flag.objects.first().pk,
        "hosts": host.pk,
        "validation-runs": run.pk,
    }


@pytest.mark.django_db(transaction=True)
@pytest.mark.parametrize("scopes", [["read"], ["read", "write"]], ids=["read", "write"])
def test_schemathesis_finds_no_server_error_and_no_schema_violation(
    live_server: Any, existing: dict[str, int], scopes: list[str]
) -> None:
    token_row, token = ApiToken.issue(User.objects.create_user("fuzzer"), scopes)
    fix = Fix.objects.get(pk=ValidationRun.objects.get().fix_id)
    vote, _ = feedback.vote(fix, feedback.Voter.for_token(token_row.pk, None), helped=True)
    statuses, failures = run_schemathesis(live_server.url, token, {**existing, "feedback": vote.pk})
    sent = sum(statuses.values())
    print(f"\nschemathesis, token {'+'.join(scopes)}: {sent} requests, {len(failures)} failures")
    for key, count in sorted(statuses.items()):
        print(f"  {key:<12} {count:>5}")
    for failure in sorted(set(failures)):
        print("  FAILED", failure)
    assert failures == []
    server_errors = sum(n for key, n in statuses.items() if key.split()[-1].startswith("5"))
    assert server_errors == 0
    # It really ran: every operation, past authentication, into the views.
    assert sent >= 40 * EXAMPLES_PER_OPERATION
    assert statuses["GET 200"] and statuses["POST 200"] and statuses["POST 400"]
