"""Before a launch runs: the findings whose stated conditions its setup meets."""

from __future__ import annotations

from decisiontree.context import build_context
from decisiontree.graph import build_graph
from decisiontree.launch_check import check_launch
from decisiontree.records import Change, ChangeAction, Condition, FixRecord, Outcome
from decisiontree.vocabulary import load
from tests.decisiontree.test_walk import finding

SGLANG = Condition("framework", "sglang")
BLACKWELL = Condition("gpu.arch", "sm_120")
FP8_KV = Condition("flag.kv-cache-dtype", "bf16", negate=True)
BF16_KV = FixRecord(
    1,
    "--kv-cache-dtype bf16",
    (Change(ChangeAction.SET_FLAG, "kv-cache-dtype", "bf16"),),
    Outcome.RESOLVES,
)
FA3_TO_FLASHINFER = FixRecord(
    2,
    "--attention-backend flashinfer",
    (Change(ChangeAction.SET_FLAG, "attention-backend", "flashinfer"),),
    Outcome.RESOLVES,
)
GRAPHS_OFF = FixRecord(
    3,
    "--disable-cuda-graph",
    (Change(ChangeAction.SET_FLAG, "disable-cuda-graph", "true"),),
    Outcome.PARTIAL,
)
ANY_OOM = FixRecord(4, "lower --mem-fraction-static by 0.05", (), Outcome.PROPOSED)
GRAPH = build_graph(
    [
        finding(
            1, "AssertionError: fp8 KV on sm120", (BF16_KV,), conditions=(SGLANG, BLACKWELL, FP8_KV)
        ),
        finding(
            2,
            "RuntimeError: fa3 needs sm90",
            (FA3_TO_FLASHINFER,),
            conditions=(SGLANG, BLACKWELL, Condition("flag.attention-backend", "fa3")),
        ),
        finding(
            3,
            "RuntimeError: graph capture hang",
            (GRAPHS_OFF,),
            conditions=(SGLANG, Condition("flag.disable-cuda-graph", "false")),
        ),
        finding(4, "RuntimeError: Not enough memory", (ANY_OOM,), conditions=(SGLANG,)),
    ]
)
SERVER = "python -m sglang.launch_server --model-path Qwen/Qwen3-8B"


def check(launch: str, gpu: str = "RTX PRO 6000"):
    context = build_context(launch_command=launch, gpu=gpu)
    return check_launch(context, GRAPH, load())


def risks(launch: str, gpu: str = "RTX PRO 6000") -> list[tuple[int, bool]]:
    return [(risk.finding.id, risk.certain) for risk in check(launch, gpu).risks]


def test_a_launch_meeting_every_condition_is_warned_with_the_fix_applied() -> None:
    result = check(f"{SERVER} --attention-backend fa3 --kv-cache-dtype fp8_e4m3")

    first, second, third = result.risks
    # most conditions met first: 1 and 2 meet three each, 3 two
    assert [(r.finding.id, r.certain) for r in result.risks] == [(1, True), (2, True), (3, True)]
    assert first.fixes[0].command_changes == ("--kv-cache-dtype bf16",)
    assert [c.key for c in first.met] == ["flag.kv-cache-dtype", "framework", "gpu.arch"]
    assert second.fixes[0].command_changes == ("--attention-backend flashinfer",)
    assert third.open == ()


def test_a_contradicted_condition_rules_the_finding_out() -> None:
    """On a Hopper GPU with a BF16 cache, neither Blackwell finding applies."""
    assert risks(f"{SERVER} --attention-backend fa3 --kv-cache-dtype bf16", gpu="H100") == [
        (3, True)
    ]


def test_a_flag_left_to_the_framework_keeps_a_finding_that_needs_it_not_to_be_a_value() -> None:
    """Unset, SGLang picks the KV cache dtype itself: it may be FP8 (the finding stays
    open); a finding needing --attention-backend fa3 needs the user to write it."""
    result = check(SERVER)

    assert [(r.finding.id, r.certain) for r in result.risks] == [(3, True), (1, False)]
    assert [c.key for c in result.risks[1].open] == ["flag.kv-cache-dtype"]


def test_an_unset_flag_with_a_default_is_judged_at_its_default() -> None:
    """--disable-cuda-graph defaults to false: the finding that needs it false applies;
    written true, it is ruled out."""
    assert (3, True) in risks(SERVER)
    assert 3 not in [finding for finding, _ in risks(f"{SERVER} --disable-cuda-graph")]


def test_why_says_how_a_flag_left_unset_was_judged() -> None:
    """An unset flag is judged at its default or left to the framework, and its why says
    which, not that the setting is unknown."""
    by_id = {risk.finding.id: risk for risk in check(SERVER).risks}

    def detail(finding_id: int, key: str) -> str:
        [step] = [s for s in by_id[finding_id].why if s.key == key]
        return step.detail

    assert detail(3, "flag.disable-cuda-graph").endswith("here not set, so false (met)")
    assert detail(1, "flag.kv-cache-dtype").endswith(
        "here not set: sglang chooses at start-up (unknown)"
    )
    assert detail(1, "gpu.arch").endswith("here sm_120 (met)")


def test_a_finding_that_states_only_the_framework_is_not_named() -> None:
    assert 4 not in [finding for finding, _ in risks(SERVER)]


def test_a_misspelt_flag_is_a_problem_of_the_launch() -> None:
    [problem] = check(f"{SERVER} --kv-cache-dytpe fp8_e4m3").flag_problems

    assert (problem.written, problem.instead) == ("--kv-cache-dytpe", "--kv-cache-dtype")


def test_conditions_read_off_where_a_finding_was_seen_only_rule_it_out() -> None:
    """Stated: Blackwell. Seen with an FP8 KV cache (derived): a BF16 launch is not warned,
    and a launch that matches only the derived facts is not named for them."""
    seen_fp8 = Condition("flag.kv-cache-dtype", "fp8_e4m3", derived=True)
    on_blackwell = finding(
        5, "AssertionError: store", (BF16_KV,), conditions=(SGLANG, BLACKWELL, seen_fp8)
    )
    only_seen = finding(6, "RuntimeError: x", (BF16_KV,), conditions=(SGLANG, seen_fp8))
    graph = build_graph([on_blackwell, only_seen])

    def named(launch: str) -> list[int]:
        context = build_context(launch_command=launch, gpu="RTX PRO 6000")
        return [risk.finding.id for risk in check_launch(context, graph, load()).risks]

    assert named(f"{SERVER} --kv-cache-dtype fp8_e4m3") == [5]
    assert named(f"{SERVER} --kv-cache-dtype bf16") == []


def test_past_the_first_twenty_the_rest_are_counted_not_told() -> None:
    many = build_graph(
        [
            finding(n, f"RuntimeError: case {n}", (BF16_KV,), conditions=(SGLANG, BLACKWELL))
            for n in range(1, 26)
        ]
    )
    context = build_context(launch_command=SERVER, gpu="RTX PRO 6000")

    result = check_launch(context, many, load())

    assert [risk.finding.id for risk in result.risks] == list(range(1, 21))
    assert result.more == 5
