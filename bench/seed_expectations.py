"""Do the user's own incidents teach the answers they should, by the graph walk and without it?

Ingests a folder of incident write-ups into a scratch SQLite database (as `manage.py
ingest` does), publishes every draft as a reviewer would, and checks the answers issue 13
asks of the seeds, once with the plain ranking (the matched findings' own fixes) and once
with the walk of the decision graph:

- the `nsa_kv_cache_store_fp8` assertion under the triton backend gets a KV-dtype or
  sparse-attention-backend change first, `--attention-backend triton` known not to help,
  and no `--mem-fraction-static` fix;
- an out-of-memory while capturing CUDA graphs gets `--mem-fraction-static` first.

Folders: tests/fixtures/incidents (our retelling of the five write-ups) and
../shared/seeds (the write-ups themselves; left out, saying so, when absent).

    .venv/bin/python bench/seed_expectations.py [DIR ...]
"""

from __future__ import annotations

import contextlib
import io
import os
import sys
import tempfile
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
SEEDS = ROOT.parent / "shared" / "seeds"
RETELLING = ROOT / "tests" / "fixtures" / "incidents"
BLACKWELL = "NVIDIA RTX PRO 6000 Blackwell Server Edition"
TRITON_LAUNCH = (
    "python -m sglang.launch_server --model-path zai-org/GLM-5-NVFP4 --tp 8 "
    "--quantization modelopt_fp4 --attention-backend triton --sampling-backend pytorch "
    "--kv-cache-dtype fp8_e4m3 --mem-fraction-static 0.88"
)
SRT = "/opt/venv/lib/python3.12/site-packages/sglang/srt"
NSA_ASSERT = f"""\
[2026-03-04 09:12:44 TP2] Scheduler hit an exception: Traceback (most recent call last):
  File "{SRT}/layers/attention/triton_backend.py", line 1033, in forward_decode
    forward_batch.token_to_kv_pool.set_kv_buffer(
  File "{SRT}/mem_cache/memory_pool.py", line 1510, in set_kv_buffer
    assert not self.nsa_kv_cache_store_fp8
AssertionError
"""
GRAPH_OOM = "torch.OutOfMemoryError: CUDA out of memory while capturing CUDA graphs\n"


def setup_django(database: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ.setdefault("DEBUG", "True")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    os.environ.pop("CELERY_BROKER_URL", None)
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def load(folder: Path) -> None:
    """A fresh knowledge base of the folder's write-ups, every draft published."""
    from django.core.management import call_command

    from kb.models import Finding, KnowledgeRevision

    with contextlib.redirect_stdout(io.StringIO()):
        call_command("flush", "--noinput")
        call_command("load_vocabulary")
        call_command("ingest", str(folder))
    Finding.objects.filter(status=Finding.Status.DRAFT).update(status=Finding.Status.PUBLISHED)
    KnowledgeRevision.bump()


def checks(plain: bool) -> dict[str, bool]:
    from decisiontree.context import build_context
    from decisiontree.diagnose import diagnose
    from kb.services.diagnosis import knowledge_graph

    graph = knowledge_graph()
    nsa = diagnose(
        NSA_ASSERT, build_context(launch_command=TRITON_LAUNCH, gpu=BLACKWELL), graph, plain=plain
    )
    oom = diagnose(GRAPH_OOM, build_context(gpu=BLACKWELL), graph, plain=plain)
    first = " ".join(nsa.fixes[0].command_changes) if nsa.fixes else ""
    useless = [" ".join(entry.command_changes) for entry in nsa.not_helpful]
    return {
        "nsa: KV dtype or sparse backend first": "--kv-cache-dtype" in first
        or "decode-backend" in first,
        "nsa: triton known not to help": any("--attention-backend triton" in u for u in useless),
        "nsa: no --mem-fraction-static fix": not any(
            "mem-fraction-static" in " ".join(f.command_changes) for f in nsa.fixes
        ),
        "oom: --mem-fraction-static first": bool(oom.fixes)
        and "mem-fraction-static" in " ".join(oom.fixes[0].command_changes),
    }


def main() -> None:
    folders = [Path(arg) for arg in sys.argv[1:]] or [RETELLING, SEEDS]
    with tempfile.TemporaryDirectory(prefix="seed-expectations-") as scratch:
        setup_django(Path(scratch) / "kb.sqlite3")
        from django.core.management import call_command

        with contextlib.redirect_stdout(io.StringIO()):
            call_command("migrate", "--noinput")
        for folder in folders:
            if not folder.is_dir():
                print(f"{folder}: not found, left out")
                continue
            load(folder)
            print(f"{folder}:")
            for name, plain in (("plain ranking", True), ("graph walk", False)):
                found = checks(plain)
                passed = sum(found.values())
                missed = ", ".join(k for k, ok in found.items() if not ok) or "none"
                print(f"  {name:<14} {passed}/{len(found)} met; missed: {missed}")


if __name__ == "__main__":
    main()
