"""Request and response shapes. Validation only: the work happens in kb.services."""

from __future__ import annotations

import difflib
import json
from collections.abc import Mapping, Sequence
from typing import Any
from urllib.parse import urlencode

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile
from django.db import transaction
from django.urls import reverse
from drf_spectacular.utils import extend_schema_field
from rest_framework import serializers

from api.errors import PayloadTooLarge
from decisiontree import conditions, host_faults, model_weights, server_memory
from decisiontree.answer import OTHER_SETUP, PROPOSED
from decisiontree.context import Context
from decisiontree.diagnose import Diagnosis, RankedFix, State, Verdict
from decisiontree.fingerprint import UNNAMED_TYPES, error_name
from decisiontree.gpu_memory import READINGS, MemoryReading, OutOfMemory
from decisiontree.launch import FoundCommand, launch_differences, rename_flags
from decisiontree.launch_check import LaunchCheck
from decisiontree.match import MatchLevel
from decisiontree.records import Change, ChangeAction, Condition, Outcome
from decisiontree.server_env import change_problem
from decisiontree.spelling import condition_in_words
from decisiontree.traceback import InputRejected, parse
from kb.models import (
    ErrorSample,
    Finding,
    Fix,
    FixFeedback,
    Flag,
    FlagSetting,
    FrameworkRelease,
    Hardware,
    Host,
    LanguageModel,
    ValidationRun,
)
from kb.services import records, stored_diagnoses
from kb.services.uploads import LogTooLarge, LogUnreadable, read_log, send_log_instead

MAX_ANSWERS = 20
MAX_FEEDBACK_CONTEXT_BYTES = 10_000


def paste_limit() -> int:
    return int(getattr(settings, "FIXGRAPH_MAX_PASTE_BYTES", 2_000_000))


def within_paste_limit(value: str, what: str, instead: str = "paste less.") -> str:
    if len(value.encode("utf-8", "surrogatepass")) > paste_limit():
        raise PayloadTooLarge(f"The {what} is over {paste_limit():,} bytes; {instead}")
    return value


def optional_text(max_length: int = 200) -> serializers.CharField:
    return serializers.CharField(required=False, allow_blank=True, max_length=max_length)


# What a browser's form posts beside an endpoint's own fields (the browsable API's forms).
FORM_ONLY_FIELDS = frozenset({"csrfmiddlewaretoken"})


