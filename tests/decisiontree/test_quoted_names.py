"""A name a message quotes is what the message is about; a structure it prints is data.

"No module named 'vllm._C'" and "No module named 'flash_attn'" share their template (the
quoted value is masked, so the fingerprint of one import stays one error), but not their
failure: the module named says which. An HTTP error's JSON body quotes its keys and
values in every error the server answers; those quotes say nothing.
"""

from __future__ import annotations

from decisiontree.context import Context
from decisiontree.diagnose import diagnose
from decisiontree.graph import KnowledgeGraph, build_graph
from decisiontree.records import FindingRecord, FixRecord, Outcome


def import_failure(frames: list[tuple[str, str]], module: str) -> str:
    """A traceback of an import chain through `frames` (path, code), outermost first."""
    lines = ["Traceback (most recent call last):"]
    for number, (path, code) in enumerate(frames, start=1):
        lines += [f'  File "{path}", line {number * 12}, in <module>', f"    {code}"]
    lines.append(f"ModuleNotFoundError: No module named '{module}'")
    return "\n".join(lines) + "\n"


UNBUILT_CHECKOUT = import_failure(
    [
        ("/home/dev/src/vllm/vllm/entrypoints/openai/api_server.py", "from vllm import envs"),
        ("/home/dev/src/vllm/vllm/platforms/cuda.py", "import vllm._C  # noqa"),
    ],
    "vllm._C",
)
NO_FLASH_ATTENTION = import_failure(
    [
        ("/opt/venv/lib/python3.11/site-packages/mymodel/modeling.py", "import flash_attn"),
    ],
    "flash_attn",
)


def finding(number: int, title: str, sample: str) -> FindingRecord:
    fix = FixRecord(number, f"what fixed: {title}", (), Outcome.RESOLVES)
    return FindingRecord(number, title, "crash", "", (sample,), (), (fix,))


def graph_of(*findings: FindingRecord) -> KnowledgeGraph:
    return build_graph(list(findings))


def test_the_module_a_message_names_finds_the_finding_of_that_module() -> None:
    graph = graph_of(
        finding(1, "vLLM run from a checkout without its kernels", UNBUILT_CHECKOUT),
        finding(2, "the model's code needs flash-attn", NO_FLASH_ATTENTION),
    )
    # Started through another entry point: the import of vllm._C alone is printed.
    paste = import_failure(
        [("/home/ops/vllm/vllm/platforms/cuda.py", "import vllm._C  # noqa")], "vllm._C"
    )

    result = diagnose(paste, Context(), graph)

    assert result.verdict in ("known", "similar")
    assert result.fixes[0].finding.id == 1


def test_another_missing_module_is_not_the_finding_of_the_first() -> None:
    graph = graph_of(finding(1, "vLLM run from a checkout without its kernels", UNBUILT_CHECKOUT))
    paste = NO_FLASH_ATTENTION.replace("mymodel", "othermodel")

    result = diagnose(paste, Context(), graph)

    assert result.verdict == "none"


def http_error(message: str) -> str:
    body = (
        f"{{'object': 'error', 'message': '{message}', 'type': 'BadRequestError', "
        "'param': None, 'code': 400}"
    )
    return f"openai.BadRequestError: Error code: 400 - {body}\n"


def test_the_quotes_of_an_http_error_body_are_data_not_names() -> None:
    graph = graph_of(
        finding(
            1,
            "the served name is not the one requested",
            http_error("The model `llama-3-8b` does not exist."),
        )
    )

    result = diagnose(http_error("Input should be a valid list of tool calls"), Context(), graph)

    assert result.verdict == "none"
