"""Forms of the web pages: paste a traceback, feedback, review a draft (search: kb.filtersets)."""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.conf import settings

from decisiontree import conditions, vocabulary
from decisiontree.context import release_in_words
from decisiontree.documents.changes import changes_from_lines, summarize
from decisiontree.logfile import size
from decisiontree.records import Change, ChangeAction
from decisiontree.server_env import change_problem
from kb.models import Finding, Fix
from kb.services.uploads import LogTooLarge, LogUnreadable, read_log


class SetupForm(forms.Form):
    """Where a server runs, as the user knows it: its launch command, GPU and release."""

    launch_command = forms.CharField(
        label="Launch command (optional)",
        required=False,
        max_length=20_000,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
    )
    gpu = forms.CharField(label="GPU (optional)", required=False, max_length=120)
    release = forms.CharField(label="Release (optional)", required=False, max_length=80)

    def clean_release(self) -> str:
        """ "sglang 0.5.9", "vllm 0.11.0" or "0.5.9"; sets `framework` and
        `framework_version` in cleaned_data."""
        written: str = self.cleaned_data["release"].strip()
        framework, version = release_in_words(written)
        # Another word than a release ("tgi 2.0") names a framework FixGraph does not know.
        words = written.replace(version, " ") if version else written
        if written and framework is None and (version is None or re.search(r"[A-Za-z]{2}", words)):
            raise forms.ValidationError(
                "Write the framework and its release, e.g. “sglang 0.5.9” or “vllm 0.11.0” "
                "(FixGraph knows SGLang and vLLM)."
            )
        self.cleaned_data["framework"] = framework or ""
        self.cleaned_data["framework_version"] = version or ""
        return written


class LaunchCheckForm(SetupForm):
    """A launch about to run: the known issues its setup meets."""

    launch_command = forms.CharField(
        label="Launch command",
        max_length=20_000,
        widget=forms.Textarea(attrs={"rows": 4, "spellcheck": "false", "autofocus": True}),
    )


