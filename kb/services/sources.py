"""The part of a source document a finding came from, and where to edit it.

A FINDINGS.md holds many findings, one `## ` section each: a finding shows its own
section, not the file from its top. A write-up tells one story, so it is shown whole.
"""

from __future__ import annotations

from dataclasses import dataclass
from pathlib import PurePosixPath
from urllib.parse import quote

from django.conf import settings

from decisiontree.documents.structure import fences_in, heading, lines_of, prose_mask
from kb.models import Finding, SourceDocument
from kb.services.ingest import slugify_title


@dataclass(frozen=True)
class Excerpt:
    document: SourceDocument
    text: str
    first_line: int  # 1-based line of the excerpt in the document
    whole: bool  # the excerpt is the whole document

    @property
    def path(self) -> str:
        return repository_path(self.document)

    @property
    def edit_url(self) -> str:
        """Where the team edits this text (FIXGRAPH_SOURCE_EDIT_URL); "" when not set."""
        return edit_url(self.document, self.first_line)


def excerpt(document: SourceDocument, finding: Finding) -> Excerpt:
    """The finding's entry in `document`, or the whole document when it has no entries
    or none of them is the finding's."""
    if document.format == SourceDocument.Format.FINDINGS_MD:
        found = entry_lines(document.content, finding, own=document.pk == finding.origin_id)
        if found is not None:
            start, end, lines = found
            return Excerpt(document, "\n".join(lines[start:end]).strip("\n"), start + 1, False)
    return Excerpt(document, document.content, 1, True)


def entry_lines(text: str, finding: Finding, *, own: bool) -> tuple[int, int, list[str]] | None:
    """(first, end, lines): the `## ` section of the finding, found by the key it was
    ingested under (its title, made unique in the document) or by its title."""
    lines = lines_of(text)
    prose = prose_mask(lines, fences_in(lines))
    sections: list[tuple[int, str]] = []
    for number, line in enumerate(lines):
        found = heading(line) if prose[number] else None
        if found is not None and found[0] <= 2:
            sections.append((number, found[1] if found[0] == 2 else ""))
    wanted = section_index(sections, finding, own=own)
    if wanted is None:
        return None
    end = sections[wanted + 1][0] if wanted + 1 < len(sections) else len(lines)
    return sections[wanted][0], end, lines


def section_index(sections: list[tuple[int, str]], finding: Finding, *, own: bool) -> int | None:
    seen: dict[str, int] = {}
    by_title = None
    for index, (_, title) in enumerate(sections):
        if not title:
            continue
        key = slugify_title(title) or "finding"
        seen[key] = seen.get(key, 0) + 1
        keyed = key if seen[key] == 1 else f"{key}-{seen[key]}"
        if own and finding.origin_key and keyed == finding.origin_key:
            return index
        if by_title is None and title.strip() == finding.title.strip():
            by_title = index
    return by_title


def repository_path(document: SourceDocument) -> str:
    """The document's path as the team's repository knows it: relative to the project
    when it was ingested from inside it (`ingest /srv/fixgraph/knowledge/`)."""
    path = PurePosixPath(document.path)
    try:
        return str(path.relative_to(settings.BASE_DIR))
    except ValueError:
        return document.path


def edit_url(document: SourceDocument, line: int) -> str:
    template = getattr(settings, "FIXGRAPH_SOURCE_EDIT_URL", "")
    if not template or not document.path:
        return ""
    return template.format(path=quote(repository_path(document).lstrip("/")), line=line)
