"""How an answer writes a fix's change that is no flag: a pin, an environment variable."""

from __future__ import annotations

from decisiontree.records import Change, ChangeAction
from decisiontree.spelling import spell_change


def test_a_pin_reads_as_pip_writes_it_and_without_a_release_as_the_package() -> None:
    pinned = Change(ChangeAction.PIN_VERSION, "flashinfer-python", "0.4.1")
    unpinned = Change(ChangeAction.PIN_VERSION, "flashinfer-python")

    assert spell_change(pinned, "sglang", "0.5.9") == "flashinfer-python==0.4.1"
    assert spell_change(unpinned, "sglang", "0.5.9") == "flashinfer-python"
