"""FINDINGS.md entries become findings: every field, synonym, order, and the forgiving parts."""

from pathlib import Path

import pytest

from decisiontree.documents import extract_document
from decisiontree.records import Change, ChangeAction, Condition, Outcome
from tests.decisiontree.conftest import shared_by_the_module

FIXTURES = Path(__file__).parent / "fixtures" / "documents"


@pytest.fixture(scope=shared_by_the_module)
def sample():
    return extract_document((FIXTURES / "findings_sample.md").read_text(), "FINDINGS.md")


def entry(document, title_start):
    return next(f for f in document.findings if f.title.startswith(title_start))


def test_it_recognises_the_format_and_the_file_title(sample):
    assert sample.format == "findings_md"
    assert sample.title == "Research log: serving notes"
    assert [f.title for f in sample.findings] == [
        "Decode crashes with FP8 KV cache on SM120 (flashmla_kv)",  # trailing ## dropped
        "oom at cuda graph capture",
        "Runbook: GLM-5 on RTX PRO 6000",
        "FP8 to BF16 cast dominates decode",
    ]


def test_it_reads_hardware_model_and_framework(sample):
    crash = entry(sample, "Decode crashes")
    assert [(g.name, g.arch, g.count) for g in crash.gpus] == [
        ("NVIDIA RTX PRO 6000 Blackwell Server Edition", "sm_120", 8)
    ]
    assert (crash.model, crash.model_arch, crash.quantization) == (
        "GLM-5-NVFP4",
        "glm_moe_dsa",
        "nvfp4",
    )
    assert (crash.framework, crash.framework_version) == ("sglang", "0.5.9")
    assert dict(crash.versions) == {"transformers": "5.2.0", "flashinfer": "0.6.3"}


def test_it_reads_flags_across_continuation_lines(sample):
    crash = entry(sample, "Decode crashes")
    assert dict(crash.flags) == {
        "tp-size": "8",
        "quantization": "modelopt_fp4",
        "kv-cache-dtype": "fp8_e4m3",
        "attention-backend": "flashinfer",  # on the indented continuation line
    }


def test_it_turns_fixes_into_canonical_changes_with_outcomes(sample):
    fixes = {(f.changes, f.outcome) for f in entry(sample, "Decode crashes").fixes}
    resolves = (
        Change(ChangeAction.SET_FLAG, "kv-cache-dtype", "bf16"),
        Change(
            ChangeAction.SET_FLAG, "dsa-decode-backend", "trtllm"
        ),  # 0.5.9 spelling, newest name
    )
    assert (resolves, Outcome.RESOLVES) in fixes
    assert (
        (Change(ChangeAction.SET_FLAG, "attention-backend", "triton"),),
        Outcome.NO_EFFECT,
    ) in fixes
    assert (
        (Change(ChangeAction.SET_FLAG, "disable-cuda-graph"),),
        Outcome.NO_EFFECT,
    ) in fixes  # "Tried:"
    assert ((Change(ChangeAction.REMOVE_FLAG, "kv-cache-dtype"),), Outcome.NO_EFFECT) in fixes
    assert ((Change(ChangeAction.SET_FLAG, "mem-fraction-static", "0.95"),), Outcome.WORSE) in fixes


def test_it_reads_env_pin_and_bracketed_outcome_overrides(sample):
    cast = entry(sample, "FP8 to BF16")
    assert [f.changes for f in cast.fixes] == [
        (Change(ChangeAction.SET_ENV, "SGLANG_NSA_GATHER_THEN_CAST", "1"),),
        (Change(ChangeAction.PIN_VERSION, "flashinfer-python", "0.6.4"),),
    ]
    oom = entry(sample, "oom at")
    assert [(f.changes, f.outcome) for f in oom.fixes] == [
        ((Change(ChangeAction.SET_FLAG, "mem-fraction-static", "0.88"),), Outcome.PARTIAL)
    ]


def test_it_reads_when_conditions_with_comma_or_semicolon(sample):
    assert entry(sample, "Decode crashes").conditions == (
        Condition("gpu.arch", "sm_120"),
        Condition("flag.kv-cache-dtype", "fp8_e4m3"),
        Condition("model.arch", "glm_moe_dsa"),
    )


def test_it_understands_condition_shorthand_and_negation(sample):
    assert entry(sample, "oom at").conditions == (
        Condition("gpu.arch", "sm_120"),
        Condition("flag.mem-fraction-static", "0.95"),
        Condition("framework", "vllm", negate=True),
    )


def test_it_reads_lower_case_star_bullets_and_synonyms(sample):
    oom = entry(sample, "oom at")
    assert oom.status == "workaround"  # "Workaround" in any case
    assert oom.cause == "mem fraction leaves no room for graph buffers"  # "root cause:"
    assert oom.gpus[0].count == 8  # "GPUs: 8 x RTX PRO 6000"
    assert oom.samples == (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB",
    )


