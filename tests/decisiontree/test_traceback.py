"""Parsing what engineers paste: prefixes, ranks, chains, device asserts, clipped output."""

import subprocess
import sys
import time

import pytest

from decisiontree.fingerprint import quoted_error, signatures_of
from decisiontree.traceback import (
    MAX_INPUT_CHARS,
    InputRejected,
    ParsedTraceback,
    holds_error,
    module_of,
    parse,
)
from tests.decisiontree.pastes import pasted as fixture


def parsed(name: str) -> ParsedTraceback:
    return parse(fixture(name))


def test_it_reads_a_tail_that_starts_inside_a_traceback() -> None:
    result = parsed("sglang_fp8_kv_assert_tail")

    (exc,) = result.exceptions
    assert exc.type == "AssertionError"
    assert exc.message == ""
    inner = exc.frames[-1]
    assert inner.module == "sglang/srt/mem_cache/memory_pool.py"
    assert (inner.lineno, inner.function) == (1498, "set_kv_buffer")
    assert inner.code == "assert not self.nsa_kv_cache_store_fp8"
    assert result.truncated  # no "Traceback (most recent call last):" header
    assert result.error_lines == (
        "Received sigquit from a child process. It usually means the child failed.",
    )


@pytest.mark.parametrize(
    ("path", "module"),
    [
        (
            "/home/x/sglang/python/sglang/srt/mem_cache/memory_pool.py",
            "sglang/srt/mem_cache/memory_pool.py",
        ),
        (
            "/usr/local/lib/python3.12/dist-packages/sglang/srt/mem_cache/memory_pool.py",
            "sglang/srt/mem_cache/memory_pool.py",
        ),
        ("/w/.venv/lib/python3.11/site-packages/vllm/v1/engine/core.py", "vllm/v1/engine/core.py"),
        ("/workspace/vllm/vllm/v1/engine/core.py", "vllm/v1/engine/core.py"),
        ("/usr/lib/python3.11/multiprocessing/process.py", "multiprocessing/process.py"),
        ("<frozen runpy>", "runpy"),
        ("<eval_with_key>.5", "<eval_with_key>"),  # torch.fx numbers each generated module
        ("/home/me/work/myproj/src/serve/engine.py", "serve/engine.py"),
        ("/srv/app/python/serve/engine.py", "serve/engine.py"),
        (".../triton_backend.py", "triton_backend.py"),
        (
            "C:\\Users\\me\\venv\\Lib\\site-packages\\torch\\nn\\modules\\module.py",
            "torch/nn/modules/module.py",
        ),
        # Windows keeps the standard library in the installation's Lib folder.
        ("C:\\Python311\\Lib\\concurrent\\futures\\process.py", "concurrent/futures/process.py"),
        (
            "/opt/py/lib/python3.10/site-packages/vllm-0.6.0-py3.10-linux-x86_64.egg/vllm/utils.py",
            "vllm/utils.py",
        ),
    ],
)
def test_it_makes_module_paths_machine_independent(path: str, module: str) -> None:
    assert module_of(path) == module


def test_it_keeps_one_exception_when_ranks_print_it_interleaved() -> None:
    result = parsed("torchrun_illegal_memory_access_interleaved")

    (exc,) = result.exceptions
    assert exc.type == "torch.AcceleratorError"
    assert exc.message.splitlines()[0] == "CUDA error: an illegal memory access was encountered"
    assert [f.function for f in exc.frames][-2:] == [
        "fused_experts_impl",
        "invoke_fused_moe_kernel",
    ]
    assert exc.frames[-1].code == "ops.moe_align_block_size("
    assert result.ranks == ("rank0", "rank1", "rank2", "rank3")
    assert not result.truncated


