"""One failure printed as several error lines of one kind (NCCL's WARN lines from each
layer it went through, a compiler's errors one after another): each line says something
of its own, and the line that names the cause is often not the first."""

from __future__ import annotations

from decisiontree.context import Context
from decisiontree.diagnose import diagnose
from decisiontree.fingerprint import MAX_LINES_OF_A_KIND, signatures_of
from decisiontree.graph import build_graph
from decisiontree.records import FindingRecord, FixRecord, Outcome
from decisiontree.traceback import parse

# NCCL_DEBUG=INFO of two ranks in a container whose /dev/shm is Docker's 64 MB default.
SHM_LOG = """\
c0ffee12ab34:412:412 [0] NCCL INFO cudaDriverVersion 12040
c0ffee12ab34:412:412 [0] NCCL INFO Bootstrap : Using eth0:172.17.0.2<0>
c0ffee12ab34:413:413 [1] NCCL INFO Channel 00/0 : 1[1] -> 0[0] via P2P/IPC
c0ffee12ab34:412:412 [0] include/alloc.h:185 NCCL WARN Error: failed to extend /dev/shm/nccl-Qw12Er to 9637892 bytes
c0ffee12ab34:412:412 [0] include/alloc.h:194 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-Qw12Er (size 9637888)
c0ffee12ab34:413:413 [1] include/alloc.h:185 NCCL WARN Error: failed to extend /dev/shm/nccl-Ty34Ui to 9637892 bytes
c0ffee12ab34:413:413 [1] include/alloc.h:194 NCCL WARN Error while creating shared memory segment /dev/shm/nccl-Ty34Ui (size 9637888)
c0ffee12ab34:413:413 [1] NCCL INFO transport/shm.cc:114 -> 2
"""

# The same failure as PyTorch raises it, on another machine: the finding's sample.
SHM_RAISED = """\
torch.distributed.DistBackendError: NCCL error in: ../torch/csrc/distributed/c10d/ProcessGroupNCCL.cpp:1970, unhandled system error (run with NCCL_DEBUG=INFO for details), NCCL version 2.20.5
ncclSystemError: System call (e.g. socket, malloc) or external library call failed or device error.
Last error:
Error while creating shared memory segment /dev/shm/nccl-vzIpS6 (size 9637888)
"""


def test_each_distinct_line_of_an_nccl_failure_is_read_and_a_rank_repeating_it_is_not():
    templates = [s.template for s in signatures_of(parse(SHM_LOG))]

    assert any("failed to extend" in t for t in templates)
    assert any("creating shared memory segment" in t for t in templates)
    assert len(templates) == 2  # the second rank printed the same two lines


def test_of_a_kind_printed_many_ways_only_the_first_few_lines_are_read():
    lines = "".join(
        f"host:1:1 [0] transport/net.cc:{n} NCCL WARN stage{'abcdefgh'[n]} of setup failed\n"
        for n in range(MAX_LINES_OF_A_KIND + 3)
    )
    signatures = signatures_of(parse(lines))

    assert len(signatures) == MAX_LINES_OF_A_KIND
    assert "stagea" in signatures[0].template


def test_an_nccl_log_is_answered_by_the_finding_of_the_error_pytorch_raised_for_it():
    finding = FindingRecord(
        1,
        "NCCL cannot create its shared memory segment in a container",
        "crash",
        "the container's /dev/shm is too small for NCCL's buffers",
        (SHM_RAISED,),
        (),
        (
            FixRecord(
                101, "Start the container with --ipc=host or --shm-size=16g", (), Outcome.RESOLVES
            ),
        ),
    )
    graph = build_graph([finding])

    result = diagnose(SHM_LOG, Context(), graph)

    assert result.match != "none"
    assert [c.finding_id for c in result.candidates][:1] == [1]
