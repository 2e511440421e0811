"""A server log attached instead of a paste (web form and API): read at its start and end
within the paste limit (decisiontree.logfile), never held whole in memory."""

from __future__ import annotations

from collections.abc import Mapping
from pathlib import PurePath
from typing import Any

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from decisiontree.logfile import LogUnreadable, excerpt, size

CHUNK_BYTES = 1 << 20
NAME_CHARS = 200
BODY_SLACK_BYTES = 100_000  # the form fields beside a paste or an attached log


class LogTooLarge(ValueError):
    pass


def send_log_instead() -> str:
    """What to do with a paste over the limit: the API reads a whole log by its ends."""
    return (
        f"send the whole log as a file instead (multipart/form-data, field `log`, up to "
        f"{size(settings.FIXGRAPH_MAX_LOG_BYTES)}): FixGraph reads its start and its end."
    )


def log_too_large_message() -> str:
    return (
        f"The log is larger than {size(settings.FIXGRAPH_MAX_LOG_BYTES)}: attach the part "
        "from the last start of the server to the crash."
    )


def declared_length(meta: Mapping[str, Any]) -> int:
    """The body's length as the client declared it (0 when it did not, or wrote nonsense):
    read before the body is, so an oversized one costs nothing."""
    try:
        return int(meta.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return 0


def log_body_too_large(meta: Mapping[str, Any]) -> bool:
    """Larger than any log within FIXGRAPH_MAX_LOG_BYTES could make the request."""
    return declared_length(meta) > settings.FIXGRAPH_MAX_LOG_BYTES + BODY_SLACK_BYTES


def read_log(uploaded: UploadedFile) -> tuple[str, str]:
    """(the text to diagnose, what was read of which file, for the answer's page)."""
    if (uploaded.size or 0) > settings.FIXGRAPH_MAX_LOG_BYTES:
        raise LogTooLarge(log_too_large_message())
    found = excerpt(uploaded.chunks(CHUNK_BYTES), settings.FIXGRAPH_MAX_PASTE_BYTES)
    # The browser's file name, without folders; shown escaped, never used as a path.
    name = PurePath(str(uploaded.name or "the log")).name[:NAME_CHARS] or "the log"
    unpacked = " unpacked" if found.stored == "gzip" else ""
    whole = f"{name}, read whole ({size(found.total_bytes)}{unpacked})"
    return found.text, found.describe(name) or whole


__all__ = [
    "BODY_SLACK_BYTES",
    "CHUNK_BYTES",
    "LogTooLarge",
    "LogUnreadable",
    "declared_length",
    "log_body_too_large",
    "log_too_large_message",
    "read_log",
    "send_log_instead",
]
