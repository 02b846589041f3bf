"""The crash journal of the memory rule: a document write and the memory change it
implies commit together, or leave an intent that the next open rolls forward.

:class:`~.linked.LinkedDocuments` writes a document and its memory with two stores
(two Chroma collections); each store is crash-safe on its own (its dirty flag,
:mod:`remy_retriever.stores.sync`), but a process killed between the two writes would
leave a deleted document's memory live, or an added document without its memory. So,
holding the documents' writer lock, a linked write:

1. appends an :class:`Intent` to the journal, fsynced, naming the documents and the
   change (``sync``: apply the memory rule to them; ``delete``: delete them, then apply
   the rule; ``reconcile``: apply the rule to every document, for a folder ingest whose
   documents are not known in advance or a batch too large for one record);
2. writes the documents, then the memories;
3. truncates the journal (fsynced).

A non-empty journal with the lock free means a linked write stopped midway (a crash, or
an error such as a lost server): the next :class:`~.linked.LinkedDocuments` opened on the
pair, or its next write, rolls every pending intent forward first. Rolling forward is
idempotent (the rule reads what is stored and writes only the difference), so a roll
forward interrupted by another crash is simply redone.

The journal is JSON lines (no pickle), one intent a line, bounded: an intent over
:data:`MAX_LINE_BYTES` is recorded as ``reconcile``, and a journal over
:data:`MAX_JOURNAL_BYTES` or with a line that is not an intent reads as damaged, which
rolls forward as ``reconcile``. A torn last line (no newline: the process died while
appending it) was never committed, so no write followed it, and is ignored.

It lives in the documents' :func:`~remy_retriever.retriever.local_dir` (the store's
directory, or with a Chroma server the lexical index's), under ``remy_journal/``, one
file per (documents, memories) pair of collections; the file exists from the first
time the pair is opened together, which is also how ``remy doctor`` knows which memory
collection a documents collection is paired with.
"""

from __future__ import annotations

import hashlib
import json
import logging
import os
from dataclasses import dataclass
from pathlib import Path
from typing import Any, Literal

from ..errors import StoreError
from ..retriever import Retriever, local_dir
from ..util.paths import fsync_dir

__all__ = [
    "JOURNAL_DIR",
    "MAX_JOURNAL_BYTES",
    "MAX_LINE_BYTES",
    "Intent",
    "Journal",
    "MemoryReport",
    "Pending",
    "is_paired",
]

_log = logging.getLogger(__name__)

#: The journals' directory inside the documents' ``local_dir``.
JOURNAL_DIR = "remy_journal"
#: The largest intent recorded as such; a larger one is recorded as ``reconcile``.
MAX_LINE_BYTES = 1 << 20
#: A journal larger than this is not read: it rolls forward as ``reconcile``.
MAX_JOURNAL_BYTES = 8 << 20
_VERSION = 1

Op = Literal["sync", "delete", "reconcile"]
_OPS: frozenset[str] = frozenset({"sync", "delete", "reconcile"})


@dataclass(frozen=True)
class Intent:
    """One linked write in progress: ``op`` on the documents ``ids``. For ``delete``,
    ``created`` holds each document's ``created_at`` as it was (same order), so a roll
    forward deletes that document only, not one added again under the same id since."""

    op: Op
    ids: tuple[str, ...] = ()
    created: tuple[str, ...] = ()

    def to_json(self) -> dict[str, Any]:
        out: dict[str, Any] = {"v": _VERSION, "op": self.op, "ids": list(self.ids)}
        if self.created:
            out["created"] = list(self.created)
        return out

    @classmethod
    def from_json(cls, data: Any) -> Intent | None:
        """The intent in a parsed line, or ``None`` when it is not one."""
        if not isinstance(data, dict) or data.get("v") != _VERSION:
            return None
        op, ids, created = data.get("op"), data.get("ids", []), data.get("created", [])
        if (
            op not in _OPS
            or not isinstance(ids, list)
            or not isinstance(created, list)
            or not all(isinstance(i, str) for i in ids)
            or not all(isinstance(c, str) for c in created)
            or (created and len(created) != len(ids))
        ):
            return None
        return cls(op=op, ids=tuple(ids), created=tuple(created))


@dataclass(frozen=True)
class Pending:
    """What a journal holds: the intents to roll forward, and whether it was damaged
    (then everything is reconciled)."""

    intents: tuple[Intent, ...] = ()
    damaged: bool = False

    @property
    def empty(self) -> bool:
        return not self.intents and not self.damaged