def test_it_follows_each_vllm_worker_separately() -> None:
    result = parsed("vllm_sampler_oom_4tp_interleaved")

    assert result.ranks == ("TP0", "TP1", "TP2", "TP3")
    worker_error, api_error = result.exceptions
    assert [f.function for f in worker_error.frames] == [
        "worker_busy_loop",
        "determine_available_memory",
        "profile_run",
        "_dummy_sampler_run",
    ]
    assert worker_error.message.startswith("CUDA out of memory occurred when warming up sampler")
    assert api_error.message.startswith("Engine core initialization failed")
    assert any("VLLM_ATTENTION_BACKEND" in w for w in result.warnings)


def test_it_prefers_the_root_cause_over_a_wrapper() -> None:
    vllm = parsed("vllm_no_kv_cache_memory")
    assert vllm.exceptions[-1].message.startswith("Engine core initialization failed")
    assert vllm.primary is not None and vllm.primary.type == "ValueError"

    sglang = parsed("sglang_fp8_kv_assert_full")
    assert sglang.primary is not None and sglang.primary.type == "AssertionError"


def test_it_collects_device_side_assertions_once_and_keeps_the_cuda_message() -> None:
    result = parsed("sglang_device_side_assert_8tp")

    assert result.kernel_assertions == (
        "Assertion `probability tensor contains either `inf`, `nan` or element < 0` failed.",
    )
    (exc,) = result.exceptions  # three ranks printed it: one exception
    assert exc.type == "torch.AcceleratorError"
    assert exc.message.splitlines()[:2] == [
        "CUDA error: device-side assert triggered",
        "CUDA kernel errors might be asynchronously reported at some other API call, "
        "so the stacktrace below might be incorrect.",
    ]
    assert "frame #0" not in exc.message
    assert result.ranks == ("TP0", "TP3", "TP6")


def test_it_keeps_warnings_that_explain_the_crash_without_prefixes() -> None:
    result = parsed("sglang_device_side_assert_8tp")

    assert result.warnings[0] == (
        "Set NSA backends for fp8_e4m3 KV Cache: prefill=flashmla_auto, decode=flashmla_kv."
    )
    assert not any("HTTP/1.1" in w or "Decode batch" in w for w in result.warnings)


def test_it_reads_chained_exceptions_in_printed_order() -> None:
    result = parsed("hf_offline_chained")

    assert [e.type for e in result.exceptions] == [
        "requests.exceptions.ConnectionError",
        "huggingface_hub.errors.LocalEntryNotFoundError",
        "OSError",
    ]
    assert result.exceptions[-1].message.count("\n") == 1  # two-line message
    assert result.exceptions[-1].frames[0].module == "runpy"


def test_it_reports_cpp_aborts_and_nccl_lines_outside_python_tracebacks() -> None:
    result = parsed("torchrun_nccl_watchdog_timeout")

    assert result.exceptions == ()
    assert (
        "terminate called after throwing an instance of 'c10::DistBackendError'"
        in result.error_lines
    )
    assert any(line.startswith("what():  [PG ID 0") for line in result.error_lines)
    # rank1 and rank3 printed the same watchdog line with other numbers: kept once.
    assert sum("Watchdog caught collective" in line[:40] for line in result.error_lines) == 1
    assert not any(line.startswith("frame #") for line in result.error_lines)


def test_it_survives_docker_prefixes_crlf_and_a_clipped_end() -> None:
    text = fixture("docker_compose_crlf_cut")
    assert "\r\n" in text
    result = parse(text)

    (exc,) = result.exceptions
    assert exc.type == ""  # the exception line never arrived
    assert exc.frames[-1].function == "flash_mla_with_kvcache"
    assert exc.frames[-1].code == ""  # "... (log truncated by docker)" is not source
    assert result.truncated


def test_it_reads_carets_repeated_frames_and_frozen_modules() -> None:
    (exc,) = parsed("recursion_frozen_runpy").exceptions

    assert exc.type == "RecursionError"
    assert [f.module for f in exc.frames[:2]] == ["runpy", "runpy"]
    assert exc.frames[-1].code == 'if node.kind == "leaf":'
    assert all("^" not in f.code and "~" not in f.code for f in exc.frames)


