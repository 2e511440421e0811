"""`python manage.py diagnose [--gpu NAME] [--launch-cmd CMD] [--answer KEY=VALUE] [--json] [FILE]`.

Prints the ordered fixes as plain text (rendered here, from the answer's records),
or with `--json` the object the REST API returns.
"""

from __future__ import annotations

import json
import sys
from collections.abc import Iterator
from typing import Any, BinaryIO, TextIO

from django.conf import settings
from django.core.management.base import BaseCommand, CommandError, CommandParser

from decisiontree.answer import (
    OTHER_SETUP,
    PROPOSED,
    RUNNER_UP,
    Diagnosis,
    NotHelpful,
    RankedFix,
    Verdict,
    changes_beside,
)
from decisiontree.fingerprint import shown_error
from decisiontree.logfile import LogUnreadable, excerpt
from decisiontree.traceback import InputRejected
from kb.services.diagnosis import diagnose
from kb.services.stored_diagnoses import drafts_line, drafts_of_error

CHUNK_BYTES = 1 << 20
PASTE_PROMPT = (
    "Paste the error (the traceback or log lines), then press Ctrl-D on a line of its own "
    "to diagnose it.\n"
)


class Command(BaseCommand):
    help = "Diagnose a traceback (from FILE or standard input): the ordered fixes, and why."

    def add_arguments(self, parser: CommandParser) -> None:
        parser.add_argument(
            "file",
            nargs="?",
            help="Traceback or whole server log (a large one is read at its start and end); "
            "standard input if omitted",
        )
        parser.add_argument("--gpu", help='GPU name, e.g. "RTX PRO 6000" or "H200"')
        parser.add_argument("--launch-cmd", dest="launch_command", help="The launch command")
        parser.add_argument("--model", help="Model repository id or name")
        parser.add_argument("--framework", help="sglang or vllm, optionally with a version")
        parser.add_argument("--framework-version", help="e.g. 0.5.9")
        parser.add_argument(
            "--answer",
            action="append",
            default=[],
            metavar="KEY=VALUE",
            help="Answer a follow-up question, e.g. --answer gpu.arch=sm_120 (repeatable)",
        )
        parser.add_argument("--json", action="store_true", help="Print the API's JSON object")

    def handle(self, *args: Any, **options: Any) -> None:
        answers = parse_answers(options["answer"])
        text, read = read_input(options["file"], prompt=self.stderr)
        if read:
            self.stderr.write(read)  # beside, not in, the --json object
        framework, version = split_framework(options["framework"], options["framework_version"])
        try:
            result = diagnose(
                text,
                launch_command=options["launch_command"],
                gpu=options["gpu"],
                model=options["model"],
                framework=framework,
                framework_version=version,
                answers=answers,
            )
        except InputRejected as exc:
            raise CommandError(str(exc)) from exc
        except KeyError as exc:  # an answer about a key no question asks
            raise CommandError(f"--answer: {exc.args[0]}") from None
        if options["json"]:
            from api.serializers import DiagnosisSerializer  # the API's own shape

            context = {"launch_command": options["launch_command"] or ""}
            answer = DiagnosisSerializer(result, context=context).data
            self.stdout.write(json.dumps(answer, indent=2))
        else:
            from api.serializers import known_good_of

            typed = options["launch_command"] or ""
            known_good = known_good_of(result, typed)
            self.stdout.write(render_text(result, corrected(result, typed), known_good))


def parse_answers(raw: list[str]) -> dict[str, str]:
    answers: dict[str, str] = {}
    for item in raw:
        key, equals, value = item.partition("=")
        if not equals or not key.strip() or not value.strip():
            raise CommandError(f"--answer {item!r}: write KEY=VALUE, e.g. gpu.arch=sm_120")
        answers[key.strip()] = value.strip()
    return answers


def read_input(path: str | None, *, prompt: TextIO | Any = None) -> tuple[str, str]:
    """The paste, and what was read of a log too large to read whole ("" when it was read
    whole): its start and its end, streamed (decisiontree.logfile)."""
    limit = settings.FIXGRAPH_MAX_PASTE_BYTES
    try:
        if path:
            with open(path, "rb") as handle:
                found = excerpt(chunks_of(handle), limit)
        else:
            if sys.stdin.isatty() and prompt is not None:
                prompt.write(PASTE_PROMPT)
            found = excerpt(chunks_of(sys.stdin.buffer), limit)
    except OSError as exc:
        raise CommandError(f"cannot read {path}: {exc.strerror or exc}") from exc
    except LogUnreadable as exc:
        raise CommandError(f"{path or 'standard input'}: {exc}") from None
    return found.text, found.describe(path or "standard input")


