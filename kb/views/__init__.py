"""Page views, by page. Thin: they call kb.services and render templates."""

from kb.views.check import launch_check_page
from kb.views.diagnose import diagnose_page, diagnosis_delete, diagnosis_detail, start_finding
from kb.views.feedback import (
    feedback_undo,
    feedback_worked_instead,
    fix_feedback,
    learn_paste,
)
from kb.views.findings import finding_detail, findings_markdown, validate_fix
from kb.views.review import merge_finding, reject_finding, review_finding, review_queue
from kb.views.runbook import runbook, runbook_markdown
from kb.views.runs import cancel_run, run_again, run_detail, run_list
from kb.views.search import finding_list

__all__ = [
    "cancel_run",
    "diagnose_page",
    "diagnosis_delete",
    "diagnosis_detail",
    "feedback_undo",
    "feedback_worked_instead",
    "finding_detail",
    "findings_markdown",
    "finding_list",
    "fix_feedback",
    "launch_check_page",
    "learn_paste",
    "merge_finding",
    "reject_finding",
    "review_finding",
    "review_queue",
    "runbook",
    "runbook_markdown",
    "run_again",
    "run_detail",
    "run_list",
    "start_finding",
    "validate_fix",
]
