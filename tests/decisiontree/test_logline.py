"""Log lines read the same in a paste and in a write-up: prefixes and colour set aside."""

from __future__ import annotations

import pytest

from decisiontree.logline import has_prefix, split_prefix, strip_ansi, strip_prefix, unquoted
from decisiontree.traceback import parse


@pytest.mark.parametrize(
    ("line", "message"),
    [
        ("sglang-1  | Traceback (most recent call last):", "Traceback (most recent call last):"),
        ("[2026-02-19 00:08:10 TP3] Scheduler hit an exception", "Scheduler hit an exception"),
        (
            "(VllmWorker rank=2 pid=9) ERROR 02-19 00:08:10 [core.py:1] EngineCore failed",
            "EngineCore failed",
        ),
        ("[rank3]: RuntimeError: CUDA error", "RuntimeError: CUDA error"),
        ("2026-02-19T00:08:10.123Z ERROR boom", "boom"),
        ("2026-02-19 00:08:10,123   WARNING boom", "boom"),  # a level padded to a column
        ("2026-02-19 00:08:10 - boom", "boom"),
        ("2026-02-19T00:08:10.123456+00:00 node3 vllm[4242]: ValueError: x", "ValueError: x"),
        ("2026-02-19T00:08:10+0000 node3 kernel: NVRM: Xid 79", "NVRM: Xid 79"),  # rsyslog
        (
            "(RayWorkerWrapper pid=7, ip=10.0.0.2) ValueError: x [repeated 7x across cluster]",
            "ValueError: x",
        ),
        # docker logs -t: one space after the time, then the line as printed, indent kept
        (
            '2026-02-19T00:08:10.123456789Z   File "x.py", line 1, in f',
            '  File "x.py", line 1, in f',
        ),
        ("[pod/sglang-0/server] ValueError: x", "ValueError: x"),
        ("2026/02/19 00:08:10 ERROR boom", "boom"),  # Go's log package, slashed dates
        ("[02/19/26 00:08:10] ERROR    boom", "boom"),  # rich's console handler
        ("[00:08:10] RuntimeError: x", "RuntimeError: x"),
        ("2026-02-19T00:08:10.123456789Z stderr F RuntimeError: x", "RuntimeError: x"),
        ("> (EngineCore_DP0 pid=7) ERROR 02-19 00:08:10 [core.py:1] boom", "boom"),
        ("[W socket.cpp:464] [c10d] The server socket failed", "[c10d] The server socket failed"),
        ("[multiproc_executor.py:492] ValueError: x", "ValueError: x"),  # cut before its level
        ("2026-02-19 00:08:10.249 | ERROR    | app.llm:ask:260 - API error", "API error"),  # loguru
        ("Error: jinja2.exceptions.TemplateError: x", "jinja2.exceptions.TemplateError: x"),
        # Ray's raylet relayed by its log monitor: daemon, clock, level, pids, place
        (
            "(raylet) [2026-12-06 10:00:00,123 E 1234 1234] (raylet) node_manager.cc:3000: "
            "A worker died unexpectedly",
            "A worker died unexpectedly",
        ),
    ],
)
def test_it_sets_aside_each_kind_of_log_prefix(line: str, message: str) -> None:
    assert strip_prefix(line) == message
    assert has_prefix(line)


