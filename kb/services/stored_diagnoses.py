"""Run a diagnosis and keep it: one record that the web page, the API and Slack all show.

`diagnose_and_store` is the one entry point for a diagnosis a person asked for. The
stored `answer` is the API's answer (`api.serializers.DiagnosisSerializer`), which the
page renders too, so every channel shows the same fixes, the same corrected command
and the same `html_url`, and a link keeps showing the answer as it was given.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import Q

from decisiontree.diagnose import Diagnosis
from decisiontree.scrub import scrub
from kb.models import Finding, StoredDiagnosis
from kb.models.diagnoses import new_slug
from kb.services.diagnosis import Given, PastedError, diagnose, pasted_error


def diagnose_and_store(
    text: str,
    *,
    launch_command: str = "",
    gpu: str = "",
    model: str = "",
    framework: str = "",
    framework_version: str = "",
    answers: dict[str, str] | None = None,
    refines: StoredDiagnosis | None = None,
    channel: str = StoredDiagnosis.Channel.WEB,
    user: AbstractBaseUser | AnonymousUser | None = None,
    requester: str = "",
    read_from: str = "",
) -> StoredDiagnosis:
    """Diagnose `text` and store it with who asked (and, for an attached log, what was
    read of it); returns the stored record. What looks like a secret in the paste or the
    launch command is replaced first (decisiontree.scrub): the stored paste, its answer
    and any sample made from it never hold it.

    Raises what `kb.services.diagnosis.diagnose` raises (decisiontree `InputRejected` for
    a paste that is not text, `KeyError` for an answer to a question never asked); then
    nothing is stored.
    """
    pasted, launched = scrub(text), scrub(launch_command)
    text, launch_command = pasted.text, launched.text
    removed = [*(refines.scrubbed if refines is not None else []), *pasted.kinds, *launched.kinds]
    if not read_from and refines is not None and refines.text == text:
        read_from = refines.read_from  # a question answered about an attached log
    result = diagnose(
        text,
        launch_command=launch_command or None,
        gpu=gpu or None,
        model=model or None,
        framework=framework or None,
        framework_version=framework_version or None,
        answers=answers,
    )
    record = StoredDiagnosis(
        slug=new_slug(),
        text=text,
        read_from=read_from[:400],
        scrubbed=list(dict.fromkeys(removed)),
        launch_command=launch_command,
        gpu=gpu[:200],
        model=model[:200],
        framework=framework[:60],
        framework_version=framework_version[:60],
        answers=answers or {},
        refines=refines,
        channel=channel,
        created_by=user if user is not None and user.is_authenticated else None,
        requester=requester[:200],
    )
    record.answer = answer_of(result, launch_command, record)
    copy_occurrence_facts(record)
    record.save()
    return record


class NotAsked(ValueError):
    """An answer to a question the diagnosis did not ask, or one it did not offer."""


def refine(
    record: StoredDiagnosis,
    key: str,
    value: str,
    *,
    channel: str,
    requester: str,
) -> StoredDiagnosis:
    """The same paste diagnosed again with one more answer: a new record that refines
    `record`, as answering on the web page makes. Only a question the record's answer asked,
    and one of the answers it offered, is taken: a button cannot be made to say more."""
    offered = {q["key"]: q["answers"] for q in (record.answer or {}).get("questions") or []}
    if value not in offered.get(key, ()):
        raise NotAsked(f"That diagnosis did not ask {key!r} with {value!r} as an answer.")
    return diagnose_and_store(
        record.text,
        launch_command=record.launch_command,
        gpu=record.gpu,
        model=record.model,
        framework=record.framework,
        framework_version=record.framework_version,
        answers={**record.answers, key: value},
        refines=record,
        channel=channel,
        requester=requester,
    )


def answer_of(result: Diagnosis, launch_command: str, record: StoredDiagnosis) -> dict[str, Any]:
    """The answer as every channel shows it: the API's one JSON shape, with this record's
    `id` and `html_url` and each fix's corrected launch command."""
    # Imported on use: the serializer module imports the API's models and settings.
    from api.serializers import DiagnosisSerializer

    context = {"launch_command": launch_command, "stored": record}
    return dict(DiagnosisSerializer(result, context=context).data)


