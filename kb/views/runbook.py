"""The runbook: per model x GPU, the launch known to work, its throughput, the pitfalls.

Built from published findings: `works` findings give the command and reported
throughput, passed validation runs give measured throughput, every other finding
on the same pair is a pitfall on the way there, in the order it was learned.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass, field

from django.db.models import Prefetch
from django.http import HttpRequest, HttpResponse
from django.shortcuts import render
from django.template.loader import render_to_string

from kb.models import Finding, Fix, Hardware, LanguageModel, ValidationRun
from kb.views.launch import corrected_command

PairKey = tuple[int | None, int]


@dataclass(frozen=True)
class Pitfall:
    finding: Finding
    fix: Fix | None  # the first fix reported to resolve it


@dataclass(frozen=True)
class Measurement:
    label: str
    tok_s: float


@dataclass
class RunbookEntry:
    model: LanguageModel | None
    gpu: Hardware
    gpu_count: int = 1
    command: str = ""
    command_note: str = ""
    measurements: list[Measurement] = field(default_factory=list)
    pitfalls: list[Pitfall] = field(default_factory=list)

    @property
    def bars(self) -> list[tuple[str, float]]:
        return [(m.label, m.tok_s) for m in self.measurements]

    @property
    def title(self) -> str:
        model = self.model.name if self.model else "Any model"
        return f"{model} on {self.gpu_count}x {self.gpu.name}"


def runbook(request: HttpRequest) -> HttpResponse:
    if request.GET.get("format") == "md":
        return runbook_markdown(request)
    return render(request, "kb/runbook.html", {"entries": runbook_entries()})


def runbook_markdown(request: HttpRequest) -> HttpResponse:
    text = render_to_string("kb/runbook.md", {"entries": runbook_entries()})
    response = HttpResponse(text, content_type="text/markdown; charset=utf-8")
    response["Content-Disposition"] = 'attachment; filename="fixgraph-runbook.md"'
    return response


def runbook_entries() -> list[RunbookEntry]:
    entries: dict[PairKey, RunbookEntry] = {}
    for finding in published_findings():
        for placement in finding.findinggpu_set.all():
            key = (finding.model_id, placement.hardware_id)
            entry = entries.setdefault(key, RunbookEntry(finding.model, placement.hardware))
            add_finding(entry, finding, placement.count)
    for entry in entries.values():
        entry.measurements.extend(validated(entry))
        if not entry.command:
            derive_command(entry)
    return sorted(entries.values(), key=lambda e: e.title.lower())


def published_findings() -> Iterable[Finding]:
    fixes = Fix.objects.order_by("position", "id").prefetch_related(
        Prefetch("validation_runs", queryset=ValidationRun.objects.select_related("host"))
    )
    return (
        Finding.objects.filter(status=Finding.Status.PUBLISHED)
        .select_related("model", "framework")
        .prefetch_related(
            "findinggpu_set__hardware", "flag_settings", Prefetch("fixes", queryset=fixes)
        )
        .order_by("created_at", "id")
    )


def add_finding(entry: RunbookEntry, finding: Finding, gpu_count: int) -> None:
    if finding.kind != Finding.Kind.WORKS:
        entry.pitfalls.append(Pitfall(finding, first_resolving(finding)))
        return
    if finding.works_command and not entry.command:
        entry.command = finding.works_command
        entry.command_note = f"Known to work: {finding.title}"
        entry.gpu_count = gpu_count
    if finding.throughput_tok_s:
        entry.measurements.append(
            Measurement(f"reported: {finding.title}", finding.throughput_tok_s)
        )


def first_resolving(finding: Finding) -> Fix | None:
    return next((fix for fix in finding.fixes.all() if fix.outcome == Fix.Outcome.RESOLVES), None)


def validated(entry: RunbookEntry) -> Iterable[Measurement]:
    """Throughput of passed runs of the pair's fixes, on hosts of the same architecture."""
    for pitfall in entry.pitfalls:
        for fix in pitfall.finding.fixes.all():
            for run in fix.validation_runs.all():
                tok_s = (run.metrics or {}).get("throughput_tok_s")
                if run.status == ValidationRun.Status.PASSED and isinstance(tok_s, int | float):
                    yield Measurement(f"validated on {run.host.name}: {fix.summary}", float(tok_s))


def derive_command(entry: RunbookEntry) -> None:
    """No working command recorded: the latest pitfall's flags with its resolving fix."""
    for pitfall in reversed(entry.pitfalls):
        flags = " ".join(str(setting) for setting in pitfall.finding.flag_settings.all())
        if pitfall.fix is None or not flags:
            continue
        fix = {"changes": pitfall.fix.changes, "command_changes": spelled(pitfall.fix)}
        command = corrected_command(flags, fix, framework_name(pitfall.finding))
        if command:
            entry.command = command
            entry.command_note = (
                f"Derived: the flags of “{pitfall.finding.title}” with its "
                "resolving fix applied (not validated as a whole)"
            )
            return


def spelled(fix: Fix) -> list[str]:
    words = []
    for change in fix.changes or ():
        value = change.get("value")
        words.append(f"--{change['name']}" + (f" {value}" if value not in (None, "true") else ""))
    return words


def framework_name(finding: Finding) -> str | None:
    return finding.framework.name if finding.framework else None
