"""A paste's Python warnings are matched beside its errors: the warning may name the
cause that the error, printed after it, does not."""

from __future__ import annotations

from decisiontree.context import build_context
from decisiontree.diagnose import diagnose
from decisiontree.fingerprint import MAX_WARNINGS_MATCHED, log_warnings_beside_errors, signatures_of
from decisiontree.graph import build_graph
from decisiontree.records import Change, ChangeAction, FindingRecord, FixRecord, Outcome
from decisiontree.traceback import parse

TOO_OLD = (
    "UserWarning: CUDA initialization: The NVIDIA driver on your system is too old (found "
    "version {found}). Please update your GPU driver by downloading and installing a new "
    "version from the URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: "
    "https://pytorch.org to install a PyTorch version that has been compiled with your "
    "version of the CUDA driver. (Triggered internally at /pytorch/c10/cuda/CUDAFunctions.cpp:119.)"
)
# What vLLM printed: the driver's warning at import, then an error that does not say why.
VLLM_LOG = f"""INFO 12-01 10:00:01 [__init__.py:216] Automatically detected platform cuda.
/opt/venv/lib/python3.12/site-packages/torch/cuda/__init__.py:182: {TOO_OLD.format(found=12020)}
  return torch._C._cuda_getDeviceCount() > 0
ERROR 12-01 10:00:03 [engine.py:400] RuntimeError: No CUDA GPUs are available
"""
UPGRADE_DRIVER = FixRecord(
    1, "Upgrade the host's driver to R570 or newer",
    (Change(ChangeAction.PIN_VERSION, "nvidia-driver", "570"),), Outcome.RESOLVES,
)  # fmt: skip
DRIVER_TOO_OLD = FindingRecord(
    id=1,
    title="The NVIDIA driver is older than the wheels' CUDA",
    kind="crash",
    cause="PyTorch was built for a newer CUDA than the driver supports",
    samples=(
        "/usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py:228: "
        + TOO_OLD.format(found=12040),
    ),
    conditions=(),
    fixes=(UPGRADE_DRIVER,),
)
SMALLER_BATCH = FixRecord(
    2, "Lower --max-num-seqs", (Change(ChangeAction.SET_FLAG, "max-num-seqs", "64"),),
    Outcome.RESOLVES,
)  # fmt: skip
SAMPLER_OOM = FindingRecord(
    id=2,
    title="vLLM runs out of memory while warming up the sampler",
    kind="crash",
    cause="the sampler's warm-up allocates for max-num-seqs requests at once",
    samples=(
        "RuntimeError: CUDA out of memory occurred when warming up sampler with 1024 dummy "
        "requests. Please try lowering `max_num_seqs` or `gpu_memory_utilization` when "
        "initializing the engine.",
    ),
    conditions=(),
    fixes=(SMALLER_BATCH,),
)


def test_the_warning_that_names_the_cause_finds_its_finding() -> None:
    result = diagnose(VLLM_LOG, build_context(), build_graph([SAMPLER_OOM, DRIVER_TOO_OLD]))

    assert result.verdict != "none"
    assert [fix.fix.id for fix in result.fixes][:1] == [UPGRADE_DRIVER.id]


def test_the_error_still_heads_the_answer_and_its_words_are_its_own() -> None:
    first, *rest = signatures_of(parse(VLLM_LOG), warnings=True)

    assert first.exception_type.endswith("RuntimeError")
    assert "alternatively" not in first.terms
    assert [s.exception_type for s in rest] == ["Warning"]
    # Where PyTorch raised it is a place, not part of what it says.
    assert "driver on your system is too old" in rest[0].message
    assert not {"c10", "cudafunctions", "triggered"} & set(rest[0].terms)


def test_a_long_log_matches_only_its_last_few_warnings() -> None:
    subjects = ("tokenizer", "sampler", "scheduler", "loader", "router", "cache", "engine")
    deprecations = "\n".join(
        f"/opt/venv/lib/python3.12/site-packages/pkg/api.py:{i}: "
        f"FutureWarning: the {subject} setting is deprecated and will be removed"
        for i, subject in enumerate(subjects)
    )
    log = deprecations + "\nRuntimeError: No CUDA GPUs are available"
    signatures = signatures_of(parse(log), warnings=True)

    warned = [s.message for s in signatures if s.exception_type == "Warning"]
    assert len(warned) == MAX_WARNINGS_MATCHED
    assert "engine" in warned[-1] and not any("tokenizer" in m for m in warned)


# Deprecation notices every start-up prints, as a finding's sample and a paste both hold them.
NOTICES = (
    "/usr/local/lib/python3.10/dist-packages/transformers/utils/generic.py:441: FutureWarning: "
    "`torch.utils._pytree._register_pytree_node` is deprecated. Please use "
    "`torch.utils._pytree.register_pytree_node` instead.\n"
    "  _torch_pytree._register_pytree_node(\n"
    "/usr/local/lib/python3.10/dist-packages/pydantic/_internal/_fields.py:149: UserWarning: Field "
    '"model_name" has conflict with protected namespace "model_".\n'
)


