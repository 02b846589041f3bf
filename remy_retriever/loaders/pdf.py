"""PDF through ``pypdf`` (the ``pdf`` extra), page by page.

pypdf reads text in content-stream order, which is reading order for the two-column
layouts that LaTeX, Word and reportlab write; pdfplumber, which reads by position, ran the
two columns together line by line (see the loaders tests and the #13 notes). A word split
by a hyphen at a line end is joined. A line set larger than the body text becomes a ``#``
heading (larger sizes, higher levels), for the heading-aware chunker. Pages are separated
by a blank line, and :attr:`LoadedText.pages` records where each starts, so a chunk knows
its pages.
"""

from __future__ import annotations

import contextlib
import io
import math
import re
from collections import Counter
from collections.abc import Iterator
from typing import Any

from ..errors import InvalidDocumentError, ParseBudgetError, RemyError
from .base import LoadedText, MissingExtraError, clean_text, clean_title, missing_extra_message
from .limits import active_limits

__all__ = ["load_pdf"]

_PAGE_BREAK = "\n\n"
# "photo-\ngraphed" -> "photographed": a hyphen after two letters at a line end, with a
# lowercase letter starting the next line.
_HYPHEN_BREAK = re.compile(r"(?<=[^\W\d_][^\W\d_])-[ \t]*\n[ \t]*(?=[^\W\d_A-Z])")
_PLACEHOLDER_TITLES = frozenset({"untitled", "anonymous", "(anonymous)", "untitled document"})
_MAX_HEADING_WORDS = 15
# A line is a heading when its font is at least this much larger than the body text's.
_HEADING_SCALE = 1.15
# Under a budget, one stream may decompress to at most this part of the memory budget.
_STREAM_SHARE = 8
# pypdf's caps on what one stream may take, as configuration fields and as the module
# constants of versions before its Configuration.
_CAPS = (
    "maximum_declared_stream_length",
    "array_based_stream_maximum_output_length",
    "jbig2_maximum_output_length",
    "lzw_maximum_output_length",
    "run_length_maximum_output_length",
    "zlib_maximum_output_length",
    "brotli_maximum_output_length",
    "image_maximum_buffer_size",
    "stream_decoding_work_maximum_length",
)
_LEGACY_CAPS = (
    "MAX_DECLARED_STREAM_LENGTH",
    "MAX_ARRAY_BASED_STREAM_OUTPUT_LENGTH",
    "JBIG2_MAX_OUTPUT_LENGTH",
    "LZW_MAX_OUTPUT_LENGTH",
    "RUN_LENGTH_MAX_OUTPUT_LENGTH",
    "ZLIB_MAX_OUTPUT_LENGTH",
)


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
    with _stream_caps(pypdf):
        return _load(pypdf, data, name)


def _load(pypdf: Any, data: bytes, name: str) -> LoadedText:
    limit_reached = getattr(pypdf.errors, "LimitReachedError", ())  # pypdf 5.1 and later
    try:
        reader = pypdf.PdfReader(io.BytesIO(data))
        if reader.is_encrypted and not _decrypted(reader):
            msg = (
                f"cannot read PDF {name!r}: it is encrypted (password-protected); "
                "save a decrypted copy (e.g. qpdf --decrypt) and ingest that"
            )
            raise InvalidDocumentError(msg)
        read = [_read_page(page) for page in reader.pages]
        meta_title = _metadata_title(reader)
    except RemyError:
        raise
    except limit_reached as exc:
        limits = active_limits()
        budget = f" (the budget per file is {limits.describe()})" if limits else ""
        msg = (
            f"cannot read PDF {name!r}: too large or too slow to parse: {exc}{budget}; "
            "split the file, or raise the budget (ParseLimits, remy ingest "
            "--max-parse-memory)"
        )
        raise ParseBudgetError(msg) from None
    except Exception as exc:  # pypdf raises many kinds on a damaged file
        msg = f"cannot read PDF {name!r}: {type(exc).__name__}: {exc}; is it a valid PDF?"
        raise InvalidDocumentError(msg) from exc
    texts = _mark_headings(read)
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


