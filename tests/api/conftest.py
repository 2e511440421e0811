"""Users, tokens and a small knowledge base for the API tests, made with the ORM."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import pytest
from django.contrib.auth.models import User
from rest_framework.test import APIClient

from api.models import ApiToken
from kb.models import ErrorSample, Finding, FindingGpu, Fix, FlagSetting, Hardware, LanguageModel

TokenFactory = Callable[..., str]


@pytest.fixture
def user(db: None) -> User:
    return User.objects.create_user("bot-owner", password="x")


@pytest.fixture
def make_token(user: User) -> TokenFactory:
    def make(*scopes: str, **kwargs: Any) -> str:
        _, raw = ApiToken.issue(user, list(scopes or ("read",)), **kwargs)
        return raw

    return make


def client_with(raw: str | None) -> APIClient:
    client = APIClient()
    if raw:
        client.credentials(HTTP_AUTHORIZATION=f"Token {raw}")
    return client


@pytest.fixture
def reader(make_token: TokenFactory) -> APIClient:
    return client_with(make_token("read"))


@pytest.fixture
def writer(make_token: TokenFactory) -> APIClient:
    return client_with(make_token("read", "write"))


@pytest.fixture
def publisher(make_token: TokenFactory) -> APIClient:
    """A reviewer's bot: may publish findings and add fixes to published ones."""
    return client_with(make_token("read", "write", "publish"))


@pytest.fixture
def validator(make_token: TokenFactory) -> APIClient:
    return client_with(make_token("read", "validate"))


def assert_error(response: Any, status: int, code: str | None = None) -> dict[str, Any]:
    """Every 4xx is `{"error": {"code", "message", "fields"}}` with a readable message."""
    assert response.status_code == status, response.content[:500]
    body = response.json()
    error = body["error"]
    assert set(error) == {"code", "message", "fields"}
    assert error["message"]
    if code is not None:
        assert error["code"] == code
    return error


DSA_ASSERT = """\
[2026-01-12 10:01:22 TP3] Scheduler hit an exception: Traceback (most recent call last):
  File "/opt/sglang/python/sglang/srt/mem_cache/memory_pool.py", line 1412, in set_kv_buffer
    assert not self.nsa_kv_cache_store_fp8
AssertionError
"""


@pytest.fixture
def blackwell() -> Hardware:
    return Hardware.objects.create(
        name="NVIDIA RTX PRO 6000 Blackwell Server Edition",
        arch="sm_120",
        compute_capability="12.0",
        family="Blackwell",
    )


@pytest.fixture
def hopper() -> Hardware:
    return Hardware.objects.create(
        name="NVIDIA H100 80GB HBM3", arch="sm_90", compute_capability="9.0", family="Hopper"
    )


@pytest.fixture
def dsa_finding(db: None, blackwell: Hardware) -> Finding:
    """The FP8 KV-cache assertion in the sparse-attention pool, on sm_120."""
    model = LanguageModel.objects.create(
        name="zai-org/GLM-5-NVFP4", arch="glm_moe_dsa", quantization="nvfp4", family="glm"
    )
    finding = Finding.objects.create(
        title="FP8 KV cache trips the sparse-attention store assertion",
        status=Finding.Status.PUBLISHED,
        cause="The NSA indexer path writes the FP8 buffer the pool refuses when the decode "
        "backend does not support it.",
        body="Setting the attention backend alone does not change the decode path.",
        model=model,
        conditions=[{"key": "gpu.arch", "value": "sm_120"}],
    )
    FindingGpu.objects.create(finding=finding, hardware=blackwell, count=8)
    FlagSetting.objects.create(finding=finding, name="kv-cache-dtype", value="fp8_e4m3")
    ErrorSample.objects.create(finding=finding, text=DSA_ASSERT)
    Fix.objects.create(
        finding=finding,
        summary="Use a bf16 KV cache",
        outcome="resolves",
        changes=[{"action": "set_flag", "name": "kv-cache-dtype", "value": "bf16"}],
    )
    Fix.objects.create(
        finding=finding,
        summary="Switch only the attention backend to triton",
        outcome="no_effect",
        position=1,
        changes=[{"action": "set_flag", "name": "attention-backend", "value": "triton"}],
    )
    return finding


@pytest.fixture
def oom_finding(db: None, hopper: Hardware) -> Finding:
    """A CUDA-graph capture OOM on Hopper, fixed by lowering the static memory share."""
    finding = Finding.objects.create(
        title="CUDA graph capture runs out of memory",
        status=Finding.Status.PUBLISHED,
        kind=Finding.Kind.OOM,
        cause="The static pool leaves too little room for graph capture buffers.",
    )
    FindingGpu.objects.create(finding=finding, hardware=hopper, count=4)
    FlagSetting.objects.create(finding=finding, name="mem-fraction-static", value="0.92")
    ErrorSample.objects.create(
        finding=finding,
        text="torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    )
    Fix.objects.create(
        finding=finding,
        summary="Lower the static memory share",
        outcome="resolves",
        changes=[{"action": "set_flag", "name": "mem-fraction-static", "value": "0.85"}],
    )
    return finding
