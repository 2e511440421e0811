"""Facts a free-form write-up states in passing: the model, its figures, the flags in its prose,
and a relaunch quoted inside a sentence."""

from __future__ import annotations

from decisiontree.documents import extract_document
from decisiontree.records import Change, ChangeAction, Outcome

ERROR_BLOCK = "```\nRuntimeError: CUDA error: an illegal memory access was encountered\n```\n"


def only_finding(text: str):
    document = extract_document(text, "incident.md")
    assert document.format == "writeup"
    (finding,) = document.findings
    return finding


def test_a_model_repo_named_in_the_prose_is_the_model_and_a_path_like_word_is_not():
    finding = only_finding(
        "# Streaming replies cut off\n\n"
        "We host acme/chat-large behind the usual client/server split on two H100s.\n"
        "Every long answer stopped halfway with\n\n"
        f"{ERROR_BLOCK}\n"
        "Lowering `--max-num-seqs` to 64 made it go away.\n"
    )

    assert finding.model == "acme/chat-large"


def test_a_known_model_brings_its_architecture():
    finding = only_finding(
        "# Warm-up never finishes\n\n"
        "The service runs Qwen/Qwen3-8B on one H100 with vLLM 0.11.0, and the first batch\n"
        "after a restart failed with\n\n"
        f"{ERROR_BLOCK}\n"
        "Adding `--enforce-eager` fixed it.\n"
    )

    assert (finding.model, finding.model_arch) == ("Qwen/Qwen3-8B", "qwen3")


def test_the_figures_kept_are_the_last_reported_throughput_and_concurrency():
    finding = only_finding(
        "# Decode slower than the week before\n\n"
        "On two H100s with SGLang 0.5.9 we measured 2.1k tok/s at concurrency 64 last week.\n"
        "This week the same load crashed with\n\n"
        f"{ERROR_BLOCK}\n"
        "Pinning flashinfer==0.4.1 fixed it; the rerun gave 1,930 tok/s at concurrency 32.\n"
    )

    assert finding.metrics.throughput_tok_s == 1930.0
    assert finding.metrics.concurrency == 32


def test_flags_in_the_prose_are_read_in_the_frameworks_own_table():
    finding = only_finding(
        "# Garbled replies from the quantized checkpoint\n\n"
        "We serve acme/chat-large with vLLM 0.11.0 on two H100s. The server was started\n"
        "with --kv-cache-dtype fp8 and --max-num-seqs 128.\n\n"
        "The replies came back as noise, and then the engine died:\n\n"
        f"{ERROR_BLOCK}\n"
        "Switching to `--kv-cache-dtype auto` fixed it.\n"
    )

    assert finding.framework == "vllm"
    assert dict(finding.flags) == {"kv-cache-dtype": "fp8", "max-num-seqs": "128"}


def test_a_relaunch_quoted_inside_a_sentence_is_that_sentences_attempt():
    finding = only_finding(
        "# Replies stop after a few tokens\n\n"
        "We run acme/chat-large on 2x H100 with SGLang 0.5.9:\n\n"
        "```\n"
        "python -m sglang.launch_server --model-path acme/chat-large --tp-size 2 "
        "--attention-backend flashinfer\n"
        "```\n\n"
        "Every long request died with this:\n\n"
        f"{ERROR_BLOCK}\n"
        "Then we relaunched with `python -m sglang.launch_server --model-path acme/chat-large "
        "--tp-size 2 --attention-backend triton` and that fixed it.\n"
    )

    assert [(fix.changes, fix.outcome) for fix in finding.fixes] == [
        ((Change(ChangeAction.SET_FLAG, "attention-backend", "triton"),), Outcome.RESOLVES)
    ]
    assert finding.status == "resolved"
