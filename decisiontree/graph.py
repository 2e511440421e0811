"""The decision graph: what the published findings know, as nodes they share.

Node keys are tuples that say what a node is:

- `("signature", fingerprint)`: an error as the parser fingerprints it;
- `("finding", id)`: one symptom a finding records, with its samples and conditions;
- `("cause", key)`: a root cause that several findings state (the same words, in any
  case and spacing); a cause only one finding states is that finding's own, no node;
- `("fix", id)`: one fix row as its finding reported it;
- `("remedy", changes)`: what a fix changes, where fixes of one cause make the same
  changes (evidence for it adds up over the cause's symptoms);
- `("condition", key, value, negate)`: a fact about the context that a finding needs;
- `("flag", name)`: a launch flag, shared by the conditions and remedies that name it.

Edges (their kind follows from the kinds of their ends):

- signature -> finding: the error was observed in that finding;
- condition -> finding: the finding's cause needs that fact about the context, or (a
  condition its record marks `derived`) the finding was seen with it;
- finding -> cause: the cause explains the finding's symptom;
- finding -> fix: the fix was tried against that symptom (its record: `findings`);
- fix -> remedy, remedy -> flag, condition -> flag.

So what one finding learned reaches another: a remedy validated against one
symptom of a cause is found again from every other symptom of that cause
(`decisiontree.walk` ranks fixes by walking these edges). Shared nodes are
made only where something is shared: at 100k findings a node per unshared
cause and remedy would cost hundreds of MiB and carry nothing. Built in memory
from `FindingRecord`s and rebuilt whenever the knowledge base changes;
`KnowledgeGraph.index` answers "which findings look like this error".
"""

from __future__ import annotations

import dataclasses
import gc
import hashlib
import re
from collections import defaultdict
from collections.abc import Iterable, Mapping, MutableMapping
from dataclasses import dataclass, field
from typing import Any

import networkx as nx  # type: ignore[import-untyped]  # no stubs installed

from decisiontree import conditions, flags
from decisiontree.collector import collector_paused
from decisiontree.conditions import framework_of
from decisiontree.finding_words import KnownWords, own_texts
from decisiontree.fingerprint import Signature
from decisiontree.match import SignatureIndex
from decisiontree.records import (
    Change,
    ChangeAction,
    Condition,
    Evidence,
    FindingRecord,
    FixRecord,
)
from decisiontree.samples import SampleSignatures, signatures_of_sample
from decisiontree.vocabulary import Vocabulary, load

Node = tuple[Any, ...]
FLAG_CHANGES = (ChangeAction.SET_FLAG, ChangeAction.REMOVE_FLAG)
# A stated cause shorter than this says too little to be the same cause as another's.
MIN_CAUSE_WORDS = 4
# Findings a rebuild reads from storage at a time: their rows and their samples' stored
# signatures are held only while the build takes them in, not all at once beside the graph.
REBUILD_CHUNK = 2000
EDGE_BATCH = 20_000  # edges held before they go into the graph at once
NO_EVIDENCE = Evidence()  # a fix nobody has run or voted on


def signature_node(fingerprint: str) -> Node:
    return ("signature", fingerprint)


def finding_node(finding_id: int) -> Node:
    return ("finding", finding_id)


def cause_node(key: str) -> Node:
    return ("cause", key)


def fix_node(fix_id: int) -> Node:
    return ("fix", fix_id)


def remedy_node(changes: Iterable[Change]) -> Node:
    return ("remedy", remedy_key(changes))


def condition_node(condition: Condition) -> Node:
    return ("condition", condition.key, condition.value, condition.negate)


def flag_node(name: str) -> Node:
    return ("flag", name)


def remedy_key(changes: Iterable[Change]) -> tuple[Change, ...]:
    """The same changes in any order are the same remedy."""
    return tuple(sorted(set(changes), key=lambda c: (c.action, c.name, c.value or "")))


