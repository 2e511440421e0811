"""Shapes of pastes the parser must read as a user means them: a source checkout's paths,
exception groups nested deep, start-up INFO lines, a traceback left unfinished."""

from __future__ import annotations

import html
import json
from pathlib import Path

import pytest

from decisiontree import traceback
from decisiontree.context import build_context
from decisiontree.fingerprint import quoted_error, shown_error, signatures_of
from decisiontree.logline import split_prefix
from decisiontree.traceback import MAX_NOISE_IN_FRAMES, module_of, parse


def test_a_module_in_a_source_checkout_is_named_from_its_package() -> None:
    # No "src", "lib" or "python" directory to go by: the package name alone says where.
    assert module_of("/home/dev/checkouts/vllm/attention/layer.py") == "vllm/attention/layer.py"
    assert module_of("/work/co/sglang/srt/layers/x.py") == "sglang/srt/layers/x.py"


NESTED_GROUPS = """\
  + Exception Group Traceback (most recent call last):
  |   File "/app/serve.py", line 12, in main
  |     run()
  | ExceptionGroup: startup failed (1 sub-exception)
  +-+---------------- 1 ----------------
    | Exception Group Traceback (most recent call last):
    |   File "/app/serve.py", line 30, in run
    |     start()
    | ExceptionGroup: workers failed (1 sub-exception)
    +-+---------------- 1 ----------------
      | Exception Group Traceback (most recent call last):
      |   File "/app/serve.py", line 44, in start
      |     spawn()
      | ExceptionGroup: worker 0 failed (1 sub-exception)
      +-+---------------- 1 ----------------
        | Traceback (most recent call last):
        |   File "/app/worker.py", line 9, in spawn
        |     load()
        | ValueError: checkpoint shard 3 is missing
        +------------------------------------
"""


def test_the_error_at_the_bottom_of_exception_groups_nested_three_deep_is_read() -> None:
    primary = parse(NESTED_GROUPS).primary
    assert primary is not None
    assert (primary.type, primary.message) == ("ValueError", "checkpoint shard 3 is missing")
    assert [frame.function for frame in primary.frames] == ["spawn"]


def test_of_the_start_up_info_lines_only_a_choice_about_the_setup_is_kept() -> None:
    log = (
        "INFO 03-02 10:00:01 [cfg.py:10] Using 8 threads to load the tokenizer\n"
        "INFO 03-02 10:00:02 [cfg.py:11] Using FlashInfer as the attention backend\n"
    )
    assert parse(log).warnings == ("Using FlashInfer as the attention backend",)


def test_a_traceback_lost_among_other_output_is_not_given_a_later_error() -> None:
    # The traceback's last lines never arrived; much later another error is logged alone.
    chatter = "".join(
        f"INFO 03-02 10:00:{i:02d} [loader.py:5] loaded shard {i} of 40\n"
        for i in range(MAX_NOISE_IN_FRAMES + 5)
    )
    paste = (
        "Traceback (most recent call last):\n"
        '  File "/app/engine.py", line 80, in step\n'
        "    self.run_batch()\n" + chatter + "RuntimeError: health check timed out\n"
    )
    parsed = parse(paste)

    assert parsed.truncated
    assert [(e.type, [f.function for f in e.frames]) for e in parsed.exceptions] == [
        ("", ["step"]),
        ("RuntimeError", []),
    ]


