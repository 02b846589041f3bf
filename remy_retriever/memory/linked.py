""":class:`LinkedDocuments`: documents with a container tag on a
:class:`~remy_retriever.Retriever`, and the memory each short one becomes in the linked
:class:`~.store.MemoryStore`. ``remy serve`` (supermemory's ``/v3/documents``) and
``remy mcp`` (``add_documents`` on a pinned server) both write documents through it, so
the rule below holds whichever door added a document.

A document's container tag is kept in the metadata key
:data:`~remy_retriever.schema.document.CONTAINER_TAG_KEY`, a supermemory ``customId`` in
:data:`CUSTOM_ID_KEY`, and a memory made from a document names it in
:data:`SOURCE_KEY`; the three are :data:`RESERVED_KEYS` (user metadata may not use them,
:func:`public_metadata` leaves them out). A document has at most one container tag.

The memory rule (memories without an LLM): supermemory extracts memories from what is
added with a language model; remy uses one deterministic rule instead. A document with a
container tag whose content fits in one chunk (a fact such as "Alice prefers tea") is
also a memory in that container, linked to the document. Replacing the document's
content writes a new version of that memory; a document that stops qualifying (longer
content, no tag) or is deleted has its memory forgotten. Longer documents are searched
as chunks.

Scope: the methods that read or replace a document take ``scope``, the container tags
the caller may see (``None``: every tag, and documents without one). A document outside
it is reported missing (:class:`DocumentNotFoundError`), exactly as if it did not exist.

customIds are scoped per container tag: a document added to tag ``alice`` with customId
``x`` is stored under the id ``alice@x`` (:func:`custom_document_id`; a tag never holds
``@``), so ``alice`` and ``bob`` may both hold ``x`` and neither can probe, refuse or
replace the other's. :meth:`LinkedDocuments.visible` takes the id a caller names (a
customId, or a stored id) and finds it among the documents in its scope only;
:func:`wire_document_id` gives back the id a caller knows (the customId when there is one).

Writes take :attr:`LinkedDocuments.lock` (one write at a time in this process, so a
document and its memory change together; reentrant, so a door may hold it around a
lookup and the write that follows) and the documents' writer lock (one linked write at a
time across processes).

Crashes: a document write and its memory change are journaled (:mod:`.journal`): an
intent is fsynced before the documents are written and cleared after the memories are,
and opening a ``LinkedDocuments`` (or its next write) rolls every pending intent
forward, so a crash never leaves a deleted document's memory live nor an acknowledged
document without its memory. :meth:`LinkedDocuments.check` checks (and repairs) the
whole pair (``remy doctor``).
"""

from __future__ import annotations

import logging
import os
import threading
import uuid
from collections.abc import Collection, Iterable, Iterator, Mapping, Sequence
from contextlib import contextmanager
from dataclasses import dataclass, replace
from typing import Any

from ..errors import DocumentNotFoundError, IndexLockedError, InvalidInputError
from ..retriever import IngestReport, Retriever, StoredDocument
from ..schema.document import CONTAINER_TAG_KEY, Document, MetadataValue, validate_document_id
from ..schema.filters import and_where, scope_where
from .context import load_memories
from .journal import Intent, Journal, MemoryReport
from .model import FORGOTTEN_KEY, LATEST_KEY, Memory
from .store import MemoryStore

__all__ = [
    "CUSTOM_ID_KEY",
    "RESERVED_KEYS",
    "SOURCE_KEY",
    "DocumentNotFoundError",
    "LinkedDocuments",
    "check_metadata",
    "custom_document_id",
    "public_metadata",
    "tag_of",
    "wire_document_id",
]

_log = logging.getLogger(__name__)

#: Document metadata key holding a supermemory ``customId``.
CUSTOM_ID_KEY = "custom_id"
#: Memory metadata key holding the id of the document a memory was made from.
SOURCE_KEY = "source_document"
RESERVED_KEYS = frozenset({CONTAINER_TAG_KEY, CUSTOM_ID_KEY, SOURCE_KEY})
#: Documents the memory rule looks at per filter (under the filters' list limit).
_SYNC_BATCH = 1000

