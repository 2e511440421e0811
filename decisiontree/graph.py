"""The decision graph: signatures, conditions, causes and fixes of published findings.

Nodes are keyed by tuples so a key says what it is:
`("signature", fingerprint)`, `("condition", key, value, negate)`,
`("cause", finding_id)`, `("fix", fix_id)`. Edges (their kind follows from
the kinds of their ends):

- signature -> cause: the error was observed in that finding;
- condition -> cause: the cause needs that fact about the context;
- cause -> fix: with attributes `outcome` and `evidence`.

Built in memory from `FindingRecord`s and rebuilt whenever the knowledge base
changes; `KnowledgeGraph.index` answers "which findings look like this error".
"""

from __future__ import annotations

import dataclasses
import gc
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass
from typing import Any

import networkx as nx  # type: ignore[import-untyped]  # no stubs installed

from decisiontree import conditions, flags
from decisiontree.conditions import framework_of
from decisiontree.fingerprint import Signature
from decisiontree.match import SignatureIndex
from decisiontree.records import Change, ChangeAction, Condition, FindingRecord, FixRecord
from decisiontree.samples import SampleSignatures, signatures_of_sample
from decisiontree.vocabulary import Vocabulary, load

Node = tuple[Any, ...]
FLAG_CHANGES = (ChangeAction.SET_FLAG, ChangeAction.REMOVE_FLAG)


def signature_node(fingerprint: str) -> Node:
    return ("signature", fingerprint)


def condition_node(condition: Condition) -> Node:
    return ("condition", condition.key, condition.value, condition.negate)


def cause_node(finding_id: int) -> Node:
    return ("cause", finding_id)


def fix_node(fix_id: int) -> Node:
    return ("fix", fix_id)


@dataclass(frozen=True)
class KnowledgeGraph:
    digraph: nx.DiGraph
    index: SignatureIndex
    findings: Mapping[int, FindingRecord]  # canonical spellings, as the graph holds them
    skipped_samples: tuple[tuple[int, str], ...] = ()  # (finding id, why) for unreadable samples

    def conditions_of(self, finding_id: int) -> tuple[Condition, ...]:
        preds = self.digraph.predecessors(cause_node(finding_id))
        found = [Condition(n[1], n[2], n[3]) for n in preds if n[0] == "condition"]
        return tuple(sorted(found, key=lambda c: (c.key, c.value, c.negate)))

    def fixes_of(self, finding_id: int) -> tuple[FixRecord, ...]:
        succ = self.digraph.successors(cause_node(finding_id))
        return tuple(self.digraph.nodes[n]["fix"] for n in succ)

    def signatures_of(self, finding_id: int) -> tuple[str, ...]:
        preds = self.digraph.predecessors(cause_node(finding_id))
        return tuple(sorted(n[1] for n in preds if n[0] == "signature"))


# Sample text -> its signatures, or the reason it was unreadable.
SignatureCache = MutableMapping[str, SampleSignatures]


def build_graph(
    findings: Iterable[FindingRecord],
    *,
    vocabulary: Vocabulary | None = None,
    cache: SignatureCache | None = None,
) -> KnowledgeGraph:
    """Parse every sample, index its signatures and link the finding's parts.

    Parsing dominates a cold build; pass the same `cache` to every rebuild so
    that only samples added since the last one are parsed.
    """
    # The build allocates millions of small, long-lived objects and frees none: the
    # cyclic collector would rescan them again and again (about half the build time).
    collecting = gc.isenabled()
    gc.disable()
    try:
        graph = _build(findings, vocabulary or load(), cache if cache is not None else {})
    finally:
        if collecting:
            gc.enable()
    return graph