def chunks_of(handle: BinaryIO) -> Iterator[bytes]:
    """A buffered read returns less than asked only at the end of input. Stop there: a
    terminal's Ctrl-D ends the input once, and a read after it would wait for more."""
    while True:
        chunk = handle.read(CHUNK_BYTES)
        if chunk:
            yield chunk
        if len(chunk) < CHUNK_BYTES:
            return


def split_framework(framework: str | None, version: str | None) -> tuple[str | None, str | None]:
    """Accept "sglang 0.5.9" or "sglang==0.5.9" as well as --framework-version."""
    if framework and not version:
        for separator in ("==", " ", "@"):
            if separator in framework.strip():
                name, _, rest = framework.strip().partition(separator)
                return name.strip(), rest.strip() or None
    return framework, version


# --- plain text -------------------------------------------------------------------


def corrected(diagnosis: Diagnosis, launch_command: str | None) -> str | None:
    """The launch command (typed, else the one the paste holds) with the first fix applied."""
    from api.serializers import corrected_command_for, first_fix_to_try  # the API's own

    first = first_fix_to_try(diagnosis.fixes)
    context = {"launch_command": launch_command or ""}
    return corrected_command_for(first, diagnosis, context) if first else None


def render_text(
    diagnosis: Diagnosis, command: str | None = None, known_good: dict[str, Any] | None = None
) -> str:
    lines = [headline(diagnosis)]
    lines += [f"  {line}" for line in diagnosis.error_lines[1:]]
    if diagnosis.cause_elsewhere:
        lines += ["", " ".join(diagnosis.cause_elsewhere)]
    if diagnosis.flag_problems:
        unknown = "Flags FixGraph's flag tables do not know:"
        lines += ["", "Fix these first:" if diagnosis.refused_flags else unknown]
        lines += [f"  {problem.describe()}" for problem in diagnosis.flag_problems]
    if diagnosis.host_faults:
        serious = diagnosis.host_faults[0].serious
        lines += ["", "The GPU or its driver failed:" if serious else "The GPU reported:"]
        lines += [f"  {fault.describe()}" for fault in diagnosis.host_faults]
    if diagnosis.build_support:
        lines += ["", "Builds that cannot run on this GPU or its driver:"]
        lines += [f"  {reading.text}" for reading in diagnosis.build_support]
    if diagnosis.gpu_requirements:
        here = diagnosis.gpu_requirements[0].arch
        lines += ["", "Code that does not run on this GPU:" if here else "Code for some GPUs only:"]
        lines += [f"  {reading.text}" for reading in diagnosis.gpu_requirements]
    if diagnosis.tied_causes:
        lines += ["", diagnosis.tied_note]
        lines += [f"  - {tied.text}" for tied in diagnosis.tied_causes]
    if diagnosis.named_flags:
        lines += ["", "The error names these settings of your launch:"]
        lines += [f"  {named.describe()}" for named in diagnosis.named_flags]
    if diagnosis.memory_at_failure or diagnosis.memory_log or diagnosis.memory_readings:
        lines += ["", "The GPU's memory, as the error and the log give it:"]
        lines += [f"  {oom.describe()}" for oom in diagnosis.memory_at_failure]
        lines += [f"  {rank.describe()}" for rank in diagnosis.memory_log]
        lines += [f"  - {reading.text}" for reading in diagnosis.memory_readings]
    if diagnosis.not_as_launched:
        lines += ["", "The server did not run what its launch command said (from its log):"]
        lines += [
            f"  {item.flag}: launched {item.launched}, ran {item.ran}"
            for item in diagnosis.not_as_launched
        ]
    if diagnosis.verdict is Verdict.NONE:
        lines += render_next_step(diagnosis)
    if command:
        from api.serializers import compared_with  # the API's own words

        found = diagnosis.context.found_command
        source = compared_with("" if found else command, found)
        lines += [
            "",
            f"Corrected launch command (the first fix applied to {source}):",
            f"  {command}",
        ]
        if found and found.server_chosen:
            chosen = " ".join(f"--{name}" for name in found.server_chosen)
            lines.append(
                f"  (SGLang sets these itself when not given; check they are yours: {chosen})"
            )
    for fix in diagnosis.fixes:
        lines += render_fix(fix)
    if known_good:
        lines += render_known_good(known_good)
    if diagnosis.not_helpful:
        lines.append("")
        lines.append("Known NOT to help:")
        lines += [f"  - {_not_helpful_line(entry)}" for entry in diagnosis.not_helpful]
    for question in diagnosis.questions:
        lines.append("")
        answers = ", ".join(question.answers)
        lines.append(
            f"? {question.text} (answers: {answers}; re-run with --answer {question.key}=…)"
        )
    return "\n".join(lines) + "\n"


