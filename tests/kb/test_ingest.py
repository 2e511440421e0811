"""Ingesting documents: idempotent, edits keep history, bad input stores nothing."""

from __future__ import annotations

import json
from io import StringIO
from pathlib import Path

import pytest
from django.core.management import call_command
from django.core.management.base import CommandError
from django.utils import timezone

from decisiontree.documents import reader_scheme
from kb.models import ErrorSample, Finding, Fix, SourceDocument
from kb.services.records import store_sample

pytestmark = pytest.mark.django_db

WRITEUPS = Path(__file__).resolve().parents[1] / "fixtures" / "writeups"

ENTRY = """# Team findings

## OOM while capturing CUDA graphs on H200
- Hardware: 8x NVIDIA H200
- Model: deepseek-ai/DeepSeek-V3
- Framework: sglang 0.5.9
- Flags: --tp-size 8 --mem-fraction-static 0.95
- Cause: the static pool leaves too little room for the graph buffers
- Fix: --mem-fraction-static 0.85
- Did not help: --disable-cuda-graph
- Status: resolved

```
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 139.81 GiB of which 1.20 GiB is free.
```
"""


def ingest(*paths: Path, publish: bool = False) -> str:
    out = StringIO()
    args = [str(p) for p in paths] + (["--publish"] if publish else [])
    call_command("ingest", *args, stdout=out)
    return out.getvalue()


def test_it_publishes_findings_md_entries_with_publish(vocabulary: None, tmp_path: Path) -> None:
    path = tmp_path / "FINDINGS.md"
    path.write_text(ENTRY)
    output = ingest(path, publish=True)
    finding = Finding.objects.get()
    assert "created" in output and "1 findings created" in output
    assert finding.status == Finding.Status.PUBLISHED
    assert finding.gpus.get().arch == "sm_90"
    assert {(f.outcome, f.summary) for f in finding.fixes.all()} >= {
        ("resolves", "--mem-fraction-static 0.85"),
    }
    assert finding.flag_settings.get(name="mem-fraction-static").value == "0.95"
    assert finding.signatures.get().exception_type.endswith("OutOfMemoryError")


def test_each_new_entry_and_fix_gets_one_created_version_in_its_history(
    vocabulary: None, tmp_path: Path
) -> None:
    second = ENTRY.split("\n", 2)[2].replace("OOM while capturing", "OOM again while capturing")
    path = tmp_path / "FINDINGS.md"
    path.write_text(ENTRY + "\n" + second)
    ingest(path, publish=True)

    assert Finding.objects.count() == 2
    for finding in Finding.objects.all():
        (version,) = finding.history.all()
        assert (version.history_type, version.history_user) == ("+", None)
        assert (version.title, version.status) == (finding.title, "published")
        assert version.history_change_reason is None
        for fix in finding.fixes.all():
            (fix_version,) = fix.history.all()
            assert (fix_version.history_type, fix_version.summary) == ("+", fix.summary)


def test_it_skips_a_document_it_already_has(vocabulary: None, tmp_path: Path) -> None:
    path = tmp_path / "FINDINGS.md"
    path.write_text(ENTRY)
    ingest(path, publish=True)
    output = ingest(path, publish=True)
    assert "skipped" in output
    assert Finding.objects.count() == 1 and SourceDocument.objects.count() == 1


def test_a_document_read_by_older_code_gets_its_samples_read_again(
    vocabulary: None, tmp_path: Path
) -> None:
    path = tmp_path / "FINDINGS.md"
    path.write_text(ENTRY)
    ingest(path, publish=True)
    finding = Finding.objects.get()
    (sample,) = finding.samples.all()
    read_now = sample.text
    # What an older release left: its reader's name, a sample it read wrongly; since
    # then a reviewer retitled the finding and learned a paste for it.
    SourceDocument.objects.update(reader="older-reader")
    ErrorSample.objects.filter(pk=sample.pk).update(text="torch.OutOfMemoryError: CUDA out")
    Finding.objects.filter(pk=finding.pk).update(title="Graph capture OOM (reviewed)")
    store_sample(finding, "RuntimeError: CUDA error: out of memory", learned_at=timezone.now())

    output = ingest(path, publish=True)

    assert "read again" in output and "1 updated" in output
    finding.refresh_from_db()
    assert finding.title == "Graph capture OOM (reviewed)"
    texts = list(finding.samples.order_by("pk").values_list("text", flat=True))
    assert texts == ["RuntimeError: CUDA error: out of memory", read_now]
    assert any(s.exception_type.endswith("OutOfMemoryError") for s in finding.signatures.all())
    assert SourceDocument.objects.get().reader == reader_scheme()
    assert "skipped" in ingest(path, publish=True)


def _decode_crash_writeup(host: str, line: int) -> str:
    """An incident write-up of the FP8 KV cache assert, as one team member tells it."""
    return f"""# First decode request crashes the server on {host}

We launched GLM-5-NVFP4 with sglang 0.5.9 on {host} with `--kv-cache-dtype fp8_e4m3` and the
first decode request killed the scheduler:

```
Traceback (most recent call last):
  File "/opt/sglang/python/sglang/srt/mem_cache/memory_pool.py", line {line}, in set_kv_buffer
    assert not self.nsa_kv_cache_store_fp8
AssertionError
```

Switching to `--kv-cache-dtype bf16` fixed it.
"""


