"""What the shipped starter knowledge base answers to real reports nobody here wrote.

Loads `knowledge/` (what `make run` loads) into a scratch SQLite database and diagnoses
every report and control of ../shared/corpus/real-reports with its stated GPU and launch
command, as a user of a fresh install would. The corpus' bugs are not the starter's
findings, so no score is computed: the table lists each report that got an answer, its
bug as the corpus names it and the finding that led, for a reader to judge; the counts
by verdict come last. A "known" that is wrong is the failure that matters most.

    .venv/bin/python bench/starter_kb_reports.py
"""

from __future__ import annotations

import contextlib
import io
import json
import os
import sys
import tempfile
from collections import Counter
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]
CORPUS = ROOT.parent / "shared" / "corpus" / "real-reports"


def setup_django(database: Path) -> None:
    os.environ["DATABASE_URL"] = f"sqlite:///{database}"
    os.environ.setdefault("DEBUG", "True")
    os.environ.setdefault("DJANGO_SETTINGS_MODULE", "config.settings")
    sys.path.insert(0, str(ROOT))
    import django

    django.setup()


def reports() -> list[dict[str, object]]:
    found = []
    for name in ("cases.jsonl", "controls.jsonl"):
        with (CORPUS / name).open() as lines:
            found += [json.loads(line) for line in lines if line.strip()]
    return found


def main() -> None:
    if not CORPUS.is_dir():
        print(f"{CORPUS}: not found; this benchmark needs the shared corpus")
        return
    with tempfile.TemporaryDirectory(prefix="starter-kb-") as scratch:
        setup_django(Path(scratch) / "kb.sqlite3")
        from django.core.management import call_command

        from kb.services.diagnosis import diagnose

        with contextlib.redirect_stdout(io.StringIO()):
            call_command("migrate", "--noinput")
            call_command("load_vocabulary")
            call_command("ingest", str(ROOT / "knowledge"), "--publish")
        verdicts: Counter[str] = Counter()
        ties = 0
        cases = reports()
        print(f"{'report':8} {'verdict':16} {'bug (corpus)':42} finding that led")
        for case in cases:
            context = case.get("context") or {}
            assert isinstance(context, dict)
            launch = str(context.get("launch_cmd") or "").split("\n")[0] or None
            answer = diagnose(str(case["traceback"]), launch_command=launch, gpu=context.get("gpu"))
            verdict = str(answer.verdict)
            verdicts[verdict] += 1
            ties += bool(answer.tied_causes)
            if answer.fixes:
                bug = str(case.get("bug") or case.get("expected") or "control")[:40]
                title = answer.fixes[0].finding.title[:70]
                if answer.tied_causes:  # causes the paste does not tell apart: all named
                    title = " | ".join(t.finding.title[:40] for t in answer.tied_causes)
                print(f"{case['id']!s:8} {verdict:16} {bug:42} {title}")
        counts = ", ".join(f"{name} {count}" for name, count in sorted(verdicts.items()))
        print(f"\n{len(cases)} reports: {counts}; causes told as tied in {ties}")


if __name__ == "__main__":
    main()
