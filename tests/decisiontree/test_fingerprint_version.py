"""Fingerprints carry an explicit version; reviewers' decisions survive a bump."""

from decisiontree.fingerprint import (
    FINGERPRINT_VERSION,
    PREVIOUS_FINGERPRINT_VERSION,
    Signature,
    quoted_error,
    signature_of,
)
from decisiontree.match import Query, SignatureIndex
from decisiontree.traceback import parse

SCHEDULER_CRASH = """\
Traceback (most recent call last):
  File "/opt/conda/lib/python3.11/site-packages/sglang/srt/managers/scheduler.py", line 2210, in run_scheduler_process
    scheduler = Scheduler(server_args, port_args, gpu_id, tp_rank, dp_rank)
  File "/opt/conda/lib/python3.11/site-packages/sglang/srt/model_executor/model_runner.py", line 412, in init_memory_pool
    raise RuntimeError(f"Not enough memory for KV cache: page_size={page_size} tokens={n}")
RuntimeError: Not enough memory for KV cache: page_size=64 tokens=1200
"""
QUANT_METHOD = "ValueError: Unknown quantization method 'mxfp4_custom' for model 'acme/Foo-7B'"
STATE_DICT = """\
Traceback (most recent call last):
  File "/srv/app/load.py", line 9, in main
    model.load_state_dict(state)
RuntimeError: Error(s) in loading state_dict for LlamaForCausalLM:
\tMissing key(s) in state_dict: "lm_head.weight".
"""
# What 029593a (fingerprint version 2) stored for these pastes.
STORED_UNDER_VERSION_2 = {
    SCHEDULER_CRASH: "d85859eba9fa96bab4c0bb82de4c1b34",
    QUANT_METHOD: "e16aa726020d5fa3c46f39693ec4403f",
    STATE_DICT: "52d6924da5523e33cc724c79d400d1f7",
}
OTHER_BUG = "RuntimeError: NCCL communicator was aborted after the watchdog fired on ibv_poll_cq"


def sign(text: str) -> Signature:
    signature = signature_of(parse(text))
    assert signature is not None
    return signature


def test_the_version_is_a_number_bumped_on_purpose_with_the_previous_one_kept() -> None:
    assert FINGERPRINT_VERSION == 3
    assert PREVIOUS_FINGERPRINT_VERSION == 2


def test_during_the_transition_a_signature_carries_what_version_2_stored() -> None:
    for text, stored in STORED_UNDER_VERSION_2.items():
        signature = sign(text)

        assert signature.previous_fingerprint == stored
        assert signature.fingerprint != stored


def test_version_2_reads_quoted_values_as_parameters_of_the_message() -> None:
    one = sign(QUANT_METHOD)
    other = sign("ValueError: Unknown quantization method 'w4a4_nvfp4' for model 'org/Bar-70B'")

    assert one.template == "Unknown quantization method <q> for model <q>"
    assert one.fingerprint == other.fingerprint


def test_version_3_reads_a_line_that_ends_in_a_colon_with_the_line_it_announces() -> None:
    missing = sign(STATE_DICT)
    mismatch = sign(
        STATE_DICT.replace(
            'Missing key(s) in state_dict: "lm_head.weight".',
            "size mismatch for model.embed_tokens.weight: copying a param with shape "
            "torch.Size([32000, 4096]) from checkpoint, the shape in current model is "
            "torch.Size([32001, 4096]).",
        )
    )

    assert missing.template == (
        "Error(s) in loading state_dict for LlamaForCausalLM: Missing key(s) in state_dict: <q>."
    )
    assert missing.fingerprint != mismatch.fingerprint
    assert missing.previous_fingerprint == mismatch.previous_fingerprint  # version 2: one error


def index_with(*decided: tuple[str, str, int]) -> SignatureIndex:
    """An index of two findings and reviewer decisions (kind, fingerprint, finding)."""
    index = SignatureIndex()
    for kind, fingerprint, finding_id in decided:
        (index.link if kind == "link" else index.split)(fingerprint, finding_id)
    index.add(1, sign(OTHER_BUG))
    index.add(2, sign(SCHEDULER_CRASH))
    index.finish()
    return index


def test_a_reviewers_link_stored_under_version_2_still_links_after_the_bump() -> None:
    index = index_with(("link", STORED_UNDER_VERSION_2[SCHEDULER_CRASH], 1))

    found = index.lookup([Query.of(sign(SCHEDULER_CRASH))])

    assert (found[0].finding_id, found[0].layer) == (1, "linked")
    # The caller is told which old fingerprint matched, to store the link anew.
    assert found[0].migrated_from == STORED_UNDER_VERSION_2[SCHEDULER_CRASH]
    assert found[0].known_fingerprint == STORED_UNDER_VERSION_2[SCHEDULER_CRASH]


def test_a_reviewers_split_stored_under_version_2_still_splits_after_the_bump() -> None:
    before = index_with().lookup([Query.of(sign(SCHEDULER_CRASH))])
    after = index_with(("split", STORED_UNDER_VERSION_2[SCHEDULER_CRASH], 2)).lookup(
        [Query.of(sign(SCHEDULER_CRASH))]
    )

    assert before[0].finding_id == 2
    assert all(candidate.finding_id != 2 for candidate in after)


def test_a_link_under_the_current_version_needs_no_migration() -> None:
    index = index_with(("link", sign(SCHEDULER_CRASH).fingerprint, 1))

    found = index.lookup([Query.of(sign(SCHEDULER_CRASH))])

    assert (found[0].finding_id, found[0].layer, found[0].migrated_from) == (1, "linked", None)


def test_an_error_announced_by_a_colon_is_quoted_with_the_line_it_announces() -> None:
    parsed = parse(STATE_DICT)

    quoted = quoted_error(parsed, sign(STATE_DICT).exception_type)

    assert quoted.lines == (
        "RuntimeError: Error(s) in loading state_dict for LlamaForCausalLM: "
        'Missing key(s) in state_dict: "lm_head.weight".',
    )
