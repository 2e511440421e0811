"""Diagnoses as they were given: the paste, the answer, who asked; one page each."""

from __future__ import annotations

import secrets

from django.conf import settings
from django.db import models
from django.urls import reverse

from kb.models.findings import Finding

SLUG_BYTES = 16  # 128 random bits: a link nobody can guess or enumerate


def new_slug() -> str:
    return secrets.token_urlsafe(SLUG_BYTES)


class StoredDiagnosis(models.Model):
    """One diagnosis: the paste and what the user said about the launch, the answer exactly
    as shown (fixes, corrected commands, questions), and who asked, through which channel.

    Reached at /diagnose/<slug>/ by anyone who holds the link, like a shared document:
    the slug is the secret, so pastes are never listed to people who were not given one.
    The context columns (fingerprint, finding, GPU, versions) are copies of the answer's,
    kept as columns so occurrence figures are plain aggregate queries.
    """

    class Channel(models.TextChoices):
        WEB = "web"
        API = "api"
        SLACK = "slack"
        CLI = "cli"

    slug = models.CharField(max_length=32, unique=True, default=new_slug, editable=False)
    # What was asked
    text = models.TextField(help_text="The paste, verbatim (of a whole log: its start and end)")
    read_from = models.CharField(
        max_length=400, blank=True, help_text="Of an attached log: its name and what was read"
    )
    scrubbed = models.JSONField(
        default=list, blank=True, help_text="What looked like a secret, removed before storing"
    )
    launch_command = models.TextField(blank=True)
    gpu = models.CharField(max_length=200, blank=True, help_text="As the user typed it")
    model = models.CharField(max_length=200, blank=True, help_text="As the user typed it")
    framework = models.CharField(max_length=60, blank=True, help_text="As the user typed it")
    framework_version = models.CharField(max_length=60, blank=True)
    answers = models.JSONField(default=dict, blank=True, help_text="Answers to our questions")
    refines = models.ForeignKey(
        "self",
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="refinements",
        help_text="The diagnosis whose question this one answered (not a new occurrence)",
    )
    # The answer
    answer = models.JSONField(help_text="The diagnosis as shown and as the API returns it")
    match = models.CharField(max_length=10, db_index=True, help_text="known, similar or none")
    fingerprint = models.CharField(max_length=64, blank=True, db_index=True)
    finding = models.ForeignKey(
        Finding,
        null=True,
        blank=True,
        on_delete=models.SET_NULL,
        related_name="diagnoses",
        help_text="The finding the error matched best (none when nothing matched)",
    )
    # Where it happened, as the diagnosis read it
    seen_gpu = models.CharField(max_length=120, blank=True)
    seen_arch = models.CharField(max_length=16, blank=True)
    seen_framework = models.CharField(max_length=60, blank=True)
    seen_framework_version = models.CharField(max_length=60, blank=True)
    seen_model = models.CharField(max_length=200, blank=True)
    # Who asked
    channel = models.CharField(max_length=10, choices=Channel.choices, default=Channel.WEB)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    requester = models.CharField(
        max_length=200, blank=True, help_text="Who asked when not a user: a token, a Slack user"
    )
    created_at = models.DateTimeField(auto_now_add=True, db_index=True)

    class Meta:
        ordering = ["-created_at"]
        verbose_name_plural = "stored diagnoses"
        indexes = [
            models.Index(fields=["finding", "created_at"], name="diagnosis_finding_seen"),
            models.Index(fields=["fingerprint", "created_at"], name="diagnosis_fingerprint_seen"),
        ]

    def __str__(self) -> str:
        return f"diagnosis {self.slug[:8]}… ({self.match})"

    def get_absolute_url(self) -> str:
        return reverse("kb:diagnosis", args=[self.slug])

    @property
    def html_url(self) -> str:
        """The page's address for people outside a request: bots, chat messages."""
        return settings.SITE_URL + self.get_absolute_url()

    @property
    def asked_by(self) -> str:
        if self.created_by is not None:
            return self.created_by.get_username()
        return self.requester or "anonymous"
