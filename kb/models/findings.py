"""Findings and everything they link: sources, error signatures, flags as launched, fixes."""

from __future__ import annotations

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models
from simple_history.models import HistoricalRecords

from decisiontree import conditions
from kb.models.vocabulary import Flag, FrameworkRelease, Hardware, LanguageModel


class SourceDocument(models.Model):
    """A document findings were drawn from, kept verbatim (a write-up, a FINDINGS.md)."""

    class Format(models.TextChoices):
        FINDINGS_MD = "findings_md", "FINDINGS.md entries"
        WRITEUP = "writeup", "Incident write-up"

    title = models.CharField(max_length=300)
    path = models.CharField(max_length=500, blank=True, help_text="Where it was ingested from")
    format = models.CharField(max_length=20, choices=Format.choices)
    content = models.TextField()
    content_hash = models.CharField(max_length=64, unique=True)
    reader = models.CharField(
        max_length=16,
        blank=True,
        help_text="The reader it was last read with (decisiontree.documents.reader_scheme)",
    )
    ingested_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-updated_at"]

    def __str__(self) -> str:
        return self.title


class ErrorSignature(models.Model):
    """A normalised error: the exception type, message template and key frames."""

    fingerprint = models.CharField(max_length=64, unique=True)
    template_key = models.CharField(max_length=64, db_index=True)
    exception_type = models.CharField(max_length=200)
    template = models.TextField()
    key_frames = models.JSONField(default=list, blank=True)
    first_seen = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["exception_type", "template"]

    def __str__(self) -> str:
        return f"{self.exception_type}: {self.template[:80]}"


class Finding(models.Model):
    """One piece of learned truth: on this hardware, with this model, release and flags,
    this error appears because of this cause, and these fixes do (or do not) resolve it."""

    class Status(models.TextChoices):
        DRAFT = "draft"
        PUBLISHED = "published"
        RETIRED = "retired"

    class Kind(models.TextChoices):
        CRASH = "crash"
        HANG = "hang"
        WRONG_OUTPUT = "wrong_output", "Wrong output"
        OOM = "oom", "Out of memory"
        SLOW = "slow"
        WORKS = "works", "Working configuration"

    class Resolution(models.TextChoices):
        RESOLVED = "resolved"
        WORKAROUND = "workaround"
        OPEN = "open"

    title = models.CharField(max_length=300)
    summary = models.TextField(blank=True)
    body = models.TextField(blank=True, help_text="Markdown")
    kind = models.CharField(max_length=20, choices=Kind.choices, default=Kind.CRASH)
    status = models.CharField(
        max_length=20, choices=Status.choices, default=Status.DRAFT, db_index=True
    )
    resolution = models.CharField(max_length=20, choices=Resolution.choices, blank=True)
    cause = models.TextField(blank=True)
    conditions = models.JSONField(
        default=list, blank=True, help_text='[{"key": "gpu.arch", "value": "sm_120"}, …]'
    )
    gpus = models.ManyToManyField(Hardware, through="FindingGpu", blank=True)
    model = models.ForeignKey(
        LanguageModel, null=True, blank=True, on_delete=models.SET_NULL, related_name="findings"
    )
    framework = models.ForeignKey(
        FrameworkRelease,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="findings",
    )
    libraries = models.ManyToManyField(
        FrameworkRelease, blank=True, related_name="findings_as_library"
    )
    signatures = models.ManyToManyField(ErrorSignature, blank=True, related_name="findings")
    sources = models.ManyToManyField(SourceDocument, blank=True, related_name="findings")
    origin = models.ForeignKey(
        SourceDocument,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="extracted_findings",
        help_text="The document this finding was extracted from",
    )
    origin_key = models.CharField(
        max_length=300, blank=True, help_text="Identifies the entry within its origin document"
    )
    started_from = models.ForeignKey(
        "kb.StoredDiagnosis",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="drafts_started",
        help_text="The diagnosis (paste, launch command, GPU) this draft was started from",
    )
    # Measured figures: a working configuration's throughput, a slow one's before/after.
    works_command = models.TextField(blank=True)
    throughput_tok_s = models.FloatField(null=True, blank=True)
    ttft_ms = models.FloatField(null=True, blank=True)
    itl_ms = models.FloatField(null=True, blank=True)
    before_value = models.FloatField(null=True, blank=True)
    after_value = models.FloatField(null=True, blank=True)
    metric_unit = models.CharField(max_length=40, blank=True)
    metric_note = models.TextField(blank=True, help_text="The figures as written")
    extra = models.JSONField(default=dict, blank=True)
    problems = models.JSONField(default=list, blank=True, help_text="Notes for the reviewer")
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["-updated_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["origin", "origin_key"],
                condition=~models.Q(origin_key=""),
                name="unique_finding_per_origin_entry",
            ),
        ]

    def __str__(self) -> str:
        return self.title

    def clean(self) -> None:
        """Conditions in the form the diagnosis reads (`arch` -> `gpu.arch`), or a clear error."""
        framework = self.framework.name if self.framework is not None else None
        try:
            self.conditions = conditions.checked(self.conditions, framework)
        except conditions.ConditionError as error:
            raise ValidationError({"conditions": str(error)}) from error


