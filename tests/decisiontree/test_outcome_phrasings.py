"""The verdict of a sentence told in the many ways people tell it: inflections, ellipses,
figures in other units, curly apostrophes, a failure ruled out, a hope not met."""

import pytest

from decisiontree.documents.outcomes import judge_outcome
from decisiontree.records import Outcome


@pytest.mark.parametrize(
    "sentence",
    [
        "Setting --enforce-eager fixes the crash.",  # fix -> fixes
        "With --enforce-eager the benchmark finishes.",  # finish -> finishes
    ],
)
def test_a_verb_ending_in_x_or_sh_is_heard_in_its_es_form(sentence):
    assert judge_outcome(sentence) is Outcome.RESOLVES


def test_a_curly_apostrophe_negates_like_a_straight_one():
    assert judge_outcome("Switching to --attention-backend triton didn\u2019t help.") is (
        Outcome.NO_EFFECT
    )


@pytest.mark.parametrize(
    ("sentence", "outcome"),
    [
        ("--enforce-eager should have fixed the hang, and it did.", Outcome.RESOLVES),
        ("--enforce-eager should have fixed the hang, but it didn't.", Outcome.NO_EFFECT),
        ("--enforce-eager is supposed to fix the hang, and it does.", Outcome.RESOLVES),
        ("--enforce-eager is supposed to fix the hang, but it does not.", Outcome.NO_EFFECT),
    ],
)
def test_it_did_or_did_not_answers_the_hope_before_it(sentence, outcome):
    assert judge_outcome(sentence) is outcome


def test_there_was_no_failure_is_a_fix():
    assert judge_outcome("There was no crash with --enforce-eager.") is Outcome.RESOLVES


def test_worse_than_something_else_is_a_cost_beside_what_the_change_fixed():
    """Short prompts work, long ones still crash, latency is worse than before: a partial
    fix with a cost, not a change that made things worse."""
    sentence = (
        "With --max-num-seqs 32 short prompts serve fine; long prompts crash, "
        "and latency is worse than before."
    )
    assert judge_outcome(sentence) is Outcome.PARTIAL


def test_a_figure_that_stays_where_it_was_is_no_effect():
    assert judge_outcome("With --max-num-seqs 64 throughput stays at 310 tok/s.") is (
        Outcome.NO_EFFECT
    )


def test_a_hope_that_was_not_met_is_no_effect():
    assert judge_outcome("--cuda-graph-max-bs 64 gives 20 tok/s, not the 40 we expected.") is (
        Outcome.NO_EFFECT
    )


def test_fixing_named_as_the_purpose_is_not_a_fix():
    sentence = (
        "Lowering --gpu-memory-utilization to 0.8 was our way of fixing the OOM, but it still OOMs."
    )
    assert judge_outcome(sentence) is Outcome.NO_EFFECT


def test_a_clause_that_opens_by_ruling_a_failure_out_does_not_say_it_is_gone():
    sentence = (
        "Relaunching with --enforce-eager did not help: not an OOM, the same illegal memory access."
    )
    assert judge_outcome(sentence) is Outcome.NO_EFFECT


def test_a_figure_instead_of_another_in_other_units_compares_like_with_like():
    # 30 s against 2 min is faster, though 30 is more than 2
    assert judge_outcome("With --enforce-eager startup took 30 seconds instead of 2 minutes.") is (
        Outcome.RESOLVES
    )


def test_a_figure_instead_of_an_aside_is_read_without_failing():
    sentence = "With --max-num-seqs 64 throughput went up to 90 tok/s instead of, before that, 40."
    assert judge_outcome(sentence) is Outcome.RESOLVES


def test_a_failure_then_a_success_that_does_not_point_back_at_it_is_partial():
    sentence = (
        "The server crashed on long prompts; with --max-model-len 8192 the short ones serve fine."
    )
    assert judge_outcome(sentence) is Outcome.PARTIAL


