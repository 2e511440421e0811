"""The same ordinary error raised from the same code is the known issue, however the
finding is worded: the frames say what the message cannot."""

from __future__ import annotations

from decisiontree.fingerprint import signatures_of
from decisiontree.match import MatchLevel, Query, SignatureIndex
from decisiontree.traceback import parse

# An out-of-memory message says nothing specific; the two frames it came from do.
WARMUP_OOM = (
    "Traceback (most recent call last):\n"
    '  File "/opt/venv/lib/python3.12/site-packages/servekit/warmup.py", line 41, in '
    "replay_batch_shapes\n"
    "    self.graphs[size] = capture_graph(self.step, size)\n"
    '  File "/opt/venv/lib/python3.12/site-packages/servekit/graphs.py", line 17, in '
    "capture_graph\n"
    "    buffer = torch.empty(size * width, device=device)\n"
    "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
    "total capacity of 79.10 GiB of which 1.25 GiB is free."
)


def test_the_same_ordinary_error_from_the_same_code_is_known_beside_a_long_title() -> None:
    again = WARMUP_OOM.replace("2.00 GiB", "512.00 MiB").replace("1.25 GiB", "301.00 MiB")

    assert _lookup_beside(WARMUP_OOM, again) == (1, "fingerprint", MatchLevel.KNOWN)


def _capture_oom(frames: list[tuple[str, str]]) -> str:
    """An out-of-memory traceback through `frames` (module, function), outermost first."""
    lines = ["Traceback (most recent call last):"]
    for module, function in frames:
        lines.append(
            f'  File "/opt/venv/lib/python3.12/site-packages/servekit/{module}.py", line 41, '
            f"in {function}"
        )
        lines.append("    result = step(size)")
    lines.append(
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 79.10 GiB of which 1.25 GiB is free."
    )
    return "\n".join(lines)


def _lookup_beside_warmup_finding(paste: str) -> tuple[int, str, MatchLevel]:
    known = _capture_oom([("warmup", "replay_batch_shapes"), ("graphs", "capture_graph")])
    return _lookup_beside(known, paste)


def _lookup_beside(known: str, paste: str) -> tuple[int, str, MatchLevel]:
    """Finding 1 holds `known` under a long title, finding 2 an unrelated error: the first
    candidate `paste` gets, as (finding, layer, level)."""
    index = SignatureIndex()
    for signature in signatures_of(parse(known)):
        index.add(1, signature)
    index.add_text(
        1,
        title="Warm-up graph capture runs out of memory on small cards, "
        "together with an NCCL watchdog abort",
        summary="",
        cause="",
    )
    for signature in signatures_of(parse("ValueError: servekit warmup expects one batch size")):
        index.add(2, signature)
    index.finish()
    found = index.lookup([Query.of(s) for s in signatures_of(parse(paste))])
    return found[0].finding_id, found[0].layer, found[0].level


def test_the_same_message_from_both_functions_moved_to_another_module_is_known() -> None:
    # One function moved to another file: a new fingerprint, the same message template,
    # and both key functions of the finding by name.
    moved = _capture_oom([("engine", "replay_batch_shapes"), ("graphs", "capture_graph")])

    assert _lookup_beside_warmup_finding(moved) == (1, "template", MatchLevel.KNOWN)


def test_the_same_message_from_one_shared_function_alone_is_not_known() -> None:
    # A single shared function name says too little without its module.
    one = _capture_oom([("graphs", "capture_graph")])

    finding_id, layer, level = _lookup_beside_warmup_finding(one)
    assert (finding_id, layer) == (1, "template")
    assert level is not MatchLevel.KNOWN


def test_a_finding_known_only_by_its_message_is_not_known_from_a_pastes_frames() -> None:
    # The finding holds the bare message line, no frames: the paste's two functions
    # cannot be compared with anything, so the ordinary message alone decides.
    index = SignatureIndex()
    bare = (
        "torch.OutOfMemoryError: CUDA out of memory. Tried to allocate 2.00 GiB. GPU 0 has a "
        "total capacity of 79.10 GiB of which 1.25 GiB is free."
    )
    for signature in signatures_of(parse(bare)):
        index.add(1, signature)
    index.add_text(1, title="Warm-up graph capture runs out of memory", summary="", cause="")
    index.finish()
    paste = _capture_oom([("engine", "replay_batch_shapes"), ("graphs", "capture_graph")])

    found = index.lookup([Query.of(s) for s in signatures_of(parse(paste))])

    assert (found[0].finding_id, found[0].layer) == (1, "template")
    assert found[0].level is not MatchLevel.KNOWN


def _name_error(python: str, suggestion: str) -> str:
    return (
        "Traceback (most recent call last):\n"
        f'  File "/opt/venv/lib/{python}/site-packages/servekit/serve.py", line 30, in start\n'
        "    ops = load_ops()\n"
        f'  File "/opt/venv/lib/{python}/site-packages/servekit/kernels.py", line 12, in load_ops\n'
        "    dtype = torch.float8_e4m3fnuz\n"
        f"AttributeError: module 'torch' has no attribute 'float8_e4m3fnuz'{suggestion}\n"
    )


def test_the_same_error_with_the_hint_a_newer_python_adds_is_known() -> None:
    # Python 3.10 added "Did you mean" to the message: the first sentence now ends in ".".
    older = _name_error("python3.9", "")
    newer = _name_error("python3.11", ". Did you mean: 'float8_e4m3fn'?")

    assert _lookup_beside(older, newer) == (1, "template", MatchLevel.KNOWN)