class FindingGpu(models.Model):
    """A GPU a finding was seen on, with how many of them."""

    finding = models.ForeignKey(Finding, on_delete=models.CASCADE)
    hardware = models.ForeignKey(Hardware, on_delete=models.PROTECT)
    count = models.PositiveSmallIntegerField(default=1)

    class Meta:
        constraints = [
            models.UniqueConstraint(fields=["finding", "hardware"], name="unique_finding_gpu"),
            models.CheckConstraint(condition=models.Q(count__gte=1), name="gpu_count_positive"),
        ]

    def __str__(self) -> str:
        return f"{self.count}x {self.hardware.name}"


class FlagSetting(models.Model):
    """A flag as it was launched in a finding's deployment."""

    finding = models.ForeignKey(Finding, on_delete=models.CASCADE, related_name="flag_settings")
    flag = models.ForeignKey(Flag, null=True, blank=True, on_delete=models.SET_NULL)
    name = models.CharField(max_length=80, help_text="Canonical name when known, else as written")
    value = models.CharField(max_length=500, blank=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.UniqueConstraint(fields=["finding", "name"], name="unique_flag_per_finding"),
        ]

    def __str__(self) -> str:
        return f"--{self.name} {self.value}".strip()


class ErrorSample(models.Model):
    """A verbatim error text (traceback, log lines) reported for a finding."""

    finding = models.ForeignKey(Finding, on_delete=models.CASCADE, related_name="samples")
    source = models.ForeignKey(
        SourceDocument, null=True, blank=True, on_delete=models.SET_NULL, related_name="samples"
    )
    signature = models.ForeignKey(
        ErrorSignature, null=True, blank=True, on_delete=models.SET_NULL, related_name="samples"
    )
    text = models.TextField()
    parsed = models.JSONField(
        default=dict, blank=True, help_text="Its signatures, as decisiontree.samples stores them"
    )
    # Learned from use: a paste someone said a fix fixed, added by a reviewer. Such samples
    # are not the document's: re-ingesting the document keeps them.
    learned_at = models.DateTimeField(null=True, blank=True)
    learned_from = models.ForeignKey(
        "kb.FixFeedback",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="learned_samples",
        help_text="The “fixed it” vote whose paste this is",
    )
    learned_by = models.ForeignKey(
        settings.AUTH_USER_MODEL,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="The reviewer who added it",
    )

    def __str__(self) -> str:
        return self.text[:80]


