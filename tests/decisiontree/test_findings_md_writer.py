"""Findings written back as FINDINGS.md read the same: an export loses nothing an import
keeps, and writing it twice gives the same text (a clean diff in the team's repository)."""

from __future__ import annotations

import dataclasses
from pathlib import Path

import pytest

from decisiontree.documents import default_vocabulary, parse_findings_md
from decisiontree.documents.findings_md_writer import findings_md
from decisiontree.documents.model import ExtractedFinding, ExtractedFix, GpuMention, Metrics
from decisiontree.records import Change, ChangeAction, Condition, Outcome

ROOT = Path(__file__).resolve().parents[2]
WRITTEN_BY_PEOPLE = [
    ROOT / "knowledge" / "FINDINGS.md",
    *sorted((Path(__file__).parent / "fixtures" / "documents").glob("*.md")),
]


def read(text: str) -> tuple[str, tuple[ExtractedFinding, ...]]:
    title, findings, _ = parse_findings_md(text, default_vocabulary())
    return title, findings


def differences(a: ExtractedFinding, b: ExtractedFinding, *, but: tuple[str, ...] = ()) -> dict:
    return {
        f.name: (getattr(a, f.name), getattr(b, f.name))
        for f in dataclasses.fields(a)
        if f.name not in but and getattr(a, f.name) != getattr(b, f.name)
    }


@pytest.mark.parametrize("path", WRITTEN_BY_PEOPLE, ids=lambda p: p.name)
def test_a_findings_file_reads_the_same_after_a_write(path: Path) -> None:
    title, findings = read(path.read_text())

    again_title, again = read(findings_md(findings, title))

    assert again_title == title
    assert [f.title for f in again] == [f.title for f in findings]
    assert [differences(a, b) for a, b in zip(findings, again, strict=True)] == [{}] * len(again)


SAMPLE = (
    "Traceback (most recent call last):\n"
    '  File "/srv/app/serve.py", line 12, in <module>\n'
    "    run()\n"
    "RuntimeError: CUDA error: an illegal memory access was encountered\n"
)
# A paste learned from use that quotes markdown of its own: the fence must outlast it.
FENCED_PASTE = "ValueError: draft model rejected, see ```--speculative-config``` in the docs\n"
MADE_ON_THE_WEB = ExtractedFinding(
    title="Decode  reads garbage after a  speculative draft on sm_90",
    summary="tokens turn to noise after the first accepted draft",
    kind="wrong_output",
    status="workaround",
    gpus=(GpuMention("NVIDIA H100 80GB HBM3", "sm_90", 1), GpuMention("NVIDIA L4", "sm_89", 8)),
    model="Qwen/Qwen3-32B",
    model_arch="qwen3",
    quantization="fp8",
    framework="vllm",
    framework_version="v1 engine build",
    versions={"flashinfer-python": "0.7.2", "torch": "2.11.0"},
    flags=(
        ("speculative-config", '{"model": "Qwen/Qwen3-0.6B", "num_speculative_tokens": 3}'),
        ("enforce-eager", "true"),
        ("tensor-parallel-size", "2"),
    ),
    samples=(SAMPLE, FENCED_PASTE),
    cause="the draft's KV pages are freed while the target still reads them",
    conditions=(
        Condition("gpu.arch", "sm_90"),
        Condition("flag.kv-cache-dtype", "bf16", negate=True),
        Condition("framework", "vllm", derived=True),
    ),
    fixes=(
        ExtractedFix(
            "--max-num-seqs 64",
            (Change(ChangeAction.SET_FLAG, "max-num-seqs", "64"),),
            Outcome.PARTIAL,
        ),
        ExtractedFix(
            "pin flashinfer-python==0.7.3",
            (Change(ChangeAction.PIN_VERSION, "flashinfer-python", "0.7.3"),),
            Outcome.PROPOSED,
        ),
        ExtractedFix(
            "--enforce-eager",
            (Change(ChangeAction.SET_FLAG, "enforce-eager", None),),
            Outcome.NO_EFFECT,
        ),
        ExtractedFix(
            "remove --tensor-parallel-size",
            (Change(ChangeAction.REMOVE_FLAG, "tensor-parallel-size", None),),
            Outcome.WORSE,
        ),
    ),
    metrics=Metrics(throughput_tok_s=812.5, ttft_ms=180.0, itl_ms=22.0, concurrency=16),
    body="Seen twice during the incident.\n\nThe draft model was swapped in by a config push.",
    extra={"environment": "Ubuntu 24.04, CUDA 13.0", "tags": "speculative, sm90"},
)


def test_a_finding_made_on_the_web_keeps_every_field_through_a_write() -> None:
    _, [again] = read(findings_md([MADE_ON_THE_WEB]))

    # Samples no block of the body held are added as blocks: the body now shows them.
    but = ("body", "conditions", "framework", "samples")
    assert differences(MADE_ON_THE_WEB, again, but=but) == {}
    assert again.samples == (SAMPLE.strip("\n"), FENCED_PASTE.strip("\n"))  # as a block reads
    assert again.body.startswith(MADE_ON_THE_WEB.body)
    # A derived condition is not written as stated: the reader derives it again.
    assert [c for c in again.conditions if not c.derived] == [
        c for c in MADE_ON_THE_WEB.conditions if not c.derived
    ]
    assert again.framework == "vllm" and again.framework_version == "v1 engine build"


def test_writing_what_was_read_from_a_write_gives_the_same_text() -> None:
    first = findings_md([MADE_ON_THE_WEB], "Team findings")

    assert findings_md(read(first)[1], "Team findings") == first


def test_a_single_line_error_with_no_block_is_written_as_the_error_field() -> None:
    finding = dataclasses.replace(
        MADE_ON_THE_WEB,
        samples=("Set NSA backends for fp8_e4m3 KV Cache: decode=flashmla_kv.",),
        body="",
    )

    text = findings_md([finding])
    _, [again] = read(text)

    assert "- Error: Set NSA backends for fp8_e4m3 KV Cache: decode=flashmla_kv." in text
    assert again.samples == finding.samples
