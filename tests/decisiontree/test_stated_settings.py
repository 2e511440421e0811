"""Settings an error message prints in an object's repr say what the server ran with.

vLLM's attention selector raises with its whole config:
`No valid attention backend found for cuda with AttentionSelectorConfig(head_size=576,
dtype=torch.bfloat16, kv_cache_dtype=auto, ...)`. A fix setting what the message shows
already ran cannot be the one to try first.
"""

from __future__ import annotations

from decisiontree.context import build_context
from decisiontree.diagnose import diagnose
from decisiontree.graph import build_graph
from decisiontree.records import Change, ChangeAction, Condition, FindingRecord, FixRecord, Outcome

_PREFIX = "(EngineCore_DP0 pid=2211) ERROR 11-30 14:02:11 [core.py:842] "


def selector_failure(kv_cache_dtype: str, reasons: str) -> str:
    frames = (
        "Traceback (most recent call last):",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/attention/selector.py", '
        "line 97, in get_attn_backend",
        "    attention_cls = current_platform.get_attn_backend_cls(",
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/platforms/cuda.py", '
        "line 402, in get_attn_backend_cls",
        "    raise ValueError(",
        "ValueError: No valid attention backend found for cuda with AttentionSelectorConfig("
        f"head_size=576, dtype=torch.bfloat16, kv_cache_dtype={kv_cache_dtype}, "
        "block_size=None, use_mla=True, has_sink=False, use_sparse=False, "
        f"attn_type=decoder). Reasons: {{{reasons}}}.",
    )
    return "".join(_PREFIX + line + "\n" for line in frames)


FP8_REFUSED = selector_failure(
    "fp8_e4m3",
    "TRITON_MLA: [kv_cache_dtype not supported], FLASHMLA: [kv_cache_dtype not supported]",
)
CAPABILITY_REFUSED = selector_failure(
    "auto",
    "FLASHINFER_MLA: [compute capability not supported], "
    "CUTLASS_MLA: [compute capability not supported], TRITON_MLA: [head_size not supported]",
)

AUTO_KV = FixRecord(
    1,
    "Leave the KV cache in the model's dtype: --kv-cache-dtype auto",
    (Change(ChangeAction.SET_FLAG, "kv-cache-dtype", "auto"),),
    Outcome.RESOLVES,
)
OTHER_BACKEND = FixRecord(
    2,
    "Pick a backend the GPU has: --attention-backend TRITON_MLA",
    (Change(ChangeAction.SET_FLAG, "attention-backend", "TRITON_MLA"),),
    Outcome.PARTIAL,
)


def selector_finding() -> FindingRecord:
    return FindingRecord(
        id=1,
        title="vLLM finds no attention backend for the KV cache dtype",
        kind="incompatibility",
        cause="Every attention backend refused the combination the selector was given",
        samples=(FP8_REFUSED,),
        conditions=(Condition("framework", "vllm"),),
        fixes=(AUTO_KV, OTHER_BACKEND),
    )


def test_the_settings_an_error_prints_in_a_repr_fill_the_context() -> None:
    context = build_context(CAPABILITY_REFUSED)

    assert context.framework == "vllm"
    assert context.flags["kv-cache-dtype"] == "auto"
    assert context.sources["flag.kv-cache-dtype"] == "message"
    assert context.flags["dtype"] == "bfloat16"  # torch.bfloat16, one of the flag's choices
    # Unset (None) and fields that are no flag (head_size, use_mla) say nothing.
    assert "block-size" not in context.flags
    assert not {"head-size", "use-mla"} & set(context.flags)


def test_a_value_given_at_launch_wins_over_a_repr() -> None:
    launch = "vllm serve deepseek-ai/DeepSeek-V2-Lite --kv-cache-dtype fp8"

    context = build_context(CAPABILITY_REFUSED, launch_command=launch)

    assert context.flags["kv-cache-dtype"] == "fp8"
    assert context.sources["flag.kv-cache-dtype"] == "launch_command"


def test_a_call_in_a_scripts_source_that_passes_names_states_nothing() -> None:
    script = (
        "Traceback (most recent call last):\n"
        '  File "/home/dev/serve.py", line 12, in <module>\n'
        "    llm = LLM(model=args.model, block_size=page, kv_cache_dtype=kv_dtype)\n"
        '  File "/usr/local/lib/python3.12/dist-packages/vllm/entrypoints/llm.py", line 9\n'
        "RuntimeError: engine failed\n"
    )

    context = build_context(script)

    assert context.framework == "vllm"
    assert not {"block-size", "kv-cache-dtype"} & set(context.flags)


def test_a_fix_the_paste_shows_already_ran_comes_after_the_others_and_says_where() -> None:
    graph = build_graph([selector_finding()])

    result = diagnose(CAPABILITY_REFUSED, build_context(CAPABILITY_REFUSED), graph)

    assert [fix.fix.id for fix in result.fixes] == [OTHER_BACKEND.id, AUTO_KV.id]
    applied = result.fixes[-1]
    assert applied.already_applied
    assert applied.why[-1].detail.endswith("; the paste shows it already ran with this")


def test_with_the_fp8_cache_the_message_shows_the_dtype_fix_stays_first() -> None:
    graph = build_graph([selector_finding()])
    paste = FP8_REFUSED.replace("pid=2211", "pid=4410")

    result = diagnose(paste, build_context(paste), graph)

    assert result.context.flags["kv-cache-dtype"] == "fp8_e4m3"
    assert result.fixes[0].fix.id == AUTO_KV.id
    assert not result.fixes[0].already_applied
