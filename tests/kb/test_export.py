"""`manage.py export_findings`: the knowledge base written as FINDINGS.md moves to another
FixGraph (a trial's SQLite to the team's PostgreSQL) and answers there as it did here."""

from __future__ import annotations

import io
from pathlib import Path

import pytest
from django.contrib.auth import get_user_model
from django.contrib.auth.models import Permission
from django.core.management import CommandError, call_command
from django.test import Client

from kb.models import ErrorSample, Finding, Fix, SourceDocument
from kb.services.diagnosis import diagnose, start_finding_from_paste
from kb.services.export import export_findings

pytestmark = pytest.mark.django_db

# The starter knowledge's FP8 KV decode crash and its graph-capture OOM, as met again.
PASTES = (
    "Assertion 'probability tensor contains either inf, nan or element < 0' failed.\n"
    "CUDA error: device-side assert triggered\n",
    "Capture cuda graph failed: CUDA out of memory. Tried to allocate 1.50 GiB\n",
)
WEB_PASTE = (
    "Traceback (most recent call last):\n"
    '  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/worker/gpu_model_runner.py", '
    "line 2210, in capture_model\n"
    "    self._dummy_run(num_tokens)\n"
    "RuntimeError: CUBLAS_STATUS_NOT_SUPPORTED when calling cublasLtMatmul for fp8 on sm_89\n"
)


def answers() -> list[tuple[str, str | None]]:
    found = []
    for paste in (*PASTES, WEB_PASTE):
        result = diagnose(paste)
        found.append((result.match, result.fixes[0].summary if result.fixes else None))
    return found


def move_to_a_fresh_instance(text: str, folder: Path) -> None:
    """What a team does: the export file, ingested where nothing is stored yet."""
    (folder / "FINDINGS.md").write_text(text)
    move_to_a_fresh_instance_from(folder / "FINDINGS.md")


def move_to_a_fresh_instance_from(path: Path) -> None:
    Finding.objects.all().delete()
    SourceDocument.objects.all().delete()
    call_command("ingest", str(path), "--publish", verbosity=0, stdout=io.StringIO())


def test_the_starter_knowledge_moves_and_answers_the_same(starter_kb: None, tmp_path: Path) -> None:
    exported = export_findings()
    before = answers()
    assert before[0][0] == "known" and before[1][0] in ("known", "similar")

    move_to_a_fresh_instance(exported, tmp_path)

    assert answers() == before
    assert export_findings() == exported  # and exporting there writes the same file


def test_a_finding_made_on_the_web_moves_with_its_edited_fix(
    vocabulary: None, tmp_path: Path
) -> None:
    author = get_user_model().objects.create_user("oncall")
    draft = start_finding_from_paste(WEB_PASTE, user=author)
    draft.cause = "cuBLASLt has no FP8 matmul for Ada in this build"
    draft.status = Finding.Status.PUBLISHED
    draft.save()
    # A reviewer wrote the fix on the web: structured changes, no passage it was read from.
    Fix.objects.create(
        finding=draft,
        summary="Serve the weights in BF16",
        changes=[{"action": "set_flag", "name": "dtype", "value": "bfloat16"}],
        outcome=Fix.Outcome.RESOLVES,
    )
    assert answers()[2] == ("known", "Serve the weights in BF16")

    move_to_a_fresh_instance(export_findings(), tmp_path)

    moved = Finding.objects.get(title=draft.title)
    [fix] = moved.fixes.all()
    assert moved.cause == draft.cause
    assert fix.changes == [{"action": "set_flag", "name": "dtype", "value": "bfloat16"}]
    assert fix.outcome == Fix.Outcome.RESOLVES
    assert list(ErrorSample.objects.filter(finding=moved).values_list("text", flat=True)) == [
        WEB_PASTE.strip("\n")
    ]
    assert answers()[2][0] == "known"


def test_drafts_are_left_out_unless_asked_for(vocabulary: None) -> None:
    Finding.objects.create(title="Published one", status=Finding.Status.PUBLISHED)
    Finding.objects.create(title="A draft", status=Finding.Status.DRAFT)

    assert "## Published one" in export_findings()
    assert "## A draft" not in export_findings()
    assert "## A draft" in export_findings("drafts")
    assert export_findings("all").count("\n## ") == 2


