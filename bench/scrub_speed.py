"""How long does scrubbing secrets out of a paste take, on ordinary and on hostile input,
and what does it replace in real text that holds no secret?

    .venv/bin/python bench/scrub_speed.py

Every stored paste goes through `decisiontree.scrub.scrub` first (a paste is at most 2 MB).
Its patterns are written to run in time linear in the paste; the hostile rows are inputs
that make a careless pattern quadratic (a name matched from every position of a long run).
The second table counts replacements in text written without secrets: the starter
knowledge base, our test fixtures and bench corpus, and the shared real reports
(../shared/corpus/real-reports, when present). Each one is a false hit to look at.
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
sys.path.insert(0, str(ROOT))
sys.path.insert(0, str(ROOT / "bench"))

import shared_reports  # noqa: E402

from decisiontree.scrub import scrub  # noqa: E402

LAUNCH = (
    "HF_TOKEN=hf_Ab3dEf6hIj9kLm2nOp5qRs8tUv1wXy4zAB python -m sglang.launch_server "
    "--model-path zai-org/GLM-5-NVFP4 --tp-size 8 --api-key team-key-4242 "
    "--kv-cache-dtype fp8_e4m3 --max-total-tokens 65536\n"
)
REQUEST = (
    "[2026-03-02 11:00:00 TP0] Decode batch. #running-req: 3, #token: 1841, "
    "gen throughput (token/s): 41.2\n"
)
CASES = {
    "a launch command": LAUNCH,
    "a 2 MB server log": LAUNCH + REQUEST * (2_000_000 // len(REQUEST)),
    "2 MB of 'a.' (names from every dot)": "a." * 1_000_000,
    '2 MB of "a=\'x " (unclosed quotes)': "a='x " * 400_000,
    "2 MB of 'a=' (names without values)": "a=" * 1_000_000,
    "2 MB of one word": "x" * 2_000_000,
}


def main() -> int:
    print(f"{'input':40} {'bytes':>10} {'ms':>8} {'found':>6}")
    for name, text in CASES.items():
        best = min(_timed(text) for _ in range(3))
        found = len(scrub(text).kinds)
        print(f"{name:40} {len(text):>10,} {best * 1000:>8.1f} {found:>6}")
    print(f"\n{'real text without secrets':40} {'texts':>10} {'replaced':>8}")
    for name, texts in real_texts().items():
        hits = [(where, kinds) for where, text in texts if (kinds := scrub(text).kinds)]
        print(f"{name:40} {len(texts):>10,} {len(hits):>8}")
        for where, kinds in hits:
            print(f"    {where}: {', '.join(kinds)}")
    return 0


def real_texts() -> dict[str, list[tuple[str, str]]]:
    ours = [
        *ROOT.glob("knowledge/**/*.md"),
        *ROOT.glob("tests/**/fixtures/**/*.*"),
        *ROOT.glob("bench/corpus/**/*.*"),
    ]
    found = {"ours (knowledge, fixtures, bench corpus)": [
        (str(path.relative_to(ROOT)), path.read_text(errors="replace"))
        for path in ours if path.is_file()
    ]}  # fmt: skip
    if shared_reports.available():
        found["shared real reports"] = [(r.id, r.text) for r in shared_reports.load()]
    else:
        print(shared_reports.absent_note())
    return found


def _timed(text: str) -> float:
    started = time.perf_counter()
    scrub(text)
    return time.perf_counter() - started


if __name__ == "__main__":
    sys.exit(main())