def test_warnings_beside_a_findings_error_are_not_what_it_is_matched_on() -> None:
    noisy = FindingRecord(
        id=2,
        title=SAMPLER_OOM.title,
        kind="crash",
        cause=SAMPLER_OOM.cause,
        samples=(NOTICES + SAMPLER_OOM.samples[0],),
        conditions=(),
        fixes=(SMALLER_BATCH,),
    )
    paste = NOTICES + "ValueError: LoRA rank 128 is greater than max_lora_rank 64.\n"

    result = diagnose(paste, build_context(), build_graph([noisy]))

    assert result.verdict == "none"
    assert not result.fixes


# A server's log warning that names the cause, and a device-side assert that does not.
CHOSEN_BACKENDS = (
    "[2026-03-02 09:14:07] WARNING server_args.py:1177: Set NSA backends for fp8_e4m3 KV "
    "Cache: prefill=flashmla_auto, decode=flashmla_kv."
)
ASSERT_LOG = f"""{CHOSEN_BACKENDS}
[2026-03-02 09:20:51 TP5] Scheduler hit an exception: Traceback (most recent call last):
  File "/opt/venv/lib/python3.12/site-packages/sglang/srt/managers/scheduler.py", line 2702, in run_scheduler_process
    scheduler.event_loop_overlap()
RuntimeError: CUDA error: device-side assert triggered
"""
BF16_CACHE = FixRecord(
    3, "Serve with a 16-bit KV cache", (Change(ChangeAction.SET_FLAG, "kv-cache-dtype", "bf16"),),
    Outcome.RESOLVES,
)  # fmt: skip
FP8_BACKENDS = FindingRecord(
    id=3,
    title="An FP8 KV cache picks the flashmla_kv decode kernel",
    kind="crash",
    cause="the KV cache's dtype, not --attention-backend, chooses the sparse-attention kernels",
    samples=(CHOSEN_BACKENDS,),
    conditions=(),
    fixes=(BF16_CACHE,),
)


def test_a_log_warning_answers_when_the_error_beside_it_matches_nothing() -> None:
    result = diagnose(ASSERT_LOG, build_context(), build_graph([SAMPLER_OOM, FP8_BACKENDS]))

    assert [fix.fix.id for fix in result.fixes] == [BF16_CACHE.id]
    # The error itself is not the known one: "similar", and the why says through what.
    assert result.verdict == "similar"
    said = [step.detail for step in result.fixes[0].why if step.step == "signature"]
    assert said and said[0].startswith("a warning beside the error, not the error")
    assert "through a warning" in result.verdict_label
    assert [("Set NSA backends for fp8_e4m3" in w) for w in result.through_warnings] == [True]


def test_only_the_warning_a_finding_holds_is_named() -> None:
    other = "[2026-03-02 09:14:02] WARNING model_config.py:640: Transformers 5.2.0 may misread rope_parameters."
    log = other + "\n" + ASSERT_LOG

    result = diagnose(log, build_context(), build_graph([SAMPLER_OOM, FP8_BACKENDS]))

    assert [fix.fix.id for fix in result.fixes] == [BF16_CACHE.id]
    assert len(result.through_warnings) == 1
    assert "Set NSA backends" in result.through_warnings[0]


def test_a_log_warning_does_not_answer_for_an_error_that_matches() -> None:
    log = CHOSEN_BACKENDS + "\n" + SAMPLER_OOM.samples[0] + "\n"

    result = diagnose(log, build_context(), build_graph([SAMPLER_OOM, FP8_BACKENDS]))

    assert [fix.fix.id for fix in result.fixes] == [SMALLER_BATCH.id]
    assert result.verdict == "known"


def test_log_warnings_are_looked_up_beside_errors_only() -> None:
    python_warned = f"/opt/venv/lib/python3.12/site-packages/torch/cuda/__init__.py:182: {TOO_OLD}"

    beside = log_warnings_beside_errors(parse(ASSERT_LOG + python_warned + "\n"))
    alone = log_warnings_beside_errors(parse(CHOSEN_BACKENDS + "\n"))

    assert len(beside) == 1 and "Set NSA backends for fp8_e4m3 KV Cache" in beside[0]
    assert alone == ()  # a paste of warnings alone is matched on them anyway


def test_a_log_warning_that_only_shares_words_with_a_finding_does_not_answer() -> None:
    # Every long-context start prints such a warning; it is not the finding's error.
    advice = (
        "WARNING 12-01 10:00:02 [arg_utils.py:1500] Warming up the sampler with 1024 dummy "
        "requests may run out of memory. Consider lowering `max_num_seqs` or "
        "`gpu_memory_utilization` when initializing the engine."
    )
    log = advice + "\n" + ASSERT_LOG.split("\n", 1)[1]

    result = diagnose(log, build_context(), build_graph([SAMPLER_OOM, FP8_BACKENDS]))

    assert result.verdict == "none" and not result.fixes
