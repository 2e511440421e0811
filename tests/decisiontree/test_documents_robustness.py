"""Whatever is uploaded: a result or a DocumentRejected, never another exception, never a hang."""

import subprocess
import sys
import time
from pathlib import Path

import pytest

from decisiontree.documents import DocumentRejected, decode_document, extract_document

FIXTURES = Path(__file__).parent / "fixtures" / "documents"
WRITEUP = (FIXTURES / "sglang_b200_writeup.txt").read_text()
FINDINGS = (FIXTURES / "findings_sample.md").read_text()
FIVE_MB = 5 * 1024 * 1024 - 1024


def test_importing_documents_does_not_import_django():
    # A fresh interpreter: pytest-django has already imported Django into this one.
    code = (
        "import sys, decisiontree.documents as d; d.extract_document('## A\\n- Fix: --tp 2\\n'); "
        "assert 'django' not in sys.modules"
    )
    subprocess.run([sys.executable, "-c", code], check=True, cwd=Path(__file__).parents[2])


BROKEN = {
    "unclosed fence": '# T\n\n```\nTraceback (most recent call last):\n  File "x.py", line 1\n',
    "stray html": "<div><p>RuntimeError: boom</p><script>alert(1)</script>\n<table><tr><td>--tp 8",
    "deep lists": "".join("  " * i + f"- level {i}: --tp {i}\n" for i in range(300)),
    "only headings": "## \n## ##\n# \n###### x ######\n",
    "field bullets with no values": "## A\n- Fix:\n- When:\n- Hardware:\n- Kind:\n- Model: ()\n",
    "weird conditions": "## A\n- When: = ; != x; flag. = ; ;;\n- Fix: remove --\n- Kind: ???\n",
    "lone quote in command": "ssh h 'python -m sglang.launch_server --tp 8\n" * 3,
    "control chars": "Traceback\x1b[31m (most recent call last):\x1b[0m\n\x07\x08 OSError: x\n",
    "mixed newlines": "line one\r\nline two\rline three\n## x\r\n- Fix: --tp 2\r",
    "unicode": "## 修复 ✅\n- Fix: --mem-fraction-static 0.8 → worked\n- GPU: 8× H100\n",
    "numbers only": "1 2 3 4 5 6 7 8 9 10 " * 100,
    "one word": "x",
}


@pytest.mark.parametrize("text", BROKEN.values(), ids=BROKEN.keys())
def test_broken_documents_still_extract(text):
    document = extract_document(text)
    assert document.format in ("findings_md", "writeup")
    assert all(finding.kind and finding.status for finding in document.findings)


@pytest.mark.parametrize("text", ["", "   \n\t  "])
def test_empty_documents_are_rejected_with_a_message(text):
    with pytest.raises(DocumentRejected, match="empty"):
        extract_document(text)


def test_text_over_the_limit_is_rejected():
    with pytest.raises(DocumentRejected, match="limit"):
        extract_document("a" * (6 * 1024 * 1024))


def test_mixed_encoding_bytes_decode_and_extract():
    data = "## Entrée\n- Fix: --tp 8\n".encode() + "naïve café".encode("latin-1") + b"\n"
    text = decode_document(data, "mixed.md")
    assert extract_document(text).findings[0].title == "Entrée"


HUGE = {
    "writeup repeated": (WRITEUP * (FIVE_MB // len(WRITEUP)))[:FIVE_MB],
    "findings repeated": (FINDINGS * (FIVE_MB // len(FINDINGS)))[:FIVE_MB],
    "one line": "x" * FIVE_MB,
    "one line of flags": ("--tp 8 " * (FIVE_MB // 7))[:FIVE_MB],
    "one line of verdicts": ("--mem-fraction-static 0.88 fixed it but still crashed. " * 99999)[
        :FIVE_MB
    ],
    "error log": "[2026-02-19 00:08:10 TP3] ERROR x: RuntimeError: CUDA error\n" * (FIVE_MB // 60),
    "traceback frames": (
        'Traceback (most recent call last):\n  File "a.py", line 1, in f\n    x()\n' * 80000
    )[:FIVE_MB],
    "open fences": "```\n" * (FIVE_MB // 8),
    "unbalanced ssh quotes": "ssh h 'python -m sglang.launch_server --tp 8\n" * (FIVE_MB // 90),
}


@pytest.mark.parametrize("text", HUGE.values(), ids=HUGE.keys())
def test_a_five_megabyte_document_does_not_hang_extraction(text):
    # A guard against catastrophic backtracking (minutes to hours), not a speed target:
    # bench/ingest_speed.py measures speed. Typical here: well under 2 s of CPU.
    started = time.process_time()
    extract_document(text)
    assert time.process_time() - started < 30.0
