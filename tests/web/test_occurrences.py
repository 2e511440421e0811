"""How often a finding is met, as an error tracker shows it, and what users said of its fixes."""

from __future__ import annotations

import re
from datetime import timedelta

import pytest
from django.contrib.auth.models import User
from django.test import Client
from django.utils import timezone

from kb.models import ErrorSignature, Finding, StoredDiagnosis
from kb.services import feedback, occurrences
from tests.web.conftest import RTX_LAUNCH, decode_finding, fixture_text

pytestmark = pytest.mark.django_db


def text_of(response) -> str:  # type: ignore[no-untyped-def]
    return response.content.decode()


def paste(client: Client, **data: str) -> StoredDiagnosis:
    client.post("/diagnose/", {"text": fixture_text("decode_crash_rtx6000.txt"), **data})
    newest = StoredDiagnosis.objects.order_by("-pk").first()
    assert newest is not None
    return newest


def sidebar(page: str) -> str:
    return page.split('<aside class="side-col"', 1)[1]


def test_it_counts_each_paste_that_matched_the_finding(client: Client, starter_kb: None) -> None:
    finding = decode_finding()
    before = sidebar(text_of(client.get(f"/findings/{finding.pk}/")))
    assert re.search(r'<strong class="big">0</strong>\s*times pasted', before)

    paste(client, gpu="RTX PRO 6000", launch_command=RTX_LAUNCH)
    paste(client)

    after = sidebar(text_of(client.get(f"/findings/{finding.pk}/")))
    assert re.search(r'<strong class="big">2</strong>\s*times pasted', after)
    today = timezone.localdate().isoformat()
    assert f">{today}</time>" in after.split("Last seen", 1)[1][:200]
    assert "NVIDIA RTX PRO 6000 Blackwell Server Edition" in after  # the GPU distribution
    assert "1 · 50 %" in after and "unknown" in after  # one paste named no GPU
    spark = re.search(r'aria-label="Occurrences per week, the last 12 weeks: ([\d, ]+)"', after)
    assert spark is not None
    assert spark.group(1).endswith(", 2")  # both this week


def test_it_does_not_count_an_answered_question_again(
    client: Client, hopper_variant: Finding
) -> None:
    first = paste(client)
    second = paste(client, answer="gpu.arch=sm_120", refines=first.slug)

    assert second.refines == first
    assert first.finding is not None
    figures = occurrences.of_finding(first.finding)
    assert figures.times_seen == 1


def test_it_lists_the_fingerprints_a_finding_is_known_by(client: Client, starter_kb: None) -> None:
    record = paste(client)

    rows = occurrences.fingerprints_of(decode_finding())

    pasted = next(row for row in rows if row.fingerprint == record.fingerprint)
    assert pasted.occurrences.times_seen == 1
    page = text_of(client.get(f"/findings/{decode_finding().pk}/"))
    assert f'title="{record.fingerprint}"' in page


def test_first_seen_is_when_the_error_was_first_recorded(client: Client, starter_kb: None) -> None:
    finding = Finding.objects.get(title__startswith="Triton attention backend asserts")
    recorded = timezone.now() - timedelta(days=40)
    ErrorSignature.objects.filter(findings=finding).update(first_seen=recorded)

    figures = occurrences.of_finding(finding)

    assert figures.times_seen == 0
    assert figures.first_seen == recorded
    page = sidebar(text_of(client.get(f"/findings/{finding.pk}/")))
    assert recorded.date().isoformat() in page.split("First seen", 1)[1][:200]
    # Written down is not seen: never pasted, it was last seen by nobody.
    last = page.split("Last seen", 1)[1].split("</dd>", 1)[0]
    assert "not pasted yet" in last and recorded.date().isoformat() not in last


