"""A C++ abort ("terminate called after throwing ...") reads as its exception and message."""

from __future__ import annotations

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