class DiagnoseForm(SetupForm):
    """The pasted error, or the whole log attached (signed-in users: an upload is large),
    and what the user knows about where it happened."""

    text = forms.CharField(
        label="Traceback or error line",
        required=False,
        widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false", "autofocus": True}),
        strip=False,
    )
    log = forms.FileField(label="Or attach the whole server log", required=False)
    field_order = ["text", "log", "launch_command", "gpu", "release"]

    def __init__(self, *args: Any, allow_log: bool = False, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Django's own "Null characters are not allowed" says nothing useful about a paste.
        self.fields["text"].validators = []
        if not allow_log:
            del self.fields["log"]
        else:
            self.fields["log"].help_text = (
                "Its start (the launch) and its end (the crash) are read; up to "
                f"{size(settings.FIXGRAPH_MAX_LOG_BYTES)}."
            )

    def clean_text(self) -> str:
        text: str = self.cleaned_data["text"]
        if "\x00" in text:
            raise forms.ValidationError(
                "The paste contains NUL bytes: it looks like a binary file, not a log or "
                "traceback. Paste the text of the error instead."
            )
        if len(text.encode("utf-8", "replace")) > settings.FIXGRAPH_MAX_PASTE_BYTES:
            raise forms.ValidationError(paste_too_large_message())
        return text

    def clean(self) -> dict[str, Any]:
        data = super().clean() or {}
        pasted, log = data.get("text") or "", data.get("log")
        data["read_from"] = ""
        if self.errors:
            return data
        if log and pasted.strip():
            raise forms.ValidationError("Paste the error or attach the log, not both.")
        if log:
            try:
                data["text"], data["read_from"] = read_log(log)
            except (LogTooLarge, LogUnreadable) as unreadable:
                raise forms.ValidationError(str(unreadable)) from None
        elif not pasted.strip():
            raise forms.ValidationError(
                "Paste the traceback or the error line"
                + (", or attach the log." if "log" in self.fields else ".")
            )
        return data


def paste_too_large_message() -> str:
    limit_mb = settings.FIXGRAPH_MAX_PASTE_BYTES / 1_000_000
    return (
        f"The paste is larger than {limit_mb:g} MB. Paste the traceback and the lines "
        "just before it, not the whole log."
    )


def answers_from(data: Any) -> dict[str, str]:
    """Answers so far (`answer.<key>` fields) plus the one just clicked (`answer=key=value`)."""
    answers = {
        name.removeprefix("answer."): str(value)[:120]
        for name, value in data.items()
        if name.startswith("answer.") and value
    }
    clicked = str(data.get("answer", ""))
    key, sep, value = clicked.partition("=")
    if sep and key and value:
        answers[key[:80]] = value[:120]
    return answers


class FeedbackForm(forms.Form):
    fix_id = forms.ModelChoiceField(queryset=Fix.objects.all(), widget=forms.HiddenInput)
    helped = forms.TypedChoiceField(
        choices=[("yes", "fixed it"), ("no", "did not help")],
        coerce=lambda value: value == "yes",
    )
    fingerprint = forms.CharField(required=False, max_length=64)
    diagnosis = forms.CharField(required=False, max_length=32, widget=forms.HiddenInput)

    def __init__(self, data: Any = None, *args: Any, **kwargs: Any) -> None:
        if data is not None and "fix_id" not in data and "fix" in data:
            data = data.copy()  # the field's old name, from pages still open in a browser
            data["fix_id"] = data["fix"]
        super().__init__(data, *args, **kwargs)


class WorkedInsteadForm(forms.Form):
    """After "did not help": another fix that worked, or what did, in the voter's words."""

    worked_instead_fix = forms.ModelChoiceField(
        queryset=Fix.objects.all(), required=False, label="Another fix that worked"
    )
    worked_instead_text = forms.CharField(
        required=False,
        max_length=5_000,
        label="Or what worked, in your words",
        widget=forms.Textarea(attrs={"rows": 2}),
    )


# --- review ------------------------------------------------------------------------


class ConditionsField(forms.CharField):
    """Conditions as lines of `key = value` or `key != value` (see decisiontree.conditions);
    `(seen)` after one marks it derived: where the finding was seen, not what it needs."""

    widget = forms.Textarea(attrs={"rows": 5, "spellcheck": "false"})

    def prepare_value(self, value: Any) -> str:
        if isinstance(value, list):
            return "\n".join(conditions.as_line(item) for item in value if isinstance(item, dict))
        return str(value or "")

    def to_python(self, value: Any) -> list[dict[str, Any]]:
        lines = [line for line in str(value or "").splitlines() if line.strip()]
        try:
            return [conditions.as_dict(conditions.parse_line(line)) for line in lines]
        except conditions.ConditionError as error:
            raise forms.ValidationError(str(error)) from error


class ReviewFindingForm(forms.ModelForm):  # type: ignore[type-arg]
    conditions = ConditionsField(
        required=False,
        help_text=(
            "One per line: gpu.arch = sm_120, flag.kv-cache-dtype != bf16. "
            f"{conditions.SEEN_MARK} after one the finding was only seen with "
            "(not what its cause needs): a different setup then weighs less."
        ),
    )

    class Meta:
        model = Finding
        fields = ["title", "kind", "summary", "cause", "conditions"]
        widgets = {
            "summary": forms.Textarea(attrs={"rows": 3}),
            "cause": forms.Textarea(attrs={"rows": 5}),
        }


class ChangesField(forms.CharField):
    """A fix's structured changes, one per line as they are shown: `--kv-cache-dtype bf16`,
    `remove --x`, `NAME=value`, `package==1.2`; any other line is kept as words."""

    widget = forms.Textarea(attrs={"rows": 2, "spellcheck": "false"})

    def prepare_value(self, value: Any) -> str:
        if isinstance(value, list):
            return "\n".join(change_of(item).describe() for item in value if isinstance(item, dict))
        return str(value or "")

    def has_changed(self, initial: Any, data: Any) -> bool:
        return self.prepare_value(initial or []).strip() != str(data or "").strip()

    def to_python(self, value: Any) -> list[dict[str, Any]]:
        changes = changes_from_lines(str(value or ""), vocabulary.load())
        refused = [problem for change in changes if (problem := change_problem(change))]
        if refused:
            raise forms.ValidationError(" ".join(refused))
        return [{"action": str(c.action), "name": c.name, "value": c.value} for c in changes]


def change_of(item: dict[str, Any]) -> Change:
    try:
        action = ChangeAction(item.get("action"))
    except ValueError:
        action = ChangeAction.OTHER
    return Change(action, str(item.get("name", "")), item.get("value"))


class FixReviewForm(forms.ModelForm):  # type: ignore[type-arg]
    """One attempt: what it changed and what it did; it can move to another finding."""

    summary = forms.CharField(
        required=False, widget=forms.TextInput(attrs={"size": 60}), help_text="Left empty: "
        "written from the changes."
    )  # fmt: skip
    changes = ChangesField(required=False, label="Changes, one per line")
    move_to = forms.IntegerField(
        required=False, min_value=1, label="Move to finding #",
        help_text="The finding of the symptom this attempt was tried against.",
    )  # fmt: skip

    class Meta:
        model = Fix
        fields = ["summary", "changes", "outcome"]

    def clean(self) -> dict[str, Any]:
        cleaned = super().clean() or {}
        changes = [change_of(item) for item in cleaned.get("changes") or []]
        if not cleaned.get("summary") and changes:
            cleaned["summary"] = summarize(tuple(changes))
        if not cleaned.get("summary") and not cleaned.get("DELETE"):
            self.add_error("summary", "Say what the fix does, or give its changes.")
        target = cleaned.get("move_to")
        if target is not None and not Finding.objects.filter(pk=target).exists():
            self.add_error("move_to", f"There is no finding #{target}.")
        return cleaned


FixOutcomeFormSet = forms.inlineformset_factory(
    Finding,
    Fix,
    form=FixReviewForm,
    extra=1,
    can_delete=True,
    can_order=True,
)


class RejectForm(forms.Form):
    reason = forms.CharField(
        required=False, max_length=500, label="Why (optional)",
        widget=forms.TextInput(attrs={"placeholder": "e.g. no incident in this file"}),
    )  # fmt: skip


class MergeForm(forms.Form):
    target = forms.IntegerField(min_value=1, label="Merge into finding #")

    def clean_target(self) -> Finding:
        pk = self.cleaned_data["target"]
        target = Finding.objects.filter(pk=pk).first()
        if target is None:
            raise forms.ValidationError(f"There is no finding #{pk}.")
        return target
