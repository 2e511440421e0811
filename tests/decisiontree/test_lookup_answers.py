"""The answers a small knowledge base gives, pinned: a change of data layout changes none.

Sixteen of the traceback fixtures are findings; the pastes are those fixtures as
another machine prints them (other install prefix, line numbers, numbers in the
message), the five fixtures that are no finding (two of them other reports of a
finding's bug), a sentence and a log line. For each paste the expected answer is
what `decisiontree` gave before the lookup was made faster: the ranked candidates
(finding, layer, score, the shared words shown) and the diagnosis (level, ranked
fixes, nearest findings), kept in `fixtures/lookup_answers.json`.

A speed change must leave every answer as it was. A change that means to change
answers (a new measure, a refitted verifier) records them anew and says so:

    DEBUG=True .venv/bin/python -m tests.decisiontree.test_lookup_answers --record
"""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from decisiontree import retrieval
from decisiontree.context import Context
from decisiontree.diagnose import diagnose, queries_for
from decisiontree.fingerprint import signatures_of
from decisiontree.graph import KnowledgeGraph, build_graph
from decisiontree.records import (
    Change,
    ChangeAction,
    Condition,
    FindingRecord,
    FixRecord,
    Outcome,
)
from decisiontree.traceback import parse

from .pastes import TRACEBACKS, pasted

ANSWERS = Path(__file__).parent / "fixtures" / "lookup_answers.json"
# Fixtures that are no finding: pasted as they are.
NOT_IN_KB = (
    "oom_cuda_graph_capture_other_host",  # another report of oom_cuda_graph_capture
    "sglang_fp8_kv_assert_tail",  # the tail of sglang_fp8_kv_assert_full
    "noise_only",
    "recursion_frozen_runpy",
    "host_oom_killed",
)
FREE_PASTES = {
    "sentence": "server crashes with an illegal memory access during cuda graph capture on H100",
    "log_line": "[2026-11-02 10:00:01 TP3] ERROR: NCCL WARN Cuda failure 'out of memory'\n",
}
CONTEXT = Context(arch="sm_90", framework="sglang")


def kb_names() -> list[str]:
    names = sorted(p.stem for p in TRACEBACKS.glob("*.txt"))
    return [n for n in names if n not in NOT_IN_KB]


@cache
def graph() -> KnowledgeGraph:
    findings = []
    for number, name in enumerate(kb_names(), start=1):
        words = name.replace("_", " ")
        flag = ("kv-cache-dtype", "mem-fraction-static", "attention-backend")[number % 3]
        findings.append(
            FindingRecord(
                number,
                words,
                "bug",
                f"the {words} cause, as its reporter found it",
                (pasted(name),),
                (Condition("framework", ("sglang", "vllm")[number % 2]),),
                (
                    FixRecord(
                        number * 10,
                        f"set {flag}",
                        (Change(ChangeAction.SET_FLAG, flag, "auto"),),
                        Outcome.RESOLVES,
                    ),
                ),
                summary=f"{words} when serving",
            )
        )
    return build_graph(findings)


def elsewhere(text: str) -> str:
    """The same error as another machine prints it."""
    text = re.sub(r"/usr/local/lib/python3\.\d+/dist-packages/", "/opt/venv/lib/python3.12/"
                  "site-packages/", text)  # fmt: skip
    return re.sub(r"\d+", lambda m: str(int(m.group()) + 7), text)


def pastes() -> dict[str, str]:
    found = {f"{name} elsewhere": elsewhere(pasted(name)) for name in kb_names()}
    found.update({name: pasted(name) for name in NOT_IN_KB})
    found.update(FREE_PASTES)
    return found


def answer(text: str) -> dict[str, Any]:
    candidates = graph().index.lookup(queries_for(signatures_of(parse(text)), text))
    diagnosis = diagnose(text, CONTEXT, graph())
    return {
        "candidates": [[c.finding_id, c.layer, c.score, list(c.matched_terms)] for c in candidates],
        "level": str(diagnosis.match),
        "fixes": [[f.fix.id, f.finding.id] for f in diagnosis.fixes],
        "nearest": [n.finding.id for n in diagnosis.nearest],
    }


def expected() -> dict[str, Any]:
    return dict(json.loads(ANSWERS.read_text()))


@pytest.mark.parametrize("name", sorted(pastes()))
def test_each_paste_gets_the_answer_it_got_before(name: str) -> None:
    assert answer(pastes()[name]) == expected()[name]


def test_a_known_error_printed_elsewhere_finds_its_own_finding_first() -> None:
    for number, name in enumerate(kb_names(), start=1):
        got = answer(pastes()[f"{name} elsewhere"])
        assert got["level"] != "none", name
        assert got["candidates"][0][0] == number, name
        assert got["fixes"][0][1] == number, name


def test_postings_folded_a_few_documents_at_a_time_give_the_same_answers(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A large rebuild folds its words into postings in slices of whole documents.
    monkeypatch.setattr(retrieval, "FOLD_WORDS", 40)
    graph.cache_clear()
    try:
        for name, text in pastes().items():
            assert answer(text) == expected()[name], name
    finally:
        graph.cache_clear()


def test_every_run_gives_the_same_answers_whatever_order_its_sets_iterate_in() -> None:
    # Python orders a set of words differently in each process (PYTHONHASHSEED). Two
    # ordinary messages that tie, summed in another order, once differed in their last
    # bit and changed a score; each process here checks every pinned answer itself.
    check = (
        "import sys; from tests.decisiontree.test_lookup_answers import answer, expected, "
        "pastes; sys.exit(sum(answer(t) != expected()[n] for n, t in pastes().items()))"
    )
    for seed in ("1", "104"):
        env = {**os.environ, "PYTHONHASHSEED": seed, "DEBUG": "True"}
        run = subprocess.run([sys.executable, "-c", check], env=env, capture_output=True)
        assert run.returncode == 0, (seed, run.stderr.decode()[-2000:])


def record() -> None:
    answers = {name: answer(text) for name, text in sorted(pastes().items())}
    ANSWERS.write_text(json.dumps(answers, indent=1, sort_keys=True) + "\n")
    print(f"wrote {len(answers)} answers to {ANSWERS}")


if __name__ == "__main__" and "--record" in sys.argv:
    record()