class KnownFieldsOnly(serializers.Serializer):
    """Refuses a field the endpoint does not know instead of dropping it: a bot that sent
    `launch_cmd` for `launch_command`, or `sample` for `samples`, would otherwise get an
    answer that left it out without a word. Read-only fields may be sent back unchanged."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, Mapping):
            unknown = sorted(set(data) - set(self.fields) - FORM_ONLY_FIELDS)
            if unknown:
                raise serializers.ValidationError(
                    {name: [self.unknown_field(name)] for name in unknown}
                )
        return super().to_internal_value(data)

    def unknown_field(self, name: str) -> str:
        taken = [n for n, f in self.fields.items() if not f.read_only]
        close = difflib.get_close_matches(name, taken, n=1)
        hint = f"did you mean `{close[0]}`? " if close else ""
        return f"Unknown field; {hint}this endpoint takes {', '.join(taken)}."


class PasteField(serializers.CharField):
    """Text; a file sent under the paste's name (`curl -F traceback=@server.log`, the usual
    slip for `-F traceback=<server.log`) is kept as the file, and read as `log` is."""

    def to_internal_value(self, data: Any) -> Any:
        if isinstance(data, UploadedFile):
            return data
        return super().to_internal_value(data)


class DiagnoseRequestSerializer(KnownFieldsOnly):
    traceback = PasteField(
        trim_whitespace=False,
        required=False,
        help_text="The pasted error or log lines; or send `log` instead (a file sent as "
        "`traceback` is read as `log`)",
    )
    log = serializers.FileField(
        required=False,
        help_text="Instead of `traceback` (multipart/form-data, with a token): a whole server "
        "log, read at its start and its end; up to FIXGRAPH_MAX_LOG_BYTES (100 MB)",
    )
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

    def validate_traceback(self, value: str | UploadedFile) -> str | UploadedFile:
        if isinstance(value, UploadedFile):
            return value
        return within_paste_limit(value, "traceback", send_log_instead())

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        """The text to diagnose from `traceback` or `log` (exactly one), and what was read
        of a log (`read_from`)."""
        log, pasted = data.pop("log", None), data.get("traceback")
        if isinstance(pasted, UploadedFile):
            if log is not None:
                raise serializers.ValidationError("Send `traceback` or `log`, not both.")
            log, pasted = pasted, None
        if log is not None and pasted:
            raise serializers.ValidationError("Send `traceback` or `log`, not both.")
        if log is not None:
            try:
                data["traceback"], data["read_from"] = read_log(log)
            except LogTooLarge as too_large:
                raise PayloadTooLarge(str(too_large)) from None
            except LogUnreadable as unreadable:  # a damaged archive, one that unpacks to GBs
                raise serializers.ValidationError({"log": [str(unreadable)]}) from None
        elif not pasted:
            raise serializers.ValidationError({"traceback": ["This field is required."]})
        return data

    def validate_answers(self, value: dict[str, str]) -> dict[str, str]:
        if len(value) > MAX_ANSWERS:
            raise serializers.ValidationError(f"At most {MAX_ANSWERS} answers.")
        return value


class FeedbackRequestSerializer(KnownFieldsOnly):
    """A vote on a suggested fix; a second vote on the same fix and paste replaces the first."""

    fix_id = serializers.IntegerField(
        min_value=1, required=False, help_text="The fix: `fixes[].fix_id` of a diagnose answer"
    )
    fix = serializers.IntegerField(
        min_value=1,
        required=False,
        write_only=True,
        help_text="Deprecated: the old name of `fix_id`, accepted until API v2",
    )
    helped = serializers.BooleanField(help_text="true: it fixed it; false: it did not help")
    diagnosis_id = serializers.CharField(
        required=False,
        max_length=32,
        help_text="The diagnose answer's `id`: its paste is kept with the vote, and one "
        "vote counts per token, fix and paste",
    )
    fingerprint = optional_text(64)
    worked_instead_fix_id = serializers.IntegerField(
        min_value=1, required=False, help_text="Did not help: the fix that worked instead"
    )
    worked_instead_text = optional_text(5_000)
    context = serializers.DictField(required=False)
    comment = optional_text(5_000)

    def validate(self, data: dict[str, Any]) -> dict[str, Any]:
        fix_id = data.pop("fix", None)
        data.setdefault("fix_id", fix_id)
        if data["fix_id"] is None:
            raise serializers.ValidationError({"fix_id": ["This field is required."]})
        data["fix"] = fix_or_error(data["fix_id"], "fix_id")
        slug = data.pop("diagnosis_id", "")
        data["diagnosis"] = stored_diagnoses.stored(slug) if slug else None
        if slug and data["diagnosis"] is None:
            raise serializers.ValidationError({"diagnosis_id": ["No diagnosis has this id."]})
        instead = data.pop("worked_instead_fix_id", None)
        data["worked_instead_fix"] = (
            fix_or_error(instead, "worked_instead_fix_id") if instead else None
        )
        if data["helped"] and (instead or data.get("worked_instead_text", "").strip()):
            raise serializers.ValidationError(
                {"helped": ["`worked_instead_*` goes with helped=false: what worked instead."]}
            )
        return data

    def validate_context(self, value: dict[str, Any]) -> dict[str, Any]:
        # Stored on every vote: a bot's context, not a place to park megabytes.
        if len(json.dumps(value, default=str)) > MAX_FEEDBACK_CONTEXT_BYTES:
            raise serializers.ValidationError(
                f"The context is over {MAX_FEEDBACK_CONTEXT_BYTES:,} bytes of JSON."
            )
        return value


def fix_or_error(fix_id: int, field: str) -> Fix:
    fix = Fix.objects.filter(pk=fix_id).select_related("finding").first()
    if fix is None:
        raise serializers.ValidationError({field: ["No fix has this id."]})
    return fix


class FeedbackSerializer(serializers.ModelSerializer):
    """A vote as stored: yours only (a voter sees and undoes their own votes)."""

    fix_id = serializers.IntegerField(read_only=True)
    diagnosis_id = serializers.SlugRelatedField(
        source="diagnosis", slug_field="slug", read_only=True, allow_null=True
    )
    worked_instead_fix_id = serializers.IntegerField(read_only=True, allow_null=True)

    class Meta:
        model = FixFeedback
        fields = [
            "id",
            "fix_id",
            "helped",
            "diagnosis_id",
            "worked_instead_fix_id",
            "worked_instead_text",
            "comment",
            "channel",
            "created_at",
            "updated_at",
        ]
        read_only_fields = fields


class SignatureDecisionSerializer(serializers.Serializer):
    fingerprint = serializers.RegexField(r"^[0-9a-f]{8,64}$", max_length=64)
    finding_id = serializers.IntegerField(min_value=1)
    decision = serializers.ChoiceField(choices=["link", "split"])

    def validate_finding_id(self, value: int) -> int:
        if not Finding.objects.filter(pk=value).exists():
            raise serializers.ValidationError("No finding has this id.")
        return value


def validate_pairs(value: Any, required: tuple[str, ...], what: str) -> list[dict[str, Any]]:
    if not isinstance(value, list):
        raise serializers.ValidationError(f"Expected a list of {what} objects.")
    for item in value:
        if not isinstance(item, dict) or any(not isinstance(item.get(k), str) for k in required):
            keys = ", ".join(required)
            raise serializers.ValidationError(f"Each {what} needs string fields: {keys}.")
    return value


class FixSerializer(KnownFieldsOnly, serializers.ModelSerializer):
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
            value = change.get("value")
            action = ChangeAction(change["action"])
            problem = change_problem(
                Change(action, change["name"], None if value is None else str(value))
            )
            if problem:
                raise serializers.ValidationError(problem)
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
            "earlier_default",
            "concept",
            "description",
        ]


class FlagSettingSerializer(serializers.ModelSerializer):
    class Meta:
        model = FlagSetting
        fields = ["name", "value"]


class SampleSerializer(KnownFieldsOnly, serializers.ModelSerializer):
    """An error text of a finding: what a paste is matched against."""

    finding_id = serializers.IntegerField(read_only=True)
    text = serializers.CharField(trim_whitespace=False, help_text="The error as printed")
    exception_type = serializers.CharField(
        source="signature.exception_type", read_only=True, default=None
    )
    fingerprint = serializers.CharField(
        source="signature.fingerprint", read_only=True, default=None
    )

    class Meta:
        model = ErrorSample
        fields = ["id", "finding_id", "text", "exception_type", "fingerprint", "learned_at"]
        read_only_fields = ["learned_at"]

    def validate_text(self, value: str) -> str:
        return readable_sample(value)


def readable_sample(value: str) -> str:
    """A sample must be text FixGraph can read, within the paste limit."""
    within_paste_limit(value, "sample")
    if not value.strip():
        raise serializers.ValidationError("A sample is the error text; this one is empty.")
    try:
        parse(value)
    except InputRejected as rejected:
        raise serializers.ValidationError(str(rejected)) from rejected
    return value


MAX_SAMPLES = 20  # per request; more can be added one at a time


class FindingSerializer(KnownFieldsOnly, serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:finding-detail")
    html_url = serializers.SerializerMethodField(help_text="The finding's web page, for people")
    gpus = GpuSerializer(many=True, read_only=True)
    flags = FlagSettingSerializer(source="flag_settings", many=True, read_only=True)
    fixes = FixSerializer(
        many=True,
        required=False,
        help_text="In order. Given on create, they are the new finding's fixes; a change "
        "later goes through /findings/{id}/fixes/",
    )
    samples = serializers.ListField(
        child=serializers.CharField(trim_whitespace=False),
        write_only=True,
        required=False,
        max_length=MAX_SAMPLES,
        help_text="Error texts to add to the finding's samples (a text it holds already is "
        "skipped); read them at /findings/{id}/samples/",
    )
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
            "html_url",
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
            "samples",
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

    def get_html_url(self, finding: Finding) -> str:
        return page_url(reverse("kb:finding-detail", args=[finding.pk]))

    def get_rank(self, finding: Finding) -> float | None:
        return getattr(finding, "rank", None)

    def get_snippet(self, finding: Finding) -> str | None:
        """The finding's own words around the words of `q`, as HTML: those words in
        <mark>, `code` as <code>; null without `q`."""
        snippets: dict[int, str] | None = self.context.get("snippets")
        return snippets.get(finding.pk) if snippets is not None else None

    def validate_conditions(self, value: Any) -> list[dict[str, Any]]:
        try:
            return conditions.checked(value)
        except conditions.ConditionError as error:
            raise serializers.ValidationError(str(error)) from error

    def validate_samples(self, value: list[str]) -> list[str]:
        return [readable_sample(text) for text in value]

    def validate_fixes(self, value: list[dict[str, Any]]) -> list[dict[str, Any]]:
        if self.instance is not None:
            raise serializers.ValidationError(
                "Fixes are given when a finding is created; add or change one through "
                f"/findings/{self.instance.pk}/fixes/."
            )
        return value

    @transaction.atomic  # the finding with all its fixes and samples, or nothing
    def create(self, validated_data: dict[str, Any]) -> Finding:
        fixes = validated_data.pop("fixes", [])
        samples = validated_data.pop("samples", [])
        finding = super().create(validated_data)
        for position, fix in enumerate(fixes, start=1):
            Fix.objects.create(finding=finding, **{"position": position, **fix})
        records.add_new_samples(finding, samples)
        return finding

    @transaction.atomic
    def update(self, finding: Finding, validated_data: dict[str, Any]) -> Finding:
        samples = validated_data.pop("samples", [])
        finding = super().update(finding, validated_data)
        records.add_new_samples(finding, samples)
        return finding


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
        fields = [
            "id", "name", "address", "port", "labels", "allowed_flags", "facts", "facts_at",
            "created_at",
        ]  # fmt: skip


class ValidationRunSerializer(serializers.ModelSerializer):
    url = serializers.HyperlinkedIdentityField(view_name="api:validationrun-detail")
    fix_id = serializers.IntegerField(read_only=True)
    host = serializers.SlugRelatedField(slug_field="name", read_only=True)
    html_url = serializers.SerializerMethodField(
        help_text="The run's web page, for people: it follows a live run and shows the log"
    )

    class Meta:
        model = ValidationRun
        fields = [
            "id",
            "url",
            "html_url",
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

    def get_html_url(self, run: ValidationRun) -> str:
        return page_url(reverse("kb:run-detail", args=[run.pk]))


class ValidationRunRequestSerializer(KnownFieldsOnly):
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


# --- the diagnose answer ---------------------------------------------------------------
# One JSON shape for the API, the CLI's --json, Slack and the web page: `DiagnosisSerializer`
# over a decisiontree `Diagnosis`. Its context may carry `launch_command` (for corrected
# commands) and `stored` (the stored diagnosis behind `id` / `html_url`).


def enum_choices(enum: Any) -> list[str]:
    return [str(member) for member in enum]


MATCH_LEVELS = enum_choices(MatchLevel)  # one name in the schema for `match` and `level`
OUTCOMES = enum_choices(Outcome)  # one name for a fix's outcome in a diagnosis, wherever shown


def page_url(path: str) -> str:
    """A page's public address, for chat messages and bots: SITE_URL, never the request's
    host (a proxy's or a worker's), so every channel gives the same link."""
    return f"{settings.SITE_URL}{path}"


class ErrorSignatureSerializer(serializers.Serializer):
    exception_type = serializers.CharField(help_text="e.g. AssertionError, CUDAAssertion")
    template = serializers.CharField(
        help_text="The message with numbers, paths, GPU names and versions masked"
    )
    key_frames = serializers.ListField(child=serializers.CharField())
    fingerprint = serializers.CharField(help_text="Hash of the exception type and key frames")
    template_key = serializers.CharField(help_text="Hash of the exception type and template")


class ChangeSerializer(serializers.Serializer):
    action = serializers.ChoiceField(choices=enum_choices(ChangeAction))
    name = serializers.CharField(help_text="Canonical flag name (no dashes), env var, package…")
    value = serializers.CharField(allow_null=True, help_text="null: a boolean flag or a removal")


class DiagnosisFixSerializer(serializers.Serializer):
    """A fix as a diagnosis shows it; built from the whole entry, which knows the spelling."""

    id = serializers.IntegerField(source="fix.id", help_text="Same as the entry's `fix_id`")
    summary = serializers.CharField(help_text="Its flags spelled as in `command_changes`")
    outcome = serializers.ChoiceField(source="fix.outcome", choices=OUTCOMES)
    changes = ChangeSerializer(
        many=True, help_text="The changes that fit the user's setup (see the entry's `withheld`)"
    )
    command_changes = serializers.ListField(
        child=serializers.CharField(),
        help_text="Each change as the user's framework release spells it",
    )


class SourceRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()


class FindingRefSerializer(serializers.Serializer):
    id = serializers.IntegerField()
    title = serializers.CharField()
    html_url = serializers.SerializerMethodField(help_text="The finding's page")
    sources = SourceRefSerializer(many=True)

    def get_html_url(self, finding: Any) -> str:
        return page_url(reverse("kb:finding-detail", args=[finding.id]))


class WhyStepSerializer(serializers.Serializer):
    step = serializers.ChoiceField(
        choices=["signature", "cause", "condition", "shared", "fix", "value"],
        help_text="`value`: a value the paste's own figures gave a flag the fix names without one",
    )
    detail = serializers.CharField()
    key = serializers.CharField(
        allow_null=True, help_text='Condition steps: the key, e.g. "gpu.arch"'
    )
    value = serializers.CharField(allow_null=True, help_text='Condition steps: "sm_120", "!=bf16"')
    state = serializers.ChoiceField(choices=enum_choices(State), allow_null=True)


class WithheldChangeSerializer(serializers.Serializer):
    action = serializers.ChoiceField(source="change.action", choices=enum_choices(ChangeAction))
    name = serializers.CharField(source="change.name")
    value = serializers.CharField(source="change.value", allow_null=True)
    command_change = serializers.CharField(help_text="As the user's release would spell it")
    reason = serializers.CharField(help_text="Why it is left out of the corrected command")


class PathStepSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=["signature", "finding", "cause", "fix"])
    label = serializers.CharField()
    id = serializers.IntegerField(allow_null=True, help_text="The finding's or the fix's id")


class RankedFixSerializer(serializers.Serializer):
    rank = serializers.IntegerField(help_text="1 is the fix to try first")
    score = serializers.FloatField()
    already_applied = serializers.BooleanField(
        help_text="Every change is already in the launch command"
    )
    proposed = serializers.BooleanField(
        help_text="Suggested, never confirmed: validate it (ranks below every fix with "
        "evidence, except those in `for_other_setup`)"
    )
    for_other_setup = serializers.ListField(
        child=serializers.CharField(),
        help_text="What its finding needs that your setup contradicts: "
        '"model architecture is glm_moe_dsa (yours: llama)". Its evidence is from that '
        "setup, so it ranks after every fix whose finding fits, proposals included; [] when "
        "nothing is contradicted",
    )
    fits_nothing = serializers.BooleanField(
        help_text="None of its changes fits the user's setup (all are in `withheld`); ranks last"
    )
    runner_up = serializers.BooleanField(
        help_text="From a less likely match, listed after a better one: a guess beside the "
        "answer, ranked after every fix of the first match"
    )
    withheld = WithheldChangeSerializer(
        many=True, help_text="Changes left out: the user's framework, release or model lacks them"
    )
    spellings = serializers.ListField(
        child=serializers.CharField(), help_text="Older spellings, when the release is unknown"
    )
    path = PathStepSerializer(
        many=True, help_text="The walk through the decision graph that reached this fix"
    )
    fix_id = serializers.IntegerField(
        source="fix.id", help_text="The fix's id: send it as `fix_id` in feedback"
    )
    fix = DiagnosisFixSerializer(source="*")
    corrected_command = serializers.SerializerMethodField(
        help_text="The launch command with this fix applied; null without a launch command "
        "(given, or found in the paste: see context.found_command)"
    )
    finding = FindingRefSerializer()
    why = WhyStepSerializer(many=True)

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_corrected_command(self, ranked: RankedFix) -> str | None:
        return corrected_command_for(ranked, self.root.instance, self.context)


class NotHelpfulSerializer(serializers.Serializer):
    fix_id = serializers.IntegerField(source="fix.id")
    fix = DiagnosisFixSerializer(source="*")
    finding = FindingRefSerializer()
    reason = serializers.CharField()


class AnswerFixSerializer(serializers.Serializer):
    """One answer to a question and the fix that would come first with it."""

    answer = serializers.CharField()
    fix = serializers.CharField(help_text='Summary of the first fix; "none" when none helps')

    def to_representation(self, pair: tuple[str, str]) -> dict[str, str]:
        answer, fix = pair
        return {"answer": answer, "fix": fix}


class QuestionSerializer(serializers.Serializer):
    key = serializers.CharField(help_text="Send the answer back as `answers: {key: answer}`")
    text = serializers.CharField()
    answers = serializers.ListField(child=serializers.CharField())
    first_fix_by_answer = AnswerFixSerializer(many=True)


class SetupDifferenceSerializer(serializers.Serializer):
    key = serializers.CharField(help_text='"gpu.arch", "model.arch", "framework", …')
    finding_value = serializers.CharField()
    here = serializers.CharField(help_text="The user's value; empty when not known")
    named = serializers.CharField(help_text='The finding\'s side in words: "GPU sm_120"')
    text = serializers.CharField(source="describe")


class NearFixSerializer(serializers.Serializer):
    id = serializers.IntegerField(source="fix.id", help_text="Send it as `fix_id` in feedback")
    summary = serializers.CharField(help_text="Its flags spelled for the user's release")
    outcome = serializers.ChoiceField(source="fix.outcome", choices=OUTCOMES)
    spellings = serializers.ListField(
        child=serializers.CharField(), help_text="Older spellings, when the release is unknown"
    )


class NearMissSerializer(FindingRefSerializer):
    id = serializers.IntegerField(source="finding.id")
    title = serializers.CharField(source="finding.title")
    sources = SourceRefSerializer(source="finding.sources", many=True)
    score = serializers.FloatField()
    why_not = serializers.CharField(help_text="Why it was not taken as the match")
    fixes = NearFixSerializer(
        many=True,
        help_text="The finding's fixes but those known not to help; not offered for this "
        "paste. When one of them fixed "
        "it after all, say so (`POST /feedback/` with `fix_id`, `diagnosis_id` and `helped`): "
        "the paste is kept with the vote, and a reviewer can add it to the finding's samples "
        "so the next report like it matches",
    )

    def get_html_url(self, near: Any) -> str:
        return page_url(reverse("kb:finding-detail", args=[near.finding.id]))


class LaunchFlagSerializer(serializers.Serializer):
    flag = serializers.CharField(help_text="As the user's release spells it")
    value = serializers.CharField()

    def to_representation(self, pair: tuple[str, str]) -> dict[str, str]:
        flag, value = pair
        return {"flag": flag, "value": value}


class CandidateSerializer(serializers.Serializer):
    finding_id = serializers.IntegerField()
    score = serializers.FloatField()
    level = serializers.ChoiceField(choices=MATCH_LEVELS)
    layer = serializers.CharField(
        help_text="Which matching layer found it: linked, fingerprint, template, terms…"
    )
    detail = serializers.CharField(source="explain")


def text_map() -> serializers.DictField:
    return serializers.DictField(child=serializers.CharField())


class FoundCommandSerializer(serializers.Serializer):
    """A launch command the paste holds, used for corrected commands when none was given."""

    text = serializers.CharField()
    source = serializers.ChoiceField(
        choices=["paste", "ServerArgs", "non-default args", "Namespace"],
        help_text='"paste": a command line in the text; else the server printout it was '
        "rebuilt from (settings that differ from the defaults)",
    )
    server_chosen = serializers.ListField(
        child=serializers.CharField(),
        help_text="Flags written whose value SGLang may have chosen itself at start-up",
    )
    left_out = serializers.ListField(
        child=serializers.CharField(), help_text="Printed settings no flag could be written for"
    )


class NotAsLaunchedSerializer(serializers.Serializer):
    flag = serializers.CharField(help_text='As the answer spells it, e.g. "--kv-cache-dtype"')
    launched = serializers.CharField(help_text="The value the launch command gave")
    ran = serializers.CharField(help_text="The value the server's log shows it ran with")


class DiagnosisContextSerializer(serializers.Serializer):
    """What the diagnosis knew about where the error happened, and where each fact came from."""

    gpus = serializers.ListField(child=serializers.CharField())
    gpu_count = serializers.IntegerField(allow_null=True)
    arch = serializers.CharField(allow_null=True, help_text='e.g. "sm_120"')
    capability = serializers.CharField(
        allow_null=True,
        help_text="The GPU's compute capability where no architecture gives it: as answered "
        '("8.6", ">=8.0,<9.0") or as the paste states it ("3.7")',
    )
    framework = serializers.CharField(allow_null=True, help_text='"sglang" or "vllm"')
    framework_version = serializers.CharField(allow_null=True)
    model = serializers.CharField(allow_null=True)
    model_arch = serializers.CharField(allow_null=True)
    quantization = serializers.CharField(allow_null=True)
    flags = text_map()
    versions = text_map()
    versions_shown = serializers.SerializerMethodField(
        help_text="`versions` as [name, version] pairs in the order to show them: what tools "
        "and logs name before what a `pip freeze` lists (a JSON object keeps no order in "
        "every store)"
    )
    sources = text_map()
    launched_flags = text_map()
    unknown_flags = serializers.ListField(child=serializers.CharField())
    env = text_map()
    written_release = serializers.CharField(
        allow_null=True,
        help_text="With the release unknown: the newest one the launch command's flag names "
        'allow ("0.5.9": it writes --nsa-decode-backend); flags are spelled for it',
    )
    found_command = FoundCommandSerializer(
        allow_null=True,
        help_text="With no launch command given: one found in the paste or rebuilt from the "
        "settings the server logged; corrected commands are written from it",
    )

    @extend_schema_field(
        serializers.ListField(child=serializers.ListField(child=serializers.CharField()))
    )
    def get_versions_shown(self, context: Context) -> list[list[str]]:
        return [[name, version] for name, version in context.versions.items()]


class FlagProblemSerializer(serializers.Serializer):
    flag = serializers.CharField(source="written", help_text='As written, e.g. "--kv-cache-dytpe"')
    problem = serializers.CharField(source="why", help_text='e.g. "not a flag of sglang"')
    instead = serializers.CharField(
        allow_null=True, help_text="What to write instead; null when nothing is close"
    )
    refused = serializers.BooleanField(help_text="The paste shows the server refusing it")


class NamedFlagSerializer(serializers.Serializer):
    flag = serializers.CharField(help_text='As your release spells it: "--max-model-len"')
    written = serializers.CharField(help_text='As the error wrote it: "max_model_len"')
    value = serializers.CharField(
        allow_null=True,
        help_text="What your launch (or its log) set it to; null: not set, or not known "
        "where launch_known is false",
    )
    launch_known = serializers.BooleanField(
        help_text="Whether a launch command was given or found, or the server printed its "
        "arguments: without one, a flag with no value may still be set"
    )
    default = serializers.CharField(
        source="default.value",
        allow_null=True,
        help_text="The default of your release, for a flag you did not set (the newest "
        "release's when yours is not known)",
    )
    default_changed = serializers.CharField(
        source="default.changed",
        allow_null=True,
        help_text='When your release does not settle the default, how it changed: "0.92 in '
        '0.33.0, 0.9 before"; null otherwise',
    )
    older = serializers.ListField(
        child=serializers.CharField(),
        help_text="With your release unknown, the names it had before a rename: "
        '"--cuda-graph-max-bs in sglang 0.5.9 and older"',
    )
    text = serializers.CharField(
        source="describe", help_text='To post: "--max-model-len (yours: 131072)"'
    )


class HostFaultSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=list(host_faults.kinds()))
    seen = serializers.CharField(help_text='"Xid 79", or the error\'s own words')
    meaning = serializers.CharField()
    action = serializers.CharField(help_text="What to do; empty for an application fault")
    where = serializers.CharField(allow_null=True, help_text='The device: "PCI:0000:3b:00"')
    serious = serializers.BooleanField(
        help_text="Hardware or driver: no server flag, release or model change fixes it"
    )
    text = serializers.CharField(source="describe", help_text="To post, in one line")


class BuildSupportSerializer(serializers.Serializer):
    build = serializers.CharField(help_text='"PyTorch 2.5.1+cu124", "the CUDA toolkit 12.4"')
    gpu = serializers.CharField(help_text="The GPU by name, or its architecture")
    arch = serializers.CharField(help_text='"sm_120"')
    says = serializers.CharField(help_text="What the build lacks, and why")
    remedy = serializers.CharField(help_text="What to install instead")
    text = serializers.CharField(help_text="To post, says and remedy in one line")


class GpuRequirementSerializer(serializers.Serializer):
    code = serializers.CharField(
        help_text='What the message names: "dsv3_fused_a_gemm"; "" if none'
    )
    needs = serializers.CharField(
        help_text='The GPUs it needs, as the message lists them: "SM100/SM103"'
    )
    runs_on = serializers.ListField(
        child=serializers.CharField(), help_text='Architectures it runs on: ["sm_100", "sm_103"]'
    )
    gpu = serializers.CharField(
        help_text='This GPU by name, else its architecture; "" if not known'
    )
    arch = serializers.CharField(help_text='"sm_120"; "" where the paste and the form do not say')
    flags = serializers.ListField(
        child=serializers.CharField(),
        help_text="Launch flags that may have chosen the code, as the release spells them",
    )
    says = serializers.CharField(help_text="What the code needs, and this GPU")
    remedy = serializers.CharField(help_text="What to choose instead")
    text = serializers.CharField(help_text="To post, says and remedy in one line")


class TiedCauseSerializer(serializers.Serializer):
    finding = serializers.IntegerField(source="finding.id")
    title = serializers.CharField(source="finding.title")
    cause = serializers.CharField(source="finding.cause")
    ranks = serializers.ListField(
        child=serializers.IntegerField(), help_text="Where its fixes stand in `fixes`"
    )
    text = serializers.CharField(help_text="To post, in one line")


class ProcessMemorySerializer(serializers.Serializer):
    pid = serializers.IntegerField()
    bytes = serializers.IntegerField(help_text="GPU memory it held")


class OutOfMemorySerializer(serializers.Serializer):
    """One out-of-memory message's figures, in bytes (null where the message has none)."""

    gpu = serializers.IntegerField(allow_null=True, help_text="The GPU's index")
    requested = serializers.IntegerField(help_text="The allocation that failed")
    total = serializers.IntegerField(allow_null=True)
    free = serializers.IntegerField(allow_null=True)
    this_process = serializers.IntegerField(
        allow_null=True, help_text="All this process held, PyTorch's tensors and the rest"
    )
    allocated = serializers.IntegerField(allow_null=True, help_text="By PyTorch's tensors")
    cached_unused = serializers.IntegerField(
        allow_null=True, help_text="Reserved by PyTorch's cache but unallocated"
    )
    processes = serializers.SerializerMethodField(
        help_text="The processes the message lists; `self_listed` says whether this one was "
        "told apart from them (a container hides it)"
    )
    self_listed = serializers.BooleanField()
    others = serializers.IntegerField(
        help_text="Held by other processes: those listed, and memory no process accounts "
        "for where it decides the failure"
    )
    startup_share = serializers.CharField(
        allow_null=True,
        help_text="Of vLLM's start-up check: the --gpu-memory-utilization asked for "
        "(`requested` is that share of the GPU); null for an allocation that failed",
    )
    text = serializers.CharField(
        source="describe",
        help_text='To post: "GPU 0: asked for 3.09 GiB; 159.12 MiB free of 139.80 GiB; ..."',
    )

    @extend_schema_field(ProcessMemorySerializer(many=True))
    def get_processes(self, oom: OutOfMemory) -> list[dict[str, int]]:
        return [{"pid": pid, "bytes": used} for pid, used in oom.processes]


