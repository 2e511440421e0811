"""Learning from use: a paste someone said a fix fixed becomes, in one reviewer's click,
a sample of the finding, and the next report like it matches that finding."""

from __future__ import annotations

import pytest
from django.contrib.auth.models import Permission, User
from django.test import Client

from kb.models import ErrorSample, Finding, FixFeedback, StoredDiagnosis
from kb.services.diagnosis import diagnose
from kb.services.ingest import ingest_bytes
from kb.services.stored_diagnoses import diagnose_and_store
from tests.web.conftest import ROOT

pytestmark = pytest.mark.django_db

# Said differently from the finding's own sample: it matches on shared words only.
VARIANT = (
    "[rank3]: AssertionError in MLATokenToKVPool.set_kv_buffer while writing the fp8 nsa cache"
)


@pytest.fixture
def triton_finding(starter_kb: None) -> Finding:
    return Finding.objects.get(title__startswith="Triton attention backend asserts")


@pytest.fixture
def engineer(db: None) -> Client:
    client = Client()
    client.force_login(User.objects.create_user("engineer"))
    return client


@pytest.fixture
def reviewer_client(db: None) -> Client:
    user = User.objects.create_user("reviewer-of-samples")
    user.user_permissions.add(Permission.objects.get(codename="change_finding"))
    client = Client()
    client.force_login(user)
    return client


def fixed_it(client: Client, finding: Finding) -> StoredDiagnosis:
    """The engineer pastes the variant and says the finding's first fix fixed it."""
    record = diagnose_and_store(VARIANT)
    assert record.answer["fixes"][0]["finding"]["id"] == finding.pk
    fix_id = record.answer["fixes"][0]["fix_id"]
    response = client.post(
        "/diagnose/feedback/", {"fix_id": fix_id, "helped": "yes", "diagnosis": record.slug}
    )
    assert response.status_code == 200
    return record


def test_a_fixed_paste_is_kept_with_the_vote(engineer: Client, triton_finding: Finding) -> None:
    record = fixed_it(engineer, triton_finding)
    assert FixFeedback.objects.get().diagnosis == record
    assert record.text == VARIANT


def test_a_reviewer_adds_it_in_one_click_and_the_next_report_matches(
    engineer: Client, reviewer_client: Client, triton_finding: Finding
) -> None:
    before = diagnose(VARIANT)
    assert before.candidates[0].finding_id == triton_finding.pk
    # Matched on words it shares with another sample: no sample has this error's form.
    assert before.candidates[0].layer != "fingerprint"
    fixed_it(engineer, triton_finding)
    page = reviewer_client.get(f"/findings/{triton_finding.pk}/")
    assert "Pastes a fix fixed" in page.content.decode()
    [vote] = page.context["pastes_to_learn"]

    response = reviewer_client.post(
        f"/findings/{triton_finding.pk}/samples/from-feedback/{vote.pk}/", follow=True
    )
    assert response.status_code == 200
    assert "now match this finding" in response.content.decode()
    sample = ErrorSample.objects.get(finding=triton_finding, text=VARIANT)
    assert sample.learned_from == vote and sample.learned_at is not None
    after = diagnose(VARIANT)
    assert after.match == "known"
    assert after.candidates[0].finding_id == triton_finding.pk
    # Now it is one of the finding's own samples: its exact fingerprint matches.
    assert after.candidates[0].layer == "fingerprint"
    assert after.candidates[0].score > before.candidates[0].score
    assert response.context["pastes_to_learn"] == []  # nothing left to add


def test_the_learned_sample_survives_a_re_ingest(
    engineer: Client, reviewer_client: Client, triton_finding: Finding
) -> None:
    fixed_it(engineer, triton_finding)
    vote = FixFeedback.objects.get()
    reviewer_client.post(f"/findings/{triton_finding.pk}/samples/from-feedback/{vote.pk}/")
    starter = ROOT / "knowledge" / "FINDINGS.md"
    edited = starter.read_text().replace(
        "line 1498, in set_kv_buffer", "line 1502, in set_kv_buffer"
    )
    before = set(triton_finding.samples.filter(learned_at=None).values_list("pk", flat=True))
    outcome = ingest_bytes(edited.encode(), str(starter), publish=True)  # the same document
    assert outcome.action == "updated"
    after = set(triton_finding.samples.filter(learned_at=None).values_list("pk", flat=True))
    assert after and not after & before  # the document's own samples were replaced
    assert ErrorSample.objects.filter(text=VARIANT, learned_at__isnull=False).exists()


def test_only_reviewers_may_add_samples(engineer: Client, triton_finding: Finding) -> None:
    fixed_it(engineer, triton_finding)
    vote = FixFeedback.objects.get()
    assert (
        "Pastes a fix fixed" not in engineer.get(f"/findings/{triton_finding.pk}/").content.decode()
    )
    response = engineer.post(f"/findings/{triton_finding.pk}/samples/from-feedback/{vote.pk}/")
    assert response.status_code == 403
    assert not ErrorSample.objects.filter(text=VARIANT).exists()