def test_it_reads_exception_groups() -> None:
    result = parsed("exception_group")

    assert [e.type for e in result.exceptions] == [
        "ExceptionGroup",
        "aiohttp.client_exceptions.ClientResponseError",
    ]
    assert "+-" not in result.exceptions[0].message
    assert result.primary is not None and result.primary.type.endswith("ClientResponseError")


def test_it_reads_the_host_oom_killer() -> None:
    result = parsed("host_oom_killed")

    assert "Killed" in result.error_lines
    assert any(line.startswith("Out of memory: Killed process") for line in result.error_lines)


def test_it_finds_nothing_in_healthy_server_noise() -> None:
    result = parsed("noise_only")

    assert (result.exceptions, result.error_lines, result.warnings) == ((), (), ())


@pytest.mark.parametrize(
    ("text", "exc_type", "message"),
    [
        (
            "AssertionError: assert not self.nsa_kv_cache_store_fp8",
            "AssertionError",
            "assert not self.nsa_kv_cache_store_fp8",
        ),
        (
            "RuntimeError: CUDA error: device-side assert triggered",
            "RuntimeError",
            "CUDA error: device-side assert triggered",
        ),
        (
            "ERROR 02-19 00:08:10 [core.py:12] "
            "ValueError: No available memory for the cache blocks.",
            "ValueError",
            "No available memory for the cache blocks.",
        ),
        (
            "\x1b[31mtorch.OutOfMemoryError: "
            "CUDA out of memory. Tried to allocate 20.00 MiB.\x1b[0m",
            "torch.OutOfMemoryError",
            "CUDA out of memory. Tried to allocate 20.00 MiB.",
        ),
    ],
)
def test_it_reads_one_line_pastes(text: str, exc_type: str, message: str) -> None:
    (exc,) = parse(text).exceptions

    assert (exc.type, exc.message, exc.frames) == (exc_type, message, ())


def test_it_keeps_a_bare_log_line() -> None:
    result = parse("[2026-02-19 00:08:10 TP3] NCCL WARN Cuda failure 'out of memory'")

    assert result.error_lines == ("NCCL WARN Cuda failure 'out of memory'",)
    assert result.ranks == ("TP3",)


def test_it_marks_a_paste_that_ends_mid_traceback_as_truncated() -> None:
    full = fixture("fa3_requires_sm90_assert")
    cut = full[: full.index("AssertionError:")]

    assert not parse(full).truncated
    assert parse(cut).truncated
    assert parse(cut).exceptions[0].frames[-1].function == "create_flashattention_v3_backend"


@pytest.mark.parametrize(
    "text",
    ["", "   \n\t\n", "\x00\x01\x02binary", "".join(chr(i % 31 + 1) for i in range(5000))],
)
def test_it_rejects_empty_and_binary_pastes(text: str) -> None:
    with pytest.raises(InputRejected) as rejected:
        parse(text)

    assert str(rejected.value)  # a message the user can act on


def test_it_rejects_a_50_mb_paste_before_reading_it() -> None:
    huge = "x" * 50_000_000
    start = time.perf_counter()
    with pytest.raises(InputRejected, match="limit"):
        parse(huge)

    assert time.perf_counter() - start < 10.0