class MemoryStageSerializer(serializers.Serializer):
    stage = serializers.ChoiceField(choices=list(server_memory.STAGES))
    free = serializers.IntegerField(allow_null=True, help_text="Bytes free after it")
    used = serializers.IntegerField(
        allow_null=True,
        help_text='Bytes it took; for "KV cache budget", what was left for the KV cache '
        "(negative: short by that much)",
    )


class RankMemorySerializer(serializers.Serializer):
    rank = serializers.CharField(allow_null=True, help_text='"TP0"; null without ranks')
    stages = MemoryStageSerializer(many=True)
    stopped_capturing = serializers.BooleanField(
        help_text="A CUDA-graph capture began and the log shows no end of it"
    )
    text = serializers.CharField(source="describe", help_text="To post, in one line")


class FlagValueSerializer(serializers.Serializer):
    flag = serializers.CharField(help_text='Canonical name, without dashes: "max-model-len"')
    value = serializers.CharField()
    bound = serializers.ChoiceField(
        choices=["at_most", "at_least"],
        help_text="The figures allow no more than the value, or need at least it",
    )
    why = serializers.CharField(help_text="Where the figure comes from, in a few words")


# Every kind of memory reading; one enum in the schema wherever a reading appears.
MEMORY_READINGS = [*READINGS, *server_memory.READINGS, *model_weights.READINGS]


