"""Loaders: turn a file's bytes into text a :class:`~remy_retriever.schema.document.Document`
can hold, one module per format.

Built in: ``.pdf`` (``pypdf``, the ``pdf`` extra), ``.html``/``.htm`` (BeautifulSoup and
``markdownify``, the ``html`` extra), ``.docx`` (``python-docx``, the ``docx`` extra) and
``.md``/``.markdown``/``.txt``/``.rst`` (no extra). Each optional library is imported only
when a file of its type is read; :func:`register_loader` adds a loader for another suffix.

:func:`load_file` and :func:`load_bytes` run the built-in loaders in worker processes
(:class:`ParserPool`) under a time and memory budget per file (:class:`ParseLimits`); a
file over it raises :class:`ParseBudgetError` (:mod:`.reading`, :mod:`.worker`).
"""

from __future__ import annotations

from ..errors import ParseBudgetError, ParserBusyError
from .base import (
    LoadedText,
    Loader,
    MissingExtraError,
    loader_for,
    register_loader,
    registered_suffixes,
)
from .docx import load_docx
from .html import load_html
from .limits import ParseLimits
from .pdf import load_pdf
from .reading import load_bytes, load_file
from .text import first_h1, load_text
from .worker import ParserPool

__all__ = [
    "LoadedText",
    "Loader",
    "MissingExtraError",
    "ParseBudgetError",
    "ParseLimits",
    "ParserBusyError",
    "ParserPool",
    "first_h1",
    "load_bytes",
    "load_docx",
    "load_file",
    "load_html",
    "load_pdf",
    "load_text",
    "loader_for",
    "register_loader",
    "registered_suffixes",
]
