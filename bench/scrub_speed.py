"""How long does scrubbing secrets out of a paste take, on ordinary and on hostile input?

    .venv/bin/python bench/scrub_speed.py

Every stored paste goes through `decisiontree.scrub.scrub` first (a paste is at most 2 MB).
Its patterns are written to run in time linear in the paste; the hostile rows are inputs
that make a careless pattern quadratic (a name matched from every position of a long run).
"""

from __future__ import annotations

import sys
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).resolve().parents[1]))

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
    return 0


def _timed(text: str) -> float:
    started = time.perf_counter()
    scrub(text)
    return time.perf_counter() - started


if __name__ == "__main__":
    sys.exit(main())