def test_a_did_not_help_paste_is_not_offered(engineer: Client, triton_finding: Finding) -> None:
    record = diagnose_and_store(VARIANT)
    fix_id = record.answer["fixes"][0]["fix_id"]
    engineer.post(
        "/diagnose/feedback/", {"fix_id": fix_id, "helped": "no", "diagnosis": record.slug}
    )
    vote = FixFeedback.objects.get()
    reviewer = User.objects.create_superuser("admin")
    client = Client()
    client.force_login(reviewer)
    assert client.get(f"/findings/{triton_finding.pk}/").context["pastes_to_learn"] == []
    client.post(f"/findings/{triton_finding.pk}/samples/from-feedback/{vote.pk}/")
    assert not ErrorSample.objects.filter(text=VARIANT).exists()


# No known match: it shares only its error class and a kernel's name with the decode assert.
NEAR_MISS = (
    "RuntimeError: CUDA error: an illegal memory access was encountered during flashmla decode"
)


def test_with_no_known_match_a_nearest_findings_fix_that_worked_teaches_the_finding(
    engineer: Client, reviewer_client: Client, starter_kb: None
) -> None:
    page = engineer.post("/diagnose/", {"text": NEAR_MISS}, follow=True).content.decode()
    assert "<h2>No known match</h2>" in page
    record = StoredDiagnosis.objects.get()
    near = record.answer["nearest"][0]
    finding = Finding.objects.get(pk=near["id"])
    # Its fixes worth trying, none of those it says did not help.
    offered = {fix["id"] for fix in near["fixes"]}
    assert offered and offered == set(
        finding.fixes.exclude(outcome__in=("no_effect", "worse")).values_list("pk", flat=True)
    )
    assert "Did one of its fixes fix it?" in page
    # One spelling per answer here too: today's flag names, the finding's older ones noted.
    sparse = next(fix for fix in near["fixes"] if "decode-backend" in fix["summary"])
    assert "--dsa-decode-backend" in sparse["summary"] and "--nsa-" not in sparse["summary"]
    assert (
        "--dsa-decode-backend is --nsa-decode-backend in sglang 0.5.9 and older"
        in (sparse["spellings"])
    )
    fix_id = near["fixes"][0]["id"]
    assert f'name="fix_id" value="{fix_id}"' in page

    engineer.post(
        "/diagnose/feedback/", {"fix_id": fix_id, "helped": "yes", "diagnosis": record.slug}
    )
    [vote] = reviewer_client.get(f"/findings/{finding.pk}/").context["pastes_to_learn"]
    assert vote.diagnosis == record
    reviewer_client.post(f"/findings/{finding.pk}/samples/from-feedback/{vote.pk}/")

    after = diagnose(NEAR_MISS)
    assert after.match == "known" and after.candidates[0].finding_id == finding.pk


def test_without_a_login_the_nearest_fixes_ask_to_log_in(client: Client, starter_kb: None) -> None:
    page = client.post("/diagnose/", {"text": NEAR_MISS}, follow=True).content.decode()
    nearest = page.split("Nearest findings, not taken", 1)[1].split("</section>", 1)[0]
    assert "Did one of its fixes fix it?" in nearest
    assert "This fixed it" not in nearest and "Log in</a> to say so" in nearest


CUT_SHORT = """Traceback (most recent call last):
  File "/usr/local/lib/python3.12/dist-packages/sglang/srt/mem_cache/memory_pool.py", line 1498, in set_kv_buffer
    self._store(layer, loc, cache_k, cache_v)
"""


def test_the_reviewer_sees_what_a_paste_would_teach_and_a_paste_cut_short_is_flagged(
    engineer: Client, reviewer_client: Client, triton_finding: Finding
) -> None:
    fixed_it(engineer, triton_finding)
    record = diagnose_and_store(CUT_SHORT)
    fix = triton_finding.fixes.filter(outcome="resolves").first()
    assert fix is not None
    engineer.post(
        "/diagnose/feedback/", {"fix_id": fix.pk, "helped": "yes", "diagnosis": record.slug}
    )

    page = reviewer_client.get(f"/findings/{triton_finding.pk}/")
    lessons = page.context["lessons"]
    by_paste = {vote.diagnosis.text: lessons[vote.pk] for vote in page.context["pastes_to_learn"]}
    assert by_paste[VARIANT].error_lines and not by_paste[VARIANT].ends_before_error
    assert by_paste[CUT_SHORT].ends_before_error
    html = page.content.decode()
    assert html.count("No error line of its own") == 1
    assert f"<code>{by_paste[VARIANT].error_lines[0]}</code>" in html
