"""Page views, by page. Thin: they call kb.services and render templates."""

from kb.views.diagnose import (
    diagnose_page,
    diagnosis_delete,
    diagnosis_detail,
    fix_feedback,
    start_finding,
)
from kb.views.findings import finding_detail, validate_fix
from kb.views.review import merge_finding, reject_finding, review_finding, review_queue
from kb.views.runbook import runbook, runbook_markdown
from kb.views.search import finding_list

__all__ = [
    "diagnose_page",
    "diagnosis_delete",
    "diagnosis_detail",
    "finding_detail",
    "finding_list",
    "fix_feedback",
    "merge_finding",
    "reject_finding",
    "review_finding",
    "review_queue",
    "runbook",
    "runbook_markdown",
    "start_finding",
    "validate_fix",
]
