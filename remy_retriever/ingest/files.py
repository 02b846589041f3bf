"""Read files from disk into :class:`~remy_retriever.schema.document.Document` objects.

Used by :meth:`remy_retriever.retriever.Retriever.ingest` and by ``remy ingest``. Only
reads and validates: nothing here touches a store. Each file is turned into text by the
loader registered for its suffix (:mod:`remy_retriever.loaders`); a file without one is
skipped as an unsupported type.

A folder is read file by file: a file that cannot be used is left out and reported
(:class:`FileIssue`) while the rest are read. Only regular files are opened, and only
after ``stat`` says so (opened non-blocking, checked again on the open descriptor), so a
FIFO, socket or device is never read; nothing under ``/proc``, ``/sys`` or ``/dev`` is
read at all. A symbolic link is followed only when its target stays inside the folder
(a file reached twice is read once); sizes are checked before reading, and a read never
takes more than the size limit plus one byte.
"""

from __future__ import annotations

import os
import stat
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

from ..errors import InvalidDocumentError, InvalidInputError
from ..loaders import MissingExtraError, ParseLimits, load_bytes, loader_for
from ..loaders.limits import DEFAULT_PARSE_LIMITS
from ..schema.document import Document, check_id_prefix
from ..util.paths import check_path, inside, printable
from ..util.reprs import short_repr

__all__ = [
    "DEFAULT_MAX_DOCUMENT_BYTES",
    "FileIssue",
    "LoadedFiles",
    "document_id_for",
    "load_files",
]

#: The default largest document, in bytes of UTF-8 text (``Retriever(max_document_bytes=)``).
#: With the default model, a 1 MiB text document takes about a minute to chunk and embed
#: on 2 cores; at 10 MiB a single document already costs minutes, and most larger files
#: are logs or data dumps rather than documents.
DEFAULT_MAX_DOCUMENT_BYTES = 10 * 2**20
#: Pseudo-filesystems: nothing under them is a document, and reading can block or leak.
_PSEUDO_ROOTS = ("/proc", "/sys", "/dev")
_HEX = frozenset("0123456789abcdefABCDEF")
_MAX_ID_LEN = 512
_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)


@dataclass(frozen=True)
class FileIssue:
    """A file (or folder) that folder ingest left out: its path and the reason."""

    path: str
    reason: str


