""" "No known match" has a next step, and still offers no fix.

The nearest findings come under their own key with why they were not taken;
the search words are words of the paste that the knowledge base holds.
"""

from __future__ import annotations

from decisiontree.context import build_context
from decisiontree.diagnose import diagnose
from decisiontree.graph import build_graph
from decisiontree.records import Change, ChangeAction, Condition, FindingRecord, FixRecord, Outcome

VLLM_OOM = """\
Traceback (most recent call last):
  File "/usr/lib/python3/dist-packages/vllm/worker/gpu_worker.py", line 220, in determine_num_available_blocks
    self.model_runner.profile_run()
torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a total capacity of 79.10 GiB of which 1.20 GiB is free.
"""
# A training script runs out of memory: the same error class, another program.
TRAINING_OOM = (
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 20.00 MiB "
    "during loss.backward() in train.py"
)

LOWER_UTILISATION = FixRecord(
    1,
    "Lower --gpu-memory-utilization",
    (Change(ChangeAction.SET_FLAG, "gpu-memory-utilization", "0.85"),),
    Outcome.RESOLVES,
)
PROFILE_OOM = FindingRecord(
    id=5,
    title="vLLM profile run exhausts memory at start-up",
    kind="oom",
    cause="the profile run allocates the sampler's worst case on top of the weights",
    samples=(VLLM_OOM,),
    conditions=(Condition("framework", "vllm"),),
    fixes=(LOWER_UTILISATION,),
)


def test_a_none_answer_names_the_nearest_findings_apart_from_the_fixes() -> None:
    context = build_context(framework="sglang")

    result = diagnose(TRAINING_OOM, context, build_graph([PROFILE_OOM]))

    assert result.verdict == "none"
    assert result.fixes == () and result.not_helpful == ()
    assert [near.finding.id for near in result.nearest] == [5]
    why = result.nearest[0].why_not
    assert "same error message (OutOfMemoryError)" in why
    assert "framework sglang here, vllm in the finding" in why


def test_the_search_words_are_words_of_the_paste_the_knowledge_base_holds() -> None:
    graph = build_graph([PROFILE_OOM])

    result = diagnose(TRAINING_OOM, build_context(), graph)

    assert result.search_words
    for word in result.search_words:
        assert word.lower() in TRAINING_OOM.lower()
        assert word in VLLM_OOM.lower()


def test_a_paste_with_nothing_in_common_gets_no_nearest_finding() -> None:
    result = diagnose(
        "ModuleNotFoundError: No module named 'yaml'", build_context(), build_graph([PROFILE_OOM])
    )

    assert result.verdict == "none"
    assert result.nearest == ()
    assert result.search_words == ()


def test_a_pod_stopped_while_loading_is_told_what_stops_one() -> None:
    """Kubernetes stops a server whose probe fails while the weights still load: exit 143."""
    stopped = "Error: container vllm exited with code 143\n"
    result = diagnose(stopped, build_context(stopped), build_graph([]))

    assert result.killed_by == "SIGTERM"
    assert result.cause_elsewhere is not None
    heading, advice = result.cause_elsewhere
    assert heading == "Something stopped the process (SIGTERM)."
    assert "startupProbe" in advice and "kubectl describe pod" in advice


NO_DRIVER = """\
Traceback (most recent call last):
  File "/srv/app/serve.py", line 12, in <module>
    torch.cuda.set_device(0)
  File "/usr/local/lib/python3.12/dist-packages/torch/cuda/__init__.py", line 319, in _lazy_init
    torch._C._cuda_init()
RuntimeError: Found no NVIDIA driver on your system. Please check that you have an NVIDIA GPU \
and installed a driver from http://www.nvidia.com/Download/index.aspx
"""
# vLLM's worker started CUDA in a forked child: the same class, the same CUDA start-up frames.
FORKED = """\
ERROR 12-07 04:10:02 [multiproc_executor.py:511] Traceback (most recent call last):
ERROR 12-07 04:10:02 [multiproc_executor.py:511]   File "/usr/local/lib/python3.12/\
dist-packages/vllm/v1/worker/gpu_worker.py", line 155, in init_device
ERROR 12-07 04:10:02 [multiproc_executor.py:511]     torch.cuda.set_device(self.device)
ERROR 12-07 04:10:02 [multiproc_executor.py:511]   File "/usr/local/lib/python3.12/\
dist-packages/torch/cuda/__init__.py", line 305, in _lazy_init
ERROR 12-07 04:10:02 [multiproc_executor.py:511]     raise RuntimeError(
ERROR 12-07 04:10:02 [multiproc_executor.py:511] RuntimeError: Cannot re-initialize CUDA in \
forked subprocess. To use CUDA with multiprocessing, you must use the 'spawn' start method
"""


def test_a_finding_near_by_its_error_class_alone_gives_no_search_of_ordinary_words() -> None:
    finding = FindingRecord(
        id=7,
        title="No GPU inside the container",
        kind="crash",
        cause="the container was started without GPUs",
        samples=(NO_DRIVER,),
        conditions=(),
        fixes=(FixRecord(1, "start the container with --gpus all", (), Outcome.RESOLVES),),
    )

    result = diagnose(FORKED, build_context(FORKED), build_graph([finding]))

    [near] = result.nearest
    assert near.why_not.endswith("shares only ordinary words: too little to be the same issue")
    # "Search the known issues for: set_device set init you" would find nothing like it.
    assert result.search_words == ()


PROFILING = """\
Traceback (most recent call last):
  File "/usr/local/lib/python3.12/dist-packages/vllm/v1/worker/gpu_worker.py", line 260, \
in determine_available_memory
    assert self.init_snapshot.free_memory > free_gpu_memory, (
AssertionError: Error in memory profiling. Initial free memory 70.1 GiB, current free memory \
74.3 GiB. This happens when other processes sharing the same container release GPU memory \
while vLLM is profiling during initialization.
"""
PROFILING_FINDING = FindingRecord(
    id=8,
    title="vLLM start-up: Error in memory profiling when another process changes its memory",
    kind="crash",
    cause="vLLM assumes nothing else on the GPU allocates or frees memory while it profiles",
    samples=(PROFILING,),
    conditions=(),
    fixes=(FixRecord(1, "give vLLM the GPU alone while it starts", (), Outcome.RESOLVES),),
)


def test_one_specific_word_in_common_is_no_match() -> None:
    # pip's own line, ordinary output; what is left is the package's name.
    paste = "ERROR: Could not find a version that satisfies the requirement vllm==0.99.0\n"

    result = diagnose(paste, build_context(paste), build_graph([PROFILING_FINDING]))

    assert result.verdict == "none"
    assert result.fixes == ()


def test_the_same_error_in_other_words_still_matches_on_what_it_shares() -> None:
    paste = (
        "vllm serve dies at start: AssertionError: Error in memory profiling (initial free "
        "memory lower than current free memory)\n"
    )

    result = diagnose(paste, build_context(paste), build_graph([PROFILING_FINDING]))

    assert result.verdict == "known"
    assert result.fixes[0].finding.id == PROFILING_FINDING.id
