"""The :class:`Memory` record, its errors, and how a memory is stored as a document.

Every memory version is one :class:`~remy_retriever.Document` whose id is the version's
id (``mem_<32 hex>``) and whose text is the memory's content; the bookkeeping lives in
the document's metadata under keys starting with ``memory_`` (reserved: user metadata
may not use that prefix):

==================  ===========================================================
``memory_root``     id of the memory's first version (``rootMemoryId``)
``memory_version``  1, 2, ... along ``updates``; an extension or derivation is a
                    new memory and starts at 1
``memory_parent``   the parent version's id (``""`` for none); a derivation's
                    2nd..8th parents go to ``memory_parent_2``...``memory_parent_8``
``memory_parents``  JSON list of all parent ids, in order
``memory_relation`` ``updates`` / ``extends`` / ``derives`` (``""`` for a root)
``memory_latest``   False once a newer version ``updates`` this one
``memory_forgotten`` True after :meth:`MemoryStore.forget`
``memory_container`` the container tag (``""`` for none)
``memory_created``  when the memory was first created (ISO-8601, UTC)
``memory_updated``  when this version was written
``memory_documents`` JSON list of linked document ids
==================  ===========================================================

:func:`to_document` and :func:`from_stored` convert between the two forms.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Mapping
from dataclasses import dataclass
from datetime import datetime, timezone
from typing import Any, Literal, cast

from ..errors import MemoryNotFoundError, MemoryStateError
from ..retriever import StoredDocument
from ..schema.document import Document, MetadataValue
from ..schema.filters import Filter, matches
from ..supermemory.responses import Relation

__all__ = [
    "CONTAINER_KEY",
    "FORGOTTEN_KEY",
    "LATEST_KEY",
    "MAX_PARENTS",
    "MEMORY_PREFIX",
    "PARENT_KEYS",
    "ROOT_KEY",
    "Memory",
    "MemoryNotFoundError",
    "MemoryStateError",
    "SearchMode",
    "from_stored",
    "is_visible",
    "new_memory_id",
    "now",
    "to_document",
]

#: Metadata keys with this prefix are the store's bookkeeping; user metadata may not use it.
MEMORY_PREFIX = "memory_"
ROOT_KEY = "memory_root"
_VERSION_KEY = "memory_version"
_PARENT_KEY = "memory_parent"
_PARENTS_KEY = "memory_parents"
_RELATION_KEY = "memory_relation"
LATEST_KEY = "memory_latest"
FORGOTTEN_KEY = "memory_forgotten"
CONTAINER_KEY = "memory_container"
_CREATED_KEY = "memory_created"
_UPDATED_KEY = "memory_updated"
_DOCUMENTS_KEY = "memory_documents"
#: Most parents one :meth:`MemoryStore.derive` may name.
MAX_PARENTS = 8
#: The keys holding a version's parents, first to last (children are found on these).
PARENT_KEYS = (_PARENT_KEY, *(f"{_PARENT_KEY}_{i}" for i in range(2, MAX_PARENTS + 1)))

#: What :meth:`MemoryStore.search` returns: memories, document chunks, or both mixed.
SearchMode = Literal["memories", "hybrid", "documents"]


@dataclass(frozen=True)
class Memory:
    """One version of a memory.

    ``version`` counts versions along ``updates`` (1 for a new memory, including an
    extension or derivation); ``root_id`` is the id of the first version. ``parent_id``
    is the version this one relates to (the first parent for a derivation; all are in
    ``parent_ids``) and ``relation`` how (``None`` for a first version). ``created_at``
    is when the memory was first created, ``updated_at`` when this version was written
    (ISO-8601, UTC). ``latest`` is False once a newer version replaced this one;
    ``forgotten`` is True after :meth:`MemoryStore.forget`.
    """

    id: str
    content: str
    version: int
    root_id: str
    parent_id: str | None
    relation: Relation | None
    container_tag: str | None
    metadata: Mapping[str, MetadataValue]
    created_at: str
    updated_at: str
    forgotten: bool = False
    document_ids: tuple[str, ...] = ()
    parent_ids: tuple[str, ...] = ()
    latest: bool = True

    def to_dict(self) -> dict[str, Any]:
        """JSON form with camelCase names (``rootMemoryId``, ``containerTag``...)."""
        return {
            "id": self.id,
            "memory": self.content,
            "version": self.version,
            "rootMemoryId": self.root_id if self.version > 1 else None,
            "parentMemoryId": self.parent_id,
            "parentIds": list(self.parent_ids),
            "relation": self.relation,
            "containerTag": self.container_tag,
            "metadata": dict(self.metadata),
            "createdAt": self.created_at,
            "updatedAt": self.updated_at,
            "latest": self.latest,
            "forgotten": self.forgotten,
            "documentIds": list(self.document_ids),
        }


def is_visible(memory: Memory, tag: str | None, tree: Filter | None) -> bool:
    """Whether a search with container ``tag`` and filter ``tree`` may show ``memory``:
    not forgotten, in that container (any for ``None``), its metadata matching."""
    if memory.forgotten:
        return False
    if tag is not None and memory.container_tag != tag:
        return False
    return matches(tree, memory.metadata)


def now() -> str:
    """The current time, ISO-8601 in UTC with a ``Z``."""
    return datetime.now(timezone.utc).isoformat().replace("+00:00", "Z")


def new_memory_id() -> str:
    """A fresh memory version id, ``mem_<32 hex digits>``."""
    return f"mem_{uuid.uuid4().hex}"


# -- Memory <-> Document -----------------------------------------------------------------


def to_document(memory: Memory) -> Document:
    """The document that stores this memory version (bookkeeping in ``memory_*`` keys)."""
    meta: dict[str, MetadataValue] = dict(memory.metadata)
    meta[ROOT_KEY] = memory.root_id
    meta[_VERSION_KEY] = memory.version
    for key, parent in zip(PARENT_KEYS, memory.parent_ids):
        meta[key] = parent
    meta.setdefault(_PARENT_KEY, "")
    meta[_PARENTS_KEY] = json.dumps(list(memory.parent_ids))
    meta[_RELATION_KEY] = memory.relation or ""
    meta[LATEST_KEY] = memory.latest
    meta[FORGOTTEN_KEY] = memory.forgotten
    meta[CONTAINER_KEY] = memory.container_tag or ""
    meta[_CREATED_KEY] = memory.created_at
    meta[_UPDATED_KEY] = memory.updated_at
    meta[_DOCUMENTS_KEY] = json.dumps(list(memory.document_ids))
    return Document(id=memory.id, text=memory.content, type="memory", metadata=meta)


def _int(value: object) -> int:
    """A bookkeeping number as stored (an int, or its text)."""
    return int(value) if isinstance(value, (int, float, str)) else 1


def from_stored(stored: StoredDocument) -> Memory | None:
    """The memory version a stored document holds; ``None`` if it is not a memory."""
    doc = stored.document
    meta = doc.metadata
    if ROOT_KEY not in meta:
        return None
    parents = tuple(json.loads(str(meta.get(_PARENTS_KEY) or "[]")))
    relation = str(meta.get(_RELATION_KEY) or "") or None
    return Memory(
        id=doc.id,
        content=doc.text,
        version=_int(meta.get(_VERSION_KEY, 1)),
        root_id=str(meta[ROOT_KEY]),
        parent_id=parents[0] if parents else None,
        relation=cast("Relation | None", relation),
        container_tag=str(meta.get(CONTAINER_KEY) or "") or None,
        metadata={k: v for k, v in meta.items() if not k.startswith(MEMORY_PREFIX)},
        created_at=str(meta.get(_CREATED_KEY) or stored.created_at),
        updated_at=str(meta.get(_UPDATED_KEY) or stored.updated_at),
        forgotten=bool(meta.get(FORGOTTEN_KEY, False)),
        document_ids=tuple(json.loads(str(meta.get(_DOCUMENTS_KEY) or "[]"))),
        parent_ids=parents,
        latest=bool(meta.get(LATEST_KEY, True)),
    )
