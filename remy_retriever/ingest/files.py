"""Read files from disk into :class:`~remy_retriever.schema.document.Document` objects.

Used by :meth:`remy_retriever.retriever.Retriever.ingest` and by ``remy ingest``. Only
reads and validates: nothing here touches a store. Each file is turned into text by the
loader registered for its suffix (:mod:`remy_retriever.loaders`); a file without one is
skipped as an unsupported type.

A folder is read file by file: a file left out on purpose is reported as ``skipped``
(its type has no loader, a link leaving the folder, a special file, a file reached
twice), one that should have been read and could not be as ``failed`` (unreadable, not
text, too large, damaged, changed while it was read), and the rest are read. The walk
(:mod:`.walk`) never follows a link by name: every folder and file is opened relative to
its parent's open descriptor with ``O_NOFOLLOW`` and checked with ``fstat`` to be what
was listed, so a subfolder swapped for a link midway leads nowhere outside the folder;
a link found in the folder is followed only when its target stays inside. The bytes a
loader gets are read from that checked descriptor. ``within=`` confines a path the caller
names the same way: it is opened name by name from one of those folders. Only regular
files are read (never a FIFO, socket or device); nothing under ``/proc``, ``/sys`` or
``/dev`` is read at all; sizes are checked before reading, and a read never takes more
than the size limit plus one byte.
"""

from __future__ import annotations

import errno
import os
import stat
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from functools import partial
from typing import Any, NoReturn

from ..errors import InvalidDocumentError, InvalidInputError, UnusableFileError
from ..loaders import MissingExtraError, ParseLimits, load_bytes, loader_for
from ..loaders.limits import DEFAULT_PARSE_LIMITS
from ..schema.document import Document, check_id_prefix
from ..util.nofollow import (
    FILE_FLAGS,
    FOLDER_FLAGS,
    changed_on_the_way,
    check_same,
    open_below,
    stat_below,
)
from ..util.paths import check_path, inside, printable, real_path, resolve_inside
from ..util.reprs import short_repr
from .walk import FileIssue, FolderWalk, kind_of, names_below, open_problem, too_large

__all__ = [
    "DEFAULT_MAX_DOCUMENT_BYTES",
    "FileIssue",
    "LoadedFiles",
    "document_id_for",
    "load_files",
]

#: The default largest document, in bytes of UTF-8 text (``Retriever(max_document_bytes=)``).
#: Chunking and embedding cost grows with a document's size, so past this one document
#: holds an ingest up for minutes with the default model on a small machine, and most
#: larger files are logs or data dumps rather than documents.
DEFAULT_MAX_DOCUMENT_BYTES = 10 * 2**20
#: Pseudo-filesystems: nothing under them is a document, and reading can block or leak.
_PSEUDO_ROOTS = ("/proc", "/sys", "/dev")
_HEX = frozenset("0123456789abcdefABCDEF")
_MAX_ID_LEN = 512
#: Opening a path the caller named (its own links are followed) or an allowed folder.
_GIVEN_FOLDER = FOLDER_FLAGS & ~os.O_NOFOLLOW
_GIVEN_FILE = FILE_FLAGS & ~os.O_NOFOLLOW


@dataclass(frozen=True)
class LoadedFiles:
    """What :func:`load_files` read: the documents, and the files it left out, as
    ``skipped`` (left out on purpose: a type without a loader, a link leaving the folder,
    a special file, a file reached twice) or ``failed`` (it should have been read and
    could not be: unreadable, not UTF-8 or not text, too large, damaged, a missing extra,
    changed while it was read).

    ``root`` is the folder read (absolute, links resolved), or a file's folder;
    ``folder`` says which. ``present`` holds the document id of every file found,
    used or not, and ``unlisted`` the id prefixes of folders that could not be listed:
    what is under them is unknown, so none of it counts as gone from disk."""

    documents: tuple[Document, ...] = ()
    skipped: tuple[FileIssue, ...] = ()
    failed: tuple[FileIssue, ...] = ()
    root: str = ""
    folder: bool = False
    present: frozenset[str] = frozenset()
    unlisted: tuple[str, ...] = ()

    def on_disk(self, document_id: str) -> bool:
        """Is ``document_id`` a file found here (or possibly under an unlisted folder)?"""
        return document_id in self.present or document_id.startswith(self.unlisted)