@pytest.mark.parametrize(
    "sentence",
    [
        "The server died while warming up; --enforce-eager fixed the crash.",
        "The engine hung at startup; --disable-custom-all-reduce fixed the hang.",
        "Prefill ran into an OOM, and --chunked-prefill-size 2048 cured the OOM.",
    ],
)
def test_a_cure_whose_object_names_the_failure_just_told_resolves_it(sentence):
    # "fixed the crash" points back at the failure told before it as "fixed it" does: the
    # failure is the one cured, not one left over.
    assert judge_outcome(sentence) is Outcome.RESOLVES


def test_a_cure_of_one_failure_beside_another_still_standing_is_partial():
    sentence = "--enforce-eager fixed the crash, but decode still hangs after an hour."
    assert judge_outcome(sentence) is Outcome.PARTIAL


@pytest.mark.parametrize(
    ("sentence", "outcome"),
    [
        ("With --max-model-len 8192 the engine still ran out of memory.", Outcome.NO_EFFECT),
        ("After --max-num-seqs 64 it no longer runs out of memory.", Outcome.RESOLVES),
        ("Lowering --gpu-memory-utilization, we never ran out of memory again.", Outcome.RESOLVES),
        ("With --enforce-eager the workers ran out of memory as before.", Outcome.NO_EFFECT),
    ],
)
def test_running_out_of_memory_is_a_failure(sentence, outcome):
    assert judge_outcome(sentence) is outcome


@pytest.mark.parametrize(
    "sentence",
    [
        "The scheduler deadlocked under load; it was fixed by --disable-overlap-schedule.",
        "Capture hit an out-of-memory error; that got solved with --cuda-graph-max-bs 64.",
        "Loading the weights crashed the worker - the crash was fixed by --load-format safetensors.",
    ],
)
def test_a_failure_that_is_the_subject_of_a_passive_cure_is_the_one_cured(sentence):
    assert judge_outcome(sentence) is Outcome.RESOLVES


@pytest.mark.parametrize(
    "sentence",
    [
        "I ran the example from the quick start guide with --tp 2.",
        "The cold start took about four minutes with --load-format dummy.",
        "We reran the load test with --enforce-eager on.",
    ],
)
def test_a_success_verb_that_names_a_thing_reports_no_result(sentence):
    assert judge_outcome(sentence) is None


@pytest.mark.parametrize(
    "sentence",
    [
        "With --enforce-eager the workers start fine.",
        "With --enforce-eager the old replicas load in a minute.",
        "After --enforce-eager the engine did start.",
        "With --enforce-eager we got a clean start on both nodes.",
    ],
)
def test_a_bare_success_verb_after_its_subject_or_as_the_head_of_its_phrase_is_a_success(sentence):
    assert judge_outcome(sentence) is Outcome.RESOLVES


def test_a_sad_word_before_it_did_not_still_answers_the_hope():
    sentence = "--enforce-eager should have fixed the hang, but sadly it didn't."
    assert judge_outcome(sentence) is Outcome.NO_EFFECT


def test_it_did_help_is_a_fix_not_an_ellipsis():
    assert judge_outcome("I doubted --enforce-eager, but it did help.") is Outcome.RESOLVES


def test_a_figure_left_hanging_mid_sentence_is_read_without_its_second_value():
    sentence = "With --max-num-seqs 8 throughput dropped from 40 to... almost nothing."
    assert judge_outcome(sentence) is Outcome.WORSE


@pytest.mark.parametrize(
    "sentence",
    [
        "With --enforce-eager, prefill went from 900 ms to 300 ms.",  # time: lower is better
        "With --kv-cache-dtype fp8 each replica needs 38 GB instead of 70 GB.",  # memory
        "With --enable-prefix-caching the cache hit rate went from 20% to 75%.",  # a percentage
    ],
)
def test_the_unit_of_two_figures_says_which_way_is_better(sentence):
    assert judge_outcome(sentence) is Outcome.RESOLVES


def test_a_question_answered_it_did_reports_no_fix():
    """Nothing in the question was hoped of the change: "it did" confirms a fact."""
    sentence = "Someone asked if the server ran with --enforce-eager, and it did."
    assert judge_outcome(sentence) is None


def test_a_warning_about_what_a_flag_breaks_is_not_a_proposal():
    sentence = "The scheduler will deadlock if you enable --enable-chunked-prefill here."
    assert judge_outcome(sentence) is None


