"""A C++ abort ("terminate called after throwing ...") reads as its exception and message."""

from __future__ import annotations

import pytest

from decisiontree.fingerprint import signatures_of
from decisiontree.traceback import parse


def first_signature(text: str) -> tuple[str, str]:
    signature = signatures_of(parse(text))[0]
    return signature.exception_type, signature.message


def test_a_cpp_class_name_with_underscores_reads_like_a_python_exception() -> None:
    abort = (
        "terminate called after throwing an instance of 'vendor::Kernel_Launch_Error'\n"
        "  what():  grid of 0 blocks\n"
    )
    assert first_signature(abort) == ("KernelLaunchError", "grid of <num> blocks")


def test_a_what_message_that_quotes_another_keeps_the_inner_one_as_written() -> None:
    abort = (
        "terminate called after throwing an instance of 'std::runtime_error'\n"
        "  what():  worker 3 stopped: what():  queue closed\n"
    )
    assert first_signature(abort) == (
        "RuntimeError",
        "worker <num> stopped: what(): queue closed",
    )


NATIVE_STACKS = {
    "tensorrt-llm": (
        "1       0x7f3a5c2e1f5d tensorrt_llm::common::throwRuntimeError(char const*, int, "
        "std::string const&) + 77\n"
        "2       0x7f3a5c31a1c2 tensorrt_llm::batch_manager::KvCacheManager::allocate(int) + 946\n"
    ),
    "gdb": (
        "#0  0x00007f2b1c2d3e4f in ncclCommInitRankFailed () from /usr/lib/libnccl.so.2\n"
        "#1  0x00007f2b1c2a1b2c in reportError(int) () from /usr/lib/libnccl.so.2\n"
    ),
    "backtrace_symbols": (
        "/lib/x86_64-linux-gnu/libc.so.6(+0x42520) [0x7f2b3c842520]\n"
        "/usr/lib/libcuda.so.1(cuGetErrorString+0x1f3) [0x7f2b1a0b1c23]\n"
    ),
    "boost": "3# handleError(int) at /src/app/errors.cpp:41\n",
}


@pytest.mark.parametrize("stack", NATIVE_STACKS.values(), ids=NATIVE_STACKS)
def test_the_calls_of_a_native_stack_are_not_errors_whatever_their_names_say(stack: str) -> None:
    # Every error of the library passes through its throwRuntimeError: read as an error
    # line of its own, that call made two different failures look like one.
    error = "[TensorRT-LLM][ERROR] Assertion failed: maxBlocks > 0 (kvCacheManager.cpp:412)\n"
    signatures = signatures_of(parse(error + stack))

    assert [s.message.split(":")[0] for s in signatures] == ["[TensorRT-LLM] Assertion failed"]
