"""Every diagnosis is kept and has its own page: a link to paste into a chat thread."""

from __future__ import annotations

import re

import pytest
from django.conf import settings
from django.contrib.auth.models import User
from django.test import Client

from decisiontree.traceback import InputRejected
from kb.models import Finding, StoredDiagnosis
from kb.services.stored_diagnoses import diagnose_and_store
from tests.web.conftest import RTX_LAUNCH, decode_finding, fixture_text
from tests.web.test_pages import first_command

pytestmark = pytest.mark.django_db

PERMALINK = re.compile(r"^/diagnose/([A-Za-z0-9_-]{22,})/#diagnosis$")


def text_of(response) -> str:  # type: ignore[no-untyped-def]
    return response.content.decode()


def post_paste(client: Client, **data: str):  # type: ignore[no-untyped-def]
    paste = {"text": fixture_text("decode_crash_rtx6000.txt"), **data}
    return client.post("/diagnose/", paste)


def test_it_stores_a_pasted_diagnosis_and_sends_the_browser_to_its_page(
    client: Client, starter_kb: None
) -> None:
    response = post_paste(client, gpu="RTX PRO 6000", launch_command=RTX_LAUNCH)

    assert response.status_code == 303
    link = PERMALINK.match(response["Location"])
    assert link is not None, response["Location"]
    record = StoredDiagnosis.objects.get()
    assert record.slug == link.group(1)
    assert record.text == fixture_text("decode_crash_rtx6000.txt")
    assert (record.gpu, record.launch_command, record.channel) == (
        "RTX PRO 6000",
        RTX_LAUNCH,
        "web",
    )
    assert record.match == "known"
    assert record.finding == decode_finding()
    assert record.seen_arch == "sm_120"
    assert record.created_by is None and record.asked_by == "anonymous"


def test_it_shows_the_same_answer_to_someone_else_who_opens_the_link(
    client: Client, starter_kb: None
) -> None:
    location = post_paste(client, gpu="RTX PRO 6000", launch_command=RTX_LAUNCH)["Location"]
    record = StoredDiagnosis.objects.get()
    first_fix = record.answer["fixes"][0]

    response = Client().get(location.split("#")[0])

    page = text_of(response)
    assert response.status_code == 200
    assert response["Cache-Control"] == "private, no-store"
    assert "noindex" in response["X-Robots-Tag"]
    assert f'id="fix-{first_fix["fix"]["id"]}"' in page.split('class="fix"', 2)[1][:40]
    assert first_command(page) == first_fix["corrected_command"]
    assert "--kv-cache-dtype bf16" in first_command(page)
    assert "Known issue" in page
    assert record.answer["signature"]["exception_type"] in page


def test_it_keeps_the_pastes_of_two_people_apart(client: Client, starter_kb: None) -> None:
    post_paste(client)
    post_paste(client)

    slugs = list(StoredDiagnosis.objects.values_list("slug", flat=True))
    assert len(set(slugs)) == 2


def test_it_answers_404_for_a_link_nobody_was_given(client: Client, starter_kb: None) -> None:
    post_paste(client)
    record = StoredDiagnosis.objects.get()

    assert client.get(f"/diagnose/{record.slug[:-1]}x/").status_code == 404
    assert client.get("/diagnose/" + "a" * 200 + "/").status_code == 404
    assert client.get(f"/diagnose/{record.pk}/").status_code == 404  # the row id is no link


def test_it_records_who_asked(client: Client, starter_kb: None) -> None:
    alice = User.objects.create_user("alice", password="pw-alice-123")
    client.force_login(alice)

    post_paste(client)

    record = StoredDiagnosis.objects.get()
    assert record.created_by == alice
    assert "by alice" in text_of(client.get(record.get_absolute_url()))


def test_it_keeps_an_answered_question_as_a_refinement_of_the_first_diagnosis(
    client: Client, hopper_variant: Finding
) -> None:
    post_paste(client)
    first = StoredDiagnosis.objects.get()
    page = text_of(client.get(first.get_absolute_url()))
    assert f'name="refines" value="{first.slug}"' in page
    question = re.search(r'name="answer" value="([^"]+)"', page)
    assert question is not None

    response = post_paste(client, answer=question.group(1), refines=first.slug)

    second = StoredDiagnosis.objects.exclude(pk=first.pk).get()
    assert response["Location"].startswith(second.get_absolute_url())
    assert second.refines == first
    key, _, value = question.group(1).partition("=")
    assert second.answers == {key: value}


