"""The loaders remy brings, by suffix (registered on import); the ones
:mod:`.worker` runs under a budget."""

from __future__ import annotations

from .base import Loader, register_loader
from .docx import load_docx
from .html import load_html
from .pdf import load_pdf
from .text import load_text

__all__ = ["BUILT_IN_LOADERS"]

#: The built-in loaders, by lowercase suffix.
BUILT_IN_LOADERS: dict[str, Loader] = {
    ".pdf": load_pdf,
    ".html": load_html,
    ".htm": load_html,
    ".docx": load_docx,
    ".md": load_text,
    ".markdown": load_text,
    ".txt": load_text,
    ".rst": load_text,
}
for _suffix, _loader in BUILT_IN_LOADERS.items():
    register_loader(_suffix, _loader, replace=True)