def _build(
    findings: Iterable[FindingRecord], vocabulary: Vocabulary, cache: SignatureCache
) -> KnowledgeGraph:
    digraph: nx.DiGraph = nx.DiGraph()
    index = SignatureIndex()
    held: dict[int, FindingRecord] = {}
    skipped: list[tuple[int, str]] = []
    for raw in findings:
        finding = canonical_finding(raw, vocabulary)
        held[finding.id] = finding
        _add_finding(digraph, finding)
        skipped.extend(_index_samples(digraph, index, finding, cache))
        index.add_text(
            finding.id,
            title=finding.title,
            summary=finding.summary,
            cause=" ".join([finding.cause, *(fix.summary for fix in finding.fixes)]),
        )
    index.finish()
    return KnowledgeGraph(digraph, index, held, tuple(skipped))


def _add_finding(digraph: nx.DiGraph, finding: FindingRecord) -> None:
    # Node keys say what a node is, and the cause's text lives in `findings`:
    # attribute dicts on 100k causes and conditions would cost hundreds of MiB.
    cause = cause_node(finding.id)
    digraph.add_node(cause)
    digraph.add_edges_from((condition_node(c), cause) for c in finding.conditions)
    for fix in finding.fixes:
        digraph.add_node(fix_node(fix.id), fix=fix)
        digraph.add_edge(cause, fix_node(fix.id), outcome=fix.outcome, evidence=fix.evidence)


def _index_samples(
    digraph: nx.DiGraph,
    index: SignatureIndex,
    finding: FindingRecord,
    cache: SignatureCache,
) -> list[tuple[int, str]]:
    for fingerprint in finding.split_fingerprints:
        index.split(fingerprint, finding.id)
    for fingerprint in finding.linked_fingerprints:
        index.link(fingerprint, finding.id)
        _observe(digraph, fingerprint, None, finding.id)
    skipped: list[tuple[int, str]] = []
    for sample in finding.samples:
        signatures = cached_signatures(sample, cache)
        if isinstance(signatures, str):
            skipped.append((finding.id, signatures))
            continue
        for signature in signatures:
            if signature.fingerprint in finding.split_fingerprints:
                continue
            index.add(finding.id, signature)
            _observe(digraph, signature.fingerprint, signature, finding.id)
    return skipped


def cached_signatures(sample: str, cache: SignatureCache) -> tuple[Signature, ...] | str:
    found = cache.get(sample)
    if found is None:
        found = signatures_of_sample(sample)
        cache[sample] = found
    return found


def _observe(
    digraph: nx.DiGraph,
    fingerprint: str,
    signature: Signature | None,
    finding_id: int,
) -> None:
    node = signature_node(fingerprint)
    if node not in digraph:
        # Keep what a reader needs, not the whole Signature: at 100k findings
        # the term tuples would double the graph's memory.
        shown = (signature.exception_type, signature.template) if signature else ("", "")
        digraph.add_node(node, exception_type=shown[0], template=shown[1])
    digraph.add_edge(node, cause_node(finding_id))


# --- canonical spellings ------------------------------------------------------


def canonical_finding(finding: FindingRecord, vocabulary: Vocabulary) -> FindingRecord:
    """The finding in today's spellings: condition keys as the diagnosis reads them,
    every flag by its newest name (`dsa-...`, not `nsa-...`)."""
    framework = framework_of(finding.conditions)
    conditions_ = tuple(conditions.canonical(c, framework) for c in finding.conditions)
    fixes = tuple(_canonical_fix(f, framework) for f in finding.fixes)
    if conditions_ == finding.conditions and fixes == finding.fixes:
        return finding  # the usual case: no copy, no extra memory
    return dataclasses.replace(finding, conditions=conditions_, fixes=fixes)


def _canonical_fix(fix: FixRecord, framework: str | None) -> FixRecord:
    changes = tuple(_canonical_change(c, framework) for c in fix.changes)
    return fix if changes == fix.changes else dataclasses.replace(fix, changes=changes)


def _canonical_change(change: Change, framework: str | None) -> Change:
    if change.action not in FLAG_CHANGES:
        return change
    name = flags.canonical_flag(change.name, framework)
    return change if name == change.name else dataclasses.replace(change, name=name)