def headline(diagnosis: Diagnosis) -> str:
    """The verdict and the error: its line as pasted when there is one (the web page
    quotes it so too), else the signature's words, whose numbers read `<num>`."""
    signature = diagnosis.signature
    if diagnosis.error_lines:
        error = diagnosis.error_lines[0]
    elif signature:
        error = shown_error(signature.exception_type, signature.template)
    else:  # as the web page says it
        verdict = "No known match" if diagnosis.verdict is Verdict.NONE else diagnosis.verdict_label
        return f"{verdict}: the paste has no error line; matched on its words"
    verdict = diagnosis.verdict
    if diagnosis.refused_flags:
        return f"The server refused its command line: {error}"
    if verdict is Verdict.NONE:
        return f"No known match for {error}"
    return f"{diagnosis.verdict_label}: {error}"


def render_next_step(diagnosis: Diagnosis) -> list[str]:
    lines: list[str] = []
    if diagnosis.nearest:
        lines += ["", "Nearest findings, not taken:"]
        for near in diagnosis.nearest:
            lines.append(f"  - #{near.finding.id} {near.finding.title}: {near.why_not}")
            for fix in near.fixes:
                lines.append(f"      its fix: {fix.summary}")
                lines += [f"        ({note})" for note in fix.spellings]
        if any(near.fixes for near in diagnosis.nearest):
            lines.append(
                "    If one of their fixes fixes it, say so on the web page: your paste then "
                "teaches that finding this error."
            )
    if diagnosis.search_words:
        lines += ["", f"Search the known issues for: {' '.join(diagnosis.search_words)}"]
    fingerprint = diagnosis.signature.fingerprint if diagnosis.signature else ""
    drafts = drafts_of_error(fingerprint) if fingerprint else []
    if drafts:
        lines += ["", drafts_line([{"id": d.pk, "title": d.title} for d in drafts])]
    elif not diagnosis.cause_not_pasted:  # a draft of a wrapper would teach nothing
        lines += ["", "Once you solve it, start a finding from this paste on the web page."]
    return lines


def render_known_good(known_good: dict[str, Any]) -> list[str]:
    verified = f", verified {known_good['verified']}" if known_good["verified"] else ""
    lines = ["", f"Known to work on this setup ({known_good['title']}{verified}):"]
    lines.append(f"  {known_good['command']}")
    if known_good["differences"]:
        yours = known_good["compared_with"].capitalize()
        lines.append(f"  {yours} differs from it (yours -> known to work):")
        lines += [
            f"    {d['name']}: {d['yours'] or '(not set)'} -> {d['works'] or '(not set)'}"
            for d in known_good["differences"]
        ]
    return lines


def render_fix(fix: RankedFix) -> list[str]:
    notes = " (already applied)" if fix.already_applied else ""
    notes += f" ({PROPOSED})" if fix.proposed else ""
    notes += " (nothing in it fits your setup)" if fix.fits_nothing else ""
    notes += f" ({RUNNER_UP})" if fix.runner_up else ""
    summary = fix.summary or fix.fix.summary
    lines = ["", f"{fix.rank}. {summary}{notes}  [score {fix.score:.3f}]"]
    lines += [f"     {change}" for change in changes_beside(summary, fix.command_changes)]
    lines += [f"     not for your setup: {w.command_change} ({w.reason})" for w in fix.withheld]
    lines += [f"     ({note})" for note in fix.spellings]
    if fix.for_other_setup:
        lines.append(f"     {OTHER_SETUP} {'; '.join(fix.for_other_setup)}")
    lines.append(f"   finding {fix.finding.id}: {fix.finding.title}")
    lines += [f"   - {step.step}: {step.detail}" for step in fix.why]
    return lines


def _not_helpful_line(entry: NotHelpful) -> str:
    """The summary, and the changes beside it only where they say something else."""
    summary = entry.summary or entry.fix.summary
    changes = changes_beside(summary, entry.command_changes)
    shown = f"{summary} [{' '.join(changes)}]" if changes else summary
    return f"{shown}: {entry.reason}"