@pytest.mark.parametrize(
    ("sentence", "outcome"),
    [
        ("With --enforce-eager decode is still slow.", Outcome.NO_EFFECT),
        (
            "--num-scheduler-steps 8 helped; throughput is still far below the target.",
            Outcome.PARTIAL,
        ),
    ],
)
def test_still_short_of_the_goal_is_a_shortfall(sentence, outcome):
    assert judge_outcome(sentence) is outcome


def test_still_loading_after_minutes_is_not_a_success():
    sentence = "With --enforce-eager the server is still loading after ten minutes."
    assert judge_outcome(sentence) is None


def test_a_flag_between_a_negation_and_its_verb_does_not_widen_the_gap():
    assert judge_outcome("Not even --enforce-eager helped.") is Outcome.NO_EFFECT


# -- session 7: a hope answered, phrasal cures, gains of nothing, trades, a failure named again


@pytest.mark.parametrize(
    ("sentence", "outcome"),
    [
        ("We hoped --enforce-eager would stop the hang, but it did not.", Outcome.NO_EFFECT),
        ("I expected --enforce-eager to make the NaNs go away, and it did.", Outcome.RESOLVES),
        ("--enforce-eager was meant to fix the hang; sadly it didn't.", Outcome.NO_EFFECT),
        # a hope for no failure in particular, answered
        ("The hope was that --page-size 64 would keep memory flat; it didn't.", Outcome.NO_EFFECT),
    ],
)
def test_a_hope_told_in_the_past_is_answered_by_it_did_or_it_did_not(sentence, outcome):
    assert judge_outcome(sentence) is outcome


def test_a_hope_told_in_the_past_with_no_answer_is_no_plan():
    """The change was tried; what it did comes in another sentence, if at all."""
    assert judge_outcome("We hoped --enforce-eager would fix the hang.") is None


def test_a_hope_told_in_the_present_is_still_a_plan():
    assert judge_outcome("We hope --enforce-eager will fix the hang.") is Outcome.PROPOSED


def test_an_expected_failure_that_came_is_no_fix():
    assert judge_outcome("With --enforce-eager we expected it to OOM again, and it did.") is None


@pytest.mark.parametrize(
    ("sentence", "outcome"),
    [
        (
            "The scheduler deadlocked on the first batch; --watchdog-timeout 600 smoothed it out.",
            Outcome.RESOLVES,
        ),
        ("The pods kept restarting; --mem-fraction-static 0.8 sorted them out.", Outcome.RESOLVES),
        ("Setting --enforce-eager straightens it out.", Outcome.RESOLVES),
        ("Lowering --max-num-seqs ironed out the stalls.", Outcome.RESOLVES),
        ("Reinstalling the driver with --force did not clear it up.", Outcome.NO_EFFECT),
    ],
)
def test_a_phrasal_cure_is_read_with_its_object_between_the_parts(sentence, outcome):
    # "smoothed it out" after a failure points back at it: the failure is the one cured.
    assert judge_outcome(sentence) is outcome


@pytest.mark.parametrize(
    ("sentence", "outcome"),
    [
        ("Pinning triton==3.1.0 got rid of the illegal instruction.", Outcome.RESOLVES),
        ("Clearing ~/.cache/flashinfer didn't get rid of the NaNs.", Outcome.NO_EFFECT),
    ],
)
def test_getting_rid_of_a_failure_is_a_cure(sentence, outcome):
    assert judge_outcome(sentence) is outcome


@pytest.mark.parametrize(
    "sentence",
    [
        "Raising --batch-timeout won us nothing.",
        "Turning on --enable-expert-parallel gained nothing.",
        "A second replica with --dp 2 got us nowhere.",
    ],
)
def test_a_change_that_gained_nothing_had_no_effect(sentence):
    assert judge_outcome(sentence) is Outcome.NO_EFFECT


def test_a_change_that_gained_something_helped():
    assert judge_outcome("--enable-torch-compile bought us 15% more throughput.") is (
        Outcome.RESOLVES
    )