def test_it_parses_a_2_mb_paste_without_hanging() -> None:
    # Hang guards, not speed targets (bench/diagnose_speed.py measures speed).
    body = fixture("sglang_device_side_assert_8tp") + fixture("vllm_no_kv_cache_memory")
    text = (body * (MAX_INPUT_CHARS // len(body)))[: MAX_INPUT_CHARS - 1]
    start = time.process_time()
    result = parse(text)

    assert time.process_time() - start < 20.0
    assert result.kernel_assertions and result.exceptions


def test_it_parses_pathological_long_lines_without_hanging() -> None:
    text = "Assertion `" * 100_000 + "\n" + "a/" * 400_000
    start = time.process_time()
    parse(text)

    assert time.process_time() - start < 20.0


def test_it_does_not_import_django() -> None:
    code = (
        "import sys, decisiontree.traceback, decisiontree.fingerprint; "
        "print('django' in sys.modules)"
    )
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)

    assert out.stdout.strip() == "False"


def test_it_reads_an_exception_line_an_issue_set_in_bold_or_code() -> None:
    text = (
        "Running `python serve.py --model ./ckpt` fails with:\n"
        "**_RuntimeError: expected all tensors to be on the same device_**\n"
    )
    (exc,) = parse(text).exceptions

    assert (exc.type, exc.message) == (
        "RuntimeError",
        "expected all tensors to be on the same device",
    )


@pytest.mark.parametrize("line", ["__init__", "**kwargs", "_private_helper_"])
def test_it_leaves_identifiers_that_look_like_emphasis_alone(line: str) -> None:
    assert parse(f"ValueError: bad {line}\n{line}").context[-1] == line


def test_it_reads_the_message_of_an_error_body_printed_over_several_lines() -> None:
    text = (
        "{\n"
        '    "object": "error",\n'
        '    "message": "Prompt has 9000 tokens, more than the 8192 this server allows.",\n'
        '    "type": "BadRequestError",\n'
        '    "code": 400\n'
        "}\n"
    )
    result = parse(text)

    # The label members ("object": "error") are data; the message is the error.
    assert result.error_lines == ("Prompt has 9000 tokens, more than the 8192 this server allows.",)


def test_it_reads_an_error_sentence_under_another_key_of_a_printed_object() -> None:
    text = '{\n  "title": "Request rejected",\n  "reason": "model failed to load: bad magic"\n}'

    assert parse(text).error_lines == ("model failed to load: bad magic",)


def test_it_reads_the_message_inside_an_error_body_printed_on_one_line() -> None:
    text = (
        "openai.BadRequestError: Error code: 400 - {'object': 'error', 'message': "
        "\"Adapter 'sql' was never loaded.\", 'type': 'BadRequestError', 'code': 400}"
    )
    result = parse(text)

    assert result.exceptions[0].type == "openai.BadRequestError"
    assert result.error_lines == ("Adapter 'sql' was never loaded.",)


@pytest.mark.parametrize(
    "body",
    [
        # FastAPI's answer to an exception: its str() with JSON's escaped line ends
        '{"detail":"CUDA error: an illegal memory access was encountered\\nCompile with '
        '`TORCH_USE_CUDA_DSA` to enable device-side assertions.\\n"}',
        # the whole traceback sent as the detail: the error is its last line
        '{"detail": "Traceback (most recent call last):\\n  File \\"/app/x.py\\", line 3, in f'
        '\\nRuntimeError: CUDA error: an illegal memory access was encountered\\n"}',
    ],
)
def test_an_error_body_is_read_as_the_string_the_server_wrote(body: str) -> None:
    # Read with its escapes, the message had "\n" and the advice after it in its template:
    # another template than the same error printed by the process itself.
    http = "HTTP/1.1 500 Internal Server Error\ncontent-type: application/json\n\n" + body
    printed = "RuntimeError: CUDA error: an illegal memory access was encountered\n"

    ours = {s.template for s in signatures_of(parse(http))}
    assert signatures_of(parse(printed))[0].template in ours
    assert not any("\\n" in template for template in ours)


def test_of_an_error_body_the_first_line_with_words_is_its_message() -> None:
    line = (
        'error: got exception: {"error":{"code":500,"message":"\\n------------\\nWhile '
        'rendering the chat template at line 12, column 3\\n------------\\n"}}'
    )
    assert parse(line).error_lines[-1] == "While rendering the chat template at line 12, column 3"


def test_an_error_quoted_as_code_in_a_sentence_is_read_as_the_error() -> None:
    said = (
        "With the fp8 checkpoint I get `ValueError: block size 128 does not divide 4000` "
        "from `load_weights` right after the shards load."
    )
    assert "ValueError: block size 128 does not divide 4000" in parse(said).error_lines


def test_a_cuda_error_quoted_as_code_ends_where_the_quote_does() -> None:
    said = (
        "Serving on an A100 I get `RuntimeError: CUDA error: an illegal memory access was "
        "encountered` from `gemm` once the batch is over 64."
    )
    printed = "RuntimeError: CUDA error: an illegal memory access was encountered\n"

    assert signatures_of(parse(said))[0].template == signatures_of(parse(printed))[0].template


def test_it_reads_the_message_of_a_traceback_whose_exception_type_was_lost() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/load.py", line 9, in <module>\n'
        "    table = native.open_table(path)\n"
        "column 7 of the table header is not a known dtype\n"
    )
    (exc,) = parse(text).exceptions

    assert (exc.type, exc.message) == ("", "column 7 of the table header is not a known dtype")
    assert exc.frames[-1].code == "table = native.open_table(path)"


