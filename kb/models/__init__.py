"""The knowledge base's records, by topic."""

from kb.models.diagnoses import StoredDiagnosis
from kb.models.findings import (
    ErrorSample,
    ErrorSignature,
    Finding,
    FindingGpu,
    Fix,
    FixFeedback,
    FlagSetting,
    SignatureDecision,
    SourceDocument,
)
from kb.models.health import WorkerHeartbeat
from kb.models.revision import KnowledgeRevision
from kb.models.search import FindingSearchDocument, GraphWords, SearchRefresh, SearchWord
from kb.models.validation import Host, ValidationRun
from kb.models.vocabulary import Flag, FrameworkRelease, Hardware, LanguageModel

__all__ = [
    "ErrorSample",
    "ErrorSignature",
    "Finding",
    "FindingGpu",
    "FindingSearchDocument",
    "GraphWords",
    "Fix",
    "FixFeedback",
    "Flag",
    "FlagSetting",
    "FrameworkRelease",
    "Hardware",
    "Host",
    "KnowledgeRevision",
    "LanguageModel",
    "SearchRefresh",
    "SearchWord",
    "SignatureDecision",
    "SourceDocument",
    "StoredDiagnosis",
    "ValidationRun",
    "WorkerHeartbeat",
]