def test_a_writeup_read_again_refreshes_the_samples_it_gave_another_writeups_finding(
    vocabulary: None, tmp_path: Path
) -> None:
    first, second = tmp_path / "first.md", tmp_path / "second.md"
    first.write_text(_decode_crash_writeup("the lab box", 1498))
    second.write_text(_decode_crash_writeup("the second rack", 1502))
    ingest(first)
    assert "joined the finding of the same symptom" in ingest(second)
    finding = Finding.objects.get()
    document = SourceDocument.objects.get(path=str(second))
    given = finding.samples.get(source=document)
    read_now, token = given.text, "hf_" + "Zy9xWv8uTs7rQp6oNm5lKj4iHg3fEd2cBa"
    kept = list(finding.samples.exclude(pk=given.pk).values_list("pk", "text"))
    # What an older release left: its reader's name, and the sample as it read it, with a
    # token its scrubber did not know.
    SourceDocument.objects.filter(pk=document.pk).update(reader="older-reader")
    ErrorSample.objects.filter(pk=given.pk).update(text=f"HF_TOKEN={token}\n{read_now}")

    output = ingest(second)

    assert "read again" in output and "1 updated" in output
    texts = list(finding.samples.filter(source=document).values_list("text", flat=True))
    assert texts == [read_now]
    assert not ErrorSample.objects.filter(text__contains=token).exists()
    assert list(finding.samples.exclude(source=document).values_list("pk", "text")) == kept
    assert "skipped" in ingest(second)


def test_an_edit_after_a_reader_change_reads_the_untouched_entries_samples_again(
    vocabulary: None, tmp_path: Path
) -> None:
    second = ENTRY.split("\n", 2)[2].replace("OOM while capturing", "OOM again while capturing")
    path = tmp_path / "FINDINGS.md"
    path.write_text(ENTRY + "\n" + second)
    ingest(path, publish=True)
    untouched = Finding.objects.get(title__startswith="OOM while")
    read_now = untouched.samples.get().text
    SourceDocument.objects.update(reader="older-reader")
    untouched.samples.update(text="torch.OutOfMemoryError: CUDA out")

    path.write_text(ENTRY + "\n" + second.replace("0.85", "0.80"))
    output = ingest(path, publish=True)

    assert "2 updated" in output
    assert untouched.samples.get().text == read_now
    edited = Finding.objects.get(title__startswith="OOM again")
    assert edited.fixes.filter(summary="--mem-fraction-static 0.80").exists()


def test_an_edited_document_updates_its_finding_and_keeps_history(
    vocabulary: None, tmp_path: Path
) -> None:
    path = tmp_path / "FINDINGS.md"
    path.write_text(ENTRY)
    ingest(path, publish=True)
    path.write_text(ENTRY.replace("--mem-fraction-static 0.85", "--mem-fraction-static 0.80"))
    output = ingest(path, publish=True)

    finding = Finding.objects.get()
    assert "updated" in output
    assert SourceDocument.objects.count() == 1
    assert finding.fixes.filter(summary="--mem-fraction-static 0.80").exists()
    assert finding.history.count() >= 1
    assert Fix.history.filter(summary="--mem-fraction-static 0.85").exists()


def test_writeups_land_as_drafts_even_with_publish(vocabulary: None) -> None:
    writeups = sorted(p for p in WRITEUPS.iterdir() if p.suffix in (".md", ".txt"))
    assert writeups, "fixture write-ups are missing"
    ingest(*writeups, publish=True)
    # Each write-up is the source of a draft (two of the same symptom may share one).
    for path in writeups:
        document = SourceDocument.objects.get(path=str(path))
        assert document.findings.filter(status=Finding.Status.DRAFT).exists(), path.name
    assert not Finding.objects.filter(status=Finding.Status.PUBLISHED).exists()


@pytest.mark.parametrize("expected_path", sorted(WRITEUPS.glob("*.expected.json")), ids=str)
def test_it_extracts_what_a_reviewer_expects_from_a_writeup(
    vocabulary: None, expected_path: Path
) -> None:
    expected = json.loads(expected_path.read_text())
    source = next(
        p
        for p in WRITEUPS.iterdir()
        if p.name.startswith(expected_path.name.removesuffix(".expected.json") + ".")
        and not p.name.endswith(".json")
    )
    ingest(source)
    finding = Finding.objects.get(origin__path=str(source))
    arches = {g.arch for g in finding.gpus.all()}
    assert arches == {g["arch"] for g in expected["gpus"]}
    flags = dict(finding.flag_settings.values_list("name", "value"))
    for name, value in expected["flags"].items():
        assert flags.get(name) == value, name
    outcomes = {f.outcome for f in finding.fixes.all()}
    assert {f["outcome"] for f in expected["fixes"]} <= outcomes
    assert finding.samples.exists()