@pytest.mark.parametrize(
    ("sentence", "outcome"),
    [
        ("With --max-running-requests 64 the gateway still tips over.", Outcome.NO_EFFECT),
        ("With --enforce-eager the scheduler no longer keels over.", Outcome.RESOLVES),
    ],
)
def test_tipping_or_keeling_over_is_a_failure(sentence, outcome):
    assert judge_outcome(sentence) is outcome


@pytest.mark.parametrize(
    "sentence",
    [
        "Upgrading with --upgrade flashinfer exchanged the hang for a segfault at startup.",
        "--attention-backend triton swapped NaNs for an illegal memory access.",
        "The OOM is gone with --enforce-eager, but we traded it for a hang in decode.",
    ],
)
def test_trading_a_failure_for_another_is_worse(sentence):
    assert judge_outcome(sentence) is Outcome.WORSE


def test_swapping_a_part_is_a_change_not_a_new_failure():
    """The crash is the one told, not one the swap brought: a partial fix, not a worse one."""
    sentence = "--sampling-backend pytorch helps short prompts, but after we swap the sampler long prompts crash."
    assert judge_outcome(sentence) is Outcome.PARTIAL


@pytest.mark.parametrize(
    "sentence",
    [
        "Warmup died with a graph capture error; --disable-cuda-graph fixed the capture error.",
        "The engine crashed at load; --load-format safetensors fixed the load crashes.",
    ],
)
def test_a_cure_naming_the_failure_told_with_more_words_resolves_it(sentence):
    assert judge_outcome(sentence) is Outcome.RESOLVES


def test_a_cure_naming_another_failure_leaves_the_one_told_standing():
    sentence = "Decode hung after an hour; --skip-tokenizer-init fixed the tokenizer crash."
    assert judge_outcome(sentence) is Outcome.PARTIAL


@pytest.mark.parametrize(
    ("sentence", "outcome"),
    [
        # terse notes drop the subject; the hope is still told in the past
        ("Hoped --enforce-eager would help with the hang; it didn't.", Outcome.NO_EFFECT),
        # a participle beside a present hope does not put the hope in the past
        ("We hope the updated driver will fix the hang.", Outcome.PROPOSED),
        ("We hope updated drivers will fix the hang.", Outcome.PROPOSED),
        ("We reverted and hope --enforce-eager will help.", Outcome.PROPOSED),
        ("Those who ran it hope --enforce-eager will fix the hang.", Outcome.PROPOSED),
        ("We hope this was the cause and the patch will fix it.", Outcome.PROPOSED),
        # "was" before "meant" says the past
        ("The new wheel was meant to keep memory flat; it didn't.", Outcome.NO_EFFECT),
    ],
)
def test_only_a_hope_told_in_the_past_stops_being_a_plan(sentence, outcome):
    assert judge_outcome(sentence) is outcome


@pytest.mark.parametrize(
    ("sentence", "outcome"),
    [
        ("--enforce-eager works; we restarted the crashed workers.", Outcome.RESOLVES),
        ("The crashed workers serve fine with --enforce-eager.", Outcome.RESOLVES),
        # a failure verb opening the note is still a failure
        ("Crashed again with --enforce-eager just like this.", Outcome.NO_EFFECT),
    ],
)
def test_a_past_form_after_a_determiner_describes_the_noun_after_it(sentence, outcome):
    assert judge_outcome(sentence) is outcome


def test_a_failure_that_now_comes_only_sometimes_is_partly_fixed():
    assert judge_outcome("With --enforce-eager the crash now happens only under load.") is (
        Outcome.PARTIAL
    )


@pytest.mark.parametrize(
    ("sentence", "outcome"),
    [
        ("Another retry would be pointless here.", None),  # the action is before the modal
        ("Support asked detailed questions about --enforce-eager.", None),  # no action asked
        ("The maintainers suggest reinstalling flashinfer.", Outcome.PROPOSED),
        ("The maintainers suggest taking the nightly wheel.", Outcome.PROPOSED),
    ],
)
def test_advice_proposes_the_action_it_names_after_it(sentence, outcome):
    assert judge_outcome(sentence) is outcome


