"""docs/api.md's Python client, run as written against a live server: it diagnoses a paste,
votes, searches, checks the corrected launch and validates the first fix on a GPU host (the
fake-GPU test host over SSH, run by a real Celery worker). Only the address, the token and
the host name are ours."""

from __future__ import annotations

import re
import subprocess
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any

import pytest
from django.contrib.auth.models import User

from api.models import ApiToken
from kb.models import FixFeedback, FrameworkRelease, Host, ValidationRun
from kb.services.validation import queue_for
from tests.api.conftest import DSA_ASSERT
from tests.validation.conftest import (  # noqa: F401 (fixtures)
    celery_worker,
    fake_gpu_dir,
    make_host,
    ssh_target,
)

API_MD = Path(__file__).resolve().parents[2] / "docs" / "api.md"


def client_script() -> str:
    found = re.search(r"## A small Python client\n\n```python\n(.*?)```", API_MD.read_text(), re.S)
    assert found is not None, "docs/api.md has no Python client block"
    return found.group(1)


def ours(script: str, **replacements: str) -> str:
    for old, new in replacements.items():
        assert old in script, f"docs/api.md's client no longer has {old!r}"
        script = script.replace(old, new)
    return script


@pytest.mark.django_db(transaction=True)
def test_the_python_client_in_docs_api_md_runs_as_written(
    live_server: Any,
    dsa_finding: Any,
    make_host: Callable[..., Host],  # noqa: F811
    celery_worker: Callable[[str], int],  # noqa: F811
    tmp_path: Path,
) -> None:
    # The finding's launch as the fake host can serve it: SGLang 0.5.9, fast tokens.
    dsa_finding.framework = FrameworkRelease.objects.create(name="sglang", version="0.5.9")
    dsa_finding.save()
    host = make_host(FAKE_GPU_TOKENS_PER_S="50000", FAKE_GPU_TTFT_MS="1")
    celery_worker(queue_for(host))
    _, token = ApiToken.issue(User.objects.create_user("bot"), ["read", "write", "validate"])
    script = ours(
        client_script(),
        **{
            "https://fixgraph.example.org/api/v1": f"{live_server.url}/api/v1",
            "fxg_your_token_here": token,
            '"gpu-box-1"': f'"{host.name}"',
        },
    )
    (tmp_path / "crash.log").write_text(DSA_ASSERT)

    ran = subprocess.run(
        [sys.executable, "-c", script], cwd=tmp_path, capture_output=True, text=True, timeout=300
    )

    assert ran.returncode == 0, ran.stdout + ran.stderr
    printed = ran.stdout.splitlines()
    first = dsa_finding.fixes.get(outcome="resolves")
    vote = FixFeedback.objects.get()
    assert (vote.fix, vote.helped, vote.diagnosis.text) == (first, True, DSA_ASSERT)
    assert printed[0] == f"Known issue: {dsa_finding.title}. Try first: --kv-cache-dtype bf16."
    assert printed[1] == f"Details: {vote.diagnosis.html_url}"
    assert printed[2].startswith("Try: python -m sglang.launch_server --model-path ")
    assert printed[2].endswith("--kv-cache-dtype bf16")
    assert f"{dsa_finding.title} http://127.0.0.1:8000/findings/{dsa_finding.pk}/" in printed
    # The finding states only its GPU (sm_120): the corrected launch, on one, still meets it.
    assert f"Launch check: Meets 1 known issue(s), first: {dsa_finding.title}." in printed
    run = ValidationRun.objects.get()
    assert (run.fix, run.host, run.status) == (first, host, ValidationRun.Status.PASSED)
    assert printed[-1].startswith("Validation: passed {")
