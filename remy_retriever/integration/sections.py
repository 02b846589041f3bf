"""Where a framework piece sits in its source: its offset and its section.

A splitter's piece (a LangChain Document with ``start_index``, a LlamaIndex node with
``start_char_idx``) stored on its own keeps its place through ``Document.text_start``,
so its citation's offsets are the source file's. Its section comes from the header
metadata a Markdown splitter records: LlamaIndex's ``header_path`` (``"/Guide/Install/"``)
(the sections around the node, to which the heading line the node's text starts with,
if any, is added) or LangChain's ``MarkdownHeaderTextSplitter`` keys named
``"Header <level>"`` or ``"h<level>"``; :func:`heading_path_of` reads either, outermost
first.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

__all__ = ["heading_path_of", "piece_place"]

_LEVEL_KEY = re.compile(r"(?:header|h)\s*_?([1-6])", re.IGNORECASE)
_HEADING_LINE = re.compile(r"#{1,6}[ \t]+([^\n]*?)[ \t#]*(?:\n|$)")


def heading_path_of(
    metadata: Mapping[str, Any], title: str | None = None, text: str = ""
) -> tuple[str, ...] | None:
    """The section ``metadata`` names (after ``title`` when given), or ``None`` when it
    names none (remy then uses the title). ``text``: the piece's text."""
    headings: list[str] = []
    header_path = metadata.get("header_path")
    if isinstance(header_path, str):
        headings = [part.strip() for part in header_path.split("/") if part.strip()]
        own = _HEADING_LINE.match(text.lstrip())
        if own is not None and own.group(1).strip():
            headings.append(own.group(1).strip())
    if not headings:
        levels = []
        for key, value in metadata.items():
            found = _LEVEL_KEY.fullmatch(key) if isinstance(key, str) else None
            if found is not None and isinstance(value, str) and value.strip():
                levels.append((int(found.group(1)), value.strip()))
        headings = [value for _, value in sorted(levels)]
    if not headings:
        return None
    lead = [title.strip()] if title and title.strip() and title.strip() != headings[0] else []
    return (*lead, *headings)


def piece_place(
    metadata: Mapping[str, Any], start: int | None, title: str | None = None, text: str = ""
) -> dict[str, Any]:
    """The ``Document`` fields placing a piece stored alone: ``text_start`` (its offset,
    0 when unknown) and ``heading_path`` (see :func:`heading_path_of`)."""
    return {"text_start": start or 0, "heading_path": heading_path_of(metadata, title, text)}
