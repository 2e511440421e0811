"""A reviewer's link or split decides what a paste matches, whatever else the index holds."""

from __future__ import annotations

from decisiontree.match import Query, SignatureIndex
from tests.decisiontree.test_fingerprint_version import (
    OTHER_BUG,
    SCHEDULER_CRASH,
    STORED_UNDER_VERSION_2,
    sign,
)

# The same error raised from other code: another fingerprint, the same message.
SCHEDULER_CRASH_ELSEWHERE = (
    SCHEDULER_CRASH.replace("run_scheduler_process", "launch_worker")
    .replace("init_memory_pool", "reserve_kv_pages")
    .replace("scheduler.py", "worker.py")
)


def test_a_sample_split_away_under_version_2_lends_the_finding_none_of_its_words() -> None:
    def finding_ids(*decided: str) -> list[int]:
        index = SignatureIndex()
        for fingerprint in decided:
            index.split(fingerprint, 2)
        index.add(1, sign(OTHER_BUG))
        index.add(2, sign(SCHEDULER_CRASH))
        index.finish()
        return [c.finding_id for c in index.lookup([Query.of(sign(SCHEDULER_CRASH_ELSEWHERE))])]

    assert sign(SCHEDULER_CRASH_ELSEWHERE).fingerprint != sign(SCHEDULER_CRASH).fingerprint
    assert finding_ids()[0] == 2
    assert 2 not in finding_ids(STORED_UNDER_VERSION_2[SCHEDULER_CRASH])
    assert 2 not in finding_ids(sign(SCHEDULER_CRASH).fingerprint)


def test_every_fingerprint_a_reviewer_decided_on_is_listed_to_carry_forward() -> None:
    index = SignatureIndex()
    index.link("fingerprint-linked", 1)
    index.split("fingerprint-split", 2)

    assert index.decided() == {"fingerprint-linked", "fingerprint-split"}
