"""GPU hosts and the validation runs of fixes on them."""

from __future__ import annotations

from datetime import datetime

from django.conf import settings
from django.core.exceptions import ValidationError
from django.db import models

from decisiontree.host_flags import allowed_flags_problem
from decisiontree.server_env import env_name_problem
from kb.models.findings import Fix


class Host(models.Model):
    """A registered GPU host a worker reaches over SSH. No secret is stored here:
    the worker authenticates with a key file it holds, or its SSH agent."""

    name = models.SlugField(max_length=80, unique=True)
    address = models.CharField(max_length=255)
    port = models.PositiveIntegerField(default=22)
    username = models.CharField(max_length=64)
    key_path = models.CharField(
        max_length=500, blank=True, help_text="Private key path on the worker; empty = SSH agent"
    )
    host_key = models.TextField(blank=True, help_text="Pinned public host key (OpenSSH format)")
    labels = models.JSONField(default=list, blank=True)
    env = models.JSONField(
        default=dict,
        blank=True,
        help_text='Environment of every command on the host, e.g. {"PATH": "/opt/venv/bin:/bin"}',
    )
    allowed_flags = models.JSONField(
        default=list,
        blank=True,
        help_text="Flags the host policy refuses that this host's operator allows here, "
        'e.g. ["trust-remote-code"] (decisiontree/data/host_flags.json)',
    )
    facts = models.JSONField(default=dict, blank=True)
    facts_at = models.DateTimeField(null=True, blank=True)
    locked_by = models.ForeignKey(
        "ValidationRun", null=True, blank=True, on_delete=models.SET_NULL, related_name="+"
    )
    lease_expires_at = models.DateTimeField(null=True, blank=True)
    created_at = models.DateTimeField(auto_now_add=True)

    class Meta:
        ordering = ["name"]
        constraints = [
            models.CheckConstraint(
                condition=models.Q(port__gte=1, port__lte=65535), name="host_port_in_range"
            ),
        ]

    def __str__(self) -> str:
        return self.name

    def holder(self, now: datetime) -> int | None:
        """The id of the run that holds the host at `now`; None when it is free. As in
        `hosts.claim`, a lease that ran out frees the host before the sweeper clears it."""
        expires = self.lease_expires_at
        if self.locked_by_id is None or (expires is not None and expires < now):
            return None
        return self.locked_by_id

    def clean(self) -> None:
        # Names reach the shell as `export NAME=...`: only plain identifiers.
        if not isinstance(self.env, dict):
            raise ValidationError({"env": 'A JSON object of names and values, e.g. {"A": "1"}.'})
        problems = [p for name in self.env if (p := env_name_problem(str(name)))]
        if problems:
            raise ValidationError({"env": problems})
        allowed = self.allowed_flags
        if not isinstance(allowed, list) or not all(isinstance(n, str) for n in allowed):
            raise ValidationError({"allowed_flags": 'A JSON list of flag names, e.g. ["a-b"].'})
        if problem := allowed_flags_problem(allowed):
            raise ValidationError({"allowed_flags": problem})


class ValidationRun(models.Model):
    """One run of a fix on a host: launch the server with the fix applied, measure it."""

    class Status(models.TextChoices):
        QUEUED = "queued"
        RUNNING = "running"
        PASSED = "passed"
        FAILED = "failed"
        ERROR = "error"
        TIMED_OUT = "timed_out", "Timed out"
        CANCELLED = "cancelled"
        HOST_UNHEALTHY = "host_unhealthy", "Host unhealthy"

    fix = models.ForeignKey(Fix, on_delete=models.CASCADE, related_name="validation_runs")
    host = models.ForeignKey(Host, on_delete=models.PROTECT, related_name="runs")
    status = models.CharField(
        max_length=20, choices=Status.choices, default=Status.QUEUED, db_index=True
    )
    recipe = models.JSONField(default=dict, blank=True)
    command = models.TextField(blank=True, help_text="The launch command as run")
    arch = models.CharField(max_length=16, blank=True)
    framework_version = models.CharField(max_length=60, blank=True)
    log = models.TextField(blank=True)
    metrics = models.JSONField(
        default=dict, blank=True, help_text="throughput_tok_s, ttft_ms, itl_ms, request_rate…"
    )
    error = models.TextField(blank=True)
    task_id = models.CharField(max_length=64, blank=True)
    created_by = models.ForeignKey(
        settings.AUTH_USER_MODEL, null=True, blank=True, on_delete=models.SET_NULL
    )
    created_at = models.DateTimeField(auto_now_add=True)
    started_at = models.DateTimeField(null=True, blank=True)
    finished_at = models.DateTimeField(null=True, blank=True)

    # Not ended yet: a worker may still pick it up or is running it; it can be cancelled.
    LIVE = (Status.QUEUED, Status.RUNNING)

    class Meta:
        ordering = ["-created_at"]

    def __str__(self) -> str:
        return f"run {self.pk} of fix {self.fix_id} on {self.host}: {self.status}"

    @property
    def live(self) -> bool:
        return self.status in self.LIVE