def copy_occurrence_facts(record: StoredDiagnosis) -> None:
    """Where the error happened and what it matched, as columns to count by."""
    answer = record.answer
    context = answer.get("context") or {}
    signature = answer.get("signature") or {}
    record.match = str(answer["match"])
    record.fingerprint = str(signature.get("fingerprint") or "")[:64]
    record.finding = matched_finding(answer)
    record.seen_gpu = first(context.get("gpus"))[:120]
    record.seen_arch = str(context.get("arch") or "")[:16]
    record.seen_framework = str(context.get("framework") or "")[:60]
    record.seen_framework_version = str(context.get("framework_version") or "")[:60]
    record.seen_model = str(context.get("model") or "")[:200]


def matched_finding(answer: dict[str, Any]) -> Finding | None:
    """The finding the error matched best, when it matched at all (and still exists)."""
    if answer.get("match") == "none":
        return None
    matches = answer.get("matches") or []
    finding_id = matches[0].get("finding_id") if matches else None
    if finding_id is None and answer.get("fixes"):
        finding_id = answer["fixes"][0]["finding"]["id"]
    return Finding.objects.filter(pk=finding_id).first() if finding_id else None


def first(values: Any) -> str:
    return str(values[0]) if isinstance(values, list | tuple) and values else ""


def stored(slug: str) -> StoredDiagnosis | None:
    """The diagnosis behind a link, or None: an unknown slug and a malformed one alike."""
    if not slug or len(slug) > 32:
        return None
    return StoredDiagnosis.objects.select_related("created_by").filter(slug=slug).first()


def given_with(record: StoredDiagnosis) -> Given:
    """What the user typed beside the stored paste."""
    return Given(
        record.launch_command or None,
        record.gpu or None,
        record.model or None,
        record.framework or None,
        record.framework_version or None,
    )


def drafts_waiting(record: StoredDiagnosis) -> list[Finding]:
    """Drafts in the review queue started from this paste, or from another of the same
    error (its fingerprint): a second teammate meeting it need not start another."""
    return drafts_of_error(record.fingerprint, also=Q(started_from=record))


def drafts_line(drafts: Sequence[Mapping[str, Any]]) -> str:
    """What a text answer says of the drafts (`id`, `title`) waiting for this error."""
    more = f" ({len(drafts)} drafts)" if len(drafts) > 1 else ""
    first = drafts[0]
    return f"A draft of this error waits in the review queue{more}: #{first['id']} {first['title']}"


def drafts_of_error(fingerprint: str, also: Q | None = None) -> list[Finding]:
    """Drafts in the review queue started from a paste of this error (fingerprint)."""
    same = Q(started_from__fingerprint=fingerprint) if fingerprint else Q(pk__in=[])
    if also is not None:
        same |= also
    found = Finding.objects.filter(same, status=Finding.Status.DRAFT)
    return list(found.order_by("created_at"))


def may_delete(record: StoredDiagnosis, user: AbstractBaseUser | AnonymousUser) -> bool:
    """Who asked may remove a paste they regret (a secret in it); so may an admin."""
    if not user.is_authenticated:
        return False
    return record.created_by_id == user.pk or user.has_perm("kb.delete_storeddiagnosis")


def delete(record: StoredDiagnosis) -> None:
    """Removes the paste and the answer. Its occurrence no longer counts."""
    record.delete()


def fix_ids(record: StoredDiagnosis) -> list[int]:
    """The fixes the stored answer suggests, best first."""
    entries = (record.answer or {}).get("fixes") or []
    return [int(entry["fix"]["id"]) for entry in entries if (entry.get("fix") or {}).get("id")]


def error_as_pasted(record: StoredDiagnosis) -> PastedError:
    """The error of the stored paste as the user wrote it, for the verdict: kept with the
    answer; a paste stored before answers kept it is parsed again (0.3 s for 2 MB)."""
    answer = record.answer or {}
    if "type_as_pasted" in answer:
        return PastedError(tuple(answer.get("error_lines") or ()), answer["type_as_pasted"])
    signature = answer.get("signature") or {}
    return pasted_error(record.text, signature.get("exception_type"))