def test_a_log_line_inside_a_traceback_is_not_taken_for_its_message() -> None:
    text = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/load.py", line 9, in <module>\n'
        "    table = native.open_table(path)\n"
        "INFO 03-02 10:00:01 loader.py:12] still loading shards\n"
        "KeyError: 'header'\n"
    )
    (exc,) = parse(text).exceptions

    assert (exc.type, exc.message) == ("KeyError", "'header'")


MODEL_TABLE = """\
I1203 08:15:02.500000 1 server.cc:650]
+-----------+---------+-----------------------------------------------------------+
| Model     | Version | Status                                                    |
+-----------+---------+-----------------------------------------------------------+
| embedder  | 1       | READY                                                     |
| generator | 2       | UNAVAILABLE: Invalid argument: the engine was built for    |
|           |         | 4 GPUs but the instance group asks for 2                  |
+-----------+---------+-----------------------------------------------------------+
error: creating server: Internal - failed to load all models
"""


def test_a_status_the_model_table_wraps_is_read_as_one_error() -> None:
    result = parse(MODEL_TABLE)

    assert result.error_lines == (
        "generator | 2 | UNAVAILABLE: Invalid argument: the engine was built for "
        "4 GPUs but the instance group asks for 2 |",
        "error: creating server: Internal - failed to load all models",
    )
    # A row that starts a model of its own is no continuation: it stays as printed.
    assert any(line.startswith("embedder  | 1       | READY") for line in result.context)


@pytest.mark.parametrize(
    "prefix",
    [
        pytest.param(lambda n: "triton-1  | ", id="docker-compose"),
        pytest.param(lambda n: f"2026-12-03T08:15:0{n % 10}.123456789Z ", id="kubectl-timestamps"),
        pytest.param(lambda n: f"2026-12-03 08:15:0{n % 10} | ", id="clock-and-bar"),
    ],
)
def test_a_wrapped_row_behind_a_log_prefix_is_joined_as_without_it(prefix) -> None:
    # A "<clock> | " prefix ends in a bar like the row's own border: which one a "|"
    # is, the row the wrapped cell continues tells.
    carried = "\n".join(prefix(n) + line for n, line in enumerate(MODEL_TABLE.splitlines()))

    assert parse(carried).error_lines == parse(MODEL_TABLE).error_lines


def test_a_wrapped_row_cut_off_by_the_paste_still_joins_its_row() -> None:
    rows = MODEL_TABLE.splitlines()[5:7]
    cut = rows[0] + "\n" + rows[1].rstrip(" |")  # the paste ends before the border

    assert parse(cut).error_lines == (
        "generator | 2 | UNAVAILABLE: Invalid argument: the engine was built for "
        "4 GPUs but the instance group asks for 2 |",
    )


def test_a_two_column_table_joins_its_wrapped_status_too() -> None:
    table = (
        "| Model     | Status                                        |\n"
        "| generator | UNAVAILABLE: Invalid argument: the engine was  |\n"
        "|           | built for 4 GPUs but the instance group asks 2 |\n"
    )

    assert parse(table).error_lines == (
        "generator | UNAVAILABLE: Invalid argument: the engine was "
        "built for 4 GPUs but the instance group asks 2 |",
    )