@dataclass(frozen=True)
class LoadedFiles:
    """What :func:`load_files` read: the documents, and the files it left out, as
    ``skipped`` (not a usable document: type, link, size, encoding) or ``failed`` (an
    error reading it, e.g. permission denied).

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
    """This file is not a usable document (the message says why)."""


class _Fail(Exception):
    """Reading this file failed (the message says why)."""


def load_files(
    path: str | os.PathLike[str],
    *,
    metadata: Mapping[str, Any] | None = None,
    max_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
    id_prefix: str | None = None,
    strict: bool = False,
    parse_limits: ParseLimits | None = DEFAULT_PARSE_LIMITS,
) -> LoadedFiles:
    """Read the files under ``path`` (recursively), or the one file ``path``.

    A folder's files that cannot be used are reported in ``skipped``/``failed`` and the
    rest are read; a file named directly that cannot be used raises
    :class:`InvalidDocumentError`. With ``strict``, so does the first file of a folder
    that has a loader but cannot be used (unreadable, too large, not text, no text, a
    missing extra); unsupported types and links leaving the folder are still skipped.
    Document ids are ``id_prefix`` plus the paths relative to ``path`` (POSIX style, see
    :func:`document_id_for`). Each file is parsed under ``parse_limits``
    (:func:`remy_retriever.loaders.load_bytes`): one over it is left out like a file
    that is not usable (``ParseBudgetError``'s message)."""
    shown = check_path(path)
    prefix = check_id_prefix(id_prefix)
    try:
        info = os.stat(shown)
    except FileNotFoundError:
        msg = f"cannot ingest {shown!r}: no such file or directory"
        raise InvalidDocumentError(msg) from None
    except OSError as exc:
        msg = f"cannot ingest {shown!r}: {exc.strerror or exc}; check the path and permissions"
        raise InvalidDocumentError(msg) from exc
    real = os.path.realpath(shown)
    if _is_pseudo(real):
        msg = (
            f"cannot ingest {shown!r}: it is under {_pseudo_root(real)}, a pseudo-filesystem "
            "of the kernel, not documents; pass a folder of text files"
        )
        raise InvalidDocumentError(msg)
    meta = _check_metadata(metadata)
    if stat.S_ISDIR(info.st_mode):
        return _Folder(shown, real, meta, max_bytes, prefix, strict, parse_limits).read()
    if not stat.S_ISREG(info.st_mode):
        msg = f"cannot ingest {shown!r}: it is {_kind(info.st_mode)}, not a file or folder"
        raise InvalidDocumentError(msg)
    name = os.path.basename(os.path.normpath(shown))
    try:
        doc = _document(real, name, shown, meta, max_bytes, prefix, parse_limits)
    except (_Skip, _Fail) as exc:
        msg = f"cannot ingest {printable(shown)!r}: {exc}"
        raise InvalidDocumentError(msg) from None
    folder = os.path.realpath(os.path.dirname(os.path.abspath(shown)))
    return LoadedFiles((doc,), root=folder, present=frozenset({doc.id}))


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


@dataclass
class _Folder:
    """One folder ingest: walks ``shown`` (the path as given) whose real path is ``real``."""

    shown: str
    real: str
    metadata: dict[str, Any]
    max_bytes: int
    prefix: str = ""
    strict: bool = False
    parse_limits: ParseLimits | None = DEFAULT_PARSE_LIMITS
    skipped: list[FileIssue] = field(default_factory=list)
    failed: list[FileIssue] = field(default_factory=list)
    # (relative path, path as shown, real path, reached through a link)
    files: list[tuple[str, str, str, bool]] = field(default_factory=list)
    folders: set[str] = field(default_factory=set)
    present: set[str] = field(default_factory=set)
    unlisted: list[str] = field(default_factory=list)

    def read(self) -> LoadedFiles:
        self.folders.add(self.real)
        self._scan(self.shown, self.real, "")
        docs: list[Document] = []
        for rel, shown, real in self._unique():
            try:
                docs.append(
                    _document(
                        real,
                        rel,
                        shown,
                        self.metadata,
                        self.max_bytes,
                        self.prefix,
                        self.parse_limits,
                    )
                )
            except _Skip as exc:
                self.skip(shown, str(exc), error=True)
            except _Fail as exc:
                self.fail(shown, str(exc))
        return LoadedFiles(
            tuple(docs),
            tuple(self.skipped),
            tuple(self.failed),
            root=self.real,
            folder=True,
            present=frozenset(self.present),
            unlisted=tuple(self.unlisted),
        )

    def skip(self, shown: str, reason: str, *, error: bool = False) -> None:
        """Leave ``shown`` out; ``error``: a file that has a loader but cannot be used
        (with ``strict``, that stops the ingest)."""
        if error and self.strict:
            _stop(shown, reason)
        self.skipped.append(FileIssue(printable(shown), reason))

    def fail(self, shown: str, reason: str) -> None:
        if self.strict:
            _stop(shown, reason)
        self.failed.append(FileIssue(printable(shown), reason))

    def _scan(self, folder: str, real_folder: str, rel: str) -> None:
        try:
            with os.scandir(folder) as found:
                entries = sorted(found, key=lambda e: e.name)
        except OSError as exc:
            self.unlisted.append(self.prefix + (document_id_for(rel) + "/" if rel else ""))
            reason = f"cannot list this folder: {exc.strerror or exc}; check its permissions"
            self.fail(folder, reason)
            return
        for entry in entries:
            shown = os.path.join(folder, entry.name)
            child_rel = f"{rel}/{entry.name}" if rel else entry.name
            self.present.add(self.prefix + document_id_for(child_rel))
            linked = False
            try:
                linked = entry.is_symlink()
                if linked:
                    real = os.path.realpath(shown)
                    if not inside(real, self.real):
                        self.skip(
                            shown,
                            f"a symbolic link to {printable(real)!r}, outside the folder "
                            "(links are followed only within it)",
                        )
                        continue
                    info = os.stat(shown)
                else:
                    real = os.path.join(real_folder, entry.name)
                    info = entry.stat(follow_symlinks=False)
            except OSError as exc:
                self.skip(shown, _link_problem(exc) if linked else f"cannot stat: {exc.strerror}")
                continue
            if _is_pseudo(real):
                self.skip(shown, f"under {_pseudo_root(real)}, a pseudo-filesystem")
            elif stat.S_ISDIR(info.st_mode):
                if real in self.folders:
                    self.skip(shown, f"a link to a folder already read ({printable(real)!r})")
                    continue
                self.folders.add(real)
                self._scan(shown, real, child_rel)
            elif not stat.S_ISREG(info.st_mode):
                self.skip(shown, f"{_kind(info.st_mode)}, not a regular file")
            elif loader_for(entry.name) is None:
                suffix = os.path.splitext(entry.name)[1] or "(no suffix)"
                self.skip(
                    shown,
                    f"unsupported type {printable(suffix)!r} (no loader for it; "
                    "remy_retriever.loaders.register_loader adds one)",
                )
            elif info.st_size > self.max_bytes:
                self.skip(shown, _too_large(info.st_size, self.max_bytes), error=True)
            else:
                self.files.append((child_rel, shown, real, linked))

    def _unique(self) -> list[tuple[str, str, str]]:
        """Each real file once: by its own path when the folder holds it, else by the
        first link to it."""
        chosen: dict[str, tuple[str, str, bool]] = {}
        for rel, shown, real, linked in self.files:
            if real not in chosen or (chosen[real][2] and not linked):
                chosen[real] = (rel, shown, linked)
        out: list[tuple[str, str, str]] = []
        for rel, shown, real, _ in self.files:
            keep = chosen[real]
            if keep[0] == rel:
                out.append((rel, shown, real))
            else:
                self.skip(shown, f"the same file as {printable(keep[1])!r} (through a link)")
        return out


def _stop(shown: str, reason: str) -> None:
    msg = (
        f"stopped at {printable(shown)!r} (strict): {reason}; nothing was stored. Fix or "
        "move the file, or ingest without strict to skip it and keep the rest"
    )
    raise InvalidDocumentError(msg)


def _document(
    real: str,
    rel: str,
    shown: str,
    metadata: dict[str, Any],
    max_bytes: int,
    prefix: str,
    parse_limits: ParseLimits | None = DEFAULT_PARSE_LIMITS,
) -> Document:
    """The Document for one file (raises _Skip or _Fail)."""
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
    raw = _read(real, max_bytes)
    try:
        loaded = load_bytes(raw, name, limits=parse_limits)
    except (InvalidDocumentError, MissingExtraError) as exc:
        raise _Skip(str(exc)) from None
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
        raise _Skip(str(exc)) from None


def _read(path: str, max_bytes: int) -> bytes:
    """The bytes of the regular file ``path`` (no more than ``max_bytes``)."""
    flags = os.O_RDONLY | getattr(os, "O_NONBLOCK", 0) | getattr(os, "O_NOCTTY", 0)
    try:
        fd = os.open(path, flags | getattr(os, "O_NOFOLLOW", 0))
    except OSError as exc:
        msg = f"cannot read it: {exc.strerror or exc}; check its permissions"
        raise _Fail(msg) from None
    try:
        info = os.fstat(fd)
        if not stat.S_ISREG(info.st_mode):  # replaced since it was listed
            msg = f"it is {_kind(info.st_mode)}, not a regular file"
            raise _Skip(msg)
        if info.st_size > max_bytes:
            raise _Skip(_too_large(info.st_size, max_bytes))
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
        raise _Skip(_too_large(len(data), max_bytes))
    return data


def _too_large(size: int, limit: int) -> str:
    return (
        f"too large: {size:,} bytes, over the limit of {limit:,} bytes; split it, or raise "
        "the limit with Retriever(max_document_bytes=...)"
    )


def _link_problem(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "a broken symbolic link (its target does not exist)"
    return f"a symbolic link that cannot be followed: {exc.strerror or exc}"


def _kind(mode: int) -> str:
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _pseudo_root(real: str) -> str:
    return next(root for root in _PSEUDO_ROOTS if inside(real, root))


def _is_pseudo(real: str) -> bool:
    return any(inside(real, root) for root in _PSEUDO_ROOTS)
