"""Forms of the web pages: paste a traceback, feedback, review a draft (search: kb.filtersets)."""

from __future__ import annotations

import re
from typing import Any

from django import forms
from django.conf import settings

from kb.models import Finding, Fix

CONDITION_LINE = re.compile(r"^\s*([\w.\-]+)\s*(!=|=)\s*(.+?)\s*$")


class DiagnoseForm(forms.Form):
    """The pasted error and what the user knows about where it happened."""

    text = forms.CharField(
        label="Traceback or error line",
        widget=forms.Textarea(attrs={"rows": 14, "spellcheck": "false", "autofocus": True}),
        strip=False,
    )
    launch_command = forms.CharField(
        label="Launch command (optional)",
        required=False,
        max_length=20_000,
        widget=forms.Textarea(attrs={"rows": 3, "spellcheck": "false"}),
    )
    gpu = forms.CharField(label="GPU (optional)", required=False, max_length=120)

    def __init__(self, *args: Any, **kwargs: Any) -> None:
        super().__init__(*args, **kwargs)
        # Django's own "Null characters are not allowed" says nothing useful about a paste.
        self.fields["text"].validators = []

    def clean_text(self) -> str:
        text: str = self.cleaned_data["text"]
        if "\x00" in text:
            raise forms.ValidationError(
                "The paste contains NUL bytes: it looks like a binary file, not a log or "
                "traceback. Paste the text of the error instead."
            )
        if len(text.encode("utf-8", "replace")) > settings.FIXGRAPH_MAX_PASTE_BYTES:
            raise forms.ValidationError(paste_too_large_message())
        if not text.strip():
            raise forms.ValidationError("Paste the traceback or the error line.")
        return text


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
    fix = forms.ModelChoiceField(queryset=Fix.objects.all(), widget=forms.HiddenInput)
    helped = forms.TypedChoiceField(
        choices=[("yes", "fixed it"), ("no", "did not help")],
        coerce=lambda value: value == "yes",
    )
    fingerprint = forms.CharField(required=False, max_length=64)


# --- review ------------------------------------------------------------------------


class ConditionsField(forms.CharField):
    """Conditions as lines of `key = value` or `key != value`."""

    widget = forms.Textarea(attrs={"rows": 5, "spellcheck": "false"})

    def prepare_value(self, value: Any) -> str:
        if isinstance(value, list):
            return "\n".join(condition_line(item) for item in value if isinstance(item, dict))
        return str(value or "")

    def to_python(self, value: Any) -> list[dict[str, Any]]:
        lines = [line for line in str(value or "").splitlines() if line.strip()]
        return [parse_condition(line) for line in lines]


def condition_line(condition: dict[str, Any]) -> str:
    operator = "!=" if condition.get("negate") else "="
    return f"{condition.get('key', '')} {operator} {condition.get('value', '')}"


def parse_condition(line: str) -> dict[str, Any]:
    match = CONDITION_LINE.match(line)
    if match is None:
        raise forms.ValidationError(
            f"“{line.strip()}” is not a condition: write key = value or key != value, "
            "e.g. gpu.arch = sm_120"
        )
    key, operator, value = match.groups()
    return {"key": key, "value": value, "negate": operator == "!="}


class ReviewFindingForm(forms.ModelForm):  # type: ignore[type-arg]
    conditions = ConditionsField(
        required=False, help_text="One per line: gpu.arch = sm_120, flag.kv-cache-dtype != bf16"
    )

    class Meta:
        model = Finding
        fields = ["title", "kind", "summary", "cause", "conditions"]
        widgets = {
            "summary": forms.Textarea(attrs={"rows": 3}),
            "cause": forms.Textarea(attrs={"rows": 5}),
        }


FixOutcomeFormSet = forms.inlineformset_factory(
    Finding,
    Fix,
    fields=["summary", "outcome"],
    extra=0,
    can_delete=False,
    widgets={"summary": forms.TextInput(attrs={"size": 60})},
)