def test_a_row_with_a_blank_cell_of_its_own_still_takes_its_wrapped_rest() -> None:
    # The version is blank when a model failed before one was loaded; the row is still
    # the one its next row continues.
    blank_version = MODEL_TABLE.replace("| generator | 2       |", "| generator |         |")

    assert parse(blank_version).error_lines[0] == (
        "generator |  | UNAVAILABLE: Invalid argument: the engine was built for "
        "4 GPUs but the instance group asks for 2 |"
    )


def test_rows_that_continue_no_row_stay_apart() -> None:
    # A table whose first column is blank on every row (cut off by the selection) has
    # no row to join into: each row is its own error.
    table = (
        "|  | RuntimeError: shard 0 failed to load    |\n"
        "|  | ValueError: tokenizer config is missing |\n"
    )

    assert [error.type for error in parse(table).exceptions] == ["RuntimeError", "ValueError"]


def test_a_source_line_that_goes_on_indented_is_no_message() -> None:
    paste = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app.py", line 10, in <module>\n'
        '    engine = LLM(model="my-org/chat-8b",\n'
        "                 tensor_parallel_size=8)\n"
        "ValueError: tensor_parallel_size 8 exceeds the 4 GPUs available\n"
    )

    (raised,) = parse(paste).exceptions

    assert (raised.type, raised.message) == (
        "ValueError",
        "tensor_parallel_size 8 exceeds the 4 GPUs available",
    )


def test_a_traceback_cut_before_its_error_keeps_its_frames_to_itself() -> None:
    paste = (
        "Traceback (most recent call last):\n"
        '  File "/srv/launcher.py", line 3, in <module>\n'
        "    main()\n"
        "Traceback (most recent call last):\n"
        '  File "/srv/worker.py", line 8, in run\n'
        "    step()\n"
        "RuntimeError: worker 2 lost its GPU\n"
    )

    cut, raised = parse(paste).exceptions

    assert [frame.function for frame in cut.frames] == ["<module>"]
    assert raised.type == "RuntimeError"
    assert [frame.function for frame in raised.frames] == ["run"]


def test_a_warning_that_quotes_an_exception_is_no_exception() -> None:
    paste = "WARNING 12-01 10:00:00 utils.py:10] ValueError: falling back to eager mode\n"

    parsed = parse(paste)

    assert parsed.exceptions == ()
    assert parsed.warnings == ("ValueError: falling back to eager mode",)


def test_an_error_log_line_alone_holds_an_error() -> None:
    assert holds_error("ERROR 12-01 10:00:00 engine.py:120] Engine core failed to start\n")
    assert not holds_error("python -m sglang.launch_server --model-path my-org/chat-8b --tp 8\n")


@pytest.mark.parametrize(
    "clock", ["2026-12-06T10:00:00.1234567Z ", "2026-12-06T10:00:00.123456789Z ", "[10:00:00] "]
)
def test_one_line_copied_with_its_clock_reads_as_the_line_alone(clock: str) -> None:
    """A CI job's or `kubectl logs --timestamps` clock before the one line that was asked
    about: the line is the error, though it says neither "error" nor a level."""
    said = "the chosen tool call needs the parser to be named on the command line"

    assert signatures_of(parse(clock + said)) == signatures_of(parse(said))
    assert signatures_of(parse(said))
    # Lines a server logs with a clock and no level are its chatter, not an error.
    chatter = f"{clock}Prefill batch. #new-seq: 1\n{clock}Decode batch. #running-req: 1\n"
    assert signatures_of(parse(chatter)) == ()
    assert signatures_of(parse("INFO 12-06 10:00:00 Avg prompt throughput: 1.0 tokens/s")) == ()