class _Skip(Exception):
    """This file is left out on purpose (the message says why)."""


class _Fail(Exception):
    """This file should have been read and could not be (the message says why)."""


def load_files(
    path: str | os.PathLike[str],
    *,
    metadata: Mapping[str, Any] | None = None,
    max_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
    id_prefix: str | None = None,
    strict: bool = False,
    within: str | os.PathLike[str] | Sequence[str | os.PathLike[str]] | None = None,
    parse_limits: ParseLimits | None = DEFAULT_PARSE_LIMITS,
) -> LoadedFiles:
    """Read the files under ``path`` (recursively), or the one file ``path``.

    A folder's files are read, and those left out are reported in ``skipped`` or
    ``failed`` (see :class:`LoadedFiles`). A file named directly that cannot be used
    raises :class:`UnusableFileError` (failed) or :class:`InvalidDocumentError` (an
    unsupported type). With ``strict``, the first file of a folder that fails raises
    :class:`UnusableFileError` too; skipped files never stop it. ``within``: folders
    ``path`` must be in (real paths compared, ``..`` and links resolved), opened from
    them name by name without following a link, so that a link swapped in after this
    check is refused as well. Document ids are ``id_prefix`` plus the paths relative to
    ``path`` (POSIX style, see :func:`document_id_for`). Each file is parsed under
    ``parse_limits`` (:func:`remy_retriever.loaders.load_bytes`): one over it fails
    (:class:`~remy_retriever.errors.ParseBudgetError`'s message)."""
    shown = check_path(path)
    prefix = check_id_prefix(id_prefix)
    given = _locate(shown, _check_within(within))
    meta = _check_metadata(metadata)
    if stat.S_ISDIR(given.info.st_mode):
        try:
            top: int | OSError = given.open(shown, folder=True)
        except OSError as exc:
            top = exc
        try:
            return _read_folder(
                top, shown, given.real, meta, max_bytes, prefix, strict, parse_limits
            )
        finally:
            if isinstance(top, int):
                os.close(top)
    name = os.path.basename(os.path.normpath(shown))
    opener = partial(given.open, shown, folder=False)
    try:
        doc = _document(opener, name, shown, meta, max_bytes, prefix, parse_limits)
    except _Skip as exc:
        msg = f"cannot ingest {printable(shown)!r}: {exc}"
        raise InvalidDocumentError(msg) from None
    except _Fail as exc:
        msg = f"cannot ingest {printable(shown)!r}: {exc}"
        raise UnusableFileError(msg) from None
    folder = real_path(os.path.dirname(os.path.abspath(shown)))
    return LoadedFiles((doc,), root=folder, present=frozenset({doc.id}))


@dataclass(frozen=True)
class _Given:
    """A path the caller named: its real path, what ``stat`` said it is, and, with
    ``within``, the allowed folder it is under and the names from there down to it."""

    real: str
    info: os.stat_result
    top: str | None = None
    names: tuple[str, ...] = ()

    def open(self, shown: str, *, folder: bool) -> int:
        """A descriptor for it, checked to be what ``stat`` saw (raises OSError)."""
        if self.top is None:
            return check_same(os.open(shown, _GIVEN_FOLDER if folder else _GIVEN_FILE), self.info)
        top = os.open(self.top, _GIVEN_FOLDER)
        try:
            return open_below(top, self.names, folder=folder, same_as=self.info)
        finally:
            os.close(top)


