"""The decision graph built from published findings."""

from __future__ import annotations

import dataclasses
from pathlib import Path

from decisiontree.fingerprint import signatures_of
from decisiontree.graph import (
    build_graph,
    cause_key,
    cause_node,
    condition_node,
    finding_node,
    fix_node,
    flag_node,
    remedy_node,
    signature_node,
)
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


def test_it_links_signature_condition_finding_cause_and_fix() -> None:
    graph = build_graph([finding()])
    g = graph.digraph
    symptom = finding_node(1)

    assert g.has_edge(signature_node(fingerprint_of(POOL_ASSERT)), symptom)
    assert g.has_edge(condition_node(Condition("framework", "sglang")), symptom)
    assert graph.cause_of(1) == cause_node("finding:1")  # a cause no other finding states
    assert g.has_edge(symptom, fix_node(5)) and g.has_edge(symptom, fix_node(6))
    assert [fix.outcome for fix in graph.fixes_of(1)] == [Outcome.RESOLVES, Outcome.NO_EFFECT]


def test_it_shares_condition_nodes_between_findings() -> None:
    graph = build_graph([finding(1), finding(2, samples=(GRAPH_OOM,))])

    sglang = condition_node(Condition("framework", "sglang"))
    assert sorted(graph.digraph.successors(sglang)) == [finding_node(1), finding_node(2)]


def test_findings_that_state_the_same_cause_share_its_node() -> None:
    # The same cause, written with other spacing and case in another finding.
    other = finding(
        2, samples=(GRAPH_OOM,), cause="Non-DSA attention path  writes the FP8 DSA KV pool"
    )
    graph = build_graph([finding(1), other])

    assert graph.cause_of(1) == graph.cause_of(2) == cause_node(cause_key(other))
    assert graph.findings_of_cause(graph.cause_of(1)) == (1, 2)


def test_a_finding_that_states_no_cause_shares_none() -> None:
    graph = build_graph([finding(1, cause=""), finding(2, samples=(GRAPH_OOM,), cause="")])

    assert graph.cause_of(1) != graph.cause_of(2)


def test_fixes_of_one_cause_that_make_the_same_changes_share_a_remedy_and_its_flags() -> None:
    same_change = FixRecord(
        9, "trtllm decode", (Change(ChangeAction.SET_FLAG, "dsa-decode-backend", "trtllm"),),
        Outcome.RESOLVES,
    )  # fmt: skip
    other_symptom = finding(2, samples=(GRAPH_OOM,), fixes=(same_change,))
    graph = build_graph([finding(1), other_symptom])
    remedy = remedy_node(same_change.changes)

    assert sorted(graph.digraph.predecessors(remedy)) == [fix_node(5), fix_node(9)]
    assert graph.digraph.has_edge(remedy, flag_node("dsa-decode-backend"))
    flag_condition = condition_node(Condition("flag.dsa-decode-backend", "flashmla_kv"))
    assert graph.digraph.has_edge(flag_condition, flag_node("dsa-decode-backend"))


def test_the_same_changes_under_different_causes_are_no_shared_remedy() -> None:
    same_change = FixRecord(
        9, "trtllm decode", (Change(ChangeAction.SET_FLAG, "dsa-decode-backend", "trtllm"),),
        Outcome.RESOLVES,
    )  # fmt: skip
    unrelated = finding(2, samples=(GRAPH_OOM,), fixes=(same_change,), cause="another cause, told")
    graph = build_graph([finding(1), unrelated])

    assert remedy_node(same_change.changes) not in graph.digraph


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
    assert graph.digraph.has_edge(signature_node(oom), finding_node(1))


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
