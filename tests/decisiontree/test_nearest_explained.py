"""What "no known match" tells an engineer: the nearest finding, in words they can check.

One finding below: vLLM's custom all-reduce refusing a board whose GPUs cannot reach
each other (Ada, sm_89). The pastes are other errors from other setups that share a
word or two with it, so the answer names it as the nearest finding and says why it
was not taken.
"""

from __future__ import annotations

import dataclasses

from decisiontree.context import Context, build_context
from decisiontree.diagnose import diagnose
from decisiontree.graph import build_graph
from decisiontree.match import similar_threshold
from decisiontree.records import Change, ChangeAction, Condition, FindingRecord, FixRecord, Outcome

ALLREDUCE_SAMPLE = """\
Traceback (most recent call last):
  File "/opt/venv/lib/python3.12/site-packages/vllm/distributed/device_communicators/custom_all_reduce.py", line 118, in __init__
    handle = ops.init_custom_ar(self.meta_ptrs, self.rank_data, rank, self.fully_connected)
RuntimeError: custom allreduce: peer access between GPU 0 and GPU 3 is not supported by the P2P topology
"""  # noqa: E501
NO_CUSTOM_ALLREDUCE = FixRecord(
    1,
    "Turn custom all-reduce off",
    (Change(ChangeAction.SET_FLAG, "disable-custom-all-reduce", None),),
    Outcome.RESOLVES,
)
ALLREDUCE_TOPOLOGY = FindingRecord(
    id=8,
    title="Custom all-reduce needs peer access the board's PCIe topology lacks",
    kind="incompatibility",
    cause="the board routes the GPUs through separate root complexes",
    samples=(ALLREDUCE_SAMPLE,),
    conditions=(Condition("framework", "vllm"), Condition("gpu.arch", "sm_89")),
    fixes=(NO_CUSTOM_ALLREDUCE,),
)
# An SGLang launch on an H100 that trips over a topology check of its own.
TOPOLOGY_MISMATCH = "ValueError: allreduce topology mismatch"
SGLANG_LAUNCH = "python -m sglang.launch_server --model-path Qwen/Qwen3-8B --tp-size 2"


def on_h100_with_sglang() -> Context:
    return build_context(launch_command=SGLANG_LAUNCH, gpu="H100", framework="sglang")


def test_the_nearest_finding_of_another_error_says_which_error_and_every_setup_difference() -> None:
    result = diagnose(TOPOLOGY_MISMATCH, on_h100_with_sglang(), build_graph([ALLREDUCE_TOPOLOGY]))

    assert result.verdict == "none"
    [near] = result.nearest
    assert near.finding.id == ALLREDUCE_TOPOLOGY.id
    assert near.why_not == (
        "another error (RuntimeError); "
        "different setup: GPU sm_90 here, sm_89 in the finding; "
        "framework sglang here, vllm in the finding; "
        "shares only topology: too little to be the same issue"
    )


def test_the_nearest_finding_keeps_its_match_score_below_the_similar_cut_off() -> None:
    result = diagnose(TOPOLOGY_MISMATCH, on_h100_with_sglang(), build_graph([ALLREDUCE_TOPOLOGY]))

    [near] = result.nearest
    assert 0 < near.score < similar_threshold()


def test_a_none_answer_still_shows_the_error_read_and_the_launch_it_was_read_with() -> None:
    result = diagnose(TOPOLOGY_MISMATCH, on_h100_with_sglang(), build_graph([ALLREDUCE_TOPOLOGY]))

    assert result.signature is not None
    assert result.signature.exception_type == "ValueError"
    assert result.context.framework == "sglang"
    assert result.context.arch == "sm_90"
    assert result.launch_flags == (
        ("--model-path", "Qwen/Qwen3-8B"),
        ("--tp-size", "2"),
    )
    assert result.questions == ()


def test_search_words_put_the_word_no_ordinary_output_has_first() -> None:
    result = diagnose(TOPOLOGY_MISMATCH, on_h100_with_sglang(), build_graph([ALLREDUCE_TOPOLOGY]))

    # "topology" is in no ordinary server output; "allreduce" is, so it comes second.
    assert result.search_words == ("topology", "allreduce")


def test_a_near_finding_of_the_same_error_class_that_shares_only_ordinary_words_says_so() -> None:
    vllm_oom = (
        "Traceback (most recent call last):\n"
        '  File "/srv/vllm/worker/gpu_worker.py", line 220, in determine_num_available_blocks\n'
        "    self.model_runner.profile_run()\n"
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB.\n"
    )
    profile_oom = FindingRecord(
        id=5,
        title="vLLM's profile run exhausts memory at start-up",
        kind="oom",
        cause="the profile run allocates the sampler's worst case on top of the weights",
        samples=(vllm_oom,),
        conditions=(Condition("framework", "vllm"),),
        fixes=(),
    )
    training_oom = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB "
        "during loss.backward() in train.py"
    )

    result = diagnose(training_oom, build_context(), build_graph([profile_oom]))

    # Both first sentences read "CUDA out of memory.": the same message, from other code.
    [near] = result.nearest
    assert near.why_not == (
        "same error message (OutOfMemoryError), raised from other code; "
        "shares only ordinary words: too little to be the same issue"
    )