def _read_folder(
    top: int | OSError,
    shown: str,
    real: str,
    metadata: dict[str, Any],
    max_bytes: int,
    prefix: str,
    strict: bool,
    parse_limits: ParseLimits | None,
) -> LoadedFiles:
    """Walk the folder (``top``: its descriptor, or why it could not be opened), then
    read each file found, from a descriptor the walk opens."""
    walk = FolderWalk(real, max_bytes, strict)
    docs: list[Document] = []
    for found in walk.walk(top, shown):
        try:
            opener = partial(walk.open, found)
            docs.append(
                _document(opener, found.rel, found.shown, metadata, max_bytes, prefix, parse_limits)
            )
        except _Skip as exc:
            walk.skip(found.shown, str(exc))
        except _Fail as exc:
            walk.fail(found.shown, str(exc))
    return LoadedFiles(
        tuple(docs),
        tuple(walk.skipped),
        tuple(walk.failed),
        root=real,
        folder=True,
        present=frozenset(prefix + document_id_for(rel) for rel in walk.present),
        unlisted=tuple(
            prefix + (document_id_for(rel) + "/" if rel else "") for rel in walk.unlisted
        ),
    )


def _check_within(within: object) -> tuple[str, ...] | None:
    """``within`` as real paths (one path or a list of them), or None."""
    if within is None:
        return None
    if isinstance(within, (str, os.PathLike)):
        within = [within]
    if not isinstance(within, (list, tuple)):
        msg = (
            "within= takes the folders a path must be in, as a path or a list of paths, "
            f"got {type(within).__name__} {short_repr(within)}"
        )
        raise InvalidInputError(msg)
    return tuple(real_path(check_path(root)) for root in within)


def _locate(shown: str, within: tuple[str, ...] | None) -> _Given:
    """Where ``shown`` is, and what (raises InvalidDocumentError naming the problem)."""
    if within is None:
        try:
            given = _Given(real_path(shown), os.stat(shown))
        except OSError as exc:
            _cannot(shown, exc)
    else:
        real = resolve_inside(shown, within)
        top = max((root for root in within if inside(real, root)), key=len)
        names = names_below(top, real)
        try:
            fd = os.open(top, _GIVEN_FOLDER)
            try:
                given = _Given(real, stat_below(fd, names), top, names)
            finally:
                os.close(fd)
        except OSError as exc:
            _cannot(shown, exc)
        if stat.S_ISLNK(given.info.st_mode):  # it was resolved: a link now is new
            _cannot(shown, OSError(errno.ELOOP, os.strerror(errno.ELOOP)))
    if _is_pseudo(given.real):
        msg = (
            f"cannot ingest {shown!r}: it is under {_pseudo_root(given.real)}, a "
            "pseudo-filesystem of the kernel, not documents; pass a folder of text files"
        )
        raise InvalidDocumentError(msg)
    mode = given.info.st_mode
    if not stat.S_ISDIR(mode) and not stat.S_ISREG(mode):
        msg = f"cannot ingest {shown!r}: it is {kind_of(mode)}, not a file or folder"
        raise InvalidDocumentError(msg)
    return given


def _cannot(shown: str, exc: OSError) -> NoReturn:
    if isinstance(exc, FileNotFoundError):
        msg = f"cannot ingest {shown!r}: no such file or directory"
        raise InvalidDocumentError(msg) from None
    if changed_on_the_way(exc):
        msg = f"cannot ingest {shown!r}: {open_problem(exc)}"
        raise InvalidDocumentError(msg) from None
    msg = f"cannot ingest {shown!r}: {exc.strerror or exc}; check the path and permissions"
    raise InvalidDocumentError(msg) from exc


def _check_metadata(metadata: Mapping[str, Any] | None) -> dict[str, Any]:
    """``metadata`` checked once, as a document's (so no file is skipped for it)."""
    if metadata is not None and not isinstance(metadata, Mapping):
        msg = (
            f"ingest() metadata must be a mapping like {{'tenant': 'a'}}, got "
            f"{type(metadata).__name__} {short_repr(metadata)}"
        )
        raise InvalidInputError(msg)
    meta = dict(metadata or {})
    try:
        Document(id="metadata", text="x", metadata=meta)
    except InvalidDocumentError as exc:
        msg = f"ingest() metadata is not usable: {exc}"
        raise InvalidDocumentError(msg) from None
    return meta


