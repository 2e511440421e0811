"""The runbook: per model x GPU x framework release, the launch that works, whole.

Built from published findings. A `works` finding gives the flags known to work (or,
without one, the flags of the latest pitfall with its resolving fix applied); the
command is completed with the server's entry point, the model and tensor parallelism
over the GPUs, with every flag spelled for the release. Passed validation runs give
the measured figures, the verified-on date and host, and the host's CUDA and driver.
Every other finding on the same model and GPU is a pitfall on the way there.
"""

from __future__ import annotations

import shlex
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from datetime import datetime
from functools import cached_property
from typing import Any

from django.db.models import Prefetch, Q, QuerySet

from decisiontree import flags
from decisiontree.build_support import cuda_needed
from decisiontree.gpu_memory import MemoryReading
from decisiontree.launch import apply_changes, parse_launch_command
from decisiontree.launch import words as shell_words
from decisiontree.recipes import RecipeRefused, recipe_for
from decisiontree.vocabulary import load
from kb.models import Finding, FrameworkRelease, Hardware, LanguageModel, ValidationRun
from kb.models.findings import Fix
from kb.recipes import LoadSettings
from kb.services import changes, sources
from kb.services.diagnosis import change_of, launch_weights

EntryKey = tuple[int | None, int, int | None]  # model, GPU, framework release
TENSOR_PARALLEL = "tensor-parallel-size"  # each framework's table knows it (sglang: --tp-size)
MODEL_FLAGS = ("model", "model-path")  # the model is placed by the entry point


@dataclass(frozen=True)
class Pitfall:
    finding: Finding
    fix: Fix | None  # the first fix reported to resolve it
    # With none that resolves it, the first that helped in part: the best there is so far.
    partial: Fix | None = None

    @property
    def shown_fix(self) -> Fix | None:
        return self.fix or self.partial

    @property
    def fix_line(self) -> changes.FixLine | None:
        """The fix as the finding page shows it: its changes, spelled for the release."""
        if self.shown_fix is None:
            return None
        return changes.fix_line(
            self.shown_fix, framework_name(self.finding), version_of(self.finding)
        )

    @property
    def fix_label(self) -> str:
        if self.fix is not None:
            return "Fix"
        return "Helps in part" if self.partial is not None else ""


@dataclass(frozen=True)
class Measurement:
    """One row of the throughput table: measured on a host, or reported in a finding."""

    output_tok_s: float
    date: datetime | None
    host: str  # the host's name; "" when reported, not measured here
    finding: Finding
    ttft_ms: float | None = None
    itl_p50_ms: float | None = None
    itl_p99_ms: float | None = None
    itl_mean_ms: float | None = None
    concurrency: int | None = None
    input_tokens: int | None = None
    output_tokens: int | None = None
    run_id: int | None = None
    fix: Fix | None = None  # the fix the run applied; None for a reported figure


@dataclass(frozen=True)
class Verified:
    host: str
    date: datetime
    run_id: int
    fix: Fix
    cuda: str | None
    driver: str | None
    framework_version: str | None


