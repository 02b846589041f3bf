"""PDF through ``pypdf`` (the ``pdf`` extra), page by page.

pypdf reads text in content-stream order, which is reading order for the two-column
layouts that LaTeX, Word and reportlab write; pdfplumber, which reads by position, ran the
two columns together line by line (see the loaders tests and the #13 notes). A word split
by a hyphen at a line end is joined. Pages are separated by a blank line, and
:attr:`LoadedText.pages` records where each starts, so a chunk knows its pages.
"""

from __future__ import annotations

import io
import re
from typing import Any

from ..errors import InvalidDocumentError, RemyError
from .base import LoadedText, MissingExtraError, clean_text, clean_title, missing_extra_message

__all__ = ["load_pdf"]

_PAGE_BREAK = "\n\n"
# "photo-\ngraphed" -> "photographed": a hyphen after two letters at a line end, with a
# lowercase letter starting the next line.
_HYPHEN_BREAK = re.compile(r"(?<=[^\W\d_][^\W\d_])-[ \t]*\n[ \t]*(?=[^\W\d_A-Z])")
_PLACEHOLDER_TITLES = frozenset({"untitled", "anonymous", "(anonymous)", "untitled document"})
_MAX_HEADING_WORDS = 15


def _pypdf() -> Any:
    try:
        # lazy: pypdf is the optional 'pdf' extra, imported when a PDF is read
        import pypdf
    except ImportError as exc:
        msg = missing_extra_message("pdf", exc)
        raise MissingExtraError(msg) from exc
    return pypdf


def load_pdf(data: bytes, name: str) -> LoadedText:
    """The text of a PDF, page by page; title from its metadata, else its first
    heading-like line. A PDF with no text layer at all is refused (OCR is not done)."""
    pypdf = _pypdf()
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not _decrypted(reader):
            msg = (
                f"cannot read PDF {name!r}: it is encrypted (password-protected); "
                "save a decrypted copy (e.g. qpdf --decrypt) and ingest that"
            )
            raise InvalidDocumentError(msg)
        texts = [_page_text(page) for page in reader.pages]
        meta_title = _metadata_title(reader)
    except RemyError:
        raise
    except Exception as exc:  # pypdf raises many kinds on a damaged file
        msg = f"cannot read PDF {name!r}: {type(exc).__name__}: {exc}; is it a valid PDF?"
        raise InvalidDocumentError(msg) from exc
    if not any(texts):
        msg = (
            f"cannot read PDF {name!r}: no extractable text (OCR is not supported); it has "
            f"{len(texts)} page(s) but no text layer (scanned?): run OCR on it first (e.g. "
            "ocrmypdf) and ingest the result"
        )
        raise InvalidDocumentError(msg)
    pages: list[int] = []
    pos = 0
    for text in texts:
        pages.append(pos)
        pos += len(text) + len(_PAGE_BREAK)
    return LoadedText(
        text=_PAGE_BREAK.join(texts),
        title=meta_title or _heading_like(texts),
        type="pdf",
        pages=tuple(pages),
    )


def _decrypted(reader: Any) -> bool:
    """Open a PDF encrypted with an empty user password (only an owner password, as
    many published PDFs are); anything else stays closed."""
    try:
        return bool(reader.decrypt(""))
    except Exception:  # a missing crypto library or an unknown scheme: treat as locked
        return False


def _page_text(page: Any) -> str:
    return clean_text(_HYPHEN_BREAK.sub("", clean_text(page.extract_text() or "")))


def _metadata_title(reader: Any) -> str | None:
    try:
        title = clean_title(reader.metadata.title if reader.metadata else None)
    except Exception:  # a damaged info dictionary: fall back to the text
        return None
    if title is None or title.lower() in _PLACEHOLDER_TITLES:
        return None
    return title


def _heading_like(texts: list[str]) -> str | None:
    """The first line of the first page with text, when it looks like a heading: short,
    with a letter, not ending like a sentence."""
    first = next(text for text in texts if text)
    line = first.split("\n", 1)[0].strip()
    if (
        len(line.split()) <= _MAX_HEADING_WORDS
        and any(char.isalpha() for char in line)
        and not line.endswith((".", ",", ";", ":"))
    ):
        return clean_title(line)
    return None