@pytest.mark.parametrize(
    ("line", "message", "level"),
    [
        (
            "[02/19/2026-00:08:10] [TRT] [E] Error Code 1: Cuda Runtime",
            "[TRT] Error Code 1: Cuda Runtime",
            "ERROR",
        ),
        ("[02/19/2026-00:08:10] [TRT-LLM] [W] Engine is old", "[TRT-LLM] Engine is old", "WARNING"),
        (
            "[TensorRT-LLM][ERROR] Assertion failed: x",
            "[TensorRT-LLM] Assertion failed: x",
            "ERROR",
        ),
        ("[TensorRT-LLM][INFO] Loaded engine", "[TensorRT-LLM] Loaded engine", "INFO"),
        # gunicorn's error log: the stamp with its zone, the worker's pid, the level
        (
            "[2026-02-19 00:08:10 +0000] [7] [ERROR] Exception in worker process",
            "Exception in worker process",
            "ERROR",
        ),
        ("[2026-02-19 00:08:10,123] [WARNING] low disk", "low disk", "WARNING"),
        ("[ERROR] model failed to load", "model failed to load", "ERROR"),
    ],
)
def test_a_level_tag_is_read_and_a_librarys_name_stays_in_the_message(
    line: str, message: str, level: str
) -> None:
    """The library's name is often the only word of such a line that says who is speaking;
    a level in brackets alone, or after a stamp and a pid (gunicorn), is the logger's."""
    text, prefix = split_prefix(line)
    assert (text, prefix.level) == (message, level)


def test_a_warning_beside_the_error_of_a_tensorrt_log_is_not_the_error() -> None:
    log = (
        "[02/19/2026-00:08:10] [TRT] [W] Unable to determine GPU memory usage\n"
        "[02/19/2026-00:08:11] [TRT] [E] 1: [defaultAllocator.cpp::deallocate::42] Error Code 1:"
        " Cuda Runtime (invalid argument)\n"
    )
    assert parse(log).error_lines == (
        "[TRT] 1: [defaultAllocator.cpp::deallocate::42] Error Code 1: Cuda Runtime (invalid argument)",
    )


def test_it_says_which_rank_printed_a_line() -> None:
    _, prefix = split_prefix("[2026-02-19 00:08:10 DP0 TP3 EP3] Scheduler hit an exception")
    assert (prefix.rank, prefix.stamped) == ("TP3", True)
    _, prefix = split_prefix("(VllmWorker rank=2 pid=9) ERROR 02-19 00:08:10 [core.py:1] x")
    assert (prefix.rank, prefix.level, prefix.proc) == ("rank2", "ERROR", "VllmWorker")


def test_it_leaves_indented_and_plain_lines_alone() -> None:
    for line in ('  File "x.py", line 1, in f', "Plain prose, no logger here.", ""):
        assert strip_prefix(line) == line
        assert not has_prefix(line)


def test_it_strips_colour_and_cursor_codes() -> None:
    assert strip_ansi("\x1b[31mERROR\x1b[0m \x1b]0;title\x07done\x1b[2K") == "ERROR done"


def test_an_error_message_goes_on_over_lines_of_its_own_logger_only() -> None:
    # Same level, same second: only the source file:line tells the two loggers apart.
    log = (
        "ERROR 03-02 10:11:12 [engine.py:88] ValueError: the prompt is longer than max_model_len\n"
        "ERROR 03-02 10:11:12 [engine.py:88] it holds 40960 tokens\n"
        "ERROR 03-02 10:11:12 [launcher.py:41] Shutting down the HTTP server\n"
    )
    (error,) = parse(log).exceptions
    assert error.message == "the prompt is longer than max_model_len\nit holds 40960 tokens"


def test_quote_marks_come_off_but_a_cpp_template_close_stays() -> None:
    assert unquoted("> > RuntimeError: x") == "RuntimeError: x"
    assert unquoted(">") == ""
    assert unquoted(">::type' requested here") == ">::type' requested here"
    assert strip_prefix("> [2026-02-19 00:08:10 TP3] Scheduler hit an exception") == (
        "Scheduler hit an exception"
    )


def test_a_tools_error_label_before_prose_stays_part_of_the_message() -> None:
    # "Error: " comes off only before the exception a command-line tool caught.
    assert strip_prefix("Error: model not found") == "Error: model not found"


def test_an_exception_behind_a_cut_off_prefix_is_read_as_raised() -> None:
    (exc,) = parse(
        "[multiproc_executor.py:492] ValueError: Free memory on device is low"
    ).exceptions

    assert (exc.type, exc.message) == ("ValueError", "Free memory on device is low")