def test_a_kernel_assertion_after_a_frame_printed_without_source_is_still_read() -> None:
    """Bug: a frame with no source line took the CUDA assert after it for its code, and the
    signature lost the assertion that tells one device-side assert from another."""
    text = (
        "[2026-03-02 10:09:05 TP0] Scheduler hit an exception: Traceback (most recent call last):\n"
        '  File "/usr/lib/python3/dist-packages/sglang/srt/managers/scheduler.py", line 2500, '
        "in process_batch_result_decode\n"
        "/pytorch/aten/src/ATen/native/cuda/MultinomialKernel.cu:112: Assertion "
        "'probability tensor contains either inf, nan or element < 0' failed.\n"
        "torch.AcceleratorError: CUDA error: device-side assert triggered\n"
    )

    result = parse(text)

    assert result.kernel_assertions == (
        "Assertion `probability tensor contains either inf, nan or element < 0` failed.",
    )
    (exc,) = result.exceptions
    assert exc.frames[-1].function == "process_batch_result_decode"
    assert exc.frames[-1].code in ("", None)


ENGINE_CORE_FAILED = """\
(APIServer pid=1) Traceback (most recent call last):
(APIServer pid=1)   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/engine/utils.py", line 782, in wait_for_engine_startup
(APIServer pid=1)     raise RuntimeError(
(APIServer pid=1) RuntimeError: Engine core initialization failed. See root cause above. Failed core proc(s): {}
"""
ENGINE_CORE_CAUSE = """\
(EngineCore_DP0 pid=210) ERROR 02-10 09:14:01 [core.py:708]   File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_worker.py", line 241, in determine_available_memory
(EngineCore_DP0 pid=210) ERROR 02-10 09:14:01 [core.py:708] ValueError: No available memory for the cache blocks. Try increasing `gpu_memory_utilization` when initializing the engine.
"""


def test_a_paste_that_only_says_another_process_failed_names_that_line() -> None:
    assert parse(ENGINE_CORE_FAILED).only_wrappers == (
        "RuntimeError: Engine core initialization failed. See root cause above. "
        "Failed core proc(s): {}"
    )
    assert parse("ERROR 02-10 09:14:03 [core.py:708] EngineCore failed to start.\n").only_wrappers
    # A failure that names no reason, or only a place, points at the log before it.
    assert parse("ERROR 02-10 09:14:03 [api.py:20] Failed to start the engine\n").only_wrappers
    assert parse("Failed to load model: /models/qwen-7b\n").only_wrappers
    # vLLM inspects the model in a subprocess; what went wrong there is logged before this.
    inspected = (
        "ValueError: Model architectures ['Qwen2ForCausalLM'] failed to be inspected. "
        "Please check the logs for more details.\n"
    )
    assert parse(inspected).only_wrappers == inspected.strip()


@pytest.mark.parametrize(
    "paste",
    [
        # the OpenAI client's error for a server that failed on the request
        "openai.InternalServerError: Error code: 500 - {'object': 'error', 'message': 'Internal "
        "Server Error', 'type': 'Internal Server Error', 'param': None, 'code': 500}\n",
        # requests' own wording, with the URL it called
        "requests.exceptions.HTTPError: 500 Server Error: Internal Server Error for url: "
        "http://10.0.0.5:30000/v1/chat/completions\n",
        "openai.APIStatusError: Error code: 503 - {'detail': 'Service Unavailable'}\n",
    ],
)
def test_a_client_told_only_that_the_server_failed_is_pointed_at_the_servers_log(
    paste: str,
) -> None:
    """The status says the server failed; why is in the server's log, not the client's."""
    assert parse(paste).only_wrappers


@pytest.mark.parametrize(
    "paste",
    [
        ENGINE_CORE_CAUSE + ENGINE_CORE_FAILED,  # the cause is in the paste after all
        # a server error whose body says what failed
        "openai.InternalServerError: Error code: 500 - {'object': 'error', 'message': 'CUDA "
        "error: an illegal memory access was encountered', 'type': 'InternalServerError', "
        "'param': None, 'code': 500}\n",
        "ValueError: max_tokens 502 is more than the 500 left\n",  # numbers, not statuses
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\n",
        "the upstream refused the connection\n",  # plain words, not a wrapper
        # a failure that gives its reason after the colon is the cause itself
        "Failed to initialize NVML: Driver/library version mismatch\nNVML library version: 550.90\n",
        "ERROR 02-10 09:14:03 [loader.py:88] Failed to load the tokenizer: tokenizer.json is truncated\n",
    ],
)
def test_a_paste_with_an_error_of_its_own_is_not_only_a_wrapper(paste: str) -> None:
    assert parse(paste).only_wrappers == ""


