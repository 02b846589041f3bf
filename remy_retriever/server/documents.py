"""The documents side of ``remy serve``: supermemory documents on a remy
:class:`~remy_retriever.Retriever`, and the memory each short one becomes.

A supermemory document is one remy :class:`~remy_retriever.Document`: its id is the
``customId`` when given (adding the same ``customId`` again replaces the document), else
``doc_<32 hex digits>``; its container tag is kept in the metadata key
:data:`CONTAINER_KEY` and a ``customId`` in :data:`CUSTOM_ID_KEY` (both reserved: user
metadata may not use them, and responses show only the user's metadata). A document has
at most one container tag.

Memories without an LLM: supermemory extracts memories from what is added with a
language model; remy uses one deterministic rule instead. A document with a container
tag whose content fits in one chunk (a fact such as "Alice prefers tea") is also a
memory in that container, linked to the document. Replacing the document's content
writes a new version of that memory; a document that stops qualifying (longer content,
no tag) or is deleted has its memory forgotten. Longer documents are searched as chunks
(``/v3/search``, and ``/v4/search`` in hybrid or documents mode).

Writes take :attr:`Documents.lock` (one write at a time in this process, so a document
and its memory change together); each store's own writer lock serialises them against
other processes.
"""

from __future__ import annotations

import threading
import uuid
from collections.abc import Iterable, Mapping, Sequence
from typing import Any, get_args

from ..documents import Document, MetadataValue, validate_document_id
from ..errors import InvalidInputError
from ..memory import Memory, MemoryStore
from ..memory.model import FORGOTTEN_KEY, LATEST_KEY
from ..retriever import Retriever, StoredDocument
from .auth import NotFoundError, Principal, check_tag
from .wire import DocumentType

__all__ = [
    "CONTAINER_KEY",
    "CUSTOM_ID_KEY",
    "SERVER_KEYS",
    "SOURCE_KEY",
    "Documents",
    "public_metadata",
]

CONTAINER_KEY = "container_tag"
CUSTOM_ID_KEY = "custom_id"
#: Memory metadata key holding the id of the document a memory was made from.
SOURCE_KEY = "source_document"
SERVER_KEYS = frozenset({CONTAINER_KEY, CUSTOM_ID_KEY, SOURCE_KEY})
_SDK_TYPES = frozenset(get_args(DocumentType))
_LOADER_TYPES = {"html": "webpage", "markdown": "text", "docx": "text"}


def public_metadata(meta: Mapping[str, Any] | None) -> dict[str, Any]:
    """The user's metadata: without the server's bookkeeping keys."""
    return {k: v for k, v in (meta or {}).items() if k not in SERVER_KEYS}


def sdk_type(doc_type: str | None) -> str:
    """A document type the SDK knows (``text`` for the others)."""
    if doc_type in _SDK_TYPES:
        return str(doc_type)
    return _LOADER_TYPES.get(doc_type or "", "text")


def check_metadata(metadata: Mapping[str, Any] | None) -> dict[str, MetadataValue]:
    """User metadata as remy stores it: scalars only, no reserved key."""
    out: dict[str, MetadataValue] = {}
    for key, value in (metadata or {}).items():
        if key in SERVER_KEYS:
            msg = (
                f"metadata key {key!r} is reserved by remy serve (it holds the container tag, "
                "the custom id or a memory's source document); rename it"
            )
            raise InvalidInputError(msg)
        if isinstance(value, list):
            msg = (
                f"metadata[{key!r}] is a list; remy stores scalar metadata only (str, "
                "number, bool): join the items into one string, or store each as its own key"
            )
            raise InvalidInputError(msg)
        out[key] = value
    return out


def one_tag(tag: str | None, tags: Sequence[str] | None) -> str | None:
    """The one container tag of a document from ``containerTag``/``containerTags``."""
    names = list(dict.fromkeys([*([tag] if tag else []), *(tags or [])]))
    if len(names) > 1:
        msg = (
            f"a document has at most one container tag in remy, got {names}; "
            "add it once per container"
        )
        raise InvalidInputError(msg)
    return check_tag(names[0]) if names else None


