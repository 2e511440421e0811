"""Findings back to FINDINGS.md: what `findings_md` reads, written so it reads the same.

The knowledge base grows on the web too (drafts started from pastes, reviewers' edits,
pastes learned from use); writing it out keeps it in the team's repository, and moves
it from one FixGraph to another (`make run`'s SQLite to a team's PostgreSQL) through the
same ingest. Reading the output gives back every field the entry had; the round trip is
tested on the starter knowledge base and the test write-ups.
"""

from __future__ import annotations

import re
import shlex
from collections.abc import Iterable, Iterator

from decisiontree.documents.findings_md import body_samples
from decisiontree.documents.model import ExtractedFinding, ExtractedFix, GpuMention, Metrics
from decisiontree.records import Outcome

# The field each outcome is written under, and the bracket that says the rest.
_FIX_FIELDS = {
    Outcome.RESOLVES: ("Fix", ""),
    Outcome.PARTIAL: ("Fix", " [partial]"),
    Outcome.PROPOSED: ("Fix", " [proposed]"),
    Outcome.NO_EFFECT: ("Did not help", ""),
    Outcome.WORSE: ("Made it worse", ""),
}
_KIND_WORDS = {"wrong_output": "wrong output"}


def findings_md(findings: Iterable[ExtractedFinding], title: str = "Findings") -> str:
    """A FINDINGS.md document of `findings`, in the order given."""
    return "".join(findings_md_parts(findings, title))


def findings_md_parts(findings: Iterable[ExtractedFinding], title: str) -> Iterator[str]:
    """The same document a part at a time (a large knowledge base is never held whole)."""
    yield f"# {_one_line(title)}\n"
    for finding in findings:
        yield "\n" + entry(finding)


def entry(finding: ExtractedFinding) -> str:
    """One `## title` entry: its fields, then its body, then samples the body lacks."""
    lines = [f"## {' '.join(finding.title.splitlines())}"]
    lines += _field("Kind", _KIND_WORDS.get(finding.kind, finding.kind))
    lines += _field("Status", finding.status)
    lines += _field("Hardware", ", ".join(_gpu(gpu) for gpu in finding.gpus))
    lines += _field("Model", _model(finding))
    lines += _field("Framework", _framework(finding))
    lines += _field("Flags", " ".join(_flag(name, value) for name, value in finding.flags))
    lines += _field("Symptom", finding.summary)
    lines += _field("Cause", finding.cause)
    body = finding.body.strip("\n")
    in_body = set(body_samples(body))
    unwritten = [sample for sample in finding.samples if sample not in in_body]
    if len(unwritten) == len(finding.samples) == 1 and "\n" not in unwritten[0].strip():
        # The reader's `Error:` line: a sample only where no block of the entry is one.
        lines += _field("Error", unwritten.pop())
    stated = [c.describe() for c in finding.conditions if not c.derived]
    lines += _field("When", "; ".join(stated))
    for fix in finding.fixes:
        lines += _fix(fix)
    lines += _field("Works", finding.works_command or "")
    lines += _metrics(finding.metrics)
    for name, value in finding.extra.items():
        lines += _field(name.capitalize(), value)
    text = "\n".join(lines) + "\n"
    if body:
        text += f"\n{body}\n"
    for sample in unwritten:
        text += f"\n{fenced(sample)}\n"
    return text


def fenced(text: str) -> str:
    """`text` in a fence longer than any run of backticks it holds."""
    longest = max((len(run) for run in re.findall(r"`{3,}", text)), default=0)
    fence = "`" * max(3, longest + 1)
    return f"{fence}\n{text.strip(chr(10))}\n{fence}"


def _field(name: str, value: str | None) -> list[str]:
    """`- Name: value`, later lines of a value indented as continuation lines."""
    if not value or not value.strip():
        return []
    first, *rest = [line.strip() for line in value.strip().splitlines() if line.strip()]
    return [f"- {name}: {first}", *(f"  {line}" for line in rest)]


def _fix(fix: ExtractedFix) -> list[str]:
    name, bracket = _FIX_FIELDS[fix.outcome]
    return _field(name, _one_line(fix.text) + bracket)


def _gpu(gpu: GpuMention) -> str:
    return f"{gpu.count}x {gpu.name}" if gpu.count > 1 else gpu.name


def _model(finding: ExtractedFinding) -> str:
    if not finding.model:
        return ""
    details = [d for d in (finding.model_arch, finding.quantization) if d]
    return f"{finding.model} ({', '.join(details)})" if details else finding.model


def _framework(finding: ExtractedFinding) -> str:
    # The server comes first: the reader takes the first name as the framework.
    if not finding.framework:
        return ""
    libraries = [_release(name, version) for name, version in finding.versions.items()]
    return "; ".join([_release(finding.framework, finding.framework_version), *libraries])


def _release(name: str, version: str | None) -> str:
    if not version:
        return name
    # The reader drops a leading "v" of a version and ends a bare one at a space.
    if version[:1] in "vV" or len(version.split()) > 1:
        return f"{name} ({version})"
    return f"{name} {version}"


def _flag(name: str, value: str | None) -> str:
    return f"--{name}" + (f" {shlex.quote(value)}" if value else "")


def _metrics(metrics: Metrics) -> list[str]:
    lines: list[str] = []
    if metrics.throughput_tok_s is not None:
        at = f" @ concurrency {metrics.concurrency}" if metrics.concurrency else ""
        lines += _field("Throughput", f"{_number(metrics.throughput_tok_s)} tok/s{at}")
    elif metrics.concurrency:
        lines += _field("Concurrency", str(metrics.concurrency))
    if metrics.ttft_ms is not None:
        lines += _field("TTFT", f"{_number(metrics.ttft_ms)} ms")
    if metrics.itl_ms is not None:
        lines += _field("ITL", f"{_number(metrics.itl_ms)} ms")
    lines += _field("Before", metrics.before)
    lines += _field("After", metrics.after)
    return lines


def _number(value: float) -> str:
    return f"{value:g}" if value != int(value) else str(int(value))


def _one_line(text: str) -> str:
    return " ".join(text.split())
