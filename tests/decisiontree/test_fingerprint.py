"""Signatures: the same bug on another machine matches; a different bug does not."""

import subprocess
import sys

import pytest

from decisiontree.fingerprint import (
    Signature,
    normalise_message,
    shown_error,
    signature_of,
    signatures_of,
    text_terms,
)
from decisiontree.traceback import parse
from tests.decisiontree.pastes import TRACEBACKS
from tests.decisiontree.pastes import pasted as fixture


def sign(text: str) -> Signature:
    signature = signature_of(parse(text))
    assert signature is not None
    return signature


def sign_fixture(name: str) -> Signature:
    return sign(fixture(name))


MASKED = [
    (
        "Tried to allocate 1.75 GiB. GPU 3 has a total capacity of 94.97 GiB",
        "Tried to allocate <size>. <gpu> has a total capacity of <size>",
    ),
    (
        "tensor on cuda:3 has shape torch.Size([8, 128]) not [8, 256]",
        "tensor on <gpu> has shape <shape> not <shape>",
    ),
    ("Transformers 5.2.0 with torch 2.9.1+cu128", "Transformers <ver> with torch <ver>"),
    ("No such file: '/home/u/.cache/flashinfer/120a/mla.cu'", "No such file: '<path>'"),
    ("illegal address 0x7f3b2c5a1eb8 at 2026-02-19 00:08:10", "illegal address <hex> at <ts>"),
    ("[PG ID 0 PG GUID 0(default_pg) Rank 3] watchdog timeout", "<rank> watchdog timeout"),
    ("Rank 3 scheduler is dead", "<rank> scheduler is dead"),
    (
        "request 'a3f9e1c2-77b0-4c1e-9f00-12ab34cd56ef' failed on "
        "NVIDIA RTX PRO 6000 Blackwell Server Edition",
        "request '<uuid>' failed on <gpu>",
    ),
    (
        "only supports bf16/bfloat16 or fp8_e4m3 kv_cache_dtype",
        "only supports bf16/bfloat16 or fp8_e4m3 kv_cache_dtype",
    ),
    (
        "mem_fraction_static=0.88 on model.layers.27.mlp",
        "mem_fraction_static=<num> on model.layers.<num>.mlp",
    ),
]


@pytest.mark.parametrize(("message", "normalised"), MASKED)
def test_it_masks_what_differs_between_machines(message: str, normalised: str) -> None:
    assert normalise_message(message) == normalised


def test_it_matches_a_clipped_tail_with_the_full_traceback_from_another_install() -> None:
    tail = sign_fixture("sglang_fp8_kv_assert_tail")  # ~/src checkout, line 1498
    full = sign_fixture("sglang_fp8_kv_assert_full")  # dist-packages, line 1533, TP5 prefix

    assert tail.fingerprint == full.fingerprint
    assert tail.template == "assert not self.nsa_kv_cache_store_fp8"
    assert tail.key_frames == (
        "sglang/srt/mem_cache/memory_pool.py:set_kv_buffer",
        "sglang/srt/layers/attention/triton_backend.py:forward_decode",
    )


def test_it_matches_the_same_oom_on_another_host_and_release() -> None:
    here = signatures_of(parse(fixture("oom_cuda_graph_capture")))
    there = signatures_of(parse(fixture("oom_cuda_graph_capture_other_host")))

    assert [s.fingerprint for s in here] == [s.fingerprint for s in there]
    assert here[0].template == "Capture cuda graph failed: CUDA out of memory."


def test_it_tells_an_oom_at_weight_load_from_one_at_graph_capture() -> None:
    capture = signatures_of(parse(fixture("oom_cuda_graph_capture")))
    torch_oom_at_capture = next(s for s in capture if s.exception_type == "OutOfMemoryError")
    at_load = sign_fixture("oom_weight_load")

    assert at_load.template_key == torch_oom_at_capture.template_key
    assert at_load.fingerprint != torch_oom_at_capture.fingerprint
    assert (
        at_load.key_frames[0] == "sglang/srt/layers/quantization/modelopt_quant.py:create_weights"
    )


def test_it_tells_different_assertion_errors_apart() -> None:
    fp8_pool = sign_fixture("sglang_fp8_kv_assert_full")
    fa3 = sign_fixture("fa3_requires_sm90_assert")

    assert fp8_pool.exception_type == fa3.exception_type == "AssertionError"
    assert fp8_pool.template_key != fa3.template_key
    assert fa3.template == "FlashAttention v3 Backend requires SM>=<num> and SM<=<num>."


def test_it_tells_different_cuda_errors_apart_but_not_torch_releases() -> None:
    illegal = sign_fixture("torchrun_illegal_memory_access_interleaved")
    no_image = sign_fixture("no_kernel_image")
    old_torch = sign("RuntimeError: CUDA error: an illegal memory access was encountered")

    assert illegal.exception_type == no_image.exception_type == "AcceleratorError"
    assert illegal.template_key != no_image.template_key
    assert old_torch.template_key == illegal.template_key  # RuntimeError before torch 2.8