class Documents:
    """Documents (and their memories) as one caller may see and change them."""

    def __init__(self, retriever: Retriever, memories: MemoryStore) -> None:
        self.retriever = retriever
        self.memories = memories
        self.lock = threading.Lock()

    # -- reads ------------------------------------------------------------------------

    def visible(self, principal: Principal, doc_id: str) -> StoredDocument:
        """The stored document, if this caller may see it; else :class:`NotFoundError`."""
        validate_document_id(doc_id)
        stored = self.retriever.get_documents([doc_id]).get(doc_id)
        if stored is None or not principal.can_see(_tag_of(stored)):
            msg = f"no document with id {doc_id!r}"
            raise NotFoundError(msg)
        return stored

    def memories_of(self, doc_id: str) -> list[Memory]:
        """Every memory version made from this document, oldest first."""
        store = self.memories.memories
        ids = store.document_ids({SOURCE_KEY: doc_id})
        roots = {m.root_id for m in (self.memories.get(i) for i in ids)}
        versions = [v for root in sorted(roots) for v in self.memories.history(root)]
        return sorted(versions, key=lambda m: (m.created_at, m.version))

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
        """The remy document for a supermemory one (checked; nothing written)."""
        meta = check_metadata(metadata)
        doc_id = validate_document_id(custom_id) if custom_id else f"doc_{uuid.uuid4().hex}"
        if tag is not None:
            meta[CONTAINER_KEY] = tag
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

    def add(self, document: Document, principal: Principal) -> str:
        """Add (or, for a known ``customId``, replace) one prepared document."""
        outcome = self.add_many([document], principal)[0]
        if isinstance(outcome, Exception):
            raise outcome
        return outcome

    def add_many(
        self, documents: Sequence[Document], principal: Principal
    ) -> list[str | InvalidInputError]:
        """Add prepared documents in one write (one embedding batch, one commit); per
        document, its id or the error that kept it out."""
        outcomes: list[str | InvalidInputError] = [d.id for d in documents]
        with self.lock:
            existing = self.retriever.get_documents(sorted({d.id for d in documents}))
            ready: list[int] = []
            for i, doc in enumerate(documents):
                stored = existing.get(doc.id)
                if stored is not None and not principal.can_see(_tag_of(stored)):
                    # Another container's document: the id is taken, and saying so
                    # would reveal it exists; refuse in the words of a bad id.
                    msg = f"customId {doc.id!r} cannot be used; choose another"
                    outcomes[i] = InvalidInputError(msg)
                else:
                    ready.append(i)
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
            self._sync_memories(
                [documents[i].id for i in ready if not isinstance(outcomes[i], Exception)]
            )
        return outcomes

    def update(
        self,
        doc_id: str,
        principal: Principal,
        *,
        content: str | None,
        tag: str | None,
        metadata: Mapping[str, Any] | None,
        filepath: str | None,
    ) -> str:
        """Replace the given fields of a visible document."""
        with self.lock:
            stored = self.visible(principal, doc_id)
            doc = stored.document
            old_tag = _tag_of(stored)
            new_tag = old_tag if tag is None else principal.require(tag)
            meta: dict[str, MetadataValue] = (
                {k: v for k, v in doc.metadata.items() if k not in SERVER_KEYS}
                if metadata is None
                else check_metadata(metadata)
            )
            if new_tag is not None:
                meta[CONTAINER_KEY] = new_tag
            if CUSTOM_ID_KEY in doc.metadata:
                meta[CUSTOM_ID_KEY] = doc.metadata[CUSTOM_ID_KEY]
            replaced = Document(
                id=doc.id,
                text=doc.text if content is None else content,
                title=doc.title,
                url=doc.url,
                path=doc.path if filepath is None else filepath,
                type=doc.type,
                summary=doc.summary,
                metadata=meta,
                pages=doc.pages if content is None else None,
            )
            self.retriever.add([replaced])
            self._sync_memory(doc.id)
        return doc.id

    def delete(self, doc_ids: Iterable[str]) -> int:
        """Delete documents (already checked visible) and forget their memories."""
        ids = sorted(set(doc_ids))
        if not ids:
            return 0
        with self.lock:
            present = self.retriever.get_documents(ids)
            self.retriever.delete(list(present))
            for memories in self._live_memories(list(present)).values():
                for memory in memories:
                    self.memories.forget(memory.id)
        return len(present)

    def ids_in(self, tags: Sequence[str]) -> list[str]:
        """The ids of the documents in these container tags."""
        if not tags:
            return []
        return self.retriever.document_ids({CONTAINER_KEY: {"$in": list(tags)}})

    # -- the memory rule --------------------------------------------------------------

    def _live_memories(self, doc_ids: Sequence[str]) -> dict[str, list[Memory]]:
        """The latest, unforgotten memories made from each of these documents."""
        out: dict[str, list[Memory]] = {d: [] for d in doc_ids}
        if not doc_ids:
            return out
        where = {
            "$and": [
                {SOURCE_KEY: {"$in": list(doc_ids)}},
                {LATEST_KEY: True},
                {FORGOTTEN_KEY: False},
            ]
        }
        for memory_id in self.memories.memories.document_ids(where):
            memory = self.memories.get(memory_id)
            source = memory.metadata.get(SOURCE_KEY)
            if isinstance(source, str) and source in out:
                out[source].append(memory)
        return out

    def _sync_memory(self, doc_id: str) -> None:
        self._sync_memories([doc_id])

    def _sync_memories(self, doc_ids: Sequence[str]) -> None:
        """Apply the memory rule to documents just written (under :attr:`lock`); the new
        memories are written together."""
        ids = list(dict.fromkeys(doc_ids))
        stored_all = self.retriever.get_documents(ids)
        live_all = self._live_memories(ids)
        new: list[tuple[str, str, dict[str, MetadataValue]]] = []
        for doc_id in ids:
            stored = stored_all.get(doc_id)
            live = live_all[doc_id]
            tag = None if stored is None else _tag_of(stored)
            qualifies = stored is not None and tag is not None and stored.chunk_count == 1
            keep: Memory | None = None
            for memory in live:
                if qualifies and keep is None and memory.container_tag == tag:
                    keep = memory
                else:
                    self.memories.forget(memory.id)
            if not qualifies or stored is None or tag is None:
                continue
            meta = {**public_metadata(stored.document.metadata), SOURCE_KEY: doc_id}
            content = stored.document.text
            if keep is None:
                new.append((content, tag, meta))
            elif keep.content != content or dict(keep.metadata) != meta:
                self.memories.update(keep.id, content, metadata=meta)
        if new:
            self.memories.add_many(
                [content for content, _, _ in new],
                container_tags=[tag for _, tag, _ in new],
                metadata=[meta for _, _, meta in new],
                document_ids=[[str(meta[SOURCE_KEY])] for _, _, meta in new],
            )


def _tag_of(stored: StoredDocument) -> str | None:
    tag = stored.document.metadata.get(CONTAINER_KEY)
    return tag if isinstance(tag, str) else None
