"""A stored document is read again when the code that reads documents changes: the
digest that says so must cover every module the reading runs."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

from decisiontree.documents import reader_files

ROOT = Path(__file__).resolve().parents[2]


def test_the_reader_digest_covers_every_module_reading_a_document_imports() -> None:
    # A fresh interpreter: what this test process imported for other tests says nothing.
    loaded = subprocess.run(
        [
            sys.executable,
            "-c",
            "import sys, decisiontree.documents, decisiontree.scrub\n"
            "print('\\n'.join(m.__file__ for n, m in sys.modules.items()"
            " if n.startswith('decisiontree') and getattr(m, '__file__', None)))",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        check=True,
    ).stdout.split()
    digested = {path.resolve() for path in reader_files()}
    missing = sorted(
        str(Path(f).relative_to(ROOT)) for f in loaded if Path(f).resolve() not in digested
    )
    assert missing == []


def test_the_digest_reads_the_vocabulary_the_reader_looks_names_up_in() -> None:
    names = {path.name for path in reader_files()}
    assert {"gpus.json", "models.json", "sglang_flags.json", "outcome_words.toml"} <= names