def test_of_a_paste_over_the_line_budget_its_start_and_its_end_are_read(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The budget is 20,000 lines (2,000 from the start, 18,000 from the end); a small one
    # reads a small paste the same way.
    monkeypatch.setattr(traceback, "MAX_LINES", 40)
    monkeypatch.setattr(traceback, "HEAD_LINES", 4)
    monkeypatch.setattr(traceback, "TAIL_LINES", 36)
    error = [
        "Traceback (most recent call last):",
        '  File "/app/engine.py", line 80, in step',
        "    self.run_batch()",
        "ValueError: batch of 0 requests",
    ]
    lines = [f"tick {i}" for i in range(30)] + error + [f"tock {i}" for i in range(25)]

    parsed = parse("\n".join(lines))

    assert parsed.truncated
    assert parsed.primary is not None and parsed.primary.type == "ValueError"


# One traceback, as it reaches FixGraph by other roads than a terminal.
KV_ASSERT = """\
Traceback (most recent call last):
  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/mem_cache/memory_pool.py", line 1502, in set_kv_buffer
    assert not self.nsa_kv_cache_store_fp8
AssertionError"""


def _two_ranks_interleaved(prefix: str, text: str) -> str:
    """The lines of two ranks printing the same traceback, line by line in turn."""
    return "\n".join(prefix.format(rank) + line for line in text.splitlines() for rank in (0, 1))


def _docker_json_file(text: str) -> str:
    return "\n".join(
        json.dumps({"log": line + "\n", "stream": "stderr", "time": "2026-02-10T09:14:03.1Z"})
        for line in text.splitlines()
    )


def _in_pips_output(text: str) -> str:
    """As pip shows the output of a build step that failed."""
    inner = "\n".join("      " + line for line in text.splitlines())
    return (
        "  error: subprocess-exited-with-error\n\n"
        "  × python setup.py egg_info did not run successfully.\n"
        "  │ exit code: 1\n"
        f"  ╰─> [{len(text.splitlines())} lines of output]\n{inner}\n      [end of output]\n\n"
        "  note: This error originates from a subprocess, and is likely not a problem with pip.\n"
    )


@pytest.mark.parametrize(
    "carried",
    [
        pytest.param(lambda t: "\n".join("> " + line for line in t.splitlines()), id="md-quote"),
        pytest.param(lambda t: "\n".join("> > " + line for line in t.splitlines()), id="nested"),
        pytest.param(
            lambda t: "\n".join(
                "2026-02-10T09:14:03.123456789Z stderr F " + line for line in t.splitlines()
            ),
            id="kubernetes-node-log",
        ),
        pytest.param(_docker_json_file, id="docker-json-file"),
        pytest.param(
            lambda t: json.dumps({"level": "error", "ts": 1739178843.1, "msg": "x", "exc_info": t}),
            id="structured-logger",
        ),
        pytest.param(lambda t: t.replace('"/', "\u201c/").replace('py"', "py\u201d"), id="curly"),
        pytest.param(lambda t: " ".join(t.split()), id="line-breaks-lost"),
        pytest.param(lambda t: _two_ranks_interleaved("[default{}]:", t), id="torchrun-tee"),
        pytest.param(lambda t: _two_ranks_interleaved("[1,{}]<stderr>:", t), id="mpirun-tagged"),
        pytest.param(lambda t: "\n".join("    " + line for line in t.splitlines()), id="md-indent"),
        pytest.param(lambda t: "\n".join("\t" + line for line in t.splitlines()), id="tab-indent"),
        pytest.param(_in_pips_output, id="pip-build-output"),
    ],
)
def test_a_traceback_reads_the_same_however_it_was_carried(carried) -> None:
    """Quoted in an issue, collected by a node's log agent or docker, exported as JSON
    records, passed through a chat that curled its quotes or joined its lines, printed
    by every rank under a launcher's tag, indented as a Markdown code block, or shown by
    pip as a build step's output: the same error, the same fingerprint, the same frame."""
    plain = signatures_of(parse(KV_ASSERT))[0]
    found = signatures_of(parse(carried(KV_ASSERT)))[0]

    assert found.fingerprint == plain.fingerprint
    assert found.key_frames == ("sglang/srt/mem_cache/memory_pool.py:set_kv_buffer",)


ENGINE_LOG = """\
INFO 11-19 12:54:20 [core.py:93] Initializing a V1 LLM engine with config: model='m'
ERROR 11-19 12:54:26 [core.py:710] EngineCore failed to start.
ERROR 11-19 12:54:26 [core.py:710] Traceback (most recent call last):
ERROR 11-19 12:54:26 [core.py:710]   File "/usr/lib/python3/site-packages/vllm/lora/models.py", line 88, in check
ERROR 11-19 12:54:26 [core.py:710]     raise ValueError(msg)
ERROR 11-19 12:54:26 [core.py:710] ValueError: adapter rank 64 is above the server's limit of 16
"""


@pytest.mark.parametrize("margin", ["    ", "\t", "  "])
def test_a_log_quoted_whole_as_an_indented_block_reads_as_printed(margin: str) -> None:
    """Every line under one margin (a Markdown code block, a mail, a YAML value): the
    log prefixes are still prefixes, and what they carry the same error."""
    plain = signatures_of(parse(ENGINE_LOG))[0]
    quoted = "\n".join(margin + line for line in ENGINE_LOG.splitlines())

    found = signatures_of(parse(quoted))[0]

    assert (found.exception_type, found.fingerprint) == ("ValueError", plain.fingerprint)


def test_an_indented_error_line_alone_is_read_as_the_exception() -> None:
    (exc,) = parse("    KeyError: 'lm_head.weight'\n").exceptions

    assert (exc.type, exc.message) == ("KeyError", "'lm_head.weight'")


def test_a_json_error_body_is_read_as_the_server_sent_it() -> None:
    """An HTTP error body has a "message" but is no log record: it is not replaced by it."""
    body = '{"object":"error","message":"The input (9000 tokens) is too long.","code":400}'
    assert parse(body).error_lines[0] == body


def test_a_structured_loggers_level_marks_its_message_as_an_error_line() -> None:
    record = json.dumps({"level": "error", "ts": "2026-02-10T09:14:03Z", "msg": "NCCL timeout"})
    assert "NCCL timeout" in parse(record).error_lines


def _cut_at(width: int, text: str) -> str:
    """As a terminal's copy shows long lines: cut at its width."""
    lines = text.splitlines()
    return "\n".join(ln[at : at + width] for ln in lines for at in range(0, len(ln) or 1, width))


def test_a_log_copied_from_a_narrow_terminal_reads_as_printed() -> None:
    plain = parse(ENGINE_LOG)

    cut = parse(_cut_at(72, ENGINE_LOG))

    assert cut.primary == plain.primary
    assert cut.primary is not None
    assert cut.primary.message == "adapter rank 64 is above the server's limit of 16"


def test_a_message_cut_where_its_words_meet_is_joined_as_printed() -> None:
    # A terminal 91 columns wide cut each line on the space between two words: the first
    # after the space, the second before it. No cut falls inside a word; the width tells.
    prefix = "ERROR 12-07 01:00:05 [core.py:700] "
    first = ("ValueError: adapter rank 64 is above the server's limit ", "of 16")
    second = ("RuntimeError: Worker failed with error 'rank 64 is above", " the limit'")
    cut = [prefix + first[0], first[1], prefix + second[0], second[1]]
    assert len(cut[0]) == len(cut[2]) == 91

    raised = parse("\n".join(cut)).exceptions

    assert [f"{exc.type}: {exc.message}" for exc in raised] == ["".join(first), "".join(second)]


def test_lines_of_one_length_that_were_not_cut_are_not_joined() -> None:
    # One line per model, all of one length and the paste's longest, each ending in a
    # word; the next starts with a log prefix of its own, so none of them was cut.
    said = "failed to load model {}: the engine file is not readable by this user"
    models = ("alpha", "delta", "gamma", "omega")
    log = "\n".join("E1203 08:15:02.5 1 model.cc:650] " + said.format(m) for m in models)

    assert parse(log).error_lines == tuple(said.format(m) for m in models)


def _grepped(text: str) -> str:
    """As `grep -n -B2 -A40 EngineCore logs/*.log` shows it: the file's name and the
    line's number before each line, ":" on a matching line, "-" on a line of context."""
    lines = text.splitlines()
    return "\n".join(
        f"logs/engine.log{sep}{n + 40}{sep}{line}"
        for n, line in enumerate(lines)
        for sep in [":" if "EngineCore" in line else "-"]
    )


def test_a_log_grepped_with_its_file_name_reads_as_the_log() -> None:
    plain = signatures_of(parse(ENGINE_LOG))[0]

    found = signatures_of(parse(_grepped(ENGINE_LOG)))[0]

    assert (found.exception_type, found.fingerprint) == ("ValueError", plain.fingerprint)


def test_a_compilers_place_in_a_source_file_is_not_taken_for_greps_file_name() -> None:
    errors = (
        "csrc/attention.cpp:12:3: error: 'fp8_e4m3' is not a member of 'at'\n"
        "csrc/attention.cpp:40:7: error: 'fp8_t' was not declared in this scope\n"
    )

    assert [line[:25] for line in parse(errors).error_lines] == [
        "csrc/attention.cpp:12:3: ",
        "csrc/attention.cpp:40:7: ",
    ]


def test_a_traceback_shown_newest_first_reads_in_the_order_printed() -> None:
    plain = signatures_of(parse(ENGINE_LOG))[0]
    newest_first = "\n".join(reversed(ENGINE_LOG.splitlines()))

    found = signatures_of(parse(newest_first))[0]

    assert (found.exception_type, found.fingerprint) == ("ValueError", plain.fingerprint)


COLLECT_ENV = (Path(__file__).parent / "fixtures" / "env" / "vllm_collect_env_h100.txt").read_text()


@pytest.mark.parametrize(
    "form",
    [
        pytest.param("{env}\n{log}", id="pasted-one-after-the-other"),
        pytest.param("```text\n{env}```\n\nThen this:\n```\n{log}```\n", id="bug-form"),
    ],
)
def test_an_environment_report_beside_the_error_tells_the_setup_not_the_error(form: str) -> None:
    """`collect_env`'s "cuDNN version : Could not collect" reports the setup: no error line,
    and its package list lends the paste no words; the context still reads it."""
    pasted = form.format(env=COLLECT_ENV, log=ENGINE_LOG)

    parsed = parse(pasted)
    found = signatures_of(parsed)[0]

    assert parsed.error_lines == parse(ENGINE_LOG).error_lines
    assert found.fingerprint == signatures_of(parse(ENGINE_LOG))[0].fingerprint
    assert not {"cudnn", "clang", "conda", "pyzmq", "xnnpack"} & {
        *found.terms,
        *found.context_terms,
    }
    assert build_context(pasted).versions["vllm"] == "0.11.0"


def test_a_records_one_line_error_is_an_error_line_at_the_records_level() -> None:
    # Go's zap and its kin log the error in a key of its own beside the message.
    record = json.dumps(
        {
            "level": "error",
            "ts": "2026-12-03T08:15:02Z",
            "msg": "request rejected",
            "error": "the prompt's 9000 tokens are more than the 8192 the model takes",
        }
    )

    assert parse(record).error_lines == (
        "request rejected",
        "the prompt's 9000 tokens are more than the 8192 the model takes",
    )


NOTEBOOK = """\
---------------------------------------------------------------------------
AssertionError                            Traceback (most recent call last)
Cell In[4], line 3
      1 from vllm import LLM
----> 3 llm = LLM(model="Qwen/Qwen2.5-7B-Instruct", gpu_memory_utilization=0.9)

File /opt/conda/lib/python3.11/site-packages/vllm/entrypoints/llm.py:243, in LLM.__init__(self, model, **kwargs)
    240 engine_args = EngineArgs(model=model, **kwargs)
--> 243 self.llm_engine = LLMEngine.from_engine_args(engine_args)

File /opt/conda/lib/python3.11/site-packages/vllm/worker/worker.py:229, in Worker.determine_num_available_blocks(self)
    227 peak_memory = self.init_gpu_memory - free_gpu_memory
--> 229 assert self.init_gpu_memory - free_gpu_memory > 0, (
    230     "Error in memory profiling. "

AssertionError: Error in memory profiling. Initial free memory 20516634624, current free memory 22100000768.
"""
SCRIPT = """\
Traceback (most recent call last):
  File "/home/me/serve.py", line 3, in <module>
    llm = LLM(model="Qwen/Qwen2.5-7B-Instruct")
  File "/usr/lib/python3.11/site-packages/vllm/entrypoints/llm.py", line 243, in __init__
    self.llm_engine = LLMEngine.from_engine_args(engine_args)
  File "/usr/lib/python3.11/site-packages/vllm/worker/worker.py", line 229, in determine_num_available_blocks
    assert self.init_gpu_memory - free_gpu_memory > 0, (
AssertionError: Error in memory profiling. Initial free memory 30516634624, current free memory 32100000768.
"""


def test_a_notebooks_traceback_is_the_same_error_as_a_scripts() -> None:
    """IPython prints frames as "File path:line, in Class.method(args)" with numbered
    source lines around the one that ran: read as Python's own frames."""
    (exc,) = parse(NOTEBOOK).exceptions
    assert [(f.module, f.function) for f in exc.frames] == [
        ("vllm/entrypoints/llm.py", "__init__"),
        ("vllm/worker/worker.py", "determine_num_available_blocks"),
    ]
    assert exc.frames[-1].code == "assert self.init_gpu_memory - free_gpu_memory > 0, ("
    assert signatures_of(parse(NOTEBOOK))[0].fingerprint == (
        signatures_of(parse(SCRIPT))[0].fingerprint
    )


@pytest.mark.parametrize(
    "escaped",
    [
        pytest.param(
            lambda t: "ERROR:root:request failed: " + json.dumps({"detail": t}), id="json"
        ),
        pytest.param(lambda t: f"worker error: RuntimeError({t!r})", id="repr"),
    ],
)
def test_a_traceback_escaped_into_one_line_is_read_as_its_lines(escaped) -> None:
    """A JSON error body's "detail" or a logged repr() writes a traceback's newlines as
    two characters: the same error as the traceback printed."""
    plain = signatures_of(parse(SCRIPT))[0]
    found = signatures_of(parse(escaped(SCRIPT)))[0]

    assert found.fingerprint == plain.fingerprint
    assert found.key_frames == plain.key_frames


def test_a_scripts_code_line_that_starts_with_a_number_stays_its_code() -> None:
    """Numbered lines are IPython's source listing only under IPython's frames."""
    script = 'Traceback (most recent call last):\n  File "x.py", line 1, in <module>\n    1 / 0\nZeroDivisionError: division by zero\n'
    (exc,) = parse(script).exceptions
    assert exc.frames[0].code == "1 / 0"


@pytest.mark.parametrize(
    "panic",
    [
        # Rust 1.73 and later: the message on the line after the place.
        "thread 'tokio-runtime-worker' panicked at src/policies/cache_aware.rs:212:31:\n"
        "attempt to subtract with overflow\n",
        # Before: the message quoted on the same line.
        "thread 'tokio-runtime-worker' panicked at 'attempt to subtract with overflow', "
        "src/policies/cache_aware.rs:198:9\n",
    ],
)
def test_a_rust_panic_of_sglangs_router_is_read_as_an_error_with_its_place(panic: str) -> None:
    log = "2026-02-10T09:14:03.123Z  INFO sgl_model_gateway::server: listening on 0.0.0.0:30000\n"
    parsed = parse(log + panic + "note: run with `RUST_BACKTRACE=1` environment variable\n")

    (exc,) = parsed.exceptions
    # The runtime's hint on the line below is not part of what panicked.
    assert (exc.message, exc.frames[0].module) == (
        "attempt to subtract with overflow",
        "policies/cache_aware.rs",
    )
    signature = signatures_of(parsed)[0]
    assert quoted_error(parsed, signature.exception_type).lines == (
        "Rust panic: attempt to subtract with overflow",
    )


# What a chat front end written for Node prints when the server answers 400: the line of
# Node's own code that rethrew, its marker, the client's error, then the client's calls.
NODE_CLIENT_ERROR = """\
node:internal/process/promises:391
    triggerUncaughtException(err, true /* fromPromise */);
    ^

Error: 400 {message}
    at APIError.generate (/srv/chat/node_modules/openai/error.js:45:20)
    at OpenAI.makeStatusError (/srv/chat/node_modules/openai/core.js:275:33)
    at OpenAI.makeRequest (/srv/chat/node_modules/openai/core.js:318:30)
    at process.processTicksAndRejections (node:internal/process/task_queues:95:5)
    at async Promise.all (index 0)
    at async main (file:///srv/chat/index.mjs:12:3)
"""


@pytest.mark.parametrize(
    "message",
    ["the prompt is longer than the context of the server", "the model does not exist"],
)
def test_a_node_clients_calls_and_rethrowing_line_are_not_errors(message: str) -> None:
    """Names like `makeStatusError` and `triggerUncaughtException` are code; were they read
    as error lines, two different errors from one client would share them and match."""
    parsed = parse(NODE_CLIENT_ERROR.format(message=message))

    assert parsed.error_lines == (f"Error: 400 {message}",)
    assert [s.template.rstrip(".") for s in signatures_of(parsed)] == [f"Error: <num> {message}"]


RUST_BACKTRACE = """\
thread 'main' panicked at router/src/main.rs:412:10:
called `Result::unwrap()` on an `Err` value: Os {{ code: 98, kind: AddrInUse }}
stack backtrace:
   0: rust_begin_unwind
             at /rustc/90b35a6239c3d8bd/library/std/src/panicking.rs:665:5
   2: core::result::unwrap_failed
             at /rustc/90b35a6239c3d8bd/library/core/src/result.rs:1700:5
   3: <alloc::boxed::Box<F,A> as core::ops::function::FnOnce<Args>>::call_once
   4:     0x55d1c3a1f2b0 - text_generation_router::server::run::{{{{closure}}}}
             at ./router/src/server.rs:1800:10
note: Some details are omitted, run with `RUST_BACKTRACE=full` for a verbose backtrace.
{after}"""

JVM_STACK = """\
Exception in thread "main" java.lang.IllegalStateException: model server answered 503
\tat ai.example.client.InferenceClient.failOn(InferenceClient.java:88)
\tat ai.example.client.InferenceClient.invoke(InferenceClient.java:42)
\tat ai.example.pytorch.jni.Library.loadModule(Native Method)
\t... 3 more
"""


def test_a_rust_or_jvm_stacks_calls_are_not_errors_of_their_own() -> None:
    """RUST_BACKTRACE's "2: core::result::unwrap_failed" and a JVM call named `failOn`
    are where the error went, not more errors."""
    rust = parse(RUST_BACKTRACE.format(after=""))
    assert [s.exception_type for s in signatures_of(rust)] == ["RustPanic"]
    assert rust.error_lines == ()
    # A numbered line that says what failed in words is still read.
    said = parse(RUST_BACKTRACE.format(after="  3: std::runtime_error: CUDA out of memory\n"))
    assert said.error_lines == ("3: std::runtime_error: CUDA out of memory",)

    jvm = parse(JVM_STACK)
    assert jvm.error_lines == (JVM_STACK.splitlines()[0],)


def test_a_rust_services_json_log_is_read_as_what_it_logged() -> None:
    """tracing-subscriber's JSON lines (TGI, SGLang's router) nest the message in "fields":
    the exception it names is read, not a line of quoted keys."""
    log = "\n".join(
        json.dumps(
            {
                "timestamp": "2026-05-01T10:00:00.100Z",
                "level": "ERROR",
                "fields": {"message": message},
                "target": "text_generation_launcher",
            }
        )
        for message in (
            "Shard 0 failed to start",
            "torch.cuda.OutOfMemoryError: CUDA out of memory. Tried to allocate 1.00 GiB",
        )
    )

    first = signatures_of(parse(log))[0]

    assert first.exception_type == "OutOfMemoryError"
    assert first.message.startswith("CUDA out of memory")


def test_pytests_failure_lines_are_read_as_the_exception_they_print() -> None:
    report = """\
    def test_generate(llm):
>       out = llm.generate(["hello"])
E       RuntimeError: CUDA error: an illegal memory access was encountered
E       CUDA kernel errors might be asynchronously reported at some other API call.

tests/test_generate.py:12: RuntimeError"""

    (exc,) = parse(report).exceptions

    assert exc.type == "RuntimeError"
    assert exc.message.startswith("CUDA error: an illegal memory access")


PYTEST_REPORT = """\
=================================== FAILURES ===================================
________________________________ test_generate _________________________________

llm = <vllm.entrypoints.llm.LLM object at 0x7f0a2c1b3d90>

    def test_generate(llm):
>       out = llm.generate(["hello"])

tests/test_generate.py:12:
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _
/usr/lib/python3.12/site-packages/vllm/entrypoints/llm.py:177: in generate
    outputs = self._run_engine(use_tqdm=use_tqdm)
_ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

self = <vllm.worker.worker.Worker object at 0x7f0a2c1b3e50>

    @torch.inference_mode()
    def determine_num_available_blocks(self):
        free, total = torch.cuda.mem_get_info()
        if free <= 0:
>           raise ValueError(
                "No available memory for the cache blocks."
            )
E           ValueError: No available memory for the cache blocks.

/usr/lib/python3.12/site-packages/vllm/worker/worker.py:220: ValueError
=========================== short test summary info ============================
FAILED tests/test_generate.py::test_generate - ValueError: No available memory for the cache blocks.
"""
TEST_AS_SCRIPT = """\
Traceback (most recent call last):
  File "/home/me/repo/tests/test_generate.py", line 12, in test_generate
    out = llm.generate(["hello"])
  File "/usr/lib/python3.12/site-packages/vllm/entrypoints/llm.py", line 177, in generate
    outputs = self._run_engine(use_tqdm=use_tqdm)
  File "/usr/lib/python3.12/site-packages/vllm/worker/worker.py", line 220, in determine_num_available_blocks
    raise ValueError(
ValueError: No available memory for the cache blocks.
"""


def test_a_failed_tests_report_is_the_same_error_as_the_scripts_traceback() -> None:
    """pytest's default report: the test's and the last entry's source with the place
    under it, the entries between as "path.py:177: in generate"; its banners and
    dividers are no errors."""
    parsed = parse(PYTEST_REPORT)
    found = signatures_of(parsed)[0]

    assert parsed.primary is not None
    assert [frame.function for frame in parsed.primary.frames] == [
        "test_generate",
        "generate",
        "determine_num_available_blocks",
    ]
    assert found.fingerprint == signatures_of(parse(TEST_AS_SCRIPT))[0].fingerprint
    assert not any("=====" in line for line in parsed.error_lines)


# dockerd under journald: a logfmt record whose message carries the hook's own error after
# an escaped line break (a fixture in the shape of such logs).
DOCKERD_LOGFMT = (
    'Dec 01 10:00:00 gpu01 dockerd[812]: time="2026-12-01T10:00:00.123456789Z" level=error '
    'msg="failed to start container: error running hook #0: exit status 1, stderr: '
    "Auto-detected mode as 'legacy'\\nnvidia-container-cli: initialization error: nvml error: "
    'driver not loaded: unknown" module=libcontainerd'
)


def test_a_go_programs_logfmt_record_is_read_as_what_it_logged() -> None:
    lines = parse(DOCKERD_LOGFMT).error_lines

    assert "nvidia-container-cli: initialization error: nvml error: driver not loaded: unknown" in (
        lines
    )
    assert not any("level=" in line or "time=" in line for line in lines)


def test_a_setting_written_as_key_value_in_prose_is_not_taken_for_a_record() -> None:
    line = "we set level=3 msg=hello in the config and the server failed"

    assert parse(line).error_lines == (line,)


def test_logrus_text_levels_are_a_prefix_with_their_level() -> None:
    message, prefix = split_prefix("ERRO[0012] error waiting for container: context canceled")

    assert (message, prefix.level) == ("error waiting for container: context canceled", "ERROR")


@pytest.mark.parametrize(
    "line",
    [
        "[Bug]: DeepSeek-V3 crashes with an FP8 KV cache when using the flashinfer backend",
        "Failed to initialize NVML: Driver/library version mismatch",
    ],
)
def test_a_failure_that_names_its_setup_is_an_error_not_a_logged_choice(line: str) -> None:
    parsed = parse(line)

    assert parsed.error_lines == (line,)
    assert not parsed.warnings


def test_a_logged_choice_without_a_failure_stays_a_choice() -> None:
    line = "Using the flashinfer backend for attention"

    assert parse(line).warnings == (line,)


def test_a_folded_frame_followed_at_once_by_its_exception_keeps_both() -> None:
    folded = 'Traceback (most recent call last): File "/srv/app/main.py", line 9, in <module> ValueError: bad'

    (exc,) = parse(folded).exceptions

    assert (exc.type, exc.message) == ("ValueError", "bad")
    assert [frame.function for frame in exc.frames] == ["<module>"]


def test_a_python_warning_whose_message_goes_on_keeps_the_rest_of_it() -> None:
    log = """\
/opt/venv/lib/python3.12/site-packages/vllm/__init__.py:5: RuntimeWarning: Failed to read commit hash:
No module named 'vllm._version'
  from .version import __version__, __version_tuple__
/opt/venv/lib/python3.12/site-packages/pkg/api.py:9: UserWarning: the cache is cold
Loading weights took 3.2 s"""

    assert parse(log).warnings == (
        "RuntimeWarning: Failed to read commit hash: No module named 'vllm._version'",
        "UserWarning: the cache is cold",
    )


def test_a_python_warning_whose_message_starts_on_the_next_line_is_one_warning() -> None:
    """PyTorch's warning that the GPU is not in its build starts its message with a line
    break; the category's colon ends the first line (its trailing space lost in a paste)."""
    log = """\
/opt/venv/lib/python3.12/site-packages/torch/cuda/__init__.py:235: UserWarning:
NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible with the current PyTorch installation.
The current PyTorch install supports CUDA capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.

  warnings.warn("""

    parsed = parse(log)

    assert parsed.error_lines == ()
    assert parsed.warnings == (
        "UserWarning: NVIDIA GeForce RTX 5090 with CUDA capability sm_120 is not compatible "
        "with the current PyTorch installation. The current PyTorch install supports CUDA "
        "capabilities sm_50 sm_60 sm_70 sm_75 sm_80 sm_86 sm_90.",
    )


def test_a_warning_pasted_alone_is_quoted_as_printed() -> None:
    """Its GPU's name and its driver version are the user's own, not the template's."""
    log = (
        "/opt/venv/lib/python3.12/site-packages/torch/cuda/__init__.py:182: UserWarning: CUDA "
        "initialization: The NVIDIA driver on your system is too old (found version 11080). "
        "(Triggered internally at /pytorch/c10/cuda/CUDAFunctions.cpp:108.)\n"
        "  return torch._C._cuda_getDeviceCount() > 0\n"
    )
    parsed = parse(log)

    quoted = quoted_error(parsed, signatures_of(parsed)[0].exception_type)

    assert quoted.lines == (
        "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old "
        "(found version 11080).",
    )
    assert quoted.renamed_from == "UserWarning"  # "No known match for UserWarning", not "Warning"


def test_a_warning_message_indented_by_its_source_is_read_whole() -> None:
    """PyTorch's capability check writes its message indented, as its source holds it; the
    line `warnings.warn` shows under it is indented by two spaces and is not the message."""
    log = """\
/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py:262: UserWarning:
    Found GPU0 NVIDIA GeForce GTX 1080 Ti which is of cuda capability 6.1.
    Minimum and Maximum cuda capability supported by this version of PyTorch is
    (7.5) - (12.0)
  warnings.warn("""

    parsed = parse(log)

    assert parsed.warnings == (
        "UserWarning: Found GPU0 NVIDIA GeForce GTX 1080 Ti which is of cuda capability 6.1. "
        "Minimum and Maximum cuda capability supported by this version of PyTorch is "
        "(7.5) - (12.0)",
    )


SEGFAULT_DUMP = """\
Fatal Python error: Segmentation fault

Thread 0x00007f2b1c7fe700 (most recent call first):
  File "/usr/lib/python3.10/threading.py", line 320 in wait
  File "/usr/lib/python3.10/threading.py", line 973 in _bootstrap

Current thread 0x00007f2c5e9b7740 (most recent call first):
  File "/opt/venv/lib/python3.10/site-packages/vllm/model_executor/layers/quantization/awq.py", line 164 in apply
  File "/opt/venv/lib/python3.10/site-packages/vllm/worker/model_runner.py", line 912 in execute_model
  File "/opt/venv/lib/python3.10/site-packages/vllm/worker/worker.py", line 40 in execute

Extension modules: numpy.core._multiarray_umath, torch._C (total: 42)
Segmentation fault (core dumped)
"""


def test_a_segfaults_thread_dump_gives_the_crash_the_crashed_threads_frames() -> None:
    """faulthandler prints the crash, then each thread innermost call first: where the
    crash happened is the current thread's top frame, not another thread's."""
    parsed = parse(SEGFAULT_DUMP)
    first = signatures_of(parsed)[0]

    assert first.exception_type == "SegmentationFault"
    assert first.key_frames[0] == "vllm/model_executor/layers/quantization/awq.py:apply"
    assert not any("threading" in frame for frame in first.key_frames)
    assert not parsed.truncated  # a dump is whole: no "cut before its error" in the answer
    assert quoted_error(parsed, first.exception_type).lines == (
        "Fatal Python error: Segmentation fault",
    )


def test_the_same_segfault_from_another_install_is_the_same_error() -> None:
    moved = SEGFAULT_DUMP.replace(
        "/opt/venv/lib/python3.10/site-packages", "/usr/local/lib/python3.12/dist-packages"
    )
    assert (
        signatures_of(parse(moved))[0].fingerprint
        == signatures_of(parse(SEGFAULT_DUMP))[0].fingerprint
    )
    # A segfault in other code is another error, though the shell's line is the same.
    elsewhere = SEGFAULT_DUMP.replace("quantization/awq.py", "quantization/gptq.py")
    assert (
        signatures_of(parse(elsewhere))[0].fingerprint
        != signatures_of(parse(SEGFAULT_DUMP))[0].fingerprint
    )


PROMPT_IN_TRACEBACK = """\
Traceback (most recent call last):
  File "/srv/app/cli.py", line 40, in main
    confirm()
  File "/srv/app/cli.py", line 12, in confirm
Overwrite the existing cache directory? [y/N]
    answer = input()
EOFError: EOF when reading a line"""


@pytest.mark.parametrize(
    "carried",
    [
        pytest.param(lambda t: t, id="terminal"),
        pytest.param(
            lambda t: "\n".join("2026-02-10T09:14:03.123456789Z " + ln for ln in t.splitlines()),
            id="docker-logs-timestamps",
        ),
    ],
)
def test_a_prompt_printed_inside_a_traceback_is_not_taken_for_its_source_line(carried) -> None:
    """stdout and stderr share the terminal: a program that asked a question before it
    failed prints it between a frame and that frame's (indented) source line."""
    primary = parse(carried(PROMPT_IN_TRACEBACK)).primary

    assert primary is not None
    assert (primary.type, primary.message) == ("EOFError", "EOF when reading a line")
    assert [(f.function, f.code) for f in primary.frames] == [
        ("main", "confirm()"),
        ("confirm", "answer = input()"),
    ]


PLAIN_CHECK = """\
Traceback (most recent call last):
  File "/srv/venv/lib/python3.12/site-packages/sglang/launch_server.py", line 14, in <module>
    run(args)
  File "/srv/venv/lib/python3.12/site-packages/sglang/srt/server.py", line 88, in run
    check(args)
ValueError: --kv-cache-dtype fp8_e4m3 needs a GPU of compute capability 8.9 or newer"""


def _in_richs_box(inner: list[str], error: str) -> str:
    """As rich's traceback handler prints it (typer apps install it): the frames boxed."""
    width = 78
    top = "╭" + " Traceback (most recent call last) ".center(width, "─") + "╮"
    rows = [f"│ {row.ljust(width - 2)} │" for row in inner]
    return "\n".join([top, *rows, "╰" + "─" * width + "╯", error])


RICH_CHECK = _in_richs_box(
    [
        "/srv/venv/lib/python3.12/site-packages/sglang/launch_server.py:14 in <module>",
        "",
        "  13 │",
        "❱ 14 │   run(args)",
        "",
        "/srv/venv/lib/python3.12/site-packages/sglang/srt/server.py:88 in",  # wrapped
        "run",
        "",
        "  87 │   │   args = parse(argv)",
        "❱ 88 │   │   check(args)",
        "",
        "╭────── locals ──────╮",
        "│ args = Namespace() │",
        "╰────────────────────╯",
    ],
    PLAIN_CHECK.splitlines()[-1],
)


def test_richs_boxed_traceback_is_the_same_error_as_pythons() -> None:
    """TGI's server and other typer apps print their crash in rich's box: its frames, and
    the line that ran in each, are those of the plain traceback."""
    plain, boxed = parse(PLAIN_CHECK), parse(RICH_CHECK)
    assert boxed.primary is not None and plain.primary is not None
    assert [(f.function, f.code) for f in boxed.primary.frames] == [
        (f.function, f.code) for f in plain.primary.frames
    ]
    assert signatures_of(boxed)[0].fingerprint == signatures_of(plain)[0].fingerprint
    assert boxed.error_lines == ()  # the box's lines are frames, not errors of their own


GO_PANIC_LOG = """\
I0219 00:08:10.000000       1 main.go:50] Starting the plugin
panic: runtime error: invalid memory address or nil pointer dereference
[signal SIGSEGV: segmentation violation code=0x1 addr=0x0 pc=0x4a5b2c]

goroutine 1 [running]:
github.com/acme/gpu-plugin/internal/rm.(*resourceManager).Devices(0x0)
	/build/internal/rm/manager.go:88 +0x2c
main.start({0xc000123456, 0x3})
	/build/cmd/plugin/main.go:270 +0x3a5
main.main()
	/build/cmd/plugin/main.go:41 +0x25

goroutine 7 [chan receive]:
k8s.io/klog/v2.(*flushDaemon).run.func1()
	/go/pkg/mod/k8s.io/klog/v2@v2.100.1/klog.go:1157 +0x6a
"""


def test_a_go_panic_is_an_error_raised_from_its_goroutines_calls() -> None:
    """A nil dereference says nothing of where; the failing goroutine's calls do. They are
    named by package, so another build's paths give the same error."""
    first = signatures_of(parse(GO_PANIC_LOG))[0]
    assert (first.exception_type, first.template) == (
        "GoPanic",
        "runtime error: invalid memory address or nil pointer dereference",
    )
    assert first.key_frames == (
        "github.com/acme/gpu-plugin/internal/rm/manager.go:(*resourceManager).Devices",
        "main/main.go:start",
    )  # innermost first; the other goroutine's calls are not the crash's
    # Matched on the words the paste printed, not on FixGraph's name for the error.
    assert "panic" in first.terms and "gopanic" not in first.terms
    rebuilt = GO_PANIC_LOG.replace("/build/", "/go/src/github.com/acme/gpu-plugin/")
    assert signatures_of(parse(rebuilt))[0].fingerprint == first.fingerprint
    assert quoted_error(parse(GO_PANIC_LOG), "GoPanic").lines == (
        "Go panic: runtime error: invalid memory address or nil pointer dereference",
    )
    # A panic's message need not sound like an error; "panic: " says it is one.
    nil_map = GO_PANIC_LOG.replace(
        "runtime error: invalid memory address or nil pointer dereference",
        "assignment to entry in nil map",
    )
    assert signatures_of(parse(nil_map))[0].key_frames == first.key_frames


@pytest.mark.parametrize(
    "dump",
    [
        GO_PANIC_LOG.split("\n\ngoroutine 7")[0],
        SEGFAULT_DUMP.split("\n\nExtension modules")[0],
    ],
    ids=["go panic", "faulthandler"],
)
def test_a_paste_that_stops_on_a_dumps_last_frame_still_has_its_crash(dump: str) -> None:
    """A text box keeps no newline after the last line copied: the dump's end is the
    paste's, and the crash is read as it is with a line after it."""
    assert not dump.endswith("\n")
    with_line_end = signatures_of(parse(dump + "\n"))
    assert with_line_end[0].exception_type in ("GoPanic", "SegmentationFault")
    assert signatures_of(parse(dump)) == with_line_end


def test_slurms_task_labels_are_a_prefix_and_each_task_its_own_stream() -> None:
    """`srun --label` puts each task's number before its lines; two tasks' tracebacks
    interleave, and each is read whole."""
    labelled = _two_ranks_interleaved("{}: ", KV_ASSERT) + "\nsrun: error: node3: task 1: Exited"
    parsed = parse(labelled)

    assert signatures_of(parsed)[0].fingerprint == signatures_of(parse(KV_ASSERT))[0].fingerprint
    assert parsed.ranks == ("rank0", "rank1")


@pytest.mark.parametrize("host", ["gpu-node-{}: ", "10.0.4.1{}: ", "h100x{}.cluster.local: "])
def test_pdshs_host_names_are_a_prefix_and_each_host_its_own_stream(host: str) -> None:
    """`pdsh -w` (and clush) put the host before each line; two hosts' tracebacks
    interleave, and each is read whole."""
    parsed = parse(_two_ranks_interleaved(host, KV_ASSERT))

    assert signatures_of(parsed)[0].fingerprint == signatures_of(parse(KV_ASSERT))[0].fingerprint
    assert signatures_of(parsed)[0].key_frames == (
        "sglang/srt/mem_cache/memory_pool.py:set_kv_buffer",
    )


def test_a_blank_line_a_host_printed_is_no_message_of_the_exception_above_it() -> None:
    # pdsh prints a blank line as "gpu-node-3: ", which the paste keeps as "gpu-node-3:".
    printed = "\n".join(f"gpu-node-3: {line}".rstrip() for line in [*KV_ASSERT.splitlines(), ""])

    (exc,) = parse(printed + "\ngpu-node-3: [00:08:10] Received sigquit\n").exceptions

    assert (exc.type, exc.message) == ("AssertionError", "")


def test_lines_that_start_with_a_level_or_an_exception_are_not_host_labels() -> None:
    lines = "RuntimeError: CUDA error: out of memory\n" * 2 + "ERROR: engine stopped\n" * 2
    dotted = "torch.distributed.DistNetworkError: the server socket has failed to bind\n"

    assert [exc.type for exc in parse(lines).exceptions] == ["RuntimeError"]
    assert [exc.type for exc in parse(dotted).exceptions] == ["torch.distributed.DistNetworkError"]


@pytest.mark.parametrize(
    "line",
    [
        "launch_server.py: error: unrecognized arguments: --nsa-prefill-backend x",
        "text-generation-launcher: error: unexpected argument '--foo' found",
        "nvidia-container-cli: initialization error: nvml error: driver not loaded",
    ],
)
def test_a_programs_name_before_its_error_is_not_a_host(line: str) -> None:
    assert parse(line).error_lines == (line,)


def test_one_line_after_a_hosts_name_is_what_that_host_printed() -> None:
    (exc,) = parse("gpu-node-3: OSError: [Errno 28] No space left on device\n").exceptions

    assert (exc.type, exc.message) == ("OSError", "[Errno 28] No space left on device")


def test_two_lines_after_one_numbered_hosts_name_are_what_that_host_printed() -> None:
    # What follows the name is neither an exception nor a log line; the numbered name
    # before both lines is pdsh's, not a program naming itself.
    said = [
        "Failed to create NCCL communicator: bootstrap could not find a usable interface",
        "invalid usage (run with NCCL_DEBUG=WARN for details)",
    ]
    pasted = "\n".join(f"gpu-node-3: {line}" for line in said)

    assert parse(pasted).error_lines == tuple(said)


def test_two_lines_after_a_programs_unnumbered_name_keep_the_name() -> None:
    said = "nvidia-container-cli: initialization error: nvml error: driver not loaded"

    assert parse(f"{said}\n{said}").error_lines[0] == said


def test_a_few_numbered_lines_are_not_task_labels() -> None:
    notes = (
        "Steps I took:\n1: pulled the image\n2: ran it\nValueError: no GPU found\nand more prose"
    )
    assert parse(notes).ranks == ()


def _link_failure(obj: str, offset: str) -> str:
    return (
        "[100/120] Linking CXX shared module _C.so\n"
        f"/usr/bin/ld: {obj}: in function `launch_kernel':\n"
        f"ops.cu:(.text+{offset}): undefined reference to `cuTensorMapEncodeTiled'\n"
        "collect2: error: ld returned 1 exit status\n"
    )


def test_a_link_failure_is_the_symbol_the_linker_could_not_find() -> None:
    """collect2's last line only says the linker failed; the missing symbol is the error,
    whatever object file and offset another build reports it at."""
    first = signatures_of(parse(_link_failure("CMakeFiles/_C.dir/csrc/ops.cu.o", "0x1a2")))[0]
    other = signatures_of(parse(_link_failure("build/temp/csrc/ops.o", "0x3f0")))[0]

    assert first.template == "undefined reference to `cuTensorMapEncodeTiled'"
    assert other.fingerprint == first.fingerprint


@pytest.mark.parametrize(
    "line",
    [
        "Could not load library libcudnn_ops_infer.so.8",
        "The prompt of 9000 tokens exceeds the context window",
        "ops.cu:(.text+0x1a2): undefined reference to `cuTensorMapEncodeTiled'",
    ],
)
def test_an_unprefixed_line_among_start_up_logs_that_says_what_went_wrong_is_an_error(
    line: str,
) -> None:
    started = [f"INFO 02-19 00:08:1{i} [core.py:1] Step {i} took 1.{i} seconds" for i in range(6)]
    log = "\n".join([*started, line, "INFO 02-19 00:08:19 [core.py:1] Shutting down"])

    assert parse(log).error_lines == (line,)


@pytest.mark.parametrize(
    "numbered_as",
    ["{n}: {line}", "{n}:{line}", "{n:>6}\t{line}"],
    ids=["editor", "grep-n", "cat-n"],
)
def test_line_numbers_before_a_traceback_are_set_aside(numbered_as: str) -> None:
    """Numbers that count up are lines, not tasks: the traceback is read as one."""
    numbered = "\n".join(
        numbered_as.format(n=n, line=line) for n, line in enumerate(KV_ASSERT.splitlines(), 120)
    )
    parsed = parse(numbered)

    assert signatures_of(parsed)[0].fingerprint == signatures_of(parse(KV_ASSERT))[0].fingerprint
    assert parsed.ranks == ()


def test_a_line_or_two_numbered_by_cat_n_read_as_the_lines() -> None:
    """`cat -n`'s tab tells alone; a blank line it numbered is the number alone."""
    pasted = "torch.OutOfMemoryError: CUDA out of memory.\n\nKilled\n"
    numbered = "".join(
        f"{n:>6}\t{line}".rstrip() + "\n" for n, line in enumerate(pasted.splitlines(), 1)
    )
    assert [s.fingerprint for s in signatures_of(parse(numbered))] == [
        s.fingerprint for s in signatures_of(parse(pasted))
    ]


def test_a_log_whose_lines_start_with_the_time_is_not_labelled() -> None:
    log = "10:00:01 worker 0 started\n10:00:02 worker 1 started\n10:00:03 RuntimeError: boom"
    assert parse(log).ranks == ()  # one stream: the hours are not a task's number


def test_a_python_thread_dump_is_not_given_another_programs_crash_line() -> None:
    """A sidecar's Go panic above a Python dump (faulthandler on a hang) names no crash of
    the Python program: the dump's frames stay unnamed, the panic its own error."""
    paste = (
        "panic: send on closed channel\n\n"
        "Current thread 0x00007f2c5e9b7740 (most recent call first):\n"
        '  File "/srv/app/loop.py", line 12 in wait_for_peers\n'
    )
    parsed = parse(paste)

    assert [exc.type for exc in parsed.exceptions] == [""]
    assert parsed.error_lines == ("panic: send on closed channel",)


def _xid_log(stamp: str, bus: str, pid: int, code: int) -> str:
    return (
        f"[{stamp}] NVRM: Xid (PCI:0000:{bus}:00): {code}, pid={pid}, name=python3, "
        "GPU has fallen off the bus.\n"
        f"[{stamp}] NVRM: GPU 0000:{bus}:00.0: GPU is lost.\n"
    )


def test_a_kernel_logs_xid_is_an_error_named_by_its_code_not_its_bus_or_pid() -> None:
    """`dmesg -T` stamps lines with the weekday and clock; the Xid's code says what failed,
    the bus address and the pid say only where and who."""
    one = parse(_xid_log("Mon Dec  1 10:22:31 2026", "3b", 1234, 79))
    other = parse(_xid_log("Tue Dec  2 08:01:09 2026", "86", 977, 79))
    different = parse(_xid_log("Mon Dec  1 10:22:31 2026", "3b", 1234, 48))

    assert one.error_lines[0].startswith("NVRM: Xid (PCI:0000:3b:00): 79")
    first = signatures_of(one)[0]
    assert first.template == "NVRM: Xid79"
    assert signatures_of(other)[0].fingerprint == first.fingerprint
    assert signatures_of(different)[0].fingerprint != first.fingerprint


def _tgi_warmup(batch: str, when: str) -> str:
    return (
        f"{when}.100Z  INFO text_generation_launcher: Starting shard rank=0\n"
        f"{when}.900Z ERROR warmup{{max_input_length=1024 max_prefill_tokens=4096 "
        f"max_batch_size={batch}}}:warmup: text_generation_client: "
        "router/client/src/lib.rs:33: Server error: CUDA out of memory. "
        "Tried to allocate 2.00 GiB\n"
    )


def test_a_rust_tracing_lines_spans_and_place_are_not_its_message() -> None:
    """TGI's router logs with Rust's tracing: the span an event was logged in carries the
    run's settings as fields; the target names the component and stays."""
    parsed = parse(_tgi_warmup("None", "2026-05-01T10:00:09"))
    again = parse(_tgi_warmup("32", "2026-05-02T11:30:00"))

    assert parsed.error_lines == (
        "[text_generation_client] Server error: CUDA out of memory. Tried to allocate 2.00 GiB",
    )
    assert signatures_of(again)[0].fingerprint == signatures_of(parsed)[0].fingerprint


POD_DESCRIBED = """\
Name:             vllm-0
Containers:
  vllm:
    State:          Waiting
      Reason:       CrashLoopBackOff
    Last State:     Terminated
      Reason:       OOMKilled
      Exit Code:    137
Events:
  Type     Reason            Age                {age}    From               Message
  ----     ------            ----               {dash}    ----               -------
  Normal   Pulled            5m (x5 over 11m)   {pad}    kubelet            Container image \
"vllm/vllm-openai:v0.6.3" already present on machine
  Warning  FailedScheduling  {seen}    default-scheduler  0/4 nodes are available: \
4 Insufficient nvidia.com/gpu.
"""


def _described(seen: str) -> str:
    width = max(len(seen), 18)
    return POD_DESCRIBED.format(
        seen=seen.ljust(width),
        age=" " * (width - 18),
        dash=" " * (width - 18),
        pad=" " * (width - 18),
    )


def test_a_kubernetes_warning_event_is_an_error_without_its_age_or_reporter() -> None:
    parsed = parse(_described("12m (x3 over 15m)"))
    later = parse(_described("3h12m (x41 over 9h)"))

    assert "FailedScheduling: 0/4 nodes are available: 4 Insufficient nvidia.com/gpu." in (
        parsed.error_lines
    )
    assert not any("Pulled" in line for line in parsed.error_lines)  # a Normal event
    scheduling = {s.fingerprint for s in signatures_of(parsed) if "FailedScheduling" in s.template}
    assert scheduling == {
        s.fingerprint for s in signatures_of(later) if "FailedScheduling" in s.template
    }


def test_an_event_without_an_error_word_is_an_error_when_kubernetes_warns_of_it() -> None:
    events = (
        "LAST SEEN   TYPE      REASON      OBJECT         MESSAGE\n"
        "3m          Normal    Scheduled   pod/sglang-0   Successfully assigned llm/sglang-0\n"
        "2m          Warning   Evicted     pod/sglang-0   The node was low on resource: "
        "ephemeral-storage.\n"
    )
    assert parse(events).error_lines == (
        "Evicted: The node was low on resource: ephemeral-storage.",
    )


def test_a_container_killed_for_memory_is_the_kernels_oom_kill() -> None:
    """Kubernetes' and docker's "OOMKilled" is the kernel's OOM killer at a cgroup's limit:
    the same error as the kill the kernel log shows."""
    kernel = "[ 5123.402311] Out of memory: Killed process 4242 (python3) total-vm:81234567kB\n"
    described = parse(_described("1m"))
    assert signatures_of(parse(kernel))[0].fingerprint in {
        s.fingerprint for s in signatures_of(described)
    }


PY_SPY_DUMP = """\
Process 4242: python3 -m vllm.entrypoints.openai.api_server --tensor-parallel-size 4
Python v3.10.12 (/usr/bin/python3.10)

Thread 0x7F3A2B4C5740 (active): "MainThread"
    wait (threading.py:320)
        Arguments:
            self: <Condition at 0x7f3a1c2d3e50>
    Future.result (concurrent/futures/_base.py:451)
    MultiprocessingGPUExecutor._run_workers (vllm/executor/multiproc_gpu_executor.py:185)
    DistributedGPUExecutor.determine_num_available_blocks \
(vllm/executor/distributed_gpu_executor.py:38)
Thread 0x7F39E1FFF640 (idle): "Thread-1"
    _worker (concurrent/futures/thread.py:81)
"""
HANG_FAULTHANDLER = """\
Current thread 0x00007f3a2b4c5740 (most recent call first):
  File "/usr/lib/python3.10/threading.py", line 320 in wait
  File "/usr/lib/python3.10/concurrent/futures/_base.py", line 451 in result
  File "/opt/venv/lib/python3.10/site-packages/vllm/executor/multiproc_gpu_executor.py", \
line 185 in _run_workers
  File "/opt/venv/lib/python3.10/site-packages/vllm/executor/distributed_gpu_executor.py", \
line 38 in determine_num_available_blocks
"""


def test_a_py_spy_dump_of_a_hang_gives_the_main_threads_calls() -> None:
    """What a hung server is reported with: where the main thread waits, outermost first,
    without the locals printed under a frame or the idle threads beside it; a method by its
    own name, as a traceback prints it (py-spy adds the class on Python 3.11 and later)."""
    (hang,) = parse(PY_SPY_DUMP).exceptions

    assert [frame.function for frame in hang.frames] == [
        "determine_num_available_blocks",
        "_run_workers",
        "result",
        "wait",
    ]
    assert hang.frames[1].module == "vllm/executor/multiproc_gpu_executor.py"


def test_the_same_hang_dumped_by_py_spy_and_by_faulthandler_is_the_same_error() -> None:
    """py-spy cuts a standard library file to its bare name ("threading.py"); it is still
    the standard library's, not the application's frame."""
    spy = signatures_of(parse(PY_SPY_DUMP))[0]
    assert spy.fingerprint == signatures_of(parse(HANG_FAULTHANDLER))[0].fingerprint
    assert not any("threading" in frame for frame in spy.key_frames)


def test_a_hangs_dump_is_quoted_as_a_dump_with_its_place_not_as_a_cut_traceback() -> None:
    spy = signatures_of(parse(PY_SPY_DUMP))[0]
    assert shown_error(spy.exception_type, spy.template) == (
        "thread dump of a running program (no error printed), "
        "innermost call: _run_workers in multiproc_gpu_executor.py"
    )


def test_docker_builds_step_and_clock_are_a_prefix_and_the_failed_install_is_read() -> None:
    """A `docker build` that failed in a pip install: BuildKit puts the step's number and
    its clock before each line; pip's box and the traceback inside it keep their indents."""
    plain = (
        "  × python setup.py egg_info did not run successfully.\n"
        "  ╰─> [4 lines of output]\n"
        "      Traceback (most recent call last):\n"
        '        File "/tmp/pip-install-1/flash-attn_1/setup.py", line 9, in <module>\n'
        "          import torch\n"
        "      ModuleNotFoundError: No module named 'torch'\n"
        "      [end of output]\n"
    )
    built = "".join(f"#8 45.{n:02d} {line}\n" for n, line in enumerate(plain.splitlines()))
    built += '#8 ERROR: process "/bin/sh -c pip install flash-attn" did not complete\n'

    parsed = parse(built)

    assert [(exc.type, exc.message) for exc in parsed.exceptions] == [
        ("ModuleNotFoundError", "No module named 'torch'")
    ]
    assert signatures_of(parsed)[0].fingerprint == signatures_of(parse(plain))[0].fingerprint


LOADER_FAILED = """\
Traceback (most recent call last):
  File "{app}serve.py", line 40, in <module>
    main()
  File "{app}serve.py", line 31, in main
    shards = list(pool.map(load_shard, paths))
  File "{lib}concurrent{sep}futures{sep}process.py", line 620, in _chain_from_iterable_of_lists
    for element in iterable:
  File "{lib}concurrent{sep}futures{sep}_base.py", line 456, in result
    return self.__get_result()
  File "{lib}concurrent{sep}futures{sep}_base.py", line 401, in __get_result
    raise self._exception
concurrent.futures.process.BrokenProcessPool: A process in the process pool was terminated abruptly
"""
ON_LINUX = LOADER_FAILED.format(app="/srv/app/", lib="/usr/lib/python3.11/", sep="/")
ON_WINDOWS = LOADER_FAILED.format(
    app="C:\\srv\\app\\", lib="C:\\Users\\me\\miniconda3\\envs\\llm\\Lib\\", sep="\\"
)


def test_the_same_error_on_windows_and_on_linux_has_one_fingerprint() -> None:
    """The innermost calls are the standard library's; Windows keeps it in `Lib`."""
    (linux,) = signatures_of(parse(ON_LINUX))[:1]
    (windows,) = signatures_of(parse(ON_WINDOWS))[:1]
    assert windows.key_frames == linux.key_frames
    assert windows.fingerprint == linux.fingerprint


def test_a_powershell_error_record_around_the_first_line_is_the_shells_not_the_error() -> None:
    """Windows PowerShell 5.1 wraps a program's first line on stderr in an error record:
    the program's name before the line, then where the command was typed and the
    record's fields. The program's traceback is the error, and only it."""
    first, rest = ON_WINDOWS.split("\n", 1)
    record = (
        f"python : {first}\n"
        "At line:1 char:1\n"
        "+ python serve.py --model Qwen/Qwen2-7B\n"
        "+ ~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~~\n"
        "    + CategoryInfo          : NotSpecified: (Traceback (most recent call last)::String)"
        " [], RemoteException\n"
        "    + FullyQualifiedErrorId : NativeCommandError\n"
        " \n"
    )

    parsed = parse(record + rest)

    assert parsed.error_lines == ()
    assert [exc.type for exc in parsed.exceptions] == [
        "concurrent.futures.process.BrokenProcessPool"
    ]
    assert [s.fingerprint for s in signatures_of(parsed)] == [
        s.fingerprint for s in signatures_of(parse(ON_WINDOWS))
    ]


def test_an_error_whose_message_goes_on_below_the_record_keeps_its_message() -> None:
    """The record comes after the program's first line; the lines the program printed
    next belong to that line's message."""
    printed = (
        "ImportError: \nThis tokenizer needs the protobuf package.\nInstall it, then restart.\n"
    )
    first, rest = printed.split("\n", 1)
    record = (
        f"C:\\Program Files\\Python311\\python.exe : {first}\n"
        "At C:\\srv\\start.ps1:4 char:1\n"
        "+ & $python serve.py\n"
        "+ ~~~~~~~~~~~~~~~~~~\n"
        "    + CategoryInfo          : NotSpecified: (ImportError: :String) [], RemoteException\n"
        "    + FullyQualifiedErrorId : NativeCommandError\n"
        " \n"
    )

    assert signatures_of(parse(record + rest)) == signatures_of(parse(printed))


RAY_CAUSE = """\
  File "/opt/venv/lib/python3.10/site-packages/vllm/worker/worker.py", line 180, in warm_up
    self.model_runner.capture_model(self.gpu_cache)
RuntimeError: CUDA graph capture needs more memory than is free on this GPU
"""
RAY_WRAPPED = (
    "Traceback (most recent call last):\n"
    '  File "/srv/app/batch.py", line 20, in <module>\n'
    "    outputs = ray.get(refs)\n"
    '  File "/opt/venv/lib/python3.10/site-packages/ray/_private/worker.py", line 2667, in get\n'
    "    raise value.as_instanceof_cause()\n"
    "ray.exceptions.RayTaskError(RuntimeError): ray::RayWorkerWrapper.execute_method() "
    "(pid=3321, ip=10.0.0.12, actor_id=8f1e2d3c4b5a6978, repr=<RayWorkerWrapper at 0x7f1e2d>)\n"
    + RAY_CAUSE
)


def test_an_exception_carried_from_another_process_is_a_wrapper_of_its_cause() -> None:
    """Ray raises a worker's exception in the driver as "RayTaskError(RuntimeError)", the
    worker's traceback after it: what went wrong is the worker's error, and the wrapper
    (with the actor's pid, address and id) is no error of its own to match."""
    parsed = parse(RAY_WRAPPED)

    wrapper, cause = parsed.exceptions
    assert (wrapper.type, wrapper.wraps) == ("ray.exceptions.RayTaskError", "RuntimeError")
    assert traceback.is_generic(wrapper)
    assert parsed.primary == cause
    assert [s.template for s in signatures_of(parsed)] == [
        s.template for s in signatures_of(parse("Traceback (most recent call last):\n" + RAY_CAUSE))
    ]


def test_an_exception_logged_as_its_repr_is_the_exception_python_would_print() -> None:
    """An engine's logger that prints the exception's repr, its message's line breaks
    escaped, says the same error as the exception printed by Python."""
    printed = (
        "RuntimeError: CUDA error: misaligned address\n"
        "Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\n"
    )
    logged = (
        "ERROR 03-02 10:00:01 [engine.py:160] RuntimeError('CUDA error: misaligned address"
        "\\nCompile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.\\n')\n"
        "ERROR 03-02 10:00:01 [engine.py:162] Engine background task failed\n"
    )

    (exc,) = parse(logged).exceptions
    assert (exc.type, exc.message) == ("RuntimeError", parse(printed).exceptions[0].message)
    assert (
        signatures_of(parse(logged))[0].fingerprint == signatures_of(parse(printed))[0].fingerprint
    )


@pytest.mark.parametrize(
    "line",
    [
        "Request failed with ValueError('prompt too long')",  # words before it: prose
        '    raise ValueError("prompt too long")',  # a frame's source line
    ],
)
def test_a_repr_inside_words_or_code_is_left_as_written(line: str) -> None:
    assert all(exc.type != "ValueError" for exc in parse(line + "\n").exceptions)


def test_a_windows_path_in_a_message_is_masked_and_named_like_a_posix_one() -> None:
    said = "OSError: [WinError 126] Error loading {lib} or one of its dependencies.\n"
    windows = said.format(
        lib="C:\\Users\\me\\llm\\.venv\\Lib\\site-packages\\torch\\lib\\fbgemm.dll"
    )
    linux = said.format(lib="/home/me/llm/.venv/lib/python3.11/site-packages/torch/lib/fbgemm.dll")

    (on_windows,) = signatures_of(parse(windows))
    (on_linux,) = signatures_of(parse(linux))

    assert on_windows.template == on_linux.template
    assert "<path>" in on_windows.template
    assert on_windows.message == on_linux.message
    assert "fbgemm.dll" in on_windows.message  # a shared library's name is what it is about


VALIDATION_FAILED = """\
Traceback (most recent call last):
  File "/srv/app/serve.py", line 30, in build
    config = EngineConfig(**options)
  File "/opt/venv/lib/python3.12/site-packages/pydantic/_internal/_dataclasses.py", line 123, in __init__
    s.__pydantic_validator__.validate_python(ArgsKwargs(args, kwargs), self_instance=s)
pydantic_core._pydantic_core.ValidationError: 1 validation error for EngineConfig
{said}
    For further information visit https://errors.pydantic.dev/2.11/v/value_error
"""


def _validation_failed(said: str):  # type: ignore[no-untyped-def]
    return signatures_of(parse(VALIDATION_FAILED.format(said=said)))[0]


def test_a_heading_that_counts_errors_is_fingerprinted_with_the_first_error() -> None:
    """pydantic heads its errors with their count and the model: every error of one model
    shares that heading, so the heading alone would call any of them the same error. The
    field and what is wrong with it tell them apart; the value the user gave does not."""
    rank = "max_rank\n  Input should be 8, 16 or 32 [type=literal_error, input_value={}, input_type=int]"
    heads = "num_heads\n  Input should be greater than 0 [type=greater_than, input_value={}, input_type=int]"

    assert _validation_failed(rank.format(48)).fingerprint == (
        _validation_failed(rank.format(12)).fingerprint
    )
    assert _validation_failed(rank.format(48)).fingerprint != (
        _validation_failed(heads.format(0)).fingerprint
    )
    assert _validation_failed(rank.format(48)).template == (
        "<num> validation error for EngineConfig max_rank Input should be <num>, <num> or <num> "
        "[type=literal_error]"
    )


def test_what_a_validator_raised_is_that_error_as_the_check_raised_it_before() -> None:
    """A check that moved into a pydantic validator (vLLM's config classes from 0.10 on)
    is reported as "Value error, <its message>": the ValueError it raised before."""
    said = "tensor parallel size 3 does not divide 64 attention heads"
    in_validator = _validation_failed(
        f"  Value error, {said} [type=value_error, input_value=ArgsKwargs((), {{'model': ...}}),"
        " input_type=ArgsKwargs]"
    )
    raised = signatures_of(parse(f"ValueError: {said}\n"))[0]

    assert (in_validator.exception_type, in_validator.template) == (
        raised.exception_type,
        raised.template,
    )
    assert in_validator.message == raised.message
    # pydantic's own calls carry every validation error: where it failed is the caller's.
    assert in_validator.key_frames == ("serve.py:build",)


def test_a_counted_heading_is_quoted_with_its_first_error() -> None:
    parsed = parse(
        VALIDATION_FAILED.format(
            said="  Value error, no GPU found [type=value_error, input_value=ArgsKwargs(()), input_type=ArgsKwargs]"
        )
    )

    quoted = quoted_error(parsed, signatures_of(parsed)[0].exception_type)

    assert quoted.lines == (
        "pydantic_core._pydantic_core.ValidationError: 1 validation error for EngineConfig "
        "Value error, no GPU found [type=value_error]",
    )


WORKER_FAILED = """\
Traceback (most recent call last):
  File "/opt/venv/lib/python3.12/site-packages/vllm/v1/executor/multiproc_executor.py", line 243, in collective_rpc
    raise RuntimeError(
RuntimeError: Worker failed with error 'CUDA error: an illegal memory access was encountered
Compile with `TORCH_USE_CUDA_DSA` to enable device-side assertions.
', please check the stack trace above for the root cause
"""


def test_an_error_that_quotes_the_error_it_caught_is_matched_on_that_error() -> None:
    """A paste of the last lines only: the stack trace the wrapper points to is not
    there, but the wrapper quotes its error, and that error is what went wrong."""
    parsed = parse(WORKER_FAILED)
    alone = signatures_of(
        parse("RuntimeError: CUDA error: an illegal memory access was encountered\n")
    )

    assert traceback.is_generic(parsed.exceptions[0])
    first = signatures_of(parsed)[0]
    assert (first.exception_type, first.template) == (alone[0].exception_type, alone[0].template)


def test_a_quoted_word_that_is_no_error_adds_no_error() -> None:
    parsed = parse("ValueError: unknown error 'fp8_e5m2' for the kv cache dtype\n")

    assert parsed.error_lines == ()


def test_a_paste_with_htmls_escapes_reads_as_the_program_printed_it() -> None:
    """A copy of a page's source, a ticket's or a mail's HTML export: quotes and angle
    brackets arrive as entities, and frames were no frames."""
    printed = (
        "$ python3 -m sglang.launch_server --model-path org/m --served-model-name 'my model'\n"
        + LOADER_FAILED.format(app="/srv/app/", lib="/usr/lib/python3.11/", sep="/")
    )
    escaped = html.escape(printed)

    assert [s.fingerprint for s in signatures_of(parse(escaped))] == [
        s.fingerprint for s in signatures_of(parse(printed))
    ]
    assert build_context(escaped).flags == build_context(printed).flags


def test_a_frame_line_cut_once_at_the_terminals_width_is_one_frame() -> None:
    """One line longer than the terminal: one cut tells no width, but the two pieces of a
    frame's line are a frame only joined, and the piece below is no source line."""
    uncut = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/serve.py", line 12, in <module>\n'
        "    main()\n"
        '  File "/opt/conda/envs/serving/lib/python3.11/site-packages/vllm/model_executor/layers/'
        'quantization/utils/marlin_utils.py", line 120, in check_marlin_supports_shape\n'
        '    raise ValueError("not divisible")\n'
        "ValueError: Weight output_size_per_partition = 3584 is not divisible by min_thread_n = 64.\n"
    )
    long_line = next(line for line in uncut.splitlines() if "marlin_utils" in line)
    width = len(long_line) - 40
    cut = uncut.replace(long_line, long_line[:width] + "\n" + long_line[width:])

    assert [s.fingerprint for s in signatures_of(parse(cut))] == [
        s.fingerprint for s in signatures_of(parse(uncut))
    ]


