"""Matching a paste's signatures against known samples: layers and thresholds."""

from __future__ import annotations

import time

import pytest

from decisiontree.fingerprint import Signature
from decisiontree.match import (
    MatchLevel,
    Query,
    SignatureIndex,
    known_threshold,
    level_of,
    similar_threshold,
)
from tests.decisiontree.test_same_code_known import WARMUP_OOM

GENERIC = ("runtimeerror", "cuda", "error", "device", "side", "assert", "triggered")


def signature(
    fingerprint: str,
    terms: tuple[str, ...],
    template: str = "",
    template_key: str | None = None,
    exception_type: str = "RuntimeError",
) -> Signature:
    return Signature(
        exception_type=exception_type,
        template=template or " ".join(terms),
        key_frames=(),
        fingerprint=fingerprint,
        template_key=template_key or f"t-{fingerprint}",
        terms=terms,
    )


POOL_ASSERT = signature(
    "fp-pool",
    (
        "assertionerror",
        "assert",
        "not",
        "self",
        "nsa_kv_cache_store_fp8",
        "nsa",
        "kv",
        "cache",
        "store",
        "fp8",
        "set_kv_buffer",
        "set",
        "buffer",
        "memory_pool",
        "forward_decode",
        "triton_backend",
    ),
    template="assert not self.nsa_kv_cache_store_fp8",
    exception_type="AssertionError",
)
GRAPH_OOM = signature(
    "fp-oom",
    (
        "outofmemoryerror",
        "cuda",
        "out",
        "of",
        "memory",
        "tried",
        "allocate",
        "capacity",
        "capture_one_batch_size",
        "cuda_graph_runner",
        "capture",
    ),
)
GENERIC_ASSERT = signature(
    "fp-generic", GENERIC, template="CUDA error: device-side assert triggered"
)


def index_of(*entries: tuple[int, Signature]) -> SignatureIndex:
    index = SignatureIndex()
    for finding_id, known in entries:
        index.add(finding_id, known)
    index.finish()
    return index


def best(index: SignatureIndex, *queries: Query) -> tuple[int, MatchLevel, str] | None:
    found = index.lookup(list(queries))
    return (found[0].finding_id, found[0].level, found[0].layer) if found else None


def test_it_knows_an_exact_fingerprint() -> None:
    index = index_of((1, POOL_ASSERT), (2, GRAPH_OOM))

    assert best(index, Query.of(POOL_ASSERT)) == (1, MatchLevel.KNOWN, "fingerprint")


def test_it_knows_the_same_template_with_other_frames() -> None:
    index = index_of((1, POOL_ASSERT), (2, GRAPH_OOM))
    moved = signature(
        "fp-other-frames",
        POOL_ASSERT.terms[:10],
        template=POOL_ASSERT.template,
        template_key=POOL_ASSERT.template_key,
        exception_type="AssertionError",
    )

    assert best(index, Query.of(moved)) == (1, MatchLevel.KNOWN, "template")


def test_it_matches_a_short_query_of_specific_words() -> None:
    index = index_of((1, POOL_ASSERT), (2, GRAPH_OOM))
    one_line = Query(
        terms=(
            "assert",
            "not",
            "self",
            "nsa_kv_cache_store_fp8",
            "nsa",
            "kv",
            "cache",
            "store",
            "fp8",
        )
    )

    assert best(index, one_line) == (1, MatchLevel.KNOWN, "terms")


def test_it_is_not_confident_about_generic_words_even_when_they_repeat_exactly() -> None:
    index = index_of((1, GENERIC_ASSERT), (2, POOL_ASSERT), (3, GRAPH_OOM))

    found = index.lookup([Query.of(GENERIC_ASSERT)])
    assert found[0].level is not MatchLevel.KNOWN


def test_it_finds_nothing_for_unrelated_words() -> None:
    index = index_of((1, POOL_ASSERT), (2, GRAPH_OOM))
    unrelated = Query(terms=("oserror", "errno", "address", "already", "in", "use", "bind"))

    assert all(c.level is MatchLevel.NONE for c in index.lookup([unrelated]))


def test_it_weighs_one_rare_term_above_several_common_ones() -> None:
    rare = signature("fp-rare", ("runtimeerror", "flashmla_kv", "decode"))
    common = signature("fp-common", ("runtimeerror", "cuda", "error", "torch", "memory"))
    index = index_of((1, rare), (2, common))
    query = Query(terms=("runtimeerror", "cuda", "error", "torch", "flashmla_kv"))

    assert index.lookup([query])[0].finding_id == 1