def test_a_failure_told_after_its_cure_is_one_left_over():
    sentence = "--enforce-eager cured it; then long prompts crashed the scheduler."
    assert judge_outcome(sentence) is Outcome.PARTIAL


def test_a_caveat_after_but_makes_a_success_partial():
    sentence = "Works with --mem-fraction-static 0.8, but the KV pool is smaller."
    assert judge_outcome(sentence) is Outcome.PARTIAL


def test_a_cure_others_report_is_a_proposal():
    assert judge_outcome("--enforce-eager reportedly fixes the hang.") is Outcome.PROPOSED


@pytest.mark.parametrize(
    "sentence",
    [
        "It OOMed during capture; --enforce-eager fixed the crash for good.",
        "Decode hit a problem on every long prompt; --enforce-eager fixed the problems.",
        "The scheduler hung at startup; solved by --disable-overlap-schedule.",
        "Warmup threw NCCL errors on two ranks; --disable-custom-all-reduce fixed the NCCL error.",
        "The scheduler started hanging under load; --disable-overlap-schedule fixed the load hang.",
        "Capture OOMed on the first rank; --cuda-graph-max-bs 128 fixed the capture OOM.",
        "Every long prompt hit an index error; --sampling-backend pytorch fixed the sampler's "
        "index error handling.",
        "The engine crashed at load; a restart with --enforce-eager fixed the load crashes.",
        "Prefill ran into an OOM; the OOM got solved with --chunked-prefill-size 2048.",
    ],
)
def test_a_cure_pointing_back_at_the_failure_told_resolves_it(sentence):
    assert judge_outcome(sentence) is Outcome.RESOLVES


@pytest.mark.parametrize(
    "sentence",
    [
        # the cured failure shares a word with the one told, not its failure
        "Decode hung after an hour; --skip-tokenizer-init fixed the decode crash.",
        "Decode stalled after an hour; --skip-tokenizer-init fixed the stale cache crash.",
        # the failure told is named after the cured one, not in its noun phrase
        "Decode stalled after an hour; --skip-tokenizer-init fixed the tokenizer crash and "
        "left the stall as it was.",
    ],
)
def test_a_cure_of_another_failure_leaves_the_one_told_standing(sentence):
    assert judge_outcome(sentence) is Outcome.PARTIAL


@pytest.mark.parametrize(
    "sentence",
    [
        "With the pinned driver we can serve again.",
        "After the rollback we can start the server on all eight GPUs.",
    ],
)
def test_can_before_a_success_verb_reports_what_the_change_made_possible(sentence):
    assert judge_outcome(sentence) is Outcome.RESOLVES


@pytest.mark.parametrize(
    "sentence",
    [
        "Same result with --enforce-eager.",
        "Tried the older driver: identical behaviour.",
    ],
)
def test_same_before_a_noun_of_the_outcome_is_no_change(sentence):
    assert judge_outcome(sentence) is Outcome.NO_EFFECT


def test_a_figure_of_merit_that_stayed_put_is_no_change():
    sentence = "Decode throughput stayed at 310 tok/s with the new build."
    assert judge_outcome(sentence) is Outcome.NO_EFFECT


def test_up_and_running_after_when_is_a_time_not_a_result():
    sentence = "Resident memory when up and running is the same as before."
    assert judge_outcome(sentence) is Outcome.NO_EFFECT


def test_a_change_of_exactly_the_same_within_margin_is_no_change():
    # same_within is 2 %: 250 -> 255 is on the line, and the line counts as no change.
    assert judge_outcome("Throughput went from 250 to 255 tok/s.") is Outcome.NO_EFFECT


def test_a_range_without_from_is_no_before_and_after():
    sentence = "Prefill takes 30 to 40 seconds per batch; the OOM is gone."
    assert judge_outcome(sentence) is Outcome.RESOLVES


def test_a_before_and_after_ending_the_clause_on_a_bare_number_is_read():
    assert judge_outcome("Decode throughput went from 41 to 95.") is Outcome.RESOLVES


def test_instead_of_followed_by_words_is_no_figure_pair():
    sentence = "The hang is gone; decode sits at 95 tok/s instead of the nightly's rate."
    assert judge_outcome(sentence) is Outcome.RESOLVES
