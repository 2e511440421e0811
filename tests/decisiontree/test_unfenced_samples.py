"""Error samples pasted into a write-up's prose without a fence: which lines a reader gets back
as the sample, whatever sits just above or around them."""

from __future__ import annotations

from decisiontree.documents import extract_document

OPENING = (
    "# Scheduler crash during warm-up\n\nThe scheduler on the H100 box went down during warm-up"
)
ENDING = "\nRaising `--mem-fraction-static` to 0.9 fixed it.\n"
LAUNCH_BLOCK = "```\npython -m sglang.launch_server --model-path acme/chat-large\n```\n"


def samples_of(text: str) -> list[str]:
    document = extract_document(text, "incident.md")
    assert document.format == "writeup"
    return [sample for finding in document.findings for sample in finding.samples]


def test_a_traceback_quoted_as_a_blockquote_is_one_sample_to_its_exception():
    quoted = (
        "> Traceback (most recent call last):\n"
        '>   File "/srv/app/scheduler.py", line 88, in run\n'
        ">     self.step()\n"
        '>   File "/srv/app/scheduler.py", line 41, in step\n'
        '>     raise RuntimeError("KV pool exhausted")\n'
        "> RuntimeError: KV pool exhausted\n"
    )

    assert samples_of(f"{OPENING}. Its log, as it scrolled by:\n\n{quoted}{ENDING}") == [
        quoted.rstrip("\n")
    ]


def test_a_traceback_right_under_a_code_block_keeps_its_first_line():
    traceback = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/scheduler.py", line 88, in run\n'
        "    self.step()\n"
        "RuntimeError: KV pool exhausted\n"
    )

    text = f"{OPENING} right after this launch:\n{LAUNCH_BLOCK}{traceback}{ENDING}"
    assert samples_of(text) == [traceback.rstrip("\n")]


def test_a_log_tail_right_under_a_code_block_keeps_the_code_line_it_starts_with():
    tail = (
        "    self.step()\n"
        '  File "/srv/app/scheduler.py", line 41, in step\n'
        '    raise RuntimeError("KV pool exhausted")\n'
        "RuntimeError: KV pool exhausted\n"
    )

    text = f"{OPENING}; the tail of its log:\n{LAUNCH_BLOCK}{tail}{ENDING}"
    assert samples_of(text) == [tail.rstrip("\n")]


def test_two_blank_lines_inside_a_traceback_are_bridged_and_three_end_it():
    head = (
        "Traceback (most recent call last):\n"
        '  File "/srv/app/server.py", line 12, in main\n'
        "    serve()\n"
        "\n\n"
        '  File "/srv/app/scheduler.py", line 88, in run\n'
        "    self.step()\n"
    )
    rest = (
        '  File "/srv/app/scheduler.py", line 41, in step\n'
        '    raise RuntimeError("KV pool exhausted")\n'
        "RuntimeError: KV pool exhausted\n"
    )

    text = f"{OPENING}; its log, with the terminal's blank lines:\n\n{head}\n\n\n{rest}{ENDING}"
    assert samples_of(text) == [head.rstrip("\n"), rest.rstrip("\n")]