@dataclass
class RunbookEntry:
    model: LanguageModel | None
    gpu: Hardware
    framework: FrameworkRelease | None
    gpu_count: int = 1
    command: str = ""
    command_note: str = ""
    works: Finding | None = None  # the finding the command comes from
    environment: str = ""  # the environment as a finding wrote it
    libraries: list[str] = field(default_factory=list)
    measurements: list[Measurement] = field(default_factory=list)
    pitfalls: list[Pitfall] = field(default_factory=list)
    verified: Verified | None = None

    @property
    def title(self) -> str:
        model = self.model.name if self.model else "Any model"
        release = f" · {self.framework}" if self.framework else ""
        return f"{model} on {self.gpu_count}x {self.gpu.name}{release}"

    @property
    def anchor(self) -> str:
        parts = [self.model.pk if self.model else 0, self.gpu.pk, self.framework_id or 0]
        return "rb-" + "-".join(str(part) for part in parts)

    @property
    def framework_id(self) -> int | None:
        return self.framework.pk if self.framework else None

    @property
    def edit_url(self) -> str:
        """Where to edit the entry the command came from; "" when nothing says."""
        if self.works is None or self.works.origin is None:
            return ""
        return sources.excerpt(self.works.origin, self.works).edit_url

    @property
    def builds(self) -> str:
        """What the builds must be made with to run on the GPU ("CUDA 12.8 or newer ...")."""
        return cuda_needed(self.gpu.arch, load()) if self.gpu.arch else ""

    @cached_property
    def weights(self) -> MemoryReading | None:
        """How much of each GPU the working launch's weights take, from the model's size."""
        if not self.command:
            return None
        framework = self.framework
        return launch_weights(
            self.command,
            gpu=f"{self.gpu_count}x {self.gpu.name}",
            framework=framework.name if framework else None,
            framework_version=(framework.version or None) if framework else None,
        )

    @property
    def chart_points(self) -> list[tuple[datetime, float, str]]:
        return [
            (m.date, m.output_tok_s, m.host or "reported")
            for m in self.measurements
            if m.date is not None
        ]


def runbook_entries() -> list[RunbookEntry]:
    return entries_of(published_findings())


def entries_of(findings: Iterable[Finding]) -> list[RunbookEntry]:
    """The entries these published findings make (placed on their GPUs, with runs)."""
    entries: dict[EntryKey, RunbookEntry] = {}
    for finding in findings:
        for placement in finding.findinggpu_set.all():
            key = (finding.model_id, placement.hardware_id, finding.framework_id)
            entry = entries.get(key)
            if entry is None:
                entry = RunbookEntry(finding.model, placement.hardware, finding.framework)
                entry.gpu_count = placement.count
                entries[key] = entry
            add_finding(entry, finding, placement.count)
    for entry in entries.values():
        add_runs(entry)
        if not entry.command:
            derive_command(entry)
    return sorted(entries.values(), key=lambda e: e.title.lower())


def entry_for(
    model: str | None,
    gpus: Sequence[str],
    arch: str | None,
    framework: str | None,
    version: str | None,
) -> RunbookEntry | None:
    """The entry with a whole launch for the setup a diagnosis was asked about: the same
    model (a repository id's last part, any case: `zai-org/GLM-5-NVFP4` is `GLM-5-NVFP4`),
    the same GPU (the same architecture when only that is known) and, when known, the
    same framework; the same release first, then a verified one. None without one."""
    key = model_key(model or "")
    if not key or not (gpus or arch):
        return None
    same_model = [m.pk for m in LanguageModel.objects.filter(name__iendswith=key)]
    findings = published_findings().filter(model_id__in=same_model)
    placed = Q(findinggpu__hardware__name__in=gpus) if gpus else Q(findinggpu__hardware__arch=arch)
    findings = findings.filter(placed)
    if framework:
        findings = findings.filter(framework__name__iexact=framework)
    entries = [
        entry
        for entry in entries_of(findings.distinct())
        if entry.command
        and entry.model is not None
        and model_key(entry.model.name) == key
        and (entry.gpu.name in gpus if gpus else entry.gpu.arch == arch)
    ]
    release = (version or "").strip()
    entries.sort(
        key=lambda e: (
            not release or e.framework is None or e.framework.version != release,
            e.verified is None,
        )
    )
    return entries[0] if entries else None


def model_key(name: str) -> str:
    """A model as a setup names it: a repository id's or a path's last part, any case."""
    return name.strip().rstrip("/").rsplit("/", 1)[-1].lower()


def published_findings() -> QuerySet[Finding]:
    runs = ValidationRun.objects.select_related("host").order_by("finished_at", "id")
    fixes = Fix.objects.order_by("position", "id").prefetch_related(
        Prefetch("validation_runs", queryset=runs)
    )
    return (
        Finding.objects.filter(status=Finding.Status.PUBLISHED)
        .select_related("model", "framework", "origin")
        .prefetch_related(
            "findinggpu_set__hardware",
            "flag_settings",
            "libraries",
            Prefetch("fixes", queryset=fixes),
        )
        .order_by("created_at", "id")
    )