def test_it_matches_a_one_line_assert_to_the_full_traceback_by_template() -> None:
    one_line = sign("AssertionError: assert not self.nsa_kv_cache_store_fp8")
    full = sign_fixture("sglang_fp8_kv_assert_full")

    assert one_line.template_key == full.template_key
    assert one_line.key_frames == ()


def test_it_names_the_kernel_assertion_behind_a_device_side_assert() -> None:
    signatures = signatures_of(parse(fixture("sglang_device_side_assert_8tp")))

    first = signatures[0]
    assert first.exception_type == "AcceleratorError"
    assert first.template.startswith("CUDA error: device-side assert triggered | Assertion `prob")
    assert first.key_frames[0].endswith(":process_batch_result_decode")
    assert "CUDAAssertion" in [s.exception_type for s in signatures]
    # The C++ abort repeats the Python error; wrappers like "Received sigquit" are dropped.
    types = [s.exception_type for s in signatures]
    assert types[:2] == ["AcceleratorError", "CUDAAssertion"]
    assert types.count("AcceleratorError") == 1
    assert not any("sigquit" in s.template for s in signatures)


def test_it_signs_a_kernel_assertion_pasted_alone() -> None:
    line = (
        "/pytorch/aten/src/ATen/native/cuda/IndexKernel.cu:94: operator(): block: [31,0,0], "
        "thread: [64,0,0] Assertion "
        '`-sizes[i] <= index && index < sizes[i] && "index out of bounds"` failed.'
    )
    signature = sign(line)

    assert signature.exception_type == "CUDAAssertion"
    assert "index out of bounds" in signature.template
    assert "block" not in signature.template


def test_it_puts_the_root_cause_before_build_wrappers() -> None:
    signatures = signatures_of(parse(fixture("flashinfer_jit_static_assert")))

    assert signatures[0].exception_type == "StaticAssertionFailed"
    assert signatures[0].template == (
        'static assertion failed with "DType must be 16bit floating data type"'
    )
    assert "RuntimeError" not in [s.exception_type for s in signatures]  # "Ninja build failed"


def test_it_signs_cpp_aborts_and_nccl_timeouts() -> None:
    signatures = signatures_of(parse(fixture("torchrun_nccl_watchdog_timeout")))
    types = [s.exception_type for s in signatures]

    assert types[0] == "CollectiveTimeout"
    assert "DistBackendError" in types
    assert all("<rank>" not in s.template[:7] for s in signatures)


def test_it_signs_nccl_errors_raised_as_runtime_errors_like_dist_backend_errors() -> None:
    signature = sign_fixture("nccl_unhandled_cuda_error")

    assert signature.exception_type == "DistBackendError"
    assert "ncclcomminitrank" in signature.terms


def test_it_skips_torch_and_triton_plumbing_in_key_frames() -> None:
    triton = sign_fixture("triton_out_of_resources")
    capture = sign_fixture("oom_cuda_graph_capture_other_host")

    assert triton.key_frames[0].endswith("decode_attention.py:_decode_grouped_att_m_fwd")
    assert not any("torch/" in frame for frame in capture.key_frames)


def test_it_ignores_wrapper_exceptions_when_the_root_cause_is_there() -> None:
    signatures = signatures_of(parse(fixture("vllm_no_kv_cache_memory")))

    assert signatures[0].exception_type == "ValueError"
    assert signatures[0].template == "No available memory for the cache blocks."
    assert all("Engine core initialization" not in s.template for s in signatures)


def test_a_failure_line_beside_a_plain_error_line_is_still_matched_on() -> None:
    # "Failed to ..." often only wraps a cause, so beside an exception it is dropped; a
    # plain line of no known kind beside it says no more, and may be a logger's own words.
    log = (
        "ERROR Request handler crashed\n"
        "ERROR Failed to open /dev/nvidia-uvm: Operation not permitted\n"
    )

    templates = [s.template for s in signatures_of(parse(log))]

    assert "Failed to open <path>: Operation not permitted" in templates


def test_it_keeps_specific_identifiers_whole_and_in_parts() -> None:
    terms = text_terms("nsa_kv_cache_store_fp8 assert on --kv-cache-dtype fp8_e4m3")

    assert terms[:6] == ("nsa_kv_cache_store_fp8", "nsa", "kv", "cache", "store", "fp8")
    assert {"assert", "kv-cache-dtype", "dtype", "fp8_e4m3", "e4m3"} <= set(terms)


def test_it_leaves_numbers_addresses_and_paths_out_of_terms() -> None:
    terms = text_terms(
        "Tried to allocate 1.75 GiB at 0x7f3b2c5a1eb8 in /home/alice/venv/lib/mma.cuh GPU 3 TP3"
    )

    assert "alice" not in terms and "venv" not in terms
    assert "mma" in terms
    assert not any(t.isdigit() or t.startswith("x7f") for t in terms)
    assert {"gi", "gib", "tp3"}.isdisjoint(terms)


def test_it_gives_paste_terms_to_the_first_signature() -> None:
    signature = sign_fixture("sglang_device_side_assert_8tp")

    assert {"probability", "nan", "process_batch_result_decode", "scheduler"} <= set(
        signature.terms
    )