def cause_key(finding: FindingRecord) -> str:
    """Findings that state the same cause (in any case and spacing) share one cause node.

    A finding that states none, or too little to tell, gets a cause of its own.
    """
    words = re.findall(r"[a-z0-9_.+-]+", finding.cause.lower())
    if len(words) < MIN_CAUSE_WORDS:
        return own_cause(finding.id)
    # A short digest, not the text: the key lives as long as the graph.
    return hashlib.blake2b(" ".join(words).encode(), digest_size=12).hexdigest()


def own_cause(finding_id: int) -> str:
    return f"finding:{finding_id}"


@dataclass(frozen=True)
class KnowledgeGraph:
    digraph: nx.DiGraph
    index: SignatureIndex
    findings: Mapping[int, FindingRecord]  # canonical spellings, as the graph holds them
    skipped_samples: tuple[tuple[int, str], ...] = ()  # (finding id, why) for unreadable samples
    # Runs and votes per fix id, apart from the records: a vote or a finished run is a new
    # mapping on the same graph (`with_evidence`), not a rebuild of everything else.
    evidence: Mapping[int, Evidence] = field(default_factory=dict)

    def evidence_of(self, fix: FixRecord) -> Evidence:
        """What runs and votes say of the fix now (its record holds what they said at build)."""
        return self.evidence.get(fix.id, NO_EVIDENCE)

    def with_evidence(self, evidence: Mapping[int, Evidence]) -> KnowledgeGraph:
        """The same graph, its index and records shared, answering with new evidence."""
        return dataclasses.replace(self, evidence=dict(evidence))

    def conditions_of(self, finding_id: int) -> tuple[Condition, ...]:
        """The finding's condition nodes, each stated or derived as its record says (the
        node is the fact, shared; whether the finding needs it or was only seen with it
        is the finding's own). A fact both stated and derived counts as stated."""
        held: dict[Node, Condition] = {}
        ordered = sorted(
            self.findings[finding_id].conditions,
            key=lambda c: (c.key, c.value, c.negate, c.derived),
        )
        for condition in ordered:
            held.setdefault(condition_node(condition), condition)
        return tuple(held.values())

    def fixes_of(self, finding_id: int) -> tuple[FixRecord, ...]:
        """The fixes the finding links to: its own, in its order (fix nodes hold only ids)."""
        return self.findings[finding_id].fixes

    def exception_types_of(self, finding_id: int) -> tuple[str, ...]:
        """The exception types of the finding's samples, as their signatures name them."""
        preds = self.digraph.predecessors(finding_node(finding_id))
        types = {self.digraph.nodes[n]["exception_type"] for n in preds if n[0] == "signature"}
        return tuple(sorted(t for t in types if t))

    def cause_of(self, finding_id: int) -> Node:
        """The finding's root cause: a shared cause node, or the finding's own."""
        succ = self.digraph.successors(finding_node(finding_id))
        return next((n for n in succ if n[0] == "cause"), cause_node(own_cause(finding_id)))

    def findings_of_cause(self, cause: Node) -> tuple[int, ...]:
        """Every finding (symptom) the cause explains, in id order."""
        if cause not in self.digraph:
            return (int(cause[1].removeprefix("finding:")),)
        return tuple(sorted(n[1] for n in self.digraph.predecessors(cause)))

    def remedy_evidence(self, cause: Node, changes: Iterable[Change]) -> Evidence:
        """Evidence for one remedy over every symptom of `cause`: runs and votes add up."""
        key = remedy_key(changes)
        fixes = [
            fix
            for finding_id in self.findings_of_cause(cause)
            for fix in self.fixes_of(finding_id)
            if remedy_key(fix.changes) == key
        ]
        return merged_evidence(self.evidence_of(f) for f in fixes)


def merged_evidence(items: Iterable[Evidence]) -> Evidence:
    passed: dict[str, int] = {}
    failed: dict[str, int] = {}
    helped = not_helped = 0
    for evidence in items:
        for arch, count in evidence.validated_passed:
            passed[arch] = passed.get(arch, 0) + count
        for arch, count in evidence.validated_failed:
            failed[arch] = failed.get(arch, 0) + count
        helped += evidence.feedback_helped
        not_helped += evidence.feedback_not_helped
    return Evidence(
        tuple(sorted(passed.items())), tuple(sorted(failed.items())), helped, not_helped
    )


