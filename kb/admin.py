from typing import Any

from django import forms
from django.contrib import admin
from simple_history.admin import SimpleHistoryAdmin

from decisiontree.records import Change, ChangeAction
from decisiontree.server_env import change_problem
from kb.models import (
    ErrorSample,
    ErrorSignature,
    Finding,
    FindingGpu,
    Fix,
    FixFeedback,
    Flag,
    FlagSetting,
    FrameworkRelease,
    Hardware,
    Host,
    LanguageModel,
    SignatureDecision,
    SourceDocument,
    ValidationRun,
)


@admin.register(Hardware)
class HardwareAdmin(admin.ModelAdmin):
    list_display = ["name", "arch", "compute_capability", "family", "memory_gb"]
    list_filter = ["arch", "family"]
    search_fields = ["name"]


@admin.register(LanguageModel)
class LanguageModelAdmin(admin.ModelAdmin):
    list_display = ["name", "family", "arch", "quantization"]
    search_fields = ["name", "arch"]


@admin.register(FrameworkRelease)
class FrameworkReleaseAdmin(admin.ModelAdmin):
    list_display = ["name", "version"]
    search_fields = ["name", "version"]


@admin.register(Flag)
class FlagAdmin(admin.ModelAdmin):
    list_display = ["name", "framework", "type", "deprecated", "concept"]
    list_filter = ["framework", "type", "deprecated"]
    search_fields = ["name", "aliases", "description"]


@admin.register(SourceDocument)
class SourceDocumentAdmin(admin.ModelAdmin):
    list_display = ["title", "format", "path", "updated_at"]
    list_filter = ["format"]
    search_fields = ["title", "path"]
    readonly_fields = ["content_hash", "ingested_at", "updated_at"]


@admin.register(ErrorSignature)
class ErrorSignatureAdmin(admin.ModelAdmin):
    list_display = ["exception_type", "template", "fingerprint"]
    search_fields = ["exception_type", "template", "fingerprint"]


class FindingGpuInline(admin.TabularInline):
    model = FindingGpu
    extra = 0


class FlagSettingInline(admin.TabularInline):
    model = FlagSetting
    extra = 0
    autocomplete_fields = ["flag"]


class FixForm(forms.ModelForm):  # type: ignore[type-arg]
    """A fix's changes as validation will run them: only vetted environment knobs."""

    class Meta:
        model = Fix
        fields = ["finding", "summary", "changes", "outcome", "position", "needs_review"]

    def clean_changes(self) -> Any:
        changes = self.cleaned_data["changes"]
        if not isinstance(changes, list):
            raise forms.ValidationError("A JSON list of changes.")
        known = {str(action) for action in ChangeAction}
        for change in changes:
            if not isinstance(change, dict) or change.get("action") not in known:
                raise forms.ValidationError(
                    f"Each change needs an action, one of {', '.join(sorted(known))}."
                )
            value = change.get("value")
            problem = change_problem(
                Change(ChangeAction(change["action"]), str(change.get("name", "")),
                       None if value is None else str(value))
            )  # fmt: skip
            if problem:
                raise forms.ValidationError(problem)
        return changes


class FixInline(admin.StackedInline):
    model = Fix
    form = FixForm
    extra = 0


class ErrorSampleInline(admin.StackedInline):
    model = ErrorSample
    extra = 0
    readonly_fields = ["signature"]


@admin.register(Finding)
class FindingAdmin(SimpleHistoryAdmin):
    list_display = ["title", "kind", "status", "resolution", "updated_at"]
    list_filter = ["status", "kind", "resolution", "gpus__arch", "framework__name"]
    search_fields = ["title", "summary", "cause", "body"]
    inlines = [FindingGpuInline, FlagSettingInline, FixInline, ErrorSampleInline]
    filter_horizontal = ["libraries", "signatures", "sources"]
    # A select of every stored paste would be a page of thousands of options.
    readonly_fields = ["started_from"]
    actions = ["publish"]

    @admin.action(description="Publish selected findings")
    def publish(self, request, queryset):  # type: ignore[no-untyped-def]
        for finding in queryset:
            finding.status = Finding.Status.PUBLISHED
            finding.save(update_fields=["status", "updated_at"])


@admin.register(Fix)
class FixAdmin(SimpleHistoryAdmin):
    form = FixForm
    list_display = ["summary", "finding", "outcome", "needs_review"]
    list_filter = ["outcome", "needs_review"]
    search_fields = ["summary"]


@admin.register(FixFeedback)
class FixFeedbackAdmin(admin.ModelAdmin):
    list_display = ["fix", "helped", "channel", "created_by", "created_at"]
    list_filter = ["helped", "channel"]


@admin.register(SignatureDecision)
class SignatureDecisionAdmin(admin.ModelAdmin):
    list_display = ["fingerprint", "finding", "decision", "decided_by", "decided_at"]


@admin.register(Host)
class HostAdmin(admin.ModelAdmin):
    list_display = ["name", "address", "port", "username", "lease_expires_at"]
    search_fields = ["name", "address"]


@admin.register(ValidationRun)
class ValidationRunAdmin(admin.ModelAdmin):
    list_display = ["id", "fix", "host", "status", "created_at", "finished_at"]
    list_filter = ["status"]