CHILD_ERROR_RERAISED = '''\
concurrent.futures.process._RemoteTraceback:
"""
Traceback (most recent call last):
  File "/usr/lib/python3.10/concurrent/futures/process.py", line 246, in _process_worker
    r = call_item.fn(*call_item.args, **call_item.kwargs)
  File "/srv/venv/lib/python3.10/site-packages/servekit/registry.py", line 41, in probe
    raise RuntimeError(
RuntimeError: Error raised in subprocess:
/srv/venv/lib/python3.10/site-packages/servekit/_ops.so: undefined symbol: _ZN3c104cuda9SetDeviceEi
"""

The above exception was the direct cause of the following exception:

Traceback (most recent call last):
  File "/srv/venv/bin/servekit", line 8, in <module>
    sys.exit(main())
RuntimeError: Error raised in subprocess
'''


def test_an_error_the_parent_raises_again_in_fewer_words_is_read_as_the_childs():
    # The parent's message is the first words of the child's: the child's says what failed.
    first = signatures_of(parse(CHILD_ERROR_RERAISED))[0]

    assert "undefined symbol" in first.template
    assert shown_error(first.exception_type, first.template).startswith(
        "RuntimeError: Error raised in subprocess: <path>: undefined symbol"
    )


def test_a_short_message_that_only_starts_another_by_chance_is_not_a_restatement():
    text = (
        "Traceback (most recent call last):\n"
        '  File "/app/a.py", line 3, in run\n'
        "    load()\n"
        "ValueError: 'w' weights missing from the checkpoint\n\n"
        "During handling of the above exception, another exception occurred:\n\n"
        "Traceback (most recent call last):\n"
        '  File "/app/a.py", line 9, in main\n'
        "    run()\n"
        "KeyError: 'w'\n"
    )
    assert parse(text).primary.type == "KeyError"  # the last, as always