def test_it_lets_a_reviewer_split_a_fingerprint_from_a_finding() -> None:
    index = SignatureIndex()
    index.split(POOL_ASSERT.fingerprint, 1)
    index.add(1, POOL_ASSERT)
    index.add(2, GRAPH_OOM)
    index.finish()

    assert all(c.finding_id != 1 for c in index.lookup([Query.of(POOL_ASSERT)]))


def test_it_lets_a_reviewer_link_a_fingerprint_to_a_finding() -> None:
    index = index_of((1, POOL_ASSERT), (2, GRAPH_OOM))
    index.link("fp-never-seen", 2)

    unseen = Query(terms=("whatever",), fingerprint="fp-never-seen")
    assert best(index, unseen) == (2, MatchLevel.KNOWN, "linked")


def test_it_explains_a_match_by_its_most_telling_terms() -> None:
    index = index_of((1, POOL_ASSERT), (2, GRAPH_OOM))

    candidate = index.lookup([Query.of(POOL_ASSERT)])[0]
    assert candidate.matched_terms[0] in {
        "nsa_kv_cache_store_fp8",
        "set_kv_buffer",
        "triton_backend",
        "memory_pool",
        "forward_decode",
    }
    assert "nsa_kv_cache_store_fp8" in candidate.explain()


def test_it_places_scores_between_the_two_fitted_thresholds_as_similar() -> None:
    known, similar = known_threshold(), similar_threshold()

    assert 0 < similar < known < 1
    assert level_of(known) is MatchLevel.KNOWN
    assert level_of((known + similar) / 2) is MatchLevel.SIMILAR
    assert level_of(similar) is MatchLevel.SIMILAR  # a cut-off is the lowest score of its level
    assert level_of(similar - 0.01) is MatchLevel.NONE


def test_it_finds_the_specific_sample_among_many_sharing_common_terms() -> None:
    index = SignatureIndex()
    for n in range(20_000):
        index.add(n, signature(f"fp-{n}", (*GENERIC, f"kernel_{n}", f"module_{n % 500}")))
    index.finish()
    query = Query(terms=(*GENERIC, "kernel_123", "module_123"))

    started = time.perf_counter()
    for _ in range(20):
        found = index.lookup([query])
    per_lookup = (time.perf_counter() - started) / 20

    assert found[0].finding_id == 123
    assert per_lookup < 1.0  # a guard against scoring every sample; speed is in bench/


def _pasted_index(*samples: str) -> SignatureIndex:
    from decisiontree.fingerprint import signatures_of
    from decisiontree.traceback import parse

    index = SignatureIndex()
    for finding_id, sample in enumerate(samples, start=1):
        for known in signatures_of(parse(sample)):
            index.add(finding_id, known)
    index.finish()
    return index


def test_a_finding_that_holds_every_unusual_word_of_a_short_message_holds_it_whole() -> None:
    from decisiontree.diagnose import queries_for
    from decisiontree.fingerprint import signatures_of
    from decisiontree.traceback import parse

    index = _pasted_index(
        # A long sample: the short paste's message is a small part of what it says.
        "Traceback (most recent call last):\n"
        '  File "/srv/venv/lib/python3.11/site-packages/tokenkit/loader.py", line 88, in load\n'
        "    vocab = MergeTable.read(path)\n"
        '  File "/srv/venv/lib/python3.11/site-packages/tokenkit/merges.py", line 12, in read\n'
        "    raise FormatError(found)\n"
        "tokenkit.FormatError: merges table in tokenizer.json has layout v3; this reader "
        "knows v1 and v2 (upgrade tokenkit)",
        "ValueError: tokenizer.json could not be opened: permission denied",
    )
    paste = "FormatError: merges table in tokenizer.json has layout v3"
    features = {
        finding_id: found
        for finding_id, _layer, found in index.assess(
            queries_for(signatures_of(parse(paste)), paste)
        )
    }

    assert features[1].message_held == 1.0
    assert features.get(2) is None or features[2].message_held < 0.5


def test_one_clause_of_a_long_message_that_a_finding_holds_counts_on_its_own() -> None:
    from decisiontree.diagnose import queries_for
    from decisiontree.fingerprint import signatures_of
    from decisiontree.traceback import parse

    index = _pasted_index(
        "RuntimeError: fabric handshake refused: switch firmware not yet ready",
        "RuntimeError: fabric handshake refused: peer closed the socket",
    )
    # The same cause seen through another library: its own long sentence around the clause.
    paste = (
        "UserWarning: device probe: Unexpected failure from cuProbeAll(). Did you start "
        "the probe twice before the driver was loaded? Code 17: switch firmware not yet ready"
    )
    features = {
        finding_id: found
        for finding_id, _layer, found in index.assess(
            queries_for(signatures_of(parse(paste)), paste)
        )
    }

    assert features[1].message_held < 0.5  # most of the warning is not in the finding
    assert features[1].clause_held > 0.9
    assert features.get(2) is None or features[2].clause_held < 0.1