@dataclass(frozen=True)
class MemoryReport:
    """What :meth:`LinkedDocuments.check <remy_retriever.memory.LinkedDocuments.check>`
    found between a documents collection and the memories the rule makes from it (and
    fixed, when ``repaired``). ``orphaned``: live memories whose document is gone;
    ``stale``: live memories that disagree with their document (another text, tag or
    metadata, a document that no longer qualifies, a second memory of one document);
    ``missing``: documents that qualify and have no memory; ``pending_intents``: linked
    writes a crash left in the journal; ``journal_damaged``: the journal was unreadable."""

    documents_collection: str
    memory_collection: str
    documents: int
    memories: int
    orphaned: tuple[str, ...] = ()
    stale: tuple[str, ...] = ()
    missing: tuple[str, ...] = ()
    pending_intents: int = 0
    journal_damaged: bool = False
    repaired: bool = False

    @property
    def ok(self) -> bool:
        """True when documents and memories agree and no write was left pending."""
        return not (
            self.orphaned
            or self.stale
            or self.missing
            or self.pending_intents
            or self.journal_damaged
        )


def journal_name(documents: str, memories: str) -> str:
    """The journal's file name for a pair of collections (hashed when the names are too
    long for one file name)."""
    name = f"{documents}+{memories}.jsonl"
    if len(name) <= 200:
        return name
    digest = hashlib.sha256(f"{documents}\0{memories}".encode()).hexdigest()[:32]
    return f"pair-{digest}.jsonl"


def is_paired(documents: Retriever, memory_collection: str) -> bool:
    """Whether ``documents`` was opened with ``memory_collection`` as its memories
    (by ``remy serve``, ``remy mcp`` or :class:`~.linked.LinkedDocuments`): the pair's
    journal file exists."""
    return Journal.of(documents, memory_collection).exists


class Journal:
    """The journal of one (documents, memories) pair (see the module docstring). Not
    locked itself: callers hold the documents' writer lock."""

    def __init__(self, path: Path) -> None:
        self.path = path

    @classmethod
    def of(cls, documents: Retriever, memory_collection: str) -> Journal:
        """The journal of ``documents`` paired with the memory collection named."""
        directory = local_dir(documents) / JOURNAL_DIR
        return cls(directory / journal_name(documents.collection, memory_collection))

    @property
    def exists(self) -> bool:
        """True once the pair was opened together (the journal file was made)."""
        return self.path.is_file()

    def create(self) -> None:
        """Make the (empty) journal file if missing; a store this user cannot write to
        is logged, not refused (reads still work; a write says why it cannot)."""
        if self.path.exists():
            return
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                os.fsync(fd)
            finally:
                os.close(fd)
            fsync_dir(self.path.parent)
        except OSError as exc:
            _log.warning("cannot create the memory journal %s: %s", self.path, exc)

    def has_pending(self) -> bool:
        """A cheap look (no read, no lock): whether the journal holds anything."""
        try:
            return self.path.stat().st_size > 0
        except OSError:
            return False

    def pending(self) -> Pending:
        """The intents left by linked writes that did not finish."""
        try:
            size = self.path.stat().st_size
        except FileNotFoundError:
            return Pending()
        except OSError as exc:
            msg = f"cannot read the memory journal {self.path}: {exc}"
            raise StoreError(msg) from exc
        if size == 0:
            return Pending()
        if size > MAX_JOURNAL_BYTES:
            _log.warning("the memory journal %s has %d bytes: reconciling all", self.path, size)
            return Pending(damaged=True)
        try:
            raw = self.path.read_bytes()
        except OSError as exc:
            msg = f"cannot read the memory journal {self.path}: {exc}"
            raise StoreError(msg) from exc
        lines = raw.split(b"\n")
        torn = lines.pop()  # after the last newline: empty, or a line never committed
        if torn:
            _log.warning("ignoring a torn last line in the memory journal %s", self.path)
        intents: list[Intent] = []
        for line in lines:
            try:
                intent = Intent.from_json(json.loads(line))
            except ValueError:
                intent = None
            if intent is None:
                _log.warning("the memory journal %s is damaged: reconciling all", self.path)
                return Pending(intents=tuple(intents), damaged=True)
            intents.append(intent)
        return Pending(intents=tuple(intents))

    def record(self, intent: Intent) -> None:
        """Append ``intent`` and fsync it (an intent over :data:`MAX_LINE_BYTES` is
        recorded as ``reconcile``): after this returns, a crash is rolled forward."""
        line = json.dumps(intent.to_json(), separators=(",", ":"), ensure_ascii=True)
        if len(line) > MAX_LINE_BYTES:
            line = json.dumps(Intent(op="reconcile").to_json(), separators=(",", ":"))
        try:
            self.path.parent.mkdir(parents=True, exist_ok=True)
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT | os.O_APPEND, 0o644)
            try:
                os.write(fd, (line + "\n").encode("ascii"))
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            msg = (
                f"cannot write the memory journal {self.path} ({exc}); nothing was written: "
                "make the store's directory writable"
            )
            raise StoreError(msg) from exc

    def clear(self) -> None:
        """Empty the journal (fsynced): every intent in it was carried out."""
        try:
            fd = os.open(self.path, os.O_WRONLY | os.O_CREAT, 0o644)
            try:
                os.ftruncate(fd, 0)
                os.fsync(fd)
            finally:
                os.close(fd)
        except OSError as exc:
            msg = f"cannot clear the memory journal {self.path}: {exc}"
            raise StoreError(msg) from exc
