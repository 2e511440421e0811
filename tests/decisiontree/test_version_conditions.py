"""Conditions on versions compare releases, and agree with the flag speller about them."""

from __future__ import annotations

import pytest

from decisiontree.context import Context
from decisiontree.records import Condition
from decisiontree.setup import State, assess
from decisiontree.vocabulary import load


def at(release: str) -> Context:
    return Context(framework="sglang", framework_version=release)


def test_the_flag_speller_and_the_conditions_agree_about_a_post_release() -> None:
    """Bug: one parser read 0.5.9.post1 as 0.5.9, the other as 0.5.9.1."""
    for release in ("0.5.8", "0.5.9", "0.5.9.post1", "0.5.10"):
        old_spelling = (
            load().spell("dsa-decode-backend", "sglang", release) == "--nsa-decode-backend"
        )
        up_to = assess(Condition("framework.version", "<=0.5.9"), at(release), load()) is State.MET
        assert old_spelling == up_to, release


def test_a_framework_version_condition_is_met_by_a_local_build() -> None:
    """Bug: `version_satisfies("2.8.0+cu128", "==2.8.0")` was false."""
    context = at("2.8.0+cu128")
    condition = Condition("framework.version", "==2.8.0")
    assert assess(condition, context, load()) is State.MET


@pytest.mark.parametrize(
    ("torch", "wanted", "state"),
    [
        ("2.10.0+cu130", ">=2.9", State.MET),  # as text, "2.10" < "2.9"
        ("2.8.0", ">=2.9", State.CONTRADICTED),
        ("2.9.1+cu128", "2.9", State.MET),
    ],
)
def test_a_package_version_condition_compares_versions_not_text(
    torch: str, wanted: str, state: State
) -> None:
    """Bug: `version.*` conditions were compared as strings."""
    context = Context(versions={"torch": torch})
    assert assess(Condition("version.torch", wanted), context, load()) is state