@contextlib.contextmanager
def _stream_caps(pypdf: Any) -> Iterator[None]:
    """Under a budget (:func:`active_limits`), cap what pypdf may decompress from one
    stream to a share of the memory budget, so a stream that inflates past it is refused
    before it is materialised. pypdf 6.4 and later take a configuration; earlier ones
    read module constants (then this runs in a worker process, which is alone in it)."""
    limits = active_limits()
    if limits is None:
        yield
        return
    most = limits.memory_bytes // _STREAM_SHARE
    apply = getattr(pypdf, "apply_configuration", None)
    if apply is not None:
        current = pypdf.get_configuration()
        caps = {f: min(getattr(current, f), most) for f in _CAPS if hasattr(current, f)}
        with apply(**caps):
            yield
        return
    for legacy in _LEGACY_CAPS:
        if hasattr(pypdf.filters, legacy):
            setattr(pypdf.filters, legacy, min(getattr(pypdf.filters, legacy), most))
    yield


def _decrypted(reader: Any) -> bool:
    """Open a PDF encrypted with an empty user password (only an owner password, as
    many published PDFs are); anything else stays closed."""
    try:
        return bool(reader.decrypt(""))
    except Exception:  # a missing crypto library or an unknown scheme: treat as locked
        return False


def _read_page(page: Any) -> tuple[str, list[tuple[float, str]]]:
    """The page's text, and its text runs with their rendered font size."""
    runs: list[tuple[float, str]] = []

    def visit(text: str, cm: Any, tm: Any, font: Any, size: Any) -> None:
        run = " ".join(text.split())
        if run and isinstance(size, (int, float)):
            try:
                scale = math.hypot(tm[2], tm[3]) * math.hypot(cm[2], cm[3])
            except (TypeError, IndexError):
                scale = 1.0
            runs.append((round(float(size) * scale * 2) / 2, run))

    text = page.extract_text(visitor_text=visit) or ""
    return clean_text(_HYPHEN_BREAK.sub("", clean_text(text))), runs


def _mark_headings(read: list[tuple[str, list[tuple[float, str]]]]) -> list[str]:
    """The pages' texts with heading lines as ``#`` lines. A heading is a whole line
    set in one run of text larger than the body text (the size most characters have),
    short and with letters; the larger the size, the higher the level."""
    chars: Counter[float] = Counter()
    for _, runs in read:
        for size, run in runs:
            chars[size] += len(run)
    if not chars:
        return [text for text, _ in read]
    body = chars.most_common(1)[0][0]
    heads = [
        {run: size for size, run in runs if size >= body * _HEADING_SCALE and _short(run)}
        for _, runs in read
    ]
    sizes = sorted({size for page in heads for size in page.values()}, reverse=True)
    level = {size: min(i + 1, 6) for i, size in enumerate(sizes)}
    out: list[str] = []
    for (text, _), page_heads in zip(read, heads):
        lines = text.split("\n")
        for i, line in enumerate(lines):
            found = page_heads.get(" ".join(line.split()))
            if found is not None and not line.startswith("#"):
                lines[i] = f"{'#' * level[found]} {line.strip()}"
        out.append("\n".join(lines))
    return out


def _short(run: str) -> bool:
    return (
        len(run.split()) <= _MAX_HEADING_WORDS
        and sum(char.isalpha() for char in run) >= 2
        and not run.endswith((".", ",", ";"))
    )


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
    line = first.split("\n", 1)[0].lstrip("#").strip()
    if (
        len(line.split()) <= _MAX_HEADING_WORDS
        and any(char.isalpha() for char in line)
        and not line.endswith((".", ",", ";", ":"))
    ):
        return clean_title(line)
    return None
