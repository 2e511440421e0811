"""Which sentences of a write-up are experiments, and which verdict belongs to each.

Short write-ups made up for each rule, in words other than the fixture write-ups use.
"""

from decisiontree.documents import extract_document
from decisiontree.records import ChangeAction, Outcome

TRACEBACK = """```
Traceback (most recent call last):
  File "/opt/venv/lib/python3.12/site-packages/vllm/worker.py", line 88, in init
    raise RuntimeError("CUDA error: out of memory")
RuntimeError: CUDA error: out of memory
```"""
LAUNCH = """```
vllm serve Qwen/Qwen2.5-7B-Instruct --max-num-seqs 256 --port 8000
```"""


def fixes_of(text):
    (finding,) = extract_document(text, "incident.md").findings
    return {
        " ".join(change.describe() for change in fix.changes): fix.outcome for fix in finding.fixes
    }


def test_it_takes_an_install_line_of_the_setup_as_context_not_as_a_fix():
    text = f"""# OOM on the L4 box

Our image is built from a slim base, then `pip install "vllm==0.10.0"` on top.
That image has worked on every other node we own.

{LAUNCH}

{TRACEBACK}

Upgrading with `pip install "vllm==0.10.2"` and relaunching: same error.
"""
    assert fixes_of(text) == {"vllm==0.10.2": Outcome.NO_EFFECT}


def test_a_summary_above_the_launch_still_counts_when_it_judges_itself():
    text = f"""# OOM on the L4 box

Summary: `--max-num-seqs 64` fixed it.

{LAUNCH}

{TRACEBACK}
"""
    assert fixes_of(text) == {"--max-num-seqs 64": Outcome.RESOLVES}


def test_original_command_otherwise_is_an_experiment_not_a_restated_setup():
    text = f"""# OOM on the L4 box

{LAUNCH}

{TRACEBACK}

Relaunched with `--max-num-seqs 32`, the original launch command otherwise. It serves now.
"""
    assert fixes_of(text) == {"--max-num-seqs 32": Outcome.RESOLVES}


def test_a_change_under_a_fix_heading_resolves_when_nothing_else_judges_it():
    text = f"""# OOM on the L4 box

{LAUNCH}

{TRACEBACK}

## Solution

Set `--max-num-seqs 48` in the unit file.
"""
    assert fixes_of(text) == {"--max-num-seqs 48": Outcome.RESOLVES}


def test_a_change_under_a_heading_that_is_not_a_fix_takes_no_verdict_from_it():
    text = f"""# OOM on the L4 box

{LAUNCH}

{TRACEBACK}

## Ideas for next week

Set `--max-num-seqs 48` in the unit file.
"""
    assert fixes_of(text) == {}


def test_a_fix_with_no_flag_is_read_from_the_first_sentence_under_a_fix_heading():
    text = f"""OOM on the L4 box
=================

{LAUNCH}

{TRACEBACK}

How we fixed it
---------------

Moved the second tenant's notebook off GPU 0 (it held 9 GiB), then restarted the server.
"""
    fixes = fixes_of(text)
    assert fixes == {"Moved the second tenant's notebook off GPU 0": Outcome.RESOLVES}


def test_a_fix_with_no_flag_is_read_from_a_cue_anywhere_in_the_story():
    text = f"""# OOM on the L4 box

{LAUNCH}

{TRACEBACK}

After an hour of this we fixed it by killing a stale Jupyter kernel that pinned 9 GiB.
A reboot of the host was not needed.
"""
    (finding,) = extract_document(text, "incident.md").findings
    (fix,) = finding.fixes
    assert fix.outcome is Outcome.RESOLVES
    assert [(c.action, c.value) for c in fix.changes] == [
        (ChangeAction.OTHER, "killing a stale Jupyter kernel that pinned 9 GiB")
    ]


def test_a_fix_in_words_that_did_not_help_is_not_a_fix():
    text = f"""# OOM on the L4 box

{LAUNCH}

{TRACEBACK}

The problem was not solved by restarting the container.
"""
    assert fixes_of(text) == {}


def test_a_logging_switch_is_how_one_looked_not_a_fix():
    text = f"""# OOM on the L4 box

{LAUNCH}

{TRACEBACK}

- `VLLM_LOGGING_LEVEL=DEBUG`: the allocator log shows the profiler run failing the same way.
- `--enforce-eager`: identical crash.
"""
    assert fixes_of(text) == {"--enforce-eager": Outcome.NO_EFFECT}


def test_a_list_item_that_runs_but_slower_is_partial_and_an_unset_is_a_change():
    text = f"""# OOM on the L4 box

VLLM_USE_V1=1 is exported in the service file.

{LAUNCH}

{TRACEBACK}

What I tried:

1. `--enforce-eager`. The engine loads and answers, but decode is roughly 40% slower.
2. Unsetting `VLLM_USE_V1`: it died in the same place. No change.
"""
    assert fixes_of(text) == {
        "--enforce-eager": Outcome.PARTIAL,
        "unset VLLM_USE_V1": Outcome.NO_EFFECT,
    }
