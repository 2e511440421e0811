"""How often the build and GPU readings speak, and what they say, on text nobody tuned
them on.

`decisiontree.build_support` tells a user that a build in the paste cannot run on its GPU;
`decisiontree.gpu_requirement`, that code the error names runs only on other GPUs, and
`decisiontree.backend_gpus`, that the backend the launch (or the error) names is one its
framework's release refuses on the GPU, as a diagnosis shows them. A
reading that fires where the build or the GPU is fine sends someone to reinstall, or to
another backend, for nothing, so this lists every reading they give on the shared real
reports (with each report's stated GPU and launch command, as `real-reports-eval` passes
them) and on our own report corpus, for a reader to judge, then the counts.

    .venv/bin/python bench/build_readings.py
"""

from __future__ import annotations

import sys
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))

from decisiontree.backend_gpus import with_launch_backends  # noqa: E402
from decisiontree.build_support import build_support  # noqa: E402
from decisiontree.context import build_context  # noqa: E402
from decisiontree.gpu_requirement import gpu_requirements  # noqa: E402
from decisiontree.traceback import InputRejected, parse  # noqa: E402
from decisiontree.vocabulary import load  # noqa: E402

sys.path.insert(0, str(ROOT / "bench"))
import shared_reports  # noqa: E402

OURS = ROOT / "bench" / "corpus" / "reports"


def texts() -> list[tuple[str, str, str, str | None, str | None]]:
    """(corpus, id, text, gpu, launch command) of every report."""
    found = [
        ("shared", report.id, report.text, report.gpu or None, report.launch_cmd or None)
        for report in shared_reports.load()
    ]
    for path in sorted(OURS.glob("*/*.txt")):
        found.append(("ours", path.stem, path.read_text(errors="replace"), None, None))
    return found


def main() -> None:
    vocabulary = load()
    counted: dict[str, list[int]] = {}
    for corpus, name, text, gpu, command in texts():
        tally = counted.setdefault(corpus, [0, 0, 0])
        tally[0] += 1
        try:
            context = build_context(text, gpu=gpu, launch_command=command)
            said = parse(text).said
        except InputRejected:
            continue
        for reading in build_support(text, context, vocabulary):
            tally[1] += 1
            print(f"{corpus:7} {name:40} build: {reading.text}")
        told = gpu_requirements(said, context, vocabulary)
        for requirement in with_launch_backends(told, context, vocabulary, said):
            tally[2] += 1
            print(f"{corpus:7} {name:40} gpu: {requirement.text}")
    print(f"\n{'corpus':8} {'reports':>8} {'build':>6} {'gpu':>4}")
    for corpus, (reports, builds, requirements) in counted.items():
        print(f"{corpus:8} {reports:8} {builds:6} {requirements:4}")
    if not shared_reports.available():
        print(shared_reports.absent_note())


if __name__ == "__main__":
    main()
