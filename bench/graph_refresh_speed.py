"""What the next diagnosis pays after a vote, against after a finding changed.

Fills a scratch SQLite database with diagnose_speed.py's synthetic findings (their
samples stored with their parsed signatures, as ingest stores them) and votes on
their fixes, then times `kb.services.diagnosis.knowledge_graph()` in one process:
the first build, the call after a vote (the evidence stamp moved: the same graph
with the votes and runs read again) and the call after a finding changed (the
findings' stamp moved: a rebuild). Prints one row per size.

    .venv/bin/python bench/graph_refresh_speed.py [--sizes 1000,10000] [--votes-per-finding 2]
"""

from __future__ import annotations

import argparse
import os
import random
import secrets
import subprocess
import sys
import tempfile
import time
from pathlib import Path

ROOT = Path(__file__).resolve().parents[1]


def one_size(size: int, votes_per_finding: int) -> str:
    sys.path.insert(0, str(ROOT))
    sys.path.insert(0, str(ROOT / "bench"))
    os.environ.update(
        DATABASE_URL=f"sqlite:///{tempfile.mkdtemp(prefix='graph-refresh-')}/kb.sqlite3",
        DEBUG="False",
        SECRET_KEY=secrets.token_hex(32),
        DJANGO_SETTINGS_MODULE="config.settings",
    )
    os.environ.pop("CELERY_BROKER_URL", None)
    import django

    django.setup()
    import diagnose_speed
    from django.core.management import call_command

    from decisiontree.samples import signatures_of_sample, stored_form
    from kb.models import ErrorSample, Finding, Fix, FixFeedback, KnowledgeRevision
    from kb.services.diagnosis import knowledge_graph

    call_command("migrate", verbosity=0)
    records, _ = diagnose_speed.findings(size, random.Random(7))
    Finding.objects.bulk_create(
        Finding(pk=r.id, title=r.title, cause=r.cause, status=Finding.Status.PUBLISHED)
        for r in records
    )
    ErrorSample.objects.bulk_create(
        ErrorSample(finding_id=r.id, text=s, parsed=stored_form(signatures_of_sample(s)))
        for r in records
        for s in r.samples
    )
    Fix.objects.bulk_create(
        Fix(pk=f.id, finding_id=r.id, summary=f.summary, outcome=f.outcome)
        for r in records
        for f in r.fixes
    )
    fix_ids = [f.id for r in records for f in r.fixes]
    rng = random.Random(11)
    FixFeedback.objects.bulk_create(
        FixFeedback(fix_id=rng.choice(fix_ids), voter=f"user:{n}", helped=rng.random() < 0.7)
        for n in range(size * votes_per_finding)
    )
    KnowledgeRevision.bump()

    def timed() -> float:
        start = time.perf_counter()
        knowledge_graph()
        return time.perf_counter() - start

    first = timed()
    KnowledgeRevision.bump_evidence()  # what a vote or a finished run does
    after_vote = timed()
    KnowledgeRevision.bump()  # what a published finding's change does
    after_finding = timed()
    votes = size * votes_per_finding
    return f"| {size:,} | {votes:,} | {first:.2f} | {after_vote * 1000:.0f} | {after_finding:.2f} |"


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--sizes", default="1000,10000")
    parser.add_argument("--votes-per-finding", type=int, default=2)
    parser.add_argument("--one", type=int, help=argparse.SUPPRESS)  # a child's size
    args = parser.parse_args()
    if args.one:
        print(one_size(args.one, args.votes_per_finding))
        return
    print("| findings | votes | first build s | after a vote ms | after a finding changed s |")
    print("| --- | --- | --- | --- | --- |")
    for size in (int(s) for s in args.sizes.split(",")):
        # A fresh process a size: its own settings, database and graph.
        command = [sys.executable, __file__, "--one", str(size)]
        command += ["--votes-per-finding", str(args.votes_per_finding)]
        subprocess.run(command, check=True)


if __name__ == "__main__":
    main()