class MemoryReadingSerializer(serializers.Serializer):
    kind = serializers.ChoiceField(choices=MEMORY_READINGS)
    text = serializers.CharField(help_text="What the figures show, in a sentence")
    helps = serializers.BooleanField(help_text="False: it says what would not help")
    values = FlagValueSerializer(
        many=True,
        help_text="Flag values the figures give; a fix that names the flag without a value "
        "takes it into its corrected command",
    )


class LaunchWeightsSerializer(MemoryReadingSerializer):
    corrected_command = serializers.CharField(
        allow_null=True,
        help_text="The launch with the split the figures give (a tensor-parallel size), "
        "where the weights do not fit and the GPUs here can hold them",
    )


class DraftWaitingSerializer(serializers.Serializer):
    """A draft in the review queue, started from a paste of the same error."""

    id = serializers.IntegerField()
    title = serializers.CharField()
    created_at = serializers.DateTimeField()


class LaunchDifferenceSerializer(serializers.Serializer):
    name = serializers.CharField(
        help_text="A flag as your release spells it, or an environment variable"
    )
    yours = serializers.CharField(allow_null=True, help_text="In your launch; null: not set")
    works = serializers.CharField(
        allow_null=True, help_text="In the launch known to work; null: not set"
    )


class KnownGoodSerializer(serializers.Serializer):
    """The runbook's whole launch for this setup, and how the user's differs from it."""

    title = serializers.CharField(help_text="Model on GPUs · framework release")
    command = serializers.CharField(help_text="The launch known to work, whole")
    html_url = serializers.URLField(help_text="Its runbook entry")
    verified = serializers.CharField(
        allow_null=True, help_text="The last passed validation run, e.g. 'on h200-1, 2026-12-01'"
    )
    compared_with = serializers.CharField(
        allow_null=True,
        help_text="Which launch `differences` compare: your launch command, the command in "
        "the paste, or one rebuilt from the server's log; null: none known",
    )
    differences = LaunchDifferenceSerializer(many=True)


