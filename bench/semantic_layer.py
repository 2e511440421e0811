"""Would a semantic layer help the matcher? A static embedding model, measured on real reports.

The design allows a semantic layer (a small local embedding model that a package ships,
nothing downloaded at run time) only if it measurably helps. This script measures one:
WordLlama's `l2_supercat` 256-dimension token embeddings, whose weights are inside the
`wordllama` wheel. It is not a dependency of the product; install it beside the bench with

    .venv/bin/python -m pip install '.[semantic]'

and run, from the project root:

    .venv/bin/python bench/semantic_layer.py

Reads the shared real-reports set (../shared/corpus/real-reports) and says so and stops
when it is absent. Two questions, each printed as a table:

1. As a ranking: the cosine of the pasted report and each finding's report, with no
   cut-off, beside the cut-off a control would need to stay unanswered.
2. As a measure for the verifier: bench/fit_matcher.py's leave-one-bug-out fit with the
   cosine weighed beside the product's measures, on the whole paste, on its last lines,
   and on its error messages only.
"""

from __future__ import annotations

import contextlib
import functools
import io
import sys
from collections.abc import Callable
from pathlib import Path

import numpy as np

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))
sys.path.insert(0, str(Path(__file__).resolve().parent))

import fit_matcher  # noqa: E402
import shared_reports  # noqa: E402

from decisiontree.traceback import InputRejected, parse  # noqa: E402

TAIL_LINES = 8  # what a user most often pastes: the last lines of the output
COSINE_CUTS = (0.6, 0.7, 0.8)


def load_model():  # type: ignore[no-untyped-def]
    """WordLlama from the weights in its wheel; None (and why) when it is not installed."""
    try:
        import wordllama
    except ImportError:
        return None
    # Read the tokenizer from the package too: its own lookup lands on a folder name the
    # wheel does not use and then tries the network, which a user's machine may not reach.
    package = Path(wordllama.__file__).parent
    return wordllama.WordLlama.load(cache_dir=package, disable_download=True)


def whole(text: str) -> str:
    return text


def tail(text: str) -> str:
    return "\n".join([line for line in text.splitlines() if line.strip()][-TAIL_LINES:])


def messages(text: str) -> str:
    """The errors the parser finds (exceptions, kernel asserts, error log lines), else the
    whole paste."""
    try:
        parsed = parse(text)
    except InputRejected:
        return text
    found = [f"{error.type} {error.message}".strip() for error in parsed.exceptions]
    found += [*parsed.kernel_assertions, *parsed.error_lines]
    return "\n".join(found) or text


def cosine_measure(model, view: Callable[[str], str]):  # type: ignore[no-untyped-def]
    @functools.cache
    def vector(text: str) -> np.ndarray:
        return np.asarray(model.embed([view(text)], norm=True)[0])

    def measure(query: shared_reports.Report, finding: shared_reports.Report) -> float:
        return float(vector(query.text) @ vector(finding.text))

    return measure


def ranking_table(model, reports: list[shared_reports.Report]) -> None:  # type: ignore[no-untyped-def]
    known, queries = shared_reports.split(reports)
    measure = cosine_measure(model, whole)
    top1 = top3 = n = 0
    right_first: list[float] = []
    controls: list[float] = []
    for query in queries:
        scored = sorted(((measure(query, k), k.bug) for k in known), reverse=True)
        if query.known:
            n += 1
            bugs = [bug for _, bug in scored]
            top1 += bugs[0] == query.bug
            top3 += query.bug in bugs[:3]
            if bugs[0] == query.bug:
                right_first.append(scored[0][0])
        else:
            controls.append(scored[0][0])
    print(
        f"1. cosine of whole reports as the ranking ({n} queries of known bugs, "
        f"{len(controls)} controls)"
    )
    print(f"   no cut-off: top-1 {top1 / n:.2f}, top-3 {top3 / n:.2f}, false 1.00")
    print(f"   {'cut-off':>8} {'top-1':>6} {'controls answered':>18}")
    for cut in COSINE_CUTS:
        kept = sum(1 for s in right_first if s >= cut) / n
        answered = sum(1 for s in controls if s >= cut) / len(controls)
        print(f"   {cut:>8.2f} {kept:>6.2f} {answered:>18.2f}")


def verifier_table(model, reports: list[shared_reports.Report]) -> None:  # type: ignore[no-untyped-def]
    print(
        "\n2. the cosine as one more measure of the verifier (bench/fit_matcher.py, "
        "leave-one-bug-out)"
    )
    print(f"   {'measures':<34} {'CV top-1':>8} {'CV top-3':>8} {'CV false':>8} {'weight':>7}")
    runs: list[tuple[str, tuple[fit_matcher.ExtraMeasure, ...]]] = [("the product's", ())]
    for name, view in (
        ("+ cosine, whole paste", whole),
        (f"+ cosine, last {TAIL_LINES} lines", tail),
        ("+ cosine, error messages", messages),
    ):
        runs.append((name, (("semantic", cosine_measure(model, view)),)))
    for name, extra in runs:
        printed = io.StringIO()
        with contextlib.redirect_stdout(printed):
            fit_matcher.main([], extra=extra)
        lines = printed.getvalue().splitlines()
        cv = next(line for line in lines if line.startswith("cross-validated"))
        figures = [part.split()[-1] for part in cv.split(":", 1)[1].split(",")]
        weights = next(line for line in lines if line.startswith("weights:"))
        weight = weights.rsplit("semantic", 1)[1].strip() if extra else "-"
        print(f"   {name:<34} {figures[0]:>8} {figures[1]:>8} {figures[2]:>8} {weight:>7}")


def main() -> int:
    if not shared_reports.available():
        print(shared_reports.absent_note())
        return 1
    model = load_model()
    if model is None:
        print("wordllama is not installed: .venv/bin/python -m pip install '.[semantic]'")
        return 1
    reports = shared_reports.load()
    ranking_table(model, reports)
    verifier_table(model, reports)
    return 0


if __name__ == "__main__":
    sys.exit(main())
