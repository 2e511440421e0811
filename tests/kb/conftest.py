from __future__ import annotations

from pathlib import Path

import pytest
from django.core.management import call_command

ROOT = Path(__file__).resolve().parents[2]
STARTER = ROOT / "knowledge"


@pytest.fixture
def vocabulary(db: None) -> None:
    call_command("load_vocabulary", verbosity=0)


@pytest.fixture
def starter_kb(vocabulary: None) -> None:
    """The knowledge base `make run` loads: the shipped FINDINGS.md, published."""
    call_command("ingest", str(STARTER), "--publish", verbosity=0)
