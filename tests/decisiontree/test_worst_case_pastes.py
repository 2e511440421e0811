"""Pastes built to cost CPU still get their answer: the work budget reads what matters.

No timing is asserted here (bench/diagnose_speed.py prints the figures): each test
checks that the error at the end of a 2 MB paste is still the error diagnosed.
"""

import pytest

from decisiontree.context import Context, build_context
from decisiontree.diagnose import diagnose
from decisiontree.graph import build_graph
from decisiontree.records import Change, ChangeAction, FindingRecord, FixRecord, Outcome
from decisiontree.traceback import MAX_INPUT_CHARS, MAX_LINES, parse

ERROR = (
    "Traceback (most recent call last):\n"
    '  File "/srv/venv/lib/python3.12/site-packages/lmcache/storage/remote.py", line 310, in put\n'
    "    self._client.write_chunk(key, payload)\n"
    "lmcache.errors.ChunkTooLarge: chunk of 65536 tokens exceeds the remote backend limit\n"
)
FINDING = FindingRecord(
    id=1,
    title="Remote KV store refuses chunks above its limit",
    kind="crash",
    cause="the remote backend caps one chunk",
    samples=(ERROR.replace("65536", "131072"),),
    conditions=(),
    fixes=(
        FixRecord(
            11,
            "Lower the chunk size",
            (Change(ChangeAction.SET_FLAG, "chunk-size", "256"),),
            Outcome.RESOLVES,
        ),
    ),
)


def padded(filler: str) -> str:
    room = MAX_INPUT_CHARS - len(ERROR)
    return (filler * (room // len(filler) + 1))[:room] + ERROR


def under_a_table_row(filler: str) -> str:
    """A model table's row, then `filler` rows wrapped from it, then the error."""
    row = "| generator | 1 | UNAVAILABLE: the status of this model goes on |\n"
    room = MAX_INPUT_CHARS - len(ERROR) - len(row)
    return row + filler * (room // len(filler)) + ERROR


WORST_CASES = {
    "commas": padded("a,b,,c,"),
    "newlines": padded("\n"),
    "crlf": padded("x\r\n"),
    "flags on one line": padded("--opt-flag 1 "),
    "flags one per line": padded("--opt-flag-name value\n"),
    "carriage returns": padded("progress 10%\r"),
    "repeated tracebacks": padded('Traceback (most recent call last):\n  File "/a.py", line 1\n'),
    "one table cell wrapped over every line": under_a_table_row("|  |  | and on and on |\n"),
    # A logged exception's repr never closed, and reprs inside words: read at the message's
    # start only (searched for, each line once took seconds).
    "a logged repr left open": padded(
        "ERROR 03-02 10:00:01 [x.py:1] ValueError('" + "a" * 60_000 + "\n"
    ),
    "reprs inside words": padded("ValueError('x' " * 4_000 + "\n"),
    "errors quoted in errors": padded("RuntimeError: failed with error '" + "b" * 1_990 + " "),
    "shell error records": padded(
        "p : x\nAt line:1 char:1\n+ x\n    + FullyQualifiedErrorId : E\n"
    ),
}


@pytest.mark.parametrize("name", sorted(WORST_CASES))
def test_the_error_after_two_megabytes_of_filler_is_still_diagnosed(name: str) -> None:
    graph = build_graph([FINDING])

    result = diagnose(WORST_CASES[name], Context(), graph)

    assert result.signature is not None
    assert result.signature.exception_type == "ChunkTooLarge"
    assert [fix.fix.id for fix in result.fixes] == [11]


def test_a_paste_longer_than_the_budget_is_read_at_its_start_and_its_end() -> None:
    start = "ValueError: the first error, at the very top\n"
    middle = "INFO step done\n" * (MAX_LINES * 2)
    parsed = parse(start + middle + ERROR)

    messages = [exc.message for exc in parsed.exceptions]
    assert messages[0] == "the first error, at the very top"
    assert messages[-1].startswith("chunk of 65536 tokens")
    assert parsed.truncated  # the omitted middle is said, not hidden


# Megabytes of a launch's or a printout's first words: finding the command the paste holds
# reads each once (these once took minutes: every marker scanned the rest of the line).
COMMAND_BAIT = {
    "docker run, never an image": "docker run " * 180_000,
    "assignments, then a command": "A=1 " * 500_000 + "x python -m sglang.launch_server --tp 1",
    "ServerArgs( over and over": "ServerArgs(" * 180_000,
    "non-default args over and over": "non-default args: {" * 100_000,
    "LLM engine, never its config": "LLM engine " * 180_000 + "\n",
}


@pytest.mark.parametrize("name", sorted(COMMAND_BAIT))
def test_a_paste_baiting_the_command_finder_gets_no_command(name: str) -> None:
    # (A launch starts within the first 4000 characters of its line: the one after half
    # a million assignments is no command anyone typed.)
    assert build_context(COMMAND_BAIT[name]).found_command is None
