"""A server log attached instead of a paste (web form and API): read at its start and end
within the paste limit (decisiontree.logfile), never held whole in memory."""

from __future__ import annotations

from pathlib import PurePath

from django.conf import settings
from django.core.files.uploadedfile import UploadedFile

from decisiontree.logfile import excerpt, size

CHUNK_BYTES = 1 << 20
NAME_CHARS = 200


class LogTooLarge(ValueError):
    pass


def log_too_large_message() -> str:
    return (
        f"The log is larger than {size(settings.FIXGRAPH_MAX_LOG_BYTES)}: attach the part "
        "from the last start of the server to the crash."
    )


def read_log(uploaded: UploadedFile) -> tuple[str, str]:
    """(the text to diagnose, what was read of which file, for the answer's page)."""
    if (uploaded.size or 0) > settings.FIXGRAPH_MAX_LOG_BYTES:
        raise LogTooLarge(log_too_large_message())
    found = excerpt(uploaded.chunks(CHUNK_BYTES), settings.FIXGRAPH_MAX_PASTE_BYTES)
    # The browser's file name, without folders; shown escaped, never used as a path.
    name = PurePath(str(uploaded.name or "the log")).name[:NAME_CHARS] or "the log"
    return found.text, found.describe(name) or f"{name}, read whole ({size(found.total_bytes)})"