def test_a_word_two_findings_share_is_too_common_to_name_either_as_nearest() -> None:
    topology_probe = FindingRecord(
        id=9,
        title="The NVLink topology probe hangs on a board with a bridge missing",
        kind="hang",
        cause="the probe waits on a link that is not there",
        samples=("RuntimeError: nvlink topology probe timed out waiting on link 3 of GPU 1",),
        conditions=(),
        fixes=(),
    )

    result = diagnose(
        TOPOLOGY_MISMATCH, build_context(), build_graph([ALLREDUCE_TOPOLOGY, topology_probe])
    )

    assert result.verdict == "none"
    assert result.nearest == ()
    # Too common to name either, yet a search by it lists both.
    assert result.search_words == ("topology",)


# A long message of another error class that names four of the all-reduce sample's own
# identifiers among many words of its own: near, far from similar.
FOUR_IDENTIFIERS = (
    "ValueError: while warming up, the scheduler, watchdog, tokenizer manager, detokenizer, "
    "radix cache, memory pool and cuda graph runner each logged the topology, rank_data, "
    "meta_ptrs and fully_connected state, then the engine stopped"
)
TOPOLOGY_PROBE = FindingRecord(
    id=9,
    title="NCCL finds no path through the board's topology",
    kind="crash",
    cause="the topology file lists a NIC the host does not have",
    samples=("RuntimeError: NCCL error: invalid topology: no path from GPU 2 to NIC mlx5_1",),
    conditions=(),
    fixes=(),
)


def test_the_nearest_finding_names_three_shared_words_each_one_from_the_paste() -> None:
    result = diagnose(FOUR_IDENTIFIERS, on_h100_with_sglang(), build_graph([ALLREDUCE_TOPOLOGY]))

    [near] = result.nearest
    named = near.why_not.split("shares only ")[1].removesuffix(": too little to be the same issue")
    words = named.split(", ")
    assert len(words) == 3
    assert all(word in FOUR_IDENTIFIERS and word in ALLREDUCE_SAMPLE for word in words)


def test_search_words_leave_out_a_word_another_finding_also_has_when_rarer_ones_fill_the_list() -> (
    None
):
    graph = build_graph([ALLREDUCE_TOPOLOGY, TOPOLOGY_PROBE])

    result = diagnose(FOUR_IDENTIFIERS, on_h100_with_sglang(), graph)

    assert [near.finding.id for near in result.nearest] == [ALLREDUCE_TOPOLOGY.id]
    assert len(result.search_words) == 4
    assert all(word in FOUR_IDENTIFIERS for word in result.search_words)
    # "topology" is in both findings, so it tells less than the all-reduce's own words.
    assert "topology" not in result.search_words


def test_an_error_class_the_nearest_finding_shares_is_a_word_to_search_by() -> None:
    illegal_access = FindingRecord(
        id=6,
        title="Warm-up trips an illegal memory access in the MoE kernel",
        kind="crash",
        cause="the fused MoE kernel indexes past the expert buffer",
        samples=(
            "torch.AcceleratorError: CUDA error: an illegal memory access was encountered "
            "in fused_moe_kernel",
        ),
        conditions=(),
        fixes=(),
    )
    # Behind a start-up log long enough that the paste's words run past what a
    # lookup by free text keeps: the error's own words are still the ones to search by.
    start_up = "".join(
        f"[2026-02-19 00:04:{n % 60:02d}] INFO weight_utils.py:88: loaded "
        f"model.layers.{n}.mlp.experts_{n} from shard_{n}\n"
        for n in range(200)
    )
    paste = start_up + (
        "torch.AcceleratorError: the tokenizer manager stopped after the detokenizer "
        "closed its socket"
    )

    result = diagnose(paste, on_h100_with_sglang(), build_graph([illegal_access]))

    [near] = result.nearest
    assert near.why_not.startswith("same error class (AcceleratorError), another message")
    assert "acceleratorerror" in result.search_words


def test_a_finding_that_needs_another_framework_than_yours_says_so_in_the_verdict() -> None:
    # The cause needs anything but SGLang; the paste is the finding's own error, from an
    # SGLang run: the same error, on a setup the finding rules out.
    not_sglang = dataclasses.replace(
        ALLREDUCE_TOPOLOGY, conditions=(Condition("framework", "sglang", negate=True),)
    )

    result = diagnose(ALLREDUCE_SAMPLE, on_h100_with_sglang(), build_graph([not_sglang]))

    assert result.verdict == "different_setup"
    assert [d.describe() for d in result.different_setup] == [
        "framework sglang here, !=sglang in the finding"
    ]


