"""Request and response shapes. Validation only: the work happens in kb.services."""

from __future__ import annotations

from typing import Any

from django.conf import settings
from rest_framework import serializers

from api.errors import PayloadTooLarge
from decisiontree.records import ChangeAction
from kb.models import (
    Finding,
    Fix,
    Flag,
    FlagSetting,
    FrameworkRelease,
    Hardware,
    Host,
    LanguageModel,
    ValidationRun,
)
from kb.services.search import snippet_for

MAX_ANSWERS = 20


def paste_limit() -> int:
    return int(getattr(settings, "FIXGRAPH_MAX_PASTE_BYTES", 2_000_000))


def optional_text(max_length: int = 200) -> serializers.CharField:
    return serializers.CharField(required=False, allow_blank=True, max_length=max_length)


class DiagnoseRequestSerializer(serializers.Serializer):
    traceback = serializers.CharField(trim_whitespace=False, help_text="The pasted error or log")
    launch_command = optional_text(20_000)
    gpu = optional_text()
    model = optional_text()
    framework = optional_text(60)
    framework_version = optional_text(60)
    answers = serializers.DictField(
        child=serializers.CharField(max_length=200, allow_blank=True),
        required=False,
        help_text='Answers to earlier questions, e.g. {"gpu.arch": "sm_120"}',
    )

    def validate_traceback(self, value: str) -> str:
        if len(value.encode("utf-8", "surrogatepass")) > paste_limit():
            raise PayloadTooLarge(f"The traceback is over {paste_limit():,} bytes; paste less.")
        return value

    def validate_answers(self, value: dict[str, str]) -> dict[str, str]:
        if len(value) > MAX_ANSWERS:
            raise serializers.ValidationError(f"At most {MAX_ANSWERS} answers.")
        return value


class FeedbackSerializer(serializers.Serializer):
    fix_id = serializers.IntegerField(min_value=1)
    helped = serializers.BooleanField()
    fingerprint = optional_text(64)
    context = serializers.DictField(required=False)
    comment = optional_text(5_000)

    def validate_fix_id(self, value: int) -> int:
        if not Fix.objects.filter(pk=value).exists():
            raise serializers.ValidationError("No fix has this id.")
        return value


class SignatureDecisionSerializer(serializers.Serializer):
    fingerprint = serializers.RegexField(r"^[0-9a-f]{8,64}$", max_length=64)
    finding_id = serializers.IntegerField(min_value=1)
    decision = serializers.ChoiceField(choices=["link", "split"])

    def validate_finding_id(self, value: int) -> int:
        if not Finding.objects.filter(pk=value).exists():
            raise serializers.ValidationError("No finding has this id.")
        return value


class FeedbackReplySerializer(serializers.Serializer):
    id = serializers.IntegerField()
    fix_id = serializers.IntegerField()
    helped = serializers.BooleanField()