class LaunchCheckRequestSerializer(KnownFieldsOnly):
    launch_command = serializers.CharField(
        max_length=20_000, help_text="The command you are about to run"
    )
    gpu = optional_text()
    model = optional_text()
    framework = optional_text(60)
    framework_version = optional_text(60)


class ConditionSerializer(serializers.Serializer):
    key = serializers.CharField(help_text='e.g. "gpu.arch", "flag.kv-cache-dtype"')
    value = serializers.CharField()
    negate = serializers.BooleanField(help_text="The cause needs anything but `value`")
    in_words = serializers.SerializerMethodField(
        help_text="As the answer says it, its flag spelled for your release"
    )

    def get_in_words(self, condition: Condition) -> str:
        context = self.root.instance.context
        return condition_in_words(condition, context.framework, context.spelling_version)


class LaunchRiskSerializer(serializers.Serializer):
    finding = FindingRefSerializer()
    kind = serializers.CharField(source="finding.kind", help_text='e.g. "crash", "oom", "slow"')
    certain = serializers.BooleanField(
        help_text="The launch meets every condition the finding states; false: some are left "
        "to the framework's own choice at start-up (`open`)"
    )
    met = ConditionSerializer(many=True, help_text="The finding's conditions this launch meets")
    open = ConditionSerializer(
        many=True,
        help_text="Those the launch does not settle (a flag left to the framework's choice, "
        "a GPU not given): they decide whether it applies",
    )
    why = WhyStepSerializer(many=True, help_text="The cause, and a step per condition")
    fixes = RankedFixSerializer(many=True, help_text="Best first, applied to your launch")