Scope = Collection[str] | None


def public_metadata(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """The user's metadata: without the :data:`RESERVED_KEYS` bookkeeping."""
    return {k: v for k, v in (meta or {}).items() if k not in RESERVED_KEYS}


def check_metadata(metadata: Mapping[str, Any] | None) -> dict[str, MetadataValue]:
    """User metadata as remy stores it: no reserved key (the values are checked as a
    :class:`~remy_retriever.Document` checks them)."""
    out: dict[str, MetadataValue] = {}
    for key, value in (metadata or {}).items():
        if key in RESERVED_KEYS:
            msg = (
                f"metadata key {key!r} is reserved by remy (it holds the container tag, "
                "the custom id or a memory's source document); rename it"
            )
            raise InvalidInputError(msg)
        out[key] = value
    return out


def tag_of(doc: Document) -> str | None:
    """The container tag of a document (``None`` for none)."""
    tag = doc.metadata.get(CONTAINER_TAG_KEY)
    return tag if isinstance(tag, str) else None


def custom_document_id(tag: str | None, custom_id: str) -> str:
    """The stored id of the document with ``custom_id`` in container ``tag``:
    ``tag@custom_id`` (``custom_id`` itself for a document without a tag)."""
    return custom_id if tag is None else f"{tag}@{custom_id}"


def wire_document_id(doc_id: str, metadata: Mapping[str, Any] | None) -> str:
    """The id a caller knows a stored document by: its customId when it has one (kept
    in :data:`CUSTOM_ID_KEY`), else its stored id."""
    custom = (metadata or {}).get(CUSTOM_ID_KEY)
    return custom if isinstance(custom, str) and custom else doc_id


def _visible(tag: str | None, scope: Scope) -> bool:
    return scope is None or (tag is not None and tag in scope)


@dataclass(frozen=True)
class _Plan:
    """What the memory rule would change for some documents (nothing written yet), and
    why: the ids of the orphaned and stale memories, of the documents missing one."""

    forget: tuple[Memory, ...]
    update: tuple[tuple[Memory, str, dict[str, MetadataValue]], ...]
    add: tuple[tuple[str, str, dict[str, MetadataValue]], ...]
    orphaned: tuple[str, ...]
    stale: tuple[str, ...]
    missing: tuple[str, ...]
    live: int


class LinkedDocuments:
    """Tagged documents on ``memories``' linked retriever, and the memories the rule
    makes from them (see the module docstring).

    Opening rolls forward what a linked write interrupted by a crash left in the
    journal; ``recover=False`` opens without writing anything (no roll forward, no
    journal file made): for a check that must not change the store (``remy doctor``).
    """

    def __init__(self, memories: MemoryStore, *, recover: bool = True) -> None:
        retriever = memories.retriever
        if retriever is None:
            msg = (
                "LinkedDocuments needs a MemoryStore linked to the documents' Retriever: "
                "MemoryStore(..., retriever=Retriever(...))"
            )
            raise InvalidInputError(msg)
        if memories.document_container_key != CONTAINER_TAG_KEY:
            msg = (
                "LinkedDocuments keeps a document's container tag in metadata key "
                f"{CONTAINER_TAG_KEY!r}; create the MemoryStore with document_container_key="
                f"{CONTAINER_TAG_KEY!r} (the default), not "
                f"{memories.document_container_key!r}"
            )
            raise InvalidInputError(msg)
        self.retriever: Retriever = retriever
        self.memories = memories
        self.lock = threading.RLock()
        self.journal = Journal.of(retriever, memories.memories.collection)
        if recover:
            self.journal.create()
        if recover and self.journal.has_pending():
            try:
                with self._writing():
                    pass  # rolls the pending intents forward
            except IndexLockedError as exc:
                # A live writer holds the lock (the intent may be its own): this
                # instance's first write rolls forward whatever is left then.
                _log.warning("memory journal not rolled forward on open: %s", exc)

    @contextmanager
    def _writing(self) -> Iterator[None]:
        """Hold :attr:`lock` and the documents' writer lock; first roll forward what an
        interrupted linked write left in the journal."""
        with self.lock, self.retriever.writing():
            self._roll_forward()
            yield

    @contextmanager
    def _intent(self, intent: Intent) -> Iterator[None]:
        """Journal ``intent`` around the writes it names (inside :meth:`_writing`). An
        exception leaves it in the journal, for the next write or open to finish."""
        self.journal.record(intent)
        yield
        self.journal.clear()

    def _roll_forward(self) -> None:
        pending = self.journal.pending()
        if pending.empty:
            return
        for intent in pending.intents:
            if intent.op == "delete":
                created = dict(zip(intent.ids, intent.created))
                now = self.retriever.get_documents(list(intent.ids))
                doomed = [d for d, s in now.items() if created.get(d) in (None, s.created_at)]
                if doomed:
                    self.retriever.delete(doomed)
                self._sync(intent.ids)
            elif intent.op == "sync":
                self._sync(intent.ids)
            else:
                self._reconcile(repair=True)
        if pending.damaged:
            self._reconcile(repair=True)
        self.journal.clear()

    # -- reads ------------------------------------------------------------------------

    def visible(self, doc_id: str, *, scope: Scope = None) -> StoredDocument:
        """The document a caller names ``doc_id`` (its stored id, or its customId in a
        container of ``scope``), if it is in ``scope``; else
        :class:`DocumentNotFoundError`, with the same message whether or not a document
        outside the scope has that id or customId. A customId held in several containers
        of ``scope`` raises :class:`InvalidInputError` naming their stored ids."""
        validate_document_id(doc_id)
        tags = sorted(scope) if scope is not None else []
        candidates = [doc_id, *(custom_document_id(t, doc_id) for t in tags)]
        stored = self.retriever.get_documents(candidates)
        found = [
            stored[c]
            for c in dict.fromkeys(candidates)
            if c in stored and _visible(tag_of(stored[c].document), scope)
        ]
        if found and found[0].document.id == doc_id:
            return found[0]  # the stored id itself
        if not found:  # a customId whose document moved to another tag of the scope
            where = and_where(scope_where(scope, key=CONTAINER_TAG_KEY), {CUSTOM_ID_KEY: doc_id})
            ids = self.retriever.document_ids(where)
            found = list(self.retriever.get_documents(ids).values()) if ids else []
        if len(found) == 1:
            return found[0]
        if found:
            names = ", ".join(sorted(repr(s.document.id) for s in found))
            msg = (
                f"customId {doc_id!r} is held in several containers ({names}); name the "
                "document by one of these ids"
            )
            raise InvalidInputError(msg)
        msg = f"no document with id {doc_id!r}"
        raise DocumentNotFoundError(msg)

    def memories_of(self, doc_id: str) -> list[Memory]:
        """Every memory version made from this document, oldest first."""
        ids = self.memories.memories.document_ids({SOURCE_KEY: doc_id})
        roots = {m.root_id for m in load_memories(self.memories.memories, ids).values()}
        versions = [v for root in sorted(roots) for v in self.memories.history(root)]
        return sorted(versions, key=lambda m: (m.created_at, m.version))

    def ids_in(self, tags: Sequence[str]) -> list[str]:
        """The ids of the documents in these container tags."""
        if not tags:
            return []
        return self.retriever.document_ids(scope_where(tags, key=CONTAINER_TAG_KEY))

    # -- writes -----------------------------------------------------------------------

    @staticmethod
    def prepare(
        *,
        content: str,
        tag: str | None,
        custom_id: str | None,
        metadata: Mapping[str, Any] | None,
        filepath: str | None = None,
        title: str | None = None,
        doc_type: str = "text",
        pages: tuple[int, ...] | None = None,
    ) -> Document:
        """The document for a supermemory one (checked; nothing written): its id is
        :func:`custom_document_id` of ``tag`` and ``custom_id`` when given (adding it again
        to the same tag replaces the document), else ``doc_<32 hex digits>``."""
        meta = check_metadata(metadata)
        doc_id = (
            validate_document_id(custom_document_id(tag, validate_document_id(custom_id)))
            if custom_id
            else f"doc_{uuid.uuid4().hex}"
        )
        if tag is not None:
            meta[CONTAINER_TAG_KEY] = tag
        if custom_id:
            meta[CUSTOM_ID_KEY] = custom_id
        return Document(
            id=doc_id,
            text=content,
            title=title,
            path=filepath,
            type=doc_type,
            metadata=meta,
            pages=pages,
        )

    def add(self, document: Document, *, scope: Scope = None) -> str:
        """Add (or, for a known id in ``scope``, replace) one prepared document."""
        outcome = self.add_many([document], scope=scope)[0]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def add_many(
        self, documents: Sequence[Document], *, scope: Scope = None
    ) -> list[str | InvalidInputError]:
        """Add prepared documents in one write (one embedding batch, one commit); per
        document, its id or the error that kept it out. An id taken by a document
        outside ``scope`` is refused (in the words of a bad id: saying it is taken would
        reveal that the document exists)."""
        outcomes: list[str | InvalidInputError] = [d.id for d in documents]
        with self._writing():
            existing = self.retriever.get_documents(sorted({d.id for d in documents}))
            ready: list[int] = []
            for i, doc in enumerate(documents):
                stored = existing.get(doc.id)
                if stored is not None and not _visible(tag_of(stored.document), scope):
                    msg = f"customId {doc.id!r} cannot be used; choose another"
                    outcomes[i] = InvalidInputError(msg)
                else:
                    ready.append(i)
            if not ready:
                return outcomes
            with self._intent(Intent(op="sync", ids=tuple(documents[i].id for i in ready))):
                try:
                    self.retriever.add([documents[i] for i in ready])
                except InvalidInputError:
                    # One bad document refuses the whole write: add them one by one to
                    # tell which (the store is unchanged by the refused call).
                    for i in ready:
                        try:
                            self.retriever.add([documents[i]])
                        except InvalidInputError as exc:
                            outcomes[i] = exc
                self._sync(
                    [documents[i].id for i in ready if not isinstance(outcomes[i], Exception)]
                )
        return outcomes

    def update(
        self,
        doc_id: str,
        *,
        scope: Scope = None,
        content: str | None = None,
        tag: str | None = None,
        metadata: Mapping[str, Any] | None = None,
        filepath: str | None = None,
    ) -> str:
        """Replace the given fields of a document in ``scope`` (``None``: keep the
        field). Everything else stored stays: title, url, type, summary, pages and the
        chunk spans, so a change of metadata, tag or path keeps every chunk, its offsets
        and its page citation. New content drops the pages and spans (they described the
        old text)."""
        with self._writing():
            doc = self.visible(doc_id, scope=scope).document
            meta = public_metadata(doc.metadata) if metadata is None else check_metadata(metadata)
            new_tag = tag_of(doc) if tag is None else tag
            if new_tag is not None:
                meta[CONTAINER_TAG_KEY] = new_tag
            if CUSTOM_ID_KEY in doc.metadata:
                meta[CUSTOM_ID_KEY] = doc.metadata[CUSTOM_ID_KEY]
            replaced = replace(doc, metadata=meta, path=doc.path if filepath is None else filepath)
            if content is not None:
                replaced = replace(replaced, text=content, pages=None, chunk_spans=None)
            with self._intent(Intent(op="sync", ids=(doc.id,))):
                self.retriever.add([replaced])
                self._sync([doc.id])
        return doc.id

    def delete(self, doc_ids: Iterable[str]) -> int:
        """Delete documents (already checked in scope) and forget their memories."""
        ids = sorted(set(doc_ids))
        if not ids:
            return 0
        with self._writing():
            present = self.retriever.get_documents(ids)
            if not present:
                return 0
            doomed = sorted(present)
            created = tuple(present[d].created_at for d in doomed)
            with self._intent(Intent(op="delete", ids=tuple(doomed), created=created)):
                self.retriever.delete(doomed)
                self._sync(doomed)
        return len(present)

    def ingest(
        self, path: str | os.PathLike[str], *, tag: str | None = None, **options: Any
    ) -> IngestReport:
        """:meth:`Retriever.ingest` with ``tag`` stamped on every document read, then
        the memory rule on what was added or updated (a short file in a container is a
        memory too, as for a document added over HTTP)."""
        metadata = None if tag is None else {CONTAINER_TAG_KEY: tag}
        with self._writing(), self._intent(Intent(op="reconcile")):
            # The documents a folder brings are known only once it is read: a crash
            # midway reconciles every document.
            report = self.retriever.ingest(path, metadata=metadata, **options)
            self._sync([*report.added, *report.updated])
        return report

    def update_memory(
        self, memory: Memory, content: str, *, metadata: Mapping[str, Any] | None = None
    ) -> Memory:
        """A new version of ``memory`` with ``content`` (and ``metadata``, checked, when
        given); a memory made from a document stays linked to it."""
        with self._writing():
            meta = None
            if metadata is not None:
                meta = check_metadata(metadata)
                if SOURCE_KEY in memory.metadata:
                    meta[SOURCE_KEY] = memory.metadata[SOURCE_KEY]
            return self.memories.update(memory.id, content, metadata=meta)

    def forget_memory(self, memory: Memory) -> Memory:
        """Forget ``memory`` (under :attr:`lock`, so no document write races it)."""
        with self._writing():
            return self.memories.forget(memory.id)

    # -- the memory rule --------------------------------------------------------------

    def _live_memories(self, doc_ids: Sequence[str]) -> dict[str, list[Memory]]:
        """The latest, unforgotten memories made from each of these documents."""
        out: dict[str, list[Memory]] = {d: [] for d in doc_ids}
        if not doc_ids:
            return out
        where = and_where(
            scope_where(doc_ids, key=SOURCE_KEY), {LATEST_KEY: True}, {FORGOTTEN_KEY: False}
        )
        store = self.memories.memories
        for memory in load_memories(store, store.document_ids(where)).values():
            source = memory.metadata.get(SOURCE_KEY)
            if isinstance(source, str) and source in out:
                out[source].append(memory)
        for memories in out.values():
            memories.sort(key=lambda m: m.id)
        return out

    def _sync(self, doc_ids: Sequence[str]) -> None:
        """Apply the memory rule to documents just written (under :attr:`lock`), a batch
        at a time (a folder may bring more ids than one filter may list)."""
        ids = list(dict.fromkeys(doc_ids))
        for lo in range(0, len(ids), _SYNC_BATCH):
            self._sync_batch(ids[lo : lo + _SYNC_BATCH])

    def _sync_batch(self, ids: Sequence[str]) -> None:
        """The rule on up to :data:`_SYNC_BATCH` documents; the new memories are written
        together."""
        self._apply(self._plan(ids))

    def _plan(self, ids: Sequence[str]) -> _Plan:
        """What the rule changes for these documents (up to :data:`_SYNC_BATCH`)."""
        stored_all = self.retriever.get_documents(ids)
        live_all = self._live_memories(ids)
        forget: list[Memory] = []
        update: list[tuple[Memory, str, dict[str, MetadataValue]]] = []
        add: list[tuple[str, str, dict[str, MetadataValue]]] = []
        orphaned: list[str] = []
        stale: list[str] = []
        missing: list[str] = []
        for doc_id in ids:
            stored = stored_all.get(doc_id)
            tag = None if stored is None else tag_of(stored.document)
            qualifies = stored is not None and tag is not None and stored.chunk_count == 1
            keep: Memory | None = None
            for memory in live_all[doc_id]:
                if qualifies and keep is None and memory.container_tag == tag:
                    keep = memory
                else:
                    forget.append(memory)
                    (orphaned if stored is None else stale).append(memory.id)
            if not qualifies or stored is None or tag is None:
                continue
            meta = {**public_metadata(stored.document.metadata), SOURCE_KEY: doc_id}
            content = stored.document.text
            if keep is None:
                add.append((content, tag, meta))
                missing.append(doc_id)
            elif keep.content != content or dict(keep.metadata) != meta:
                update.append((keep, content, meta))
                stale.append(keep.id)
        return _Plan(
            forget=tuple(forget),
            update=tuple(update),
            add=tuple(add),
            orphaned=tuple(orphaned),
            stale=tuple(stale),
            missing=tuple(missing),
            live=sum(len(v) for v in live_all.values()),
        )

    def _apply(self, plan: _Plan) -> None:
        for memory in plan.forget:
            self.memories.forget(memory.id)
        for memory, content, meta in plan.update:
            self.memories.update(memory.id, content, metadata=meta)
        new = plan.add
        if new:
            self.memories.add_many(
                [content for content, _, _ in new],
                container_tags=[tag for _, tag, _ in new],
                metadata=[meta for _, _, meta in new],
                document_ids=[[str(meta[SOURCE_KEY])] for _, _, meta in new],
            )

    # -- consistency ------------------------------------------------------------------

    def check(self, *, repair: bool = False) -> MemoryReport:
        """Check (and with ``repair=True`` fix) that the memories agree with the
        documents: every document that qualifies has exactly one live memory with its
        text, tag and metadata, and no live memory is made from a document that is gone
        or no longer qualifies; also reports linked writes a crash left in the journal.
        Repair rolls the journal forward and applies the rule to every document."""
        if not isinstance(repair, bool):
            msg = f"repair must be True or False, got {type(repair).__name__}"
            raise InvalidInputError(msg)
        with self.lock, self.retriever.writing():
            pending = self.journal.pending()
            report = self._reconcile(repair=False)
            report = replace(
                report, pending_intents=len(pending.intents), journal_damaged=pending.damaged
            )
            if repair:
                self._roll_forward()
                self._reconcile(repair=True)
                report = replace(report, repaired=True)
        return report

    def _reconcile(self, *, repair: bool) -> MemoryReport:
        """The rule over every document and every live memory made from one."""
        documents = {i for page in self.retriever.iter_document_metadata() for i, _ in page}
        doc_ids = set(documents)
        store = self.memories.memories
        live_ids = store.document_ids({LATEST_KEY: True, FORGOTTEN_KEY: False})
        for lo in range(0, len(live_ids), _SYNC_BATCH):
            for memory in load_memories(store, live_ids[lo : lo + _SYNC_BATCH]).values():
                source = memory.metadata.get(SOURCE_KEY)
                if isinstance(source, str):
                    doc_ids.add(source)
        ids = sorted(doc_ids)
        orphaned: list[str] = []
        stale: list[str] = []
        missing: list[str] = []
        live = 0
        for lo in range(0, len(ids), _SYNC_BATCH):
            plan = self._plan(ids[lo : lo + _SYNC_BATCH])
            orphaned += plan.orphaned
            stale += plan.stale
            missing += plan.missing
            live += plan.live
            if repair:
                self._apply(plan)
        return MemoryReport(
            documents_collection=self.retriever.collection,
            memory_collection=store.collection,
            documents=len(documents),
            memories=live,
            orphaned=tuple(sorted(orphaned)),
            stale=tuple(sorted(stale)),
            missing=tuple(sorted(missing)),
            repaired=repair,
        )
