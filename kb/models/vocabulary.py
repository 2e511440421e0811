"""What things are: GPUs, models, framework releases and their launch flags."""

from __future__ import annotations

from django.db import models


class Hardware(models.Model):
    """A GPU, named as `nvidia-smi` prints it."""

    name = models.CharField(max_length=120, unique=True)
    arch = models.CharField(max_length=16, help_text="e.g. sm_120", db_index=True)
    compute_capability = models.CharField(max_length=8, help_text="e.g. 12.0")
    family = models.CharField(max_length=40, blank=True, help_text="e.g. Blackwell")
    memory_gb = models.FloatField(null=True, blank=True)
    aliases = models.JSONField(default=list, blank=True, help_text="Short names people write")

    class Meta:
        ordering = ["name"]
        verbose_name_plural = "hardware"

    def __str__(self) -> str:
        return f"{self.name} ({self.arch})"


class LanguageModel(models.Model):
    """A served model: repository id, family, architecture id and quantization."""

    name = models.CharField(max_length=200, unique=True, help_text="Repository id or name")
    family = models.CharField(max_length=60, blank=True)
    arch = models.CharField(max_length=80, blank=True, help_text="e.g. glm_moe_dsa")
    quantization = models.CharField(max_length=40, blank=True, help_text="e.g. nvfp4")

    class Meta:
        ordering = ["name"]

    def __str__(self) -> str:
        return self.name


class FrameworkRelease(models.Model):
    """A release of a serving framework or a library it depends on."""

    name = models.CharField(max_length=60, help_text="sglang, vllm, transformers, flashinfer…")
    version = models.CharField(max_length=60, blank=True, help_text="Empty when unknown")

    class Meta:
        ordering = ["name", "version"]
        constraints = [
            models.UniqueConstraint(fields=["name", "version"], name="unique_framework_release"),
        ]

    def __str__(self) -> str:
        return f"{self.name} {self.version}".strip()


class Flag(models.Model):
    """A launch flag of one framework, under its newest spelling."""

    class Type(models.TextChoices):
        BOOL = "bool"
        INT = "int"
        FLOAT = "float"
        STR = "str"
        JSON = "json"

    framework = models.CharField(max_length=20)
    name = models.CharField(max_length=80, help_text="Canonical name, no dashes")
    aliases = models.JSONField(default=list, blank=True)
    type = models.CharField(max_length=8, choices=Type.choices, default=Type.STR)
    choices = models.JSONField(default=list, blank=True)
    default = models.CharField(max_length=200, blank=True)
    deprecated = models.BooleanField(default=False)
    renamed = models.JSONField(
        default=list, blank=True, help_text="[old name, last version that used it] pairs"
    )
    earlier_default = models.JSONField(
        default=list,
        blank=True,
        help_text="[default, last release known to have it] before the newest release's; "
        "a null release: every release before the newest; [] when it never changed",
    )
    concept = models.CharField(
        max_length=60, blank=True, help_text="Shared by the flags of other frameworks that mean it"
    )
    description = models.TextField(blank=True)

    class Meta:
        ordering = ["framework", "name"]
        constraints = [
            models.UniqueConstraint(fields=["framework", "name"], name="unique_flag_per_framework"),
        ]

    def __str__(self) -> str:
        return f"{self.framework} --{self.name}"
