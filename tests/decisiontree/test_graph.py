"""The decision graph built from published findings."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from decisiontree.fingerprint import signatures_of
from decisiontree.graph import build_graph, cause_node, condition_node, fix_node, signature_node
from decisiontree.match import MatchLevel, Query
from decisiontree.records import (
    Change,
    ChangeAction,
    Condition,
    FindingRecord,
    FixRecord,
    Outcome,
)
from decisiontree.traceback import parse

FIXTURES = Path(__file__).parent / "fixtures" / "diagnose"
POOL_ASSERT = (FIXTURES / "dsa_fp8_pool_assert_a.txt").read_text()
GRAPH_OOM = (FIXTURES / "graph_capture_oom.txt").read_text()

TRTLLM_DECODE = FixRecord(
    5,
    "Use the trtllm sparse-attention decode kernel",
    (Change(ChangeAction.SET_FLAG, "nsa-decode-backend", "trtllm"),),
    Outcome.RESOLVES,
)
TRITON = FixRecord(
    6,
    "Use triton attention",
    (Change(ChangeAction.SET_FLAG, "attention-backend", "triton"),),
    Outcome.NO_EFFECT,
)


def finding(
    finding_id: int = 1, samples: tuple[str, ...] = (POOL_ASSERT,), **changes: object
) -> FindingRecord:
    record = FindingRecord(
        id=finding_id,
        title="FP8 DSA pool written by triton",
        kind="incompatibility",
        cause="non-DSA attention path writes the FP8 DSA KV pool",
        samples=samples,
        conditions=(
            Condition("framework", "sglang"),
            Condition("flag.nsa-decode-backend", "flashmla_kv"),
        ),
        fixes=(TRTLLM_DECODE, TRITON),
    )
    return dataclasses.replace(record, **changes)  # type: ignore[arg-type]


def fingerprint_of(text: str) -> str:
    return signatures_of(parse(text))[0].fingerprint


def test_it_links_signature_condition_cause_and_fix() -> None:
    graph = build_graph([finding()])
    g = graph.digraph
    cause = cause_node(1)

    assert g.has_edge(signature_node(fingerprint_of(POOL_ASSERT)), cause)
    assert g.has_edge(condition_node(Condition("framework", "sglang")), cause)
    assert g.edges[cause, fix_node(5)]["outcome"] is Outcome.RESOLVES
    assert g.edges[cause, fix_node(6)]["outcome"] is Outcome.NO_EFFECT


def test_it_shares_condition_nodes_between_findings() -> None:
    graph = build_graph([finding(1), finding(2, samples=(GRAPH_OOM,))])

    sglang = condition_node(Condition("framework", "sglang"))
    assert sorted(graph.digraph.successors(sglang)) == [cause_node(1), cause_node(2)]


def test_it_names_flags_by_their_newest_spelling() -> None:
    graph = build_graph([finding()])

    keys = {c.key for c in graph.conditions_of(1)}
    assert "flag.dsa-decode-backend" in keys
    assert graph.fixes_of(1)[0].changes[0].name == "dsa-decode-backend"


def test_it_indexes_samples_for_matching() -> None:
    graph = build_graph([finding(1), finding(2, samples=(GRAPH_OOM,))])

    found = graph.index.lookup([Query.of(s) for s in signatures_of(parse(GRAPH_OOM))])
    assert (found[0].finding_id, found[0].level) == (2, MatchLevel.KNOWN)


def test_it_forces_a_reviewer_linked_fingerprint_to_its_finding() -> None:
    oom = fingerprint_of(GRAPH_OOM)
    graph = build_graph([finding(1, linked_fingerprints=(oom,))])

    found = graph.index.lookup([Query.of(s) for s in signatures_of(parse(GRAPH_OOM))])
    assert (found[0].finding_id, found[0].layer) == (1, "linked")
    assert graph.digraph.has_edge(signature_node(oom), cause_node(1))


def test_it_stops_a_split_fingerprint_from_matching_its_finding() -> None:
    pool = fingerprint_of(POOL_ASSERT)
    graph = build_graph([finding(1, split_fingerprints=(pool,))])

    found = graph.index.lookup([Query.of(s) for s in signatures_of(parse(POOL_ASSERT))])
    assert all(c.finding_id != 1 for c in found if c.level is not MatchLevel.NONE)


def test_it_skips_unreadable_samples_and_says_so() -> None:
    graph = build_graph([finding(1, samples=("", POOL_ASSERT))])

    assert [fid for fid, _ in graph.skipped_samples] == [1]
    assert len(graph.index) >= 1


def test_it_reuses_parsed_samples_when_rebuilt_with_the_same_cache() -> None:
    cache: dict[str, object] = {}
    build_graph([finding(1)], cache=cache)  # type: ignore[arg-type]
    assert POOL_ASSERT in cache

    cache[GRAPH_OOM] = "held back by the cache"
    rebuilt = build_graph([finding(1), finding(2, samples=(GRAPH_OOM,))], cache=cache)  # type: ignore[arg-type]

    assert rebuilt.skipped_samples == ((2, "held back by the cache"),)