def add_finding(entry: RunbookEntry, finding: Finding, gpu_count: int) -> None:
    entry.environment = entry.environment or str((finding.extra or {}).get("environment", ""))
    for library in finding.libraries.all():
        if str(library) not in entry.libraries:
            entry.libraries.append(str(library))
    if finding.kind != Finding.Kind.WORKS:
        entry.pitfalls.append(
            Pitfall(finding, first_resolving(finding), first_of(finding, Fix.Outcome.PARTIAL))
        )
        return
    if finding.works_command and entry.works is None:
        entry.works, entry.gpu_count = finding, gpu_count
        entry.command, entry.command_note = command_of_works(entry, finding)
    if finding.throughput_tok_s:
        entry.measurements.append(
            Measurement(
                output_tok_s=finding.throughput_tok_s,
                date=finding.created_at,
                host="",
                finding=finding,
                ttft_ms=finding.ttft_ms,
                itl_mean_ms=finding.itl_ms,
            )
        )


def first_resolving(finding: Finding) -> Fix | None:
    return first_of(finding, Fix.Outcome.RESOLVES)


def first_of(finding: Finding, outcome: str) -> Fix | None:
    return next((fix for fix in finding.fixes.all() if fix.outcome == outcome), None)


# --- the measured figures -----------------------------------------------------------


def add_runs(entry: RunbookEntry) -> None:
    """Passed runs of the entry's fixes: a table row each; the newest verifies the entry."""
    findings = [p.finding for p in entry.pitfalls] + ([entry.works] if entry.works else [])
    passed = [
        run
        for finding in findings
        for fix in finding.fixes.all()
        for run in fix.validation_runs.all()
        if run.status == ValidationRun.Status.PASSED and run.finished_at is not None
    ]
    passed.sort(key=lambda run: (run.finished_at, run.pk))
    for run in passed:
        measured = measurement_of(run)
        if measured is not None:
            entry.measurements.append(measured)
    entry.measurements.sort(key=lambda m: (m.date is None, m.date))
    if passed:
        entry.verified = verified_by(passed[-1])


def measurement_of(run: ValidationRun) -> Measurement | None:
    metrics: Mapping[str, Any] = run.metrics or {}
    tok_s = number(metrics.get("throughput_tok_s"))
    if tok_s is None:
        return None
    load = LoadSettings.from_dict((run.recipe or {}).get("load", {}))
    return Measurement(
        output_tok_s=tok_s,
        date=run.finished_at,
        host=run.host.name,
        finding=run.fix.finding,
        ttft_ms=number(metrics.get("ttft_ms")),
        itl_p50_ms=number(metrics.get("median_itl_ms")),
        itl_p99_ms=number(metrics.get("p99_itl_ms")),
        itl_mean_ms=number(metrics.get("itl_ms")),
        concurrency=load.concurrency,
        input_tokens=load.input_tokens,
        output_tokens=load.output_tokens,
        run_id=run.pk,
        fix=run.fix,
    )


def verified_by(run: ValidationRun) -> Verified:
    facts: Mapping[str, Any] = run.host.facts or {}
    assert run.finished_at is not None
    return Verified(
        host=run.host.name,
        date=run.finished_at,
        run_id=run.pk,
        fix=run.fix,
        cuda=facts.get("cuda"),
        driver=facts.get("driver"),
        framework_version=run.framework_version or None,
    )


def number(value: Any) -> float | None:
    return float(value) if isinstance(value, int | float) and not isinstance(value, bool) else None


# --- the launch command -------------------------------------------------------------


