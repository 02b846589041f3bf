"""The walk of folder ingest: what a folder holds, listed from its open descriptor.

No symbolic link is followed by name. The folder is opened once; every folder under it
is opened relative to its parent's open descriptor, one name at a time with
``O_NOFOLLOW`` (:mod:`remy_retriever.util.nofollow`), and checked with ``fstat`` to be the
folder that was listed (same device and inode). A link found in the folder is followed
only when its real target stays inside the folder, and then the target is reached from
the folder's own descriptor, name by name, again without following anything. Each file
found is kept with those names, so that it is opened the same way when it is read
(:meth:`FolderWalk.open`). A subfolder swapped for a link between the listing and the
read makes that open fail: nothing outside the folder is ever read.

What is left out is recorded as ``skipped`` (on purpose: a type without a loader, a link
leaving the folder, a special file, a file reached twice) or ``failed`` (it should have
been read and could not be); with ``strict`` the first failure raises
:class:`~remy_retriever.errors.UnusableFileError`.
"""

from __future__ import annotations

import os
import stat
from dataclasses import dataclass, field

from ..errors import UnusableFileError
from ..loaders import loader_for
from ..util.nofollow import another_file, changed_on_the_way, open_below, stat_below
from ..util.paths import inside, printable

__all__ = [
    "FileIssue",
    "FolderWalk",
    "Found",
    "kind_of",
    "names_below",
    "open_problem",
    "too_large",
]

_KINDS = (
    (stat.S_ISFIFO, "a FIFO"),
    (stat.S_ISSOCK, "a socket"),
    (stat.S_ISCHR, "a character device"),
    (stat.S_ISBLK, "a block device"),
)
_CHANGED = (
    "it changed while it was read (another file is there now); nothing was read from it, "
    "ingest again"
)
_REPLACED = (
    "it, or a folder on its path, was replaced while it was read (by a symbolic link or "
    "another kind of file); nothing was read through it, ingest again"
)


@dataclass(frozen=True)
class FileIssue:
    """A file (or folder) that folder ingest left out: its path and the reason."""

    path: str
    reason: str


@dataclass(frozen=True)
class Found:
    """A file the walk listed: its path relative to the folder (``/``-separated), its
    path as shown, the names from the folder down to its real place, what ``lstat``
    said it is, and whether a link led to it."""

    rel: str
    shown: str
    names: tuple[str, ...]
    info: os.stat_result
    linked: bool


