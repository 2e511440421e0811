"""Fix text becomes structured changes: env vars taken away, and fixes told only in words."""

import pytest

from decisiontree.documents._vocab import default_vocabulary as vocabulary
from decisiontree.documents.changes import changes_in, worded_change
from decisiontree.records import Change, ChangeAction


def other(text):
    return Change(ChangeAction.OTHER, "other", text)


@pytest.mark.parametrize(
    ("text", "name"),
    [
        ("Unset `TORCHINDUCTOR_MAX_AUTOTUNE` and restarted.", "TORCHINDUCTOR_MAX_AUTOTUNE"),
        (
            "We removed the env var SGLANG_ENABLE_JIT_DEEPGEMM from the unit.",
            "SGLANG_ENABLE_JIT_DEEPGEMM",
        ),
        ("Dropping NCCL_IB_DISABLE=1 from the pod spec", "NCCL_IB_DISABLE"),
    ],
)
def test_it_reads_an_env_var_taken_away_as_an_unset(text, name):
    assert changes_in(text, vocabulary(), "vllm") == (
        Change(ChangeAction.OTHER, name, f"unset {name}"),
    )


def test_an_env_var_set_is_still_a_set():
    assert changes_in("Exporting NCCL_IB_DISABLE=1 on both hosts", vocabulary()) == (
        Change(ChangeAction.SET_ENV, "NCCL_IB_DISABLE", "1"),
    )


@pytest.mark.parametrize(
    ("text", "action"),
    [
        (
            "We fixed it by reflashing the NIC firmware on node 3.",
            "reflashing the NIC firmware on node 3",
        ),
        (
            "The real fix was to enable persistence mode, after which it held.",
            "enable persistence mode",
        ),
        (
            "What eventually worked was moving the cache dir off NFS (it was slow).",
            "moving the cache dir off NFS",
        ),
        ("Reseating the riser card solved the problem.", "Reseating the riser card"),
        (
            "Fixed by pinning the container to one NUMA node; latency is flat now.",
            "pinning the container to one NUMA node",
        ),
    ],
)
def test_it_takes_a_fix_told_in_words_as_an_other_change(text, action):
    assert worded_change(text) == other(action)


@pytest.mark.parametrize(
    "text",
    [
        "The fix is in PR #2211.",
        "The solution was simple.",
        "Fixed it.",
        "We rebooted the host and looked at dmesg.",  # an action, but no word says it fixed anything
    ],
)
def test_it_takes_no_words_for_a_fix_without_an_action_and_a_cue(text):
    assert worded_change(text) is None


def test_the_first_sentence_under_a_fix_heading_needs_no_cue_but_an_action():
    assert worded_change(
        "Rebuilt the image on the 12.8 base, nothing else changed.", opens_fix_section=True
    ) == other("Rebuilt the image on the 12.8 base")
    assert worded_change("Weights were fine, then nothing.", opens_fix_section=True) is None


@pytest.mark.parametrize(
    "text, framework, described",
    [
        (
            "We switched the attention backend from flashinfer to triton.",
            "sglang",
            "--attention-backend triton",
        ),
        ("Then I forced the FP8 GEMM backend to cutlass.", "sglang", "--fp8-gemm-backend cutlass"),
        (
            "Setting the NSA decode backend to trtllm was next.",
            "sglang",
            "--dsa-decode-backend trtllm",
        ),
        ("We changed the kv cache dtype to fp8.", "vllm", "--kv-cache-dtype fp8"),
    ],
)
def test_a_flag_named_in_words_and_set_to_one_of_its_values_is_a_change(text, framework, described):
    assert [c.describe() for c in changes_in(text, vocabulary(), framework)] == [described]


@pytest.mark.parametrize(
    "text",
    [
        "The NSA decode backend was set to flashmla_kv by the server.",  # a description
        "We switched the attention backend to something faster.",  # not a value it takes
        "We switched the attention backend to --attention-backend triton.",  # spelled: once
    ],
)
def test_no_change_in_words_from_a_description_or_a_value_the_flag_does_not_take(text):
    found = [c.describe() for c in changes_in(text, vocabulary(), "sglang")]
    assert found == (["--attention-backend triton"] if "--" in text else [])
