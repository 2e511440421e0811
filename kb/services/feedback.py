"""Feedback on suggested fixes: one vote per person, fix and paste, and what it counts for.

The web form, the API and Slack all call `vote`. A vote needs a voter (a logged-in user,
an API token or a Slack user): anonymous votes cannot be cast, and the old anonymous ones
are kept but never count. A second vote by the same voter on the same fix and paste
replaces the first; `undo` takes it back. Ranking counts each voter once per fix, with
their latest word (`votes_per_fix`), so repeating a vote, or casting it on many pastes,
moves nothing.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable
from dataclasses import dataclass
from typing import Any

from django.contrib.auth.models import AbstractBaseUser, AnonymousUser
from django.db.models import QuerySet
from django.utils import timezone

from decisiontree.fingerprint import ends_before_error
from kb.models import ErrorSample, Finding, Fix, FixFeedback, StoredDiagnosis
from kb.services import records

ANONYMOUS = "anonymous"  # votes from before votes needed a voter: kept, never counted
MAX_CONTEXT_KEYS = 50
MAX_TEXT = 5_000


class NoVoter(Exception):
    """A vote without anyone behind it."""


@dataclass(frozen=True)
class Voter:
    """Who votes: `key` identifies them among all channels; `user` is the FixGraph
    account behind them, when there is one (a token's owner, a logged-in user)."""

    key: str
    user: AbstractBaseUser | None = None

    @classmethod
    def for_user(cls, user: AbstractBaseUser | AnonymousUser | None) -> Voter:
        if user is None or not user.is_authenticated:
            raise NoVoter("Log in to say whether a fix helped.")
        return cls(f"user:{user.pk}", user)  # type: ignore[arg-type]

    @classmethod
    def for_token(cls, token_id: int, user: AbstractBaseUser | None) -> Voter:
        return cls(f"token:{token_id}", user)

    @classmethod
    def for_slack(cls, team_id: str, user_id: str) -> Voter:
        if not user_id:
            raise NoVoter("The Slack request names no user.")
        return cls(f"slack:{team_id[:40]}:{user_id[:40]}")


def paste_key(paste: str = "", fingerprint: str = "") -> str:
    """Which paste a vote is about: the paste itself when known, else its error's
    fingerprint; empty when neither is (then one vote per voter and fix)."""
    if paste.strip():
        return hashlib.sha256(b"paste\n" + paste.strip().encode("utf-8", "replace")).hexdigest()
    if fingerprint:
        return hashlib.sha256(b"fingerprint\n" + fingerprint.encode()).hexdigest()
    return ""


def vote(
    fix: Fix,
    voter: Voter,
    *,
    helped: bool,
    diagnosis: StoredDiagnosis | None = None,
    fingerprint: str = "",
    worked_instead_fix: Fix | None = None,
    worked_instead_text: str = "",
    comment: str = "",
    context: dict[str, Any] | None = None,
    channel: str = "",
) -> tuple[FixFeedback, bool]:
    """Records the voter's word on `fix` for the paste of `diagnosis` (kept with the vote;
    without one, the error's fingerprint stands for the paste); returns the vote and whether
    it is new (False: it replaced the voter's earlier one). "What worked instead" only goes
    with "did not help"."""
    if helped and (worked_instead_fix is not None or worked_instead_text.strip()):
        raise ValueError("`worked instead` only goes with a fix that did not help.")
    if diagnosis is not None:
        fingerprint = fingerprint or diagnosis.fingerprint
    values = {
        "helped": helped,
        "diagnosis": diagnosis,
        "fingerprint": fingerprint[:64],
        "worked_instead_fix": worked_instead_fix,
        "worked_instead_text": worked_instead_text.strip()[:MAX_TEXT],
        "comment": comment[:MAX_TEXT],
        "context": dict(list((context or {}).items())[:MAX_CONTEXT_KEYS]),
        "channel": channel[:20],
        "created_by": voter.user,
    }
    # A row lock on the voter's earlier vote; two identical votes at once meet the unique
    # constraint, and the loser updates the winner's row.
    paste = diagnosis.text if diagnosis is not None else ""
    return FixFeedback.objects.update_or_create(
        voter=voter.key, fix=fix, paste_key=paste_key(paste, fingerprint), defaults=values
    )


def tell_worked_instead(
    feedback_id: int, voter: Voter, *, fix: Fix | None = None, text: str = ""
) -> FixFeedback | None:
    """Adds "what worked instead" to the voter's own "did not help"; None when there is
    no such vote of theirs."""
    vote_row = FixFeedback.objects.filter(pk=feedback_id, voter=voter.key, helped=False).first()
    if vote_row is None:
        return None
    vote_row.worked_instead_fix = fix
    vote_row.worked_instead_text = text.strip()[:MAX_TEXT]
    vote_row.save(update_fields=["worked_instead_fix", "worked_instead_text", "updated_at"])
    return vote_row


def undo(feedback_id: int, voter: Voter) -> bool:
    """Takes back the voter's own vote; False when it is not theirs (or is gone)."""
    deleted, _ = FixFeedback.objects.filter(pk=feedback_id, voter=voter.key).delete()
    return deleted > 0


def votes_of(voter: Voter) -> QuerySet[FixFeedback]:
    return FixFeedback.objects.filter(voter=voter.key).select_related("fix")


def counted() -> QuerySet[FixFeedback]:
    """The votes that count: all but the anonymous ones from before votes needed a voter."""
    return FixFeedback.objects.exclude(voter__in=("", ANONYMOUS))


def votes_per_fix(fix_ids: Iterable[int] | None = None) -> dict[int, tuple[int, int]]:
    """fix id -> (voters who said it fixed it, voters who said it did not), each voter
    counted once per fix with their latest vote. All fixes, or those of `fix_ids`."""
    latest: dict[tuple[int, str], bool] = {}
    votes = counted() if fix_ids is None else counted().filter(fix_id__in=list(fix_ids))
    rows = votes.order_by("updated_at", "pk").values_list("fix_id", "voter", "helped")
    for fix_id, voter, helped in rows.iterator(chunk_size=5000):
        latest[(fix_id, voter)] = helped
    counts: dict[int, tuple[int, int]] = {}
    for (fix_id, _), helped in latest.items():
        yes, no = counts.get(fix_id, (0, 0))
        counts[fix_id] = (yes + 1, no) if helped else (yes, no + 1)
    return counts


# --- learning from use: a paste a fix fixed becomes a sample of its finding ---------------

MAX_PASTES_SHOWN = 20


def pastes_to_learn(finding: Finding) -> list[FixFeedback]:
    """“Fixed it” votes on this finding's fixes whose paste is not one of its samples yet,
    newest first, one per paste."""
    known = set(finding.samples.values_list("text", flat=True))
    votes = (
        counted()
        .filter(fix__finding=finding, helped=True, diagnosis__isnull=False)
        .select_related("diagnosis", "fix")
        .order_by("-updated_at")
    )
    found: dict[str, FixFeedback] = {}
    for vote_row in votes[: MAX_PASTES_SHOWN * 5]:
        text = vote_row.diagnosis.text if vote_row.diagnosis else ""
        if text and text not in known and text not in found:
            found[text] = vote_row
    return list(found.values())[:MAX_PASTES_SHOWN]


@dataclass(frozen=True)
class Lesson:
    """What a paste would teach its finding as a sample, for the reviewer who decides."""

    error_lines: tuple[str, ...]  # as pasted; empty when it holds none
    ends_before_error: bool  # frames or log lines only: a traceback cut before its exception


def lesson_of(vote_row: FixFeedback) -> Lesson:
    """A paste that ends before its error teaches only what surrounds an error, which other
    reports of the same framework share: learned, it drew another bug's report in the
    shared real-reports replay (bench/learning_from_use.py), where pastes with an error
    line of their own did not."""
    # Imported on use: stored diagnoses import the diagnosis service, which imports this.
    from kb.services.stored_diagnoses import error_as_pasted

    record = vote_row.diagnosis
    if record is None:
        return Lesson((), True)
    signature = (record.answer or {}).get("signature") or {}
    return Lesson(error_as_pasted(record).lines, ends_before_error(signature.get("exception_type")))


def learn_paste(vote_id: int, finding: Finding, *, by: AbstractBaseUser) -> ErrorSample | None:
    """Adds the paste of a “fixed it” vote to the finding's samples, with its signature, so
    the next report of that variant matches the finding. None when the vote is not a
    “fixed it” on this finding with a paste, or the paste is a sample already."""
    vote_row = (
        counted()
        .filter(pk=vote_id, fix__finding=finding, helped=True, diagnosis__isnull=False)
        .select_related("diagnosis")
        .first()
    )
    if vote_row is None or vote_row.diagnosis is None:
        return None
    learned = records.add_new_samples(
        finding,
        [vote_row.diagnosis.text],
        learned_at=timezone.now(),
        learned_from=vote_row,
        learned_by=by,
    )
    return learned[0] if learned else None