def test_a_long_message_an_ordinary_one_partly_explains_still_counts_what_the_finding_holds() -> (
    None
):
    from decisiontree.diagnose import queries_for
    from decisiontree.fingerprint import signatures_of
    from decisiontree.traceback import parse

    index = _pasted_index(
        "RuntimeError: CUDA error: out of memory while pinning the staging ring of the "
        "prefetch worker",
        "RuntimeError: CUDA error: out of memory while loading the model weights",
    )
    # The first sample's message whole, in a longer line that starts like any CUDA OOM.
    paste = (
        "RuntimeError: CUDA error: out of memory while pinning the staging ring of the "
        "prefetch worker (ring of 4096 slots requested, 512 free); lower --prefetch-depth"
    )
    queries = queries_for(signatures_of(parse(paste)), paste)
    features = {finding_id: found for finding_id, _layer, found in index.assess(queries)}

    # Less the ordinary words, the sample's message is all in the paste; the near miss
    # shares only the ordinary OOM and a word or two.
    # (Sums over sets of words: their order, and the last bit, varies from run to run.)
    assert features[1].unusual_containment == pytest.approx(1.0)
    assert features[1].finding_message_held == pytest.approx(1.0)
    assert features[2].unusual_containment < 0.5
    assert features[2].finding_message_held < 0.5
    found = index.lookup(queries)
    assert [c.finding_id for c in found if c.level is not MatchLevel.NONE] == [1]


def test_the_same_ordinary_error_from_the_same_code_is_known() -> None:
    from decisiontree.fingerprint import signatures_of
    from decisiontree.traceback import parse

    # An out-of-memory message says nothing specific; the frames it came from do.
    other = "ValueError: servekit warmup expects at least one batch size"
    index = _pasted_index(WARMUP_OOM, other)
    again = WARMUP_OOM.replace("2.00 GiB", "512.00 MiB").replace("1.25 GiB", "301.00 MiB")

    found = index.lookup([Query.of(s) for s in signatures_of(parse(again))])

    assert (found[0].finding_id, found[0].layer, found[0].level) == (
        1,
        "fingerprint",
        MatchLevel.KNOWN,
    )


# PyTorch's warning for a driver older than its CUDA build, as it prints it.
OLD_DRIVER_WARNING = (
    "/opt/venv/lib/python3.11/site-packages/torch/cuda/__init__.py:129: UserWarning: CUDA "
    "initialization: The NVIDIA driver on your system is too old (found version 11040). "
    "Please update your GPU driver by downloading and installing a new version from the "
    "URL: http://www.nvidia.com/Download/index.aspx Alternatively, go to: https://pytorch.org "
    "to install a PyTorch version that has been compiled with your version of the CUDA "
    "driver. (Triggered internally at ../c10/cuda/CUDAFunctions.cpp:108.)\n"
    "  return torch._C._cuda_getDeviceCount() > 0\n"
)


def first_cuda_call_fails(error: str, script: str = "serve") -> str:
    """A traceback of a script's first CUDA call, through torch.cuda's start-up, to `error`."""
    return (
        "Traceback (most recent call last):\n"
        f'  File "/srv/app/{script}.py", line 14, in <module>\n'
        "    torch.cuda.set_device(0)\n"
        '  File "/opt/venv/lib/python3.11/site-packages/torch/cuda/__init__.py", line 404, in '
        "set_device\n"
        "    torch._C._cuda_setDevice(device)\n"
        '  File "/opt/venv/lib/python3.11/site-packages/torch/cuda/__init__.py", line 302, in '
        "_lazy_init\n"
        "    torch._C._cuda_init()\n"
        f"{error}\n"
    )


def test_a_second_error_of_a_paste_is_weighed_against_its_own_ordinary_output() -> None:
    from decisiontree.diagnose import queries_for
    from decisiontree.fingerprint import signatures_of
    from decisiontree.traceback import parse

    index = _pasted_index(
        OLD_DRIVER_WARNING,
        first_cuda_call_fails("AssertionError: Torch not compiled with CUDA enabled", "probe"),
    )
    # The driver's warning, then the error it leads to. The second error passes the
    # start-up frames every first CUDA call passes, whatever fails in it; a finding that
    # shares those frames and a word of the warning is not a second known answer.
    paste = OLD_DRIVER_WARNING + first_cuda_call_fails("RuntimeError: No CUDA GPUs are available")

    found = index.lookup(queries_for(signatures_of(parse(paste), warnings=True), paste))

    assert (found[0].finding_id, found[0].level) == (1, MatchLevel.KNOWN)
    assert [c.finding_id for c in found if c.level is MatchLevel.KNOWN] == [1]