class LaunchCheckSerializer(serializers.Serializer):
    """The answer to POST /api/v1/check-launch/: what is known to break a launch before it runs."""

    summary = serializers.SerializerMethodField(help_text="One line a bot can post as is")
    context = DiagnosisContextSerializer()
    flag_problems = FlagProblemSerializer(
        many=True, help_text="Flags no release of the framework knows, with what to write"
    )
    risks = LaunchRiskSerializer(
        many=True,
        help_text="Known issues this setup meets (certain first), the most specific first",
    )
    more = serializers.IntegerField(
        help_text="Issues beyond those in `risks` (at most 20 are told): give the GPU and the "
        "release to narrow them"
    )
    known_good = serializers.SerializerMethodField(
        help_text="The runbook's launch for this model, GPU and framework, and how yours differs"
    )
    html_url = serializers.SerializerMethodField(
        help_text="The check on the web page: the same launch, GPU and release, run again "
        "when opened (nothing is stored)"
    )
    builds = serializers.CharField(
        help_text="What PyTorch and the framework's kernels must be made with to run on the "
        'GPU at all ("CUDA 12.8 or newer (PyTorch\'s cu128 wheels or later)"); empty where '
        "any current build will do or the GPU is not known"
    )
    gpu_requirements = GpuRequirementSerializer(
        many=True,
        help_text="Backends the launch chooses that its framework's release refuses on its "
        "GPU (the release's own check, named in `says`), with the ones it lets run there "
        "in `remedy`: the server would stop at start-up",
    )
    weights = serializers.SerializerMethodField(
        help_text="Whether the model's weights fit the share of each GPU they must fit in "
        "(`weights_do_not_fit`, `weights_fill_share`, `weights_fit`), from the parameter "
        "count its name states; null where the model's size or the GPU's is not known"
    )

    @extend_schema_field(LaunchWeightsSerializer(allow_null=True))
    def get_weights(self, check: LaunchCheck) -> dict[str, Any] | None:
        reading: MemoryReading | None = check.weights
        if reading is None:
            return None
        from kb.views.launch import corrected_command

        changes = [
            {"action": str(ChangeAction.SET_FLAG), "name": v.flag, "value": v.value}
            for v in reading.values
        ]
        framework, version = check.context.framework, check.context.spelling_version
        command = self.context.get("launch_command") or ""
        corrected = corrected_command(command, {"changes": changes}, framework, version)
        data = dict(MemoryReadingSerializer(reading).data)
        return {**data, "corrected_command": corrected}

    def get_html_url(self, check: LaunchCheck) -> str:
        context = check.context
        gpu = context.gpus[0] if context.gpus else ""
        count = context.get("gpu.count")
        release = " ".join(filter(None, (context.framework, context.framework_version)))
        query = {
            "launch_command": self.context.get("launch_command") or "",
            "gpu": f"{count}x {gpu}" if gpu and count and count != "1" else gpu,
            "release": release,
        }
        return (
            page_url(reverse("kb:launch-check"))
            + "?"
            + urlencode({key: value for key, value in query.items() if value})
        )

    def get_summary(self, check: LaunchCheck) -> str:
        certain = [risk for risk in check.risks if risk.certain]
        maybe = len(check.risks) - len(certain) + check.more
        parts = []
        if certain:
            parts.append(f"meets {len(certain)} known issue(s), first: {certain[0].finding.title}")
        if maybe:
            more = " more" if certain else " known issue(s)"
            parts.append(f"may meet {maybe}{more}, as the framework's own choices decide")
        if check.weights is not None and check.weights.kind == "weights_do_not_fit":
            parts.insert(0, "the model's weights alone do not fit each GPU at this split")
        for reading in reversed(check.gpu_requirements):
            parts.insert(0, f"{reading.flags[0]} does not run on {reading.arch}")
        parts += [
            f"{p.written} is unknown" + (f": {p.instead}?" if p.instead else "")
            for p in check.flag_problems
        ]
        if not parts:
            return "No known issue on this setup."
        line = "; ".join(parts)
        return f"{line[0].upper()}{line[1:]}."

    @extend_schema_field(KnownGoodSerializer(allow_null=True))
    def get_known_good(self, check: LaunchCheck) -> dict[str, Any] | None:
        return known_good_of(check, self.context.get("launch_command") or "")


class CauseElsewhereSerializer(serializers.Serializer):
    heading = serializers.CharField(help_text='"The process was killed (SIGKILL), ..."')
    advice = serializers.CharField(help_text="What it means and what to paste or check")


