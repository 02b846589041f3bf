"""Paths a caller names: checked as file system paths, and kept inside allowed folders.

Shared by folder ingest (:mod:`remy_retriever.ingest.files`) and the doors that take a
path from a client (``remy ingest``, MCP ``add_documents``). Nothing here reads a file.
"""

from __future__ import annotations

import os
from collections.abc import Sequence

from ..errors import InvalidDocumentError, InvalidInputError
from .reprs import short_repr

__all__ = [
    "check_path",
    "check_paths",
    "fsync_dir",
    "inside",
    "printable",
    "real_path",
    "resolve_inside",
]


def check_path(path: object) -> str:
    """``path`` as a ``str`` file system path (``os.PathLike`` accepted), or
    :class:`InvalidInputError` naming it."""
    given = path
    if isinstance(path, os.PathLike):
        try:
            path = os.fspath(path)
        except Exception as exc:
            msg = f"ingest(): {short_repr(given)} does not give a file system path ({exc})"
            raise InvalidInputError(msg) from exc
    if not isinstance(path, str) or not path or "\x00" in path:
        msg = (
            f"ingest() takes a path to a folder or file as a str or pathlib.Path, got "
            f"{type(given).__name__} {short_repr(given)}"
        )
        raise InvalidInputError(msg)
    try:
        os.fsencode(path)
    except UnicodeEncodeError as exc:
        msg = (
            f"ingest(): the path {short_repr(path)} holds a character no file name can "
            f"({exc.reason}: {path[exc.start : exc.end]!r}); check the path"
        )
        raise InvalidInputError(msg) from exc
    return path


def real_path(path: str) -> str:
    """``os.path.realpath(path)``, or :class:`InvalidDocumentError` when a link on the
    way changed while it was resolved (``realpath`` then raises a bare ``OSError``)."""
    try:
        return os.path.realpath(path)
    except OSError as exc:
        msg = (
            f"cannot resolve {printable(path)!r}: {exc.strerror or exc} (a link on its path "
            "changed while it was resolved); try again"
        )
        raise InvalidDocumentError(msg) from None


def inside(real: str, root: str) -> bool:
    """Is the real path ``real`` ``root`` itself or under it?"""
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def printable(name: str) -> str:
    """``name`` with bytes that are not UTF-8 shown as ``\\xNN`` (storable, printable)."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def check_paths(paths: list[str]) -> None:
    """Raise :class:`InvalidDocumentError` unless every path exists (a cheap check
    before a store is opened; :func:`load_files` checks the rest)."""
    for path in paths:
        shown = check_path(path)
        try:
            os.stat(shown)
        except FileNotFoundError:
            msg = f"cannot ingest {shown!r}: no such file or directory"
            raise InvalidDocumentError(msg) from None
        except OSError as exc:
            msg = f"cannot ingest {shown!r}: {exc.strerror or exc}; check the path and permissions"
            raise InvalidDocumentError(msg) from exc


def resolve_inside(path: object, roots: Sequence[str], *, base: str | None = None) -> str:
    """The real path of ``path`` (relative paths taken from ``base``), if it is one of
    ``roots`` or under one of them (``roots`` given as real paths, see
    :func:`os.path.realpath`); else :class:`InvalidDocumentError` naming the path and the
    roots. ``..`` and symbolic links are resolved before the check, so neither can lead
    outside. The ingest checks again on what it opens (``load_files(within=)``), so a link
    swapped in after this check leads nowhere; links leaving a folder are skipped."""
    shown = check_path(path)
    joined = os.path.join(base, shown) if base is not None else shown
    real = real_path(joined)
    if not any(inside(real, root) for root in roots):
        allowed = ", ".join(repr(r) for r in roots) or "none"
        msg = (
            f"cannot read {printable(shown)!r}: it resolves to {printable(real)!r}, outside "
            f"the folders this server may read ({allowed}); pass a path inside one of them"
        )
        raise InvalidDocumentError(msg)
    return real


def fsync_dir(directory: str | os.PathLike[str]) -> None:
    """Make a rename or a new file in ``directory`` durable (POSIX; elsewhere a no-op)."""
    if os.name != "posix":
        return
    fd = os.open(directory, os.O_RDONLY)
    try:
        os.fsync(fd)
    finally:
        os.close(fd)