def test_the_command_writes_the_file_whole(starter_kb: None, tmp_path: Path) -> None:
    err = io.StringIO()
    call_command("export_findings", "--output", str(tmp_path / "FINDINGS.md"), stderr=err)

    assert (tmp_path / "FINDINGS.md").read_text() == export_findings()
    count = Finding.objects.filter(status="published").count()
    assert err.getvalue().strip() == f"wrote {count} findings to {tmp_path / 'FINDINGS.md'}"
    assert [p.name for p in tmp_path.iterdir()] == ["FINDINGS.md"]


def test_the_command_names_a_folder_that_is_not_there(starter_kb: None, tmp_path: Path) -> None:
    with pytest.raises(CommandError, match="no folder .*missing"):
        call_command("export_findings", "--output", str(tmp_path / "missing" / "FINDINGS.md"))


def test_reviewers_download_it_from_the_known_issues_page(starter_kb: None) -> None:
    reviewer = get_user_model().objects.create_user("rita")
    reviewer.user_permissions.add(Permission.objects.get(codename="change_finding"))
    member = get_user_model().objects.create_user("max")
    as_reviewer, as_member, anonymous = Client(), Client(), Client()
    as_reviewer.force_login(reviewer)
    as_member.force_login(member)

    download = as_reviewer.get("/findings.md")

    assert 'href="/findings.md" download>Export as FINDINGS.md' in as_reviewer.get("/").text
    assert download.status_code == 200
    assert download["Content-Disposition"] == 'attachment; filename="FINDINGS.md"'
    assert b"".join(download.streaming_content).decode() == export_findings()
    assert "Export as FINDINGS.md" not in as_member.get("/").text
    assert as_member.get("/findings.md").status_code == 403
    assert anonymous.get("/findings.md")["Location"].startswith("/accounts/login/")


def test_a_fix_keeps_its_words_through_the_move_and_a_refused_setting_stays_words(
    vocabulary: None, tmp_path: Path
) -> None:
    (tmp_path / "in").mkdir()
    (tmp_path / "in" / "FINDINGS.md").write_text(
        "# Notes\n\n## Decode dies after the driver update\n- Framework: sglang 0.5.9\n"
        "- Fix: LD_PRELOAD=/opt/fix/libcuda_shim.so --kv-cache-dtype bf16, then restart the pod\n"
        "\n```\nRuntimeError: CUDA error: unspecified launch failure\n```\n"
    )
    call_command("ingest", str(tmp_path / "in"), "--publish", verbosity=0)
    before = list(Fix.objects.values_list("passage", "changes", "outcome"))
    # LD_PRELOAD is no vetted knob: ingest kept it as words, never as something to run.
    assert any(c["action"] == "other" and "LD_PRELOAD" in c["value"] for c in before[0][1])

    exported = export_findings()
    move_to_a_fresh_instance(exported, tmp_path)

    assert "- Fix: LD_PRELOAD=/opt/fix/libcuda_shim.so --kv-cache-dtype bf16, then restart" in (
        exported
    )
    assert list(Fix.objects.values_list("passage", "changes", "outcome")) == before


def test_an_export_past_what_ingest_reads_in_one_file_goes_to_a_folder_in_parts(
    vocabulary: None, tmp_path: Path, monkeypatch: pytest.MonkeyPatch
) -> None:
    for number in range(5):
        finding = Finding.objects.create(title=f"Crash {number}", status="published")
        ErrorSample.objects.create(finding=finding, text=f"RuntimeError: crash {number}\n" * 40)
    # A limit of a few entries: the same rule as 5 MB, met with a small knowledge base.
    monkeypatch.setattr("kb.management.commands.export_findings.MAX_DOCUMENT_BYTES", 3000)
    (tmp_path / "out").mkdir()
    (tmp_path / "out" / "findings-0009.md").write_text("# an older, longer export\n")

    with pytest.raises(CommandError, match="give a folder"):
        call_command("export_findings", "--output", str(tmp_path / "one.md"))
    err = io.StringIO()
    call_command("export_findings", "--output", str(tmp_path / "out"), stderr=err)

    parts = sorted(p.name for p in (tmp_path / "out").iterdir())
    assert not (tmp_path / "one.md").exists()
    assert parts == [f"findings-{n:04d}.md" for n in range(1, len(parts) + 1)]
    assert len(parts) > 1
    assert all((tmp_path / "out" / p).stat().st_size <= 3000 for p in parts)
    assert err.getvalue().strip() == f"wrote 5 findings to {tmp_path / 'out'} ({len(parts)} files)"
    move_to_a_fresh_instance_from(tmp_path / "out")
    assert sorted(Finding.objects.values_list("title", flat=True)) == [
        f"Crash {n}" for n in range(5)
    ]
