"""A write-up that quotes a token: ingest replaces it before anything is stored, says so,
and an unchanged file is still skipped the next time."""

from __future__ import annotations

from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command

from kb.models import ErrorSample, Finding, SourceDocument

pytestmark = pytest.mark.django_db

HF = "hf_" + "Zy9xWv8uTs7rQp6oNm5lKj4iHg3fEd2cBa"
WRITE_UP = f"""# Findings

## Triton backend asserts in set_kv_buffer with an FP8 KV cache
- Model: GLM-5-NVFP4 (glm_moe_dsa, nvfp4)
- Framework: sglang 0.5.9
- Flags: HF_TOKEN={HF} python -m sglang.launch_server --kv-cache-dtype fp8_e4m3
  --attention-backend triton --api-key bring-up-key-77
- Fix: --kv-cache-dtype bf16

```
HF_TOKEN={HF}
  File "/opt/sglang/python/sglang/srt/mem_cache/memory_pool.py", line 1498, in set_kv_buffer
    assert not self.nsa_kv_cache_store_fp8
AssertionError
```
"""


def ingest(path: Path) -> str:
    out = StringIO()
    call_command("ingest", str(path), "--publish", stdout=out)
    return out.getvalue()


def test_ingest_replaces_secrets_says_so_and_still_skips_an_unchanged_file(tmp_path: Path) -> None:
    path = tmp_path / "FINDINGS.md"
    path.write_text(WRITE_UP)

    printed = ingest(path)

    assert "replaced by [redacted]: a Hugging Face token, an --api-key value" in printed
    finding = Finding.objects.get()
    stored = [SourceDocument.objects.get().content, finding.body, finding.title]
    stored += [sample.text for sample in ErrorSample.objects.all()]
    stored += [f"{flag.name} {flag.value}" for flag in finding.flag_settings.all()]
    assert ErrorSample.objects.exists()
    assert not any(HF in text or "bring-up-key-77" in text for text in stored)
    assert "skipped" in ingest(path) and Finding.objects.count() == 1