def test_it_stores_nothing_for_a_paste_it_refuses(client: Client, starter_kb: None) -> None:
    response = client.post("/diagnose/", {"text": "\x7fELF\x02\x01\x00\x00\x00garbage"})

    assert response.status_code == 400
    assert not StoredDiagnosis.objects.exists()


def test_it_needs_a_csrf_token_to_store_a_diagnosis(starter_kb: None) -> None:
    strict = Client(enforce_csrf_checks=True)

    response = strict.post("/diagnose/", {"text": fixture_text("decode_crash_rtx6000.txt")})

    assert response.status_code == 403
    assert not StoredDiagnosis.objects.exists()


def test_it_sends_htmx_to_the_new_page_with_a_full_load(client: Client, starter_kb: None) -> None:
    response = client.post(
        "/diagnose/",
        {"text": fixture_text("decode_crash_rtx6000.txt"), "answer": "gpu.arch=sm_120"},
        headers={"HX-Request": "true"},
    )

    assert response.status_code == 200
    newest = StoredDiagnosis.objects.first()
    assert newest is not None
    assert response["HX-Redirect"] == newest.get_absolute_url() + "#diagnosis"


def test_it_lets_only_who_asked_delete_a_diagnosis(client: Client, starter_kb: None) -> None:
    alice = User.objects.create_user("alice", password="pw-alice-123")
    client.force_login(alice)
    post_paste(client)
    record = StoredDiagnosis.objects.get()
    delete_url = f"/diagnose/{record.slug}/delete/"

    assert Client().post(delete_url).status_code == 403
    bob = Client()
    bob.force_login(User.objects.create_user("bob", password="pw-bob-1234"))
    assert bob.post(delete_url).status_code == 403
    assert "Delete this diagnosis" not in text_of(bob.get(record.get_absolute_url()))

    response = client.post(delete_url)

    assert response.status_code == 302
    assert not StoredDiagnosis.objects.exists()
    assert client.get(record.get_absolute_url()).status_code == 404


# --- the service the API builds on ----------------------------------------------------------


def test_the_service_returns_the_record_the_page_shows(starter_kb: None) -> None:
    record = diagnose_and_store(
        fixture_text("decode_crash_rtx6000.txt"),
        launch_command=RTX_LAUNCH,
        gpu="RTX PRO 6000",
        channel=StoredDiagnosis.Channel.API,
        requester="token ci-bot",
    )

    assert record.pk is not None
    assert record.html_url == settings.SITE_URL + f"/diagnose/{record.slug}/"
    assert record.asked_by == "token ci-bot"
    first = record.answer["fixes"][0]
    assert first["corrected_command"].startswith("python -m sglang.launch_server")
    assert "--kv-cache-dtype bf16" in first["corrected_command"]
    assert record.answer["match"] == "known"
    assert (record.answer["id"], record.answer["html_url"]) == (record.slug, record.html_url)
    page = text_of(Client().get(record.get_absolute_url()))
    assert first_command(page) == first["corrected_command"]


def test_the_service_leaves_the_corrected_command_empty_without_a_launch(
    starter_kb: None,
) -> None:
    record = diagnose_and_store(fixture_text("decode_crash_rtx6000.txt"))

    assert record.answer["fixes"]
    assert all(entry["corrected_command"] is None for entry in record.answer["fixes"])


def test_the_service_stores_nothing_when_it_refuses_the_input(starter_kb: None) -> None:
    with pytest.raises(InputRejected):
        diagnose_and_store("\x7fELF\x02\x01\x00\x00garbage")

    assert not StoredDiagnosis.objects.exists()


def test_the_answer_renders_code_in_titles_and_causes(client: Client, starter_kb: None) -> None:
    paste = (
        '  File "/srv/sglang/python/sglang/srt/mem_cache/memory_pool.py", line 1498, in set_kv_buffer\n'
        "    assert not self.nsa_kv_cache_store_fp8\n"
        "AssertionError\n"
    )
    location = client.post("/diagnose/", {"text": paste})["Location"]

    page = text_of(client.get(location.split("#")[0]))

    sources = re.findall(r'<p class="muted source">(.*?)</p>', page, re.S)
    assert sources
    assert any("<code>not self.nsa_kv_cache_store_fp8</code>" in line for line in sources)
    assert not any("`" in line for line in sources)
    steps = re.findall(r'<li class="step step-cause[^"]*">(.*?)</li>', page, re.S)
    assert steps and not any("`" in step for step in steps)


def verdict_of(client: Client, location: str) -> str:
    """The verdict's header of the diagnosis page at `location`."""
    page = text_of(client.get(location))
    return page.split('<header class="verdict', 1)[1].split("</header>", 1)[0]