def test_bad_documents_are_reported_by_name_and_store_nothing(
    vocabulary: None, tmp_path: Path
) -> None:
    good = tmp_path / "FINDINGS.md"
    good.write_text(ENTRY)
    binary = tmp_path / "core.log"
    binary.write_bytes(b"\x7fELF\x02\x01\x01\x00" + bytes(range(256)) * 64)
    huge = tmp_path / "huge.txt"
    huge.write_bytes(b"RuntimeError: CUDA error\n" * (50 * 1024 * 1024 // 24))
    latin = tmp_path / "cp1252.md"
    latin.write_bytes(ENTRY.replace("H200", "H200 \u2014 caf\u00e9").encode("cp1252"))

    output = ingest(good, binary, huge, latin, publish=True)

    assert f"failed   {binary}" in output
    assert f"failed   {huge}" in output
    assert "not text" in output
    assert "the limit is 5 MB" in output
    paths = set(SourceDocument.objects.values_list("path", flat=True))
    assert str(binary) not in paths and str(huge) not in paths
    assert str(good) in paths


def test_it_fails_when_no_document_could_be_ingested(vocabulary: None, tmp_path: Path) -> None:
    binary = tmp_path / "x.md"
    binary.write_bytes(b"\x00\x01\x02" * 100)
    with pytest.raises(CommandError, match="no document could be ingested"):
        ingest(binary)
    assert not SourceDocument.objects.exists()


def test_broken_markdown_still_ingests(vocabulary: None, tmp_path: Path) -> None:
    path = tmp_path / "broken.md"
    path.write_text(
        ENTRY.replace('```\n"""', "") + "\n```python\nunclosed fence <script>x</script>\n"
    )
    output = ingest(path)
    assert "created" in output
    assert Finding.objects.count() == 1


def test_an_entry_removed_from_its_document_is_retired_not_deleted(
    vocabulary: None, tmp_path: Path
) -> None:
    second = ENTRY.split("\n", 2)[2].replace("OOM while capturing", "Second OOM while capturing")
    path = tmp_path / "FINDINGS.md"
    path.write_text(ENTRY + "\n" + second)
    ingest(path, publish=True)
    assert Finding.objects.filter(status=Finding.Status.PUBLISHED).count() == 2

    path.write_text(ENTRY)
    output = ingest(path, publish=True)

    assert "1 retired" in output
    retired = Finding.objects.get(status=Finding.Status.RETIRED)
    assert retired.title.startswith("Second OOM")
    assert retired.history.count() >= 2


def test_ingested_findings_are_searchable_when_the_command_returns(
    vocabulary: None, tmp_path: Path
) -> None:
    from kb.models import SearchRefresh
    from kb.search import search

    path = tmp_path / "FINDINGS.md"
    path.write_text(ENTRY)
    ingest(path, publish=True)

    finding = Finding.objects.get()
    assert not SearchRefresh.objects.exists(), "the refreshes a bulk load queues are done"
    assert [f.pk for f in search("mem-fraction-static").findings] == [finding.pk]


def test_it_keeps_an_unvetted_environment_variable_of_a_fix_as_text_only(
    vocabulary: None, tmp_path: Path
) -> None:
    """A write-up may say someone preloaded a library; validation must never do it."""
    path = tmp_path / "FINDINGS.md"
    path.write_text(
        ENTRY.replace(
            "- Fix: --mem-fraction-static 0.85",
            "- Fix: NCCL_P2P_DISABLE=1 LD_PRELOAD=/opt/hooks/libtrace.so --mem-fraction-static 0.85",
        )
    )
    ingest(path, publish=True)
    changes = Fix.objects.get(outcome="resolves").changes
    assert {"action": "set_env", "name": "NCCL_P2P_DISABLE", "value": "1"} in changes
    preload = [c for c in changes if c["name"] == "LD_PRELOAD"]
    assert [c["action"] for c in preload] == ["other"]
    assert "not a vetted serving knob" in preload[0]["value"]


def test_each_entry_keeps_its_own_notes_for_the_reviewer(vocabulary: None, tmp_path: Path) -> None:
    """A note names its entry; the other entries' review pages do not show it (a file of
    many entries once stored every note on every finding)."""
    (tmp_path / "FINDINGS.md").write_text(
        "# Log\n\n## Odd one\n- Kind: spontaneous combustion\n- Fix: --enforce-eager\n\n"
        "```\nRuntimeError: CUDA error: misaligned address\n```\n\n"
        "## Plain one\n- Kind: crash\n- Fix: --enforce-eager\n\n"
        "```\nRuntimeError: CUDA error: an illegal instruction was encountered\n```\n"
    )

    call_command("ingest", str(tmp_path), stdout=StringIO())

    odd, plain = (Finding.objects.get(title=t) for t in ("Odd one", "Plain one"))
    assert odd.problems == [
        "entry 'Odd one': unknown kind 'spontaneous combustion', inferred instead"
    ]
    assert plain.problems == []
