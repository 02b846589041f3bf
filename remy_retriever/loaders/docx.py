"""Word documents (``.docx``) through ``python-docx`` (the ``docx`` extra).

Paragraphs in the styles ``Title`` and ``Heading 1``-``Heading 6`` (or styles based on
them) become ``#`` headings; ``Heading 7``-``9`` become level 6. List paragraphs become
``- `` items (indented by level), tables become pipe rows. Body order is kept; page
headers, footers and comments are left out.
"""

from __future__ import annotations

import io
import re
import zipfile
from typing import Any

from ..errors import InvalidDocumentError, ParseBudgetError, RemyError
from .base import LoadedText, MissingExtraError, clean_text, clean_title, missing_extra_message
from .limits import active_limits

__all__ = ["load_docx"]

_HEADING_STYLE = re.compile(r"heading\s*([1-9])", re.IGNORECASE)
# A .docx is a zip file: refuse one whose parts would expand beyond this (a zip bomb).
_MAX_UNPACKED_BYTES = 512 * 2**20
_MAX_STYLE_DEPTH = 10
# lxml takes up to about this many bytes of memory per byte of XML it parses, so the XML
# parts may be at most this part of the memory budget.
_XML_SHARE = 20
# Word numbers list levels 0-8; a deeper level is indented as the deepest.
_MAX_LIST_LEVEL = 8


def _python_docx() -> Any:
    try:
        # lazy: python-docx is the optional 'docx' extra, imported when a DOCX is read
        import docx
    except ImportError as exc:
        msg = missing_extra_message("docx", exc)
        raise MissingExtraError(msg) from exc
    return docx


def load_docx(data: bytes, name: str) -> LoadedText:
    """The document's text with headings as ``#`` lines; title from its core properties,
    else its first Title or Heading 1 paragraph."""
    docx = _python_docx()
    _check_zip(data, name)
    try:
        document = docx.Document(io.BytesIO(data))
        blocks: list[str] = []
        first_heading: str | None = None
        for item in document.iter_inner_content():
            if hasattr(item, "rows"):
                blocks.append(_table(item))
                continue
            block, level = _paragraph(item)
            if level == 1 and first_heading is None:
                first_heading = clean_title(item.text)
            blocks.append(block)
        title = clean_title(document.core_properties.title) or first_heading
    except RemyError:
        raise
    except Exception as exc:  # python-docx and lxml raise many kinds on a damaged file
        msg = f"cannot read DOCX {name!r}: {type(exc).__name__}: {exc}; is it a valid .docx?"
        raise InvalidDocumentError(msg) from exc
    return LoadedText(text=_join(blocks), title=title, type="docx")


def _join(blocks: list[str]) -> str:
    """Blocks separated by a blank line, except between items of one list."""
    out: list[str] = []
    for block in (b for b in blocks if b):
        if out and _is_item(out[-1]) and _is_item(block):
            out.append("\n")
        elif out:
            out.append("\n\n")
        out.append(block)
    return clean_text("".join(out))


def _is_item(block: str) -> bool:
    return block.lstrip(" ").startswith("- ")


def _check_zip(data: bytes, name: str) -> None:
    try:
        with zipfile.ZipFile(io.BytesIO(data)) as archive:
            infos = archive.infolist()
        unpacked = sum(info.file_size for info in infos)
        xml = sum(info.file_size for info in infos if info.filename.endswith((".xml", ".rels")))
    except (zipfile.BadZipFile, OSError, ValueError) as exc:
        msg = (
            f"cannot read DOCX {name!r}: it is not a .docx (zip) file ({exc}); an old binary "
            ".doc must be saved as .docx first"
        )
        raise InvalidDocumentError(msg) from None
    if unpacked > _MAX_UNPACKED_BYTES:
        msg = (
            f"cannot read DOCX {name!r}: its parts expand to {unpacked:,} bytes, over "
            f"{_MAX_UNPACKED_BYTES:,} (a zip bomb?)"
        )
        raise InvalidDocumentError(msg)
    limits = active_limits()
    if limits is not None and xml > limits.memory_bytes // _XML_SHARE:
        msg = (
            f"cannot read DOCX {name!r}: too large or too slow to parse (its XML parts "
            f"expand to {xml:,} bytes; parsing them would take more than the memory budget "
            f"of {limits.describe()}, which allows {limits.memory_bytes // _XML_SHARE:,} "
            "bytes of XML); split the document, or raise the budget (ParseLimits, remy "
            "ingest --max-parse-memory)"
        )
        raise ParseBudgetError(msg)


def _paragraph(paragraph: Any) -> tuple[str, int]:
    """The paragraph as Markdown, and its heading level (0 when not a heading)."""
    text = " ".join(paragraph.text.split())
    if not text:
        return "", 0
    level = _heading_level(paragraph.style)
    if level:
        return f"{'#' * level} {text}", level
    list_level = _list_level(paragraph)
    if list_level is not None:
        return f"{'  ' * list_level}- {text}", 0
    return text, 0


def _heading_level(style: Any) -> int:
    for _ in range(_MAX_STYLE_DEPTH):
        if style is None:
            return 0
        name = str(style.name or "")
        if name.lower() == "title":
            return 1
        match = _HEADING_STYLE.fullmatch(name.strip())
        if match:
            return min(int(match.group(1)), 6)
        style = style.base_style
    return 0


def _list_level(paragraph: Any) -> int | None:
    """The list nesting level (0-based), or None when the paragraph is not a list item."""
    p_pr = paragraph._p.pPr
    num_pr = p_pr.numPr if p_pr is not None else None
    if num_pr is not None:
        ilvl = num_pr.ilvl
        level = int(ilvl.val) if ilvl is not None and ilvl.val is not None else 0
        return min(max(level, 0), _MAX_LIST_LEVEL)
    style_name = str(paragraph.style.name or "") if paragraph.style is not None else ""
    if style_name.lower().startswith("list"):
        # "List Bullet 2" is level 1: the number ending the name (read without a regular
        # expression, which would backtrack over a long run of digits)
        stem = style_name.rstrip()
        digits = len(stem) - len(stem.rstrip("0123456789"))
        if not digits:
            return 0
        number = int(stem[-digits:]) if digits <= 3 else _MAX_LIST_LEVEL + 1
        return min(max(number - 1, 0), _MAX_LIST_LEVEL)
    return None


def _table(table: Any) -> str:
    rows: list[str] = []
    for row in table.rows:
        cells: list[str] = []
        seen: list[Any] = []
        for cell in row.cells:
            if any(cell._tc is other for other in seen):  # a merged cell repeats
                continue
            seen.append(cell._tc)
            cells.append(" ".join(cell.text.split()).replace("|", "\\|"))
        if any(cells):
            rows.append("| " + " | ".join(cells) + " |")
    if len(rows) > 1:
        width = rows[0].count(" | ") + 1
        rows.insert(1, "|" + " --- |" * width)
    return "\n".join(rows)