@dataclass
class FolderWalk:
    """One walk of the folder whose real path is ``real`` (see the module docstring).
    ``present`` and ``unlisted`` hold relative paths: of every entry found, and of the
    folders that could not be listed (``""``: the folder itself)."""

    real: str
    max_bytes: int
    strict: bool = False
    skipped: list[FileIssue] = field(default_factory=list)
    failed: list[FileIssue] = field(default_factory=list)
    files: list[Found] = field(default_factory=list)
    present: list[str] = field(default_factory=list)
    unlisted: list[str] = field(default_factory=list)
    folders: set[str] = field(default_factory=set)
    top: int = -1

    def walk(self, top: int | OSError, shown: str) -> list[Found]:
        """List the folder (``top``: its open descriptor, or why it could not be
        opened; ``shown``: its path as given); return each real file once, by its own
        path when the folder holds it, else by the first link to it."""
        self.folders.add(self.real)
        if isinstance(top, OSError):
            self._unlisted(shown, "", _list_problem(top))
        else:
            self.top = top
            self._scan(top, (), shown, "")
        return self._unique()

    def open(self, found: Found) -> int:
        """A descriptor for ``found``, opened from the folder name by name and checked
        to be the file that was listed (raises :class:`OSError`; see
        :func:`open_problem`)."""
        return open_below(self.top, found.names, folder=False, same_as=found.info)

    def skip(self, shown: str, reason: str) -> None:
        """Leave ``shown`` out on purpose (``strict`` never stops for it)."""
        self.skipped.append(FileIssue(printable(shown), reason))

    def fail(self, shown: str, reason: str) -> None:
        """``shown`` could not be read (with ``strict``, that stops the ingest)."""
        if self.strict:
            msg = (
                f"stopped at {printable(shown)!r} (strict): {reason}; nothing was stored. "
                "Fix or move the file, or ingest without strict to skip it and keep the rest"
            )
            raise UnusableFileError(msg)
        self.failed.append(FileIssue(printable(shown), reason))

    def _unlisted(self, shown: str, rel: str, reason: str) -> None:
        self.unlisted.append(rel)
        self.fail(shown, reason)

    def _real(self, names: tuple[str, ...]) -> str:
        return os.path.join(self.real, *names)

    def _scan(self, fd: int, names: tuple[str, ...], folder: str, rel: str) -> None:
        """List the open folder ``fd`` (``names`` from the root, shown as ``folder``)."""
        try:
            with os.scandir(fd) as listing:
                entries = sorted(listing, key=lambda e: e.name)
        except OSError as exc:
            self._unlisted(folder, rel, _list_problem(exc))
            return
        for entry in entries:
            shown = os.path.join(folder, entry.name)
            child_rel = f"{rel}/{entry.name}" if rel else entry.name
            self.present.append(child_rel)
            try:
                info = entry.stat(follow_symlinks=False)  # fstatat in fd, never followed
            except OSError as exc:
                self.fail(shown, f"cannot stat: {exc.strerror or exc}")
                continue
            if stat.S_ISLNK(info.st_mode):
                self._follow(fd, names, entry.name, shown, child_rel)
            else:
                self._add(entry.name, shown, child_rel, (*names, entry.name), info, parent=fd)

    def _follow(self, fd: int, names: tuple[str, ...], name: str, shown: str, rel: str) -> None:
        """The link ``name`` in the open folder ``fd``: followed only when its real target
        is inside the folder, and then reached from the folder's descriptor."""
        try:
            target = os.readlink(name, dir_fd=fd)
            real = os.path.realpath(os.path.join(self._real(names), target))
        except OSError as exc:  # realpath too, when a link on the way changes meanwhile
            self.skip(shown, _link_problem(exc))
            return
        if not inside(real, self.real):
            self.skip(
                shown,
                f"a symbolic link to {printable(real)!r}, outside the folder "
                "(links are followed only within it)",
            )
            return
        found = names_below(self.real, real)
        try:
            info = stat_below(self.top, found)
        except OSError as exc:
            self.skip(shown, _link_problem(exc))
            return
        if stat.S_ISLNK(info.st_mode):  # realpath resolved it: a loop, or it changed
            self.skip(shown, "a symbolic link that cannot be followed (a loop?)")
            return
        self._add(name, shown, rel, found, info, parent=None)

    def _add(
        self,
        name: str,
        shown: str,
        rel: str,
        names: tuple[str, ...],
        info: os.stat_result,
        *,
        parent: int | None,
    ) -> None:
        """What is at ``names`` (``info``, from ``lstat``), named ``name`` in the folder:
        a folder is scanned, a file kept. ``parent``: the open folder holding it; None
        when a link led to it (it is opened from the root)."""
        if stat.S_ISDIR(info.st_mode):
            real = self._real(names)
            if real in self.folders:
                self.skip(shown, f"a link to a folder already read ({printable(real)!r})")
                return
            self.folders.add(real)
            base, steps = (self.top, names) if parent is None else (parent, names[-1:])
            try:
                child = open_below(base, steps, folder=True, same_as=info)
            except OSError as exc:
                self._unlisted(shown, rel, _list_problem(exc))
                return
            try:
                self._scan(child, names, shown, rel)
            finally:
                os.close(child)
        elif not stat.S_ISREG(info.st_mode):
            self.skip(shown, f"{kind_of(info.st_mode)}, not a regular file")
        elif loader_for(name) is None:
            suffix = os.path.splitext(name)[1] or "(no suffix)"
            self.skip(
                shown,
                f"unsupported type {printable(suffix)!r} (no loader for it; "
                "remy_retriever.loaders.register_loader adds one)",
            )
        elif info.st_size > self.max_bytes:
            self.fail(shown, too_large(info.st_size, self.max_bytes))
        else:
            self.files.append(Found(rel, shown, names, info, parent is None))

    def _unique(self) -> list[Found]:
        chosen: dict[str, Found] = {}
        for found in self.files:
            real = self._real(found.names)
            if real not in chosen or (chosen[real].linked and not found.linked):
                chosen[real] = found
        out: list[Found] = []
        for found in self.files:
            keep = chosen[self._real(found.names)]
            if keep is found:
                out.append(found)
            else:
                self.skip(
                    found.shown, f"the same file as {printable(keep.shown)!r} (through a link)"
                )
        return out


def names_below(root: str, real: str) -> tuple[str, ...]:
    """The names from the real folder ``root`` down to the real path ``real`` in it."""
    return () if real == root else tuple(os.path.relpath(real, root).split(os.sep))


def open_problem(exc: OSError) -> str:
    """Why a file could not be opened, for the report."""
    if another_file(exc):
        return _CHANGED
    if changed_on_the_way(exc):
        return _REPLACED
    return f"cannot read it: {exc.strerror or exc}; check its permissions"


def too_large(size: int, limit: int) -> str:
    return (
        f"too large: {size:,} bytes, over the limit of {limit:,} bytes; split it, or raise "
        "the limit with Retriever(max_document_bytes=...)"
    )


def kind_of(mode: int) -> str:
    """What a file of ``mode`` is, when not a regular file or folder (``a FIFO``...)."""
    for test, name in _KINDS:
        if test(mode):
            return name
    return "not a regular file"


def _list_problem(exc: OSError) -> str:
    if another_file(exc):
        return _CHANGED
    if changed_on_the_way(exc):
        return _REPLACED
    return f"cannot list this folder: {exc.strerror or exc}; check its permissions"


def _link_problem(exc: OSError) -> str:
    if isinstance(exc, FileNotFoundError):
        return "a broken symbolic link (its target does not exist)"
    return f"a symbolic link that cannot be followed: {exc.strerror or exc}"