def test_it_signs_a_bare_warning_line_but_not_noise() -> None:
    warning = sign(
        "[2026-02-19 00:19:10] WARNING server_args.py:1177: Set NSA backends for fp8_e4m3 "
        "KV Cache: prefill=flashmla_auto, decode=flashmla_kv."
    )

    assert warning.exception_type == "Warning"
    assert "flashmla_kv" in warning.terms
    assert signature_of(parse(fixture("noise_only"))) is None


@pytest.mark.parametrize(
    "name",
    sorted(p.stem for p in TRACEBACKS.glob("*.txt") if p.stem != "noise_only"),
)
def test_every_fixture_yields_a_signature(name: str) -> None:
    signature = sign_fixture(name)

    assert signature.exception_type and signature.terms
    assert len(signature.fingerprint) == 32


def test_it_gives_the_same_fingerprint_in_a_fresh_process() -> None:
    path = TRACEBACKS / "sglang_fp8_kv_assert_tail.txt"
    code = (
        "import sys; from decisiontree.traceback import parse; "
        "from decisiontree.fingerprint import signature_of; "
        f"print(signature_of(parse(open({str(path)!r}).read())).fingerprint)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert out.stdout.strip() == sign_fixture("sglang_fp8_kv_assert_tail").fingerprint


@pytest.mark.parametrize(
    ("paste", "shown"),
    [
        ("ValueError: bad rope scaling\n", "ValueError: bad rope scaling"),
        ("the upstream refused the connection\n", "the upstream refused the connection"),
        (
            'Traceback (most recent call last):\n  File "/x/vllm/worker.py", line 9, in step\n'
            "    run_model()\n",
            "traceback cut off before its error, last line: run_model()",
        ),
        (  # a Python warning pasted alone names its own category
            "/x/site-packages/torch/cuda/__init__.py:235: UserWarning: the GPU is not supported\n",
            "UserWarning: the GPU is not supported",
        ),
        (
            "WARNING 12-05 10:02:11 [config.py:38] the cache is cold\n",
            "Warning: the cache is cold",
        ),
    ],
)
def test_the_error_is_quoted_as_pasted_without_our_names_for_unnamed_errors(paste, shown):
    signature = signatures_of(parse(paste))[0]
    assert shown_error(signature.exception_type, signature.template) == shown


def test_a_message_keeps_the_name_a_path_ends_in_and_the_template_masks_it() -> None:
    """ "/bin/sh: 1: /usr/local/cuda/bin/nvcc: not found" is about nvcc: compared word by
    word, the message keeps a program's or a library's name; the template, which groups
    errors, still masks the path. Other paths (a shared-memory segment's name changes from
    run to run) stay masked."""
    [shell] = signatures_of(parse("/bin/sh: 1: /usr/local/cuda/bin/nvcc: not found\n"))
    assert shell.template == "<path>: <num>: <path>: not found"
    assert shell.message == "sh: <num>: nvcc: not found"
    [shm] = signatures_of(
        parse("Error while creating shared memory segment /dev/shm/nccl-bWrTax (size 9637888)\n")
    )
    assert shm.message == "Error while creating shared memory segment <path> (size <num>)"


@pytest.mark.parametrize(
    ("line", "shown"),
    [
        # A compiler's error is named so, whatever file and line it was met at.
        (
            '/tmp/build/csrc/attention/decode.cu(214): error: identifier "__hmul2" is undefined',
            "CompileError: error: identifier <q> is undefined",
        ),
        (
            "csrc/ops.cpp:88:10: fatal error: cuda_fp8.h: No such file or directory",
            "CompileError: fatal error: cuda_fp8.h: No such file or directory",
        ),
        ("nvcc: error: unsupported gpu architecture 'compute_120'", None),
        # A program's own "error" after its name is no compiler's: the line as printed.
        (
            "gguf_loader: error loading tensors: shape of blk.0.ffn_up is wrong",
            "gguf_loader: error loading tensors: shape of blk.<num>.ffn_up is wrong",
        ),
        ("sbatch: error: Batch job submission failed: Invalid account", None),
    ],
)
def test_only_a_compilers_error_line_is_called_a_compile_error(line: str, shown: str | None):
    signature = signatures_of(parse(line + "\n"))[0]
    said = shown_error(signature.exception_type, signature.template)
    if shown is not None:
        assert said == shown
    compiled = not line.startswith(("gguf_loader", "sbatch"))
    assert (signature.exception_type == "CompileError") is compiled


def test_a_job_steps_oom_kill_is_the_kernels_oom_kill() -> None:
    """A cgroup's "oom_kill" event (Slurm reports its job step's) is the kernel's OOM
    killer at the cgroup's limit: the same error as the kill the kernel log shows."""
    kernel = signatures_of(parse("Out of memory: Killed process 4242 (python3)\n"))[0]
    step = signatures_of(parse("slurmstepd: error: Detected 2 oom_kill events in StepId=1234.0.\n"))
    assert kernel.fingerprint in {s.fingerprint for s in step}
