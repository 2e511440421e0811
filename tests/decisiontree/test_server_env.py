"""What a fix may set in a GPU host's environment when it is validated.

A finding's `set_env` change reaches a real host's shell; only the vetted serving knobs
of decisiontree/data/server_env.json may, with values that cannot name a file. Every
reader (ingest, the API, the admin, the launch builder) asks the same two functions.
"""

from __future__ import annotations

import pytest

from decisiontree.records import Change, ChangeAction
from decisiontree.server_env import change_problem, fix_env_problem, runnable_changes


@pytest.mark.parametrize(
    ("name", "value"),
    [
        ("PYTORCH_CUDA_ALLOC_CONF", "expandable_segments:True"),  # listed by name
        ("NCCL_P2P_DISABLE", "1"),  # one of NCCL's knobs, by pattern
        ("VLLM_ATTENTION_BACKEND", "FLASHINFER"),
        ("CUDA_VISIBLE_DEVICES", None),  # set to nothing
    ],
)
def test_a_fix_may_set_a_vetted_serving_knob(name: str, value: str | None) -> None:
    assert fix_env_problem(name, value) is None


@pytest.mark.parametrize("name", ["LD_PRELOAD", "PYTHONPATH", "PYTHONWARNINGS", "BROWSER"])
def test_a_fix_may_not_set_a_variable_that_changes_which_code_runs(name: str) -> None:
    assert fix_env_problem(name, "x") == (
        f"{name} is not a vetted serving knob (CUDA, NCCL, PyTorch allocator, "
        "SGLang or vLLM switches); a fix cannot set it"
    )


def test_a_knob_refused_by_name_says_why() -> None:
    assert fix_env_problem("VLLM_ALLOW_INSECURE_SERIALIZATION", "1") == (
        "VLLM_ALLOW_INSECURE_SERIALIZATION is refused: lets vLLM's processes unpickle "
        "messages: code execution for whoever can send one"
    )


@pytest.mark.parametrize(
    ("name", "why"),
    [
        ("NCCL_TOPO_FILE", "names a file"),
        ("SGLANG_CACHE_DIR", "names a folder (a cache of compiled kernels is code)"),
    ],
)
def test_a_knob_that_names_a_file_is_refused_though_its_prefix_is_vetted(
    name: str, why: str
) -> None:
    assert fix_env_problem(name, "1") == f"{name} is refused: it {why}"


@pytest.mark.parametrize("value", ["/tmp/libhook.so", "$(id)", "a'b", "~/cache", "x" * 201])
def test_a_value_that_could_name_a_file_or_run_something_is_refused(value: str) -> None:
    assert fix_env_problem("NCCL_DEBUG", value) == (
        "the value of NCCL_DEBUG may only hold letters, digits, spaces and . , : ; = + @ % ^ * _ -"
        " (at most 200 characters): no paths, quotes or `$`"
    )


@pytest.mark.parametrize("name", ["NCCL-DEBUG", "1NCCL", "NCCL DEBUG", ""])
def test_a_name_a_shell_would_not_read_as_one_variable_is_refused(name: str) -> None:
    assert fix_env_problem(name, "1") == (
        f"{name!r} is not an environment variable name (letters, digits, _; no digit first)"
    )


def test_only_an_environment_change_is_judged_by_the_environment_rules() -> None:
    assert change_problem(Change(ChangeAction.SET_FLAG, "LD_PRELOAD", "x")) is None
    assert change_problem(Change(ChangeAction.SET_ENV, "LD_PRELOAD", "x")) is not None


def test_a_refused_change_is_kept_as_words_and_never_set_on_a_host() -> None:
    preload = Change(ChangeAction.SET_ENV, "LD_PRELOAD", "/opt/hook.so")
    allowed = Change(ChangeAction.SET_ENV, "NCCL_P2P_DISABLE", "1")
    flag = Change(ChangeAction.SET_FLAG, "tp-size", "2")
    assert runnable_changes([preload, allowed, flag]) == (
        Change(
            ChangeAction.OTHER,
            "LD_PRELOAD",
            "LD_PRELOAD=/opt/hook.so (not run: LD_PRELOAD is not a vetted serving knob "
            "(CUDA, NCCL, PyTorch allocator, SGLang or vLLM switches); a fix cannot set it)",
        ),
        allowed,
        flag,
    )


def test_a_vetted_knob_set_to_a_path_is_not_run_either() -> None:
    path = Change(ChangeAction.SET_ENV, "NCCL_DEBUG", "/tmp/libhook.so")
    assert change_problem(path) is not None
    assert runnable_changes([path])[0].action is ChangeAction.OTHER
