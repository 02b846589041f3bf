"""Open folders and files below an open folder, one name at a time, never through a link.

Folder ingest lists a folder and reads what it listed later; in between, a subfolder can
be replaced by a symbolic link to somewhere else, and a path opened by name would follow
it. Here each step opens one name relative to the folder opened just before it
(``os.open(name, dir_fd=...)``) with ``O_NOFOLLOW``, so a link anywhere on the way makes
the open fail instead of leading out; :func:`check_same` then compares what was opened
with what was listed. Nothing here reads a file's bytes. POSIX only (``dir_fd``,
``O_NOFOLLOW``, ``O_DIRECTORY``).
"""

from __future__ import annotations

import errno
import os
from collections.abc import Sequence

__all__ = [
    "FILE_FLAGS",
    "FOLDER_FLAGS",
    "another_file",
    "changed_on_the_way",
    "check_same",
    "open_below",
    "stat_below",
]

_BASE = os.O_RDONLY | getattr(os, "O_CLOEXEC", 0) | getattr(os, "O_NOCTTY", 0)
#: A folder, never reached through a link.
FOLDER_FLAGS = _BASE | os.O_NOFOLLOW | os.O_DIRECTORY
#: Anything but a link, without blocking (a FIFO put in a file's place opens at once, and
#: the caller's ``fstat`` refuses it).
FILE_FLAGS = _BASE | os.O_NOFOLLOW | os.O_NONBLOCK
#: What ``open`` says when a name it may not follow is a link: ``ELOOP`` for the last name
#: (``EMLINK`` on FreeBSD), ``ENOTDIR`` for a folder that is now a link or a file.
_CHANGED = frozenset({errno.ELOOP, errno.EMLINK, errno.ENOTDIR})


def _one_name(name: str) -> str:
    if not name or name in (".", "..") or os.sep in name or "\x00" in name:
        raise OSError(errno.EINVAL, f"not a single file name: {name!r}")
    return name


def open_below(
    top: int, names: Sequence[str], *, folder: bool, same_as: os.stat_result | None = None
) -> int:
    """A new descriptor for ``top/names[0]/.../names[-1]`` (``top`` an open folder),
    each name opened relative to the one before with ``O_NOFOLLOW``: every name but the
    last must be a folder, and the last a folder (``folder=True``) or anything that is
    not a link (the caller checks what it is with ``os.fstat``). ``names`` empty: a copy
    of ``top``. ``same_as``: what was listed there (see :func:`check_same`). Raises
    :class:`OSError` (see :func:`changed_on_the_way`)."""
    fd = os.dup(top)
    try:
        for i, name in enumerate(names):
            last = i == len(names) - 1
            child = os.open(
                _one_name(name), FILE_FLAGS if last and not folder else FOLDER_FLAGS, dir_fd=fd
            )
            parent, fd = fd, child
            os.close(parent)
    except BaseException:
        os.close(fd)
        raise
    return fd if same_as is None else check_same(fd, same_as)


def check_same(fd: int, same_as: os.stat_result) -> int:
    """``fd``, if it is the file ``same_as`` describes (device and inode); else ``fd``
    is closed and an :class:`OSError` raised that :func:`another_file` recognises."""
    try:
        info = os.fstat(fd)
    except OSError:
        os.close(fd)
        raise
    if (info.st_dev, info.st_ino) != (same_as.st_dev, same_as.st_ino):
        os.close(fd)
        raise OSError(errno.ESTALE, "another file is there now")
    return fd


def stat_below(top: int, names: Sequence[str]) -> os.stat_result:
    """``lstat`` of ``top/names...`` reached as :func:`open_below` does (a link as the
    last name is reported as a link, never followed); ``names`` empty: ``top`` itself."""
    if not names:
        return os.fstat(top)
    parent = open_below(top, names[:-1], folder=True)
    try:
        return os.stat(_one_name(names[-1]), dir_fd=parent, follow_symlinks=False)
    finally:
        os.close(parent)


def changed_on_the_way(exc: OSError) -> bool:
    """Did :func:`open_below` fail because a name on the way is a link (or no longer a
    folder), or another file is there, i.e. the tree changed since it was listed?"""
    return another_file(exc) or exc.errno in _CHANGED


def another_file(exc: OSError) -> bool:
    """Did :func:`check_same` find another file than the one listed (``ESTALE``, also
    what NFS says of a file replaced on the server)?"""
    return exc.errno == errno.ESTALE
