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
match level), how many moved (the first finding: another, or one lost or gained), and
top-1 / false match beside the unwrapped figures. A wrapper that changes answers marks a
shape the parser does not read yet, except where the wrapper tells the setup: the issue
form's environment report names versions, and a finding seen with others is then
rightly "similar" rather than "known" (its first finding stays; "moved" shows it).

    .venv/bin/python bench/paste_wrappers.py [--show]
"""

from __future__ import annotations

import argparse
import html
import json
import re
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


# A bug report in vLLM's issue form: its environment section (collect_env's output, a
# machine of our own making: no GPU named, so no setup condition is set by it), the paste
# in a fence under "Describe the bug", and the form's checklist.
_ISSUE_FORM = """\
### Your current environment

<details>
<summary>The output of `python collect_env.py`</summary>

```text
Collecting environment information...
PyTorch version: 2.5.1+cu124
Is debug build: False
CUDA used to build PyTorch: 12.4
ROCM used to build PyTorch: N/A

OS: Ubuntu 22.04.4 LTS (x86_64)
GCC version: (Ubuntu 11.4.0-1ubuntu1~22.04) 11.4.0
Clang version: Could not collect
CMake version: version 3.30.2
Libc version: glibc-2.35

Python version: 3.12.7 (main, Oct  1 2024, 08:52:12) [GCC 11.4.0] (64-bit runtime)
Is CUDA available: True
CUDA runtime version: 12.4.131
CUDA_MODULE_LOADING set to: LAZY
cuDNN version: Could not collect
HIP runtime version: N/A
MIOpen runtime version: N/A
Is XNNPACK available: True

Versions of relevant libraries:
[pip3] numpy==1.26.4
[pip3] nvidia-nccl-cu12==2.21.5
[pip3] pyzmq==26.2.0
[pip3] torch==2.5.1
[pip3] torchvision==0.20.1
[pip3] transformers==4.46.3
[pip3] triton==3.1.0
[conda] Could not collect
ROCM Version: Could not collect
Neuron SDK Version: N/A
vLLM Version: 0.6.4.post1
vLLM Build Flags:
CUDA Archs: Not Set; ROCm: Disabled; Neuron: Disabled
```

</details>

### 🐛 Describe the bug

The server stops during start-up with this:

```
{paste}
```

### Before submitting a new issue...

- [X] Make sure you already searched for relevant issues, and asked the chatbot living at \
the bottom right corner of the [documentation page](https://docs.vllm.ai/en/latest/), \
which can answer lots of frequently asked questions.
"""


def _issue_form(text: str) -> str:
    return _ISSUE_FORM.replace("{paste}", text)


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


def _powershell(text: str) -> str:
    # Windows PowerShell 5.1 turns the first line a native program writes to stderr into
    # an error record: the program's name before it, then where the command was typed.
    first, _, rest = text.partition("\n")
    record = (
        f"python : {first}\n"
        "At line:1 char:1\n"
        "+ python serve.py\n"
        "+ ~~~~~~~~~~~~~~~\n"
        f"    + CategoryInfo          : NotSpecified: ({first[:60]}:String) [], RemoteException\n"
        "    + FullyQualifiedErrorId : NativeCommandError\n"
        " \n"
    )
    return record + rest


_FRAME_PATH = re.compile(r'(File ")(/[^"]+)(")')
_INSTALLED = re.compile(r"^/(?:[\w.-]+/)*?lib/python3[\d.]*/(?:site|dist)-packages/")
_STDLIB = re.compile(r"^/(?:[\w.-]+/)*?lib/python3[\d.]*/")


def _windows_path(path: str) -> str:
    path = _INSTALLED.sub("C:/Users/me/venv/Lib/site-packages/", path, count=1)
    path = _STDLIB.sub("C:/Python311/Lib/", path, count=1)
    if not path.startswith("C:"):
        path = "C:" + path
    return path.replace("/", "\\")


def _windows_paths(text: str) -> str:
    # The same program run on Windows: frames' files under a drive, the standard library
    # in the installation's Lib folder, the libraries in a venv's Lib/site-packages.
    return _FRAME_PATH.sub(lambda m: m[1] + _windows_path(m[2]) + m[3], text)


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
    (
        "cat -n",
        "`cat -n server.log`: numbers in six columns, a tab",
        _each_line(lambda n: f"{n + 1:>6}\t"),
    ),
    ("docker build", "BuildKit's step and clock", _each_line(lambda n: f"#8 {n / 7:.2f} ")),
    ("pdsh", "`pdsh -w`: the host before each line", _each_line(lambda n: "gpu-node-3: ")),
    ("GitHub Actions", "a CI job's log: a 7-digit clock", _each_line(_ci_clock)),
    ("issue form", "vLLM's bug report form around the paste", _issue_form),
    ("HTML-escaped", "a copy of a page's source or an HTML export", html.escape),
    ("PowerShell", "Windows PowerShell's error record on stderr", _powershell),
    ("Windows paths", "the frames' files as Windows writes them", _windows_paths),
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
    rows.append(f"{'wrapper':16} {'changed':>8} {'moved':>6} {'top-1':>6} {'false':>6}  reproduces")
    rows.append(f"{'(as pasted)':16} {'':>8} {'':>6} {top1:6.2f} {false:6.2f}")
    for wrapper, what, wrap in WRAPPERS:
        answers = {path: answer_of(graph, corpus, text, wrap(text)) for _, path, text in cases}
        changed = [
            f"{Path(path).name}: {base[path]} -> {answers[path]}"
            for _, path, _ in cases
            if answers[path] != base[path]
        ]
        moved = sum(answers[path][1] != base[path][1] for _, path, _ in cases)
        w_top1, w_false = figures(answers)
        rows.append(
            f"{wrapper:16} {len(changed):8d} {moved:6d} {w_top1:6.2f} {w_false:6.2f}  {what}"
        )
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