class Fix(models.Model):
    """A change tried against a finding, and what it did."""

    class Outcome(models.TextChoices):
        RESOLVES = "resolves"
        PARTIAL = "partial"
        NO_EFFECT = "no_effect", "No effect"
        WORSE = "worse"
        PROPOSED = "proposed", "Proposed, not confirmed"

    finding = models.ForeignKey(Finding, on_delete=models.CASCADE, related_name="fixes")
    summary = models.TextField()
    passage = models.TextField(blank=True, help_text="The words of the source it was read from")
    source = models.ForeignKey(
        SourceDocument,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="fixes",
        help_text="The document that reported this attempt",
    )
    changes = models.JSONField(
        default=list, blank=True, help_text='[{"action": "set_flag", "name": "…", "value": "…"}]'
    )
    outcome = models.CharField(max_length=20, choices=Outcome.choices)
    position = models.PositiveSmallIntegerField(default=0)
    needs_review = models.BooleanField(
        default=False, help_text="Set when a validation run contradicts the reported outcome"
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)
    history = HistoricalRecords()

    class Meta:
        ordering = ["finding", "position", "id"]
        verbose_name_plural = "fixes"

    def __str__(self) -> str:
        return f"{self.summary[:60]} ({self.outcome})"


class FixFeedback(models.Model):
    """One person's word on a suggested fix for one paste: it fixed it, or it did not.

    One vote per voter, fix and paste (kb.services.feedback): a second vote replaces the
    first. A voter is a FixGraph user, an API token or a Slack user; never nobody.
    """

    fix = models.ForeignKey(Fix, on_delete=models.CASCADE, related_name="feedback")
    helped = models.BooleanField()
    voter = models.CharField(
        max_length=120, help_text='Who voted: "user:<id>", "token:<id>", "slack:<team>:<user>"'
    )
    paste_key = models.CharField(
        max_length=64, blank=True, help_text="Digest of the paste the fix was tried on"
    )
    fingerprint = models.CharField(max_length=64, blank=True)
    diagnosis = models.ForeignKey(
        "kb.StoredDiagnosis",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="feedback",
        help_text="The diagnosis voted on: its paste is kept with the vote",
    )
    worked_instead_fix = models.ForeignKey(
        Fix,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="+",
        help_text="Did not help: the fix that worked instead",
    )
    worked_instead_text = models.TextField(
        blank=True, help_text="Did not help: what worked instead, in the voter's words"
    )
    context = models.JSONField(default=dict, blank=True)
    comment = models.TextField(blank=True)
    channel = models.CharField(max_length=20, blank=True, help_text="web, api, slack, cli")
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    updated_at = models.DateTimeField(auto_now=True)

    class Meta:
        ordering = ["-created_at"]
        constraints = [
            models.UniqueConstraint(
                fields=["voter", "fix", "paste_key"], name="one_vote_per_voter_fix_paste"
            ),
        ]

    def __str__(self) -> str:
        return f"{'fixed it' if self.helped else 'did not help'}: fix {self.fix_id}"


class SignatureDecision(models.Model):
    """A reviewer's ruling that a fingerprint belongs to a finding (link) or not (split)."""

    class Decision(models.TextChoices):
        LINK = "link"
        SPLIT = "split"

    fingerprint = models.CharField(max_length=64)
    fingerprint_version = models.PositiveSmallIntegerField(
        default=1, help_text="decisiontree.fingerprint.FINGERPRINT_VERSION it was computed under"
    )
    finding = models.ForeignKey(Finding, on_delete=models.CASCADE, related_name="decisions")
    decision = models.CharField(max_length=10, choices=Decision.choices)
    decided_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    decided_at = models.DateTimeField(auto_now=True)

    class Meta:
        constraints = [
            models.UniqueConstraint(
                fields=["fingerprint", "finding"], name="one_decision_per_fingerprint_finding"
            ),
        ]

    def __str__(self) -> str:
        return f"{self.decision} {self.fingerprint[:12]} ↔ finding {self.finding_id}"
