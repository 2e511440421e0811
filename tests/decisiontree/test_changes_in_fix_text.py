"""The changes a fix's words ask for, as a reader of FINDINGS.md, a write-up or the review form
gets them back: values kept whole, upgrades as pins, fixes told in words, our own summary."""

from __future__ import annotations

from decisiontree import vocabulary
from decisiontree.documents import extract_document
from decisiontree.documents.changes import changes_from_lines, summarize
from decisiontree.records import Change, ChangeAction, Outcome


def fix_changes(*fixes: str) -> list[tuple[Change, ...]]:
    document = extract_document(
        "## Sparse attention crashes on the workstation cards\n"
        "- Framework: vllm 0.11.0\n"
        "- Error: RuntimeError: CUDA error: no kernel image is available for execution\n"
        + "".join(f"- Fix: {fix}\n" for fix in fixes),
        "FINDINGS.md",
    )
    assert document.format == "findings_md"
    return [fix.changes for fix in document.findings[0].fixes]


def test_a_backend_whose_name_ends_in_x_keeps_it_as_a_flag_value_or_in_words():
    assert fix_changes("--attention-backend B12X", "Switched the attention backend to B12X.") == [
        (Change(ChangeAction.SET_FLAG, "attention-backend", "B12X"),),
        (Change(ChangeAction.SET_FLAG, "attention-backend", "B12X"),),
    ]


def test_an_upgrade_in_words_pins_the_package_and_an_env_value_keeps_its_last_letter():
    assert fix_changes(
        "Upgraded transformers to 5.3.0 and rebuilt with TORCH_CUDA_ARCH_LIST=12.0+PTX"
    ) == [
        (
            Change(ChangeAction.PIN_VERSION, "transformers", "5.3.0"),
            Change(ChangeAction.SET_ENV, "TORCH_CUDA_ARCH_LIST", "12.0+PTX"),
        )
    ]


def test_a_fix_told_in_words_may_speak_of_it():
    document = extract_document(
        "# Engine dies at start-up\n\n"
        "The server on our two H100s stopped at start-up with\n\n"
        "```\nRuntimeError: CUDA error: an illegal memory access was encountered\n```\n\n"
        "We fixed it by rebuilding it against CUDA 12.8.\n",
        "incident.md",
    )

    (fix,) = document.findings[0].fixes
    assert fix.changes == (Change(ChangeAction.OTHER, "other", "rebuilding it against CUDA 12.8"),)
    assert fix.outcome is Outcome.RESOLVES
    assert fix.summary == "Rebuild it against CUDA 12.8"


def test_a_reviewers_line_in_words_is_summarised_as_an_instruction_without_its_full_stop():
    changes = changes_from_lines("restarted the router.", vocabulary.load())

    assert changes == (Change(ChangeAction.OTHER, "other", "restarted the router."),)
    assert summarize(changes) == "Restart the router"


def test_words_after_to_are_a_value_only_when_they_fit_the_flag():
    """Bug: "lower --max-model-len to the model's own length" set it to "the"."""
    assert fix_changes(
        "lower --max-model-len to the model's own length",
        "set --gpu-memory-utilization to 0.95",
    ) == [
        (Change(ChangeAction.SET_FLAG, "max-model-len", None),),
        (Change(ChangeAction.SET_FLAG, "gpu-memory-utilization", "0.95"),),
    ]
