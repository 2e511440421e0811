"""Patterns gated by what they need: skipping one never changes what a paste reads as.

Fingerprints are keyed by the masked message, and reviewers' link/split decisions by the
fingerprint: a gate that skipped a pattern which could have matched would move them.
"""

import pytest

from decisiontree.fingerprint import normalise_message
from decisiontree.gated import GatedPattern
from decisiontree.terms import facets_of, words_of
from tests.decisiontree.pastes import TRACEBACKS
from tests.decisiontree.test_fingerprint import MASKED

# Lines the gates must not change: every line of the traceback fixtures, the masking
# examples, and shapes that sit at a gate's edge (a case-blind error word, a path with
# backslashes, a size in bytes, a UUID of letters only, a demangled symbol).
EDGE_LINES = [
    "CUDA ERROR: Code=700 returned (0x2bc)",
    "ſtatus 12 from the runtime",
    r"C:\Users\ana\venv\Lib\site-packages\torch\lib\c10_cuda.dll failed",
    "allocated 1048576 bytes, 2 GiB free, 0x7f00 base",
    "request 'deadbeef-cafe-babe-face-feedfacecafe' dropped",
    "#3 _ZN3c106detail14torchCheckFailEPKcS2_jRKSs at libc10.so.2",
    "see https://example.org/a/b?x=1 for vllm 0.8.5.post1",
]


def _lines() -> list[str]:
    lines = {
        line
        for path in TRACEBACKS.glob("*.txt")
        for line in path.read_text(encoding="utf-8").splitlines()
    }
    return sorted(lines | {message for message, _ in MASKED} | set(EDGE_LINES))


def _readings(lines: list[str]) -> list[tuple[str, list[str], object]]:
    return [(normalise_message(line), words_of(line), facets_of(line)) for line in lines]


def test_every_pattern_run_everywhere_reads_each_line_as_the_gated_ones_do(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    lines = _lines()
    gated = _readings(lines)

    monkeypatch.setattr(GatedPattern, "may_match", lambda self, text, has_digit: True)
    ungated = _readings(lines)

    assert len(lines) > 500
    for line, with_gates, without in zip(lines, gated, ungated, strict=True):
        assert with_gates == without, line
    # The lines exercise the patterns, not only text without numbers or paths.
    assert sum(masked != line for line, (masked, _, _) in zip(lines, gated, strict=True)) > 50