def test_it_keeps_fenced_error_samples_verbatim_and_prose_in_the_body(sample):
    crash = entry(sample, "Decode crashes")
    assert crash.samples == (
        "/pytorch/aten/src/ATen/native/cuda/TensorCompare.cu:112: _assert_async_cuda_kernel: "
        "block: [0,0,0], thread: [0,0,0] Assertion `probability tensor contains either `inf`, "
        "`nan` or element < 0` failed.\nRuntimeError: CUDA error: device-side assert triggered",
    )
    assert "Free prose about the crash." in crash.body
    assert "### A sub-heading that stays in the body" in crash.body


def test_a_fenced_block_is_one_sample_not_also_its_first_lines():
    """The body keeps its blocks; reading its prose for tracebacks must not find a block's
    opening lines again as a second, shorter sample (a generic first line alone matches
    nothing, and stood for the entry)."""
    text = (
        "# Findings\n\n## NCCL cannot make its shared memory segment\n- Kind: crash\n"
        "- Cause: /dev/shm is small\n- Fix: --shm-size 8g [proposed]\n\n"
        "```\ntorch.distributed.DistBackendError: NCCL error in: ProcessGroupNCCL.cpp:3356, "
        "unhandled system error\nLast error:\nError while creating shared memory segment "
        "/dev/shm/nccl-x (size 9637888)\n```\n\n"
        "Seen again in prose:\n\n"
        "RuntimeError: CUDA error: an illegal memory access was encountered\n"
    )
    [finding] = extract_document(text, "FINDINGS.md").findings
    assert len(finding.samples) == 2
    assert finding.samples[0].endswith("(size 9637888)")
    assert (
        finding.samples[1] == "RuntimeError: CUDA error: an illegal memory access was encountered"
    )


def test_a_fenced_python_warning_alone_is_a_sample_and_a_log_that_passes_one_is_not():
    """PyTorch warns that the GPU is not in its build before any kernel fails: the warning
    is what a user pastes first. A start-up log that prints a deprecation notice on its
    way, and a block of settings, stay out of the samples."""
    warning = (
        "/opt/venv/lib/python3.11/site-packages/torch/cuda/__init__.py:287: UserWarning:\n"
        "NVIDIA B200 with CUDA capability sm_100 is not compatible with the current PyTorch "
        "installation.\n\n  warnings.warn("
    )
    start_up = (
        "INFO 12-01 10:00:01 [__init__.py:216] Automatically detected platform cuda.\n"
        "/opt/venv/lib/python3.11/site-packages/transformers/utils/hub.py:105: FutureWarning: "
        "Using `TRANSFORMERS_CACHE` is deprecated\n"
        "INFO 12-01 10:00:09 [api_server.py:1024] Starting vLLM API server on http://0.0.0.0:8000"
    )
    text = (
        "# Findings\n\n## PyTorch has no kernels for the GPU\n- Kind: crash\n"
        "- Cause: a wheel built before the GPU\n- Fix: install the cu128 wheel [proposed]\n\n"
        f"```\n{warning}\n```\n\n```\n{start_up}\n```\n\n"
        "```\nTORCH_CUDA_ARCH_LIST=10.0\nMAX_JOBS=8\n```\n"
    )
    [finding] = extract_document(text, "FINDINGS.md").findings
    assert finding.samples == (warning,)


def test_it_keeps_unknown_fields_and_sources(sample):
    extra = entry(sample, "Decode crashes").extra
    assert extra["reviewer"] == "alice"
    assert extra["source"] == "seed incident 3\nchat log 2026-02-19"


def test_it_reads_runbook_metrics(sample):
    runbook = entry(sample, "Runbook")
    assert runbook.kind == "works"
    assert runbook.works_command.startswith("python -m sglang.launch_server")
    assert (runbook.metrics.throughput_tok_s, runbook.metrics.concurrency) == (812.0, 16)
    assert (runbook.metrics.ttft_ms, runbook.metrics.itl_ms) == (180.0, 22.0)  # 0.18 s -> ms


def test_it_infers_kinds_when_the_kind_field_is_absent(sample):
    assert entry(sample, "oom at").kind == "oom"
    cast = entry(sample, "FP8 to BF16")
    assert cast.kind == "slow"
    assert (cast.metrics.before_value, cast.metrics.after_value, cast.metrics.unit) == (
        10.4,
        13.4,
        "tok/s",
    )


def test_an_unclosed_fence_runs_to_the_end_of_the_document(sample):
    assert len(sample.findings) == 4  # the "## not a heading" inside the open ~~~ is code
    assert "## not a heading" in entry(sample, "FP8 to BF16").body