# Two tracebacks cut off before their exception line: FixGraph calls both
# "IncompleteTraceback", which is no class the pastes share.
CUT_CAPTURE = (
    "Traceback (most recent call last):\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", '
    "line 211, in capture_one_batch_size\n"
    "    run_once()\n"
    '  File "/sgl-workspace/sglang/python/sglang/srt/model_executor/cuda_graph_runner.py", '
    "line 200, in run_once\n"
    "    logits_output = forward(input_ids, forward_batch.positions, forward_batch)\n"
)
CUT_TOKENIZER = (
    "Traceback (most recent call last):\n"
    '  File "/opt/venv/lib/python3.12/site-packages/transformers/tokenization_utils_base.py", '
    "line 2016, in from_pretrained\n"
    "    return cls._from_pretrained(\n"
    '  File "/opt/venv/lib/python3.12/site-packages/transformers/models/llama/'
    'tokenization_llama_fast.py", line 124, in __init__\n'
    "    super().__init__(vocab_file=vocab_file, tokenizer_file=tokenizer_file)\n"
)


def test_two_cut_off_tracebacks_share_no_error_class_and_common_words_name_no_finding() -> None:
    capture_crash = FindingRecord(
        id=3,
        title="CUDA-graph capture dies in the model's forward on the first batch size",
        kind="crash",
        cause="the forward pass reaches a kernel that cannot be captured",
        samples=(CUT_CAPTURE,),
        conditions=(),
        fixes=(),
    )

    result = diagnose(CUT_TOKENIZER, build_context(), build_graph([capture_crash]))

    assert result.verdict == "none"
    assert result.nearest == ()


def test_a_nearest_finding_whose_error_names_no_class_is_another_error_message() -> None:
    workspace = FindingRecord(
        id=4,
        title="EngineCore start-up fails: flashinfer workspace buffer too small",
        kind="crash",
        cause="the workspace is sized for fewer sequences than max-num-seqs",
        samples=(
            "ERROR 03-22 09:50:04 [core.py:340] EngineCore failed to start: the flashinfer "
            "workspace buffer of 128 MiB is too small for 64 sequences",
        ),
        conditions=(),
        fixes=(),
    )
    paste = (
        "RuntimeError: flashinfer plan() could not allocate its workspace for the ragged "
        "prefill wrapper"
    )

    result = diagnose(paste, build_context(), build_graph([workspace]))

    [near] = result.nearest
    assert near.why_not.startswith("another error message; shares only workspace")
    assert "ErrorLog" not in near.why_not


def test_a_finding_that_shares_only_an_english_function_word_is_not_named_nearest() -> None:
    # The finding's message says the peers are "not supported by" the topology; the paste
    # says one size is "larger than" another and "without" something: plain English.
    kv_too_small = (
        "ValueError: the KV cache needed for the longest request is larger than the memory "
        "left for it; start without so long a context"
    )
    with_than = dataclasses.replace(
        ALLREDUCE_TOPOLOGY,
        cause="peer access is slower than host copies without a switch on the board",
    )

    result = diagnose(kv_too_small, build_context(), build_graph([with_than]))

    assert result.verdict == "none"
    assert result.nearest == ()
    assert not {"than", "without"} & set(result.search_words)


def test_a_near_finding_with_the_same_ordinary_message_and_no_frames_says_it_is_that_message() -> (
    None
):
    # A bare KeyError names only the key: the same message, with nothing else in common.
    no_architectures = FindingRecord(
        id=6,
        title="The checkpoint's config.json has no architectures list",
        kind="crash",
        cause="a config written by hand, without the architectures the loader looks up",
        samples=("KeyError: 'architectures'",),
        conditions=(),
        fixes=(),
    )

    result = diagnose("KeyError: 'model_type'\n", build_context(), build_graph([no_architectures]))

    [near] = result.nearest
    assert near.why_not == (
        "same error message (KeyError); shares only ordinary words: too little to be the same issue"
    )


def test_a_warning_is_named_by_its_category_and_another_warning_as_a_python_warning() -> None:
    """Every Python warning is one type to the signature; the answer names the paste's by its
    category where the message is the same, and says only "a Python warning" where the
    finding's warning is another (its category may be another too)."""
    from decisiontree.diagnose import why_not
    from decisiontree.fingerprint import signatures_of
    from decisiontree.match import Candidate
    from decisiontree.traceback import parse
    from decisiontree.vocabulary import load

    driver = (
        "/opt/venv/lib/python3.12/site-packages/torch/cuda/__init__.py:182: UserWarning: CUDA "
        "initialization: The NVIDIA driver on your system is too old (found version 11080).\n"
    )
    finding = dataclasses.replace(ALLREDUCE_TOPOLOGY, samples=(driver,), conditions=())
    graph = build_graph([finding])
    paste = (
        "/usr/local/lib/python3.10/dist-packages/torch/cuda/__init__.py:262: UserWarning: "
        "Found GPU0 NVIDIA GeForce GTX 1080 Ti which is of cuda capability 6.1.\n"
    )
    [signature] = signatures_of(parse(paste), warnings=True)
    context = build_context(paste)

    words = Candidate(finding.id, 0.01, "terms", ("cuda",), None)
    assert why_not(words, signature, context, graph, load()).startswith(
        "same error class (a Python warning), another message;"
    )
    same = dataclasses.replace(words, layer="template")
    assert why_not(same, signature, context, graph, load()).startswith(
        "same error message (UserWarning), raised from other code;"
    )
