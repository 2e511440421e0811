"""The Copy button's command: the user's launch command with a suggested fix applied."""

from __future__ import annotations

from kb.views.launch import corrected_command

QWEN = "vllm serve --enforce-eager Qwen/Qwen3-8B -tp 2"


def fix(*changes: tuple[str, str, str | None], spelled: list[str]) -> dict[str, object]:
    """A fix as the diagnosis hands it to the page."""
    return {
        "changes": [{"action": a, "name": n, "value": v} for a, n, v in changes],
        "command_changes": spelled,
    }


def test_removing_a_boolean_flag_keeps_the_model() -> None:
    """Bug: the editor took the model after `--enforce-eager` for the flag's value."""
    drop = fix(("remove_flag", "enforce-eager", None), spelled=["remove --enforce-eager"])

    assert corrected_command(QWEN, drop, "vllm") == "vllm serve Qwen/Qwen3-8B -tp 2"


def test_setting_a_flag_replaces_its_short_spelling() -> None:
    """Bug: `-tp 2` stayed and `--tensor-parallel-size 4` was appended."""
    wider = fix(("set_flag", "tensor-parallel-size", "4"), spelled=["--tensor-parallel-size 4"])

    assert corrected_command(QWEN, wider, "vllm") == (
        "vllm serve --enforce-eager Qwen/Qwen3-8B --tensor-parallel-size 4"
    )


def test_it_offers_no_command_when_the_fix_changes_no_flag() -> None:
    upgrade = fix(
        ("pin_version", "flashinfer-python", "0.6.3"), spelled=["flashinfer-python==0.6.3"]
    )

    assert corrected_command(QWEN, upgrade, "vllm") is None
    assert corrected_command("  ", fix(("remove_flag", "x", None), spelled=[]), "vllm") is None