class DiagnosisSerializer(serializers.Serializer):
    """The answer to POST /api/v1/diagnose/ and `manage.py diagnose --json`."""

    id = serializers.SerializerMethodField(
        help_text="The stored diagnosis (its link's last part); null if not stored"
    )
    html_url = serializers.SerializerMethodField(
        help_text="The shareable page of this diagnosis; null if not stored"
    )
    summary = serializers.SerializerMethodField(help_text="One line a bot can post as is")
    read_from = serializers.SerializerMethodField(
        help_text='Of an attached log: its name and what was read of it; "" for a paste'
    )
    scrubbed = serializers.SerializerMethodField(
        help_text="What looked like a secret in the paste or launch command and was replaced "
        "by [redacted] before anything was stored, e.g. 'a Hugging Face token'"
    )
    match = serializers.ChoiceField(choices=MATCH_LEVELS)
    verdict = serializers.ChoiceField(
        choices=enum_choices(Verdict),
        help_text="The match told truthfully: different_setup when the setup contradicts it",
    )
    setup_not_known = SetupDifferenceSerializer(
        many=True,
        help_text="With match similar: the finding's GPU, model, framework or release when the "
        "error alone matched and the paste says none of them (`here` is empty)",
    )
    different_setup = SetupDifferenceSerializer(
        many=True, help_text="The finding's GPU, model, framework or release that differ here"
    )
    ordinary_message_elsewhere = serializers.BooleanField(
        help_text="With match similar: the paste's error message is one every error of its "
        "kind prints (PyTorch's out-of-memory line), and the finding does not hold it as "
        "raised from the same code: what matched is the words around it"
    )
    no_memory_ran_out = serializers.BooleanField(
        help_text="With match similar: the finding ran out of memory, matched on words, and "
        "the paste shows another error with no memory running out"
    )
    signature = ErrorSignatureSerializer(allow_null=True)
    error_lines = serializers.ListField(
        child=serializers.CharField(),
        help_text="The error as pasted, to quote: the raised exception's first line (with a "
        "bare AssertionError, the assert that raised it) and a kernel's assertion; else the "
        "paste's error lines. Numbers kept; each line at most 300 characters",
    )
    type_as_pasted = serializers.CharField(
        help_text="The raised exception's type as pasted, where the signature gives it its "
        "newer name (RuntimeError for torch's AcceleratorError); empty otherwise",
    )
    cause_not_pasted = serializers.CharField(
        help_text="When the paste's only error says that another process failed (\"Engine "
        'core initialization failed. See root cause above.", "Killed"): that line. Empty '
        "otherwise",
    )
    killed_by = serializers.CharField(
        help_text='The signal the paste says killed the process ("SIGKILL"); empty otherwise'
    )
    through_warnings = serializers.ListField(
        child=serializers.CharField(),
        help_text="The log warnings beside the error that the match was made through, as "
        "printed, where the error itself matched no finding (match is then at most similar); "
        "empty otherwise",
    )
    cause_elsewhere = serializers.SerializerMethodField(
        help_text="With `cause_not_pasted`: `heading` and `advice`, where the cause is (earlier "
        "in the log) or what a signal that killed it means (SIGKILL: most often the host's "
        "out-of-memory killer); null otherwise"
    )
    corrected_command = serializers.SerializerMethodField(
        help_text="The launch command with the first fix applied; null without one"
    )
    fixes = RankedFixSerializer(many=True, help_text="Fixes that helped before, best first")
    not_helpful = NotHelpfulSerializer(many=True, help_text="Fixes known not to help here")
    questions = QuestionSerializer(
        many=True, help_text="Unknown facts whose answer would change the first fix"
    )
    context = DiagnosisContextSerializer()
    launch_flags = LaunchFlagSerializer(
        many=True, help_text="The context's flags, spelled as the answer spells them"
    )
    flag_problems = FlagProblemSerializer(
        many=True,
        help_text="Flags the server refused (argparse's unrecognized arguments, invalid "
        "choice) or that no release of the framework has, with the closest name it has",
    )
    named_flags = NamedFlagSerializer(
        many=True,
        help_text="Launch flags the error's own message names (\"try increasing "
        '`gpu_memory_utilization`"), with the value this launch gave each',
    )
    host_faults = HostFaultSerializer(
        many=True,
        help_text="Faults of the GPU or its driver the paste shows (kernel-log Xid lines, "
        "CUDA's and NVML's fault messages): hardware and driver ones, or with none of those "
        "the Xids the GPU raised for the program's own faults",
    )
    build_support = BuildSupportSerializer(
        many=True,
        help_text="Builds the paste shows holding no machine code for its GPU: PyTorch's own "
        "warning that the GPU is not in its build, or a PyTorch wheel's or the CUDA "
        "toolkit's release older (or newer) than those that compile for the GPU, or of a "
        "CUDA major version newer than the driver runs (nvidia-smi's CUDA Version)",
    )
    gpu_requirements = GpuRequirementSerializer(
        many=True,
        help_text='Code the error says runs only on other GPUs ("requires SM100/SM103, got '
        'sm120", "only supports Ampere GPUs or newer"), beside this GPU: another backend, '
        "kernel or quantization is the fix, not a setting of that code",
    )
    tied_causes = TiedCauseSerializer(
        many=True,
        help_text="Findings of different causes that the paste matched equally well (within "
        "1 %): nothing in it or the setup tells them apart, so check which applies before "
        "trying the first fix. Empty, or two and more",
    )
    tied_note = serializers.CharField(help_text="What to say above them (empty without)")
    memory_at_failure = OutOfMemorySerializer(
        many=True,
        help_text="The GPU memory as the paste's out-of-memory messages give it, one entry a "
        "distinct message",
    )
    memory_log = RankMemorySerializer(
        many=True,
        help_text="For an error about memory: the server log's start-up memory stages of "
        "the first rank, and of the rank with the least room at its last stage",
    )
    memory_readings = MemoryReadingSerializer(
        many=True,
        help_text="What those figures show: another process holding memory, fragmentation, "
        "an allocation larger than the GPU, or that the message's expandable_segments hint "
        "cannot help",
    )
    not_as_launched = NotAsLaunchedSerializer(
        many=True,
        help_text="Flags the server ran with another value than the launch command gave "
        "(it overrode them, or resolved an auto), as its log shows",
    )
    matches = CandidateSerializer(
        many=True, source="candidates", help_text="Known findings the paste resembles"
    )
    nearest = NearMissSerializer(
        many=True, help_text="With no known match: the closest findings (never offered as fixes)"
    )
    search_words = serializers.ListField(
        child=serializers.CharField(),
        help_text="With no known match: words of the paste the knowledge base holds",
    )
    drafts_waiting = serializers.SerializerMethodField(
        help_text="With no known match: drafts in the review queue started from a paste of "
        "this error (a teammate met it already); oldest first"
    )
    known_good = serializers.SerializerMethodField(
        help_text="The runbook's launch known to work for this model, GPU and framework, and "
        "the flags in which yours differs; null when the knowledge base has none"
    )

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_id(self, diagnosis: Diagnosis) -> str | None:
        stored = self.context.get("stored")
        return str(stored.slug) if stored is not None else None

    @extend_schema_field(serializers.URLField(allow_null=True))
    def get_html_url(self, diagnosis: Diagnosis) -> str | None:
        stored = self.context.get("stored")
        return page_url(stored.get_absolute_url()) if stored is not None else None

    def get_read_from(self, diagnosis: Diagnosis) -> str:
        stored = self.context.get("stored")
        return str(stored.read_from) if stored is not None else ""

    @extend_schema_field(serializers.ListField(child=serializers.CharField()))
    def get_scrubbed(self, diagnosis: Diagnosis) -> list[str]:
        stored = self.context.get("stored")
        return [str(kind) for kind in stored.scrubbed] if stored is not None else []

    def get_summary(self, diagnosis: Diagnosis) -> str:
        return summary_line(diagnosis)

    @extend_schema_field(DraftWaitingSerializer(many=True))
    def get_drafts_waiting(self, diagnosis: Diagnosis) -> list[dict[str, Any]]:
        if diagnosis.match != "none" or diagnosis.signature is None:
            return []
        from kb.services.stored_diagnoses import drafts_of_error

        drafts = drafts_of_error(diagnosis.signature.fingerprint)
        return [DraftWaitingSerializer(draft).data for draft in drafts]

    @extend_schema_field(CauseElsewhereSerializer(allow_null=True))
    def get_cause_elsewhere(self, diagnosis: Diagnosis) -> dict[str, str] | None:
        found = diagnosis.cause_elsewhere
        return {"heading": found[0], "advice": found[1]} if found else None

    @extend_schema_field(KnownGoodSerializer(allow_null=True))
    def get_known_good(self, diagnosis: Diagnosis) -> dict[str, Any] | None:
        return known_good_of(diagnosis, self.context.get("launch_command") or "")

    @extend_schema_field(serializers.CharField(allow_null=True))
    def get_corrected_command(self, diagnosis: Diagnosis) -> str | None:
        first = first_fix_to_try(diagnosis.fixes)
        return corrected_command_for(first, diagnosis, self.context) if first else None


def known_good_of(diagnosis: Diagnosis | LaunchCheck, typed: str) -> dict[str, Any] | None:
    """The runbook's launch for the diagnosed setup and how the user's launch (`typed`,
    else the one found in the paste) differs from it; None when there is none."""
    from kb.services import runbook

    context = diagnosis.context
    entry = runbook.entry_for(
        context.model, context.gpus, context.arch, context.framework, context.framework_version
    )
    if entry is None:
        return None
    found = context.found_command
    yours = typed or (found.text if found else "")
    framework = context.framework or (entry.framework.name if entry.framework else None)
    differences = launch_differences(
        yours, entry.command, framework=framework, version=context.spelling_version
    ) if yours else []  # fmt: skip
    verified = entry.verified
    return KnownGoodSerializer(
        {
            "title": entry.title,
            "command": entry.command,
            "html_url": page_url(f"{reverse('kb:runbook')}#{entry.anchor}"),
            "verified": f"on {verified.host}, {verified.date:%Y-%m-%d}" if verified else None,
            "compared_with": compared_with(typed, found) if yours else None,
            "differences": differences,
        }
    ).data


