"""Loaders: turn a file's bytes into text a :class:`~remy_retriever.schema.document.Document`
can hold, one module per format.

Built in: ``.pdf`` (``pypdf``, the ``pdf`` extra), ``.html``/``.htm`` (BeautifulSoup and
``markdownify``, the ``html`` extra), ``.docx`` (``python-docx``, the ``docx`` extra) and
``.md``/``.markdown``/``.txt``/``.rst`` (no extra). Each optional library is imported only
when a file of its type is read; :func:`register_loader` adds a loader for another suffix.
"""

from __future__ import annotations

from .base import (
    LoadedText,
    Loader,
    MissingExtraError,
    load_file,
    loader_for,
    register_loader,
    registered_suffixes,
)
from .docx import load_docx
from .html import load_html
from .pdf import load_pdf
from .text import first_h1, load_text

__all__ = [
    "LoadedText",
    "Loader",
    "MissingExtraError",
    "first_h1",
    "load_docx",
    "load_file",
    "load_html",
    "load_pdf",
    "load_text",
    "loader_for",
    "register_loader",
    "registered_suffixes",
]

for _suffix, _loader in (
    (".pdf", load_pdf),
    (".html", load_html),
    (".htm", load_html),
    (".docx", load_docx),
    (".md", load_text),
    (".markdown", load_text),
    (".txt", load_text),
    (".rst", load_text),
):
    register_loader(_suffix, _loader, replace=True)
