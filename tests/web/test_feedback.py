"""“Fixed it” / “Did not help” on the diagnose page: a login, one vote, undo, what worked."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import User
from django.test import Client

from kb.models import Fix, FixFeedback
from kb.services.feedback import votes_per_fix
from tests.web.conftest import decode_finding

FEEDBACK = "/diagnose/feedback/"


@pytest.fixture
def engineer(db: None) -> User:
    return User.objects.create_user("engineer", password="pw-engineer-1")


@pytest.fixture
def logged_in(client: Client, engineer: User) -> Client:
    client.force_login(engineer)
    return client


def first_fix() -> Fix:
    fix = decode_finding().fixes.order_by("position", "id").first()
    assert fix is not None
    return fix


def test_a_vote_needs_a_login(client: Client, starter_kb: None) -> None:
    response = client.post(FEEDBACK, {"fix_id": first_fix().pk, "helped": "yes"})
    assert response.status_code == 403
    assert "Log in" in response.content.decode()
    assert not FixFeedback.objects.exists()


def test_the_page_asks_anonymous_visitors_to_log_in_instead_of_showing_buttons(
    client: Client, starter_kb: None
) -> None:
    page = client.post(
        "/diagnose/",
        {
            "text": "Assertion `probability tensor contains either "
            "`inf`, `nan` or element < 0` failed."
        },
        follow=True,
    )
    text = page.content.decode()
    assert "to say whether it fixed it" in text and "Fixed it</button>" not in text


def test_it_records_one_vote_per_person_and_fix(logged_in: Client, starter_kb: None) -> None:
    fix = first_fix()
    for _ in range(3):
        response = logged_in.post(FEEDBACK, {"fix_id": fix.pk, "helped": "yes"})
        assert response.status_code == 200
    vote = FixFeedback.objects.get()
    assert (vote.fix_id, vote.helped, vote.channel, vote.voter) == (
        fix.pk,
        True,
        "web",
        f"user:{vote.created_by_id}",
    )
    assert "replaces your earlier word" in response.content.decode()
    assert votes_per_fix() == {fix.pk: (1, 0)}


def test_the_old_field_name_still_works(logged_in: Client, starter_kb: None) -> None:
    assert logged_in.post(FEEDBACK, {"fix": first_fix().pk, "helped": "no"}).status_code == 200
    assert FixFeedback.objects.get().helped is False


def test_undo_takes_the_vote_back(logged_in: Client, starter_kb: None, db: None) -> None:
    logged_in.post(FEEDBACK, {"fix_id": first_fix().pk, "helped": "yes"})
    vote = FixFeedback.objects.get()
    response = logged_in.post(f"/feedback/{vote.pk}/undo/")
    assert response.status_code == 200 and "Taken back" in response.content.decode()
    assert votes_per_fix() == {}


def test_nobody_else_can_undo_it(logged_in: Client, starter_kb: None) -> None:
    logged_in.post(FEEDBACK, {"fix_id": first_fix().pk, "helped": "yes"})
    vote = FixFeedback.objects.get()
    other = Client()
    other.force_login(User.objects.create_user("someone-else"))
    assert other.post(f"/feedback/{vote.pk}/undo/").status_code == 404
    assert FixFeedback.objects.filter(pk=vote.pk).exists()


def test_did_not_help_asks_what_worked_instead(logged_in: Client, starter_kb: None) -> None:
    fix = first_fix()
    response = logged_in.post(FEEDBACK, {"fix_id": fix.pk, "helped": "no"})
    assert "What worked instead?" in response.content.decode()
    vote = FixFeedback.objects.get()
    other = decode_finding().fixes.exclude(pk=fix.pk).first()
    response = logged_in.post(
        f"/feedback/{vote.pk}/worked-instead/",
        {"worked_instead_fix": other.pk, "worked_instead_text": "plus a restart"},
    )
    assert response.status_code == 200
    vote.refresh_from_db()
    assert (vote.worked_instead_fix, vote.worked_instead_text) == (other, "plus a restart")


def test_it_requires_a_csrf_token_for_feedback(engineer: User, starter_kb: None) -> None:
    strict = Client(enforce_csrf_checks=True)
    strict.force_login(engineer)
    response = strict.post(FEEDBACK, {"fix_id": first_fix().pk, "helped": "no"})
    assert response.status_code == 403
    assert not FixFeedback.objects.exists()


def test_it_answers_400_for_feedback_on_a_missing_fix(logged_in: Client, db: None) -> None:
    assert logged_in.post(FEEDBACK, {"fix_id": 999, "helped": "yes"}).status_code == 400
