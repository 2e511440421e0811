"""What a FINDINGS.md entry gives back, field by field, and what it implies when a field is absent.

Each test reads its own small document (no shared fixture), so every test that reads a
field is one that calls the code reading it.
"""

from __future__ import annotations

from decisiontree.documents import extract_document
from decisiontree.documents.model import GpuMention
from decisiontree.records import Condition, Outcome


def only_finding(text: str):
    document = extract_document(text, "FINDINGS.md")
    assert document.format == "findings_md"
    (finding,) = document.findings
    return finding


def test_an_entry_keeps_its_hardware_package_versions_notes_and_working_command():
    finding = only_finding(
        "## Startup takes the whole node down\n"
        "- Hardware: 4x H200\n"
        "- Framework: vllm 0.11.0; torch 2.8.0; flashinfer 0.4.1\n"
        "- Error: RuntimeError: NCCL error: unhandled system error\n"
        "- Fix: --disable-custom-all-reduce\n"
        "- Works: vllm serve acme/widget-13b -tp 4 --disable-custom-all-reduce\n"
        "\n"
        "Seen on the second rack only; the first never showed it.\n"
    )

    assert finding.gpus == (GpuMention("NVIDIA H200", "sm_90", 4),)
    assert dict(finding.versions) == {"torch": "2.8.0", "flashinfer": "0.4.1"}
    assert finding.body == "Seen on the second rack only; the first never showed it."
    assert finding.works_command == ("vllm serve acme/widget-13b -tp 4 --disable-custom-all-reduce")


def test_hardware_the_vocabulary_does_not_know_is_kept_with_its_count_and_a_note():
    document = extract_document(
        "## Kernel image missing on the lab cards\n"
        "- Hardware: 2 x Quasar Q7, Nimbus N1\n"
        "- Error: RuntimeError: no kernel image is available for execution on the device\n"
        "- Fix: upgraded torch to 2.9.0\n",
        "FINDINGS.md",
    )

    assert document.format == "findings_md"
    (finding,) = document.findings
    assert finding.gpus == (GpuMention("Quasar Q7", None, 2), GpuMention("Nimbus N1", None, 1))
    assert document.problems == (
        "entry 'Kernel image missing on the lab cards': hardware '2 x Quasar Q7' "
        "is not a GPU the vocabulary knows",
        "entry 'Kernel image missing on the lab cards': hardware 'Nimbus N1' "
        "is not a GPU the vocabulary knows",
    )


def test_an_unknown_gpu_written_with_its_architecture_keeps_that_architecture():
    document = extract_document(
        "## Illegal instruction on the engineering samples\n"
        "- Hardware: 8x Zephyr ZX (sm_120)\n"
        "- Error: RuntimeError: CUDA error: an illegal instruction was encountered\n"
        "- Fix: --attention-backend triton\n",
        "FINDINGS.md",
    )

    assert document.format == "findings_md"
    (finding,) = document.findings
    assert finding.gpus == (GpuMention("Zephyr ZX (sm_120)", "sm_120", 8),)
    assert not any("not a GPU the vocabulary knows" in note for note in document.problems)


def test_the_summary_is_the_first_paragraph_of_prose_not_a_fenced_log_above_it():
    finding = only_finding(
        "## Detokenizer dies under load\n"
        "- Framework: sglang 0.5.9\n"
        "- Fix: --detokenizer-workers 1 [partial]\n"
        "\n"
        "```\n"
        "RuntimeError: detokenizer process exited with code -9\n"
        "```\n"
        "\n"
        "At around forty parallel chats the detokenizer was killed by the kernel.\n"
    )

    assert (
        finding.summary
        == "At around forty parallel chats the detokenizer was killed by the kernel."
    )


def test_before_after_and_concurrency_fields_become_the_entrys_metrics():
    finding = only_finding(
        "## Decode got slower after the upgrade\n"
        "- Framework: sglang 0.5.9\n"
        "- Before: 2,300 tok/s\n"
        "- After: 1,450 tok/s\n"
        "- Concurrency: 48\n"
        "- Fix: --cuda-graph-max-bs 256\n"
    )

    metrics = finding.metrics
    assert (metrics.before, metrics.after) == ("2,300 tok/s", "1,450 tok/s")
    assert (metrics.before_value, metrics.after_value) == (2300.0, 1450.0)
    assert metrics.unit == "tok/s"
    assert metrics.concurrency == 48
    assert finding.kind == "slow"


def test_one_measured_figure_without_an_error_is_a_slow_entry():
    finding = only_finding(
        "## Prefill throughput far below the vendor figure\n"
        "- Framework: sglang 0.5.9\n"
        "- Before: 410 tok/s\n"
        "- Did not help: --chunked-prefill-size 8192\n"
    )

    assert finding.kind == "slow"
    assert finding.status == "open"


def test_a_headline_that_says_it_hangs_is_a_hang():
    finding = only_finding(
        "## Server hangs after the first request\n"
        "- Hardware: 2x H100\n"
        "- Fix: --disable-custom-all-reduce\n"
    )

    assert finding.kind == "hang"


def test_a_recipe_whose_notes_name_an_error_it_avoids_is_still_a_recipe():
    finding = only_finding(
        "## Runbook: serving on four H200s\n"
        "- Hardware: 4x H200\n"
        "- Works: vllm serve acme/widget-13b -tp 4 --max-model-len 32768\n"
        "\n"
        "Without the length cap it stops at start-up with\n"
        "ValueError: The model's max seq len (131072) is larger than the KV cache can hold\n"
    )

    assert finding.kind == "works"
    assert finding.status == "resolved"


def test_a_recipe_states_no_fix_yet_counts_as_resolved():
    finding = only_finding(
        "## Runbook: a small model on one H100\n"
        "- Hardware: 1x H100\n"
        "- Works: vllm serve acme/widget-13b --gpu-memory-utilization 0.85\n"
    )

    assert finding.kind == "works"
    assert finding.fixes == ()
    assert finding.status == "resolved"


def test_without_a_status_field_a_partial_fix_is_a_workaround_and_none_that_helps_is_open():
    partial = only_finding(
        "## Out of memory while capturing graphs\n"
        "- Hardware: 1x H100\n"
        "- Error: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB\n"
        "- Fix: --mem-fraction-static 0.8 [partial]\n"
    )
    unhelped = only_finding(
        "## Out of memory while capturing graphs\n"
        "- Hardware: 1x H100\n"
        "- Error: torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.50 GiB\n"
        "- Did not help: --mem-fraction-static 0.8\n"
    )

    assert [fix.outcome for fix in partial.fixes] == [Outcome.PARTIAL]
    assert partial.status == "workaround"
    assert [fix.outcome for fix in unhelped.fixes] == [Outcome.NO_EFFECT]
    assert unhelped.status == "open"


def test_stated_conditions_replace_the_ones_the_entry_would_imply():
    finding = only_finding(
        "## FP8 cache breaks decode on Hopper\n"
        "- Hardware: 8x H200\n"
        "- Framework: sglang 0.5.9\n"
        "- Flags: --kv-cache-dtype fp8_e4m3\n"
        "- When: H100; flag.kv-cache-dtype = fp8_e4m3\n"
        "- Error: RuntimeError: CUDA error: misaligned address\n"
        "- Fix: --kv-cache-dtype bf16\n"
    )

    assert finding.conditions == (
        Condition("gpu.arch", "sm_90"),
        Condition("flag.kv-cache-dtype", "fp8_e4m3"),
    )