def test_it_shows_fix_ids_and_what_users_said_of_each_fix(client: Client, starter_kb: None) -> None:
    finding = decode_finding()
    fix = finding.fixes.order_by("position", "id").first()
    assert fix is not None
    for name, helped in (("ann", "yes"), ("bo", "yes"), ("cy", "no"), ("cy", "no")):
        client.force_login(User.objects.get_or_create(username=name)[0])
        client.post("/diagnose/feedback/", {"fix_id": fix.pk, "helped": helped})

    page = text_of(client.get(f"/findings/{finding.pk}/"))

    item = page.split(f'id="fix-{fix.pk}"', 1)[1].split("</li>", 1)[0]
    assert f"fix <code>{fix.pk}</code>" in item
    assert "2 fixed it · 1 did not help" in item


def test_list_figures_and_ordering_follow_pastes_and_feedback(
    client: Client, starter_kb: None
) -> None:
    decode = decode_finding()
    triton = Finding.objects.get(title__startswith="Triton attention backend asserts")
    paste(client)
    fix = triton.fixes.first()
    assert fix is not None
    feedback.vote(fix, feedback.Voter("token:1"), helped=True)

    figures = occurrences.list_figures([decode.pk, triton.pk])
    by_last_seen = occurrences.with_figures(Finding.objects.all()).order_by(
        "-last_seen", "-times_seen"
    )
    by_helped = occurrences.with_figures(Finding.objects.all()).order_by("-helped_count")

    assert (figures[decode.pk].times_seen, figures[triton.pk].times_seen) == (1, 0)
    assert figures[triton.pk].feedback.helped == 1
    assert by_last_seen.first() == decode  # the others were last seen when recorded
    assert by_helped.first() == triton


def first_result_title(page: str) -> str:
    found = re.search(r'class="title" href="/findings/\d+/">(.*?)</a>', page, re.S)
    assert found is not None
    return found.group(1)


def test_the_search_list_shows_and_sorts_by_last_seen_and_most_helped(
    client: Client, starter_kb: None
) -> None:
    triton = Finding.objects.get(title__startswith="Triton attention backend asserts")
    fix = triton.fixes.first()
    assert fix is not None
    client.force_login(User.objects.create_user("ann"))  # a vote needs someone to count
    voted = client.post("/diagnose/feedback/", {"fix_id": fix.pk, "helped": "yes"})
    assert voted.status_code == 200
    paste(client)

    by_last_seen = text_of(client.get("/", {"ordering": "last_seen"}))
    by_helped = text_of(client.get("/", {"ordering": "helped"}))

    assert first_result_title(by_last_seen).startswith("First decode request kills the server")
    first_item = by_last_seen.split('<li class="finding">', 2)[1]
    assert "seen 1 time, last" in first_item
    assert first_result_title(by_helped).startswith("Triton attention backend asserts")
    assert "1 fixed it · 0 did not help" in by_helped.split('<li class="finding">', 2)[1]
    assert "<code>not self.nsa_kv_cache_store_fp8</code>" in first_result_title(by_helped)


def test_the_framework_share_names_the_release_or_says_it_was_not_given(
    client: Client, starter_kb: None
) -> None:
    from kb.services.stored_diagnoses import diagnose_and_store

    text = fixture_text("decode_crash_rtx6000.txt")
    diagnose_and_store(text, framework="sglang", framework_version="0.5.9")
    diagnose_and_store(text, framework="sglang")

    figures = occurrences.of_finding(decode_finding())

    assert {(share.label, share.count) for share in figures.frameworks} == {
        ("sglang 0.5.9", 1),
        ("sglang, release not given", 1),
    }
    page = sidebar(text_of(client.get(f"/findings/{decode_finding().pk}/")))
    assert "Framework release" in page and "sglang, release not given" in page


def test_a_fingerprint_never_pasted_says_so_and_when_it_was_written_down(
    client: Client, starter_kb: None
) -> None:
    finding = Finding.objects.get(title__startswith="Triton attention backend asserts")

    page = sidebar(text_of(client.get(f"/findings/{finding.pk}/")))

    fingerprints = page.split("By fingerprint", 1)[1].split("</ul>", 1)[0]
    assert "not pasted yet · written down" in fingerprints
    assert "0 seen" not in fingerprints and "first " not in fingerprints
