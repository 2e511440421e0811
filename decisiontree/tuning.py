"""The matcher's tuned numbers, read from a versioned data file with their provenance.

`decisiontree/data/matcher_tuning.json` holds every number that decides a match:
BM25F parameters, the verifier's weights and the known/similar cut-offs. Each
section says why it holds what it holds and which bench run chose it
(`bench/fit_matcher.py` writes the fitted sections). Nothing here is guessed
in code.
"""

from __future__ import annotations

import json
from functools import cache
from pathlib import Path
from typing import Any

TUNING_FILE = Path(__file__).parent / "data" / "matcher_tuning.json"


@cache
def tuning() -> dict[str, Any]:
    data: dict[str, Any] = json.loads(TUNING_FILE.read_text())
    return data
