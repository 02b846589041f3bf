"""Reading a file with its loader, under a budget: :func:`load_bytes` and :func:`load_file`.

The built-in loaders (PDF, HTML, DOCX, text) run in a worker process of a
:class:`~remy_retriever.loaders.worker.ParserPool`, under :class:`ParseLimits`: a file
over the time or memory budget raises :class:`ParseBudgetError` and nothing of it is
kept. A loader added with :func:`register_loader` runs in the calling process (it may
not be importable in a worker), with no budget: bound it yourself.
"""

from __future__ import annotations

import os

from ..errors import InvalidDocumentError, InvalidInputError
from ..util.reprs import short_repr
from .base import LoadedText, loader_for, registered_suffixes
from .builtin import BUILT_IN_LOADERS
from .limits import DEFAULT_PARSE_LIMITS, ParseLimits
from .worker import ParserPool, shared_pool

__all__ = ["load_bytes", "load_file"]


def load_bytes(
    data: bytes,
    name: str,
    *,
    limits: ParseLimits | None = DEFAULT_PARSE_LIMITS,
    pool: ParserPool | None = None,
) -> LoadedText:
    """``data`` (the content of a file named ``name``) read by the loader for ``name``'s
    suffix.

    A built-in loader runs in a worker process under ``limits`` (in ``pool``, else one
    shared by the process): over the budget it raises
    :class:`~remy_retriever.errors.ParseBudgetError` ("too large or too slow to parse",
    naming the file and the limit). ``limits=None`` runs it here with no budget, for
    files you trust. Raises :class:`InvalidDocumentError` for a type without a loader or
    a file the loader cannot use, :class:`MissingExtraError` for a missing extra."""
    if not isinstance(data, (bytes, bytearray, memoryview)):
        msg = f"load_bytes() takes the file's content as bytes, got {type(data).__name__}"
        raise InvalidInputError(msg)
    if not isinstance(name, str) or "\x00" in name:
        msg = f"load_bytes() takes the file's name as a str, got {short_repr(name)}"
        raise InvalidInputError(msg)
    if limits is not None and not isinstance(limits, ParseLimits):
        msg = (
            f"limits must be a ParseLimits (like ParseLimits(seconds=60, memory_bytes=2**30)) "
            f"or None, got {type(limits).__name__} {short_repr(limits)}"
        )
        raise InvalidInputError(msg)
    loader = loader_for(name)
    if loader is None:
        suffix = os.path.splitext(name)[1] or "(no suffix)"
        msg = (
            f"cannot load {name!r}: unsupported type {suffix!r} (loaders exist for "
            f"{', '.join(registered_suffixes())}); register one with register_loader()"
        )
        raise InvalidDocumentError(msg)
    suffix = os.path.splitext(name)[1].lower()
    if limits is None or BUILT_IN_LOADERS.get(suffix) is not loader:
        return loader(bytes(data), name)
    fields = (pool or shared_pool()).parse(bytes(data), name, limits)
    pages = fields.get("pages")
    return LoadedText(
        text=str(fields["text"]),
        title=fields.get("title"),
        url=fields.get("url"),
        type=str(fields.get("type", "text")),
        pages=tuple(int(p) for p in pages) if pages is not None else None,
    )


def load_file(
    path: str | os.PathLike[str], *, limits: ParseLimits | None = DEFAULT_PARSE_LIMITS
) -> LoadedText:
    """Read the file at ``path`` and load it with the loader for its suffix, under
    ``limits`` (see :func:`load_bytes`).

    Raises :class:`InvalidDocumentError` when the type has no loader, the file cannot be
    read, or the loader cannot use it (:class:`ParseBudgetError` over the budget);
    :class:`MissingExtraError` when the loader's optional dependency is missing."""
    given = path
    if isinstance(path, os.PathLike):
        path = os.fspath(path)
    if not isinstance(path, str) or not path or "\x00" in path:
        msg = (
            f"load_file() takes a path to a file as a str or pathlib.Path, got "
            f"{type(given).__name__} {short_repr(given)}"
        )
        raise InvalidInputError(msg)
    if loader_for(path) is None:
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
    return load_bytes(data, os.path.basename(path), limits=limits)
