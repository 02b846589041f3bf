"""What every loader shares: :class:`LoadedText`, the registry of loaders by file suffix,
:func:`load_file`, and :class:`MissingExtraError`.

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

from ..errors import InvalidDocumentError, InvalidInputError, MissingExtraError
from ..util.reprs import short_repr

__all__ = [
    "LoadedText",
    "Loader",
    "MissingExtraError",
    "clean_text",
    "clean_title",
    "load_file",
    "loader_for",
    "missing_extra_message",
    "register_loader",
    "registered_suffixes",
]

#: A suffix: a dot, then letters, digits, ``_``, ``+`` or ``-`` (no further dot).
_SUFFIX = re.compile(r"\.[A-Za-z0-9][A-Za-z0-9_+-]{0,31}")
# C0 controls other than tab and newline (and DEL): never useful in indexed text.
_CONTROLS = re.compile(r"[\x00-\x08\x0b-\x1f\x7f]")
_BLANK_RUNS = re.compile(r"\n[ \t]*(?:\n[ \t]*){2,}")
_TRAILING_SPACE = re.compile(r"[ \t]+(?=\n)")
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


def load_file(path: str | os.PathLike[str]) -> LoadedText:
    """Read the file at ``path`` and load it with the loader for its suffix.

    Raises :class:`InvalidDocumentError` when the type has no loader, the file cannot be
    read, or the loader cannot use it; :class:`MissingExtraError` when the loader's
    optional dependency is missing."""
    given = path
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str) or not path or "\x00" in path:
        msg = (
            f"load_file() takes a path to a file as a str or pathlib.Path, got "
            f"{type(given).__name__} {short_repr(given)}"
        )
        raise InvalidInputError(msg)
    loader = loader_for(path)
    if loader is None:
        suffix = os.path.splitext(path)[1] or "(no suffix)"
        msg = (
            f"cannot load {path!r}: unsupported type {suffix!r} (loaders exist for "
            f"{', '.join(registered_suffixes())}); register one with register_loader()"
        )
        raise InvalidDocumentError(msg)
    try:
        with open(path, "rb") as f:
            data = f.read()
    except OSError as exc:
        msg = f"cannot load {path!r}: {exc.strerror or exc}; check the path and permissions"
        raise InvalidDocumentError(msg) from exc
    return loader(data, os.path.basename(path))


def clean_text(text: str) -> str:
    """``text`` with line breaks as ``\\n``, control characters removed, no trailing
    spaces on a line, at most one blank line in a row, and no surrounding blank space."""
    text = text.replace("\r\n", "\n").replace("\r", "\n").replace("\f", "\n")
    text = _CONTROLS.sub("", text)
    text = _TRAILING_SPACE.sub("", text)
    return _BLANK_RUNS.sub("\n\n", text).strip()


def clean_title(title: object) -> str | None:
    """A title on one line, at most 300 characters; ``None`` when empty or not text."""
    if not isinstance(title, str):
        return None
    title = " ".join(_CONTROLS.sub(" ", title).split())
    if len(title) > _MAX_TITLE_CHARS:
        title = title[: _MAX_TITLE_CHARS - 1].rstrip() + "…"
    return title or None
