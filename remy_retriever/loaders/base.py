"""What every loader shares: :class:`LoadedText`, the registry of loaders by file suffix,
the text cleaning, and :class:`MissingExtraError`.

A loader is a function ``(content: bytes, name: str) -> LoadedText``. It raises
:class:`~remy_retriever.errors.InvalidDocumentError` for a file it cannot use (the
message says why and what to do) and :class:`MissingExtraError` when the library it
needs is not installed. Loaders only turn bytes into text; nothing here touches a store.
"""

from __future__ import annotations

import os
import re
from collections.abc import Callable
from dataclasses import dataclass

from ..errors import InvalidInputError, MissingExtraError
from ..util.reprs import short_repr

__all__ = [
    "LoadedText",
    "Loader",
    "MissingExtraError",
    "clean_text",
    "clean_title",
    "loader_for",
    "missing_extra_message",
    "register_loader",
    "registered_suffixes",
]

#: A suffix: a dot, then letters, digits, ``_``, ``+`` or ``-`` (no further dot).
_SUFFIX = re.compile(r"\.[A-Za-z0-9][A-Za-z0-9_+-]{0,31}")
# C0 controls other than tab and newline (and DEL): never useful in indexed text.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_MAX_TITLE_CHARS = 300


@dataclass(frozen=True)
class LoadedText:
    """The text a loader got out of one file, with what a citation needs.

    ``text`` is Markdown-ish: headings are ``#`` lines, so the heading-aware chunker
    sees them. ``pages`` (PDFs) holds the character offset in ``text`` where each page
    starts: ``pages[0] == 0``, strictly increasing, and page ``n`` (1-based) is
    ``text[pages[n - 1]:pages[n]]`` (the last page runs to the end)."""

    text: str
    title: str | None = None
    url: str | None = None
    type: str = "text"
    pages: tuple[int, ...] | None = None


Loader = Callable[[bytes, str], LoadedText]


def missing_extra_message(extra: str, cause: ImportError) -> str:
    """The message of a :class:`MissingExtraError` for the extra ``extra``."""
    what = extra.upper() if extra in ("pdf", "html", "docx") else f"this file type ({extra})"
    return (
        f"reading {what} needs the {extra!r} extra: pip install 'remy-retriever[{extra}]' ({cause})"
    )


_LOADERS: dict[str, Loader] = {}


def register_loader(suffix: str, loader: Loader, *, replace: bool = False) -> None:
    """Use ``loader`` for files whose name ends in ``suffix`` (like ``".epub"``; matched
    without regard to case). A suffix that already has a loader (built-in or
    registered) is refused unless ``replace=True``."""
    if not isinstance(suffix, str) or not _SUFFIX.fullmatch(suffix):
        msg = (
            f"register_loader(): suffix must be a dot and up to 32 letters, digits, '_', '+' "
            f"or '-' (like '.epub'), got {short_repr(suffix)}"
        )
        raise InvalidInputError(msg)
    if not callable(loader):
        msg = (
            f"register_loader({suffix!r}): loader must be a function (content: bytes, "
            f"name: str) -> LoadedText, got {short_repr(loader)}"
        )
        raise InvalidInputError(msg)
    key = suffix.lower()
    if key in _LOADERS and not replace:
        msg = (
            f"register_loader({suffix!r}): {key!r} already has a loader "
            f"({getattr(_LOADERS[key], '__qualname__', short_repr(_LOADERS[key]))}); "
            "pass replace=True to use yours instead"
        )
        raise InvalidInputError(msg)
    _LOADERS[key] = loader


def loader_for(path: str | os.PathLike[str]) -> Loader | None:
    """The loader for ``path``'s suffix, or ``None`` when no loader reads that type."""
    name = os.fspath(path)
    return _LOADERS.get(os.path.splitext(name)[1].lower())


def registered_suffixes() -> tuple[str, ...]:
    """The suffixes that have a loader, sorted."""
    return tuple(sorted(_LOADERS))


def clean_text(text: str) -> str:
    """``text`` with line breaks as ``\\n``, control characters removed, no trailing
    spaces on a line, at most one blank line in a row, and no surrounding blank space.

    Linear in the length of ``text``: it works line by line with ``str`` methods (a
    regular expression that backtracks over a run of blanks made this quadratic)."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n")
    text = _CONTROLS.sub("", text)
    out: list[str] = []
    blank = True  # no blank line before the first line of text
    for line in text.split("\n"):
        line = line.rstrip(" \t")
        if line:
            out.append(line)
            blank = False
        elif not blank:
            out.append("")
            blank = True
    return "\n".join(out).strip()


def clean_title(title: object) -> str | None:
    """A title on one line, at most 300 characters; ``None`` when empty or not text."""
    if not isinstance(title, str):
        return None
    title = " ".join(_CONTROLS.sub(" ", title).split())
    if len(title) > _MAX_TITLE_CHARS:
        title = title[: _MAX_TITLE_CHARS - 1].rstrip() + "…"
    return title or None