def document_id_for(relative_path: str) -> str:
    """The document id of a file at ``relative_path`` (``/``-separated, as from
    ``os.scandir``): the path itself, with ``#`` (the chunk id separator), control
    characters, bytes that are not UTF-8, and ``%`` before two hex digits written as
    ``%XX``. Distinct paths get distinct ids, and ordinary names keep their own."""
    text = os.fsencode(relative_path).decode("utf-8", "surrogateescape")
    out: list[str] = []
    for i, char in enumerate(text):
        code = ord(char)
        if 0xDC80 <= code <= 0xDCFF:  # a byte that is not UTF-8
            out.append(f"%{code - 0xDC00:02X}")
        elif char == "#" or code < 0x20 or code == 0x7F:
            out.append(f"%{code:02X}")
        elif char == "%" and len(text) >= i + 3 and set(text[i + 1 : i + 3]) <= _HEX:
            out.append("%25")
        else:
            out.append(char)
    return "".join(out)


def _document(
    opener: Callable[[], int],
    rel: str,
    shown: str,
    metadata: dict[str, Any],
    max_bytes: int,
    prefix: str,
    parse_limits: ParseLimits | None = DEFAULT_PARSE_LIMITS,
) -> Document:
    """The Document for one file, read from the descriptor ``opener`` gives (raises
    _Skip or _Fail)."""
    doc_id = prefix + document_id_for(rel)
    if len(doc_id) > _MAX_ID_LEN:
        msg = (
            f"its path makes a document id of {len(doc_id)} characters, over {_MAX_ID_LEN}; "
            "ingest a folder nearer to it"
        )
        raise _Fail(msg)
    name = os.path.basename(rel)
    loader = loader_for(name)
    if loader is None:
        suffix = os.path.splitext(name)[1] or "(no suffix)"
        msg = f"unsupported type {printable(suffix)!r} (no loader for it)"
        raise _Skip(msg)
    raw = _read(opener, max_bytes)
    try:
        loaded = load_bytes(raw, name, limits=parse_limits)
    except (InvalidDocumentError, MissingExtraError) as exc:
        raise _Fail(str(exc)) from None
    shown_name = printable(name)
    pages: dict[str, Any] = {}
    if loaded.pages is not None:
        pages["pages"] = loaded.pages
    try:
        return Document(
            id=doc_id,
            text=loaded.text,
            title=loaded.title or os.path.splitext(shown_name)[0] or shown_name,
            url=loaded.url,
            path=printable(shown),
            type=loaded.type,
            metadata=dict(metadata),
            **pages,
        )
    except InvalidDocumentError as exc:
        raise _Fail(str(exc)) from None


def _read(opener: Callable[[], int], max_bytes: int) -> bytes:
    """The bytes of the regular file ``opener`` opens (no more than ``max_bytes``)."""
    try:
        fd = opener()
    except OSError as exc:
        raise _Fail(open_problem(exc)) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):
            msg = f"it is {kind_of(info.st_mode)}, not a regular file"
            raise _Skip(msg)
        if info.st_size > max_bytes:
            raise _Fail(too_large(info.st_size, max_bytes))
        parts: list[bytes] = []
        left = max_bytes + 1
        while left > 0:
            part = os.read(fd, min(left, 1 << 20))
            if not part:
                break
            parts.append(part)
            left -= len(part)
    except OSError as exc:
        msg = f"cannot read it: {exc.strerror or exc}"
        raise _Fail(msg) from None
    finally:
        os.close(fd)
    data = b"".join(parts)
    if len(data) > max_bytes:  # grew after the check
        raise _Fail(too_large(len(data), max_bytes))
    return data


def _pseudo_root(real: str) -> str:
    return next(root for root in _PSEUDO_ROOTS if inside(real, root))


def _is_pseudo(real: str) -> bool:
    return any(inside(real, root) for root in _PSEUDO_ROOTS)