# Sample text -> its signatures, or the reason it was unreadable.
SignatureCache = MutableMapping[str, SampleSignatures]


def build_graph(
    findings: Iterable[FindingRecord],
    *,
    vocabulary: Vocabulary | None = None,
    cache: SignatureCache | None = None,
    words: KnownWords | None = None,
) -> KnowledgeGraph:
    """Parse every sample, index its signatures and link the finding's parts.

    Parsing dominates a cold build; pass the same `cache` to every rebuild so
    that only samples added since the last one are parsed. `words` holds the
    findings' own words as stored (`finding_words`), read again where it does not.
    """
    # The build allocates millions of small, long-lived objects and frees none: the
    # cyclic collector would rescan them again and again (about half the build time).
    with collector_paused():
        graph = _build(
            findings,
            vocabulary or load(),
            cache if cache is not None else {},
            words if words is not None else {},
        )
        # And after it: left to the collector, the graph's objects would be scanned in
        # full collections in the middle of diagnoses (a 100k graph: a second or more
        # each). Frozen, the collector leaves them alone; the graph holds no reference
        # cycles, so when it is replaced reference counting frees it all the same.
        gc.freeze()
    return graph


def _build(
    findings: Iterable[FindingRecord],
    vocabulary: Vocabulary,
    cache: SignatureCache,
    words: KnownWords,
) -> KnowledgeGraph:
    digraph: nx.DiGraph = nx.DiGraph()
    index = SignatureIndex()
    held: dict[int, FindingRecord] = {}
    skipped: list[tuple[int, str]] = []
    evidence: dict[int, Evidence] = {}
    causes: dict[str, list[int]] = defaultdict(list)
    canonical: dict[Any, Any] = {}
    # Finding nodes and edges are put in the graph a batch at a time: one networkx call
    # per batch, not one per node and edge (a million of them at 100k findings).
    nodes: list[Node] = []
    edges: list[tuple[Node, Node]] = []
    for raw in findings:
        finding = canonical_finding(raw, vocabulary, canonical)
        held[finding.id] = finding
        evidence.update((f.id, f.evidence) for f in finding.fixes if f.evidence != NO_EVIDENCE)
        _add_finding(nodes, edges, finding)
        causes[cause_key(finding)].append(finding.id)
        skipped.extend(_index_samples(digraph, edges, index, finding, cache))
        if len(edges) >= EDGE_BATCH:
            _flush(digraph, nodes, edges)
        texts = own_texts(
            finding.title, finding.summary, finding.cause, (fix.summary for fix in finding.fixes)
        )
        index.add_text(finding.id, **dict(texts), known=words)
    _flush(digraph, nodes, edges)
    for key, finding_ids in causes.items():
        if len(finding_ids) > 1:
            _add_shared_cause(digraph, key, [held[i] for i in finding_ids])
    index.finish()
    return KnowledgeGraph(digraph, index, held, tuple(skipped), evidence)


def _flush(digraph: nx.DiGraph, nodes: list[Node], edges: list[tuple[Node, Node]]) -> None:
    digraph.add_nodes_from(nodes)
    digraph.add_edges_from(edges)
    nodes.clear()
    edges.clear()


def _add_finding(nodes: list[Node], edges: list[tuple[Node, Node]], finding: FindingRecord) -> None:
    # Node keys say what a node is, and a finding's text lives in `findings`:
    # attribute dicts on 100k findings and conditions would cost hundreds of MiB.
    node = finding_node(finding.id)
    nodes.append(node)
    for condition in finding.conditions:
        edges.append((condition_node(condition), node))
        if condition.key.startswith("flag."):
            edges.append((condition_node(condition), flag_node(condition.key[5:])))
    # No attributes on fix nodes and edges: the fix records live in `findings`, and every
    # attribute dict would cost 120 bytes more per fix.
    edges.extend((node, fix_node(fix.id)) for fix in finding.fixes)


