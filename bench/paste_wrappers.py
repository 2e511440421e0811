"""Does an answer survive the way people wrap what they paste?

The same server output reaches FixGraph through many tools: `docker compose logs`
prefixes every line with the service, `kubectl logs --timestamps` with a clock,
journald with a host and a PID, Ray with the worker; a GitHub comment quotes it with
"> " or indents it as a code block, a web page's copy turns indents into no-break
spaces, a Windows terminal ends lines with CR LF, a structured logger puts a whole
traceback into one JSON string. None of that changes what went wrong, so none of it
should change the answer.

For each report of both corpora of `bench/diagnose_accuracy.py` (ours and, when
present, the shared real-reports set) this diagnoses the paste as it is and then
wrapped each way, and prints per wrapper how many answers changed (first finding or
match level) and top-1 / false match beside the unwrapped figures. A wrapper that
moves answers marks a shape the parser does not read yet.

    .venv/bin/python bench/paste_wrappers.py [--show]
"""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Callable, Sequence
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import shared_reports  # noqa: E402
from diagnose_accuracy import (  # noqa: E402
    DEFAULT_MANIFEST,
    Corpus,
    context_for,
    load_corpus,
    shared_corpus,
)

from decisiontree.diagnose import diagnose  # noqa: E402
from decisiontree.graph import KnowledgeGraph, build_graph  # noqa: E402
from decisiontree.traceback import InputRejected  # noqa: E402

Answer = tuple[str, int | None]  # (match level, the first fix's finding; None when none)


def _each_line(prefix: Callable[[int], str]) -> Callable[[str], str]:
    def wrap(text: str) -> str:
        return "\n".join(prefix(n) + line for n, line in enumerate(text.splitlines()))

    return wrap


def _clock(n: int) -> str:
    return f"2026-12-06T10:{n // 60 % 60:02d}:{n % 60:02d}.{n * 7919 % 10**9:09d}Z "


def _ci_clock(n: int) -> str:
    return f"2026-12-06T10:00:{n % 60:02d}.{n:07d}Z "


def _details(text: str) -> str:
    return f"<details><summary>Full log</summary>\n\n```text\n{text}\n```\n\n</details>\n"


def _structured(text: str) -> str:
    # One record of python-json-logger: the logger's own message, the output as one
    # escaped string.
    record = {
        "asctime": "2026-12-06 10:00:00,123",
        "levelname": "ERROR",
        "name": "server",
        "message": "Server process failed",
        "exc_info": text,
    }
    return json.dumps(record)


def _ansi(text: str) -> str:
    return "\n".join(f"\x1b[0;31m{line}\x1b[0m" if line else line for line in text.splitlines())


def _web_indent(text: str) -> str:
    out = []
    for line in text.splitlines():
        body = line.lstrip(" ")
        out.append("\u00a0" * (len(line) - len(body)) + body)
    return "\n".join(out)


def _indents_lost(text: str) -> str:
    return "\n".join(line.lstrip() for line in text.splitlines())


def _hard_wrapped(text: str, width: int = 100) -> str:
    # A terminal or pager copy of lines longer than the window: each cut at its width.
    lines = text.splitlines()
    return "\n".join(ln[at : at + width] for ln in lines for at in range(0, len(ln) or 1, width))