def test_the_verdict_quotes_the_error_as_pasted_not_its_normalised_signature(
    client: Client, starter_kb: None
) -> None:
    verdict = verdict_of(client, post_paste(client, gpu="RTX PRO 6000")["Location"])

    assert (
        "<code>torch.AcceleratorError: CUDA error: device-side assert triggered</code>" in verdict
    )
    assert "or element &lt; 0` failed.</code>" in verdict  # the kernel's own line, its 0 kept
    assert "&lt;num&gt;" not in verdict
    # Its frames may wrap after a slash on a phone, never inside a file name.
    assert (
        "<code>sglang/<wbr>srt/<wbr>managers/<wbr>scheduler.py:event_loop_overlap</code>" in verdict
    )


def test_the_verdict_quotes_a_cuda_error_raised_as_runtimeerror_not_the_hint_after_it(
    client: Client, starter_kb: None
) -> None:
    # Older torch raises a CUDA error as RuntimeError, newer as AcceleratorError; the
    # signature says the second, and the verdict still quotes the line as it was pasted.
    paste = (
        "ERROR 12-01 10:00:00 engine.py:120] RuntimeError: CUDA error: an illegal memory"
        " access was encountered\n"
        "CUDA kernel errors might be asynchronously reported at some other API call\n"
    )
    verdict = verdict_of(client, client.post("/diagnose/", {"text": paste})["Location"])

    assert "<code>RuntimeError: CUDA error: an illegal memory access was encountered</code>" in (
        verdict
    )
    assert "asynchronously" not in verdict


def test_the_verdict_quotes_a_bare_assertion_error_with_the_assert_that_raised_it(
    client: Client, starter_kb: None
) -> None:
    # Python prints a failed `assert x` as a bare "AssertionError": what failed is the
    # statement in the frame above it.
    paste = (
        "Traceback (most recent call last):\n"
        '  File "/opt/sglang/python/sglang/srt/mem_cache/memory_pool.py", line 1466, in '
        "set_kv_buffer\n"
        "    assert not self.nsa_kv_cache_store_fp8\n"
        "AssertionError\n"
    )
    verdict = verdict_of(client, client.post("/diagnose/", {"text": paste})["Location"])

    assert "<code>AssertionError: assert not self.nsa_kv_cache_store_fp8</code>" in verdict


def test_the_decision_path_says_how_a_renamed_exception_type_was_pasted(
    client: Client, starter_kb: None
) -> None:
    """The path starts at the signature's type, AcceleratorError; beside a paste that says
    RuntimeError it notes that, and says nothing when the paste used that type."""
    older_torch = (
        "RuntimeError: CUDA error: device-side assert triggered\n"
        "Assertion 'probability tensor contains either inf, nan or element < 0' failed.\n"
    )
    renamed = text_of(client.get(client.post("/diagnose/", {"text": older_torch})["Location"]))
    same = text_of(client.get(post_paste(client, gpu="RTX PRO 6000")["Location"]))

    def root(page: str) -> list[str]:
        tree = page.split('<ol class="path-tree"', 1)[1].split(">", 1)[1]
        return re.sub(r"<[^>]+>", "", tree.split("<ol>", 1)[0]).split()

    assert root(renamed) == ["AcceleratorError", "(pasted", "as", "RuntimeError)"]
    assert root(same) == ["AcceleratorError"]


def test_each_suggested_fix_says_how_many_it_fixed_and_did_not_help(
    client: Client, starter_kb: None
) -> None:
    location = post_paste(client, gpu="RTX PRO 6000", launch_command=RTX_LAUNCH)["Location"]
    first, second = (
        entry["fix"]["id"] for entry in StoredDiagnosis.objects.get().answer["fixes"][:2]
    )
    for name in ("ann", "bo"):  # two people; the second asks again and changes nothing
        client.force_login(User.objects.get_or_create(username=name)[0])
        voted = client.post("/diagnose/feedback/", {"fix_id": first, "helped": "yes"})
        assert voted.status_code == 200
    client.post("/diagnose/feedback/", {"fix_id": first, "helped": "yes"})
    client.logout()  # an anonymous reader sees the figures too

    page = text_of(client.get(location))

    def card(fix_id: int) -> str:
        return page.split(f'id="fix-{fix_id}"', 1)[1].split('<li class="fix"', 1)[0]

    assert "2 fixed it · 0 did not help" in card(first)
    assert "0 fixed it · 0 did not help" in card(second)