def _add_shared_cause(digraph: nx.DiGraph, key: str, findings: list[FindingRecord]) -> None:
    """One cause node for the findings that state it, and a node per remedy they share."""
    cause = cause_node(key)
    remedies: dict[tuple[Change, ...], list[FixRecord]] = defaultdict(list)
    for finding in findings:
        digraph.add_edge(finding_node(finding.id), cause)
        for fix in finding.fixes:
            if fix.changes:  # a fix told only in words shares no remedy with another
                remedies[remedy_key(fix.changes)].append(fix)
    for changes, fixes in remedies.items():
        if len(fixes) < 2:
            continue
        remedy = ("remedy", changes)
        digraph.add_edges_from((fix_node(fix.id), remedy) for fix in fixes)
        digraph.add_edges_from(
            (remedy, flag_node(c.name)) for c in changes if c.action in FLAG_CHANGES
        )


def _index_samples(
    digraph: nx.DiGraph,
    edges: list[tuple[Node, Node]],
    index: SignatureIndex,
    finding: FindingRecord,
    cache: SignatureCache,
) -> list[tuple[int, str]]:
    for fingerprint in finding.split_fingerprints:
        index.split(fingerprint, finding.id)
    for fingerprint in finding.linked_fingerprints:
        index.link(fingerprint, finding.id)
        _observe(digraph, edges, fingerprint, None, finding.id)
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
            _observe(digraph, edges, signature.fingerprint, signature, finding.id)
    return skipped


def cached_signatures(sample: str, cache: SignatureCache) -> tuple[Signature, ...] | str:
    found = cache.get(sample)
    if found is None:
        found = signatures_of_sample(sample)
        cache[sample] = found
    return found


def _observe(
    digraph: nx.DiGraph,
    edges: list[tuple[Node, Node]],
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
    edges.append((node, finding_node(finding_id)))


# --- canonical spellings ------------------------------------------------------


def canonical_finding(
    finding: FindingRecord, vocabulary: Vocabulary, memo: dict[Any, Any] | None = None
) -> FindingRecord:
    """The finding in today's spellings: condition keys as the diagnosis reads them,
    every flag by its newest name (`dsa-...`, not `nsa-...`).

    `memo` (one per build) remembers each condition and change already put in today's
    spelling: 100k findings state the same few thousand over and over.
    """
    memo = {} if memo is None else memo
    framework = framework_of(finding.conditions)
    conditions_ = tuple(
        _memoised(memo, conditions.canonical, c, framework) for c in finding.conditions
    )
    fixes = tuple(_canonical_fix(f, framework, memo) for f in finding.fixes)
    if conditions_ == finding.conditions and fixes == finding.fixes:
        return finding  # the usual case: no copy, no extra memory
    return dataclasses.replace(finding, conditions=conditions_, fixes=fixes)


def _canonical_fix(fix: FixRecord, framework: str | None, memo: dict[Any, Any]) -> FixRecord:
    changes = tuple(_memoised(memo, _canonical_change, c, framework) for c in fix.changes)
    return fix if changes == fix.changes else dataclasses.replace(fix, changes=changes)


def _canonical_change(change: Change, framework: str | None) -> Change:
    if change.action not in FLAG_CHANGES:
        return change
    name = flags.canonical_flag(change.name, framework)
    return change if name == change.name else dataclasses.replace(change, name=name)


def _memoised(memo: dict[Any, Any], function: Any, item: Any, framework: str | None) -> Any:
    key = (item, framework)
    found = memo.get(key)
    if found is None:
        result = function(item, framework)
        found = memo[key] = _UNCHANGED if result == item else result
    # An item already in today's spelling comes back itself, so that the finding's tuples
    # compare equal by identity and the finding is kept as it was read.
    return item if found is _UNCHANGED else found


_UNCHANGED = object()


__all__ = [
    "REBUILD_CHUNK",
    "KnowledgeGraph",
    "Node",
    "build_graph",
    "canonical_finding",
    "cause_key",
    "cause_node",
    "condition_node",
    "finding_node",
    "fix_node",
    "flag_node",
    "merged_evidence",
    "remedy_key",
    "remedy_node",
    "signature_node",
]
