"""Versions are read as pip reads them, by every reader."""

from __future__ import annotations

import pytest
from packaging.version import Version

from decisiontree.versions import (
    is_specifier,
    package_key,
    parse,
    satisfies,
    sort_key,
    version_text,
)


@pytest.mark.parametrize(
    ("actual", "wanted", "expected"),
    [
        ("2.8.0+cu128", "==2.8.0", True),  # a local build label is not another release
        ("2.8.0+cu128", "2.8.0", True),
        ("2.8.1", "==2.8.0", False),
        ("0.5.9.post1", "0.5.9", True),  # a bare version: that release and its post releases
        ("0.5.9.post1", ">=0.5.9", True),
        ("0.5.9.post1", ">0.5.9", False),  # PEP 440: ">V" leaves out V's post releases
        ("0.5.9.post1", "<=0.5.9", False),
        ("0.5.10", "<0.5.9", False),  # 10 > 9, not "1" < "9"
        ("0.5.10", "0.5", True),
        ("0.6.0rc1", ">=0.5", True),  # a release candidate someone runs counts
        ("2.9.1+cu128", ">=2.8,<2.10", True),
        ("v0.11.0", "~=0.11.0", True),
        ("main", "main", True),
        ("main", ">=0.5", False),
    ],
)
def test_it_compares_releases_as_pip_does(actual: str, wanted: str, expected: bool) -> None:
    assert satisfies(actual, wanted) is expected


def test_it_reads_the_version_a_text_starts_with() -> None:
    assert str(parse("v0.5.9.post1 (git 1a2b)")) == "0.5.9.post1"
    assert str(parse("0.5.4-cu129")) == "0.5.4"  # a docker tag suffix is not a pre-release
    assert parse("from source") is None
    assert version_text("2.9.1+cu128 (built 2026)") == "2.9.1+cu128"


def test_package_names_have_one_key() -> None:
    assert package_key("PyTorch") == "torch"
    assert package_key("flashinfer_python") == "flashinfer"
    assert package_key("NVIDIA driver") == "driver"


# --- found by `make mutation`: each test below failed on a mutant that survived -------


def test_a_release_candidate_meets_a_lower_bound() -> None:
    """A user who runs 0.6.0rc1 runs something newer than 0.5.9."""
    assert satisfies("0.6.0rc1", ">=0.5.9")
    assert not satisfies("0.6.0rc1", "<0.5.9")


def test_a_version_never_equals_a_word() -> None:
    assert not satisfies("0.5.9", "main")
    assert not satisfies("main", ">=0.5.9")
    assert satisfies("Main", "main")


def test_releases_sort_as_versions_and_words_first() -> None:
    assert sorted(["0.5.10", "main", "0.5.9"], key=sort_key) == ["main", "0.5.9", "0.5.10"]


def test_a_version_pip_cannot_read_is_read_as_its_release() -> None:
    assert parse("3.0-alpha.beta") == Version("3.0")
    assert satisfies("3.0-alpha.beta", "==3.0")


def test_it_tells_a_version_requirement_from_other_text() -> None:
    assert is_specifier(">=0.5.9") and is_specifier("0.5") and is_specifier("~=2.8.0")
    assert not is_specifier("main") and not is_specifier(">=main")