def compared_with(typed: str, found: FoundCommand | None) -> str:
    """Which launch of the user's an answer speaks of, in words."""
    if typed or found is None:
        return "your launch command"
    if found.source == "paste":
        return "the command in the paste"
    return f"the command rebuilt from the logged {found.source}"


def first_fix_to_try(fixes: Sequence[RankedFix]) -> RankedFix | None:
    return next((fix for fix in fixes if not fix.already_applied), None)


def corrected_command_for(ranked: RankedFix, diagnosis: Any, context: dict[str, Any]) -> str | None:
    """The user's launch command (from the serializer context; else the one their paste
    holds) with `ranked` applied."""
    known = getattr(diagnosis, "context", None)  # a Diagnosis or a LaunchCheck
    command = context.get("launch_command") or ""
    if not command.strip() and known is not None and known.found_command is not None:
        command = known.found_command.text
    if not command.strip():
        return None
    from kb.views.launch import corrected_command

    framework, version = (known.framework, known.spelling_version) if known else (None, None)
    if isinstance(diagnosis, Diagnosis):  # what the server refused is written as it takes it
        renames = {p.written: p.instead for p in diagnosis.refused_flags if p.instead}
        command = rename_flags(command, {k: v for k, v in renames.items() if " " not in k})
    fix = {
        "changes": [
            {"action": str(c.action), "name": c.name, "value": c.value} for c in ranked.changes
        ],
        "command_changes": list(ranked.command_changes),
    }
    return corrected_command(command, fix, framework, version)


def summary_line(diagnosis: Diagnosis) -> str:
    """`Known issue: <finding>. Try first: <fix> (<changes>).` — or why there is none;
    a command line the server refused comes first: nothing else ran."""
    if diagnosis.refused_flags:
        problems = "; ".join(p.describe() for p in diagnosis.refused_flags)
        return f"The server refused its command line: {problems}. Fix that first."
    if serious := [fault for fault in diagnosis.host_faults if fault.serious]:
        return f"The {serious[0].kind} failed, not the server: {serious[0].describe()}"
    signature = diagnosis.signature
    first = first_fix_to_try(diagnosis.fixes)
    if diagnosis.match is MatchLevel.NONE or first is None:
        if signature is None:
            error = "this paste"
        elif signature.exception_type in UNNAMED_TYPES:
            error = f"this {error_name(signature.exception_type)}"  # our name, not the paste's
        else:
            error = diagnosis.type_as_pasted or signature.exception_type
        if diagnosis.fixes:  # every fix is already in the launch command
            return f"Known issue, but every known fix is already applied: {error}."
        return f"No known match for {error} in FixGraph{next_step(diagnosis)}."
    label = diagnosis.verdict_label
    if tied := diagnosis.tied_causes:
        causes = "; or ".join(f"{t.finding.title} (fix #{t.ranks[0]})" for t in tied)
        return (
            f"{label}, {len(tied)} causes the paste does not tell apart: {causes}. "
            "Check which applies before trying a fix."
        )
    # The changes as the user's release spells them, when the fix is made of changes.
    what = " ".join(first.command_changes) if first.said_by_changes else first.fix.summary
    if first.proposed:
        what += f" ({PROPOSED})"
    elif first.for_other_setup:
        what += f" ({OTHER_SETUP} {'; '.join(first.for_other_setup)})"
    return f"{label}: {first.finding.title}. Try first: {what}."


def next_step(diagnosis: Diagnosis) -> str:
    """After "no known match", where to look: what the GPU's memory figures show, the
    settings the error itself names, else the nearest finding, else words to search by; for
    a paste that only says another process failed, the log to paste instead."""
    if diagnosis.cause_elsewhere:
        heading, advice = diagnosis.cause_elsewhere
        return f"; {heading[0].lower()}{heading[1:].rstrip('.')}. {advice.rstrip('.')}"
    if diagnosis.build_support:
        return f"; {diagnosis.build_support[0].text.rstrip('.')}"
    if diagnosis.gpu_requirements:
        return f"; {diagnosis.gpu_requirements[0].says.rstrip('.')}"
    if telling := [r for r in diagnosis.memory_readings if r.helps]:
        return f"; {telling[0].text[0].lower()}{telling[0].text[1:].rstrip('.')}"
    if diagnosis.named_flags:
        named = ", ".join(n.describe() for n in diagnosis.named_flags)
        return f"; the error names {named}"
    if diagnosis.nearest:
        return f"; nearest, not taken: {diagnosis.nearest[0].finding.title}"
    if diagnosis.search_words:
        return f"; search the known issues for: {' '.join(diagnosis.search_words)}"
    return ""


class SlackMessageSerializer(serializers.Serializer):
    """A Slack message to post as is (Block Kit): `?format=slack` on diagnose."""

    response_type = serializers.ChoiceField(choices=["in_channel", "ephemeral"])
    text = serializers.CharField(help_text="The notification text (mrkdwn, escaped)")
    blocks = serializers.ListField(child=serializers.DictField(), help_text="Block Kit blocks")


# --- Slack ---------------------------------------------------------------------------------


def slack_text(help_text: str = "") -> serializers.CharField:
    return serializers.CharField(required=False, allow_blank=True, default="", help_text=help_text)


class SlashCommandSerializer(serializers.Serializer):
    """What Slack posts for `/fixgraph <paste>` (a form; only the fields FixGraph reads)."""

    text = serializers.CharField(
        required=False,
        allow_blank=True,
        default="",
        trim_whitespace=False,
        max_length=40_000,
        help_text="What follows the command: the pasted error, or `check` and a launch command",
    )
    response_url = slack_text("Where the answer goes when there is no bot token")
    command = slack_text()
    channel_id = slack_text("The channel the verdict and its thread go to")
    team_id = slack_text()
    user_id = slack_text("The Slack user: feedback counts once per user")
    trigger_id = slack_text()

    def validate_text(self, value: str) -> str:
        """Slack sends `&`, `<` and `>` as `&amp;`, `&lt;`, `&gt;` in a command's text:
        back to what the user pasted (`in <module>`, `init.cc:128 -> 3`, `2>&1`)."""
        return value.replace("&lt;", "<").replace("&gt;", ">").replace("&amp;", "&")


class SlackInteractionSerializer(serializers.Serializer):
    """What Slack posts when a button is pressed or a modal sent: one `payload` field."""

    payload = serializers.CharField(help_text="JSON: block_actions or view_submission")

    def validate_payload(self, value: str) -> dict[str, Any]:
        try:
            payload = json.loads(value)
        except ValueError:
            raise serializers.ValidationError("Not JSON.") from None
        if not isinstance(payload, dict):
            raise serializers.ValidationError("Not a Slack interaction.")
        if payload.get("type") == "block_actions":
            actions = payload.get("actions")
            if not isinstance(actions, list) or not actions or not isinstance(actions[0], dict):
                raise serializers.ValidationError("A button press without an action.")
        return payload