def validate_pairs(value: Any, required: tuple[str, ...], what: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise serializers.ValidationError(f"Expected a list of {what} objects.")
    for item in value:
        if not isinstance(item, dict) or any(not isinstance(item.get(k), str) for k in required):
            keys = ", ".join(required)
            raise serializers.ValidationError(f"Each {what} needs string fields: {keys}.")
    return value


class FixSerializer(serializers.ModelSerializer):
    finding_id = serializers.IntegerField(read_only=True)

    class Meta:
        model = Fix
        fields = [
            "id",
            "finding_id",
            "summary",
            "changes",
            "outcome",
            "position",
            "needs_review",
            "created_at",
            "updated_at",
        ]
        read_only_fields = ["needs_review", "created_at", "updated_at"]

    def validate_changes(self, value: Any) -> list[dict[str, Any]]:
        changes = validate_pairs(value, ("action", "name"), "change")
        known = {str(action) for action in ChangeAction}
        for change in changes:
            if change["action"] not in known:
                raise serializers.ValidationError(
                    f"Unknown action {change['action']!r}; one of {', '.join(sorted(known))}."
                )
        return changes


class GpuSerializer(serializers.ModelSerializer):
    class Meta:
        model = Hardware
        fields = ["id", "name", "arch", "compute_capability", "family", "memory_gb", "aliases"]


class LanguageModelSerializer(serializers.ModelSerializer):
    class Meta:
        model = LanguageModel
        fields = ["id", "name", "family", "arch", "quantization"]


class FrameworkReleaseSerializer(serializers.ModelSerializer):
    class Meta:
        model = FrameworkRelease
        fields = ["id", "name", "version"]


class FlagSerializer(serializers.ModelSerializer):
    class Meta:
        model = Flag
        fields = [
            "id",
            "framework",
            "name",
            "aliases",
            "type",
            "choices",
            "default",
            "deprecated",
            "renamed",
            "concept",
            "description",
        ]


class FlagSettingSerializer(serializers.ModelSerializer):
    class Meta:
        model = FlagSetting
        fields = ["name", "value"]


class FindingSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:finding-detail")
    gpus = GpuSerializer(many=True, read_only=True)
    flags = FlagSettingSerializer(source="flag_settings", many=True, read_only=True)
    fixes = FixSerializer(many=True, read_only=True)
    model = serializers.PrimaryKeyRelatedField(
        queryset=LanguageModel.objects.all(), required=False, allow_null=True
    )
    framework = serializers.PrimaryKeyRelatedField(
        queryset=FrameworkRelease.objects.all(), required=False, allow_null=True
    )
    rank = serializers.SerializerMethodField()
    snippet = serializers.SerializerMethodField()

    class Meta:
        model = Finding
        fields = [
            "id",
            "url",
            "title",
            "summary",
            "body",
            "kind",
            "status",
            "resolution",
            "cause",
            "conditions",
            "gpus",
            "model",
            "framework",
            "flags",
            "fixes",
            "works_command",
            "throughput_tok_s",
            "ttft_ms",
            "itl_ms",
            "before_value",
            "after_value",
            "metric_unit",
            "metric_note",
            "created_at",
            "updated_at",
            "rank",
            "snippet",
        ]
        read_only_fields = ["created_at", "updated_at"]

    def get_rank(self, finding: Finding) -> float | None:
        return getattr(finding, "rank", None)

    def get_snippet(self, finding: Finding) -> str | None:
        """The first hit of `q`, HTML-escaped, with the matched words in <mark>."""
        query = self.context.get("search_query")
        return snippet_for(finding, query, self.context.get("search_reading")) if query else None

    def validate_conditions(self, value: Any) -> list[dict[str, Any]]:
        return validate_pairs(value, ("key", "value"), "condition")


class FindingHistorySerializer(serializers.Serializer):
    history_id = serializers.IntegerField()
    history_date = serializers.DateTimeField()
    history_type = serializers.CharField()
    history_user = serializers.CharField(allow_null=True)
    title = serializers.CharField()
    status = serializers.CharField()
    changed_fields = serializers.ListField(child=serializers.CharField())


class HostSerializer(serializers.ModelSerializer):
    class Meta:
        model = Host
        # No key path or login name: they tell an attacker where to aim.
        fields = ["id", "name", "address", "port", "labels", "facts", "facts_at", "created_at"]


class ValidationRunSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:validationrun-detail")
    fix_id = serializers.IntegerField(read_only=True)
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)

    class Meta:
        model = ValidationRun
        fields = [
            "id",
            "url",
            "fix_id",
            "host",
            "status",
            "command",
            "arch",
            "framework_version",
            "metrics",
            "error",
            "log",
            "created_at",
            "started_at",
            "finished_at",
        ]


class ValidationRunRequestSerializer(serializers.Serializer):
    fix_id = serializers.IntegerField(min_value=1)
    host = serializers.CharField(max_length=80, help_text="The host's name (or id)")

    def validate_fix_id(self, value: int) -> int:
        if not Fix.objects.filter(pk=value).exists():
            raise serializers.ValidationError("No fix has this id.")
        return value

    def validate_host(self, value: str) -> Host:
        host = Host.objects.filter(name=value).first()
        if host is None and value.isdigit():
            host = Host.objects.filter(pk=int(value)).first()
        if host is None:
            raise serializers.ValidationError("No host has this name.")
        return host