RUNAWAY_BLOCK = """# Findings

## vLLM refuses FlashMLA on sm_120
- Framework: vllm 0.11.0
- Flags: --gpu-memory-utilization ninety --kv-cache-dtype fp9
- Fix: --attention-backend TRITON_MLA

```
ValueError: Selected backend FLASHMLA is not valid for this configuration.

## Port 30000 already in use
- Kind: crash
- Fix: --port 30001

```
OSError: [Errno 98] Address already in use
```
"""


def test_a_block_left_open_before_the_next_entry_ends_there_with_a_note():
    doc = extract_document(RUNAWAY_BLOCK, "FINDINGS.md")

    assert [f.title for f in doc.findings] == [
        "vLLM refuses FlashMLA on sm_120",
        "Port 30000 already in use",
    ]
    first, second = doc.findings
    assert first.samples == (
        "ValueError: Selected backend FLASHMLA is not valid for this configuration.",
    )
    assert second.samples == ("OSError: [Errno 98] Address already in use",)
    [note] = [p for p in doc.problems if "never closed" in p]
    assert note.startswith(
        "entry 'vLLM refuses FlashMLA on sm_120': its code block opened on line 8"
    )
    assert "before line 11 (## Port 30000 already in use)" in note


def test_a_flag_value_that_does_not_fit_the_flag_is_noted():
    doc = extract_document(RUNAWAY_BLOCK, "FINDINGS.md")

    notes = [p for p in doc.problems if p.startswith("entry 'vLLM refuses FlashMLA on sm_120': --")]
    assert any("--gpu-memory-utilization ninety: takes a number" in n for n in notes)
    assert any(n.split(": ", 1)[1].startswith("--kv-cache-dtype fp9: not one of") for n in notes)


def test_it_notes_gaps_for_the_reviewer(sample):
    assert "entry 'FP8 to BF16 cast dominates decode' has no error sample" not in sample.problems
    doc = extract_document(
        "## Mystery hang\n- Kind: hang\n- Fix: --disable-custom-all-reduce\n- Hardware: 2x H100\n"
    )
    assert "entry 'Mystery hang' has no error sample" in doc.problems


def test_it_accepts_crlf_and_derives_conditions_without_when():
    doc = extract_document((FIXTURES / "crlf.md").read_bytes().decode())
    (finding,) = doc.findings
    assert finding.kind == "hang"
    assert finding.fixes[0].changes == (Change(ChangeAction.SET_ENV, "NCCL_P2P_DISABLE", "1"),)
    assert finding.conditions == (Condition("gpu.arch", "sm_90", derived=True),)


def test_derived_conditions_include_the_launched_value_a_fix_changes():
    text = (
        "## OOM on vLLM\n"
        "- Fix: --gpu-memory-utilization 0.85\n"
        "- Launch: vllm serve meta-llama/Llama-3.1-8B-Instruct --gpu-memory-utilization 0.95\n"
        "- GPU: RTX 4090\n"
        "- Error: torch.OutOfMemoryError: CUDA out of memory.\n"
    )
    (finding,) = extract_document(text).findings
    assert finding.framework == "vllm"
    assert finding.kind == "oom"
    assert Condition("flag.gpu-memory-utilization", "0.95", derived=True) in finding.conditions
    assert Condition("gpu.arch", "sm_89", derived=True) in finding.conditions


def test_when_conditions_are_stated_and_the_hardware_line_adds_no_derived_one():
    # Where the writer says what the cause needs, where it was seen is not added: the walk
    # weighs a contradicted stated condition fully, a derived one less.
    text = (
        "## Sampler assert on Blackwell\n"
        "- Hardware: 8x B200\n"
        "- When: gpu.arch = sm_100; framework = sglang\n"
        "- Error: RuntimeError: sampler assert\n"
    )
    (finding,) = extract_document(text).findings
    assert finding.conditions == (Condition("gpu.arch", "sm_100"), Condition("framework", "sglang"))
    assert not any(condition.derived for condition in finding.conditions)

    (seen,) = extract_document(
        text.replace("- When: gpu.arch = sm_100; framework = sglang\n", "")
    ).findings
    assert seen.conditions == (Condition("gpu.arch", "sm_100", derived=True),)


def test_fields_may_come_in_any_order_with_bold_names():
    text = "## Entry\n- **Status**: open\n- **Error**: RuntimeError: boom\n"
    text += "- **Model**: Qwen/Qwen3-32B\n"
    (finding,) = extract_document(text).findings
    assert (finding.status, finding.model, finding.samples) == (
        "open",
        "Qwen/Qwen3-32B",
        ("RuntimeError: boom",),
    )


def test_unknown_flags_stay_in_the_fix_text_and_are_not_structured():
    (finding,) = extract_document("## E\n- Kind: crash\n- Fix: --frobnicate-widgets 3\n").findings
    (fix,) = finding.fixes
    assert fix.text == "--frobnicate-widgets 3"
    assert [c.action for c in fix.changes] == [ChangeAction.OTHER]