TORCHRUN_KILLED = """\
torch.distributed.elastic.multiprocessing.errors.ChildFailedError:
============================================================
serve.py FAILED
------------------------------------------------------------
Root Cause (first observed failure):
[0]:
  time      : 2026-02-10_09:14:03
  rank      : 0 (local_rank: 0)
  exitcode  : -9 (pid: 1234)
  traceback : Signal 9 (SIGKILL) received by PID 1234
============================================================
"""


@pytest.mark.parametrize(
    ("paste", "signal"),
    [
        (TORCHRUN_KILLED, "SIGKILL"),
        ("Loading safetensors checkpoint shards:  40% 4/10\nKilled\n", "SIGKILL"),
        (
            "ERROR 02-10 09:14:03 [v1/executor.py:1] Worker proc VllmWorker-1 died unexpectedly, exit code -9\n",
            "SIGKILL",
        ),
        ("Error: container vllm exited with code 137 (OOMKilled)\n", "SIGKILL"),
        ("RuntimeError: DataLoader worker (pid 123) is killed by signal: Killed.\n", "SIGKILL"),
        (
            "torch.multiprocessing.spawn.ProcessExitedException: process 0 terminated with signal SIGSEGV\n",
            "SIGSEGV",
        ),
        ("Error: container vllm exited with code 143\n", "SIGTERM"),  # 128 + 15
        (  # kubectl describe pod
            "    State:          Waiting\n      Reason:       CrashLoopBackOff\n"
            "    Last State:     Terminated\n      Reason:       OOMKilled\n"
            "      Exit Code:    137\n",
            "SIGKILL",
        ),
    ],
)
def test_a_process_killed_by_a_signal_is_told_by_the_signal(paste: str, signal: str) -> None:
    parsed = parse(paste)
    assert parsed.only_wrappers  # nothing else failed in the paste
    assert parsed.killed_by == signal


def test_a_signal_after_an_error_of_its_own_leaves_the_error_the_lead() -> None:
    parsed = parse(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB\nKilled\n"
    )
    assert (parsed.only_wrappers, parsed.killed_by) == ("", "")
    assert parse(TORCHRUN_KILLED).only_wrappers.endswith("ChildFailedError: serve.py FAILED")


def test_torchruns_failure_table_is_quoted_by_its_words_not_its_rule() -> None:
    parsed = parse(TORCHRUN_KILLED)
    signature = signatures_of(parsed)[0]
    assert quoted_error(parsed, signature.exception_type).lines == (
        "torch.distributed.elastic.multiprocessing.errors.ChildFailedError: serve.py FAILED",
    )


def test_a_question_under_an_issue_title_is_not_taken_for_its_error() -> None:
    # "change" holds "hang": read as a word inside another, the question was the error.
    text = (
        "Llama-3.1-8B on one L4: max seq len (32768) is larger than the maximum number of "
        "tokens that can be stored in KV cache (15232)\n"
        "This is vllm 0.6.1 with default settings. What should I change?\n"
    )
    result = parse(text)

    assert result.error_lines[0].startswith("Llama-3.1-8B on one L4: max seq len")


def test_a_tuning_notice_is_not_an_error_line() -> None:
    # "unable" inside "TunableOp": a start-up notice, not the failure asked about.
    text = "PyTorch TunableOp enabled for GEMMs\nworker 3 failed to answer for 20 minutes\n"

    assert parse(text).error_lines == ("worker 3 failed to answer for 20 minutes",)


@pytest.mark.parametrize(
    "line",
    ["server hangs after loading weights", "decode hang on TP=8", "pod was OOMKilled twice"],
)
def test_a_hang_or_a_kill_is_still_an_error_line(line: str) -> None:
    assert parse(f"{line}\nfrom the docs, changed nothing else\n").error_lines == (line,)