# (name, what it reproduces, the wrapping)
WRAPPERS: tuple[tuple[str, str, Callable[[str], str]], ...] = (
    ("docker compose", "`docker compose logs` service column", _each_line(lambda n: "vllm-1  | ")),
    ("kubectl -t", "`kubectl logs --timestamps` RFC 3339 clock", _each_line(_clock)),
    (
        "journald",
        "`journalctl` short format",
        _each_line(lambda n: f"Dec 06 10:00:{n % 60:02d} gpu-node-3 python3[48213]: "),
    ),
    ("ray worker", "Ray's worker prefix", _each_line(lambda n: "(RayWorkerWrapper pid=4321) ")),
    ("quoted", "a Markdown quote", _each_line(lambda n: "> ")),
    ("code block", "a Markdown indented code block", _each_line(lambda n: "    ")),
    ("details", "GitHub's collapsed <details> block", _details),
    ("CRLF", "Windows line ends", lambda text: text.replace("\n", "\r\n")),
    ("ANSI", "a coloured terminal", _ansi),
    ("NBSP indent", "indents copied from a web page", _web_indent),
    ("JSON record", "a structured logger's one record", _structured),
    ("hard-wrapped", "a copy from a 100-column terminal", _hard_wrapped),
    ("indents lost", "a form or chat that strips leading spaces", _indents_lost),
    ("grep -H", "`grep -H` over a log file", _each_line(lambda n: "logs/server.log:")),
    ("pdsh", "`pdsh -w`: the host before each line", _each_line(lambda n: "gpu-node-3: ")),
    ("GitHub Actions", "a CI job's log: a 7-digit clock", _each_line(_ci_clock)),
    ("newest first", "a log viewer's newest-first copy", lambda t: "\n".join(t.splitlines()[::-1])),
)


def answer_of(graph: KnowledgeGraph, corpus: Corpus, text: str, pasted: str) -> Answer:
    """(match level, first finding) for `pasted`, with what was given beside `text`."""
    gpu, launch = corpus.given.get(text, ("", ""))
    try:
        result = diagnose(pasted, context_for(pasted, gpu, launch), graph)
    except InputRejected:
        return ("rejected", None)
    if result.match == "none" or not result.fixes:
        return (str(result.match), None)
    return (str(result.match), result.fixes[0].finding.id)


def run(name: str, corpus: Corpus, show: bool) -> list[str]:
    graph = build_graph(corpus.findings)
    # (expected finding, None for a control; name; text)
    cases = [(expected, path, text) for expected, path, text in corpus.queries]
    cases += [(None, path, text) for path, text in corpus.unrelated]
    base = {path: answer_of(graph, corpus, text, text) for _, path, text in cases}

    def figures(answers: dict[str, Answer]) -> tuple[float, float]:
        known = [(want, answers[path][1]) for want, path, _ in cases if want is not None]
        controls = [answers[path][1] for want, path, _ in cases if want is None]
        top1 = sum(got == want for want, got in known) / max(len(known), 1)
        return top1, sum(got is not None for got in controls) / max(len(controls), 1)

    queries = sum(want is not None for want, _, _ in cases)
    top1, false = figures(base)
    rows = [f"\n{name}: {queries} queries, {len(cases) - queries} controls"]
    rows.append(f"{'wrapper':16} {'changed':>8} {'top-1':>6} {'false':>6}  reproduces")
    rows.append(f"{'(as pasted)':16} {'':>8} {top1:6.2f} {false:6.2f}")
    for wrapper, what, wrap in WRAPPERS:
        answers = {path: answer_of(graph, corpus, text, wrap(text)) for _, path, text in cases}
        changed = [
            f"{Path(path).name}: {base[path]} -> {answers[path]}"
            for _, path, _ in cases
            if answers[path] != base[path]
        ]
        w_top1, w_false = figures(answers)
        rows.append(f"{wrapper:16} {len(changed):8d} {w_top1:6.2f} {w_false:6.2f}  {what}")
        if show:
            rows += [f"    {line}" for line in changed]
    return rows


def main(argv: Sequence[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--show", action="store_true", help="list each changed answer")
    parser.add_argument("--manifest", type=Path, default=DEFAULT_MANIFEST)
    args = parser.parse_args(argv)
    print("\n".join(run("bench/corpus/reports", load_corpus(args.manifest), args.show)))
    shared = shared_corpus()
    if shared is None:
        print(shared_reports.absent_note())
    else:
        print("\n".join(run("shared real-reports", shared, args.show)))
    return 0


if __name__ == "__main__":
    sys.exit(main())