def command_of_works(entry: RunbookEntry, finding: Finding) -> tuple[str, str]:
    framework = framework_name(finding)
    launch = parse_launch_command(finding.works_command, framework)
    model = launch.model or (entry.model.name if entry.model else "")
    command = full_command(
        launch.framework or framework, version_of(finding), model, entry.gpu_count,
        launch.flags, launch.env,
    )  # fmt: skip
    if command is None:
        return finding.works_command, f"As recorded in “{finding.title}”"
    if command_words(command) == command_words(finding.works_command):
        return command, f"As recorded in “{finding.title}”"
    return command, (
        f"The flags recorded in “{finding.title}”, completed with the entry point, "
        f"the model and tensor parallelism over the {entry.gpu_count} GPUs"
    )


def whole_works_command(finding: Finding) -> tuple[str, str]:
    """A working configuration's launch as its runbook entry gives it: entry point, model
    and tensor parallelism over its GPUs around the recorded flags, with the note that
    says so. ("", "") when the finding records no launch."""
    if not finding.works_command:
        return "", ""
    placement = finding.findinggpu_set.select_related("hardware").first()
    if placement is None:
        return finding.works_command, ""
    entry = RunbookEntry(finding.model, placement.hardware, finding.framework)
    entry.gpu_count = placement.count
    return command_of_works(entry, finding)


def derive_command(entry: RunbookEntry) -> None:
    """No working command recorded: the latest pitfall's flags with its resolving fix."""
    for pitfall in reversed(entry.pitfalls):
        finding, fix = pitfall.finding, pitfall.fix
        settings = {s.name: s.value or "true" for s in finding.flag_settings.all()}
        if fix is None or not settings:
            continue
        framework, version = framework_name(finding), version_of(finding)
        model = entry.model.name if entry.model else ""
        command = full_command(framework, version, model, entry.gpu_count, settings, {})
        if command:
            changes = [change_of(change) for change in fix.changes or ()]
            entry.command = apply_changes(command, changes, framework=framework, version=version)
            entry.command_note = (
                f"Derived: the flags of “{finding.title}” with its resolving fix applied "
                "(not validated as a whole)"
            )
            return


def full_command(
    framework: str | None,
    version: str | None,
    model: str,
    gpu_count: int,
    settings: Mapping[str, str],
    env: Mapping[str, str],
) -> str | None:
    """`NAME=value … <entry point> <model> --tp N --flag value …`, every flag spelled as
    `version` of `framework` spells it. None when the framework or the model is unknown."""
    if not framework or not model:
        return None
    try:
        recipe = recipe_for(framework)
    except RecipeRefused:
        return None
    fw = recipe.framework
    words = [f"{name}={shlex.quote(value)}" for name, value in env.items()]
    words += [*recipe.entry]
    if recipe.model_flag:
        words.append(flags.spell(recipe.model_flag, fw, version))
    words.append(shlex.quote(model))
    wanted = {flags.canonical_flag(name, fw): value for name, value in settings.items()}
    tensor_parallel = flags.known_flag(TENSOR_PARALLEL, fw)
    if tensor_parallel and tensor_parallel not in wanted and gpu_count > 1:
        wanted = {tensor_parallel: str(gpu_count), **wanted}
    for name, value in wanted.items():
        if name not in MODEL_FLAGS:
            words += flag_words(fw, version, name, value)
    return " ".join(words)


def flag_words(framework: str, version: str | None, name: str, value: str) -> list[str]:
    spec = flags.flag(name, framework)
    spelled = flags.spell(name, framework, version)
    if spec is not None and spec.type == "bool":
        return [spelled] if value.lower() in ("true", "1", "yes") else []
    return [spelled] if value == "true" else [spelled, shlex.quote(value)]


def command_words(command: str) -> list[str]:
    """The command's words as a shell reads them (prompts, continuations set aside)."""
    return [word.text for word in shell_words(command)]


def framework_name(finding: Finding) -> str | None:
    return finding.framework.name if finding.framework else None


def version_of(finding: Finding) -> str | None:
    return (finding.framework.version or None) if finding.framework else None
