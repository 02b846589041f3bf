"""Read text files from disk into :class:`~remy_retriever.documents.Document` objects.

Used by :meth:`remy_retriever.retriever.Retriever.ingest` and by ``remy ingest``. Only
reads and validates: nothing here touches a store.

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

from ..documents import Document
from ..errors import InvalidDocumentError, InvalidInputError
from ..reprs import short_repr

__all__ = [
    "DEFAULT_MAX_DOCUMENT_BYTES",
    "INGEST_SUFFIXES",
    "FileIssue",
    "LoadedFiles",
    "document_id_for",
    "load_files",
]

INGEST_SUFFIXES = (".md", ".markdown", ".txt", ".rst")
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
    error reading it, e.g. permission denied)."""

    documents: tuple[Document, ...] = ()
    skipped: tuple[FileIssue, ...] = ()
    failed: tuple[FileIssue, ...] = ()


class _Skip(Exception):
    """This file is not a usable document (the message says why)."""


class _Fail(Exception):
    """Reading this file failed (the message says why)."""


def load_files(
    path: str | os.PathLike[str],
    *,
    metadata: Mapping[str, Any] | None = None,
    max_bytes: int = DEFAULT_MAX_DOCUMENT_BYTES,
) -> LoadedFiles:
    """Read the text files under ``path`` (recursively), or the one file ``path``.

    A folder's files that cannot be used are reported in ``skipped``/``failed`` and the
    rest are read; a file named directly that cannot be used raises
    :class:`InvalidDocumentError`. Document ids are the paths relative to ``path``
    (POSIX style, see :func:`document_id_for`)."""
    shown = _check_path(path)
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
    meta = dict(metadata or {})
    if stat.S_ISDIR(info.st_mode):
        return _Folder(shown, real, meta, max_bytes).read()
    if not stat.S_ISREG(info.st_mode):
        msg = f"cannot ingest {shown!r}: it is {_kind(info.st_mode)}, not a file or folder"
        raise InvalidDocumentError(msg)
    try:
        doc = _document(real, os.path.basename(os.path.normpath(shown)), shown, meta, max_bytes)
    except (_Skip, _Fail) as exc:
        msg = f"cannot ingest {_printable(shown)!r}: {exc}"
        raise InvalidDocumentError(msg) from None
    return LoadedFiles((doc,))


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
    skipped: list[FileIssue] = field(default_factory=list)
    failed: list[FileIssue] = field(default_factory=list)
    # (relative path, path as shown, real path, reached through a link)
    files: list[tuple[str, str, str, bool]] = field(default_factory=list)
    folders: set[str] = field(default_factory=set)

    def read(self) -> LoadedFiles:
        self.folders.add(self.real)
        self._scan(self.shown, self.real, "")
        docs: list[Document] = []
        for rel, shown, real in self._unique():
            try:
                docs.append(_document(real, rel, shown, self.metadata, self.max_bytes))
            except _Skip as exc:
                self.skip(shown, str(exc))
            except _Fail as exc:
                self.failed.append(FileIssue(_printable(shown), str(exc)))
        return LoadedFiles(tuple(docs), tuple(self.skipped), tuple(self.failed))

    def skip(self, shown: str, reason: str) -> None:
        self.skipped.append(FileIssue(_printable(shown), reason))

    def _scan(self, folder: str, real_folder: str, rel: str) -> None:
        try:
            with os.scandir(folder) as found:
                entries = sorted(found, key=lambda e: e.name)
        except OSError as exc:
            reason = f"cannot list this folder: {exc.strerror or exc}; check its permissions"
            self.failed.append(FileIssue(_printable(folder), reason))
            return
        for entry in entries:
            shown = os.path.join(folder, entry.name)
            child_rel = f"{rel}/{entry.name}" if rel else entry.name
            linked = False
            try:
                linked = entry.is_symlink()
                if linked:
                    real = os.path.realpath(shown)
                    if not _inside(real, self.real):
                        self.skip(
                            shown,
                            f"a symbolic link to {_printable(real)!r}, outside the folder "
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
                    self.skip(shown, f"a link to a folder already read ({_printable(real)!r})")
                    continue
                self.folders.add(real)
                self._scan(shown, real, child_rel)
            elif not stat.S_ISREG(info.st_mode):
                self.skip(shown, f"{_kind(info.st_mode)}, not a regular file")
            elif os.path.splitext(entry.name)[1].lower() not in INGEST_SUFFIXES:
                suffix = os.path.splitext(entry.name)[1] or "(no suffix)"
                self.skip(
                    shown,
                    f"unsupported type {_printable(suffix)!r} (ingest reads "
                    f"{', '.join(INGEST_SUFFIXES)})",
                )
            elif info.st_size > self.max_bytes:
                self.skip(shown, _too_large(info.st_size, self.max_bytes))
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
                self.skip(shown, f"the same file as {_printable(keep[1])!r} (through a link)")
        return out


def _document(
    real: str, rel: str, shown: str, metadata: dict[str, Any], max_bytes: int
) -> Document:
    """The Document for one file (raises _Skip or _Fail)."""
    doc_id = document_id_for(rel)
    if len(doc_id) > _MAX_ID_LEN:
        msg = (
            f"its path makes a document id of {len(doc_id)} characters, over {_MAX_ID_LEN}; "
            "ingest a folder nearer to it"
        )
        raise _Fail(msg)
    raw = _read(real, max_bytes)
    try:
        text = raw.decode("utf-8-sig")
    except UnicodeDecodeError as exc:
        msg = (
            f"it is not UTF-8 text ({exc.reason} at byte {exc.start}); convert it to UTF-8 "
            "or move it out of the folder"
        )
        raise _Skip(msg) from None
    if "\x00" in text:
        msg = "it contains NUL bytes (binary?); remove it or move it out of the folder"
        raise _Skip(msg)
    name = _printable(os.path.basename(rel))
    return Document(
        id=doc_id,
        text=text,
        title=_first_h1(text) or os.path.splitext(name)[0] or name,
        path=_printable(shown),
        type=os.path.splitext(name)[1].lstrip(".").lower() or "text",
        metadata=dict(metadata),
    )


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


def _check_path(path: object) -> str:
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


def _inside(real: str, root: str) -> bool:
    return real == root or real.startswith(root.rstrip(os.sep) + os.sep)


def _pseudo_root(real: str) -> str:
    return next(root for root in _PSEUDO_ROOTS if _inside(real, root))


def _is_pseudo(real: str) -> bool:
    return any(_inside(real, root) for root in _PSEUDO_ROOTS)


def _printable(name: str) -> str:
    """``name`` with bytes that are not UTF-8 shown as ``\\xNN`` (storable, printable)."""
    return os.fsencode(name).decode("utf-8", "backslashreplace")


def _first_h1(text: str) -> str | None:
    in_fence = False
    for line in text.splitlines():
        stripped = line.strip()
        if stripped.startswith(("```", "~~~")):
            in_fence = not in_fence
        elif not in_fence and stripped.startswith("# "):
            return stripped[2:].strip().rstrip("#").strip() or None
    return None
